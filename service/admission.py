"""Admission control for the web process's own work: REST, pages, exports, writes.

SPARQL queries have theirs in :class:`service.pool.QueryPool` (a bounded wait for
a worker process). Everything else runs in this process, on its event loop or
in its threads, and under overload it queued without bound: every request then
waited behind every other, a fast SPARQL query's routing and reply included,
because they share the loop. This gate lets ``concurrent`` such requests run at
once; a request that finds them all taken waits in a FIFO only if the wait is
likely short (fewer than ``queue`` ahead of it, and the time they will take by
recent handling times under ``max_wait``); otherwise it is refused at once with
a 503 ``overloaded`` problem and ``Retry-After``, as Fuseki's and Virtuoso's
admission does. A refusal costs microseconds, so an overloaded server keeps
answering the requests it admits at their usual speed, and SPARQL queries are
not stuck behind queued REST work.

``/health`` is answered before this gate (:class:`service.app.HealthCheck`), and
``/ready``, static files, the API docs and SPARQL queries (``/sparql``) pass
through it ungated.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque

from starlette.types import ASGIApp, Receive, Scope, Send

from service.errors import PROBLEM_BASE, PROBLEM_MEDIA_TYPE

# Paths that are cheap, or that have admission control of their own.
UNGATED_PATHS = frozenset({"/health", "/ready", "/sparql", "/docs", "/redoc", "/openapi.json"})
UNGATED_PREFIXES = ("/static/",)


class WaitEstimate:
    """How long a newcomer will likely wait: recent handling time (exponentially
    weighted) times the requests ahead of it, shared among the slots. The gate
    below and the query pool (:mod:`service.pool`) both judge refusals by it."""

    def __init__(self, slots: int) -> None:
        self.slots = max(1, slots)
        self.typical = 0.005  # seconds one request ahead will probably cost

    def note(self, seconds: float) -> None:
        """One request was handled in ``seconds``."""
        self.typical += 0.2 * (seconds - self.typical)

    def wait(self, waiting: int) -> float:
        """Seconds a request arriving behind ``waiting`` others would likely wait."""
        return (waiting + 1) * self.typical / self.slots


class Gate:
    """The bookkeeping of admission: slots, the FIFO of waiters, refusals."""

    def __init__(self, *, concurrent: int, queue: int, max_wait: float, retry_after: int = 1):
        self.concurrent = max(1, concurrent)
        self.queue = max(0, queue)
        self.max_wait = max_wait
        self.retry_after = retry_after
        self.running = 0
        self.refused = 0  # since start (``/ready`` reports it)
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._estimate = WaitEstimate(self.concurrent)

    @property
    def waiting(self) -> int:
        """Requests waiting for a slot now."""
        return len(self._waiters)

    def expected_wait(self) -> float:
        """Seconds a request arriving now would probably wait for a slot."""
        return self._estimate.wait(len(self._waiters))

    async def enter(self) -> bool:
        """Take a slot, waiting for one if the wait is likely short; False (and
        nothing taken) when the request is refused."""
        if self.running < self.concurrent:
            self.running += 1
            return True
        if len(self._waiters) >= self.queue or (
            self._waiters and self.expected_wait() > self.max_wait
        ):
            # The first in line always waits: nothing queued is ahead of it.
            self.refused += 1
            return False
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # resolved by leave(), which hands over its slot
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.leave(0.0)  # the slot was handed over as it was cancelled: pass it on
            else:
                # leave() may have dropped it already (it skips cancelled waiters).
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise
        return True

    def leave(self, seconds: float) -> None:
        """Give the slot back after ``seconds`` of handling."""
        if seconds:
            self._estimate.note(seconds)
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes to it: running is unchanged
                return
        self.running -= 1


class Admission:
    """Pure ASGI middleware: every gated request passes through ``gate``."""

    def __init__(self, app: ASGIApp, *, gate: Gate) -> None:
        self.app = app
        self.gate = gate

    @staticmethod
    def gated(scope: Scope) -> bool:
        """Whether the request goes through the gate."""
        path: str = scope["path"]
        return path not in UNGATED_PATHS and not path.startswith(UNGATED_PREFIXES)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.gated(scope):
            await self.app(scope, receive, send)
            return
        if not await self.gate.enter():
            await self._refuse(scope, send)
            return
        started = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.gate.leave(time.perf_counter() - started)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        gate = self.gate
        body = json.dumps(
            {
                "type": PROBLEM_BASE + "overloaded",
                "title": "Service Unavailable",
                "status": 503,
                "detail": (
                    f"{gate.running} requests are running and {gate.waiting} waiting, "
                    "the most this service takes on at once: try again shortly"
                ),
                "instance": scope["path"],
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(gate.retry_after).encode()),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
