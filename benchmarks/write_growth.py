"""Do writes stay O(1) in store size? The same synthetic papers written into an
empty store and into a copy of a large one, side by side in one run.

    python benchmarks/write_growth.py --store /tmp/scale-100k --papers 1000 [--json out.json]

The papers (``benchmarks/synth.py``'s generator, seed 99, numbers from
10,000,000 so they are new to any synthetic store) are generated and mapped
first; then both stores get them in batches of ``--batch`` through the real
write path, ``write_papers(new=True)`` of the indexed store (the bulk loader and
the index rows, as ``kg ingest`` writes), **alternating** one batch into the
empty store and the same batch into the large one, so the machine's load
weighs on both alike. Reported per store: wall seconds, CPU seconds of the
process during its writes (the bulk loader's threads included) and papers per
second, and the wall and calling-thread CPU seconds of the two halves of each
write (the graph store's, whose bulk loader also works in threads of its own;
the index's, all in the calling thread, so its CPU figure holds whatever the
load); the ratio large / empty is the figure
the target (≥ 0.8) is about. Then each store derives its task taxonomy once,
as ``kg ingest`` and ``POST /papers`` do after writing, and the ratio is given
with that too.

The large store is copied first (its RocksDB files hard-linked: RocksDB never
changes a written file; the index file copied), so the original is left as it
was; the copy is deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def copy_store(source: Path, target: Path) -> None:
    """A writable copy of an embedded store and its index: immutable RocksDB
    table files hard-linked, everything else copied."""
    from kg.store.index import index_path

    target.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.suffix == ".sst":
            os.link(entry, target / entry.name)
        else:
            shutil.copy2(entry, target / entry.name)
    for suffix in ("", "-wal", "-shm"):
        index = Path(f"{index_path(str(source))}{suffix}")
        if index.exists():
            shutil.copy2(index, f"{index_path(str(target))}{suffix}")


def _cpu() -> float:
    # The whole process: the bulk loader works in threads of its own.
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(obj: object, method: str, into: dict[str, float], key: str) -> None:
    inner = getattr(obj, method)

    def timed(*args: object, **kwargs: object) -> object:
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return inner(*args, **kwargs)
        finally:
            into[key] += time.perf_counter() - started
            # SQLite works in the calling thread: its CPU time is exact, load or not.
            into[key.replace("_s", "_thread_cpu_s")] += time.thread_time() - cpu

    setattr(obj, method, timed)


def measure(large: Path, papers: int, batch: int) -> dict:
    """Write the same papers into an empty store and a copy of ``large``, alternating."""
    from benchmarks.synth import STATS, Generator
    from kg.mapping.papers import map_paper
    from kg.store.embedded import open_store
    from kg.store.taxonomy import derive_taxonomy

    gen = Generator(json.loads(STATS.read_text()), 99)
    first = 10_000_000
    quads = [map_paper(gen.paper(i)) for i in range(first, first + papers)]
    work = Path(tempfile.mkdtemp(prefix="kg-write-growth-", dir=large.parent))
    try:
        started = time.perf_counter()
        copy_store(large, work / "large")
        copied = time.perf_counter() - started
        stores = {"empty": open_store(work / "empty"), "large": open_store(work / "large")}
        before = {
            name: store.search_index().reader().execute("SELECT count(*) FROM papers").fetchone()[0]
            for name, store in stores.items()
        }
        wall = dict.fromkeys(stores, 0.0)
        cpu = dict.fromkeys(stores, 0.0)
        parts = {
            name: dict.fromkeys(
                ("store_s", "index_s", "store_thread_cpu_s", "index_thread_cpu_s"), 0.0
            )
            for name in stores
        }
        for name, store in stores.items():
            # Time the two halves of each write: the graph store, then the index.
            _timed(store.inner, "write_papers", parts[name], "store_s")
            _timed(store.index, "write", parts[name], "index_s")
        for at in range(0, papers, batch):
            chunk = quads[at : at + batch]
            for name, store in stores.items():
                w, c = time.perf_counter(), _cpu()
                store.write_papers(chunk, new=True)
                wall[name] += time.perf_counter() - w
                cpu[name] += _cpu() - c
        # `kg ingest` (and POST /papers) then derive the task taxonomy once per run.
        taxonomy = {}
        for name, store in stores.items():
            started = time.perf_counter()
            derive_taxonomy(store)
            taxonomy[name] = time.perf_counter() - started
        for store in stores.values():
            store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out: dict = {"papers": papers, "batch": batch, "copy_s": round(copied, 1)}
    for name in stores:
        out[name] = {
            "papers_before": before[name],
            "wall_s": round(wall[name], 2),
            "cpu_s": round(cpu[name], 2),
            "papers_per_s": round(papers / wall[name], 1),
            "cpu_ms_per_paper": round(cpu[name] / papers * 1000, 2),
            **{k: round(v, 2) for k, v in parts[name].items()},
            "taxonomy_s": round(taxonomy[name], 2),
        }
    out["ratio_wall"] = round(wall["empty"] / wall["large"], 3)
    out["ratio_cpu"] = round(cpu["empty"] / cpu["large"], 3)
    out["ratio_with_taxonomy"] = round(
        (wall["empty"] + taxonomy["empty"]) / (wall["large"] + taxonomy["large"]), 3
    )
    out["ratio_index_cpu"] = round(
        parts["empty"]["index_thread_cpu_s"] / parts["large"]["index_thread_cpu_s"], 3
    )
    return out


def main() -> int:
    from kg.ingest import WRITE_BATCH

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True, help="The large store (left unchanged)")
    ap.add_argument("--papers", type=int, default=1000)
    # kg ingest's own batch: at 100k papers each commit writes every page its
    # papers touched (co-occurrence rows land all over their B-trees), so the
    # batch decides how often a page is written (BENCHMARKS.md, 2026-12-02).
    ap.add_argument(
        "--batch",
        type=int,
        default=WRITE_BATCH,
        help=f"Papers per write_papers call (default {WRITE_BATCH}, kg ingest's)",
    )
    ap.add_argument("--json", type=Path, help="Also write the figures here")
    args = ap.parse_args()
    result = measure(args.store, args.papers, args.batch)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
