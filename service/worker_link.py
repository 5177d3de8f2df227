"""The web process's end of one query worker process (:mod:`service.worker`):
length-prefixed pickle frames over the worker's stdin and stdout."""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import signal
import struct
import time
from typing import Any, cast

_HEADER = struct.Struct(">I")


class PoolError(Exception):
    """The pool could not start or a worker died."""


class WorkerProtocol(asyncio.SubprocessProtocol):
    """Reads reply frames from a worker's stdout as they arrive and hands each to
    the waiting caller. (A protocol, not asyncio's stream wrappers: it costs the
    web process a fraction of the CPU per query.)"""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.waiter: asyncio.Future[Any] | None = None
        self.closed = False

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd != 1:
            return
        self.buffer += data
        while len(self.buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self.buffer)
            if len(self.buffer) < _HEADER.size + size:
                return
            frame = bytes(self.buffer[_HEADER.size : _HEADER.size + size])
            del self.buffer[: _HEADER.size + size]
            waiter, self.waiter = self.waiter, None
            if waiter is not None and not waiter.done():
                waiter.set_result(pickle.loads(frame))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self._fail()

    def process_exited(self) -> None:
        self._fail()

    def _fail(self) -> None:
        self.closed = True
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(PoolError("the query worker exited"))

    def expect(self) -> asyncio.Future[Any]:
        """A future for the next reply frame."""
        waiter = asyncio.get_running_loop().create_future()
        if self.closed:
            waiter.set_exception(PoolError("the query worker exited"))
        else:
            self.waiter = waiter
        return waiter


class WorkerLink:
    def __init__(
        self, transport: asyncio.SubprocessTransport, protocol: WorkerProtocol, generation: int
    ) -> None:
        self.transport = transport
        self.protocol = protocol
        self.pid = transport.get_pid()
        self.generation = generation  # the store generation this worker has open
        self.lowered = False  # its CPU priority was lowered for a slow query

    def call(self, payload: bytes) -> asyncio.Future[Any]:
        """Send one request; the future resolves to the worker's reply."""
        reply = self.protocol.expect()
        # uvloop's pipe transports are not asyncio.WriteTransport subclasses: a cast.
        stdin = cast(asyncio.WriteTransport | None, self.transport.get_pipe_transport(0))
        assert stdin is not None
        stdin.write(_HEADER.pack(len(payload)) + payload)
        return reply

    async def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.transport.send_signal(signal.SIGKILL)
        await self.wait(5)

    async def wait(self, seconds: float) -> bool:
        """Wait for the process to end; False when it is still running after ``seconds``."""
        deadline = time.monotonic() + seconds
        while self.transport.get_returncode() is None:
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.01)
        self.transport.close()
        return True
