"""The shared SPARQL 1.1 Protocol checker (34 W3C cases + 16 extras) against a
real ``kg serve`` with an update token on a throw-away store (the checker runs
CLEAR ALL / DROP ALL)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import SHARED, running_server

CHECKER = SHARED / "tools" / "sparql_protocol_check.py"
TOKEN = "protocol-check-token"


@pytest.mark.shared
def test_protocol_checker_passes_everything(tmp_path: Path) -> None:
    if not CHECKER.is_file():
        pytest.skip(f"{CHECKER} is not there (../shared is absent)")
    with running_server(tmp_path / "store", "--no-sample", "--update-token", TOKEN) as base:
        run = subprocess.run(
            [
                sys.executable,
                str(CHECKER),
                "--query-url",
                base + "/sparql",
                "--update-url",
                base + "/sparql/update",
                "--header",
                f"Authorization: Bearer {TOKEN}",
                "--extras",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    last = run.stdout.strip().splitlines()[-1]
    failures = [line for line in run.stdout.splitlines() if not line.startswith(("PASS", "#"))]
    assert last == "50 passed, 0 failed", "\n".join(failures)
    assert run.returncode == 0
