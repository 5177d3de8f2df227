"""The extractor's spaCy components, registered as factories.

Each component is a class plus a factory made with ``Language.factory``; its
patterns are JSONL files under ``kg/extraction/patterns/`` handed in through
registered functions with versioned names (``kg.lexicon.v1`` …), so a config
can swap them. The factories are found through the ``spacy_factories`` entry
point in ``pyproject.toml``.

Components write only to their own slots:

- ``kg_abbreviations`` → ``doc._.kg_abbreviations``: ``(long start, long end, short start,
  short end)`` token offsets of acronym definitions;
- ``kg_lexicon`` → ``doc.spans["kg_lexicon"]``: known datasets, metrics, methods, tasks;
- ``kg_entities`` → ``doc.spans["kg_entities"]``: typed entity mentions merged from
  the statistical NER (``doc.ents``), the lexicon, acronym definitions and head-noun rules;
  also ``doc.spans["kg_typed"]``: every recogniser span re-typed by the same rules,
  unfiltered (the layer scored on SciERC);
- ``kg_proposed`` → ``doc.spans["kg_proposed"]``: what the paper says it introduces;
- ``kg_claims`` → ``doc.spans["kg_claims"]``: claim sentences labelled with their kind.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from importlib import resources
from typing import Any

from spacy.language import Language
from spacy.matcher import Matcher, PhraseMatcher
from spacy.tokens import Doc, Span, Token
from spacy.util import filter_spans, registry

from kg.extraction.abbreviations import find_abbreviations
from kg.extraction.canonical import canonical_key, expand_acronym, is_acronym, word_list

if not Doc.has_extension("kg_abbreviations"):
    Doc.set_extension("kg_abbreviations", default=None)

ENTITY_TYPES = ("Task", "Method", "Dataset", "Metric")
_NER_TYPES = {"Task": "Task", "Method": "Method", "Metric": "Metric", "Material": "Dataset"}


def read_patterns(name: str) -> list[dict[str, Any]]:
    """The rows of a bundled JSONL pattern file."""
    path = resources.files("kg.extraction") / "patterns" / name
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


@registry.misc("kg.lexicon.v1")
def lexicon_v1() -> list[dict[str, Any]]:
    """Known datasets, metrics, methods and tasks: ``{"label", "type"}`` rows.

    ``lexicon.jsonl`` plus the typed entries of ``acronyms.jsonl`` (both the
    acronym and its long form), so "RKHS" and "MDP" are found as methods.
    """
    rows = read_patterns("lexicon.jsonl")
    for row in read_patterns("acronyms.jsonl"):
        if "type" in row:
            rows.append({"label": row["acronym"], "type": row["type"]})
            rows.append({"label": row["long_form"], "type": row["type"]})
    return rows


@registry.misc("kg.heads.v1")
def heads_v1() -> list[dict[str, Any]]:
    """Head nouns that type a noun phrase: ``{"head", "type"}`` rows."""
    return read_patterns("heads.jsonl")


@registry.misc("kg.generic.v1")
def generic_v1() -> list[str]:
    """Words never annotated alone ("method", "model", "data" …)."""
    return [row["word"] for row in read_patterns("generic.jsonl")]


@registry.misc("kg.proposal_triggers.v1")
def proposal_triggers_v1() -> list[dict[str, Any]]:
    """Matcher patterns of "we propose / introduce / present …" and "called X"."""
    return read_patterns("proposed.jsonl")


@registry.misc("kg.claim_cues.v1")
def claim_cues_v1() -> list[dict[str, Any]]:
    """Matcher patterns that signal a claim of a kind (``{"kind", "pattern"}``)."""
    return read_patterns("claims.jsonl")


def _sentences(doc: Doc) -> Iterable[Span]:
    return doc.sents if doc.has_annotation("SENT_START") or doc.has_annotation("DEP") else [doc[:]]


# ---------------------------------------------------------------- abbreviations


class AbbreviationDetector:
    """Schwartz–Hearst acronym definitions, stored as span pairs on the doc."""

    def __init__(self, nlp: Language, name: str) -> None:
        self.name = name

    def __call__(self, doc: Doc) -> Doc:
        # Plain token offsets, not Spans: they survive the pickling of n_process > 1.
        doc._.kg_abbreviations = [
            (long.start, long.end, short.start, short.end)
            for long, short in find_abbreviations(doc)
        ]
        return doc


@Language.factory("kg_abbreviations", assigns=["doc._.kg_abbreviations"])
def make_abbreviations(nlp: Language, name: str) -> AbbreviationDetector:
    """Find acronym definitions: "Group Relative Policy Optimization (GRPO)"."""
    return AbbreviationDetector(nlp, name)


# ---------------------------------------------------------------- lexicon


class LexiconRuler:
    """Phrase matching against a lexicon: case-insensitive words, case-sensitive acronyms."""

    def __init__(self, nlp: Language, name: str, *, lexicon: list[dict[str, Any]]) -> None:
        self.name = name
        self.lower = PhraseMatcher(nlp.vocab, attr="LOWER")
        self.exact = PhraseMatcher(nlp.vocab, attr="ORTH")
        self.types: dict[str, str] = {}
        by_key: dict[tuple[str, bool], list[Doc]] = {}
        for row in lexicon:
            label, kind = row["label"], row["type"]
            case_sensitive = any(is_acronym(w) for w in label.split()) or label.isupper()
            key = f"{kind}|{label}"
            self.types[key] = kind
            by_key.setdefault((key, case_sensitive), []).append(nlp.make_doc(label))
        for (key, case_sensitive), docs in sorted(by_key.items()):
            (self.exact if case_sensitive else self.lower).add(key, docs)

    def __call__(self, doc: Doc) -> Doc:
        spans = []
        for matcher in (self.lower, self.exact):
            for match_id, start, end in matcher(doc):
                key = doc.vocab.strings[match_id]
                kind, label = key.split("|", 1)
                spans.append(Span(doc, start, end, label=kind, kb_id=label))
        doc.spans["kg_lexicon"] = filter_spans(spans)
        return doc


@Language.factory(
    "kg_lexicon",
    default_config={"lexicon": {"@misc": "kg.lexicon.v1"}},
    assigns=["doc.spans"],
)
def make_lexicon(nlp: Language, name: str, *, lexicon: list[dict[str, Any]]) -> LexiconRuler:
    """Mark known datasets, metrics, methods and tasks."""
    return LexiconRuler(nlp, name, lexicon=lexicon)


# ---------------------------------------------------------------- entities

_LEADING_DROP = word_list("leading_drop")
_ENUMERATOR = re.compile(r"^(?:\d{1,2}|[ivx]{1,4}|[a-h])\)?$")
_MATH = re.compile(r"[\^=∈≤≥<>/*√∑∏θ×]|\d\)")
_GENERIC_PHRASES = frozenset(canonical_key(p) for p in word_list("generic_phrases"))
_PLURAL_CLASS_HEADS = word_list("plural_class_heads")
_WEAK_HEADS = word_list("weak_task_heads")
_ROLE_HEADS = word_list("role_heads")
_HYPERPARAMETERS = frozenset(canonical_key(p) for p in word_list("hyperparameters"))
_NON_METHOD_HEADS = word_list("non_method_heads")
_DESCRIPTIVE_HEADS = word_list("descriptive_heads")
_NON_PROPOSALS = word_list("non_proposal_objects")
_TRAILING_DROP = frozenset(["'s", "'", "-", ",", ";", ":", "(", ")", "[", "]"])


def is_hyperparameter(span: Span) -> bool:
    """Whether a phrase names a training setting ("large learning rates")."""
    key = canonical_key(span.text)
    return any(key == h or key.endswith("-" + h) for h in _HYPERPARAMETERS)


def head_token(span: Span) -> Token:
    """The head noun of a phrase: "training" in "training of neural networks".

    The last word, unless a preposition follows the first noun ("X of Y", "X for Y").
    """
    for tok in span[1:]:
        if tok.pos_ == "ADP" and tok.lower_ in ("of", "for") and tok.i > span.start:
            return tok.doc[tok.i - 1]
    return span[-1]


def trim_span(span: Span) -> Span | None:
    """Drop leading determiners / evaluative adjectives and trailing punctuation."""
    start, end = span.start, span.end
    doc = span.doc
    while start < end and (
        doc[start].lower_ in _LEADING_DROP
        or doc[start].is_punct
        or doc[start].is_space
        or _ENUMERATOR.match(doc[start].text)
        or doc[start].pos_ in ("NUM", "ADV")
        or doc[start].tag_ == "POS"
        or doc[start].tag_ in ("JJR", "JJS", "RBR", "RBS")
    ):
        start += 1
    while end > start and (doc[end - 1].text in _TRAILING_DROP or doc[end - 1].is_space):
        end -= 1
    # Unbalanced brackets make ugly labels ("Gaussian process (TOGP").
    text = doc[start:end].text
    if text.count("(") != text.count(")"):
        while end > start and doc[end - 1].text != "(" and "(" in doc[start:end].text:
            end -= 1
        if end > start and doc[end - 1].text == "(":
            end -= 1
    if end <= start:
        return None
    return Span(doc, start, end, label=span.label, kb_id=span.kb_id)


class EntityCollector:
    """Typed entity mentions from the NER, the lexicon, acronym pairs and head nouns.

    A mention's type comes from the lexicon first, then from its head noun, then
    from the statistical NER: a concept gets the same type wherever it is
    mentioned, which is what lets one IRI link papers. SciERC's ``Material`` is
    only kept as a ``Dataset`` when it is named (capitals, digits) or headed by
    "dataset"/"benchmark".
    """

    def __init__(
        self,
        nlp: Language,
        name: str,
        *,
        heads: list[dict[str, Any]],
        generic: list[str],
        max_tokens: int,
        use_noun_chunks: bool,
        lexicon: list[dict[str, Any]] | None = None,
    ) -> None:
        self.name = name
        self.lexicon_types: dict[str, str] = {}
        for row in lexicon or []:
            self.lexicon_types.setdefault(canonical_key(row["label"]), row["type"])
        self.heads = {row["head"]: row["type"] for row in heads}
        self.generic = frozenset(generic)
        self.max_tokens = max_tokens
        self.use_noun_chunks = use_noun_chunks

    def head_type(self, span: Span) -> str | None:
        """The type implied by the head word of a span ("… segmentation" → Task)."""
        last = head_token(span)
        for form in (last.lower_, last.lemma_.lower()):
            if form in self.heads:
                return self.heads[form]
        return None

    def is_generic(self, span: Span) -> bool:
        """Whether a span is only generic words ("the proposed method", "deep learning")."""
        words = [t.lower_ for t in span if not t.is_punct]
        if all(w in self.generic or w in _LEADING_DROP or len(w) < 2 for w in words):
            return True
        return canonical_key(span.text) in _GENERIC_PHRASES

    @staticmethod
    def specific(span: Span) -> bool:
        """Whether a phrase with a vague head has a noun-like modifier.

        "token-retrieval task" and "physical control tasks" name something;
        "downstream tasks", "theoretical understanding" do not.
        """
        if head_token(span).lower_ not in _WEAK_HEADS:
            return True
        if len(span) == 1:
            return False
        return any(
            t.pos_ in ("NOUN", "PROPN") or "-" in t.text or is_acronym(t.text) for t in span[:-1]
        )

    def retype(self, ent: Span) -> Span | None:
        """A recogniser span with the rules' type and no filtering (``doc.spans["kg_typed"]``).

        The lexicon's type for a known phrase, else the head noun's, else the
        recogniser's own label: the high-recall layer that SciERC scores.
        """
        if ent.label_ not in _NER_TYPES and ent.label_ != "OtherScientificTerm":
            return None
        kind = self.lexicon_types.get(canonical_key(ent.text)) or self.head_type(ent)
        kind = kind or _NER_TYPES.get(ent.label_)
        return Span(ent.doc, ent.start, ent.end, label=kind) if kind else None

    def known_single(self, token: Token) -> bool:
        """Whether a one-word NER mention is safe: repeated, a known acronym, or defined here."""
        text = token.text
        if expand_acronym(text) or canonical_key(text) in self.lexicon_types:
            return True
        if text.islower():
            return False  # "estimator", "decoder": a common noun, not a name
        if token.doc.text.count(text) >= 2:
            return True
        if text[:1].isupper() and text[1:].islower():
            return False  # a capitalised word met once is usually a person or place
        return not (is_acronym(text) and text.isupper())

    @staticmethod
    def well_formed(span: Span) -> bool:
        """Noun-phrase shape: no finite verb inside, ends in a noun, a name or a number."""
        if any(t.tag_ in ("VBZ", "VBD", "VBP", "MD") for t in span):
            return False
        if _MATH.search(span.text) or span.text.count("(") != span.text.count(")"):
            return False
        if any(t.pos_ == "CCONJ" for t in span):
            return False  # "RGB and depth inputs": a coordination, not one entity
        first = span[0]
        if first.tag_ == "VBG" and first.dep_ not in ("amod", "compound", "nmod") and len(span) > 1:
            return False  # "suppressing high-frequency noise": a clause, not a name
        doc = span.doc
        if (span.end < len(doc) and doc[span.end].text == "-" and not span[-1].whitespace_) or (
            span.start > 0
            and doc[span.start - 1].text == "-"
            and not doc[span.start - 1].whitespace_
        ):
            return False  # "multi" of "multi-aspect": a fragment of a hyphenated word
        if len(span) > 1 and head_token(span).lower_ in _PLURAL_CLASS_HEADS:
            return False  # "optimization algorithms": a class of methods, not a method
        if any(t.pos_ == "VERB" and t.dep_ == "ROOT" for t in span):
            return False
        last = span[-1]
        return last.pos_ in ("NOUN", "PROPN", "NUM", "X") or is_acronym(last.text)

    def has_evidence(self, span: Span) -> bool:
        """Support beyond the statistical NER: a typed head, a name, or a repeat mention."""
        if self.head_type(span) is not None or self._named(span):
            return True
        return span.doc.text.count(span.text) >= 2

    def _named(self, span: Span) -> bool:
        return any(is_acronym(t.text) or any(c.isdigit() for c in t.text) for t in span) or (
            span[0].text[:1].isupper() and not span[0].is_sent_start
        )

    def type_of(self, span: Span, ner_label: str | None) -> str | None:
        """Decide a mention's type, or None to drop it."""
        head = self.head_type(span)
        if head == "Dataset" or ner_label == "Material":
            # Datasets must be named, and not by a known method/task acronym ("NTK regime"),
            # nor be a coordination or carry brackets ("ODE- and PDE-governed environments").
            if any(t.pos_ == "CCONJ" or t.text in "()" for t in span) or any(
                expand_acronym(t.text) for t in span
            ):
                return None
            if head == "Dataset" and len(span) > 1 and self._named(span[:-1]):
                return "Dataset"
            if (
                ner_label == "Material"
                and not head
                and any(is_acronym(t.text) or any(c.isdigit() for c in t.text) for t in span)
            ):
                return "Dataset"  # "CIFAR-10", "ImageNet"; not "English"
            return None
        role = head_token(span).lower_ in _ROLE_HEADS
        if head is not None and ner_label in ("Task", "Method") and role:
            return ner_label  # "hierarchical skill learning" used as a method stays a method
        if (head == "Metric" or ner_label == "Metric") and is_hyperparameter(span):
            return None  # "large learning rates" is a setting, not a measure
        if head is not None and ner_label in (None, "Task", "Method", "Metric"):
            return head
        return _NER_TYPES.get(ner_label or "")

    def __call__(self, doc: Doc) -> Doc:
        candidates: list[Span] = []
        # Lexicon matches are the most reliable and keep their type.
        for span in doc.spans.get("kg_lexicon", []):
            candidates.append(Span(doc, span.start, span.end, label=span.label_, kb_id="lexicon"))
        for ent in doc.ents:
            if ent.label_ == "OtherScientificTerm" and (
                any(is_acronym(t.text) and any(c.isdigit() for c in t.text) for t in ent)
                or (len(ent) > 1 and self.head_type(ent) == "Method")
            ):
                # A "term" that is a versioned name ("MedGemma-27B") or has a method head
                # ("random embeddings", "spectral filters") is a method.
                ent = Span(doc, ent.start, ent.end, label="Method")
            if ent.label_ not in _NER_TYPES:
                continue
            trimmed = trim_span(ent)
            if trimmed is None or len(trimmed) > self.max_tokens or self.is_generic(trimmed):
                continue
            if not self.well_formed(trimmed) or not self.specific(trimmed):
                continue
            if ent.label_ != "Method" and not self.has_evidence(trimmed):
                continue
            kind = self.type_of(trimmed, ent.label_)
            if kind == "Method" and head_token(trimmed).lower_ in _NON_METHOD_HEADS:
                continue  # "Bellman-completeness assumption", "coverage parameter"
            if (
                kind == "Method"
                and head_token(trimmed).lower_ in _DESCRIPTIVE_HEADS
                and not any(is_acronym(t.text) for t in trimmed)
            ):
                continue  # "transfer learning scheme": a description, not a method's name
            if len(trimmed) == 1 and not self.known_single(trimmed[0]):
                continue  # "STOC", "Chatterjee": a venue or a person mentioned once
            last = trimmed[-1].text
            if len(trimmed) > 1 and len(last) == 1 and last.isalpha():
                continue  # "data dimension D": a variable, not an entity
            expanded = expand_acronym(last) if is_acronym(last) else None
            if expanded and canonical_key(expanded) in self.lexicon_types:
                kind = self.lexicon_types[canonical_key(expanded)]  # "online SGD" is a method
            if kind:
                candidates.append(Span(doc, trimmed.start, trimmed.end, label=kind, kb_id="ner"))
        for ls, le, ss, se in doc._.kg_abbreviations or []:
            long_span, short_span = doc[ls:le], doc[ss:se]
            trimmed = trim_span(long_span)
            if trimmed is None or self.is_generic(trimmed):
                continue
            kind = self.type_of(trimmed, None) or self._type_from_overlap(candidates, trimmed)
            after = (
                doc[se + 1]
                if se + 1 < len(doc) and doc[se].text == ")"
                else (doc[se] if se < len(doc) else None)
            )
            if after is not None and self.heads.get(after.lower_) == "Dataset":
                kind = "Dataset"  # "Real World Knowledge Unlearning (RWKU) benchmark"
            if kind:
                candidates.append(
                    Span(doc, trimmed.start, trimmed.end, label=kind, kb_id="acronym")
                )
                candidates.append(
                    Span(doc, short_span.start, short_span.end, label=kind, kb_id="acronym")
                )
        if self.use_noun_chunks and doc.has_annotation("DEP"):
            for chunk in doc.noun_chunks:
                trimmed = trim_span(chunk)
                if trimmed is None or len(trimmed) > self.max_tokens or self.is_generic(trimmed):
                    continue
                if trimmed[-1].pos_ not in ("NOUN", "PROPN") or not self.well_formed(trimmed):
                    continue
                kind = self.head_type(trimmed)
                if kind == "Metric" and is_hyperparameter(trimmed):
                    continue
                if kind == "Dataset":
                    kind = self.type_of(trimmed, None)
                # A bare head word ("prediction") is too vague to be an entity on its own.
                if (
                    kind in ("Task", "Metric", "Dataset")
                    and len(trimmed) >= 2
                    and self.specific(trimmed)
                ):
                    candidates.append(
                        Span(doc, trimmed.start, trimmed.end, label=kind, kb_id="head")
                    )
        doc.spans["kg_entities"] = _resolve(candidates)
        doc.spans["kg_typed"] = [s for s in map(self.retype, doc.ents) if s is not None]
        return doc

    @staticmethod
    def _type_from_overlap(candidates: list[Span], span: Span) -> str | None:
        for other in candidates:
            if other.start < span.end and span.start < other.end:
                return other.label_
        return None


_SOURCE_RANK = {"lexicon": 0, "acronym": 1, "ner": 2, "head": 3}


def _resolve(candidates: list[Span]) -> list[Span]:
    # Non-overlapping spans: longer spans first ("LLM unlearning" over "unlearning"; the
    # broader concept is added back later), then lexicon and acronym evidence.
    ordered = sorted(
        candidates, key=lambda s: (-(s.end - s.start), _SOURCE_RANK.get(s.kb_id_, 9), s.start)
    )
    taken: list[Span] = []
    for span in ordered:
        if all(span.end <= t.start or span.start >= t.end for t in taken):
            taken.append(span)
    return sorted(taken, key=lambda s: (s.start, s.end))


@Language.factory(
    "kg_entities",
    default_config={
        "heads": {"@misc": "kg.heads.v1"},
        "generic": {"@misc": "kg.generic.v1"},
        "max_tokens": 8,
        "use_noun_chunks": True,
        "lexicon": {"@misc": "kg.lexicon.v1"},
    },
    assigns=["doc.spans"],
    requires=["doc.ents"],
)
def make_entities(
    nlp: Language,
    name: str,
    *,
    heads: list[dict[str, Any]],
    generic: list[str],
    max_tokens: int,
    use_noun_chunks: bool,
    lexicon: list[dict[str, Any]],
) -> EntityCollector:
    """Merge the NER, lexicon, acronym and head-noun evidence into typed mentions."""
    return EntityCollector(
        nlp,
        name,
        heads=heads,
        generic=generic,
        max_tokens=max_tokens,
        use_noun_chunks=use_noun_chunks,
        lexicon=lexicon,
    )


# ---------------------------------------------------------------- proposed methods

# What an unnamed proposal must be headed by: things one builds, not results one states.
_ARTIFACT_HEADS = word_list("artifact_heads")
_GENERIC_HEADS = word_list("generic_heads")
_STOP_AT = frozenset(["that", "which", "who", "where", "to", ",", ";", ":", ".", "–", "—"])


def is_name_token(token: Token) -> bool:
    """Whether a token looks like part of a name: GRPO, UniCon, PFT3A, Octax."""
    text = token.text
    if not any(c.isalpha() for c in text):
        return False
    if is_acronym(text) or (any(c.isdigit() for c in text) and any(c.isupper() for c in text)):
        return True
    return (
        text[:1].isupper()
        and not token.is_sent_start
        and token.pos_ == "PROPN"
        and text.lower() not in _LEADING_DROP
    )


def name_run(span: Span) -> Span | None:
    """The first run of name-like tokens in a span (hyphen-joined parts included)."""
    doc = span.doc
    i = span.start
    while i < span.end:
        if is_name_token(doc[i]):
            j = i + 1
            # Back over a Titlecase hyphen prefix ("Prior-Free" when only "Free" looked
            # named) and over Titlecase words of a multiword name ("Class Prior Estimating").
            while i > span.start:
                prev = doc[i - 1]
                if (
                    i - 2 >= span.start
                    and prev.text in "-‐–"
                    and doc[i - 2].text[:1].isupper()
                    and not doc[i - 2].whitespace_
                ):
                    i -= 2
                elif (
                    prev.text[:1].isupper()
                    and prev.is_alpha
                    and not prev.is_sent_start
                    and prev.pos_ not in ("DET", "PRON", "ADP", "CCONJ")
                ):
                    i -= 1
                else:
                    break
            while j < span.end and (
                is_name_token(doc[j])
                or (
                    doc[j].text in "-‐–"
                    and j + 1 < span.end
                    and not doc[j - 1].whitespace_
                    and (doc[j + 1].text[:1].isupper() or doc[j + 1].like_num)
                )
                or (doc[j].text[:1].isupper() and doc[j - 1].text in "-‐–")
            ):
                j += 1
            return doc[i:j]
        i += 1
    return None


class ProposalDetector:
    """The methods a paper introduces: "we propose X", "X, a novel …", "called X"."""

    def __init__(
        self, nlp: Language, name: str, *, triggers: list[dict[str, Any]], max_per_doc: int
    ) -> None:
        self.name = name
        self.max_per_doc = max_per_doc
        self.matcher = Matcher(nlp.vocab)
        self.verbs: set[str] = set()
        for row in triggers:
            self.matcher.add(row["id"], [row["pattern"]])
            for tok in row["pattern"]:
                if isinstance(tok.get("LEMMA"), dict):
                    self.verbs |= set(tok["LEMMA"].get("IN", []))

    def _object_region(self, trigger: Token) -> Span | None:
        doc = trigger.doc
        sent = trigger.sent
        objects = [c for c in trigger.children if c.dep_ in ("dobj", "obj", "attr", "oprd")]
        if objects:
            obj = objects[0]
            start = obj.left_edge.i
            end = obj.i + 1
            # The object's own phrase plus an apposition or bracket ("X, a …", "X (long)");
            # "for"/"of"-phrases serve the unnamed fallback ("a framework for …", "a variant of …").
            for child in obj.rights:
                if (
                    child.dep_ in ("appos", "compound", "amod", "nmod", "npadvmod")
                    or (child.dep_ == "punct" and child.text in "()")
                    or (child.dep_ == "prep" and child.lower_ in ("for", "of") and child.i == end)
                ):
                    end = max(end, child.right_edge.i + 1)
            # "we propose a novel method, Prior-Free … Adaptation": a misparsed apposition.
            for child in trigger.rights:
                if (
                    child.i >= end
                    and child.dep_ in ("npadvmod", "appos", "dep")
                    and (doc[end].text == "," or doc[end].text == "(")
                ):
                    end = max(end, child.right_edge.i + 1)
            return doc[start : min(end, start + 24, sent.end)]
        start = trigger.i + 1
        if start < sent.end and doc[start].lower_ == "to":
            return None
        end = start
        while end < sent.end and doc[end].lower_ not in _STOP_AT and end - start < 12:
            end += 1
        return doc[start:end] if end > start else None

    def proposal(self, trigger: Token, called: bool) -> Span | None:
        """The name (or shortest description) that a trigger introduces."""
        doc = trigger.doc
        if called:
            region = doc[trigger.i + 1 : min(trigger.i + 6, trigger.sent.end)]
            return name_run(region)
        region = self._object_region(trigger)
        if region is None:
            return None
        objects = [c for c in trigger.children if c.dep_ in ("dobj", "obj", "attr", "oprd")]
        if objects and objects[0].lower_ in _NON_PROPOSALS:
            return None  # "we present a systematic study of …": findings, not an artefact
        # An acronym defined inside the object names it: "ADMM plug-and-play (ADMM-PnP)",
        # unless it is a well-known one ("… in Large Language Models (LLMs)").
        for ls, le, ss, se in doc._.kg_abbreviations or []:
            inside = region.start <= min(ls, ss) and max(le, se) <= region.end + 1
            if inside and expand_acronym(doc[ss:se].text) is None:
                return doc[ss:se]
        name = name_run(region)
        head = next((t for t in region if t.dep_ in ("dobj", "obj", "attr", "oprd")), None)
        if name is not None and head is not None:
            prep = next((t for t in region if t.i > head.i and t.lower_ in ("of", "for")), None)
            if prep is not None and name.start > prep.i:
                name = None  # "maps of five LLMs": the name belongs to what is mapped
        if name is not None and expand_acronym(name.text):
            name = None  # a well-known acronym is not the paper's own
        if (
            name is not None
            and head is not None
            and name.end <= head.i
            and (head.lower_ in _ARTIFACT_HEADS or head.lower_ in _GENERIC_HEADS)
            and all(t.i < head.i or t.i == head.i for t in name)
        ):
            # The name only modifies a generic head: "a tensor-output BO method".
            span = trim_span(doc[region.start : head.i + 1])
            if span is not None:
                return span
        if name is not None:
            nxt = doc[name.end] if name.end < len(doc) else None
            # "AC-DC denoiser": a name followed by its kind of thing.
            if (
                nxt is not None
                and nxt.pos_ == "NOUN"
                and nxt.lower_ not in _GENERIC_HEADS
                and nxt.i < region.end
                and nxt.lower_ not in ("method", "framework")
            ):
                return doc[name.start : nxt.i + 1] if nxt.dep_ != "compound" else name
            return name
        # Unnamed: the noun phrase itself, without determiners and praise.
        chunk_end = region.start
        for tok in region:
            if tok.lower_ in _STOP_AT or tok.text == "(":
                break
            chunk_end = tok.i + 1
            outside = not region.start <= tok.head.i < region.end
            if tok.pos_ == "NOUN" and (outside or tok.dep_ == "appos") and tok.dep_ != "compound":
                if tok.lower_ in _GENERIC_HEADS or tok.lower_ in _ARTIFACT_HEADS:
                    # "a framework for unbiased gradient estimation": keep the for-phrase,
                    # up to a nested preposition ("… systems under adversarial noise").
                    preps = [
                        c for c in tok.rights if c.dep_ == "prep" and c.lower_ in ("for", "of")
                    ]
                    if preps:
                        end = min(preps[0].right_edge.i + 1, region.end, tok.i + 8)
                        for inner in doc[preps[0].i + 1 : end]:
                            if inner.pos_ == "ADP" or inner.lower_ in _STOP_AT:
                                end = inner.i
                                break
                        chunk_end = end
                break
        span = trim_span(doc[region.start : chunk_end])
        if span is None or len(span) > 10 or all(t.lower_ in _GENERIC_HEADS for t in span):
            return None
        heads = [t for t in span if t.pos_ == "NOUN" and t.lower_ in _ARTIFACT_HEADS]
        if not heads:
            return None
        if all(t.pos_ == "ADJ" or t.lower_ in _ARTIFACT_HEADS for t in span):
            return None  # "a theoretical framework": a kind of work, not a named artefact
        return span

    def __call__(self, doc: Doc) -> Doc:
        found: list[Span] = []
        if not doc.has_annotation("DEP"):
            doc.spans["kg_proposed"] = found
            return doc
        triggers: list[tuple[str, Token]] = []
        for match_id, _start, end in self.matcher(doc):
            rule = doc.vocab.strings[match_id]
            triggers.append((rule, doc[end - 1]))
            # "we propose X … and design Y": conjoined verbs share the subject.
            if rule == "we-verb":
                triggers += [
                    (rule, c)
                    for c in doc[end - 1].children
                    if c.dep_ == "conj" and c.pos_ == "VERB" and c.lemma_ in self.verbs
                ]
        for rule, trigger in triggers:
            if rule == "passive":
                subjects = [c for c in trigger.children if c.dep_ in ("nsubjpass", "nsubj")]
                span = (
                    name_run(doc[subjects[0].left_edge.i : subjects[0].i + 1]) if subjects else None
                )
            else:
                span = self.proposal(trigger, called=(rule == "named"))
            if span is not None and _MATH.search(span.text):
                continue
            if span is not None and all(span.end <= f.start or span.start >= f.end for f in found):
                found.append(Span(doc, span.start, span.end, label="Method", kb_id=rule))
        found.sort(key=lambda s: s.start)
        found = found[: self.max_per_doc]
        found += self.named_parts(doc, found)
        doc.spans["kg_proposed"] = sorted(found, key=lambda s: s.start)
        return doc

    def named_parts(self, doc: Doc, proposals: list[Span]) -> list[Span]:
        """Named parts of a proposal: "PFT3A contains the Class Prior Estimating module".

        In a sentence that introduces or names a proposal, a name followed by an
        artefact head ("module", "denoiser", "criterion") is also the paper's own.
        """
        names = {p.text for p in proposals}
        sents = {p.sent.start: p.sent for p in proposals}
        for sent in _sentences(doc):
            if any(t.text in names and t.dep_ in ("nsubj", "nsubjpass") for t in sent):
                sents.setdefault(sent.start, sent)
        parts: list[Span] = []
        taken = list(proposals)
        for start in sorted(sents):
            sent = sents[start]
            i = sent.start
            while i < sent.end:
                run = name_run(doc[i : sent.end])
                if run is None:
                    break
                i = run.end
                if run.end >= sent.end or doc[run.end].lower_ not in _ARTIFACT_HEADS:
                    continue
                if doc[run.end].dep_ in ("compound", "amod", "nmod"):
                    continue  # "a T2I model evaluation framework": a description, not a part
                span = doc[run.start : run.end + 1]
                if span.text in names or _MATH.search(span.text) or expand_acronym(run.text):
                    continue
                if any(
                    lex.start < run.end and run.start < lex.end
                    for lex in doc.spans.get("kg_lexicon", [])
                ):
                    continue  # a known method ("the GRPO framework") is not the paper's own
                if all(span.end <= t.start or span.start >= t.end for t in taken):
                    part = Span(doc, span.start, span.end, label="Method", kb_id="part")
                    parts.append(part)
                    taken.append(part)
        return parts[: self.max_per_doc]


@Language.factory(
    "kg_proposed",
    default_config={"triggers": {"@misc": "kg.proposal_triggers.v1"}, "max_per_doc": 4},
    assigns=["doc.spans"],
    requires=["token.dep", "token.pos"],
)
def make_proposed(
    nlp: Language, name: str, *, triggers: list[dict[str, Any]], max_per_doc: int
) -> ProposalDetector:
    """Find the methods, models or benchmarks the paper itself introduces."""
    return ProposalDetector(nlp, name, triggers=triggers, max_per_doc=max_per_doc)


# ---------------------------------------------------------------- claims

CLAIM_PRIORITY = ("contribution", "performance", "efficiency", "theoretical", "empirical-finding")


_BIG_O = re.compile(r"(?<![A-Za-z])[OΩΘ]\s?\(")


class ClaimDetector:
    """Claim sentences and their kind, from cue patterns.

    Strong cues ("we propose", "outperforms", "we prove", "experiments show")
    make a sentence a claim on their own; weak cue words ("faster", "bound")
    only count in a sentence that speaks of this work ("we", "our") or states
    a number.
    """

    def __init__(self, nlp: Language, name: str, *, cues: list[dict[str, Any]]) -> None:
        self.name = name
        self.matcher = Matcher(nlp.vocab)
        for i, row in enumerate(cues):
            strength = "strong" if len(row["pattern"]) > 1 or row.get("strong") else "weak"
            self.matcher.add(f"{row['kind']}|{strength}|{i}", [row["pattern"]])

    @staticmethod
    def choose_kind(strong: set[str], kinds: set[str], numbers: bool, *, asymptotic: bool) -> str:
        """One kind for a claim sentence from the cue kinds it matched.

        Proofs and rates first (a proposal that "achieves an error rate of O(…)" is
        a theoretical claim), then contributions, then measured efficiency or
        performance (with a number, or "outperforms"), then findings.
        """
        if asymptotic or "theoretical" in strong:
            return "theoretical"
        if "contribution" in strong:
            return "contribution"
        if numbers and "efficiency" in kinds:
            return "efficiency"
        if "performance" in strong or (numbers and "performance" in kinds):
            return "performance"
        if "empirical-finding" in strong:
            return "empirical-finding"
        return next(k for k in CLAIM_PRIORITY if k in kinds)

    def __call__(self, doc: Doc) -> Doc:
        claims: list[Span] = []
        hits: dict[int, list[tuple[str, str]]] = {}
        sent_of = {}
        for sent in _sentences(doc):
            for tok in sent:
                sent_of[tok.i] = sent
        for match_id, start, _end in self.matcher(doc):
            kind, strength, _ = doc.vocab.strings[match_id].split("|")
            sent = sent_of.get(start)
            if sent is not None:
                hits.setdefault(sent.start, []).append((kind, strength))
        for sent in _sentences(doc):
            found = hits.get(sent.start, [])
            if not found:
                continue
            ours = any(t.lower_ in ("we", "our", "ours", "us") for t in sent)
            numbers = any(t.like_num and any(c.isdigit() for c in t.text) for t in sent) or any(
                t.text in ("%", "×") for t in sent
            )
            strong = {k for k, s in found if s == "strong"}
            weak = {k for k, s in found if s == "weak"}
            kinds = strong | (weak if (ours or numbers) else set())
            if not kinds:
                continue
            kind = self.choose_kind(
                strong, kinds, numbers, asymptotic=bool(_BIG_O.search(sent.text))
            )
            claims.append(Span(doc, sent.start, sent.end, label=kind))
        doc.spans["kg_claims"] = claims
        return doc


@Language.factory(
    "kg_claims",
    default_config={"cues": {"@misc": "kg.claim_cues.v1"}},
    assigns=["doc.spans"],
)
def make_claims(nlp: Language, name: str, *, cues: list[dict[str, Any]]) -> ClaimDetector:
    """Label claim sentences with a kind (contribution, performance, …)."""
    return ClaimDetector(nlp, name, cues=cues)
