"""``/health`` keeps answering while the server chews on a large hostile body.

The static checks on SPARQL text (nesting depth, ``SERVICE``/``LOAD``, the
admission-control fingerprint) and the JSON of ``POST /papers`` are pure Python;
on megabytes of short tokens they took seconds, and on the event loop nothing
else (``/health`` included) was answered meanwhile. Each body below stalled the
loop for many seconds before; now they are read in a thread."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers import running_server

TOKEN = "health-token-0123"
ROWS = 1_000_000
BIG = {
    # Fingerprinted for admission control (it has a comment): 2M tokens.
    "values-with-comment": ("ASK { VALUES ?x { " + "1 " * ROWS + "} } # a comment", 200),
    # Depth-checked (every "(" may deepen): 4M tokens, never deeper than 3.
    "values-rows": ("ASK { VALUES (?x) { " + "(1) " * ROWS + "} }", 200),
}


@pytest.fixture(scope="module")
def server(sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = tmp_path_factory.mktemp("health") / "store"
    shutil.copytree(sample_store, store)
    env = {"KG_UPDATE_TOKEN": TOKEN, "KG_QUERY_TIMEOUT": "60"}
    with running_server(store, env=env) as base:
        yield base


def _health_while(base: str, send: object) -> tuple[float, httpx.Response]:
    """The slowest ``/health`` answer while ``send()`` runs, and its response."""
    outcome: list[httpx.Response] = []
    worker = threading.Thread(target=lambda: outcome.append(send()))  # type: ignore[operator]
    worker.start()
    slowest = 0.0
    with httpx.Client(base_url=base, timeout=60) as http:
        while worker.is_alive():
            started = time.perf_counter()
            assert http.get("/health").status_code == 200
            slowest = max(slowest, time.perf_counter() - started)
            time.sleep(0.05)
    worker.join()
    return slowest, outcome[0]


@pytest.mark.parametrize("name", sorted(BIG))
def test_health_answers_while_a_large_query_is_checked(server: str, name: str) -> None:
    query, status = BIG[name]

    def send() -> httpx.Response:
        headers = {"Content-Type": "application/sparql-query"}
        return httpx.post(server + "/sparql", content=query, headers=headers, timeout=120)

    slowest, response = _health_while(server, send)
    assert response.status_code == status, response.text[:300]
    assert slowest < 3.0, f"/health took {slowest:.1f} s while the query was checked"


def test_health_answers_while_a_large_json_body_is_parsed(server: str) -> None:
    # 15 MB of tiny values: refused (413) before the parser sees it; parsed on the
    # event loop before, it held every other request for seconds.
    body = json.dumps([{"abstract": "a b c", "k": [[]] * 8}] * 250_000).encode()

    def send() -> httpx.Response:
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        return httpx.post(server + "/papers", content=body, headers=headers, timeout=120)

    slowest, response = _health_while(server, send)
    assert response.status_code == 413, response.text[:300]
    assert response.json()["limit"] == 100_000
    assert slowest < 3.0, f"/health took {slowest:.1f} s while the body was parsed"
