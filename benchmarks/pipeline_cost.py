"""CPU cost of each extraction component per abstract, and of spaCy's own
attribute ruler and lemmatizer beside the ones that replace them.

Runs every component of the extraction pipeline in turn over the first N ICLR
2026 abstracts (``../shared``; each component over all docs before the next), in
CPU time of this process (``time.process_time``), so the machine's load counts
less than in wall time. Then, on the same parsed docs and in the same run, times
the English model's ``attribute_ruler`` and ``lemmatizer`` against
``kg_attribute_ruler`` and ``kg_lemmatizer`` (``kg/extraction/attributes.py``)
and checks that they set the same attributes.

    python benchmarks/pipeline_cost.py               # 600 abstracts
    python benchmarks/pipeline_cost.py -n 200 --json cost.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
ICLR = Path("../shared/data/iclr2026_abstracts/iclr2026_accepted_abstracts.jsonl")


def _timed(docs: list, component: object) -> tuple[list, float]:
    """The docs through one component, and its CPU seconds."""
    start = time.process_time()
    pipe = getattr(component, "pipe", None)
    out = list(pipe(docs, batch_size=64)) if pipe else [component(d) for d in docs]  # type: ignore[operator]
    return out, time.process_time() - start


def _attributes(doc: object) -> list[tuple[str, str, str]]:
    return [(t.pos_, str(t.morph), t.lemma_) for t in doc]  # type: ignore[attr-defined]


def main() -> int:
    """Print ms of CPU per abstract for each component, then the side-by-side pairs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=600, help="abstracts (default 600)")
    parser.add_argument("--input", type=Path, default=ICLR, help="JSONL with an abstract field")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if not args.input.exists():
        print(f"no {args.input}: run from the repository root with ../shared beside it")
        return 2

    import spacy

    from kg.extraction.pipeline import BASE_PIPELINE, EXCLUDE, build_pipeline
    from kg.reading import latex

    nlp = build_pipeline()
    with args.input.open(encoding="utf-8") as fh:
        texts = [
            latex.clean(json.loads(line)["abstract"]).text for line in itertools.islice(fh, args.n)
        ]
    list(nlp.pipe(texts[:20]))  # warm up: first-call costs are not per-abstract costs
    per_doc: dict[str, float] = {}
    start = time.process_time()
    docs = [nlp.make_doc(t) for t in texts]
    per_doc["tokenizer"] = time.process_time() - start
    for name, component in nlp.pipeline:
        docs, spent = _timed(docs, component)
        per_doc[name] = spent
    per_doc = {k: v * 1000 / len(texts) for k, v in per_doc.items()}
    total = sum(per_doc.values())
    print(f"{len(texts)} abstracts, CPU ms per abstract")
    for name, ms in per_doc.items():
        print(f"  {name:20s} {ms:7.2f}  {ms / total:6.1%}")
    print(f"  {'total':20s} {total:7.2f}")

    english = spacy.load(BASE_PIPELINE, exclude=list(EXCLUDE))
    fresh = build_pipeline(model_dir=None, typer=None)  # a cold lemma memo, as in a new worker
    parsed = list(english.pipe(texts, disable=["attribute_ruler", "lemmatizer"]))
    pairs: dict[str, dict[str, float]] = {}
    for name in ("attribute_ruler", "lemmatizer"):
        theirs, ours = english.get_pipe(name), fresh.get_pipe(name)
        a, spent_theirs = _timed([d.copy() for d in parsed], theirs)
        b, spent_ours = _timed([d.copy() for d in parsed], ours)
        same = all(_attributes(x) == _attributes(y) for x, y in zip(a, b, strict=True))
        pairs[name] = {
            "spacy_ms": spent_theirs * 1000 / len(texts),
            "ours_ms": spent_ours * 1000 / len(texts),
            "same": same,
        }
        parsed = a  # the lemmatizer reads what the attribute ruler set
        print(
            f"{name}: spaCy {pairs[name]['spacy_ms']:.2f} ms, ours {pairs[name]['ours_ms']:.2f} ms"
            f" per abstract (×{spent_theirs / spent_ours:.1f}); same attributes: {same}"
        )
    if args.json:
        args.json.write_text(json.dumps({"abstracts": len(texts), "ms": per_doc, "pairs": pairs}))
    return 0 if all(p["same"] for p in pairs.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
