"""CPU cost of the learned typer (``kg_typer``) per abstract, next to the rest of the pipeline.

Runs the extraction pipeline up to the typer over the first N ICLR 2026 abstracts
(``../shared``), then times the typer alone on copies of those docs, several
rounds, in CPU time of this process (``time.process_time``), so the machine's
load counts less than in wall time. Prints ms per abstract for the pipeline
before the typer and for the typer.

    python benchmarks/typer_cost.py                  # 300 abstracts, 3 rounds
    python benchmarks/typer_cost.py -n 100 --rounds 5
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

ICLR = Path("../shared/data/iclr2026_abstracts/iclr2026_accepted_abstracts.jsonl")


def main() -> int:
    """Print the typer's CPU cost per abstract."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=300, help="abstracts (default 300)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--input", type=Path, default=ICLR, help="JSONL with an abstract field")
    args = parser.parse_args()
    if not args.input.exists():
        print(f"no {args.input}: run from the repository root with ../shared beside it")
        return 2

    from kg.extraction.extractor import Extractor
    from kg.reading import latex

    nlp = Extractor().nlp
    with args.input.open(encoding="utf-8") as fh:
        texts = [
            latex.clean(json.loads(line)["abstract"]).text for line in itertools.islice(fh, args.n)
        ]
    before = [p for p in nlp.pipe_names if p in ("kg_typer", "kg_claims", "kg_results")]
    start = time.process_time()
    with nlp.select_pipes(disable=before):
        docs = list(nlp.pipe(texts, batch_size=32))
    upstream = (time.process_time() - start) / len(docs) * 1000
    typer = nlp.get_pipe("kg_typer")
    spent = 0.0
    for _ in range(args.rounds):
        copies = [doc.copy() for doc in docs]
        start = time.process_time()
        for doc in copies:
            typer(doc)
        spent += time.process_time() - start
    per_doc = spent / args.rounds / len(docs) * 1000
    print(f"{len(docs)} abstracts: pipeline before the typer {upstream:.1f} ms CPU per abstract")
    print(f"kg_typer {per_doc:.2f} ms CPU per abstract (mean of {args.rounds} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
