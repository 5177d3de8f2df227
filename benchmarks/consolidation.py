"""What one write's consolidation costs: scoped (the evidence the write can
change, read from the index) against the whole corpus, side by side in one run.

    python benchmarks/consolidation.py --store /tmp/iclr-store \\
        --corpus ../shared/data/iclr2026_abstracts/iclr2026_accepted_abstracts.jsonl --papers 20

Works on a copy of the store (and its index; ``kg reindex`` fills the evidence
tables when the index predates them). For each of ``--papers`` records of the
corpus already in the store, in a seeded random order: delete the paper (timing
the scoped consolidation a delete runs), add it again (``ingest_items``: the
scoped consolidation an ingest runs, reported apart from extraction), then a
consolidation of the whole corpus (which must find nothing to change).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--corpus", type=Path, required=True, help="the JSONL the store was made from")
    ap.add_argument("--papers", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    from kg.ingest import default_extractor, ingest_items
    from kg.read.papers import resolve_paper_id
    from kg.reading.readers import read_paths
    from kg.store.consolidation import consolidate, forget
    from kg.store.embedded import open_store
    from kg.store.index import index_of, index_path, rebuild

    work = Path(tempfile.mkdtemp(prefix="kg-consolidation-"))
    copy = work / "store"
    shutil.copytree(args.store, copy)
    shutil.copy(index_path(str(args.store)), index_path(str(copy)))
    store = open_store(copy)
    index = index_of(store)
    if index is None or not index.has_evidence():
        store.close()
        started = time.perf_counter()
        rebuild(open_store(copy, index=False), Path(index_path(str(copy))))
        print(f"reindexed in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        store = open_store(copy)
    records = [r for r in read_paths([str(args.corpus)]) if hasattr(r, "abstract")]
    chosen = random.Random(args.seed).sample(records, args.papers)
    extractor = default_extractor(n_process=1)
    deletes, adds, fulls, sizes = [], [], [], []
    for record in chosen:
        paper_id = resolve_paper_id(store, record.id)
        named = forget(store, paper_id)
        assert store.delete_paper(paper_id), record.id
        report = consolidate(store, forgotten=named)
        deletes.append(report.seconds)
        added = ingest_items([record], store, extractor=extractor)
        assert added.consolidation is not None and added.consolidation.scoped
        adds.append(added.consolidation.seconds)
        sizes.append(added.consolidation.surfaces)
        full = consolidate(store)
        assert (full.quads_added, full.quads_removed) == (0, 0), "scoped and whole disagree"
        fulls.append(full.seconds)
        print(
            f"{record.id}: delete {report.seconds:.3f} s, add {adds[-1]:.3f} s "
            f"({sizes[-1]} surface forms read), whole corpus {full.seconds:.2f} s",
            file=sys.stderr,
        )
    store.close()
    shutil.rmtree(work)

    def stats(xs: list[float]) -> dict[str, float]:
        return {"median_s": round(statistics.median(xs), 3), "max_s": round(max(xs), 3)}

    print(
        json.dumps(
            {
                "papers": args.papers,
                "delete_scoped": stats(deletes),
                "add_scoped": stats(adds),
                "whole_corpus": stats(fulls),
                "surface_forms_read_by_an_add": {
                    "median": statistics.median(sizes),
                    "max": max(sizes),
                },
                "ratio_whole_to_add_median": round(
                    statistics.median(fulls) / statistics.median(adds), 1
                ),
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
