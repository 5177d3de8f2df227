"""Load-test the results endpoints: leaderboards, one leaderboard, related papers, compare.

Starts ``kg serve`` on a store, times the first request after the start and the
first request after a write (``POST /papers`` of one made-up abstract, deleted
again afterwards): with the store's index in step both are lookups, without it
the first builds the in-memory results index. Then drives each endpoint with
``benchmarks/rest_load.py``'s closed loop (``../shared/tools/sparql_load.py``,
wrk when installed) at each concurrency. The URLs are real ones from the store:
the leaderboard with most results, a paper of it, that paper's top related papers.

    python benchmarks/results_load.py --store /tmp/iclr-store -c 4 -d 10

Prints one JSON object per line: the first requests, then one per (path, concurrency).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from urllib.parse import quote
from urllib.request import Request, urlopen

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from rest_load import LOAD, _server_pid, measure  # noqa: E402

from tests.helpers import running_server  # noqa: E402

TOKEN = "results-load-benchmark"
PAPER = {
    "abstract": "We propose BenchNet, a made-up detector for the results benchmark. "
    "BenchNet reaches 51.3 mAP on COCO.",
}


def _get(url: str) -> dict:
    with urlopen(url) as response:
        return json.load(response)


def _timed(url: str) -> tuple[float, dict]:
    started = time.perf_counter()
    body = _get(url)
    return round(time.perf_counter() - started, 3), body


def _send(url: str, method: str, body: object | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = Request(url, data=data, method=method)
    request.add_header("Authorization", f"Bearer {TOKEN}")
    request.add_header("Content-Type", "application/json")
    with urlopen(request) as response:
        return json.load(response) if response.status != 204 else {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--store", required=True, help="store directory: start `kg serve` on it")
    ap.add_argument("-c", "--concurrency", type=int, action="append", default=[])
    ap.add_argument("-d", "--duration", type=float, default=10.0)
    args = ap.parse_args()
    if not LOAD.exists():
        sys.exit(f"{LOAD} is missing (../shared beside the checkout)")
    env = {"KG_LOG_LEVEL": "warning", "KG_UPDATE_TOKEN": TOKEN}
    with running_server(args.store, env=env) as base:
        first_s, boards = _timed(base + "/leaderboards?min_results=3&limit=100")
        added = _send(base + "/papers", "POST", PAPER)["results"][0]["id"]
        after_write_s, _ = _timed(base + "/leaderboards?min_results=3&limit=100")
        _send(f"{base}/papers/{quote(added, safe='')}", "DELETE")
        print(
            json.dumps(
                {
                    "first_request_s": first_s,
                    "first_request_after_write_s": after_write_s,
                    "leaderboards_min3": boards["total"],
                }
            ),
            flush=True,
        )
        top = boards["items"][0]
        board = _get(base + top["href"])
        paper = board["items"][0]["paper"]["id"]
        related = _get(f"{base}/papers/{quote(paper, safe='')}/related?limit=10")
        ids = [paper] + [r["paper"]["id"] for r in related["items"][:2]]
        paths = [
            "/leaderboards?min_results=3",
            top["href"],
            f"/papers/{quote(paper, safe='')}/related?limit=10",
            "/compare?papers=" + ",".join(quote(i, safe="") for i in ids),
        ]
        pid = _server_pid(base)
        for path in paths:
            for c in args.concurrency or [4]:
                print(json.dumps(measure(base, path, c, args.duration, pid)), flush=True)


if __name__ == "__main__":
    main()
