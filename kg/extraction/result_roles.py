"""What a number of a claim is, beside its metric: a relative change, a
baseline's number, or a count (used by :class:`kg.extraction.results.ResultFinder`).

* relative: "+5.48%", "×46", "by 30%", "30% fewer", "gains of up to 3.41%",
  "a decline of 16.8%", "15 percentage points below";
* a baseline's: "from 55.2% to …", "vs. 37%", "than 0.5";
* a count, no score at all: "28 tool calling turns".

The word lists are those of ``patterns/results.json``.
"""

from __future__ import annotations

from spacy.tokens import Doc, Span

_COMPARATIVES = frozenset(["less", "more", "fewer", "greater", "higher", "lower", "rather"])


class Roles:
    """The role tests, over the result finder's word lists."""

    def __init__(self, words: dict[str, list[str]]) -> None:
        self.counts = frozenset(words["count_nouns"])
        self.rel_after = frozenset(words["relative_after"])
        self.bridge_before = frozenset(words["bridge_before"])
        self.baseline_before = frozenset(words["baseline_before"])
        self.improvement = frozenset(words["improvement_words"])

    def relative(self, doc: Doc, span: Span, unit: str | None, sent: Span) -> bool:
        text = span.text
        if text[:1] in "+−±" or (text[:1] == "-" and span.start > sent.start):
            return True
        sign = doc[span.start - 1] if span.start > sent.start else None
        if sign is not None and sign.text in ("–", "−", "+") and not sign.whitespace_:
            return True  # "declines by –0.2%": the dash the value was split from
        if unit in ("×", "pp") or "point" in text.lower():  # "15 percentage points below"
            return True
        after = [t.lower_ for t in doc[span.end : min(sent.end, span.end + 3)]]
        if any(w in self.rel_after for w in after if w not in ("%",)):
            return True
        before = [t.lower_ for t in doc[max(sent.start, span.start - 5) : span.start]]
        # "by 30%", "by up to 26%", "by **10.9%**", "by nearly 100%"
        for w in reversed(before):
            if w == "by":
                return True
            stop = w not in self.bridge_before or w in ("of", "to", "from", ":", "=")
            if stop and (w != "to" or "up" not in before):
                break
        # "gains of up to 3.41%", "an average improvement of 10.0%"
        for k in range(len(before) - 1, 0, -1):
            if before[k] == "of" and before[k - 1] in self.improvement:
                return True
            if before[k] not in ("up", "to", "about", "nearly", "*", "**", "average"):
                break
        return any(w in ("improves", "outperforms", "surpasses") for w in before[-2:])

    def counts_noun(self, doc: Doc, span: Span, sent: Span) -> bool:
        """Whether a count noun follows the number within its own noun phrase
        ("28 tool calling turns"), not past a preposition or punctuation."""
        for t in doc[span.end : min(sent.end, span.end + 4)]:
            if t.lower_ in self.counts:
                return True
            if not t.is_alpha or t.pos_ in ("ADP", "CCONJ", "DET"):
                return False
        return False

    def baseline(self, doc: Doc, span: Span, sent: Span) -> bool:
        before = [t.lower_ for t in doc[max(sent.start, span.start - 3) : span.start]]
        if "from" in before:
            after = [t.lower_ for t in doc[span.end : min(sent.end, span.end + 8)]]
            return "to" in after or "→" in after
        if len(before) >= 2 and before[-1] == "than" and before[-2] in _COMPARATIVES:
            return False  # "less than 10%": a bound, not a baseline's number
        return any(w in self.baseline_before for w in before[-2:]) and "by" not in before
