"""Metric directions as data: is a higher value of a metric better?

``kg/extraction/patterns/metric_directions.jsonl`` lists metric name patterns
with ``higher_is_better`` true, false or null. The mapping writes the answer as
``kg:higherIsBetter`` on each metric node; leaderboards sort by it. A pattern
matches whole words of the metric's canonical key, so the answer depends on the
node (its IRI), never on which paper named it first.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from kg.extraction.canonical import canonical_key


@cache
def _patterns() -> tuple[tuple[tuple[str, ...], bool | None], ...]:
    path = resources.files("kg.extraction") / "patterns" / "metric_directions.jsonl"
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    return tuple(
        (tuple(canonical_key(row["pattern"]).split("-")), row["higher_is_better"]) for row in rows
    )


def metric_direction(label: str) -> bool | None:
    """Whether a higher value of the metric is better; None when the data does not say.

    The longest pattern found as whole words decides ("word error rate" before
    "rate"); among equally long ones the file's order does ("FID score" is FID:
    lower is better).
    """
    return _decide(canonical_key(label).split("-"))


def key_direction(key: str) -> bool | None:
    """:func:`metric_direction` of an entity key as :mod:`kg.vocab` IRIs hold it
    (``success-rate``): its words are already canonical and joined by hyphens."""
    return _decide(key.split("-"))


def _decide(words: list[str]) -> bool | None:
    best: tuple[int, int] | None = None
    answer: bool | None = None
    for order, (pattern, higher) in enumerate(_patterns()):
        n = len(pattern)
        if any(tuple(words[i : i + n]) == pattern for i in range(len(words) - n + 1)):
            rank = (-n, order)
            if best is None or rank < best:
                best, answer = rank, higher
    return answer
