"""Every benchmark of BENCHMARKS.md in one command.

    python benchmarks/run_all.py [--out results/]   # needs ../shared (corpus, load generator)

Runs ``benchmarks/ingest.py`` (sample and the 4,302-paper ICLR 2026 corpus:
bare ``nlp.pipe`` next to end-to-end ingest with each engine) and
``benchmarks/query.py`` (in-process ceiling, ``kg serve`` start-up, our
``/sparql`` and REST API next to ``oxigraph serve`` on a copy of the same
store) and ``benchmarks/write.py`` (the writer alone: embedded bulk loader and
remote Graph Store Protocol PUTs), prints their tables and writes their JSON
figures to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out", type=Path, default=Path("benchmark-results"), help="directory for the JSON figures"
    )
    ap.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    ap.add_argument(
        "--store",
        type=Path,
        default=Path(tempfile.gettempdir()) / "kg-bench" / "iclr-store",
        help="ICLR store for the query benchmark (built when missing)",
    )
    ap.add_argument("--duration", type=float, default=8.0, help="seconds per load run")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    steps = [
        [
            sys.executable,
            str(HERE / "ingest.py"),
            "--processes",
            str(args.processes),
            "--json",
            str(args.out / "ingest.json"),
        ],
        [
            sys.executable,
            str(HERE / "query.py"),
            "--store",
            str(args.store),
            "--processes",
            str(args.processes),
            "--duration",
            str(args.duration),
            "--json",
            str(args.out / "query.json"),
        ],
        [
            sys.executable,
            str(HERE / "write.py"),
            "--store",
            str(args.store),
            "--json",
            str(args.out / "write.json"),
        ],
    ]
    for cmd in steps:
        print("$ " + " ".join(cmd[1:]), flush=True)
        done = subprocess.run(cmd)
        if done.returncode != 0:
            return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
