"""The writer's store is reopened when RocksDB's MANIFEST grows long, so that
opening a checkpoint stays cheap however long a server takes writes.

Every checkpoint copies the MANIFEST (a log of each flush and compaction since
the store was opened read-write) and every query worker replays it when it opens
one; under a steady stream of writes it grew by about 3 kB per checkpoint and a
worker's open from 19 to 89 ms in 1,200 checkpoints (the ten-minute soak's
fast-query tail grew with it). Real parts: pyoxigraph stores on disk, real
query worker processes.
"""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import time
from pathlib import Path

import httpx
import pytest
from pyoxigraph import Store

from kg.store.embedded import EmbeddedStore, StoreError, manifest_bytes
from service.messages import Answer
from service.pool import QueryPool
from service.snapshots import Roll, Snapshots
from service.tracked import HandleGate, TrackedStore
from tests.helpers import query_request, running_server

XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
COUNT = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH <urn:g> { ?s ?p ?o } }"


def _insert(store: EmbeddedStore | TrackedStore, i: int) -> None:
    store.update(f"INSERT DATA {{ GRAPH <urn:g> {{ <urn:s{i}> <urn:p> {i} }} }}")


def _checkpoints(store: EmbeddedStore, target: Path, n: int) -> None:
    """What the snapshot publisher does ``n`` times: a write, a flush, a checkpoint."""
    for i in range(n):
        _insert(store, 10_000 + i)
        store.flush()
        store.raw.backup(str(target / f"c{i}"))


def test_reopening_starts_a_short_manifest_and_keeps_every_quad(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")
    _checkpoints(store, tmp_path, 30)
    grown = manifest_bytes(tmp_path / "store")
    before = len(store)
    assert grown > 30_000, grown  # a few kB per checkpoint: the growth this guards against

    store.reopen()

    # One record: every live file of every column family (about 17 kB here).
    short = manifest_bytes(tmp_path / "store")
    assert short < grown / 3, (short, grown)
    assert len(store) == before
    _insert(store, 1)  # writable again
    assert len(store) == before + 1
    # A checkpoint taken now copies the short MANIFEST and one flush more.
    store.flush()
    store.raw.backup(str(tmp_path / "after"))
    assert manifest_bytes(tmp_path / "after") < short + 8_000
    store.close()


def test_reopening_waits_for_a_result_that_holds_the_old_handle(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")
    for i in range(50):
        _insert(store, i)
    before = len(store)
    reading = threading.Event()

    def read_slowly() -> None:
        # A result is dropped on the thread that made it (pyoxigraph's are unsendable).
        results = iter(store.query("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }"))  # type: ignore[arg-type]
        next(results)
        reading.set()
        time.sleep(0.3)
        del results

    reader = threading.Thread(target=read_slowly)
    reader.start()
    reading.wait(5)
    started = time.monotonic()
    store.reopen(timeout=10)
    reader.join()
    assert time.monotonic() - started >= 0.25  # it waited for the reader
    assert len(store) == before
    store.close()


def test_a_reopening_that_cannot_have_the_store_says_so(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")
    _insert(store, 1)
    before = len(store)
    held = iter(store.query("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }"))  # type: ignore[arg-type]
    next(held)
    with pytest.raises(StoreError, match="cannot reopen"):
        store.reopen(timeout=0.2)
    with pytest.raises(StoreError, match="cannot reopen"):
        len(store)  # every use says why, not an AttributeError
    del held
    gc.collect()
    store.reopen()  # a later attempt succeeds
    assert len(store) == before
    store.close()


def test_the_gate_gives_the_store_alone_only_when_no_call_runs() -> None:
    gate = HandleGate()
    entered = threading.Event()
    release = threading.Event()
    order: list[str] = []

    def long_call() -> None:
        with gate.call():
            entered.set()
            release.wait(5)
            order.append("call ended")

    caller = threading.Thread(target=long_call)
    caller.start()
    entered.wait(5)
    with gate.alone(timeout=0.1) as alone:
        assert not alone  # a call is still running: the caller must not reopen
    threading.Timer(0.2, release.set).start()
    with gate.alone(timeout=5) as alone:
        assert alone
        order.append("alone")
        late = threading.Thread(target=lambda: (gate.call().__enter__(), order.append("late")))
        late.start()
        time.sleep(0.1)
        assert "late" not in order  # new calls wait while the store is had alone
    late.join(5)
    caller.join(5)
    assert order == ["call ended", "alone", "late"]


def test_the_publisher_reopens_the_writer_when_its_manifest_passes_the_limit(
    tmp_path: Path,
) -> None:
    """Writes published one checkpoint at a time: the writer's MANIFEST never
    grows far past the limit, and the workers read every write throughout."""
    limit = 40_000  # the MANIFEST of this store reopened is about 17 kB

    async def scenario() -> None:
        embedded = EmbeddedStore(tmp_path / "store")
        pool: QueryPool | None = None
        tracked = TrackedStore(embedded, lambda: pool.invalidate() if pool else None)
        writes = asyncio.Lock()
        snapshots = Snapshots(
            embedded.native,
            tmp_path / "snapshots" / "1",
            interval=0.02,
            roll=Roll(
                size=lambda: manifest_bytes(tmp_path / "store"),
                reopen=tracked.reopen,
                writes=writes,
                limit=limit,
            ),
        )
        pool = QueryPool(str(tmp_path / "store"), 1, snapshots, slow_lane=0)
        await pool.start()
        largest = 0
        try:
            for i in range(40):
                async with writes:
                    await asyncio.to_thread(_insert, tracked, i)
                await pool.visible(timeout=30)
                largest = max(largest, manifest_bytes(tmp_path / "store"))
                answer = await pool.run(query_request(COUNT), timeout=30)
                assert isinstance(answer, Answer), answer
                assert int(json.loads(answer.body)["results"]["bindings"][0]["n"]["value"]) == i + 1
            assert snapshots.rolled >= 1
            assert largest < limit + 10_000, largest  # one checkpoint past it at most
        finally:
            await pool.close()
            tracked.close()

    asyncio.run(scenario())


def test_a_store_opened_read_only_is_not_reopened(tmp_path: Path) -> None:
    Store(str(tmp_path / "store")).flush()
    reader = EmbeddedStore(tmp_path / "store", read_only=True)
    reader.reopen()  # nothing to roll: a reader writes no MANIFEST
    assert len(reader) == 0


def test_a_server_taking_every_kind_of_write_keeps_its_manifest_short(store_copy: Path) -> None:
    """A real server with a small limit: papers, Graph Store Protocol writes and
    SPARQL updates, each read back at once, while the store is reopened under
    them; its MANIFEST stays near the limit (without the roll it grew by ~3 kB
    per checkpoint) and nothing written is lost."""
    limit = 40_000
    token = "roll-token-0123456789"
    auth = {"Authorization": f"Bearer {token}"}
    env = {
        "KG_UPDATE_TOKEN": token,
        "KG_MANIFEST_LIMIT": str(limit),
        "KG_SNAPSHOT_INTERVAL": "0.05",
        "KG_LOG_LEVEL": "warning",
    }
    ask = "ASK {{ GRAPH <{g}> {{ <urn:roll:s{i}> <urn:roll:p> {i} }} }}"
    with (
        running_server(store_copy, env=env) as base,
        httpx.Client(base_url=base, timeout=60) as http,
    ):
        for i in range(36):
            kind = i % 3
            if kind == 0:
                graph = "urn:roll:update"
                text = f"INSERT DATA {{ GRAPH <{graph}> {{ <urn:roll:s{i}> <urn:roll:p> {i} }} }}"
                done = http.post(
                    "/sparql/update",
                    content=text,
                    headers={**auth, "Content-Type": "application/sparql-update"},
                )
            elif kind == 1:
                graph = f"urn:roll:gsp{i}"
                done = http.put(
                    "/store",
                    params={"graph": graph},
                    content=f'<urn:roll:s{i}> <urn:roll:p> "{i}"^^<{XSD_INTEGER}> .',
                    headers={**auth, "Content-Type": "application/n-triples"},
                )
            else:
                graph = ""
                paper = {
                    "id": f"roll-{i}",
                    "title": f"Unlearning on demand {i}",
                    "abstract": "We study machine unlearning for large language models "
                    f"and propose ForgetNet-{i}, which forgets on demand.",
                }
                done = http.post("/papers", json=paper, headers=auth)
            assert done.status_code in (200, 201, 204), (i, done.text)
            if graph:
                seen = http.get("/sparql", params={"query": ask.format(g=graph, i=i)})
                assert seen.json()["boolean"] is True, i  # read-your-writes throughout
            else:
                assert http.get(f"/papers/roll-{i}").status_code == 200, i
            assert manifest_bytes(store_copy) < limit + 10_000, (i, manifest_bytes(store_copy))
        # Everything written is still there after the reopenings.
        count = http.get(
            "/sparql",
            params={"query": "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s <urn:roll:p> ?o } }"},
        )
        assert int(count.json()["results"]["bindings"][0]["n"]["value"]) == 24
        assert (
            len(http.get("/papers", params={"q": "ForgetNet", "limit": 50}).json()["items"]) >= 12
        )
