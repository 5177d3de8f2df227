"""Where a result was measured: the dataset a result's sentence names.

Used by :mod:`kg.extraction.results`: the name after "on"/"across"/"in"/"over"
next to the number ("47.7 mAP on COCO"), the sentence's opening "On X," (also
"On benchmarks such as X,"), and whether the text calls the name a dataset
("the WikiTQ dataset").
"""

from __future__ import annotations

from spacy.tokens import Doc, Span

from kg.extraction.values import BARE_NUMBER


def name_run(doc: Doc, i: int, sent: Span) -> Span | None:
    """A benchmark-like name starting at token i: "ImageNet-256x256", "SWE-bench
    Verified", "the MATH-500 benchmark" (capitals or digits, not a number alone)."""
    while i < sent.end and doc[i].lower_ in ("the", "a", "standard", "challenging"):
        i += 1
    start = j = i
    while j < sent.end and j < start + 6:
        tok = doc[j]
        named = any(c.isupper() for c in tok.text) or (
            any(c.isdigit() for c in tok.text) and any(c.isalpha() for c in tok.text)
        )
        if named or (tok.text in "-/." and j > start and not doc[j - 1].whitespace_):
            j += 1
            continue
        break
    if j == start or BARE_NUMBER.fullmatch(doc[start:j].text):
        return None
    # "the MBPP benchmark" names MBPP: the head word stays out of the name
    return doc[start:j]


def find_dataset(
    doc: Doc, span: Span, metric: Span | None, sent: Span, cues: frozenset[str]
) -> Span | None:
    """Where the number was measured, by position: "… 47.7 mAP on COCO", "On
    ImageNet-256, X achieves 1.99 FID", "On benchmarks such as AIME 2025, X
    reaches …"; the nearest recognised dataset otherwise."""
    after = max(span.end, metric.end if metric is not None else span.end)
    for i in range(after, min(sent.end, after + 8)):
        tok = doc[i]
        if tok.text in ";" or (tok.like_num and i > after):
            break
        if tok.lower_ in cues:
            found = name_run(doc, i + 1, sent)
            if found is not None:
                return found
            break
    if doc[sent.start].lower_ in ("on", "across"):
        found = name_run(doc, sent.start + 1, sent)
        if found is not None:
            return found
        # The opening phrase up to its comma: "On challenging benchmarks such as
        # AIME 2025, …" names the dataset after "such as"/"including"
        for i in range(sent.start + 1, min(sent.end - 1, sent.start + 12)):
            if doc[i].text == ",":
                break
            if doc[i].lower_ == "including" or (
                doc[i].lower_ == "as" and doc[i - 1].lower_ == "such"
            ):
                return name_run(doc, i + 1, sent)
    return None


def declared(doc: Doc, dataset: Span | None, sent: Span, heads: frozenset[str]) -> bool:
    """Whether the text calls the name a dataset: "the WikiTQ dataset", "the
    MBPP benchmark" (then it is one even if the paper introduces it)."""
    return dataset is not None and dataset.end < sent.end and doc[dataset.end].lower_ in heads
