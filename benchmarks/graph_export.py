"""Where a ``/graph?focus=…`` request's time goes, stage by stage, in one process.

For each focus: reading the neighbourhood from the index (``bounded_data``),
building the graph (``build_graph``), the node-link dict (networkx) and its JSON
text, with the standard library's ``json.dumps`` and with orjson (what
``kg.read.exporters`` uses) side by side on the same dict; median of ``-n``
repetitions after one warm-up. Also checks that both encoders give the same bytes.

    python benchmarks/graph_export.py --store /tmp/scale-100k
    python benchmarks/graph_export.py --store STORE --focus method/claude=2000 -n 50
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DEFAULT_FOCUS = ["method/claude=2000", "task/reinforcement-learning=200"]


def _median_ms(fn: Callable[[], Any], n: int) -> tuple[float, Any]:
    out = fn()
    times = []
    for _ in range(n):
        started = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), out


def main() -> int:
    """Print one row per focus: ms per stage and the two encoders' times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="an embedded store with its index")
    parser.add_argument(
        "--focus", action="append", help="KIND/KEY=LIMIT (default: method/claude, the top task)"
    )
    parser.add_argument("-n", type=int, default=20, help="repetitions (default 20)")
    args = parser.parse_args()

    import networkx as nx
    import orjson

    from kg.read.graphview import GraphDataCache, GraphRequest, build_graph, parse_types
    from kg.store.embedded import open_reader
    from kg.store.index import with_index
    from kg.store.index.graph import bounded_data

    store = with_index(open_reader(args.store))
    cache = GraphDataCache()
    print("focus | nodes | index read | build | node-link dict | json.dumps | orjson | same bytes")
    for spec in args.focus or DEFAULT_FOCUS:
        focus, _, limit = spec.partition("=")
        request = GraphRequest(
            focus=focus,
            depth=1,
            types=parse_types(None),
            min_support=1,
            limit=int(limit or 2000),
            projection="bipartite",
        )

        def read(request: GraphRequest = request) -> Any:
            return bounded_data(
                store, request, cache, ("bench", 0), max_papers=20_000, max_nodes=50_000
            )

        read_ms, data = _median_ms(read, args.n)
        build_ms, graph = _median_ms(
            lambda request=request, data=data: build_graph(store, request, data=data), args.n
        )
        dict_ms, obj = _median_ms(
            lambda graph=graph: nx.node_link_data(graph, edges="links"), args.n
        )
        std_ms, std = _median_ms(
            lambda obj=obj: json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode(),
            args.n,
        )
        fast_ms, fast = _median_ms(
            lambda obj=obj: orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS), args.n
        )
        print(
            f"{focus} | {graph.number_of_nodes()} | {read_ms:.2f} | {build_ms:.2f} | "
            f"{dict_ms:.2f} | {std_ms:.2f} | {fast_ms:.2f} | {std == fast}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
