"""Claims grouped from their query rows (one row per stated value), shared by the
scanning read model (:mod:`kg.read.papers`) and the indexed one
(:mod:`kg.read.indexed`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyoxigraph import QuerySolutions

from kg.read.base import KIND_NAME, paper_summary, py


def _claim(s: Any) -> dict[str, Any]:
    def pair(var: str) -> tuple[str | None, str | None]:
        return py(s[f"claim{var}Label"]), py(s[f"claim{var}"])

    subject, subject_iri = pair("Subject")
    metric, metric_iri = pair("Metric")
    dataset, dataset_iri = pair("Dataset")
    baseline, baseline_iri = pair("Baseline")
    sentence = None
    if s["sentence"] is not None and s["sentenceText"] is not None:
        sentence = {
            "text": py(s["sentenceText"]),
            "start": py(s["sentenceStart"]),
            "end": py(s["sentenceEnd"]),
        }
    return {
        "iri": s["claim"].value,
        "text": py(s["text"]),
        "start": py(s["start"]),
        "end": py(s["end"]),
        "kind": KIND_NAME.get(py(s["claimKind"]) or ""),
        "confidence": py(s["confidence"]),
        "sentence": sentence,
        "subject": subject,
        "subject_iri": subject_iri,
        "metric": metric,
        "metric_iri": metric_iri,
        "dataset": dataset,
        "dataset_iri": dataset_iri,
        "baseline": baseline,
        "baseline_iri": baseline_iri,
        "values": [],
    }


def group_claims(
    result: QuerySolutions,
    *,
    offset: int = 0,
    limit: int | None = None,
    counter: list[int] | None = None,
    with_paper: bool = False,
) -> Iterator[dict[str, Any]]:
    """Group claim rows (one per stated value) into claims; rows come ordered by claim.

    Only claims of the page are converted; ``counter`` receives the total."""
    index = -1
    current: dict[str, Any] | None = None
    last = None
    seen_values: set[str] = set()
    for s in result:
        claim = s["claim"].value
        if claim != last:
            if current is not None:
                yield current
            current, last = None, claim
            index += 1
            seen_values = set()
            if index >= offset and (limit is None or index < offset + limit):
                current = _claim(s)
                if with_paper:
                    current["paper"] = paper_summary(s["paper"], s["title"])
        if current is not None and s["value"] is not None and s["value"].value not in seen_values:
            seen_values.add(s["value"].value)
            current["values"].append(
                {
                    "text": py(s["valueText"]),
                    "number": py(s["number"]),
                    "unit": py(s["unit"]),
                    "start": py(s["valueStart"]),
                    "end": py(s["valueEnd"]),
                }
            )
    if current is not None:
        yield current
    if counter is not None:
        counter.append(index + 1)
