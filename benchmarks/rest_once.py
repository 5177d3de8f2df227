"""REST cost one request at a time, in process: the median and slowest of
``--repeat`` warm requests per endpoint of :func:`benchmarks.scale.endpoints`,
through FastAPI's test client (no HTTP server, no concurrency), so two
checkouts can be compared on one store without a load generator:

    python benchmarks/rest_once.py --store /tmp/kg-scale/s30000 --repeat 5
    (cd ../old-checkout && python benchmarks/rest_once.py --store /tmp/kg-scale/s30000)

The figures are wall-clock and include the machine's load; compare columns
measured one after the other on the same store.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", action="append", default=[], help="Endpoints containing this")
    args = ap.parse_args()

    from fastapi.testclient import TestClient

    from benchmarks.scale import endpoints
    from service.app import create_app
    from service.settings import Settings

    settings = Settings(store=str(args.store), query_workers=1, log_level="warning")
    print("| endpoint | median (ms) | slowest (ms) |\n|---|---|---|")
    with TestClient(create_app(settings)) as client:
        for path in endpoints(args.store):
            if args.only and not any(o in path for o in args.only):
                continue
            status = client.get(path).status_code  # the warm-up request
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                client.get(path)
                times.append((time.perf_counter() - start) * 1000)
            note = "" if status == 200 else f" ({status})"
            print(f"| `{path}`{note} | {statistics.median(times):.1f} | {max(times):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
