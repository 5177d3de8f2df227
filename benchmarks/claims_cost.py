"""CPU cost of the claim detector (``kg_claims``) with its model and with the cues alone.

Parses the first N ICLR 2026 abstracts (``../shared``) once with the extraction
pipeline up to the claim detector, then runs the detector over all of them
with the shipped model and without it (the cue rules deciding, as before
extractor 0.10.0), alternating for R rounds in this one process, in CPU time
(``time.process_time``). Prints the median per abstract of each and their ratio.

    python benchmarks/claims_cost.py               # 300 abstracts, 7 rounds
    python benchmarks/claims_cost.py -n 100 -r 3
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
ICLR = Path("../shared/data/iclr2026_abstracts/iclr2026_accepted_abstracts.jsonl")


def main() -> None:
    """Time the detector both ways and print the medians."""
    from kg.extraction.extractor import Extractor
    from kg.reading import latex

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=300, help="abstracts")
    parser.add_argument("-r", type=int, default=7, help="rounds")
    parser.add_argument("--corpus", type=Path, default=ICLR)
    args = parser.parse_args()
    with args.corpus.open(encoding="utf-8") as fh:
        texts = [
            latex.clean(json.loads(line)["abstract"]).text for line in itertools.islice(fh, args.n)
        ]
    nlp = Extractor().nlp
    after = nlp.pipe_names[nlp.pipe_names.index("kg_claims") :]
    with nlp.select_pipes(disable=after):
        docs = list(nlp.pipe(texts))
    detector = nlp.get_pipe("kg_claims")
    model = detector.model
    times: dict[str, list[float]] = {"model": [], "cues": []}
    for _ in range(args.r):
        for name in times:
            detector.model = model if name == "model" else None
            start = time.process_time()
            for doc in docs:
                detector(doc)
            times[name].append((time.process_time() - start) / len(docs) * 1000)
    detector.model = model
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        rounds = ", ".join(f"{v:.2f}" for v in times[name])
        print(f"{name:6s} {value:.2f} ms per abstract (rounds: {rounds})")
    print(f"model / cues: {medians['model'] / medians['cues']:.2f}")


if __name__ == "__main__":
    main()
