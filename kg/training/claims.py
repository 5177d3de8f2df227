"""Training the claim detector's model (``kg_claims``) on the ICLR gold (``kg train``).

Every sentence of a gold abstract is one example: its class is the kind of
the gold claim it carries (the claim whose text it overlaps most, by at least
half of that text; the guidelines copy claims from the abstract exactly), else
``O``. Its features are what the cues read in it
(:meth:`kg.extraction.claims.ClaimDetector.read`), so the pipeline runs as
extraction runs it, the typer included. The learner is the typer's
(:func:`kg.training.logistic.fit`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, cast

from kg.extraction.claims import CLAIM_CLASSES, ClaimDetector
from kg.extraction.linear_model import LinearModel
from kg.reading import latex
from kg.training.logistic import fit
from kg.training.typer import read_gold

# Chosen by 5-fold cross-validation on iclr-train (benchmarks/quality.md).
L2 = 1e-2


def sentence_classes(
    abstract: str, sentences: list[tuple[int, int]], claims: list[dict[str, Any]]
) -> list[int]:
    """Each sentence's class index in :data:`CLAIM_CLASSES`, from the gold claims.

    ``sentences`` are character spans in ``abstract``. A claim not found in the
    abstract teaches nothing.
    """
    classes = [0] * len(sentences)
    best = [0] * len(sentences)
    for claim in claims:
        start = abstract.find(claim["text"])
        if start < 0 or not claim["text"].strip():
            continue
        end = start + len(claim["text"])
        overlaps = [max(0, min(end, e) - max(start, s)) for s, e in sentences]
        n = max(range(len(sentences)), key=overlaps.__getitem__, default=None)
        if n is None or 2 * overlaps[n] < end - start or overlaps[n] <= best[n]:
            continue
        best[n] = overlaps[n]
        classes[n] = CLAIM_CLASSES.index(claim["kind"])
    return classes


def featurise(nlp: Any, rows: list[dict[str, Any]]) -> tuple[list[list[str]], list[int]]:
    """Features and gold class of every sentence of the gold abstracts.

    ``nlp`` is the extraction pipeline; everything before ``kg_claims`` runs.
    """
    detector = cast(ClaimDetector, nlp.get_pipe("kg_claims"))
    cleaned = [latex.clean(row["abstract"]) for row in rows]
    feats: list[list[str]] = []
    labels: list[int] = []
    with nlp.select_pipes(disable=["kg_claims"]):
        docs = nlp.pipe((c.text for c in cleaned), batch_size=32)
        for row, clean, doc in zip(rows, cleaned, docs, strict=True):
            readings = detector.read(doc)
            spans = [clean.to_original(r.sent.start_char, r.sent.end_char) for r in readings]
            labels += sentence_classes(row["abstract"], spans, row.get("claims", []))
            feats += [r.features for r in readings]
    return feats, labels


def train_claims(
    gold_path: str | Path,
    texts_paths: Iterable[str | Path],
    output: str | Path,
    *,
    typer: LinearModel | None | str = "shipped",
    log: Callable[[str], None] = print,
) -> LinearModel:
    """Train the claim model on a gold file and write it to ``output``.

    ``typer``: the typer the pipeline runs with (its proposals are evidence),
    as for :class:`~kg.extraction.extractor.Extractor`.
    """
    from kg.extraction.extractor import Extractor

    rows = read_gold(gold_path, texts_paths)
    feats, labels = featurise(Extractor(typer=typer).nlp, rows)
    counts = {c: labels.count(i) for i, c in enumerate(CLAIM_CLASSES)}
    log(f"{len(rows)} gold abstracts, {len(feats)} sentences: {counts}")
    model = fit(feats, labels, len(CLAIM_CLASSES), l2=L2, log=log)
    model.save(Path(output))
    log(f"claim model: {len(model.vocab)} features saved to {output}")
    return model
