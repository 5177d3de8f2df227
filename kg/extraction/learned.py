"""The ``kg_typer`` component: which candidate phrases are tasks, methods, datasets, metrics.

Candidates come from every source of evidence the pipeline has (the recogniser's
spans, noun chunks and their head-final parts, lexicon matches, acronym
definitions, runs of name-like tokens, the proposal rules); a linear model over
features of the phrase and its context (words, head, shape, the recogniser's
label, the lexicon's type, the governing verb and preposition, how often the
phrase recurs) decides for each whether it is a Task, Method, Dataset, Metric,
the paper's own Proposed method, or nothing. The weights are learned from the
ICLR gold (``kg train``, see :mod:`kg.training.typer`); the guidelines' span
conventions and what counts as a dataset or metric come from the data, not rules.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from spacy.tokens import Doc, Span

from kg import schema
from kg.extraction.canonical import canonical_key, expand_acronym, is_acronym, word_list
from kg.extraction.spans import head_token, name_run, trim_span

# O, the entity types in kg.schema's order, and the paper's own proposals; the
# order is the weight matrix's column order.
CLASSES = ("O", *(k.name for k in schema.ENTITY_TYPES), "Proposed")
MAX_TOKENS = 10
TYPER_DIR = Path(__file__).resolve().parent / "typer"
# Phrases led by a judgement ("high computational cost", "poor accuracy") state a
# result, not a measure: the measure is the rest of the phrase, its own candidate.
EVALUATIVE = word_list("evaluative_modifiers")
# Model families: a model is used or compared against, never a dataset ("Qwen2.5-7B").
MODEL_FAMILIES = frozenset(w.lower() for w in word_list("model_families"))
_FAMILY = re.compile(r"[A-Za-z]+|[A-Za-z][A-Za-z0-9.]*")
_MODEL_SIZE = re.compile(r"^\d+(?:\.\d+)?[BM]$")
_PROPOSE_LEMMAS = frozenset(
    [
        *("propose", "introduce", "present", "develop", "design", "build"),
        *("construct", "release", "call", "name", "dub"),
    ]
)


@dataclass
class _Context:
    """Per-doc evidence that candidate features look up."""

    ner: dict[tuple[int, int], str]
    ner_tokens: dict[int, str]
    lexicon: dict[tuple[int, int], str]
    abbr_long: set[tuple[int, int]]
    abbr_short: set[tuple[int, int]]
    proposed: set[tuple[int, int]]
    proposed_tokens: set[int]
    counts: dict[str, int]
    chunks: set[tuple[int, int]]
    sent_index: dict[int, int]
    sent_flags: list[list[str]]
    text: str
    rules: dict[tuple[int, int], str]
    rule_tokens: dict[int, str]


def context(doc: Doc) -> _Context:
    """Collect the evidence of the upstream components for one doc."""
    ner = {(e.start, e.end): e.label_ for e in doc.ents}
    ner_tokens = {i: e.label_ for e in doc.ents for i in range(e.start, e.end)}
    lexicon = {(s.start, s.end): s.label_ for s in doc.spans.get("kg_lexicon", [])}
    abbrs = doc._.kg_abbreviations or []
    proposed = {(s.start, s.end) for s in doc.spans.get("kg_proposed", [])}
    sent_index = {}
    sent_flags = []
    for n, sent in enumerate(doc.sents):
        for i in range(sent.start, sent.end):
            sent_index[i] = n
        flags = []
        if any(t.lemma_ in _PROPOSE_LEMMAS and t.pos_ == "VERB" for t in sent):
            flags.append("propose_sent")
        if any(t.lower_ in ("we", "our") for t in sent):
            flags.append("we_sent")
        sent_flags.append(flags)
    counts: dict[str, int] = {}
    for tok in doc:
        counts[tok.lower_] = counts.get(tok.lower_, 0) + 1
    return _Context(
        ner=ner,
        ner_tokens=ner_tokens,
        lexicon=lexicon,
        abbr_long={(a, b) for a, b, _, _ in abbrs},
        abbr_short={(c, d) for _, _, c, d in abbrs},
        proposed=proposed,
        proposed_tokens={i for a, b in proposed for i in range(a, b)},
        counts=counts,
        chunks=set(),
        sent_index=sent_index,
        sent_flags=sent_flags,
        text=doc.text,  # Doc.text joins every token on each access
        rules={(s.start, s.end): s.label_ for s in doc.spans.get("kg_entities", [])},
        rule_tokens={
            i: s.label_ for s in doc.spans.get("kg_entities", []) for i in range(s.start, s.end)
        },
    )


def candidates(doc: Doc, ctx: _Context) -> list[Span]:
    """Every phrase that might be an entity, de-duplicated by token offsets."""
    found: set[tuple[int, int]] = set()

    def add(span: Span | None, whole: bool = True) -> None:
        trimmed = trim_span(span) if span is not None else None
        if trimmed is not None and len(trimmed) <= MAX_TOKENS:
            found.add((trimmed.start, trimmed.end))

    for ent in doc.ents:
        add(ent)
    for chunk in doc.noun_chunks:
        trimmed = trim_span(chunk)
        if trimmed is None:
            continue
        ctx.chunks.add((trimmed.start, trimmed.end))
        for i in range(trimmed.start, trimmed.end):
            add(doc[i : trimmed.end])
    for start, end in [*ctx.lexicon, *ctx.abbr_long, *ctx.abbr_short, *ctx.proposed]:
        add(doc[start:end])
    for sent in doc.sents:
        i = sent.start
        while i < sent.end:
            run = name_run(doc[i : sent.end])
            if run is None:
                break
            add(run)
            i = run.end
    return [doc[a:b] for a, b in sorted(found) if any(c.isalpha() for c in doc[a:b].text)]


def _shape(text: str) -> str:
    out = []
    for ch in text:
        c = "X" if ch.isupper() else "x" if ch.isalpha() else "d" if ch.isdigit() else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)[:6]


def features(span: Span, ctx: _Context) -> list[str]:
    """The features of one candidate phrase in its context."""
    doc = span.doc
    head = head_token(span)
    first = span[0]
    key = (span.start, span.end)
    f = [
        "bias",
        f"h={head.lower_}",
        f"hl={head.lemma_.lower()}",
        f"hs={head.lower_[-3:]}",
        f"first={first.lower_}",
        f"len={min(len(span), 6)}",
        f"pos={'_'.join(t.pos_ for t in span[:4])}",
        f"hshape={_shape(head.text)}",
        f"fshape={_shape(first.text)}",
        f"dep={head.dep_}",
        f"gov={head.head.lemma_.lower()}",
        f"govdep={head.head.dep_}_{head.dep_}",
        f"sent={min(ctx.sent_index.get(span.start, 0), 6)}",
        f"count={min(ctx.counts.get(head.lower_, 0), 4)}",
    ]
    f += [f"w={t.lower_}" for t in span if not t.is_punct]
    if head.head.pos_ == "ADP":
        f.append(f"prep={head.head.lower_}")
        f.append(f"prepgov={head.head.lower_}_{head.head.head.lemma_.lower()}")
    for off, name in ((-1, "p1"), (-2, "p2"), (0, "n1"), (1, "n2")):
        i = span.start + off if off < 0 else span.end + off
        tok = doc[i] if 0 <= i < len(doc) else None
        f.append(f"{name}={tok.lower_ if tok is not None else '#'}")
    if any(is_acronym(t.text) for t in span):
        f.append("acronym")
    if any(c.isdigit() for c in span.text):
        f.append("digit")
    if any(t.text[:1].isupper() and not t.is_sent_start for t in span):
        f.append("capital")
    if key in ctx.ner:
        f.append(f"ner={ctx.ner[key]}")
    labels = {ctx.ner_tokens.get(i) for i in range(span.start, span.end)}
    f += [f"nertok={label}" for label in labels if label]
    if key in ctx.lexicon:
        f.append(f"lex={ctx.lexicon[key]}")
    if key in ctx.abbr_long:
        f.append("abbr_long")
    if key in ctx.abbr_short:
        f.append("abbr_short")
    if span.end < len(doc) and doc[span.end].text == "(":
        f.append("before_bracket")
    if key in ctx.proposed:
        f.append("proposed_rule")
    elif any(i in ctx.proposed_tokens for i in range(span.start, span.end)):
        f.append("proposed_overlap")
    if key in ctx.chunks:
        f.append("chunk")
    if key in ctx.rules:
        f.append(f"rule={ctx.rules[key]}")
        f.append(f"rule={ctx.rules[key]}_cap={'capital' in f}")
    f += [
        f"ruletok={x}" for x in {ctx.rule_tokens.get(i) for i in range(span.start, span.end)} if x
    ]
    if len(span) == 1 and expand_acronym(span.text):
        f.append("known_acronym")
    prep = f"prep={head.head.lower_}" if head.head.pos_ == "ADP" else "prep=#"
    f.append(f"{prep}_cap={'capital' in f}_digit={'digit' in f}")
    f.append(f"h={head.lower_}_len={min(len(span), 3)}")
    if ctx.text.count(span.text) > 1:
        f.append("repeated")
    # Sentence-level flags are computed once per doc: span.sent walks the doc each time.
    f += ctx.sent_flags[ctx.sent_index.get(span.start, 0)] if ctx.sent_flags else []
    return f


def grouped(spans: list[Span], ctx: _Context) -> list[tuple[list[Span], list[str]]]:
    """Candidates grouped by canonical key: one decision per phrase per paper.

    The features of a group are the union of its mentions' features, so that "RL"
    mentioned six times is one example with the evidence of all six contexts.
    """
    by_key: dict[str, tuple[list[Span], set[str]]] = {}
    for span in spans:
        key = canonical_key(span.text)
        if not key:
            continue
        members, feats = by_key.setdefault(key, ([], set()))
        members.append(span)
        feats.update(features(span, ctx))
    out = []
    for members, feats in by_key.values():
        feats.add(f"mentions={min(len(members), 4)}")
        out.append((members, sorted(feats)))
    return out


def evaluative(span: Span) -> bool:
    """Whether a phrase starts with a judgement word ("high accuracy")."""
    return len(span) > 1 and span[0].lower_ in EVALUATIVE and bool(span[0].whitespace_)


def is_model_name(span: Span) -> bool:
    """Whether a phrase names a model: a known family ("Qwen2.5-7B") or a size ("-7B")."""
    text = span.text
    if text.lower() in MODEL_FAMILIES:
        return True
    first = span[0].text
    prefixes = {
        m.group(0).lower() for m in (_FAMILY.match(first), re.match(r"[A-Za-z0-9.]+", first)) if m
    }
    prefixes |= {p.rstrip(".").lower() for p in prefixes}
    if prefixes & MODEL_FAMILIES:
        return True
    return any(_MODEL_SIZE.match(part) for t in span for part in t.text.split("-"))


class TyperModel:
    """A multinomial logistic regression over sparse binary features."""

    def __init__(self, vocab: dict[str, int], weights: np.ndarray) -> None:
        self.vocab = vocab
        self.weights = weights

    @classmethod
    def load(cls, path: Path = TYPER_DIR) -> TyperModel:
        """Read ``features.json`` and ``weights.npz`` from ``path``."""
        vocab = json.loads((path / "features.json").read_text("utf-8"))
        with np.load(path / "weights.npz") as arrays:
            weights = arrays["sparse"].astype(np.float32)
        return cls(vocab, weights)

    def save(self, path: Path) -> None:
        """Write the model as a feature list (JSON) and a float16 weight matrix."""
        path.mkdir(parents=True, exist_ok=True)
        (path / "features.json").write_text(json.dumps(self.vocab), "utf-8")
        np.savez_compressed(path / "weights.npz", sparse=self.weights.astype(np.float16))

    def probabilities(self, rows: list[list[str]]) -> np.ndarray:
        """Class probabilities (in ``CLASSES`` order) for each feature row."""
        scores = np.zeros((len(rows), self.weights.shape[1]), dtype=np.float32)
        for n, row in enumerate(rows):
            idx = [self.vocab[x] for x in row if x in self.vocab]
            if idx:
                scores[n] = self.weights[idx].sum(axis=0)
        scores -= scores.max(axis=1, keepdims=True)
        exp = np.exp(scores)
        return exp / exp.sum(axis=1, keepdims=True)


class CandidateTyper:
    """Type candidate phrases with the learned model; keep the best non-overlapping ones."""

    def __init__(
        self,
        name: str,
        *,
        model: TyperModel | None,
        threshold: float,
        scale: dict[str, float] | None = None,
        proposals: str = "rules",
        proposed_threshold: float = 0.5,
        keep_lexicon: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.model = model
        self.threshold = threshold
        self.scale = scale or {}
        # "rules": the proposal rules decide what the paper introduces, the model only
        # types the rest; "union": the model's Proposed spans are added to the rules'.
        self.proposals = proposals
        self.proposed_threshold = proposed_threshold
        # Lexicon types whose matches are entities whatever the model says: a named
        # dataset ("CIFAR-10") is one in every abstract that mentions it.
        self.keep_lexicon = keep_lexicon

    def __call__(self, doc: Doc) -> Doc:
        if self.model is None or not doc.has_annotation("DEP"):
            return doc
        ctx = context(doc)
        spans = candidates(doc, ctx)
        if not spans:
            doc.spans["kg_entities"], doc.spans["kg_proposed"] = [], []
            return doc
        groups = grouped(spans, ctx)
        probs = self.model.probabilities([feats for _, feats in groups])
        probs = probs * np.array([self.scale.get(c, 1.0) for c in CLASSES], dtype=np.float32)
        probs /= probs.sum(axis=1, keepdims=True)
        scored = []
        for (members, _), p in zip(groups, probs, strict=True):
            best = int(p[1:].argmax()) + 1
            label = CLASSES[best]
            if evaluative(members[0]):
                continue
            if label == "Dataset" and is_model_name(members[0]):
                label = "Method"
            if label == "Proposed" and (
                self.proposals == "rules" or p[best] < self.proposed_threshold
            ):
                label = "Method"
            if 1.0 - p[0] >= self.threshold:
                scored += [(1.0 - float(p[0]), span, label) for span in members]
            else:
                scored += [
                    (0.0, span, ctx.lexicon[(span.start, span.end)])
                    for span in members
                    if ctx.lexicon.get((span.start, span.end)) in self.keep_lexicon
                ]
        scored.sort(key=lambda x: (-x[0], x[1].start))
        taken: list[Span] = []
        if self.proposals in ("rules", "union"):
            taken = [
                Span(doc, s.start, s.end, label="Proposed")
                for s in doc.spans.get("kg_proposed", [])
            ]
        for _, span, label in scored:
            if all(span.end <= t.start or span.start >= t.end for t in taken):
                kind = "Method" if label == "Proposed" else label
                source = "proposed" if label == "Proposed" else "typer"
                taken.append(Span(doc, span.start, span.end, label=kind, kb_id=source))
        taken = [
            Span(doc, s.start, s.end, label="Method", kb_id="proposed")
            if s.label_ == "Proposed"
            else s
            for s in sorted(taken, key=lambda s: s.start)
        ]
        doc.spans["kg_entities"] = [s for s in taken if s.kb_id_ != "proposed"]
        doc.spans["kg_proposed"] = [s for s in taken if s.kb_id_ == "proposed"]
        return doc


def candidate_key(span: Span) -> str:
    """The canonical key of a candidate (for matching against gold)."""
    return canonical_key(span.text)
