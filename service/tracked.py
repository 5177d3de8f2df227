"""The store as the web process holds it (``app.state.store``): every write
through it tells the query workers to reopen, and every call through it is
counted, so that the handle can be reopened with nothing running on it (see
:class:`service.snapshots.Roll`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from pyoxigraph import RdfFormat, Store

from kg.store.embedded import GraphStore, QueryResult


class HandleGate:
    """Counts the calls running on the store, and lets one thread have it alone:
    new calls wait while it does (see :meth:`TrackedStore.reopen`)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._closed = False

    @contextmanager
    def call(self) -> Iterator[None]:
        """Run one call on the store (waits while a thread has it alone)."""
        with self._cond:
            self._cond.wait_for(lambda: not self._closed)
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    @contextmanager
    def alone(self, timeout: float) -> Iterator[bool]:
        """Have the store alone: whether every running call ended within ``timeout``
        (if not, the caller must not touch the handle; new calls wait either way
        until the block ends)."""
        with self._cond:
            self._closed = True
            ok = self._cond.wait_for(lambda: self._active == 0, timeout)
        try:
            yield ok
        finally:
            with self._cond:
                self._closed = False
                self._cond.notify_all()


class TrackedStore:
    """The store, wrapped so every write through it tells the query workers to
    reopen, and every call through it is counted (:class:`HandleGate`), so that
    the handle can be reopened with nothing running on it.

    Reads and writes alike pass the gate on their way to the wrapped store; it is
    a :class:`GraphStore` itself."""

    ALONE_WITHIN = 2.0
    """Seconds :meth:`reopen` waits for the running calls to end before giving up."""

    def __init__(self, store: GraphStore, on_write: Callable[[], None]) -> None:
        self._store = store
        self._on_write = on_write
        self._gate = HandleGate()
        self.location = store.location
        self.read_only = store.read_only

    def search_index(self) -> Any | None:
        return self._store.search_index()

    def mark_stale(self, why: str) -> None:
        """The store was written around the index (SPARQL Update, GSP): stop using it."""
        self._store.mark_stale(why)

    def query(self, sparql: str, **kwargs: Any) -> QueryResult:
        with self._gate.call():
            return self._store.query(sparql, **kwargs)

    def paper_hashes(self, ids: Sequence[str]) -> dict[str, str]:
        with self._gate.call():
            return self._store.paper_hashes(ids)

    def preferred_labels(self, iris: Iterable[str]) -> dict[str, str]:
        with self._gate.call():
            return self._store.preferred_labels(iris)

    def paper_ids(self) -> Iterator[str]:
        with self._gate.call():
            return self._store.paper_ids()

    def dump(self, output: IO[bytes], fmt: RdfFormat) -> None:
        with self._gate.call():
            self._store.dump(output, fmt)

    def flush(self) -> None:
        with self._gate.call():
            self._store.flush()

    def optimize(self) -> None:
        with self._gate.call():
            self._store.optimize()

    def native(self) -> Store | None:
        with self._gate.call():
            return self._store.native()

    def reopen(self) -> bool:
        """Reopen the store once no call is running on it (new ones wait);
        False, and nothing done, when the running calls did not end within
        :attr:`ALONE_WITHIN`. The caller holds the write lock. A query result
        still being read holds the old handle: reopening waits for it (see
        :meth:`kg.store.embedded.EmbeddedStore.reopen`)."""
        with self._gate.alone(self.ALONE_WITHIN) as alone:
            if alone:
                self._store.reopen()
            return alone

    def close(self) -> None:
        with self._gate.call():
            self._store.close()

    def __len__(self) -> int:
        with self._gate.call():
            return len(self._store)

    def _written(self) -> None:
        # No flush here: the checkpoint the query workers read flushes first.
        self._on_write()

    def update(self, sparql: str) -> None:
        try:
            with self._gate.call():
                self._store.update(sparql)
        finally:
            self._written()

    def write_papers(self, papers: Any, *, new: bool = False, known_labels: Any = None) -> None:
        try:
            with self._gate.call():
                self._store.write_papers(papers, new=new, known_labels=known_labels)
        finally:
            self._written()

    def delete_paper(self, paper_id: str) -> bool:
        try:
            with self._gate.call():
                return self._store.delete_paper(paper_id)
        finally:
            self._written()

    def replace_quads(self, remove: Any, add: Any, *, graphs: Any = None, rows: Any = None) -> None:
        try:
            with self._gate.call():
                self._store.replace_quads(remove, add, graphs=graphs, rows=rows)
        finally:
            self._written()
