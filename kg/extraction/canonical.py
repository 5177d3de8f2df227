"""Canonical keys and display labels: the same entity in two papers gets one IRI.

A key folds case, LaTeX, hyphenation ("multi-agent" = "multiagent") and the
plural of the head word ("transformers" = "transformer"). A bundled lexicon
of well-known acronyms (``patterns/acronyms.jsonl``) maps a bare acronym to its
long form, so a paper that only writes "GRPO" meets one that spells it out.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache, lru_cache
from importlib import resources

from kg.reading import latex

_WORD = re.compile(r"[^\W_]+(?:[.'][^\W_]+)*", re.UNICODE)
_DETERMINERS = frozenset(
    ["a", "an", "the", "our", "their", "its", "this", "these", "those", "such", "each"]
)


def singular(word: str) -> str:
    """The singular of an English noun, by a few safe suffix rules."""
    low = word.lower()
    if (
        len(word) <= 3
        or low in word_list("keep_final_s")
        or low.endswith(("ss", "us", "is", "ics"))
    ):
        return word
    if word[:-1].isupper() and word.endswith("s"):  # acronym plural: LLMs, GANs
        return word[:-1]
    if low.endswith("ies") and len(word) > 4:
        return word[:-3] + ("Y" if word.isupper() else "y")
    if low.endswith(("ches", "shes", "xes", "sses", "zes")):
        return word[:-2]
    if low.endswith("s") and not low.endswith(("ous", "'s")):
        return word[:-1]
    return word


def _plain(label: str) -> str:
    text = latex.clean_label(label)
    return unicodedata.normalize("NFKC", text)


@lru_cache(maxsize=1 << 16)
def canonical_key(label: str) -> str:
    """The key of an entity label: ``Multi-Agent Transformers`` → ``multiagent-transformer``."""
    text = _plain(label)
    # Hyphens, slashes and dots inside a word join it ("multi-agent", "k-means").
    text = re.sub(r"(?<=\w)[-‐–](?=\w)", "", text)
    words = _WORD.findall(text)
    while words and words[0].lower() in _DETERMINERS:
        words = words[1:]
    if not words:
        return ""
    words[-1] = singular(words[-1])
    return "-".join(w.lower() for w in words)


def is_acronym(word: str) -> bool:
    """Upper-case or mixed-case words that must keep their case (GRPO, InfoNCE, CIFAR-10)."""
    letters = [c for c in word if c.isalpha()]
    if not letters:
        return False
    return sum(c.isupper() for c in letters) >= 2 or (
        any(c.isupper() for c in word[1:]) and any(c.isalpha() for c in word[1:])
    )


def display_label(text: str, *, sentence_initial: bool = False) -> str:
    """A clean, deterministic label: LaTeX removed, a sentence-initial Titlecase word lowered."""
    label = _plain(text)
    label = re.sub(r"\s+", " ", label).strip(" ,;:.")
    words = label.split(" ")
    while len(words) > 1 and words[0].lower() in _DETERMINERS:
        words = words[1:]
    first = words[0]
    titlecase_name = len(words) > 1 and all(w[:1].isupper() for w in words if w[:1].isalpha())
    if (
        sentence_initial
        and not titlecase_name
        and first[:1].isupper()
        and first[1:] == first[1:].lower()
        and not is_acronym(first)
    ):
        words[0] = first[:1].lower() + first[1:]
    return " ".join(words)


@cache
def word_list(name: str) -> frozenset[str]:
    """A named word list from ``patterns/wordlists.json`` (determiners to drop, heads …)."""
    path = resources.files("kg.extraction") / "patterns" / "wordlists.json"
    return frozenset(json.loads(path.read_text(encoding="utf-8"))[name])


@cache
def acronym_lexicon() -> dict[str, str]:
    """Well-known ML acronyms → long forms, from ``patterns/acronyms.jsonl``."""
    table: dict[str, str] = {}
    path = resources.files("kg.extraction") / "patterns" / "acronyms.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            obj = json.loads(line)
            table[obj["acronym"]] = obj["long_form"]
    return table


def expand_acronym(label: str) -> str | None:
    """The long form of a bare well-known acronym: "GRPO" → "Group Relative Policy Optimization"."""
    text = _plain(label).strip()
    lexicon = acronym_lexicon()
    if text in lexicon:
        return lexicon[text]
    if text.endswith("s") and text[:-1] in lexicon:
        return lexicon[text[:-1]]
    return None
