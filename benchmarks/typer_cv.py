"""Five-fold cross-validation of the typer on iclr-train, and its iclr-dev score.

For each fold (abstracts by index mod 5) the typer is refitted on the other four
folds exactly as ``kg train`` fits it, and the whole extractor with that typer
extracts the held-out abstracts; then a typer fitted on all of iclr-train does
iclr-dev. Both are scored with ``../shared/tools/score_extraction.py``'s own
functions (lenient F1 per field, the claim spans, their mean), so a change to
any component can be judged on 120 held-out abstracts and not only on 40:

    python benchmarks/typer_cv.py              # CV and dev macro, per field
    python benchmarks/typer_cv.py --model-dir kg-recogniser   # with a recogniser

The CV figure is the mean over folds of each field's F1, so it differs a little
from one pooled score; compare it only with itself.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
ICLR = SHARED / "data" / "iclr2026_abstracts" / "iclr2026_accepted_abstracts.jsonl"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(SHARED / "tools"))


def score(rows: list[dict[str, Any]], preds: list[dict[str, Any]]) -> dict[str, float]:
    """Lenient F1 per field and the claims' F1, as the scorer computes them."""
    import score_extraction as se

    by_text = {se.key(p["abstract"]): p for p in preds}
    totals = {f: [0, 0, 0] for f in se.FIELDS}
    claims = [0, 0, 0]
    for gold in rows:
        pred = by_text.get(se.key(gold["abstract"]), {})
        for f in se.FIELDS:
            g, p = se.gold_forms(gold, f), se.pred_forms(pred, f)
            totals[f][0] += se.match(p, g, True)
            totals[f][1] += len(p)
            totals[f][2] += len(g)
        pc = pred.get("claims", []) or []
        claims[0] += se.claim_match(pc, gold.get("claims", []))
        claims[1] += len(pc)
        claims[2] += len(gold.get("claims", []))
    out = {f: se.prf(*totals[f])[2] for f in se.FIELDS}
    out["claims"] = se.prf(*claims)[2]
    return out


def main() -> int:
    """Print the CV and dev scores per field and their macro."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model-dir",
        help="a recogniser (kg train --scierc-dir) to add: its spans become the typer's "
        "candidates and features (default: none, as shipped)",
    )
    args = parser.parse_args()
    if not ICLR.exists():
        print(f"no {ICLR}: needs ../shared beside the checkout")
        return 2

    from kg.extraction.extractor import Extractor
    from kg.reading.readers import read_paths
    from kg.training import typer as training

    titles = {}
    with ICLR.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            titles[row["forum_id"]] = row["title"]
    train = training.read_gold(SHARED / "gold" / "iclr-train.jsonl", [ICLR])
    dev = training.read_gold(SHARED / "gold" / "iclr-dev.jsonl", [ICLR])
    model_dir = Path(args.model_dir) if args.model_dir else None
    nlp = Extractor(typer=None, model_dir=model_dir).nlp

    def fit(examples: list[tuple[list[list[str]], list[int]]], keep: list[int]) -> Any:
        feats = [f for i in keep for f in examples[i][0]]
        labels = [y for i in keep for y in examples[i][1]]
        return training.fit(feats, labels, log=lambda _: None)

    def evaluate(model: Any, rows: list[dict[str, Any]]) -> dict[str, float]:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "records.jsonl"
            path.write_text(
                "".join(
                    json.dumps(
                        {"id": r["id"], "title": titles.get(r["id"], ""), "abstract": r["abstract"]}
                    )
                    + "\n"
                    for r in rows
                ),
                "utf-8",
            )
            records = [r for r in read_paths([str(path)]) if hasattr(r, "abstract")]
            preds = [
                p.to_json() for p in Extractor(typer=model, model_dir=model_dir).extract(records)
            ]
        return score(rows, preds)

    # kg train's own features, kept per abstract so that folds can be cut
    examples = list(training.featurise_each(nlp, train))
    folds = []
    for k in range(5):
        keep = [i for i in range(len(train)) if i % 5 != k]
        held = [train[i] for i in range(len(train)) if i % 5 == k]
        folds.append(evaluate(fit(examples, keep), held))
    cv = {f: statistics.mean(s[f] for s in folds) for f in folds[0]}
    on_dev = evaluate(fit(examples, list(range(len(train)))), dev)
    print("set | " + " | ".join(cv) + " | macro")
    for name, scores in (("iclr-train 5-fold CV", cv), ("iclr-dev", on_dev)):
        cells = " | ".join(f"{v:.3f}" for v in scores.values())
        print(f"{name} | {cells} | {statistics.mean(scores.values()):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
