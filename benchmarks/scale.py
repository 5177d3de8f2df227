"""REST latency as the store grows: p50/p99 per endpoint at c=4 on several
stores, side by side in one run, plus ``kg serve`` start-up and write rates.

    python benchmarks/synth.py --papers 100000 --store /tmp/kg-scale/s100000   # etc.
    python benchmarks/scale.py --store 4.3k=/tmp/iclr-store --store 10k=/tmp/kg-scale/s10000 \\
        --store 30k=/tmp/kg-scale/s30000 --store 100k=/tmp/kg-scale/s100000 \\
        --writes /tmp/kg-scale/s100000 --json scale.json

Each store is served by ``kg serve`` (read-only) in turn; each endpoint is
driven by ``../shared/tools/sparql_load.py`` (wrk) for ``--duration`` seconds
after a warm-up. The endpoint parameters are picked per store from its index:
the task with most papers (the longest lists), a method ranked 50th, and so on,
so every store is asked the same kind of question. ``--writes STORE`` adds
1,000 synthetic papers to an empty store and to a copy of STORE, alternating
batches (``benchmarks/write_growth.py``), and compares the per-paper rates.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def _one(db: sqlite3.Connection, sql: str, *args: object) -> str:
    row = db.execute(sql, args).fetchone()
    if row is None:
        raise SystemExit(f"the index has nothing for: {sql}")
    return row[0]


def endpoints(store: Path) -> list[str]:
    """The REST requests of the issue's list, with parameters from this store."""
    from kg.store.index import index_path

    db = sqlite3.connect(f"file:{index_path(str(store))}?mode=ro", uri=True)

    def key(iri: str) -> str:
        return quote(iri.rsplit("/", 1)[-1], safe="%")  # IRI tails are encoded already

    ranked = (
        "SELECT iri FROM entities WHERE type = ? AND papers > 0 "
        "ORDER BY papers DESC, iri LIMIT 1 OFFSET ?"
    )
    task = key(_one(db, ranked, "Task", 0))
    method = key(_one(db, ranked, "Method", 49))
    top_method = key(_one(db, ranked, "Method", 0))
    dataset = key(_one(db, ranked, "Dataset", 0))
    metric = key(_one(db, ranked, "Metric", 0))
    subject = _one(
        db,
        "SELECT subject FROM claims WHERE subject IS NOT NULL "
        "GROUP BY subject ORDER BY count(*) DESC LIMIT 1",
    )
    claim_metric = _one(
        db,
        "SELECT metric FROM claims WHERE metric IS NOT NULL "
        "GROUP BY metric ORDER BY count(*) DESC LIMIT 1",
    )
    paper = quote(_one(db, "SELECT id FROM papers ORDER BY id LIMIT 1 OFFSET 100"), safe="")
    board = db.execute(
        "SELECT dataset, metric FROM results WHERE dataset IS NOT NULL AND metric IS NOT NULL "
        "AND relative = 0 AND number IS NOT NULL GROUP BY dataset, metric "
        "ORDER BY count(*) DESC, dataset, metric LIMIT 1"
    ).fetchone()
    compared = ",".join(
        quote(pid, safe="")
        for (pid,) in db.execute("SELECT id FROM papers ORDER BY id LIMIT 3 OFFSET 200")
    )
    results = [
        "/leaderboards?min_results=3",
        f"/papers/{paper}/related?limit=10",
        f"/compare?papers={compared}",
        # last: a store without results (the synthetic ones) has no board to ask for
        *([f"/leaderboards/{key(board[0])}/{key(board[1])}"] if board else []),
    ]
    return [
        "/papers",
        f"/papers?task={task}",
        f"/papers?method={method}",
        f"/papers?dataset={dataset}",
        f"/papers?metric={metric}",
        f"/papers?task={task}&method={top_method}",
        f"/papers?task={task}&dataset={dataset}&offset=20",
        "/papers?q=diffusion",
        f"/papers?task={task}&q=learning",
        "/search?q=diffusion",
        "/search?q=tra",
        "/tasks",
        "/methods",
        "/datasets",
        "/metrics",
        "/methods?prefix=tra",
        "/tasks?prefix=re",
        f"/entities/task/{task}",
        f"/entities/method/{method}",
        f"/papers/{paper}",
        "/claims",
        "/claims?kind=performance",
        f"/claims?subject={quote(subject, safe='')}",
        f"/claims?metric={quote(claim_metric, safe='')}&min_value=50",
        "/stats",
        f"/graph?focus=method/{method}&depth=1&format=d3",
        f"/graph?focus=task/{task}&depth=1&format=d3&limit=200",
        "/graph/search?q=diffusion",
        *results,
    ]


def measure_store(
    store: Path, duration: float, warmup: float, *, workers: int = 1, only: str | None = None
) -> dict:
    """Start-up time and p50/p99 of every endpoint at c=4 on one store.

    ``workers`` is ``kg serve --workers`` (more than one serves read-only);
    ``only`` keeps the endpoints whose path contains it.
    """
    import httpx

    from benchmarks.query import free_port, kg_serve, load

    env = {"KG_WORKERS": str(workers)}
    starts = []
    for _ in range(2):
        with kg_serve(store, free_port(), env) as server:
            starts.append(round(server.startup_s, 2))
    out: dict = {"startup_s": starts, "workers": workers, "endpoints": {}}
    with kg_serve(store, free_port(), env) as server:
        base = server.ready_url.rsplit("/", 1)[0]
        for path in endpoints(store):
            if only and only not in path:
                continue
            try:
                status = httpx.get(base + path, timeout=60).status_code
            except httpx.TimeoutException:
                status = 0  # no answer within 60 s: recorded as such, the run goes on
            result = load(base + path, 4, duration, warmup, server.pid)
            out["endpoints"][path] = {
                "status": status,
                "p50_ms": result["p50_ms"],
                "p99_ms": result["p99_ms"],
                "rps": result["rps"],
                "non_2xx": result["non_2xx"],
                "foreign_cpu_share": result.get("foreign_cpu_share"),
            }
            print(
                f"  {path}: {status} p50 {result['p50_ms']} ms p99 {result['p99_ms']} ms",
                file=sys.stderr,
                flush=True,
            )
    return out


def measure_writes(store: Path, papers: int = 1000) -> dict:
    """Per-paper write rate into an empty store and into a copy of ``store``
    (left unchanged), alternating batches: :mod:`benchmarks.write_growth`."""
    from benchmarks.write_growth import measure
    from kg.ingest import WRITE_BATCH

    return measure(store, papers, WRITE_BATCH)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", action="append", default=[], metavar="NAME=DIR")
    ap.add_argument("--duration", type=float, default=4.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--writes", type=Path, help="also measure writes into this store")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--workers", type=int, default=1, help="kg serve --workers (default 1)")
    ap.add_argument("--only", help="only the endpoints whose path contains this")
    args = ap.parse_args()
    results: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "stores": {}}
    for spec in args.store:
        name, _, path = spec.partition("=")
        print(f"{name}: {path}", file=sys.stderr, flush=True)
        results["stores"][name] = measure_store(
            Path(path), args.duration, args.warmup, workers=args.workers, only=args.only
        )
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    if args.writes:
        results["writes"] = measure_writes(args.writes)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print_table(results)
    return 0


def print_table(results: dict) -> None:
    """A markdown table: one row per endpoint, p50/p99 per store."""
    names = list(results["stores"])
    # The target: p50 grows at most 2x from 10k to 100k papers (log-log slope <= 0.3).
    growth = "10k" in names and "100k" in names
    extra = " p50 100k / 10k |" if growth else ""
    print("| endpoint | " + " | ".join(f"{n} p50 / p99 (ms)" for n in names) + " |" + extra)
    print("|---|" + "---|" * (len(names) + growth))
    kinds: dict[int, str] = {}
    for n in names:
        for i, path in enumerate(results["stores"][n]["endpoints"]):
            kinds.setdefault(i, path)
    for i, path in sorted(kinds.items()):
        cells = []
        for n in names:
            rows = list(results["stores"][n]["endpoints"].values())
            r = rows[i] if i < len(rows) else None
            cells.append(f"{r['p50_ms']:.1f} / {r['p99_ms']:.1f}" if r else "–")
        if growth:
            ends = {n: list(results["stores"][n]["endpoints"].values()) for n in ("10k", "100k")}
            p50 = {n: rows[i]["p50_ms"] if i < len(rows) else 0 for n, rows in ends.items()}
            cells.append(f"{p50['100k'] / p50['10k']:.2f}×" if p50["10k"] and p50["100k"] else "–")
        print(f"| `{path}` | " + " | ".join(cells) + " |")
    print(
        "| `kg serve` start (s) | "
        + " | ".join(str(results["stores"][n]["startup_s"]) for n in names)
        + " |"
        + (" |" if growth else "")
    )
    if "writes" in results:
        w = results["writes"]
        print(
            f"\nwrites: {w['empty']['papers_per_s']} papers/s into an empty store, "
            f"{w['large']['papers_per_s']} into the large one: ratio {w['ratio_wall']} "
            f"(CPU {w['ratio_cpu']})"
        )


if __name__ == "__main__":
    sys.exit(main())
