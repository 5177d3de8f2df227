"""``PUT /store`` (Graph Store Protocol replace) is atomic: a body that breaks
half-way leaves the graph exactly as it was, and a reader never sees the graph
emptied but not yet refilled."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers import running_server

TOKEN = "gsp-hostile-token"
WRITE = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/n-triples"}
NT = {"Accept": "application/n-triples"}
G = "http://example.org/atomic"


@pytest.fixture(scope="module")
def base(sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = tmp_path_factory.mktemp("gsp-hostile") / "store"
    shutil.copytree(sample_store, store)
    with running_server(store, env={"KG_UPDATE_TOKEN": TOKEN}) as url:
        yield url


def _triples(n: int, start: int = 0) -> str:
    return "".join(
        f'<http://example.org/s{i}> <http://example.org/p> "{i}" .\n' for i in range(start, n)
    )


def _graph(base: str) -> set[str]:
    got = httpx.get(base + "/store", params={"graph": G}, headers=NT, timeout=60)
    assert got.status_code == 200, got.text[:300]
    return {line for line in got.text.splitlines() if line.strip()}


def test_a_put_that_breaks_half_way_leaves_the_graph_as_it_was(base: str) -> None:
    put = httpx.put(base + "/store", params={"graph": G}, content=_triples(3), headers=WRITE)
    assert put.status_code in (201, 204), put.text
    before = _graph(base)
    assert len(before) == 3
    broken = _triples(5000, 100) + "<http://example.org/s> <http://example.org/p> oops .\n"
    refused = httpx.put(base + "/store", params={"graph": G}, content=broken, headers=WRITE)
    assert refused.status_code == 400, refused.text[:300]
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert _graph(base) == before
    ask = f"ASK {{ GRAPH <{G}> {{ <http://example.org/s100> ?p ?o }} }}"
    assert httpx.get(base + "/sparql", params={"query": ask}).json()["boolean"] is False


def test_readers_never_see_a_replaced_graph_half_written(base: str) -> None:
    n = 20_000
    body = _triples(n)
    first = httpx.put(base + "/store", params={"graph": G}, content=body, headers=WRITE)
    assert first.status_code in (201, 204), first.text
    seen: list[int] = []
    done = threading.Event()

    def read() -> None:
        with httpx.Client(base_url=base, timeout=60) as http:
            while not done.is_set():
                got = http.get("/store", params={"graph": G}, headers=NT)
                seen.append(got.text.count("\n") if got.status_code == 200 else -got.status_code)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(4):
            again = httpx.put(
                base + "/store", params={"graph": G}, content=body, headers=WRITE, timeout=120
            )
            assert again.status_code == 204, again.text[:300]
    finally:
        done.set()
        reader.join()
    # Before, the graph was cleared and refilled in two transactions: readers
    # in between saw it empty or missing.
    assert seen and set(seen) == {n}, sorted(set(seen))
