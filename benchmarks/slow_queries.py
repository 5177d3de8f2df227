"""``ASK {?s ?p ?o}`` latency on a real server while two slow queries run.

    python benchmarks/slow_queries.py [--store STORE] [-n 100]

Starts ``kg serve`` on a copy of STORE (default: the bundled sample, ingested
first) with the default pool (2 fast-lane workers, 1 slow-lane worker, 0.5 s
budget). Measures ASK sequentially (each with a distinct comment, so the result
cache never answers) first alone, then while two clients keep a three-way cross
product running (each re-sent as soon as it is answered, 503 or not). Prints
one JSON object with p50/p99/max per phase and what the slow clients got.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._proc import prepare_store  # noqa: E402
from tests.helpers import running_server  # noqa: E402

SLOW = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
ASK = "ASK { ?s ?p ?o }"


def _ask_latencies(base: str, n: int, tag: str) -> list[float]:
    out = []
    with httpx.Client(base_url=base, timeout=60) as http:
        for i in range(n):
            started = time.perf_counter()
            response = http.get("/sparql", params={"query": f"{ASK} # {tag} {i}"})
            out.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, response.text
            time.sleep(0.02)
    return out


def _summary(values: list[float]) -> dict:
    ordered = sorted(values)
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(ordered), 1),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 1),
        "max_ms": round(ordered[-1], 1),
    }


def measure(base: str, n: int) -> dict:
    """ASK latency alone, then with two slow clients running."""
    alone = _ask_latencies(base, n, "alone")
    stop = threading.Event()
    outcomes: Counter[str] = Counter()

    def slow_client(k: int) -> None:
        with httpx.Client(base_url=base, timeout=60) as http:
            i = 0
            while not stop.is_set():
                i += 1
                response = http.get("/sparql", params={"query": f"{SLOW} # {k} {i}"})
                kind = response.json().get("type", "ok").rsplit("/", 1)[-1]
                outcomes[f"{response.status_code} {kind}"] += 1

    threads = [threading.Thread(target=slow_client, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(1.5)  # both slow queries are past the budget
    busy = _ask_latencies(base, n, "busy")
    stop.set()
    for thread in threads:
        thread.join()
    return {
        "ask_alone": _summary(alone),
        "ask_with_two_slow_queries": _summary(busy),
        "slow_query_outcomes": dict(outcomes),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--store", help="Store directory to copy (default: ingest the sample)")
    ap.add_argument("-n", type=int, default=100, help="ASK requests per phase")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kg-slow-"))
    store = work / "store"
    try:
        prepare_store(store, args.store)
        with running_server(store, env={"KG_LOG_LEVEL": "warning"}) as base:
            print(json.dumps(measure(base, args.n)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
