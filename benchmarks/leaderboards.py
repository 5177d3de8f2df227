"""Check the leaderboards of a store against the results issue's targets.

For every board with at least ``--min-results`` absolute results (the same read
as ``kg leaderboard``): each row's claim offsets must cut the claim's text out
of the paper's abstract, lie inside one sentence of the graph, and that text
must contain the value as written (a claim is one sentence, or a clause of one);
rows must be sorted best first by the
metric's direction. Prints one JSON object: the number of boards, of rows, the
failures (at most 20 shown), and the boards.

    python benchmarks/leaderboards.py --store /tmp/iclr-store
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kg.cli.common import open_for_reading  # noqa: E402
from kg.cli.results import _reader  # noqa: E402
from kg.read.base import first  # noqa: E402
from kg.read.results import DATASET, METRIC  # noqa: E402
from kg.vocab import paper_iri  # noqa: E402


def check(location: str, min_results: int) -> dict[str, object]:
    """The boards of the store with what each row's evidence says."""
    index = _reader(location)
    store = open_for_reading(location)
    boards = index.leaderboards(min_results=min_results)
    failures: list[str] = []
    rows = 0
    listed = []
    for b in boards:
        board = index.leaderboard(b[DATASET]["iri"], b[METRIC]["iri"])
        assert board is not None
        numbers = [r["value"]["number"] for r in board["items"]]
        higher = board["higher_is_better"]
        wanted = sorted(numbers, reverse=higher is not False)
        if numbers != wanted:
            failures.append(f"{b['href']}: not sorted by direction {higher}")
        for row in board["items"]:
            rows += 1
            paper = first(store, "paper", paper=paper_iri(row["paper"]["id"]))
            abstract = str(paper["abstract"].value)
            claim = row["claim"]
            cut = abstract[claim["start"] : claim["end"]]
            if cut != claim["text"]:
                failures.append(f"{b['href']} #{row['rank']}: offsets do not cut the claim")
            elif row["value"]["text"] not in cut:
                failures.append(f"{b['href']} #{row['rank']}: value not in its claim")
        listed.append(
            {
                "dataset": b[DATASET]["label"],
                "metric": b[METRIC]["label"],
                "results": b["results"],
                "higher_is_better": higher,
            }
        )
    return {
        "boards": len(boards),
        "rows": rows,
        "failures": len(failures),
        "first_failures": failures[:20],
        "items": listed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--min-results", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(check(args.store, args.min_results), indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
