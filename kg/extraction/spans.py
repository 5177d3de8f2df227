"""Span helpers shared by the components: trimming, heads, names, word lists."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from spacy.tokens import Doc, Span, Token

from kg.extraction.canonical import canonical_key, is_acronym, word_list

NER_TYPES = {"Task": "Task", "Method": "Method", "Metric": "Metric", "Material": "Dataset"}
"""Recogniser labels (SciERC's) to our entity types."""

# Word lists from patterns/wordlists.json: what trimming drops, which heads type a phrase.
LEADING_DROP = word_list("leading_drop")
ENUMERATOR = re.compile(r"^(?:\d{1,2}|[ivx]{1,4}|[a-h])\)?$")
MATH = re.compile(r"[\^=∈≤≥<>/*√∑∏θ×]|\d\)")
GENERIC_PHRASES = frozenset(canonical_key(p) for p in word_list("generic_phrases"))
PLURAL_CLASS_HEADS = word_list("plural_class_heads")
WEAK_HEADS = word_list("weak_task_heads")
ROLE_HEADS = word_list("role_heads")
HYPERPARAMETERS = frozenset(canonical_key(p) for p in word_list("hyperparameters"))
NON_METHOD_HEADS = word_list("non_method_heads")
DESCRIPTIVE_HEADS = word_list("descriptive_heads")
NON_PROPOSALS = word_list("non_proposal_objects")
TRAILING_DROP = frozenset(["'s", "'", "-", ",", ";", ":", "(", ")", "[", "]"])
# Dashes that set off a clause: no phrase runs across one. An en dash joins names
# ("Navier–Stokes") and is not one of them.
CLAUSE_DASHES = frozenset("—―")


def doc_text(doc: Doc) -> str:
    """The doc's text, joined once per doc: ``Doc.text`` joins every token on each
    access (0.1 ms for an abstract, which was read a dozen times), and a doc's
    text never changes once tokenized."""
    text = doc.user_data.get("kg_text")
    if text is None:
        text = doc.user_data["kg_text"] = doc.text
    return text


def sentences(doc: Doc) -> Iterable[Span]:
    """The sentences of a doc, or the whole doc when nothing split it."""
    return doc.sents if doc.has_annotation("SENT_START") or doc.has_annotation("DEP") else [doc[:]]


def is_hyperparameter(span: Span) -> bool:
    """Whether a phrase names a training setting ("large learning rates")."""
    key = canonical_key(span.text)
    return any(key == h or key.endswith("-" + h) for h in HYPERPARAMETERS)


def head_token(span: Span) -> Token:
    """The head noun of a phrase: "training" in "training of neural networks".

    The last word, unless a preposition follows the first noun ("X of Y", "X for Y").
    """
    for tok in span[1:]:
        if tok.pos_ == "ADP" and tok.lower_ in ("of", "for") and tok.i > span.start:
            return tok.doc[tok.i - 1]
    return span[-1]


def has_letter(text: str) -> bool:
    """Whether a token has a letter: no entity or metric phrase starts with one that
    has none ("~5x compute", "≥ 99% accuracy"), and no name is made of them."""
    return any(c.isalpha() for c in text)


def trim_span(span: Span) -> Span | None:
    """Drop leading determiners / evaluative adjectives and trailing punctuation."""
    start, end = span.start, span.end
    doc = span.doc
    while start < end and (
        doc[start].lower_ in LEADING_DROP
        or doc[start].is_punct
        or doc[start].is_space
        or ENUMERATOR.match(doc[start].text)
        or doc[start].pos_ in ("NUM", "ADV")
        or doc[start].tag_ == "POS"
        or doc[start].tag_ in ("JJR", "JJS", "RBR", "RBS")
        or not has_letter(doc[start].text)  # "~5x compute", "≥ 99% accuracy"
    ):
        start += 1
    while end > start and (doc[end - 1].text in TRAILING_DROP or doc[end - 1].is_space):
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


# What an unnamed proposal must be headed by: things one builds, not results one states.
ARTIFACT_HEADS = word_list("artifact_heads")
GENERIC_HEADS = word_list("generic_heads")
STOP_AT = frozenset(["that", "which", "who", "where", "to", ",", ";", ":", ".", "–", "—"])


def is_name_token(token: Token) -> bool:
    """Whether a token looks like part of a name: GRPO, UniCon, PFT3A, Octax."""
    return is_name_word(token.text, bool(token.is_sent_start), token.pos_)


@lru_cache(maxsize=65_536)
def is_name_word(text: str, sent_start: bool, pos: str) -> bool:
    """:func:`is_name_token` on a token's text, whether it starts a sentence, and
    its part of speech (remembered: a word's answer never changes)."""
    if not has_letter(text):
        return False
    if is_acronym(text) or (any(c.isdigit() for c in text) and any(c.isupper() for c in text)):
        return True
    capital = text[:1].isupper() and not sent_start
    return capital and pos == "PROPN" and text.lower() not in LEADING_DROP


def name_run(span: Span, named: Sequence[bool] | None = None) -> Span | None:
    """The first run of name-like tokens in a span (hyphen-joined parts included).

    ``named``: :func:`is_name_token` of every token of the doc, when the caller
    has it already (most tokens are not names: this skips making them)."""
    doc = span.doc
    i = span.start
    while i < span.end:
        if named[i] if named is not None else is_name_token(doc[i]):
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
            while (
                j < span.end
                and (
                    is_name_token(doc[j])
                    or (
                        doc[j].text in "-‐–"
                        and j + 1 < span.end
                        and not doc[j - 1].whitespace_
                        and (
                            doc[j + 1].text[:1].isupper()
                            or doc[j + 1].like_num
                            # a size or version: "Llama-3-70B", "Qwen2.5-7B-Instruct"
                            or is_name_token(doc[j + 1])
                        )
                    )
                    or (doc[j].text[:1].isupper() and doc[j - 1].text in "-‐–")
                )
            ):
                j += 1
            return doc[i:j]
        i += 1
    return None
