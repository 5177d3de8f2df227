"""Admission control of the web process's own work (:mod:`service.admission`):
a bounded number of requests run, a short FIFO waits, the rest are refused at
once with a 503 problem and ``Retry-After``; SPARQL queries and probes are not
gated. Real ASGI stack (Starlette routing, httpx's ASGI transport)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from service.admission import Admission, Gate


def _app(gate: Gate, release: asyncio.Event, started: list[str]) -> Admission:
    async def held(request: Request) -> JSONResponse:
        started.append(request.url.path)
        await release.wait()
        return JSONResponse({"path": request.url.path})

    routes = [Route(path, held) for path in ("/papers", "/tasks", "/sparql", "/ready")]
    return Admission(Starlette(routes=routes), gate=gate)


def test_requests_past_the_slots_and_the_queue_are_refused_at_once() -> None:
    async def scenario() -> None:
        gate = Gate(concurrent=2, queue=1, max_wait=60.0)
        release, started = asyncio.Event(), []
        transport = httpx.ASGITransport(app=_app(gate, release, started))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            running = [asyncio.create_task(http.get("/papers")) for _ in range(3)]
            while len(started) < 2 or gate.waiting < 1:
                await asyncio.sleep(0.01)
            refused = await asyncio.wait_for(http.get("/tasks"), 5)
            assert refused.status_code == 503
            assert refused.headers["retry-after"] == "1"
            assert refused.headers["content-type"] == "application/problem+json"
            problem = refused.json()
            assert problem["type"].endswith("/overloaded") and problem["instance"] == "/tasks"
            # SPARQL queries (the pool's own admission) and readiness pass by the gate.
            ungated = [asyncio.create_task(http.get(p)) for p in ("/sparql", "/ready")]
            while len(started) < 4:
                await asyncio.sleep(0.01)
            release.set()
            answers = await asyncio.gather(*running, *ungated)
            assert [a.status_code for a in answers] == [200] * 5
            assert (gate.running, gate.waiting, gate.refused) == (0, 0, 1)

    asyncio.run(scenario())


def test_a_request_that_would_wait_too_long_is_refused_rather_than_queued() -> None:
    async def scenario() -> None:
        gate = Gate(concurrent=1, queue=100, max_wait=0.05)
        assert await gate.enter()
        gate.leave(0.5)  # recent requests took half a second
        assert await gate.enter()
        first = asyncio.create_task(gate.enter())  # first in line: it waits
        await asyncio.sleep(0.01)
        assert gate.waiting == 1 and not first.done()
        # One running, one waiting: the next would wait about a second, past max_wait.
        assert not await gate.enter()
        gate.leave(0.5)
        assert await first
        gate.leave(0.5)
        assert await gate.enter()  # a free slot is taken whatever the estimate

    asyncio.run(scenario())


def test_a_waiter_cancelled_as_its_slot_arrives_passes_the_slot_on() -> None:
    async def scenario() -> None:
        gate = Gate(concurrent=1, queue=2, max_wait=60.0)
        assert await gate.enter()
        first = asyncio.create_task(gate.enter())
        second = asyncio.create_task(gate.enter())
        await asyncio.sleep(0.01)
        gate.leave(0.01)  # hands the slot to `first` ...
        first.cancel()  # ... which goes away before it runs
        with pytest.raises(asyncio.CancelledError):
            await first
        assert await asyncio.wait_for(second, 1)  # the slot reached the next waiter
        gate.leave(0.01)
        assert (gate.running, gate.waiting) == (0, 0)

    asyncio.run(scenario())
