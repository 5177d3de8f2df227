"""What a first ingest's consolidation costs, as shipped against two ways it
worked before, alternating in one run: ``before``, every paper's evidence
followed key by key through the index and each rewritten paper's graph read
quad by quad, in this process; ``one process``, as shipped but with every paper
graph rewritten in this process (no helper processes, :mod:`kg.store.rewriting`).

    python benchmarks/first_consolidation.py --rounds 2
    python benchmarks/first_consolidation.py --pre /tmp/kg-bench/pre  # keep the store

A first ingest writes every paper, then consolidates them all; this times that
last step alone, on copies of one store holding the papers as written and not
yet consolidated (built once from the ICLR corpus with the extraction pool:
about two and a half minutes on 2 cores). Both ways must leave the same store.
The graph reads are timed apart too, with nothing else to do: ``paper_quads``
one paper after another against ``paper_graphs`` (:mod:`kg.store.index`), over
1,300 papers (a first ingest of the ICLR corpus rewrites 1,326).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
ICLR = Path("../shared/data/iclr2026_abstracts/iclr2026_accepted_abstracts.jsonl")
WAYS = ["before", "one process", "shipped"]


def build(corpus: Path, target: Path) -> None:
    """The corpus extracted, mapped and written as an ingest writes it, unconsolidated."""
    from itertools import islice

    from kg.extraction.engines import PoolExtractor
    from kg.mapping.papers import map_paper
    from kg.reading.readers import read_paths
    from kg.store.embedded import open_store

    store = open_store(target)
    records = (r for r in read_paths([str(corpus)]) if hasattr(r, "abstract"))
    extractor = PoolExtractor(2)
    mapped = (map_paper(e) for e in extractor.extract(records))
    while batch := list(islice(mapped, 1024)):
        store.write_papers(batch, new=True)
    extractor.close()
    store.close()


def copy_of(pre: Path, work: Path) -> Path:
    """A fresh copy of the store and its index."""
    from kg.store.index import index_path

    target = work / "store"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(pre, target)
    shutil.copy(index_path(str(pre)), index_path(str(target)))
    return target


def one_by_one(store: Any, paper_ids: Any) -> Iterator[tuple[str, list[Any]]]:
    """The graph reader consolidation used before: each paper quad by quad."""
    from kg.store.index import paper_quads

    for pid in paper_ids:
        yield pid, list(paper_quads(store, pid))


def consolidate_all(location: Path, *, way: str) -> tuple[float, str]:
    """Seconds to consolidate every paper of the store one way, and a digest of the result."""
    import hashlib

    from pyoxigraph import RdfFormat

    import kg.store.consolidation as consolidation
    import kg.store.rewriting as rewriting
    from kg.store.embedded import open_store

    if way in ("before", "one process"):
        rewriting.PARALLEL_MIN = 10**9
    if way == "before":
        rewriting.paper_graphs = one_by_one  # type: ignore[assignment]
        consolidation.FULL_READ_SHARE = float("inf")
    store = open_store(location)
    papers = sorted(store.paper_ids())
    started = time.perf_counter()
    report = consolidation.consolidate(store, touched=papers)
    seconds = time.perf_counter() - started
    assert report.scoped == (way == "before")
    digest = hashlib.sha256(
        b"".join(sorted(store.raw.dump(format=RdfFormat.N_QUADS).splitlines()))
    ).hexdigest()
    store.close()
    return seconds, digest


def reads(location: Path) -> dict[str, float]:
    """Seconds to read the graphs of the papers a consolidation rewrites, both ways."""
    from kg.store.embedded import open_store
    from kg.store.index import paper_graphs

    store = open_store(location, read_only=True, index=False)
    papers = sorted(store.paper_ids())[:1300]
    out = {}
    for name, reader in (("one by one", one_by_one), ("paper_graphs", paper_graphs)):
        started = time.perf_counter()
        n = sum(len(quads) for _, quads in reader(store, papers))
        out[name] = time.perf_counter() - started
    out["quads"] = n
    store.close()
    return out


def main() -> int:
    """Build or reuse the unconsolidated store, then time the rounds."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=ICLR)
    ap.add_argument("--pre", type=Path, help="the unconsolidated store (built when missing)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--one", choices=WAYS, help=argparse.SUPPRESS)
    ap.add_argument("location", nargs="?", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(consolidate_all(args.location, way=args.one)))
        return 0
    if not args.corpus.exists():
        print(f"no {args.corpus}: run from the repository root with ../shared beside it")
        return 2
    work = Path(tempfile.mkdtemp(prefix="kg-first-consolidation-"))
    pre = args.pre or work / "pre"
    if not pre.exists():
        started = time.perf_counter()
        build(args.corpus, pre)
        print(f"built {pre} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    rounds: dict[str, list[float]] = {way: [] for way in WAYS}
    digests = set()
    for _ in range(args.rounds):
        for name in rounds:
            # Each in a process of its own: a closed store's compactions end with it.
            done = subprocess.run(
                [sys.executable, __file__, "--one", name, str(copy_of(pre, work))],
                check=True,
                capture_output=True,
                text=True,
            )
            seconds, digest = json.loads(done.stdout)
            rounds[name].append(round(seconds, 1))
            digests.add(digest)
            print(f"{name}: {seconds:.1f} s", file=sys.stderr)
    assert len(digests) == 1, "the ways left different stores"
    read = reads(copy_of(pre, work))
    shutil.rmtree(work)
    result = {
        "consolidation_s": rounds,
        **{
            f"shipped_over_{way.replace(' ', '_')}": [
                round(a / b, 2) for a, b in zip(rounds["shipped"], rounds[way], strict=True)
            ]
            for way in WAYS[:-1]
        },
        "read_1300_graphs_s": {k: round(v, 2) for k, v in read.items()},
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
