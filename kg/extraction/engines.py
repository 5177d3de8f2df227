"""Extraction engines: where the spaCy pipeline runs.

Every engine is a :class:`kg.ingest.PaperExtractor`: records in, extractions
out, in input order, so :func:`kg.ingest.ingest` does not care which one it has.

``local``
    The spaCy :class:`kg.extraction.Extractor` in this process, with
    ``n_process`` worker processes of ``nlp.pipe``. Only spaCy runs in the
    workers: turning docs into entities and claims stays in this process.
``pool``
    A pool of local worker processes that each load the extractor once and run
    all of extraction (spaCy *and* assembly) on batches of records; this
    process only maps and writes. Faster than ``local`` when there are spare
    cores for the whole pipeline (see BENCHMARKS.md).
``dask``
    The same extractor on the workers of a Dask distributed cluster. Each
    worker loads the model once (a :class:`distributed.WorkerPlugin`, set up
    when the worker joins); batches of records stream to the workers with a
    bounded number in flight, and results come back in input order, so memory
    stays flat however long the input is.

Why Dask and not Ray: the work is a stream of independent, pure batches and
Dask's futures API (``submit``/``as_completed``) expresses exactly that; Dask
distributed is a pure-Python wheel of a few MB (Ray ships ~100 MB of native
code and its own object store), runs on anything that can open a TCP port
(``dask scheduler`` + ``dask worker`` over SSH, Kubernetes, SLURM through
dask-jobqueue), and its LocalCluster makes the multi-process test cheap.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

from kg.ingest import PaperExtractor, default_extractor
from kg.model import PaperExtraction, Record

ENGINES = ("local", "pool", "dask")
PLUGIN_NAME = "kg-extractor"
BATCHES_PER_WORKER = 8
"""Batches submitted and not yet yielded, per worker, by default. While the
ingest writes a batch of papers to the store (seconds), nothing is yielded and
no batch submitted: the workers keep going only on what is already in flight.
Two batches a worker ran dry within each write; eight (about 10 s of work at
32 abstracts a batch) keep both cores of a 2-core machine busy through it
(BENCHMARKS.md). The results held wait in order, a few MB at most."""


def make_extractor(
    engine: str = "local",
    *,
    processes: int = 1,
    scheduler: str | None = None,
    batch_size: int = 32,
) -> PaperExtractor:
    """The extractor for an engine name (``local`` or ``dask``).

    ``processes`` is ``nlp.pipe``'s ``n_process`` for ``local``; for ``dask``
    without a ``scheduler`` it is the number of workers of a local cluster.
    """
    if engine == "local":
        return default_extractor(n_process=processes, batch_size=batch_size)
    if engine == "pool":
        return PoolExtractor(processes, batch_size=batch_size)
    if engine == "dask":
        return DaskExtractor(scheduler, batch_size=batch_size, local_workers=processes)
    raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


try:  # Dask is an optional dependency (the `distributed` extra); `local` needs none of it.
    from distributed import WorkerPlugin as _WorkerPlugin
except ImportError:  # pragma: no cover
    _WorkerPlugin = object  # type: ignore[assignment,misc]


class ExtractorPlugin(_WorkerPlugin):  # type: ignore[misc,valid-type]
    """Loads the spaCy extractor once on each Dask worker, when the worker joins."""

    name = PLUGIN_NAME

    def __init__(self, factory: Callable[[], PaperExtractor] | None = None) -> None:
        """``factory`` builds the extractor on the worker (default: the spaCy one)."""
        self.factory = factory
        self.extractor: Any = None
        self.version = ""
        self.loads = 0
        self.lock: threading.Lock | None = None  # made on the worker: locks do not pickle

    def setup(self, worker: Any) -> None:
        """Load the model (once per worker process)."""
        from kg.ingest import extractor_version

        self.lock = threading.Lock()
        self.extractor = self.factory() if self.factory else default_extractor(n_process=1)
        self.version = extractor_version(self.extractor)
        self.loads += 1

    def extract(self, records: list[Record]) -> list[PaperExtraction]:
        """Extract one batch (one thread at a time: a spaCy pipeline is not thread-safe)."""
        assert self.lock is not None, "the plugin was not set up on this worker"
        with self.lock:
            return list(self.extractor.extract(records))


def _extract_batch(records: list[Record]) -> list[PaperExtraction]:
    """Extract a batch on a worker."""
    # Runs on a worker: use the model its plugin loaded when the worker joined.
    from distributed import get_worker

    return get_worker().plugins[PLUGIN_NAME].extract(records)


class DaskExtractor:
    """Runs extraction on a Dask cluster; yields results in input order."""

    def __init__(
        self,
        scheduler: str | None = None,
        *,
        batch_size: int = 32,
        in_flight: int | None = None,
        local_workers: int = 2,
        factory: Callable[[], PaperExtractor] | None = None,
    ) -> None:
        """Connect to ``scheduler`` (``tcp://host:8786``), or start a local cluster of
        ``local_workers`` single-threaded worker processes when it is None.
        ``in_flight`` bounds the batches submitted and not yet yielded
        (default: :data:`BATCHES_PER_WORKER` per worker thread of the cluster).
        ``factory``, a picklable callable, builds each worker's extractor
        (default: the spaCy one)."""
        self.scheduler = scheduler
        self.batch_size = batch_size
        self.in_flight = in_flight
        self.local_workers = max(1, local_workers)
        self.factory = factory
        self._client: Any = None
        self._cluster: Any = None
        self._version: str | None = None

    @property
    def version(self) -> str:
        """The extractor version of the workers (all must agree: it goes into content hashes)."""
        if self._version is None:
            found = set(self.client.run(_worker_version).values())
            if len(found) != 1:
                raise RuntimeError(
                    f"the Dask workers run different extractor versions "
                    f"{sorted(found)}: install the same kg on every worker"
                )
            self._version = found.pop()
        return self._version

    @property
    def client(self) -> Any:
        """The Dask client, connected (and the plugin registered) on first use."""
        if self._client is None:
            from distributed import Client, LocalCluster

            if self.scheduler:
                self._client = Client(self.scheduler, timeout="30s")
            else:
                self._cluster = LocalCluster(
                    n_workers=self.local_workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                )
                self._client = Client(self._cluster)
            if not sum(self._client.nthreads().values()):
                self._client.wait_for_workers(1, timeout=60)
            self._client.register_plugin(ExtractorPlugin(self.factory), name=PLUGIN_NAME)
        return self._client

    def extract(self, records: Iterable[Record]) -> Iterator[PaperExtraction]:
        """Stream batches to the workers; yield extractions in input order."""
        from distributed import as_completed

        client = self.client
        window = self.in_flight or max(2, BATCHES_PER_WORKER * sum(client.nthreads().values()))
        batches = _batches(records, self.batch_size)
        index: dict[Any, int] = {}
        finished: dict[int, list[PaperExtraction]] = {}
        pending = as_completed()
        submitted = 0
        next_out = 0

        def submit() -> bool:
            nonlocal submitted
            batch = next(batches, None)
            if batch is None:
                return False
            future = client.submit(_extract_batch, batch, pure=False)
            index[future] = submitted
            submitted += 1
            pending.add(future)
            return True

        try:
            # Fill the window; afterwards one batch goes out for each yielded.
            while submitted - next_out < window and submit():
                pass
            for future in pending:
                finished[index.pop(future)] = future.result()
                future.release()
                while next_out in finished:
                    yield from finished.pop(next_out)
                    next_out += 1
                # Bounded by what is not yet yielded, so a slow head batch
                # cannot let finished results pile up.
                while submitted - next_out < window and submit():
                    pass
        finally:
            for future in list(index):
                future.cancel()

    def close(self) -> None:
        """Disconnect; stop the local cluster if this extractor started it."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def __enter__(self) -> DaskExtractor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _worker_version(dask_worker: Any) -> str:
    return dask_worker.plugins[PLUGIN_NAME].version


class PoolExtractor:
    """Whole-pipeline extraction in local worker processes; results in input order."""

    def __init__(
        self, processes: int = 2, *, batch_size: int = 32, in_flight: int | None = None
    ) -> None:
        """``processes`` workers (spawned: no state leaks in from this process);
        at most ``in_flight`` batches (default :data:`BATCHES_PER_WORKER` per
        worker) submitted and not yet yielded, so memory does not grow with the input."""
        from kg.extraction import EXTRACTOR_VERSION

        self.processes = max(1, processes)
        self.batch_size = batch_size
        self.in_flight = in_flight or BATCHES_PER_WORKER * self.processes
        self.version = EXTRACTOR_VERSION
        self._pool: Any = None

    def extract(self, records: Iterable[Record]) -> Iterator[PaperExtraction]:
        """Stream batches to the workers; yield extractions in input order."""
        import multiprocessing
        from collections import deque
        from concurrent.futures import ProcessPoolExecutor

        from kg.extraction import extract_batch

        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                self.processes,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=extract_batch,
                initargs=([],),  # load the model once per worker
            )
        window: deque = deque()
        try:
            for batch in _batches(records, self.batch_size):
                window.append(self._pool.submit(extract_batch, batch))
                if len(window) >= self.in_flight:
                    yield from window.popleft().result()
            while window:
                yield from window.popleft().result()
        finally:
            for future in window:
                future.cancel()

    def close(self) -> None:
        """Stop the worker processes."""
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


def _batches(records: Iterable[Record], size: int) -> Iterator[list[Record]]:
    stream = iter(records)
    while batch := list(islice(stream, size)):
        yield batch
