"""A pool of query worker processes (:mod:`service.worker`) for the embedded store.

pyoxigraph cannot cancel a running query, so a query that outlives its timeout
is stopped the only sure way: its worker process is killed and a fresh one
started. The worker count bounds how many queries evaluate at once; a request
that finds every worker busy waits, and that wait counts against its timeout.

Writes happen in the web process; each one bumps :attr:`QueryPool.generation`,
and a worker reopens its read-only handle before the first query of a newer
generation, so a query never reads data older than the last write.

When the web process holds the store read-write, workers never open the live
store: RocksDB gives no guarantee to a read-only handle while another process
writes (pyoxigraph calls it undefined behaviour; in practice reads fail with
"Corruption" or miss recent writes). Instead :class:`Snapshots` takes a RocksDB
checkpoint (hard links, milliseconds) for each generation that a query needs,
and workers open that immutable copy. Without a writer the workers open the
store directory itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from service.messages import Answer, Failure, QueryRequest, Ready, StartFailed

log = logging.getLogger("kg.service")

_HEADER = struct.Struct(">I")


class PoolError(Exception):
    """The pool could not start or a worker died."""


class PoolTimeout(Exception):
    """The query did not finish in time; its worker was killed."""


class Snapshots:
    """Checkpoints of a store that another handle in this process writes.

    ``path_for(generation)`` makes (once) and returns a directory holding the
    store as of now; :meth:`prune` deletes those no worker has open."""

    def __init__(self, store: Any, root: Path) -> None:
        self.store = store  # a pyoxigraph Store opened read-write
        self.root = root
        self.paths: dict[int, Path] = {}
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        # Checkpoints left by a server that was killed (its pid is gone).
        for other in root.parent.iterdir():
            if other != root and other.name.isdigit() and not _alive(int(other.name)):
                shutil.rmtree(other, ignore_errors=True)

    def path_for(self, generation: int) -> Path:
        """The checkpoint directory of ``generation``, made now if needed."""
        if generation not in self.paths:
            target = self.root / f"g{generation}"
            shutil.rmtree(target, ignore_errors=True)
            self.store.flush()
            self.store.backup(str(target))
            self.paths[generation] = target
        return self.paths[generation]

    def prune(self, keep: set[int]) -> None:
        """Delete every checkpoint whose generation is not in ``keep``."""
        for generation in [g for g in self.paths if g not in keep]:
            shutil.rmtree(self.paths.pop(generation), ignore_errors=True)

    def close(self) -> None:
        """Delete every checkpoint (and the directory beside the store, when empty)."""
        self.paths.clear()
        shutil.rmtree(self.root, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.root.parent.rmdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def snapshot_root(store_path: str) -> Path:
    """Where the checkpoints of a store go: beside it, on the same file system
    (so a checkpoint is hard links, not a copy), one directory per server process."""
    path = Path(store_path).resolve()
    return path.parent / f".{path.name}.snapshots" / str(os.getpid())


class _WorkerProtocol(asyncio.SubprocessProtocol):
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


class _Worker:
    def __init__(
        self, transport: asyncio.SubprocessTransport, protocol: _WorkerProtocol, generation: int
    ) -> None:
        self.transport = transport
        self.protocol = protocol
        self.pid = transport.get_pid()
        self.generation = generation  # the store generation this worker has open

    def call(self, payload: bytes) -> asyncio.Future[Any]:
        """Send one request; the future resolves to the worker's reply."""
        reply = self.protocol.expect()
        stdin = self.transport.get_pipe_transport(0)
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


class QueryPool:
    """Worker processes evaluating SPARQL queries on one embedded store."""

    def __init__(self, store_path: str, size: int, snapshots: Snapshots | None = None) -> None:
        self.store_path = store_path
        self.size = size
        self.snapshots = snapshots
        self.generation = 0
        self._snapshot_lock = asyncio.Lock()
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()
        self._all: set[_Worker] = set()
        self._pending: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def pids(self) -> list[int]:
        """Process ids of the live workers."""
        return sorted(w.pid for w in self._all)

    async def start(self) -> None:
        """Start every worker; raise :class:`PoolError` when the store cannot be opened."""
        workers = await asyncio.gather(*(self._spawn() for _ in range(self.size)))
        for worker in workers:
            self._idle.put_nowait(worker)

    async def _current_path(self) -> tuple[int, str]:
        """The generation queries should see now and the directory that holds it."""
        generation = self.generation
        if self.snapshots is None:
            return generation, self.store_path
        async with self._snapshot_lock:
            if generation not in self.snapshots.paths:
                await asyncio.to_thread(self.snapshots.path_for, generation)
                busy = {w.generation for w in self._all}
                self.snapshots.prune(busy | {generation})
            return generation, str(self.snapshots.paths[generation])

    async def _spawn(self) -> _Worker:
        generation, path = await self._current_path()
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.subprocess_exec(
            _WorkerProtocol,
            sys.executable,
            "-m",
            "service.worker",
            path,
            str(generation),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
        )
        worker = _Worker(transport, protocol, generation)
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
        """The store was written: workers reopen before their next query."""
        self.generation += 1

    async def run(self, request: QueryRequest, timeout: float) -> Answer | Failure:
        """Evaluate one request within ``timeout`` seconds (waiting for a worker included)."""
        if self._closed:
            raise PoolError("the query pool is shut down")
        deadline = time.monotonic() + timeout
        worker = await self._acquire(timeout)
        try:
            if self.snapshots is None:
                generation, path = self.generation, self.store_path
            else:
                generation, path = await self._current_path()
        except BaseException:
            self._idle.put_nowait(worker)
            raise
        worker.generation = generation
        request = request.at(path, generation)
        payload = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            async with asyncio.timeout(max(deadline - time.monotonic(), 0.001)):
                reply = await worker.call(payload)
        except TimeoutError:
            self._replace(worker, "timeout")
            raise PoolTimeout("the query ran out of time") from None
        except (PoolError, ConnectionError) as exc:
            self._replace(worker, "died")
            raise PoolError("the query worker died while evaluating the query") from exc
        except asyncio.CancelledError:
            # The client went away mid-query: the worker's reply would arrive
            # out of step, so it is replaced rather than reused.
            self._replace(worker, "cancelled")
            raise
        self._idle.put_nowait(worker)
        if not isinstance(reply, Answer | Failure):
            raise PoolError(f"a query worker answered {reply!r}")
        return reply

    async def _acquire(self, timeout: float) -> _Worker:
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

    def _replace(self, worker: _Worker, why: str) -> None:
        log.warning("killing query worker %d (%s)", worker.pid, why)
        self._all.discard(worker)
        task = asyncio.get_running_loop().create_task(self._respawn(worker))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _respawn(self, old: _Worker) -> None:
        await old.kill()
        if self._closed:
            return
        try:
            self._idle.put_nowait(await self._spawn())
        except PoolError as exc:  # the store vanished; later queries will wait and time out
            log.error("cannot replace a query worker: %s", exc)

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
            self.snapshots.close()


class ResultCache:
    """Recent query results, keyed by everything that determines them — the request
    and the store generation — so a write makes every older entry unreachable.

    Repeated small lookups (an explorer page, a dashboard) are answered without
    a worker round trip. Only successful results up to ``max_bytes`` are kept."""

    def __init__(self, entries: int, max_bytes: int = 256 * 1024) -> None:
        self.entries = entries
        self.max_bytes = max_bytes
        self._data: OrderedDict[tuple, tuple[str, bytes]] = OrderedDict()

    @staticmethod
    def key(generation: int, request: QueryRequest) -> tuple:
        """The cache key of a request at a store generation."""
        return request.cache_key(generation)

    def get(self, key: tuple) -> tuple[str, bytes] | None:
        """The cached (media type, body), or None."""
        found = self._data.get(key)
        if found is not None:
            self._data.move_to_end(key)
        return found

    def put(self, key: tuple, media_type: str, body: bytes) -> None:
        """Remember a result (small ones only), evicting the least recently used."""
        if self.entries <= 0 or len(body) > self.max_bytes:
            return
        self._data[key] = (media_type, body)
        self._data.move_to_end(key)
        while len(self._data) > self.entries:
            self._data.popitem(last=False)


def default_pool_size() -> int:
    """One worker per CPU, at least two (so one slow query does not block the rest)."""
    return max(2, os.cpu_count() or 2)
