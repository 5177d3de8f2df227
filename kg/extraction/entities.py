"""The ``kg_entities`` component: typed entity mentions from all the evidence."""

from __future__ import annotations

from typing import Any

from spacy.language import Language
from spacy.tokens import Doc, Span, Token

from kg.extraction.canonical import canonical_key, expand_acronym, is_acronym
from kg.extraction.spans import (
    DESCRIPTIVE_HEADS,
    GENERIC_PHRASES,
    LEADING_DROP,
    MATH,
    NER_TYPES,
    NON_METHOD_HEADS,
    PLURAL_CLASS_HEADS,
    ROLE_HEADS,
    WEAK_HEADS,
    doc_text,
    head_token,
    is_hyperparameter,
    trim_span,
)


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
        if all(w in self.generic or w in LEADING_DROP or len(w) < 2 for w in words):
            return True
        return canonical_key(span.text) in GENERIC_PHRASES

    @staticmethod
    def specific(span: Span) -> bool:
        """Whether a phrase with a vague head has a noun-like modifier.

        "token-retrieval task" and "physical control tasks" name something;
        "downstream tasks", "theoretical understanding" do not.
        """
        if head_token(span).lower_ not in WEAK_HEADS:
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
        if ent.label_ not in NER_TYPES and ent.label_ != "OtherScientificTerm":
            return None
        kind = self.lexicon_types.get(canonical_key(ent.text)) or self.head_type(ent)
        kind = kind or NER_TYPES.get(ent.label_)
        return Span(ent.doc, ent.start, ent.end, label=kind) if kind else None

    def known_single(self, token: Token, doc_text: str) -> bool:
        """Whether a one-word NER mention is safe: repeated, a known acronym, or defined
        here (``doc_text``: the abstract's text, which spaCy rebuilds on every read)."""
        text = token.text
        if expand_acronym(text) or canonical_key(text) in self.lexicon_types:
            return True
        if text.islower():
            return False  # "estimator", "decoder": a common noun, not a name
        if doc_text.count(text) >= 2:
            return True
        if text[:1].isupper() and text[1:].islower():
            return False  # a capitalised word met once is usually a person or place
        return not (is_acronym(text) and text.isupper())

    @staticmethod
    def well_formed(span: Span) -> bool:
        """Noun-phrase shape: no finite verb inside, ends in a noun, a name or a number."""
        if any(t.tag_ in ("VBZ", "VBD", "VBP", "MD") for t in span):
            return False
        if MATH.search(span.text) or span.text.count("(") != span.text.count(")"):
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
        if len(span) > 1 and head_token(span).lower_ in PLURAL_CLASS_HEADS:
            return False  # "optimization algorithms": a class of methods, not a method
        if any(t.pos_ == "VERB" and t.dep_ == "ROOT" for t in span):
            return False
        last = span[-1]
        return last.pos_ in ("NOUN", "PROPN", "NUM", "X") or is_acronym(last.text)

    def has_evidence(self, span: Span, doc_text: str) -> bool:
        """Support beyond the statistical NER: a typed head, a name, or a repeat mention
        (``doc_text``: the abstract's text)."""
        if self.head_type(span) is not None or self._named(span):
            return True
        return doc_text.count(span.text) >= 2

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
        role = head_token(span).lower_ in ROLE_HEADS
        if head is not None and ner_label in ("Task", "Method") and role:
            return ner_label  # "hierarchical skill learning" used as a method stays a method
        if (head == "Metric" or ner_label == "Metric") and is_hyperparameter(span):
            return None  # "large learning rates" is a setting, not a measure
        if head is not None and ner_label in (None, "Task", "Method", "Metric"):
            return head
        return NER_TYPES.get(ner_label or "")

    def __call__(self, doc: Doc) -> Doc:
        candidates: list[Span] = []
        # Lexicon matches are the most reliable and keep their type.
        for span in doc.spans.get("kg_lexicon", []):
            candidates.append(Span(doc, span.start, span.end, label=span.label_, kb_id="lexicon"))
        # Short forms defined in this paper take the type of their long form ("GenPRMs").
        long_of = {(ss, se): doc[ls:le] for ls, le, ss, se in doc._.kg_abbreviations or []}
        text = doc_text(doc)
        for ent in doc.ents:
            if ent.label_ == "OtherScientificTerm" and (
                any(is_acronym(t.text) and any(c.isdigit() for c in t.text) for t in ent)
                or (len(ent) > 1 and self.head_type(ent) == "Method")
            ):
                # A "term" that is a versioned name ("MedGemma-27B") or has a method head
                # ("random embeddings", "spectral filters") is a method.
                ent = Span(doc, ent.start, ent.end, label="Method")
            if ent.label_ not in NER_TYPES:
                continue
            trimmed = trim_span(ent)
            if trimmed is None or len(trimmed) > self.max_tokens or self.is_generic(trimmed):
                continue
            if not self.well_formed(trimmed) or not self.specific(trimmed):
                continue
            if not self.has_evidence(trimmed, text):
                continue  # a span only the recogniser saw, with no typed head, name or repeat
            long_form = long_of.get((trimmed.start, trimmed.end))
            if long_form is not None:
                kind = self.type_of(long_form, None if ent.label_ == "Material" else ent.label_)
            else:
                kind = self.type_of(trimmed, ent.label_)
            if kind == "Method" and head_token(trimmed).lower_ in NON_METHOD_HEADS:
                continue  # "Bellman-completeness assumption", "coverage parameter"
            if (
                kind == "Method"
                and head_token(trimmed).lower_ in DESCRIPTIVE_HEADS
                and not any(is_acronym(t.text) for t in trimmed)
            ):
                continue  # "transfer learning scheme": a description, not a method's name
            if len(trimmed) == 1 and not self.known_single(trimmed[0], text):
                continue  # "STOC", "Chatterjee": a venue or a person mentioned once
            if _cites_authors(trimmed):
                continue  # "Ben Arous et al.": people, not a method
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


def _cites_authors(span: Span) -> bool:
    """Whether a span is followed by "et al." (it names the authors of a cited work)."""
    doc = span.doc
    return (
        span.end + 1 < len(doc)
        and doc[span.end].lower_ == "et"
        and doc[span.end + 1].lower_.startswith("al")
    )


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
