"""The embedded store's bulk write of new papers, shipped against the way before.

``kg.store.embedded._bulk_add`` serializes quads to N-Quads and bulk-loads the
text without the loader validating the IRIs again (``lenient``: they are
pyoxigraph's own terms); before, the loader validated them. Both ways load the
same quads (the paper graphs of an existing store, in write batches) into new
stores, in turns in one process, and must store as many quads.

    python benchmarks/bulk_add.py --store /tmp/kg-bench/iclr-store --rounds 3
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from pyoxigraph import Quad, RdfFormat, Store

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from kg.store.embedded import _bulk_add  # noqa: E402
from kg.vocab import PAPER_GRAPH_PREFIX  # noqa: E402


class _Validating:
    """A store whose bulk loader validates every IRI, as the loader was called before."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def bulk_load(self, text: bytes, format: RdfFormat, **_: object) -> None:  # noqa: A002
        self.store.bulk_load(text, format=format)

    def bulk_extend(self, quads: Sequence[Quad]) -> None:
        self.store.bulk_extend(quads)


def before(store: Store, quads: Sequence[Quad]) -> None:
    """The shipped bulk write, but with the loader validating every IRI."""
    _bulk_add(cast(Store, _Validating(store)), quads)


def load(way: Callable[[Store, Sequence[Quad]], None], batches: list[list[Quad]]) -> tuple:
    """Seconds (wall, CPU) to write every batch into a new store, and its size."""
    target = tempfile.mkdtemp(prefix="kg-bench-bulk-")
    try:
        store = Store(target)
        wall, cpu = time.perf_counter(), time.process_time()
        for batch in batches:
            way(store, batch)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return wall, cpu, len(store)
    finally:
        shutil.rmtree(target, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", required=True, help="an existing embedded store")
    ap.add_argument("--batch", type=int, default=300_000, help="quads per write")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    source = Store.read_only(args.store)
    quads = [
        q for q in source if str(getattr(q.graph_name, "value", "")).startswith(PAPER_GRAPH_PREFIX)
    ]
    if not quads:
        raise SystemExit(f"{args.store}: no paper graphs to load")
    batches = [quads[i : i + args.batch] for i in range(0, len(quads), args.batch)]
    print(f"{len(quads):,} quads of paper graphs, {len(batches)} writes")
    ways = {"before": before, "shipped": _bulk_add}
    spent: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
    for r in range(args.rounds):
        for name in ways if r % 2 == 0 else reversed(ways):
            wall, cpu, stored = load(ways[name], batches)
            assert stored == len(quads), (name, stored)
            spent[name].append((wall, cpu))
            print(f"  round {r + 1} {name:8s} {wall:6.2f} s wall {cpu:6.2f} s CPU")
    medians = {n: statistics.median(w for w, _ in s) for n, s in spent.items()}
    for name, s in spent.items():
        print(f"{name:8s} median {medians[name]:6.2f} s wall, CPU {[round(c, 2) for _, c in s]}")
    print(f"shipped / before: {medians['shipped'] / medians['before']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
