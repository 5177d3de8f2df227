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

import re
from dataclasses import dataclass, field

import numpy as np
from spacy.tokens import Doc, Span

from kg import schema
from kg.extraction.canonical import canonical_key, expand_acronym, is_acronym, word_list
from kg.extraction.linear_model import LinearModel
from kg.extraction.spans import (
    CLAUSE_DASHES,
    ENUMERATOR,
    LEADING_DROP,
    TRAILING_DROP,
    doc_text,
    has_letter,
    is_name_word,
    name_run,
)

# O, the entity types in kg.schema's order, and the paper's own proposals; the
# order is the weight matrix's column order.
CLASSES = ("O", *(k.name for k in schema.ENTITY_TYPES), "Proposed")
MAX_TOKENS = 10
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
# The corpus feature of a phrase the unlabelled corpus never showed as a candidate.
_UNSEEN = ("corpus=unseen",)


@dataclass
class _Context:
    """Per-doc evidence that candidate features look up.

    Token attributes are read once into lists: indexing a ``Doc`` builds a
    ``Token`` object each time, which was most of the typer's cost.
    """

    ner: dict[tuple[int, int], str]
    ner_tokens: dict[int, str]
    lexicon: dict[tuple[int, int], str]
    abbr_long: set[tuple[int, int]]
    abbr_short: set[tuple[int, int]]
    proposed: set[tuple[int, int]]
    proposed_tokens: set[int]
    counts: dict[str, int]
    chunks: set[tuple[int, int]]
    sent_index: list[int]
    sent_flags: list[list[str]]
    text: str
    rules: dict[tuple[int, int], str]
    rule_tokens: dict[int, str]
    words: list[str] = field(default_factory=list)
    lower: list[str] = field(default_factory=list)
    lemma: list[str] = field(default_factory=list)
    pos: list[str] = field(default_factory=list)
    dep: list[str] = field(default_factory=list)
    head: list[int] = field(default_factory=list)
    punct: list[bool] = field(default_factory=list)
    sent_start: list[bool] = field(default_factory=list)
    acronym: list[bool] = field(default_factory=list)
    digit: list[bool] = field(default_factory=list)
    alpha: list[bool] = field(default_factory=list)
    drop_lead: list[bool] = field(default_factory=list)
    drop_trail: list[bool] = field(default_factory=list)
    idx: list[int] = field(default_factory=list)
    named: list[bool] = field(default_factory=list)
    keys: dict[str, str] = field(default_factory=dict)
    word_feature: list[str] = field(default_factory=list)
    by_head: dict[int, list[str]] = field(default_factory=dict)
    by_start: dict[int, list[str]] = field(default_factory=dict)
    by_end: dict[int, list[str]] = field(default_factory=dict)


def context(doc: Doc) -> _Context:
    """Collect the evidence of the upstream components for one doc."""
    ner = {(e.start, e.end): e.label_ for e in doc.ents}
    ner_tokens = {i: e.label_ for e in doc.ents for i in range(e.start, e.end)}
    lexicon = {(s.start, s.end): s.label_ for s in doc.spans.get("kg_lexicon", [])}
    abbrs = doc._.kg_abbreviations or []
    proposed = {(s.start, s.end) for s in doc.spans.get("kg_proposed", [])}
    sent_index = [0] * len(doc)
    sent_flags = []
    propose_verbs = set()
    ctx = _Context(
        ner=ner,
        ner_tokens=ner_tokens,
        lexicon=lexicon,
        abbr_long={(a, b) for a, b, _, _ in abbrs},
        abbr_short={(c, d) for _, _, c, d in abbrs},
        proposed=proposed,
        proposed_tokens={i for a, b in proposed for i in range(a, b)},
        counts={},
        chunks=set(),
        sent_index=sent_index,
        sent_flags=sent_flags,
        text=doc_text(doc),
        rules={(s.start, s.end): s.label_ for s in doc.spans.get("kg_entities", [])},
        rule_tokens={
            i: s.label_ for s in doc.spans.get("kg_entities", []) for i in range(s.start, s.end)
        },
    )
    heads = doc.to_array("HEAD").astype("int64") + np.arange(len(doc))
    ctx.head = heads.tolist()
    for tok in doc:
        text, low, tag, lemma, pos = tok.text, tok.lower_, tok.tag_, tok.lemma_, tok.pos_
        ctx.words.append(text)
        ctx.lower.append(low)
        ctx.word_feature.append("w=" + low)
        ctx.lemma.append(lemma.lower())
        ctx.pos.append(pos)
        ctx.dep.append(tok.dep_)
        ctx.punct.append(tok.is_punct)
        starts = bool(tok.is_sent_start)
        ctx.sent_start.append(starts)
        ctx.named.append(is_name_word(text, starts, pos))
        plain = text.isalpha()
        # is_acronym needs an upper-case letter after the first character.
        ctx.acronym.append(text[1:].lower() != text[1:] and is_acronym(text))
        ctx.digit.append(not plain and any(c.isdigit() for c in text))
        ctx.alpha.append(plain or has_letter(text))
        ctx.idx.append(tok.idx)
        if lemma in _PROPOSE_LEMMAS and pos == "VERB":
            propose_verbs.add(tok.i)
        ctx.counts[low] = ctx.counts.get(low, 0) + 1
        # The conditions of spans.trim_span, per token.
        ctx.drop_lead.append(
            low in LEADING_DROP
            or tok.is_punct
            or tok.is_space
            or bool(ENUMERATOR.match(text))
            or ctx.pos[-1] in ("NUM", "ADV")
            or not ctx.alpha[-1]
            or tag in ("POS", "JJR", "JJS", "RBR", "RBS")
        )
        ctx.drop_trail.append(text in TRAILING_DROP or tok.is_space)
    for n, sent in enumerate(doc.sents):
        a, b = sent.start, sent.end
        sent_index[a:b] = [n] * (b - a)
        flags = []
        if any(a <= i < b for i in propose_verbs):
            flags.append("propose_sent")
        if any(w in ("we", "our") for w in ctx.lower[a:b]):
            flags.append("we_sent")
        sent_flags.append(flags)
    return ctx


def _trim(start: int, end: int, ctx: _Context) -> tuple[int, int] | None:
    """:func:`kg.extraction.spans.trim_span` on token offsets, from the context's lists."""
    while start < end and ctx.drop_lead[start]:
        start += 1
    while end > start and ctx.drop_trail[end - 1]:
        end -= 1
    words = ctx.words
    if sum(w.count("(") for w in words[start:end]) != sum(w.count(")") for w in words[start:end]):
        while end > start and words[end - 1] != "(" and any("(" in w for w in words[start:end]):
            end -= 1
        if end > start and words[end - 1] == "(":
            end -= 1
    return (start, end) if end > start else None


def candidates(doc: Doc, ctx: _Context) -> list[Span]:
    """Every phrase that might be an entity, de-duplicated by token offsets."""
    found: set[tuple[int, int]] = set()

    def add(start: int, end: int) -> None:
        trimmed = _trim(start, end, ctx)
        if trimmed is None:
            return
        a, b = trimmed
        dash = next((i for i in range(a, b) if ctx.words[i] in CLAUSE_DASHES), None)
        if dash is not None:
            # An em dash sets off a clause: the words either side are two phrases
            # ("reasoning—reinforcement learning"), never one.
            add(a, dash)
            add(dash + 1, b)
        elif b - a <= MAX_TOKENS:
            found.add(trimmed)

    for ent in doc.ents:
        add(ent.start, ent.end)
    for chunk in doc.noun_chunks:
        trimmed = _trim(chunk.start, chunk.end, ctx)
        if trimmed is None:
            continue
        ctx.chunks.add(trimmed)
        for i in range(trimmed[0], trimmed[1]):
            add(i, trimmed[1])
    for start, end in [*ctx.lexicon, *ctx.abbr_long, *ctx.abbr_short, *ctx.proposed]:
        add(start, end)
    for sent in doc.sents:
        i = sent.start
        while i < sent.end:
            run = name_run(doc[i : sent.end], ctx.named)
            if run is None:
                break
            add(run.start, run.end)
            i = run.end
    alpha = ctx.alpha
    return [doc[a:b] for a, b in sorted(found) if any(alpha[a:b])]


def _shape(text: str) -> str:
    out = []
    for ch in text:
        c = "X" if ch.isupper() else "x" if ch.isalpha() else "d" if ch.isdigit() else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)[:6]


def _head(start: int, end: int, ctx: _Context) -> int:
    # kg.extraction.spans.head_token: the word before the first "of"/"for", else the last.
    for i in range(start + 1, end):
        if ctx.pos[i] == "ADP" and ctx.lower[i] in ("of", "for"):
            return i - 1
    return end - 1


def _head_features(h: int, ctx: _Context) -> list[str]:
    lower, gov = ctx.lower, ctx.head[h]
    f = [
        f"h={lower[h]}",
        f"hl={ctx.lemma[h]}",
        f"hs={lower[h][-3:]}",
        f"hshape={_shape(ctx.words[h])}",
        f"dep={ctx.dep[h]}",
        f"gov={ctx.lemma[gov]}",
        f"govdep={ctx.dep[gov]}_{ctx.dep[h]}",
        f"count={min(ctx.counts.get(lower[h], 0), 4)}",
    ]
    if ctx.pos[gov] == "ADP":
        f.append(f"prep={lower[gov]}")
        f.append(f"prepgov={lower[gov]}_{ctx.lemma[ctx.head[gov]]}")
    ctx.by_head[h] = f
    return f


def _start_features(start: int, ctx: _Context) -> list[str]:
    lower = ctx.lower
    f = [
        f"first={lower[start]}",
        f"fshape={_shape(ctx.words[start])}",
        f"sent={min(ctx.sent_index[start], 6)}",
        f"p1={lower[start - 1] if start >= 1 else '#'}",
        f"p2={lower[start - 2] if start >= 2 else '#'}",
    ]
    f += ctx.sent_flags[ctx.sent_index[start]] if ctx.sent_flags else []
    ctx.by_start[start] = f
    return f


def _end_features(end: int, ctx: _Context) -> list[str]:
    n_tok = len(ctx.lower)
    f = [
        f"n1={ctx.lower[end] if end < n_tok else '#'}",
        f"n2={ctx.lower[end + 1] if end + 1 < n_tok else '#'}",
    ]
    ctx.by_end[end] = f
    return f


def span_text(start: int, end: int, ctx: _Context) -> str:
    """A span's text (``Span.text``) from the doc's, without making its tokens."""
    return ctx.text[ctx.idx[start] : ctx.idx[end - 1] + len(ctx.words[end - 1])]


def features(span: Span, ctx: _Context) -> list[str]:
    """The features of one candidate phrase in its context."""
    start, end = span.start, span.end
    n_tok = len(ctx.words)
    lower, words = ctx.lower, ctx.words
    h = _head(start, end, ctx)
    gov = ctx.head[h]
    key = (start, end)
    length = end - start
    # Most candidates are head-final parts of one noun chunk: they share their head,
    # start or end with others, so those features are built once per token.
    f = ["bias", f"len={min(length, 6)}", f"pos={'_'.join(ctx.pos[start : min(end, start + 4)])}"]
    f += ctx.by_head.get(h) or _head_features(h, ctx)
    f += ctx.by_start.get(start) or _start_features(start, ctx)
    f += ctx.by_end.get(end) or _end_features(end, ctx)
    f += [ctx.word_feature[i] for i in range(start, end) if not ctx.punct[i]]
    acronym = any(ctx.acronym[start:end])
    digit = any(ctx.digit[start:end])
    capital = any(words[i][:1].isupper() and not ctx.sent_start[i] for i in range(start, end))
    if acronym:
        f.append("acronym")
    if digit:
        f.append("digit")
    if capital:
        f.append("capital")
    if key in ctx.ner:
        f.append(f"ner={ctx.ner[key]}")
    labels = {ctx.ner_tokens.get(i) for i in range(start, end)}
    f += [f"nertok={label}" for label in labels if label]
    if key in ctx.lexicon:
        f.append(f"lex={ctx.lexicon[key]}")
    if key in ctx.abbr_long:
        f.append("abbr_long")
    if key in ctx.abbr_short:
        f.append("abbr_short")
    if end < n_tok and words[end] == "(":
        f.append("before_bracket")
    if key in ctx.proposed:
        f.append("proposed_rule")
    elif any(i in ctx.proposed_tokens for i in range(start, end)):
        f.append("proposed_overlap")
    if key in ctx.chunks:
        f.append("chunk")
    if key in ctx.rules:
        f.append(f"rule={ctx.rules[key]}")
        f.append(f"rule={ctx.rules[key]}_cap={capital}")
    f += [f"ruletok={x}" for x in {ctx.rule_tokens.get(i) for i in range(start, end)} if x]
    text = span_text(start, end, ctx)
    if length == 1 and expand_acronym(text):
        f.append("known_acronym")
    prep = f"prep={lower[gov]}" if ctx.pos[gov] == "ADP" else "prep=#"
    f.append(f"{prep}_cap={capital}_digit={digit}")
    f.append(f"h={lower[h]}_len={min(length, 3)}")
    if ctx.text.count(text) > 1:
        f.append("repeated")
    return f


def grouped(
    spans: list[Span], ctx: _Context, corpus: dict[str, list[str]] | None = None
) -> list[tuple[list[Span], list[str]]]:
    """Candidates grouped by canonical key: one decision per phrase per paper.

    The features of a group are the union of its mentions' features, so that "RL"
    mentioned six times is one example with the evidence of all six contexts.
    ``corpus`` adds what the unlabelled corpus says about the phrase (see
    :mod:`kg.extraction.corpus_evidence`).
    """
    by_key: dict[str, tuple[list[Span], set[str]]] = {}
    keys = ctx.keys
    for span in spans:
        text = span_text(span.start, span.end, ctx)
        key = keys.get(text)
        if key is None:
            key = keys[text] = canonical_key(text)
        if not key:
            continue
        members, feats = by_key.setdefault(key, ([], set()))
        members.append(span)
        feats.update(features(span, ctx))
    out = []
    for key, (members, feats) in by_key.items():
        feats.add(f"mentions={min(len(members), 4)}")
        if corpus is not None:
            feats.update(corpus.get(key, _UNSEEN))
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


class CandidateTyper:
    """Type candidate phrases with the learned model; keep the best non-overlapping ones."""

    def __init__(
        self,
        name: str,
        *,
        model: LinearModel | None,
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
