"""Where an ingest's CPU goes: the ingesting process's steps, timed.

Runs ``kg.ingest.ingest`` with the pool engine (as ``kg ingest`` with no flags
on more than one CPU) and wraps the writing steps with CPU timers. The timers
read ``time.process_time``, which counts every thread of the process, so the
time spent waiting for the workers' next extraction shows what RocksDB's
background threads (compacting what each bulk load added) cost on the cores
extraction needs; ``time.thread_time`` over the same wait is this thread's own
share. Prints one line per step (they nest: consolidation writes through the
store and the index), then the process's and its workers' CPU.

    python benchmarks/ingest_steps.py \\
        ../shared/data/iclr2026_abstracts/iclr2026_accepted_abstracts.jsonl \\
        --store /tmp/steps --write-batch 256
"""

from __future__ import annotations

import argparse
import resource
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import kg.ingest as ingest_module
import kg.store.index as index_module
from kg.extraction.engines import PoolExtractor
from kg.model import PaperExtraction, Record
from kg.store.embedded import EmbeddedStore, open_store
from kg.store.index.db import Index

SPENT: Counter[str] = Counter()


def timed(owner: Any, name: str, label: str) -> None:
    """Replace ``owner.name`` by a wrapper adding its CPU time to ``SPENT[label]``."""
    inner: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            SPENT[label] += time.process_time() - started

    setattr(owner, name, wrapper)


class TimedPool(PoolExtractor):
    """The pool engine, timing the waits for its next extraction."""

    def extract(self, records: Iterable[Record]) -> Iterator[PaperExtraction]:
        """Yield the pool's extractions, timing each wait."""
        stream = super().extract(records)
        while True:
            process, thread = time.process_time(), time.thread_time()
            extraction = next(stream, None)
            SPENT["waiting for an extraction (all threads)"] += time.process_time() - process
            SPENT["waiting for an extraction (this thread)"] += time.thread_time() - thread
            if extraction is None:
                return
            yield extraction


def main() -> None:
    """Parse the arguments, ingest, print the steps."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--store", required=True, help="a new store directory")
    ap.add_argument("--write-batch", type=int, default=ingest_module.WRITE_BATCH)
    ap.add_argument("--processes", type=int, default=2)
    args = ap.parse_args()
    timed(ingest_module, "map_paper", "mapping to quads")
    timed(ingest_module, "consolidate", "consolidation")
    timed(EmbeddedStore, "write_papers", "store writes")
    timed(Index, "write", "index writes")
    timed(index_module, "paper_row", "index rows")
    store = open_store(args.store)
    extractor = TimedPool(args.processes)
    started = time.perf_counter()
    report = ingest_module.ingest(
        args.paths, store, extractor=extractor, write_batch=args.write_batch
    )
    extractor.close()  # joins the workers, so their CPU counts below
    store.close()
    wall = time.perf_counter() - started
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"{report.added} papers, {args.write_batch} per write, {wall:.1f} s wall")
    for label, seconds in SPENT.most_common():
        print(f"  {label:42s} {seconds:7.2f} s CPU")
    print(f"  {'this process in all':42s} {own.ru_utime + own.ru_stime:7.2f} s CPU")
    print(f"  {'the workers':42s} {workers.ru_utime + workers.ru_stime:7.2f} s CPU")


if __name__ == "__main__":  # the pool's workers are spawned: they import this module
    main()
