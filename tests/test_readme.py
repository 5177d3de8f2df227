"""The README's promises stay true: CI runs its test command, and it documents
every setting and command."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def _fenced_line_after(marker: str) -> str:
    match = re.search(re.escape(marker) + r"\s*```(?:bash|sh)?\n(.+?)\n```", README, re.S)
    assert match, f"README has no code block after {marker!r}"
    return match.group(1).strip()


def test_ci_runs_exactly_the_readme_test_command() -> None:
    command = _fenced_line_after("<!-- test-command -->")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert command in ci.splitlines(), "`.ci/run` must run the README's test command verbatim"


def test_readme_has_the_main_command() -> None:
    command = _fenced_line_after("<!-- main-command -->")
    assert command.endswith("kg serve")


def test_every_environment_variable_is_documented() -> None:
    names: set[str] = set()
    for path in [*REPO.glob("kg/**/*.py"), *REPO.glob("service/**/*.py")]:
        names |= set(re.findall(r"[\"'](KG_[A-Z_]+)[\"']", path.read_text(encoding="utf-8")))
    for path in REPO.glob("kg/cli/*.py"):
        names |= set(re.findall(r"envvar=\"(KG_[A-Z_]+)\"", path.read_text(encoding="utf-8")))
    missing = sorted(n for n in names if n not in README)
    assert not missing, f"README does not document {missing}"


def test_every_setting_is_documented_with_its_flag() -> None:
    from kg.settings import Settings, env_name

    rows = {
        line.split("|")[1].strip(" `"): line
        for line in README.splitlines()
        if line.startswith("| `KG_")
    }
    for setting in fields(Settings):
        if setting.name == "extra":
            continue
        env = env_name(setting)
        assert env in rows, f"README's configuration table has no row for {env}"
        flag = setting.metadata.get("flag")
        if flag:
            assert f"`{flag}`" in rows[env], f"README does not give {env}'s flag {flag}"


def test_every_cli_command_is_documented() -> None:
    from kg.cli.main import main

    missing = [name for name in main.commands if f"kg {name}" not in README]
    assert not missing, f"README does not document commands {missing}"


def _worked_example() -> list[tuple[str, str]]:
    """The ``$ kg …`` commands of the README's worked example with the output shown."""
    section = README.split("## A worked example", 1)[1].split("\n## ", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.+?)```", section, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:].split("  #", 1)[0].strip(), []))
            elif steps:
                steps[-1][1].append(line)
    return [
        (cmd, "\n".join(out))
        for cmd, out in steps
        if cmd.startswith("kg ") and not cmd.startswith("kg serve")
    ]


def test_worked_example_gives_what_it_shows(tmp_path) -> None:  # noqa: ANN001
    """Each `kg` command of the worked example, run verbatim on a fresh store, prints
    what the README shows (the seconds aside)."""
    import os
    import subprocess
    import sys

    steps = _worked_example()
    assert [cmd.split()[1] for cmd, _ in steps] == ["ingest", "stats", "query", "query"]
    env = {**os.environ, "KG_STORE": str(tmp_path / "example-store")}
    for cmd, shown in steps:
        done = subprocess.run(
            [sys.executable, "-m", "kg", *cmd.split()[1:]],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, (cmd, done.stderr)
        seconds = re.compile(r"in [\d.]+ s$", re.M)
        assert seconds.sub("in … s", done.stdout.rstrip("\n")) == seconds.sub("in … s", shown), cmd
