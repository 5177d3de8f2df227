"""A pool of query worker processes (:mod:`service.worker`) for the embedded store.

pyoxigraph cannot cancel a running query, so a query that outlives its timeout
is stopped the only sure way: its worker process is killed and a fresh one
started. The worker count bounds how many queries evaluate at once; a request
that finds every worker busy waits, and that wait counts against its timeout.

Admission control, as Fuseki, Virtuoso and GraphDB do it: the pool runs
``size`` fast-lane workers plus ``slow_lane`` more. A query still running after
``budget`` seconds moves to the slow lane; when the slow lane is full it is
stopped (:class:`PoolBusy`, a 503 with ``Retry-After``). So slow queries never
hold more than ``slow_lane`` workers, and a fast query finds a free worker
within about ``budget`` seconds however many slow ones arrive. At most
``queue`` requests wait for a worker; more are refused at once (:class:`PoolBusy`).

Writes happen in the web process. When it holds the store read-write, workers
read checkpoints that :class:`~service.snapshots.Snapshots` publishes in the
background (at most one per interval for all the writes in between); a query
reads the newest one, and a worker reopens before its first query on a newer
one. After each publication idle workers are reopened one at a time, so a query
rarely pays for the reopening. Without a writer the workers open the store
directory itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import shutil
import subprocess
import sys
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

from kg.store.sparql_text import tokens
from service.admission import WaitEstimate
from service.messages import (
    Answer,
    Failure,
    QueryRequest,
    Ready,
    Reopen,
    StartFailed,
    UpdateTrial,
)
from service.processes import cpu_seconds, set_nice
from service.snapshots import Snapshots
from service.worker_link import PoolError, WorkerLink, WorkerProtocol

log = logging.getLogger("kg.service")


class PoolTimeout(Exception):
    """The query did not finish in time; its worker was killed."""


class PoolBusy(Exception):
    """Admission control refused the query: the wait queue or the slow lane is full."""


class QueryPool:
    """Worker processes evaluating SPARQL queries on one embedded store."""

    def __init__(
        self,
        store_path: str,
        size: int,
        snapshots: Snapshots | None = None,
        *,
        slow_lane: int = 1,
        budget: float = 0.5,
        queue: int = 64,
        max_wait: float = float("inf"),
    ) -> None:
        self.store_path = store_path
        self.size = size + slow_lane  # processes: the fast lane plus the slow lane
        self.slow_lane = slow_lane
        self.budget = budget
        self.queue = queue
        self.max_wait = max_wait
        # From recent fast-lane evaluation times: the wait a newcomer would have.
        self._estimate = WaitEstimate(size)
        self.snapshots = snapshots
        self._waiting = 0  # requests waiting for an idle worker
        self._slow = 0  # queries running past the budget
        self._starting: Counter[int] = Counter()  # generations of workers being started
        self._known_slow: OrderedDict[str, None] = OrderedDict()  # recent slow query shapes
        self._refresh: asyncio.Task[None] | None = None
        self._idle: asyncio.Queue[WorkerLink] = asyncio.Queue()
        self._all: set[WorkerLink] = set()
        self._pending: set[asyncio.Task[None]] = set()
        self._starting_tasks: set[asyncio.Task[None]] = set()  # the first workers'
        self._closed = False

    @property
    def pids(self) -> list[int]:
        """Process ids of the live workers."""
        return sorted(w.pid for w in self._all)

    @property
    def generation(self) -> int:
        """The store generation queries read now (the result cache's key)."""
        return self.snapshots.published if self.snapshots is not None else 0

    async def start(self) -> None:
        """Start the workers in the background: start-up does not wait for them
        (each costs a Python process's start, which on a busy machine is seconds).
        A query waits for an idle worker within its timeout, as it always does;
        :meth:`wait_running` says when one runs. The snapshot publisher (a write's
        read-your-writes) starts first."""
        if self.snapshots is not None:
            await self.snapshots.start(on_publish=self._published)
        for _ in range(self.size):
            task = asyncio.get_running_loop().create_task(self._add_worker())
            self._pending.add(task)
            self._starting_tasks.add(task)
            task.add_done_callback(self._pending.discard)
            task.add_done_callback(self._starting_tasks.discard)

    async def wait_running(self, timeout: float) -> bool:
        """Whether a worker runs, waiting up to ``timeout`` seconds while the
        first ones start."""
        deadline = time.monotonic() + timeout
        while not self.pids and self._starting_tasks and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return bool(self.pids)

    async def _add_worker(self) -> None:
        try:
            self._idle.put_nowait(worker := await self._spawn())
            if worker.generation != self._current_path()[0]:
                self._published()  # a checkpoint was published while it started
        except (PoolError, OSError) as exc:
            log.error("cannot start a query worker: %s", exc)

    def _current_path(self) -> tuple[int, str]:
        """The generation queries read now and the directory that holds it."""
        if self.snapshots is None:
            return 0, self.store_path
        return self.snapshots.current()

    def _published(self) -> None:
        """A newer checkpoint is published: reopen the idle workers on it, in the background."""
        if self._closed:
            return
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.get_running_loop().create_task(self._reopen_idle())
            self._pending.add(self._refresh)
            self._refresh.add_done_callback(self._pending.discard)

    async def _reopen_idle(self) -> None:
        """Reopen idle workers on the newest checkpoint one at a time (the others
        keep serving), then delete the checkpoints no worker has open."""
        assert self.snapshots is not None
        for _ in range(self._idle.qsize()):
            if self._closed or self._idle.empty():
                break
            worker = self._idle.get_nowait()
            generation, path = self.snapshots.current()
            if worker.generation == generation or worker.protocol.closed:
                self._idle.put_nowait(worker)  # a dead one is replaced by _acquire
                continue
            worker.generation = generation
            payload = pickle.dumps(Reopen(path, generation), protocol=pickle.HIGHEST_PROTOCOL)
            try:
                async with asyncio.timeout(60):
                    await worker.call(payload)
            except (TimeoutError, PoolError, ConnectionError):
                self._replace(worker, "could not reopen the store")
                continue
            self._idle.put_nowait(worker)
        self._prune()

    def _prune(self) -> None:
        if self.snapshots is not None:
            self.snapshots.prune({w.generation for w in self._all} | set(self._starting))

    async def visible(self, timeout: float) -> None:
        """Wait until queries read every write made so far (see :mod:`service.snapshots`)."""
        if self.snapshots is not None:
            await self.snapshots.visible(timeout)

    async def _spawn(self) -> WorkerLink:
        generation, path = self._current_path()
        # Until the new worker is in self._all, nothing else marks its checkpoint
        # as in use: without this, a newer generation's prune deleted it before
        # the worker opened it, and the worker was lost.
        self._starting[generation] += 1
        try:
            worker = await self._start(generation, path)
        finally:
            self._starting[generation] -= 1
            if not self._starting[generation]:
                del self._starting[generation]
        return worker

    async def _start(self, generation: int, path: str) -> WorkerLink:
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.subprocess_exec(
            WorkerProtocol,
            sys.executable,
            "-m",
            "service.worker",
            path,
            str(generation),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
        )
        worker = WorkerLink(transport, protocol, generation)
        try:
            hello = await asyncio.wait_for(protocol.expect(), 60)
        except (PoolError, TimeoutError) as exc:
            await worker.kill()
            raise PoolError("a query worker did not start") from exc
        if not isinstance(hello, Ready):
            await worker.kill()
            message = hello.message if isinstance(hello, StartFailed) else repr(hello)
            raise PoolError(f"a query worker could not open the store: {message}")
        self._all.add(worker)
        return worker

    def invalidate(self) -> None:
        """The store was written (callable from any thread): publish it to the workers."""
        if self.snapshots is not None:
            self.snapshots.note_write()

    async def run(self, request: QueryRequest | UpdateTrial, timeout: float) -> Answer | Failure:
        """Evaluate one request within ``timeout`` seconds (waiting for a worker included)."""
        if self._closed:
            raise PoolError("the query pool is shut down")
        deadline = time.monotonic() + timeout
        shape = fingerprint(request.query)
        known_slow = shape in self._known_slow
        if known_slow and self._slow >= self.slow_lane:
            # It went past the budget before: refused now rather than holding a
            # fast-lane worker for the budget only to be stopped then.
            raise self._slow_lane_full("this query ran past the budget before")
        if self._idle.empty():
            if self._waiting >= self.queue:
                raise PoolBusy(f"{self._waiting} queries are already waiting for a worker")
            if self._waiting and self.expected_wait() > self.max_wait:
                # Queued, it would wait longer than a fast query may take: the
                # refusal keeps the queries that are admitted fast. (The first in
                # line always waits: nothing queued is ahead of it.)
                raise PoolBusy(
                    f"{self._waiting} queries are waiting for a worker, about "
                    f"{self.expected_wait():.2f} s of work"
                )
        self._waiting += 1
        try:
            worker = await self._acquire(timeout)
        finally:
            self._waiting -= 1
        if known_slow and self._slow >= self.slow_lane:
            self._idle.put_nowait(worker)
            raise self._slow_lane_full("this query ran past the budget before")
        try:
            generation, path = self._current_path()
        except BaseException:
            self._idle.put_nowait(worker)
            raise
        worker.generation = generation
        request = request.at(path, generation)
        payload = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            reply = await self._evaluate(worker, payload, deadline, shape, known_slow)
        except TimeoutError:
            self._replace(worker, "timeout")
            raise PoolTimeout("the query ran out of time") from None
        except PoolBusy:
            raise  # its worker is already being replaced
        except (PoolError, ConnectionError) as exc:
            self._replace(worker, "died")
            raise PoolError("the query worker died while evaluating the query") from exc
        except asyncio.CancelledError:
            # The client went away mid-query: the worker's reply would arrive
            # out of step, so it is replaced rather than reused.
            self._replace(worker, "cancelled")
            raise
        except Exception:
            # Whatever went wrong here, the worker must not be lost: a pool that
            # leaks its workers one error at a time ends with every query waiting.
            self._replace(worker, "an error in the pool")
            raise
        if worker.lowered and not set_nice(worker.pid, os.getpriority(os.PRIO_PROCESS, 0)):
            # Back in the fast lane it needs its priority again; only a privileged
            # process may raise it, so otherwise a fresh worker takes its place.
            self._replace(worker, "its CPU priority was lowered")
        else:
            worker.lowered = False
            self._idle.put_nowait(worker)
        if not isinstance(reply, Answer | Failure):
            raise PoolError(f"a query worker answered {reply!r}")
        return reply

    def expected_wait(self) -> float:
        """Seconds a query arriving now would probably wait for a fast-lane worker."""
        return self._estimate.wait(self._waiting)

    def _slow_lane_full(self, why: str) -> PoolBusy:
        return PoolBusy(
            f"{why}, and {self._slow} slow queries are running (past {self.budget:g} s), "
            "the most this service runs at once"
        )

    async def _evaluate(
        self, worker: WorkerLink, payload: bytes, deadline: float, shape: str, known_slow: bool
    ) -> Any:
        """The worker's reply, with admission control: a query that runs past the
        budget moves to the slow lane, or is stopped when the slow lane is full,
        so slow queries never hold the workers that fast queries need. A query
        whose shape went past the budget before starts in the slow lane."""
        if known_slow:
            return await self._slow_lane(worker, lambda: worker.call(payload), deadline)
        started, cpu_before = time.monotonic(), cpu_seconds(worker.pid)
        call = worker.call(payload)
        # The budget is CPU time when the system reports it: on a busy machine a
        # fast query can wait seconds for a CPU, and judged by the clock it was
        # taken for a slow one (its shape then refused while the slow lane was
        # full: half the fast queries of a soak). Past ten budgets of waiting it
        # counts as slow anyway (e.g. waiting for the disk).
        wait = self.budget
        while True:
            done, _ = await asyncio.wait(
                {call}, timeout=max(min(wait, deadline - time.monotonic()), 0.001)
            )
            if done:
                self._estimate.note(time.monotonic() - started)
                return call.result()
            now, cpu = time.monotonic(), cpu_seconds(worker.pid)
            if cpu is None or cpu_before is None or now >= deadline:
                break
            used = cpu - cpu_before
            if used >= self.budget or now - started >= 10 * self.budget:
                break
            wait = max(self.budget - used, 0.05)
        self._known_slow[shape] = None
        self._known_slow.move_to_end(shape)
        while len(self._known_slow) > 512:
            self._known_slow.popitem(last=False)
        if time.monotonic() >= deadline:
            call.cancel()
            raise TimeoutError
        if self._slow >= self.slow_lane:
            call.cancel()
            self._replace(worker, "slow lane full")
            raise self._slow_lane_full("the query ran past the budget")
        return await self._slow_lane(worker, lambda: call, deadline)

    async def _slow_lane(
        self, worker: WorkerLink, call: Callable[[], asyncio.Future[Any]], deadline: float
    ) -> Any:
        """Finish a slow query in the slow lane (``call`` sends it, or has)."""
        self._slow += 1
        # The slow lane runs at the lowest CPU priority: on a busy machine a
        # slow query then takes only the CPU time nothing else wants, instead of
        # a core that fast queries and the web process are waiting for.
        worker.lowered = set_nice(worker.pid, 19)
        try:
            async with asyncio.timeout(max(deadline - time.monotonic(), 0.001)):
                return await call()
        finally:
            self._slow -= 1

    async def trial_update(self, text: str, base_iri: str, timeout: float) -> Answer | Failure:
        """Run an update on a private copy of the store in a worker, within
        ``timeout``; the live store is untouched whatever happens. Needs a writer
        (:class:`Snapshots`). Raises like :meth:`run`."""
        assert self.snapshots is not None
        copy = await self.snapshots.private_copy()
        try:
            return await self.run(UpdateTrial(text, base_iri, str(copy)), timeout)
        finally:
            await asyncio.to_thread(shutil.rmtree, copy, True)

    async def _acquire(self, timeout: float) -> WorkerLink:
        """An idle live worker; one that died while idle is replaced, not used."""
        deadline = time.monotonic() + timeout
        while True:
            if not self._idle.empty():
                worker = self._idle.get_nowait()
            else:
                try:
                    async with asyncio.timeout(max(deadline - time.monotonic(), 0.001)):
                        worker = await self._idle.get()
                except TimeoutError:
                    raise PoolTimeout("every query worker stayed busy") from None
            if not worker.protocol.closed:
                return worker
            self._replace(worker, "exited while idle")

    def _replace(self, worker: WorkerLink, why: str) -> None:
        log.warning("killing query worker %d (%s)", worker.pid, why)
        self._all.discard(worker)
        task = asyncio.get_running_loop().create_task(self._respawn(worker))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _respawn(self, old: WorkerLink) -> None:
        await old.kill()
        if self._closed:
            return
        for attempt in range(1, 6):
            try:
                self._idle.put_nowait(await self._spawn())
                return
            except (PoolError, OSError) as exc:
                # Retried: a lost worker would shrink the pool for good.
                log.error("cannot replace a query worker (attempt %d): %s", attempt, exc)
            if self._closed:
                return
            await asyncio.sleep(0.5 * attempt)
        # The store vanished; later queries wait and time out.

    async def close(self) -> None:
        """Stop every worker: close its stdin (it exits), kill it if it does not."""
        self._closed = True
        for task in list(self._pending):
            with contextlib.suppress(BaseException):
                await task
        for worker in list(self._all):
            stdin = worker.transport.get_pipe_transport(0)
            if stdin is not None:
                stdin.close()
        for worker in list(self._all):
            if not await worker.wait(2):
                await worker.kill()
        self._all.clear()
        if self.snapshots is not None:
            await self.snapshots.close()


def fingerprint(text: str) -> str:
    """A query's shape: its tokens without comments and spacing, so the same query
    sent with a different comment (a cache-buster) is recognised. A text over 64 KiB
    is its own shape: tokenizing it would hold the event loop (seconds for megabytes)."""
    if len(text) > 64 * 1024:
        return text
    # Always by tokens (tens of microseconds): splitting on spaces when there
    # was no comment gave the same query a different shape with one.
    return " ".join(tok.text for tok in tokens(text))


def default_pool_size() -> int:
    """One worker per CPU, at least two (so one slow query does not block the rest)."""
    return max(2, os.cpu_count() or 2)
