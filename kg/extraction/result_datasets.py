"""Where a result was measured: the dataset a result's sentence names.

Used by :mod:`kg.extraction.results`: the name after "on"/"across"/"in"/"over"
next to the number ("47.7 mAP on COCO"), the sentence's opening "On X," (also
"On benchmarks such as X," and "Notably, on X,"), the benchmark a score is
named after ("a 0.86 GenEval score"), and whether the text calls the name a
dataset ("the WikiTQ dataset"). A resolution after a name is part of it
("ImageNet 256×256"), and :func:`normal_label` writes it one way.
"""

from __future__ import annotations

import re

from spacy.tokens import Doc, Span

from kg.extraction.learned import is_model_name
from kg.extraction.values import BARE_NUMBER
from kg.model import Entity

_SCORES = ("score", "scores")
_COORDINATORS = ("and", ",", "from", "to", "→", "vs", "vs.")
_RESOLUTION = re.compile(r"\d{2,4}[x×]\d{2,4}")


def _resolution_end(doc: Doc, i: int, end: int) -> int:
    """The end of a resolution written from token i ("256×256", "256 × 256"), else i."""
    for n in (3, 2, 1):
        if i + n <= end and _RESOLUTION.fullmatch("".join(t.text for t in doc[i : i + n])):
            return i + n
    return i


def normal_label(text: str, rules: list[tuple[re.Pattern[str], str]]) -> str:
    """A dataset name written the one way the rules prefer: "ImageNet 256×256",
    "ImageNet-256x256" → "ImageNet-256" (``dataset_label_rules`` of ``results.json``),
    so that a leaderboard does not split by the way a resolution is written."""
    for pattern, replacement in rules:
        text = pattern.sub(replacement, text)
    return text


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
        # "ImageNet 256×256", "ImageNet 256 × 256": a resolution after a name is part of it
        resolution = _resolution_end(doc, j, sent.end) if j > start else j
        if resolution > j:
            j = resolution
            break
        # "-", "/" and "." join parts of one name ("SWE-bench", "MATH-500"), but a full
        # stop before a space ends it ("… on ImageNet-C. On …")
        glue = tok.text in "-/." and j > start and not doc[j - 1].whitespace_
        if named or (glue and not (tok.text == "." and tok.whitespace_)):
            j += 1
            if len(tok.text) > 1 and tok.text.endswith(".") and tok.whitespace_:
                break  # "ImageNet-C. On …": the tokeniser kept the full stop
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
    parenthesised = _before_parenthesis(doc, span, sent)
    if parenthesised is not None:
        return parenthesised
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
    opening = _opening(doc, sent)
    if opening is not None:
        found = name_run(doc, opening + 1, sent)
        if found is not None:
            return found
        # The opening phrase up to its comma: "On challenging benchmarks such as
        # AIME 2025, …" names the dataset after "such as"/"including"
        for i in range(opening + 1, min(sent.end - 1, opening + 12)):
            if doc[i].text == ",":
                break
            if doc[i].lower_ == "including" or (
                doc[i].lower_ == "as" and doc[i - 1].lower_ == "such"
            ):
                return name_run(doc, i + 1, sent)
    # "a 0.86 GenEval score": a benchmark's own score names the benchmark
    if metric is not None and len(metric) >= 2 and metric[-1].lower_ in _SCORES:
        found = name_run(doc, metric.start, sent)
        if (
            found is not None
            and found.start == metric.start
            and found.end == metric.end - 1
            and not is_model_name(found)  # "CLIP score" is a model's score of anything
        ):
            return found
    return None


def shared_datasets(doc: Doc, found: list[tuple[Span, Span | None]]) -> list[Span | None]:
    """Each value's dataset, a coordinated value taking the next one's: in "4.32
    1-NFE FID and 2.94 4-NFE FID on ImageNet-512" both numbers are on ImageNet-512.
    Only across "and", a comma or "from … to" ("from 51.6% to 62.0%, and … from
    67.0% to 74.6% on SWE-Bench Verified"), with no verb or other preposition between."""
    datasets = [d for _, d in found]
    for k in range(len(found) - 2, -1, -1):
        if datasets[k] is not None or datasets[k + 1] is None:
            continue
        between = doc[found[k][0].end : found[k + 1][0].start]
        coordinated = any(t.lower_ in _COORDINATORS for t in between)
        if coordinated and not any(
            t.pos_ in ("VERB", "AUX", "SCONJ")
            or (t.pos_ == "ADP" and t.lower_ not in _COORDINATORS)
            or t.text == ";"
            for t in between
        ):
            datasets[k] = datasets[k + 1]
    return datasets


def _before_parenthesis(doc: Doc, span: Span, sent: Span) -> Span | None:
    """The name a parenthesised number follows: "GSM8K (90.8%) and MATH 500 (77.4%)"."""
    close = span.end < sent.end and doc[span.end].text == ")"
    if not close or span.start - 2 < sent.start or doc[span.start - 1].text != "(":
        return None
    end = span.start - 1
    start = end
    while start > max(sent.start, end - 4) and (
        any(c.isupper() for c in doc[start - 1].text)
        or (
            doc[start - 1].like_num and start - 1 > sent.start and doc[start - 2].text[:1].isupper()
        )
    ):
        start -= 1
    return doc[start:end] if start < end and not doc[start].like_num else None


def _opening(doc: Doc, sent: Span) -> int | None:
    """The "on"/"across" that opens a sentence, also after a connective and its
    comma ("Notably, on ImageNet 256x256, …", "For instance, on X, …")."""
    if doc[sent.start].lower_ in ("on", "across"):
        return sent.start
    for i in range(sent.start + 1, min(sent.end - 1, sent.start + 4)):
        if doc[i].text == ",":
            nxt = doc[i + 1]
            return i + 1 if nxt.lower_ in ("on", "across") else None
        if not doc[i].is_alpha:
            return None
    return None


def declared(doc: Doc, dataset: Span | None, sent: Span, heads: frozenset[str]) -> bool:
    """Whether the text calls the name a dataset: "the WikiTQ dataset", "the
    MBPP benchmark" (then it is one even if the paper introduces it)."""
    return dataset is not None and dataset.end < sent.end and doc[dataset.end].lower_ in heads


_ARTICLE_WORDS = (
    r"(?:(?:a|an|the)\s+)?"
    r"(?:(?!(?:for|of|on|in|to|that|which|with|and|by|from)\b)[\w-]+\s+){0,4}?"
)


def benchmark_pattern(heads: frozenset[str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Patterns that say what follows or precedes a name is a benchmark or
    dataset: after it "X benchmark", "X, a systematic benchmark", "X: a dataset";
    before it "a new benchmark, X", "a dataset called X"."""
    words = "|".join(sorted(map(re.escape, heads), key=len, reverse=True))
    single = "|".join(sorted((re.escape(h) for h in heads if not h.endswith("s")), key=len))
    after = re.compile(rf"\s*(?:[,:(—–-]\s*{_ARTICLE_WORDS})?(?:{words})(?![\w-])", re.I)
    # one benchmark, introduced: "a new benchmark, X", not "across ten benchmarks, X"
    before = re.compile(
        rf"\b(?:a|an|our|the)\s+(?:[\w-]+\s+){{0,3}}?(?:{single})\s*,?\s*"
        rf"(?:(?:called|named|dubbed|termed)\s+)?[,:]?\s*$",
        re.I,
    )
    return after, before


def benchmark_proposal(
    proposed: list[Entity], abstract: str, patterns: tuple[re.Pattern[str], re.Pattern[str]]
) -> Entity | None:
    """The paper's own proposal that its text calls a benchmark or dataset
    ("We present MedThinkVQA, a benchmark that …", "the RebuttalBench dataset"),
    or whose name says so ("NC-Bench"); the first such, else None. A benchmark
    paper's numbers that name no other place were measured on it."""
    after, before = patterns
    for entity in proposed:
        if _BENCH_NAME.search(entity.label):
            return entity
        for m in entity.mentions:
            if after.match(abstract, m.end):
                return entity
            if before.search(abstract, max(0, m.start - 48), m.start):
                return entity
    return None


_BENCH_NAME = re.compile(r"(?:Bench|Benchmark|Dataset)$")
