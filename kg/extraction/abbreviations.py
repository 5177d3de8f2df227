"""Acronym definitions in text: the Schwartz–Hearst algorithm, both directions.

``long form (SF)`` ("Group Relative Policy Optimization (GRPO)") and
``SF (long form)`` ("PURGE (Policy Unlearning through Relative Group Erasure)")
are both found. The helpers work on spaCy tokens but need no trained pipeline.
"""

from __future__ import annotations

from spacy.tokens import Doc, Span

from kg.extraction.spans import CLAUSE_DASHES


def is_short_form(text: str) -> bool:
    """Whether a string can be an acronym: 2-12 chars, starts alphanumeric, has a capital."""
    if not 2 <= len(text) <= 12 or " " in text:
        return False
    if not text[0].isalnum():
        return False
    return any(c.isupper() for c in text) and sum(c.isalpha() for c in text) >= 2


def best_long_form(short: str, long: str) -> int | None:
    """Schwartz–Hearst: where in ``long`` the long form of ``short`` starts, or None.

    Every letter/digit of the short form must appear in order in the long form
    (scanning right to left), and the first one must begin a word. Digits that
    the long form lacks are forgiven ("PFT3A" for "Prior-Free Tabular Test-Time
    Adaptation", where the 3 counts the Ts).
    """
    found = _best_long_form(short, long)
    if found is None and any(c.isdigit() for c in short[1:]):
        found = _best_long_form(short[0] + "".join(c for c in short[1:] if not c.isdigit()), long)
    return found


def _best_long_form(short: str, long: str) -> int | None:
    s_index = len(short) - 1
    l_index = len(long) - 1
    while s_index >= 0:
        c = short[s_index].lower()
        if not c.isalnum():
            s_index -= 1
            continue
        while (l_index >= 0 and long[l_index].lower() != c) or (
            s_index == 0 and l_index > 0 and long[l_index - 1].isalnum()
        ):
            l_index -= 1
        if l_index < 0:
            return None
        l_index -= 1
        s_index -= 1
    # The long form starts a word: after a space, or after an em dash that sets off
    # a clause ("attacks—Task Performance Check (TPC)").
    return max(long.rfind(sep, 0, l_index + 1) for sep in (" ", *CLAUSE_DASHES)) + 1


def _letters_ok(short: str, long: str) -> bool:
    # Guard against long forms that only match by scattering letters across few words.
    words = long.split()
    return len(words) <= min(len(short) + 5, len(short) * 2 + 1) and len(long) > len(short)


def find_abbreviations(doc: Doc) -> list[tuple[Span, Span]]:
    """``(long form, short form)`` span pairs defined in the document, in text order."""
    pairs: list[tuple[Span, Span]] = []
    for open_tok in doc:
        if open_tok.text != "(":
            continue
        close = None
        for j in range(open_tok.i + 1, min(open_tok.i + 16, len(doc))):
            if doc[j].text == ")":
                close = j
                break
            if doc[j].text in "(;" or doc[j].is_sent_start:
                break
        if close is None or close == open_tok.i + 1:
            continue
        inner = doc[open_tok.i + 1 : close]
        sent = open_tok.sent if doc.has_annotation("SENT_START") else doc[:]
        inner_text = inner.text
        if is_short_form(inner_text) and len(inner) <= 3:
            # long form (SF): the long form ends right before the bracket.
            window_start = max(sent.start, open_tok.i - min(len(inner_text) + 5, 10))
            window = doc[window_start : open_tok.i]
            start_char = best_long_form(inner_text, window.text)
            if start_char is None:
                continue
            long_span = doc.char_span(
                window.start_char + start_char, window.end_char, alignment_mode="expand"
            )
            if long_span is None or not _letters_ok(inner_text, long_span.text):
                continue
            pairs.append((long_span, inner))
        elif open_tok.i > sent.start and len(inner) >= 2:
            # SF (long form): the short form is the word right before the bracket.
            prev = doc[open_tok.i - 1]
            short = prev
            start = prev.i
            # Allow hyphenated short forms split by the tokenizer ("STAIRS-Former").
            while (
                start - 2 >= sent.start
                and doc[start - 1].text == "-"
                and not doc[start - 1].whitespace_
                and not doc[start - 2].whitespace_
            ):
                start -= 2
            short_span = doc[start : prev.i + 1]
            if not is_short_form(short_span.text):
                continue
            if best_long_form(short_span.text, inner_text) != 0:
                continue
            if not _letters_ok(short_span.text, inner_text):
                continue
            del short
            pairs.append((inner, short_span))
    return pairs
