"""Load-test REST endpoints of the real server: requests/s and p50/p99 latency.

Starts ``kg serve`` on a store (or uses ``--base`` of a running server), then
drives each URL with ``../shared/tools/sparql_load.py`` (wrk when installed)
at each concurrency. That tool appends ``query=…`` to the URL; REST endpoints
ignore the extra parameter, so it measures the REST request as given.

    python benchmarks/rest_load.py --store STORE --path '/papers?task=unlearning' -c 1 -c 16
    python benchmarks/rest_load.py --store STORE --top-task      # the task with most papers
    python benchmarks/rest_load.py --store STORE --sparql benchmarks/queries/sample_lookup.rq \
        --path '/papers?task=unlearning' [--no-cache]            # the sample figures

Prints one JSON object per (path, concurrency).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from urllib.request import urlopen

REPO = Path(__file__).resolve().parent.parent
LOAD = REPO.parent / "shared" / "tools" / "sparql_load.py"


def measure(
    base: str,
    path: str,
    concurrency: int,
    duration: float,
    pid: int | None,
    query_file: str | None = None,
) -> dict:
    """One closed-loop run against ``base + path`` (with ``query_file``: a SPARQL
    query sent to ``base + path`` as ``?query=``)."""
    query = ["--query-file", query_file] if query_file else ["--query", "-"]
    args = [
        sys.executable,
        str(LOAD),
        "--url",
        base + path,
        *query,
        "-c",
        str(concurrency),
        "-d",
        str(duration),
        "--warmup",
        "2",
        "--json",
    ]
    if pid:
        args += ["--server-pid", str(pid)]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return {
        "path": path + (f" ({Path(query_file).name})" if query_file else ""),
        "concurrency": concurrency,
        "rps": result["rps"],
        "p50_ms": result["p50_ms"],
        "p99_ms": result["p99_ms"],
        "non_2xx": result["non_2xx"],
        "server_cpu_share": result.get("server_cpu_share"),
        "foreign_cpu_share": result.get("foreign_cpu_share"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--store", help="store directory: start `kg serve` on it")
    ap.add_argument("--base", help="base URL of a running server instead")
    ap.add_argument("--path", action="append", default=[], help="path and query to load")
    ap.add_argument(
        "--top-task",
        action="store_true",
        help="also load /papers?task=KEY for the task with most papers",
    )
    ap.add_argument(
        "--sparql",
        action="append",
        default=[],
        metavar="FILE.rq",
        help="also load /sparql with this query",
    )
    ap.add_argument(
        "--no-cache",
        action="store_true",
        help="serve with KG_QUERY_CACHE=0 (every /sparql query evaluated)",
    )
    ap.add_argument("-c", "--concurrency", type=int, action="append", default=[])
    ap.add_argument("-d", "--duration", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=1, help="uvicorn workers of `kg serve`")
    args = ap.parse_args()
    if not LOAD.exists():
        sys.exit(f"{LOAD} is missing (../shared beside the checkout)")
    if not (args.store or args.base):
        sys.exit("give --store or --base")
    concurrencies = args.concurrency or [1, 16]

    def run(base: str, pid: int | None) -> None:
        paths = list(args.path)
        if args.top_task or not (paths or args.sparql):
            with urlopen(base + "/tasks?limit=1") as r:
                top = json.load(r)["items"][0]
            paths.append(f"/papers?task={top['key']}")
            print(json.dumps({"top_task": top["key"], "papers": top["papers"]}), flush=True)
        for query_file in args.sparql:
            for c in concurrencies:
                result = measure(base, "/sparql", c, args.duration, pid, query_file)
                print(json.dumps(result), flush=True)
        for path in paths:
            for c in concurrencies:
                print(json.dumps(measure(base, path, c, args.duration, pid)), flush=True)

    if args.base:
        run(args.base.rstrip("/"), None)
        return
    sys.path.insert(0, str(REPO))
    from tests.helpers import running_server

    extra = ("--workers", str(args.workers)) if args.workers > 1 else ()
    env = {"KG_LOG_LEVEL": "warning"}
    if args.no_cache:
        env["KG_QUERY_CACHE"] = "0"
    with running_server(args.store, *extra, env=env) as base:
        pid = _server_pid(base)
        run(base, pid)


def _server_pid(base: str) -> int | None:
    port = base.rsplit(":", 1)[-1]
    try:
        out = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True)
        marker = "pid="
        text = out.stdout
        return int(text[text.index(marker) + len(marker) :].split(",", 1)[0])
    except (OSError, ValueError):
        return None


if __name__ == "__main__":
    main()
