"""``kg serve`` start-up: seconds until ``/health`` answers, and the CPU seconds
the server process (and its query workers) spent by then, per store.

    python benchmarks/startup.py /tmp/iclr-final /tmp/scale-10k /tmp/scale-100k [--runs 3]

Wall time on a shared machine is mostly waiting for a core; the CPU seconds
are what the start-up costs whatever else runs (wall ≈ CPU on an idle
machine). The server is started read-only (no update token) with
``--no-sample``, as ``benchmarks/scale.py`` starts it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def _cpu_s(pid: int, *, children: bool) -> float:
    """CPU seconds of ``pid`` (and of its direct children) so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == pid or (children and int(fields[1]) == pid):
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def one_start(store: Path) -> dict[str, float]:
    """Start ``kg serve`` on ``store`` once; stop it when ``/health`` answers."""
    from benchmarks.query import free_port

    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kg", "serve", "--store", str(store), "--host", "127.0.0.1"]
        + ["--port", str(port), "--no-sample"],
        env={**os.environ, "KG_LOG_LEVEL": "warning"},
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"kg serve exited with {proc.returncode} on {store}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.02)
        wall = time.perf_counter() - started
        return {
            "wall_s": round(wall, 2),
            "server_cpu_s": round(_cpu_s(proc.pid, children=False), 2),
            "with_workers_cpu_s": round(_cpu_s(proc.pid, children=True), 2),
        }
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stores", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path, help="Also write the figures here")
    args = ap.parse_args()
    out = {}
    for store in args.stores:
        runs = [one_start(store) for _ in range(args.runs)]
        out[str(store)] = {
            "runs": runs,
            "median_wall_s": statistics.median(r["wall_s"] for r in runs),
            "median_server_cpu_s": statistics.median(r["server_cpu_s"] for r in runs),
        }
        print(
            f"{store}: wall {[r['wall_s'] for r in runs]} s, server CPU "
            f"{[r['server_cpu_s'] for r in runs]} s (with workers "
            f"{[r['with_workers_cpu_s'] for r in runs]} s)",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
