"""Training the candidate typer (``kg_typer``) on the ICLR gold (``kg train``).

The gold (``../shared/gold/iclr-train.jsonl``, GUIDELINES.md format) lists
entities as strings, not offsets. Every candidate phrase the pipeline proposes
(:func:`kg.extraction.learned.candidates`) is labelled with the gold field whose
form it equals after canonical folding (case, hyphens, plural, LaTeX), else
``O``; a multinomial logistic regression over the candidates' features is then
fitted by full-batch Adam with an L2 penalty. Deterministic: no sampling, zero
initialisation. The abstracts are read from where they lie and never copied.

Silver (:data:`SILVER`): the same fields for 2,800 further ICLR abstracts,
annotated from the guidelines by three passes of model annotators, an entity
kept where two agree and the rest listed as ``uncertain`` (``silver/README.md``);
its rows carry the ids only, their texts are read from the ICLR file like the gold's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from kg import schema
from kg.extraction.canonical import canonical_key
from kg.extraction.learned import CLASSES, candidates, context, grouped
from kg.extraction.linear_model import LinearModel
from kg.reading import latex
from kg.training.logistic import fit

# The gold's entity fields are the kinds' plurals ("tasks" → Task).
_FIELD_CLASS = {k.plural: k.name for k in schema.ENTITY_TYPES}

SILVER = Path(__file__).parent / "silver" / "iclr-silver.jsonl"
# A silver candidate's weight against a gold one's. On iclr-dev 1.0 beat 0.5:
# the annotators agree with the gold nearly as well as its own do (0.904, 0.92).
SILVER_WEIGHT = 1.0


def read_gold(gold_path: str | Path, texts_paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Gold rows with their abstract (joined by ``id`` / ``forum_id`` from ``texts_paths``)."""
    texts_paths = list(texts_paths)
    return _with_abstracts(gold_path, read_texts(texts_paths), texts_paths)


def read_texts(texts_paths: Iterable[str | Path]) -> dict[str, str]:
    """Abstracts by ``forum_id`` (else ``id``) from JSONL files."""
    texts: dict[str, str] = {}
    for path in texts_paths:
        with Path(path).open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    obj = json.loads(line)
                    texts[obj.get("forum_id") or obj["id"]] = obj["abstract"]
    return texts


def _with_abstracts(
    gold_path: str | Path, texts: dict[str, str], texts_paths: list[str | Path]
) -> list[dict[str, Any]]:
    rows = []
    with Path(gold_path).open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            if row["id"] not in texts:
                raise KeyError(f"no abstract for gold paper {row['id']} in {texts_paths}")
            row["abstract"] = texts[row["id"]]
            rows.append(row)
    return rows


def gold_classes(row: dict[str, Any]) -> dict[str, str]:
    """Canonical key of every gold form → its class (the paper's own proposals first)."""
    out: dict[str, str] = {}
    for prop in row.get("proposed", []):
        for form in (prop.get("name"), prop.get("long_form"), *prop.get("alt_forms", [])):
            if form:
                out.setdefault(canonical_key(form), "Proposed")
    for field, cls in _FIELD_CLASS.items():
        for forms in row.get(field, []):
            for form in forms:
                out.setdefault(canonical_key(form), cls)
    out.pop("", None)
    return out


def featurise_each(
    nlp: Any, rows: list[dict[str, Any]], *, n_process: int = 1
) -> Iterator[tuple[list[list[str]], list[int]]]:
    """Per gold abstract, the features and gold class index of each of its candidates.

    ``nlp`` is the extraction pipeline; it runs up to (not including) the typer,
    over all the rows in one batched ``pipe`` (in ``n_process`` processes: the
    docs, and so the features, are the same).
    """
    texts = (latex.clean(row["abstract"]).text for row in rows)
    with nlp.select_pipes(disable=[p for p in ("kg_typer", "kg_claims") if p in nlp.pipe_names]):
        docs = nlp.pipe(texts, n_process=n_process, batch_size=32)
        for row, doc in zip(rows, docs, strict=True):
            gold = gold_classes(row)
            unsure = {canonical_key(form) for form in row.get("uncertain", [])}
            ctx = context(doc)
            feats: list[list[str]] = []
            labels: list[int] = []
            for members, feat in grouped(candidates(doc, ctx), ctx):
                key = canonical_key(members[0].text)
                # What the annotators disagreed on is taught neither way.
                if key in unsure and key not in gold:
                    continue
                feats.append(feat)
                labels.append(CLASSES.index(gold.get(key, "O")))
            yield feats, labels


def featurise(nlp: Any, rows: list[dict[str, Any]]) -> tuple[list[list[str]], list[int]]:
    """Features and gold class index of every candidate in the gold abstracts."""
    feats: list[list[str]] = []
    labels: list[int] = []
    for f, y in featurise_each(nlp, rows):
        feats += f
        labels += y
    return feats, labels


def train_typer(
    gold_path: str | Path,
    texts_paths: Iterable[str | Path],
    output: str | Path,
    *,
    silver_paths: Iterable[str | Path] = (),
    silver_weight: float = SILVER_WEIGHT,
    model_dir: Path | None = None,
    n_process: int = 1,
    log: Callable[[str], None] = print,
) -> LinearModel:
    """Train the typer on a gold file (and silver ones) and write it to ``output``.

    ``silver_paths``: further annotations in the gold's format whose candidates
    weigh ``silver_weight``; a paper in the gold is taken from the gold only.
    ``n_process``: processes that parse the abstracts (same features for any).
    ``model_dir``: a recogniser whose spans become candidates and features, for a
    typer to run with it (default: none, as the shipped pipeline runs).
    """
    from kg.extraction.extractor import Extractor

    # The ICLR file is read once for the gold and every silver file.
    texts_paths = list(texts_paths)
    texts = read_texts(texts_paths)
    rows = _with_abstracts(gold_path, texts, texts_paths)
    gold_ids = {row["id"] for row in rows}
    silver = [
        row
        for path in silver_paths
        for row in _with_abstracts(path, texts, texts_paths)
        if row["id"] not in gold_ids
    ]
    nlp = Extractor(typer=None, model_dir=model_dir).nlp
    # One pass over gold and silver: the pipeline batches, and the split is by count.
    feats: list[list[str]] = []
    labels: list[int] = []
    weights: list[float] = []
    for n, (f, y) in enumerate(featurise_each(nlp, rows + silver, n_process=n_process)):
        feats += f
        labels += y
        weights += [1.0 if n < len(rows) else silver_weight] * len(f)
    counts = {c: labels.count(i) for i, c in enumerate(CLASSES)}
    log(
        f"{len(rows)} gold and {len(silver)} silver abstracts, "
        f"{len(feats)} candidate phrases: {counts}"
    )
    model = fit(feats, labels, len(CLASSES), entity_weight=2.0, weights=weights, log=log)
    model.save(Path(output))
    log(f"typer: {len(model.vocab)} features saved to {output}")
    return model
