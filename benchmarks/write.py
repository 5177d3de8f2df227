"""Writer benchmark: papers/s into the embedded store (bulk loader) and into a
remote store (``oxigraph serve``, one Graph Store Protocol PUT per paper).

The papers are real ones: the paper graphs of an existing store (by default
the ICLR 2026 store that ``benchmarks/query.py`` builds), so extraction and
mapping are not part of the figure.

    python benchmarks/write.py --store /tmp/kg-bench/iclr-store --papers 1000
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    from pyoxigraph import Store

    from benchmarks.query import free_port, oxigraph_serve
    from kg.mapping.papers import PaperQuads
    from kg.store.embedded import open_store
    from kg.vocab import paper_id_from_graph

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--store", type=Path, default=Path(tempfile.gettempdir()) / "kg-bench" / "iclr-store"
    )
    ap.add_argument("--papers", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=256, help="papers per write_papers call")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    source = Store.read_only(str(args.store))
    graphs = [g for g in source.named_graphs() if paper_id_from_graph(g.value)][: args.papers]
    papers = [
        PaperQuads(
            paper_id_from_graph(g.value) or "",
            g,
            list(source.quads_for_pattern(None, None, None, g)),
            [],
            {},
        )
        for g in graphs
    ]
    results: dict = {"papers": len(papers), "quads": sum(len(p.paper) for p in papers)}
    work = Path(tempfile.mkdtemp(prefix="kg-bench-write-"))
    try:
        for name in ("embedded", "remote"):
            if name == "embedded":
                store = open_store(work / "embedded")
                server = None
            else:
                server = oxigraph_serve(work / "remote", free_port()).__enter__()
                store = open_store(server.ready_url.split("/query")[0])
            cpu, started = _cpu(), time.perf_counter()
            for i in range(0, len(papers), args.batch):
                store.write_papers(papers[i : i + args.batch], new=True)
            store.flush()  # a no-op on the remote store
            seconds = time.perf_counter() - started
            results[name] = {
                "papers_per_s": len(papers) / seconds,
                "ms_per_paper": seconds / len(papers) * 1e3,
                "client_cpu_ms_per_paper": (_cpu() - cpu) / len(papers) * 1e3,
            }
            store.close()
            if server is not None:
                server.__exit__(None, None, None)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name in ("embedded", "remote"):
        r = results[name]
        print(
            f"{name:<9} {r['papers_per_s']:7.0f} papers/s  {r['ms_per_paper']:6.2f} ms/paper  "
            f"client CPU {r['client_cpu_ms_per_paper']:5.2f} ms/paper"
        )
    print(f"({results['papers']} papers, {results['quads']} quads)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
