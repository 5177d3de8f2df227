"""Training the candidate typer (``kg_typer``) on the ICLR gold (``kg train``).

The gold (``../shared/gold/iclr-train.jsonl``, GUIDELINES.md format) lists
entities as strings, not offsets. Every candidate phrase the pipeline proposes
(:func:`kg.extraction.learned.candidates`) is labelled with the gold field whose
form it equals after canonical folding (case, hyphens, plural, LaTeX), else
``O``; a multinomial logistic regression over the candidates' features is then
fitted by full-batch Adam with an L2 penalty. Deterministic: no sampling, zero
initialisation. The abstracts are read from where they lie and never copied.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from kg import schema
from kg.extraction.canonical import canonical_key
from kg.extraction.learned import CLASSES, TyperModel, candidates, context, grouped
from kg.reading import latex

# The gold's entity fields are the kinds' plurals ("tasks" → Task).
_FIELD_CLASS = {k.plural: k.name for k in schema.ENTITY_TYPES}


def read_gold(gold_path: str | Path, texts_paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Gold rows with their abstract (joined by ``id`` / ``forum_id`` from ``texts_paths``)."""
    texts: dict[str, str] = {}
    for path in texts_paths:
        with Path(path).open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    obj = json.loads(line)
                    texts[obj.get("forum_id") or obj["id"]] = obj["abstract"]
    rows = []
    with Path(gold_path).open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            if row["id"] not in texts:
                raise KeyError(f"no abstract for gold paper {row['id']} in {list(texts_paths)}")
            row["abstract"] = texts[row["id"]]
            rows.append(row)
    return rows


def gold_classes(row: dict[str, Any]) -> dict[str, str]:
    """Canonical key of every gold form → its class (the paper's own proposals first)."""
    out: dict[str, str] = {}
    for prop in row.get("proposed", []):
        for form in (prop.get("name"), prop.get("long_form")):
            if form:
                out.setdefault(canonical_key(form), "Proposed")
    for field, cls in _FIELD_CLASS.items():
        for forms in row.get(field, []):
            for form in forms:
                out.setdefault(canonical_key(form), cls)
    out.pop("", None)
    return out


def featurise(nlp: Any, rows: list[dict[str, Any]]) -> tuple[list[list[str]], list[int]]:
    """Features and gold class index of every candidate in the gold abstracts.

    ``nlp`` is the extraction pipeline; it runs up to (not including) the typer.
    """
    feats: list[list[str]] = []
    labels: list[int] = []
    texts = (latex.clean(row["abstract"]).text for row in rows)
    with nlp.select_pipes(disable=[p for p in ("kg_typer", "kg_claims") if p in nlp.pipe_names]):
        for row, doc in zip(rows, nlp.pipe(texts), strict=True):
            gold = gold_classes(row)
            ctx = context(doc)
            for members, row in grouped(candidates(doc, ctx), ctx):
                feats.append(row)
                labels.append(CLASSES.index(gold.get(canonical_key(members[0].text), "O")))
    return feats, labels


def fit(
    feats: list[list[str]],
    labels: list[int],
    *,
    l2: float = 1e-4,
    steps: int = 300,
    learn_rate: float = 0.1,
    min_count: int = 2,
    entity_weight: float = 2.0,
    log: Callable[[str], None] = print,
) -> TyperModel:
    """Fit the logistic regression (full-batch Adam); features seen < ``min_count`` dropped.

    ``entity_weight`` weighs the examples of every class but ``O`` (entities are
    rare among candidates; the scorer weighs recall as much as precision).
    """
    counts: dict[str, int] = {}
    for row in feats:
        for x in set(row):
            counts[x] = counts.get(x, 0) + 1
    vocab = {x: i for i, x in enumerate(sorted(x for x, n in counts.items() if n >= min_count))}
    rows, cols = [], []
    for n, row in enumerate(feats):
        for x in set(row):
            if x in vocab:
                rows.append(n)
                cols.append(vocab[x])
    r, c = np.array(rows), np.array(cols)
    y = np.array(labels)
    n_ex, n_cls = len(feats), len(CLASSES)
    onehot = np.zeros((n_ex, n_cls), dtype=np.float64)
    onehot[np.arange(n_ex), y] = 1.0
    sample_weight = np.where(y == 0, 1.0, entity_weight)
    w = np.zeros((len(vocab), n_cls))
    m, v = np.zeros_like(w), np.zeros_like(w)
    for step in range(1, steps + 1):
        # X @ w and X.T @ d of the sparse binary X, one bincount per class: the same
        # sums as np.add.at, about twice as fast.
        wc = w[c]
        scores = np.stack(
            [np.bincount(r, weights=wc[:, k], minlength=n_ex) for k in range(n_cls)], axis=1
        )
        scores -= scores.max(axis=1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=1, keepdims=True)
        d = (p - onehot) * sample_weight[:, None] / n_ex
        dr = d[r]
        grad = np.stack(
            [np.bincount(c, weights=dr[:, k], minlength=len(vocab)) for k in range(n_cls)], axis=1
        )
        grad += l2 * w
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        w -= learn_rate * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
        if step % 50 == 0 or step == steps:
            loss = -np.log(p[np.arange(n_ex), y] + 1e-12).mean()
            log(f"step {step:4d} loss {loss:.4f}")
    return TyperModel(vocab, w.astype(np.float32))


def train_typer(
    gold_path: str | Path,
    texts_paths: Iterable[str | Path],
    output: str | Path,
    *,
    model_dir: Path | None = None,
    log: Callable[[str], None] = print,
) -> TyperModel:
    """Train the typer on a gold file and write it to ``output`` (``kg train``).

    ``model_dir``: a recogniser whose spans become candidates and features, for a
    typer to run with it (default: none, as the shipped pipeline runs).
    """
    from kg.extraction.extractor import Extractor

    rows = read_gold(gold_path, texts_paths)
    nlp = Extractor(typer=None, model_dir=model_dir).nlp
    feats, labels = featurise(nlp, rows)
    counts = {c: labels.count(i) for i, c in enumerate(CLASSES)}
    log(f"{len(rows)} gold abstracts, {len(feats)} candidate phrases: {counts}")
    model = fit(feats, labels, log=log)
    model.save(Path(output))
    log(f"typer: {len(model.vocab)} features saved to {output}")
    return model
