"""The query pool over a store that the web process writes: checkpoints are
coalesced and published in the background, so queries never wait for one, and a
write counts as done only once queries can read it (read-your-writes).

Real parts: a pyoxigraph store on disk, real worker processes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pyoxigraph import Literal, NamedNode, Quad, Store

from service.messages import Answer
from service.pool import PoolBusy, PoolTimeout, QueryPool
from service.snapshots import Snapshots
from tests.helpers import query_request

COUNT = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH <urn:g> { ?s ?p ?o } }"


async def _count(pool: QueryPool) -> int:
    answer = await pool.run(query_request(COUNT), timeout=30)
    assert isinstance(answer, Answer), answer
    return int(json.loads(answer.body)["results"]["bindings"][0]["n"]["value"])


def _write(store: Store, pool: QueryPool, i: int) -> None:
    store.update(f"INSERT DATA {{ GRAPH <urn:g> {{ <urn:s{i}> <urn:p> {i} }} }}")
    pool.invalidate()


def _handle(store: Store) -> Callable[[], Store]:
    """Snapshots asks for the writer's handle at each checkpoint."""
    return lambda: store


def _pool(tmp_path: Path, interval: float) -> tuple[Store, QueryPool]:
    store = Store(str(tmp_path / "store"))
    snapshots = Snapshots(_handle(store), tmp_path / "snapshots" / "1", interval=interval)
    return store, QueryPool(str(tmp_path / "store"), 1, snapshots, slow_lane=0)


def test_writes_share_checkpoints_and_become_visible_together(tmp_path: Path) -> None:
    async def scenario() -> None:
        store, pool = _pool(tmp_path, interval=0.3)
        await pool.start()
        try:
            assert pool.snapshots is not None
            before = pool.snapshots.taken
            for i in range(20):
                _write(store, pool, i)
            await pool.visible(timeout=30)
            # One checkpoint per write before: here the 20 share one or two.
            assert pool.snapshots.taken - before <= 2
            assert await _count(pool) == 20
        finally:
            await pool.close()
            del store

    asyncio.run(scenario())


def test_a_query_after_a_write_does_not_wait_for_the_checkpoint(tmp_path: Path) -> None:
    async def scenario() -> None:
        store, pool = _pool(tmp_path, interval=5.0)
        await pool.start()
        try:
            assert pool.snapshots is not None
            _write(store, pool, 1)
            await pool.visible(timeout=30)  # published after the interval
            assert await _count(pool) == 1
            _write(store, pool, 2)  # published 5 s after the last checkpoint
            started = time.monotonic()
            # The query reads the last published checkpoint: the write is not
            # acknowledged yet, so the older answer is right.
            assert await _count(pool) == 1
            assert time.monotonic() - started < 2.5
            await pool.visible(timeout=30)
            assert await _count(pool) == 2
        finally:
            await pool.close()
            del store

    asyncio.run(scenario())


def test_idle_workers_are_reopened_in_the_background(tmp_path: Path) -> None:
    async def scenario() -> None:
        store, pool = _pool(tmp_path, interval=0.1)
        await pool.start()
        try:
            assert pool.snapshots is not None
            _write(store, pool, 1)
            await pool.visible(timeout=30)
            deadline = time.monotonic() + 20
            while {w.generation for w in pool._all} != {pool.generation}:
                assert time.monotonic() < deadline, "idle workers were not reopened"
                await asyncio.sleep(0.05)
            # Checkpoints no worker reads any more are deleted once the reopening
            # is done (a worker's generation is set when its reopening starts).
            while set(pool.snapshots.paths) != {pool.generation}:
                assert time.monotonic() < deadline, "old checkpoints were not deleted"
                await asyncio.sleep(0.05)
            assert set(pool.snapshots.paths) == {pool.generation}
        finally:
            await pool.close()
            del store

    asyncio.run(scenario())


SLOW = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH <urn:g> { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } }"


async def _slow_lane_pool(tmp_path: Path, budget: float) -> tuple[Store, QueryPool]:
    """A store of 500 triples (a three-way cross product of them is slow) and a
    started pool of one fast-lane and one slow-lane worker, both running."""
    store = Store(str(tmp_path / "store"))
    store.extend(
        Quad(NamedNode(f"urn:s{i}"), NamedNode("urn:p"), Literal(i), NamedNode("urn:g"))
        for i in range(500)
    )
    snapshots = Snapshots(_handle(store), tmp_path / "snapshots" / "1")
    pool = QueryPool(str(tmp_path / "store"), 1, snapshots, slow_lane=1, budget=budget)
    await pool.start()
    while len(pool.pids) < 2:  # the workers start in the background
        await asyncio.sleep(0.05)
    return store, pool


def test_a_query_in_the_slow_lane_runs_at_the_lowest_cpu_priority(tmp_path: Path) -> None:
    async def scenario() -> None:
        store, pool = await _slow_lane_pool(tmp_path, budget=0.2)
        try:
            own = os.getpriority(os.PRIO_PROCESS, 0)
            running = asyncio.create_task(pool.run(query_request(SLOW), timeout=3))
            await asyncio.sleep(1.0)
            nice = {pid: os.getpriority(os.PRIO_PROCESS, pid) for pid in pool.pids}
            assert sorted(nice.values()) == [own, 19], nice
            # The fast lane still answers at once.
            assert await _count(pool) == 500
            with pytest.raises(PoolTimeout):
                await running
        finally:
            await pool.close()
            del store

    asyncio.run(scenario())


def test_a_query_waiting_for_a_cpu_is_not_taken_for_a_slow_one(tmp_path: Path) -> None:
    """On a busy machine a fast query can wait for a CPU longer than the budget.
    Judged by the clock it was stopped as slow (slow lane full) and its shape then
    refused; the budget is CPU time, so it answers."""

    async def scenario() -> None:
        store = Store(str(tmp_path / "store"))
        snapshots = Snapshots(_handle(store), tmp_path / "snapshots" / "1")
        pool = QueryPool(str(tmp_path / "store"), 1, snapshots, slow_lane=0, budget=0.2)
        await pool.start()
        try:
            assert await pool.wait_running(60)  # workers start in the background
            (pid,) = pool.pids
            os.kill(pid, signal.SIGSTOP)  # no CPU for a second, as on a loaded machine
            asyncio.get_running_loop().call_later(1.0, os.kill, pid, signal.SIGCONT)
            assert await _count(pool) == 0
            assert pool.pids == [pid]  # not killed as slow
            assert await _count(pool) == 0  # nor its shape refused
        finally:
            await pool.close()
            del store

    asyncio.run(scenario())


def test_a_query_whose_shape_was_slow_before_starts_in_the_slow_lane(tmp_path: Path) -> None:
    """It used to hold a fast-lane worker at full priority for the whole budget
    each time before moving: with clients repeating slow queries, fast queries
    waited behind them."""

    async def scenario() -> None:
        store, pool = await _slow_lane_pool(tmp_path, budget=1.0)
        try:
            with pytest.raises(PoolTimeout):  # learns the shape: past the budget
                await pool.run(query_request(SLOW), timeout=2.5)
            while len(pool.pids) < 2:  # the timed-out worker is replaced
                await asyncio.sleep(0.05)
            own = os.getpriority(os.PRIO_PROCESS, 0)
            again = asyncio.create_task(pool.run(query_request(SLOW + " # again"), timeout=3))
            await asyncio.sleep(0.3)  # well inside the budget
            nice = {pid: os.getpriority(os.PRIO_PROCESS, pid) for pid in pool.pids}
            assert sorted(nice.values()) == [own, 19], nice
            assert await _count(pool) == 500  # the fast lane is free
            with pytest.raises(PoolTimeout):
                await again
        finally:
            await pool.close()
            del store

    asyncio.run(scenario())


def test_a_query_that_would_wait_past_max_wait_is_refused_at_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = Store(str(tmp_path / "store"))
        snapshots = Snapshots(_handle(store), tmp_path / "snapshots" / "1")
        pool = QueryPool(
            str(tmp_path / "store"), 1, snapshots, slow_lane=0, budget=5.0, max_wait=0.1
        )
        await pool.start()
        try:
            assert await pool.wait_running(60)
            (pid,) = pool.pids
            # Recent queries took about a second each (the worker got no CPU).
            for _ in range(3):
                os.kill(pid, signal.SIGSTOP)
                asyncio.get_running_loop().call_later(1.0, os.kill, pid, signal.SIGCONT)
                assert await _count(pool) == 0
            assert pool.expected_wait() > 0.1
            os.kill(pid, signal.SIGSTOP)
            busy = asyncio.create_task(_count(pool))
            queued = asyncio.create_task(_count(pool))  # the first in line waits
            await asyncio.sleep(0.1)
            assert not queued.done()
            started = time.monotonic()
            with pytest.raises(PoolBusy):
                await pool.run(query_request(COUNT), timeout=30)
            assert time.monotonic() - started < 0.5  # refused, not queued
            os.kill(pid, signal.SIGCONT)
            assert await busy == 0 and await queued == 0
        finally:
            await pool.close()
            del store

    asyncio.run(scenario())


def test_an_error_inside_the_pool_does_not_lose_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault between taking a worker and its reply (here: sending fails once)
    used to keep the worker out of the pool for good; with every worker lost that
    way, each later query waited for its timeout."""
    from service.worker_link import WorkerLink

    async def scenario() -> None:
        store, pool = _pool(tmp_path, interval=0.2)
        await pool.start()
        try:
            assert await pool.wait_running(60)
            send = WorkerLink.call
            failures = iter([True])

            def flaky(self: WorkerLink, payload: bytes) -> asyncio.Future:
                if next(failures, False):
                    raise RuntimeError("injected fault")
                return send(self, payload)

            monkeypatch.setattr(WorkerLink, "call", flaky)
            with pytest.raises(RuntimeError):
                await pool.run(query_request(COUNT), timeout=5)
            assert await _count(pool) == 0  # a worker was there for the next query
        finally:
            await pool.close()
            del store

    asyncio.run(scenario())
