"""Type checking: mypy over kg/ and service/ (configured in pyproject.toml).

The code base predates the check, so the errors mypy reported when it was
introduced are listed in ``tests/mypy-baseline.txt`` (path, message and code,
without line numbers). A new error fails this test; fixing a listed one is
welcome: delete its line.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BASELINE = REPO / "tests" / "mypy-baseline.txt"
_ERROR = re.compile(r"^(?P<path>[^:]+):\d+: error: (?P<message>.*)$")


def mypy_errors() -> set[str]:
    """The errors mypy reports now, each as ``path: message [code]``."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "kg", "service"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode not in (0, 1):
        raise AssertionError(f"mypy did not run: {done.stderr or done.stdout}")
    return {
        f"{m['path']}: {m['message']}"
        for line in done.stdout.splitlines()
        if (m := _ERROR.match(line))
    }


@pytest.mark.slow
def test_no_new_type_errors() -> None:
    if (
        shutil.which("mypy") is None
        and subprocess.run([sys.executable, "-c", "import mypy"], capture_output=True).returncode
    ):
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    known = set(BASELINE.read_text(encoding="utf-8").splitlines())
    new = sorted(mypy_errors() - known)
    assert not new, "new type errors:\n" + "\n".join(new)


if __name__ == "__main__":  # regenerate the baseline: python tests/test_types.py
    BASELINE.write_text("\n".join(sorted(mypy_errors())) + "\n", encoding="utf-8")
