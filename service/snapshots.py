"""Checkpoints of the embedded store for the query workers, published at most
once per ``interval`` however many writes arrive.

When the web process holds the store read-write, query workers never open the
live store: RocksDB gives no guarantee to a read-only handle while another
process writes (pyoxigraph calls it undefined behaviour; in practice reads fail
with "Corruption" or miss recent writes). They open a RocksDB checkpoint
instead (a memtable flush plus hard links), which never changes.

A checkpoint costs tens of milliseconds, more on a busy machine, and so does a
worker reopening the store. Taking one for every write on the path of the next
query made queries after a write that much slower (seconds under a steady
stream of writes), so:

- a write only counts itself (:meth:`Snapshots.note_write`, from any thread);
- one background task takes a checkpoint at most every ``interval`` seconds,
  covering every write made before it started, and publishes it;
- queries read the newest published checkpoint and never wait for one;
- a write's response waits (:meth:`Snapshots.visible`) until a checkpoint
  holding it is published, so a client that has the answer to its write reads
  it in its next query (read-your-writes), and the writes of one interval share
  one checkpoint.

Each checkpoint also copies RocksDB's MANIFEST, the log of every flush and
compaction since the writer opened the store, and each worker replays it when
it opens one: under a steady stream of writes that file grows by a few
kilobytes per checkpoint and opening with it, by tens of milliseconds a minute.
So when it passes ``KG_MANIFEST_LIMIT`` (512 kB) the writer's store is
reopened, with no write running (:class:`Roll`), which starts a MANIFEST of one
record.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kg.store.common import StoreError

log = logging.getLogger("kg.service")


class PublishFailed(Exception):
    """The newest writes could not be checkpointed for the query workers."""


@dataclass
class Roll:
    """How the writer's store is reopened once its MANIFEST is too long."""

    size: Callable[[], int]
    """The MANIFEST's bytes now."""
    reopen: Callable[[], bool]
    """Reopen the store (run in a thread); False when it could not be had alone."""
    writes: asyncio.Lock
    """Held while reopening, so that no write runs meanwhile."""
    limit: int
    """Bytes of MANIFEST past which the store is reopened (``KG_MANIFEST_LIMIT``)."""


class Snapshots:
    """Checkpoints of a store that another handle in this process writes.

    :attr:`written` counts writes, :attr:`published` is the count the newest
    checkpoint holds; :meth:`current` is what queries read."""

    def __init__(
        self,
        handle: Callable[[], Any],
        root: Path,
        *,
        interval: float = 0.2,
        roll: Roll | None = None,
    ) -> None:
        # The pyoxigraph Store opened read-write, asked for at each checkpoint:
        # a roll replaces it.
        self.handle = handle
        self.roll = roll
        self.rolled = 0  # times the writer's store was reopened
        self._unopened = False  # the last reopening failed: try again
        self.root = root
        self.interval = interval
        self.paths: dict[int, Path] = {}
        self.written = 0
        self.published = -1
        self.taken = 0  # checkpoints published so far
        self.failure: Exception | None = None
        self._count_lock = threading.Lock()
        self._checkpoint_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._changed = asyncio.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._on_publish: Callable[[], None] | None = None
        self._last = 0.0
        self._copies = 0
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        # Checkpoints left by a server that was killed (its pid is gone).
        for other in root.parent.iterdir():
            if other != root and other.name.isdigit() and not _alive(int(other.name)):
                shutil.rmtree(other, ignore_errors=True)

    async def start(self, on_publish: Callable[[], None] | None = None) -> None:
        """Publish the store as it is now, then keep publishing in the background;
        ``on_publish`` is called after each new checkpoint."""
        self._loop = asyncio.get_running_loop()
        await self._publish()
        if self.failure is not None:
            raise PublishFailed(f"cannot checkpoint the store: {self.failure}")
        self._on_publish = on_publish
        self._task = self._loop.create_task(self._run())

    def note_write(self) -> None:
        """The store was written (call after the write, from any thread)."""
        with self._count_lock:
            self.written += 1
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop stopped meanwhile
                loop.call_soon_threadsafe(self._wake.set)

    def current(self) -> tuple[int, str]:
        """The newest published checkpoint: the write count it holds and its directory.

        Raises :class:`PublishFailed` when later writes could not be published:
        a query must not silently read data older than an acknowledged write."""
        if self.failure is not None and self.published < self.written:
            raise PublishFailed(
                f"the newest writes cannot be checkpointed for queries: {self.failure}"
            )
        return self.published, str(self.paths[self.published])

    async def visible(self, timeout: float) -> None:
        """Wait until queries read a checkpoint holding every write made so far."""
        target = self.written
        async with asyncio.timeout(timeout), self._changed:
            while self.published < target:
                if self.failure is not None:
                    raise PublishFailed(f"cannot checkpoint the store: {self.failure}")
                await self._changed.wait()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self.published >= self.written:
                continue
            # Writes arriving during this wait share the coming checkpoint.
            await asyncio.sleep(max(0.0, self._last + self.interval - time.monotonic()))
            await self._publish()
            roll = self.roll
            if roll is not None and (self._unopened or roll.size() > roll.limit):
                await self._roll(roll)
            if self.failure is not None:
                await asyncio.sleep(1.0)  # e.g. a full disk: retry, do not spin
            if self.published < self.written:
                self._wake.set()

    async def _publish(self) -> None:
        generation = self.written  # every write counted so far is in the store
        self._last = time.monotonic()
        try:
            async with self._checkpoint_lock:
                path = await asyncio.to_thread(self._checkpoint, f"g{generation}")
        except (OSError, RuntimeError, StoreError) as exc:
            log.error("cannot checkpoint the store for the query workers: %s", exc)
            self.failure = exc
        else:
            self.failure = None
            self.paths[generation] = path
            self.published = generation
            self.taken += 1
        async with self._changed:
            self._changed.notify_all()
        if self._on_publish is not None and self.failure is None:
            self._on_publish()

    async def _roll(self, roll: Roll) -> None:
        """Reopen the writer's store, between checkpoints and with no write running."""
        async with roll.writes, self._checkpoint_lock:
            started = time.monotonic()
            try:
                reopened = await asyncio.to_thread(roll.reopen)
            except (OSError, RuntimeError, StoreError) as exc:
                # Tried again after the next attempt to publish (within a
                # second); until then writes and checkpoints fail.
                log.error("cannot reopen the store to start a new MANIFEST: %s", exc)
                self._unopened = True
                return
            self._unopened = False
        if reopened:
            self.rolled += 1
            log.info("store reopened for a new MANIFEST in %.3f s", time.monotonic() - started)

    def _checkpoint(self, name: str) -> Path:
        target = self.root / name
        shutil.rmtree(target, ignore_errors=True)
        store = self.handle()
        store.flush()
        store.backup(str(target))
        return target

    async def private_copy(self) -> Path:
        """A new checkpoint of the store as of now, for one process to write to
        (an update's trial run); the caller deletes it."""
        self._copies += 1
        async with self._checkpoint_lock:
            return await asyncio.to_thread(self._checkpoint, f"trial-{self._copies}")

    def prune(self, keep: set[int]) -> None:
        """Delete every checkpoint but the published one and those in ``keep``."""
        for generation in [g for g in self.paths if g not in keep and g != self.published]:
            shutil.rmtree(self.paths.pop(generation), ignore_errors=True)

    async def close(self) -> None:
        """Stop publishing and delete every checkpoint (and the directory beside
        the store, when empty)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
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
