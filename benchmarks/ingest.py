"""Ingest benchmark: papers/s and peak memory, end to end next to bare ``nlp.pipe``.

For each corpus, in ONE run and on the same texts, each step in a fresh process
(so peak memory is its own):

* ``bare``  — the extraction pipeline's ``nlp.pipe`` over the cleaned abstracts,
  docs consumed and dropped: what spaCy alone costs;
* ``local`` — ``kg.ingest.ingest`` from the file into a new embedded store
  (reading, spaCy with ``n_process``, assembly, RDF mapping, bulk load,
  flush), until a query on the store answers: file → queryable store;
* ``dask``  — the same, with extraction on a local Dask cluster of as many
  single-threaded worker processes (spaCy *and* assembly on the workers).

It prints papers/s, peak resident memory of the whole process tree, memory
at 25/50/100 % of the corpus (flat = bounded by batches, not corpus size) and
the ratio end-to-end / bare.

    python benchmarks/ingest.py                      # sample + ICLR 2026 (../shared)
    python benchmarks/ingest.py --corpus sample --processes 2 --json out.json
    python benchmarks/ingest.py --corpus iclr --engines pool --rounds 3   # alternating
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

ICLR = REPO.parent / "shared" / "data" / "iclr2026_abstracts" / "iclr2026_accepted_abstracts.jsonl"
TARGETS = {"iclr_seconds": 180.0, "ratio": 0.8}


def corpus_paths(name: str) -> list[str]:
    """The files of a named corpus (``sample``, ``iclr``) or a path."""
    from kg.resources import sample_corpus

    if name == "sample":
        return [str(p) for p in sample_corpus()]
    if name == "iclr":
        if not ICLR.exists():
            raise SystemExit(f"the ICLR 2026 corpus is not at {ICLR} (../shared, beside the repo)")
        return [str(ICLR)]
    return [name]


# ------------------------------------------------------------------ one step, in a child


def _records(paths: list[str]) -> list:
    from kg.model import Record
    from kg.reading.readers import read_paths, unique

    return [r for r in unique(read_paths(paths)) if isinstance(r, Record)]


def step_bare(paths: list[str], processes: int, batch_size: int) -> dict:
    """Bare ``nlp.pipe`` of the extraction pipeline over the cleaned abstracts."""
    from benchmarks._proc import PeakSampler, tree_rss_mb
    from kg.extraction.pipeline import build_pipeline
    from kg.reading import latex

    texts = [latex.clean(r.abstract).text for r in _records(paths)]
    nlp = build_pipeline()
    marks: dict[str, float] = {}
    with PeakSampler() as peak:
        started = time.perf_counter()
        for i, _doc in enumerate(nlp.pipe(texts, batch_size=batch_size, n_process=processes), 1):
            _mark(marks, i, len(texts), tree_rss_mb)
        seconds = time.perf_counter() - started
    return {"papers": len(texts), "seconds": seconds, "peak_rss_mb": peak.peak, "rss_mb_at": marks}


def step_ingest(paths: list[str], processes: int, batch_size: int, engine: str) -> dict:
    """File → queryable embedded store, with the local or the Dask engine."""
    from benchmarks._proc import PeakSampler, tree_rss_mb
    from kg.extraction.engines import make_extractor
    from kg.ingest import ingest
    from kg.store.embedded import open_store
    from kg.store.queries import rows, run

    total = len(_records(paths))
    extractor = make_extractor(engine, processes=processes, batch_size=batch_size)
    if engine == "dask":
        _ = extractor.version  # start the cluster and load the models before the clock
    target = Path(tempfile.mkdtemp(prefix="kg-bench-store-")) / "store"
    marks: dict[str, float] = {}

    def progress(report) -> None:  # noqa: ANN001
        _mark(marks, report.added + report.updated + report.unchanged, total, tree_rss_mb)

    try:
        with PeakSampler() as peak:
            started = time.perf_counter()
            own_cpu = _own_cpu()
            store = open_store(target)
            report = ingest(paths, store, extractor=extractor, progress=progress)
            store.close()
            # Queryable: a fresh reader sees every paper.
            reader = open_store(target, read_only=True)
            counted = {
                r["class"].value.rsplit("#")[-1]: int(r["count"].value)
                for r in rows(run(reader, "class-counts"))
            }
            reader.close()
            seconds = time.perf_counter() - started
            # This process's own CPU: with `pool` and `dask` it is the writer's cost
            # (reading, mapping, loading), since extraction runs elsewhere.
            own_cpu = _own_cpu() - own_cpu
        size = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
    finally:
        if hasattr(extractor, "close"):
            extractor.close()
        shutil.rmtree(target.parent, ignore_errors=True)
    assert counted.get("Paper") == report.added, (counted, report.to_json())
    return {
        "papers": report.added,
        "seconds": seconds,
        "peak_rss_mb": peak.peak,
        "rss_mb_at": marks,
        "quads": report.quads_after,
        "store_mb": size / 1e6,
        "main_cpu_ms_per_paper": own_cpu / max(1, report.added) * 1e3,
    }


def _own_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _mark(marks: dict[str, float], done: int, total: int, rss) -> None:  # noqa: ANN001
    for pct in (25, 50, 100):
        key = f"{pct}%"
        if key not in marks and done * 100 >= pct * total:
            marks[key] = round(rss(), 1)


# ------------------------------------------------------------------ the run


def run_step(step: str, corpus: str, processes: int, batch_size: int) -> dict:
    """Run one step in a fresh interpreter; return its figures."""
    cmd = [
        sys.executable,
        str(HERE / "ingest.py"),
        "--step",
        step,
        "--corpus",
        corpus,
        "--processes",
        str(processes),
        "--batch-size",
        str(batch_size),
    ]
    from benchmarks._proc import cpu_seconds

    before_cpu, before_busy, started = _children_cpu(), cpu_seconds(), time.perf_counter()
    try:
        done = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=3600,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
    except subprocess.TimeoutExpired as exc:
        raise SystemExit(f"step {step} on {corpus} did not finish in an hour") from exc
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"step {step} on {corpus} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["papers_per_s"] = result["papers"] / result["seconds"]
    # CPU time of the step's whole process tree (spaCy and Dask workers are
    # reaped children, so they count) does not depend on what else the shared
    # machine runs; "foreign" is the share of all CPUs other processes used.
    cpu = _children_cpu() - before_cpu
    ncpu = os.cpu_count() or 1
    result["cpu_s"] = cpu
    result["cpu_ms_per_paper"] = cpu / result["papers"] * 1e3
    result["foreign_cpu_share"] = max(0.0, (cpu_seconds() - before_busy - cpu) / (wall * ncpu))
    return result


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def benchmark(
    corpora: list[str], processes: int, batch_size: int, engines: list[str], rounds: int = 1
) -> dict:
    """Every step on every corpus; ratios are within this one run.

    With several rounds the steps alternate (bare first, then bare last, …) so a
    machine that speeds up or slows down over the run favours neither side; each
    round gives its own ratio and the figures are the medians.
    """
    from benchmarks._proc import wait_quiet

    results: dict = {
        "processes": processes,
        "batch_size": batch_size,
        "cpus": os.cpu_count(),
        "rounds": rounds,
        "corpora": {},
    }
    for corpus in corpora:
        runs: dict[str, list[dict]] = {step: [] for step in ["bare", *engines]}
        for r in range(rounds):
            order = ["bare", *engines] if r % 2 == 0 else [*reversed(engines), "bare"]
            for step in order:
                waited = wait_quiet()
                print(
                    f"  {corpus}: round {r + 1}/{rounds}, {step} "
                    f"(waited {waited} s for a quiet machine) …",
                    file=sys.stderr,
                )
                runs[step].append(run_step(step, corpus, processes, batch_size))
        results["corpora"][corpus] = _medians(runs, engines)
    return results


def _medians(runs: dict[str, list[dict]], engines: list[str]) -> dict:
    """Each step's figures from its median-time round, with per-round ratios."""
    import statistics

    figures: dict = {}
    for step, done in runs.items():
        middle = sorted(done, key=lambda f: f["seconds"])[(len(done) - 1) // 2]
        figures[step] = {**middle, "rounds_seconds": [round(f["seconds"], 1) for f in done]}
    bare = runs["bare"]
    for step in engines:
        pairs = list(zip(runs[step], bare, strict=True))
        ratios = [f["papers_per_s"] / b["papers_per_s"] for f, b in pairs]
        cpu_ratios = [b["cpu_ms_per_paper"] / f["cpu_ms_per_paper"] for f, b in pairs]
        figures[step]["ratio_to_bare"] = statistics.median(ratios)
        figures[step]["rounds_ratio_to_bare"] = [round(x, 3) for x in ratios]
        figures[step]["cpu_ratio_to_bare"] = statistics.median(cpu_ratios)
    return figures


def print_table(results: dict) -> None:
    """The figures as a table."""
    print(
        f"ingest, n_process={results['processes']}, batch {results['batch_size']}, "
        f"{results['cpus']} CPUs"
    )
    print(
        f"{'corpus':<8} {'step':<6} {'papers':>7} {'seconds':>8} {'papers/s':>9} "
        f"{'×bare':>6} {'CPU ms/paper':>13} {'×bare':>6} {'foreign':>8} "
        f"{'peak RSS MB':>12}  RSS MB at 25/50/100 %"
    )
    for corpus, figures in results["corpora"].items():
        for step, f in figures.items():
            ratio = f"{f['ratio_to_bare']:.2f}" if "ratio_to_bare" in f else "1.00"
            cpu_ratio = f"{f['cpu_ratio_to_bare']:.2f}" if "cpu_ratio_to_bare" in f else "1.00"
            at = " / ".join(str(f["rss_mb_at"].get(k, "-")) for k in ("25%", "50%", "100%"))
            print(
                f"{corpus:<8} {step:<6} {f['papers']:>7} {f['seconds']:>8.1f} "
                f"{f['papers_per_s']:>9.1f} {ratio:>6} {f['cpu_ms_per_paper']:>13.0f} "
                f"{cpu_ratio:>6} {f['foreign_cpu_share']:>8.2f} {f['peak_rss_mb']:>12.0f}  {at}"
            )
    if results.get("rounds", 1) > 1:
        print("per round (median above):")
        for corpus, figures in results["corpora"].items():
            for step, f in figures.items():
                ratios = f.get("rounds_ratio_to_bare")
                extra = f"  ×bare {ratios}" if ratios else ""
                print(f"  {corpus:<8} {step:<6} seconds {f['rounds_seconds']}{extra}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--corpus",
        action="append",
        help="sample, iclr or a file (repeatable; default: sample and iclr)",
    )
    ap.add_argument(
        "--processes",
        type=int,
        default=os.cpu_count() or 1,
        help="spaCy processes / Dask workers (default: all CPUs)",
    )
    ap.add_argument("--batch-size", type=int, default=64, help="nlp.pipe batch size")
    ap.add_argument(
        "--engines", default="local,pool,dask", help="comma-separated: local, pool, dask"
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="repeat every step, alternating their order; figures are medians (default 1)",
    )
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--step", choices=["bare", "local", "pool", "dask"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    corpora = args.corpus or (["sample", "iclr"] if ICLR.exists() else ["sample"])
    if args.step:
        paths = corpus_paths(corpora[0])
        if args.step == "bare":
            out = step_bare(paths, args.processes, args.batch_size)
        else:
            out = step_ingest(paths, args.processes, args.batch_size, args.step)
        print(json.dumps(out))
        return 0
    engines = [e for e in args.engines.split(",") if e]
    results = benchmark(corpora, args.processes, args.batch_size, engines, max(1, args.rounds))
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
