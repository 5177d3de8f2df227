"""The index's results and taxonomy tables: what a write puts in them.

* ``results`` — one row per ``kg:Result`` of a paper, with its value, metric,
  dataset, task, method, roles and claim, added and removed with the paper's
  other rows (:func:`add_results`, :func:`remove_results`, called by
  :mod:`kg.store.index.db`);
* ``taxonomy`` — the ``skos:broader`` links of the taxonomy graph, changed
  whenever :func:`kg.store.taxonomy.derive_taxonomy` changes that graph.

Every change bumps the ``counts`` row :data:`GENERATION`, under which
:class:`kg.store.index.results.IndexedResults` remembers its answers.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from pyoxigraph import Quad

from kg.schema import RESULT_ROLES, kind
from kg.vocab import KG

RESULTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
  pid INTEGER NOT NULL, paper_id TEXT NOT NULL, number REAL, unit TEXT, text TEXT NOT NULL,
  vstart INTEGER NOT NULL, vend INTEGER NOT NULL, metric TEXT, dataset TEXT, task TEXT,
  method TEXT, proposed INTEGER NOT NULL, relative INTEGER NOT NULL,
  claim_text TEXT NOT NULL, claim_start INTEGER NOT NULL, claim_end INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS results_paper ON results (pid);
CREATE INDEX IF NOT EXISTS results_board ON results (dataset, metric)
  WHERE relative = 0 AND number IS NOT NULL AND dataset IS NOT NULL AND metric IS NOT NULL;
CREATE TABLE IF NOT EXISTS taxonomy (
  narrower TEXT NOT NULL, broader TEXT NOT NULL, PRIMARY KEY (narrower, broader)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS taxonomy_broader ON taxonomy (broader, narrower);
"""

_RESULT_PROPS = {
    KG.inPaper.value: "paper",
    KG.isProposed.value: "proposed",
    KG.isRelative.value: "relative",
    KG.resultValue.value: "value",
    KG.fromClaim.value: "claim",
    **{KG["result" + kind(role).name].value: role for role in RESULT_ROLES},
    KG.valueText.value: "text",
    KG.text.value: "text",
    KG.start.value: "start",
    KG.end.value: "end",
    KG.numericValue.value: "number",
    KG.unit.value: "unit",
}


@dataclass(slots=True)
class ResultRow:
    """One result as the ``results`` table keeps it."""

    number: float | None
    unit: str | None
    text: str
    start: int
    end: int
    metric: str | None
    dataset: str | None
    task: str | None
    method: str | None
    proposed: bool
    relative: bool
    claim_text: str
    claim_start: int
    claim_end: int


def result_rows(quads: Iterable[Quad]) -> list[ResultRow]:
    """The results of one paper from the quads of its graph (what ``results.rq``
    reads: a result without its value's or claim's text and offsets is left out)."""
    results: list[str] = []
    props: dict[str, dict[str, str]] = defaultdict(dict)
    for q in quads:
        p = q.predicate.value
        if p == KG.reportsResult.value:
            results.append(_text(q.object))
        elif p in _RESULT_PROPS:
            props[_text(q.subject)][_RESULT_PROPS[p]] = _text(q.object)
    rows = []
    for iri in results:
        r = props.get(iri, {})
        v, c = props.get(r.get("value", ""), {}), props.get(r.get("claim", ""), {})
        metric, dataset, task, method = (r.get(role) for role in RESULT_ROLES)
        try:
            row = ResultRow(
                _number(v.get("number")), v.get("unit"), v["text"], int(v["start"]),
                int(v["end"]), metric, dataset, task, method,
                r["proposed"] == "true", r["relative"] == "true",
                c["text"], int(c["start"]), int(c["end"]),
            )  # fmt: skip
        except (KeyError, ValueError):
            continue
        rows.append(row)
    return sorted(rows, key=lambda r: (r.start, r.end))


def _text(term: Any) -> str:
    """A term's lexical value (our graphs hold no RDF-star triple terms)."""
    return str(term.value)


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    with suppress(ValueError):
        return float(value)
    return None


GENERATION = "results:generation"
"""The ``counts`` row every change of the results or taxonomy tables bumps: the
key under which :class:`IndexedResults` remembers its answers."""


def bump_generation(db: sqlite3.Connection) -> None:
    """Mark a change of the results or taxonomy tables (:data:`GENERATION`)."""
    db.execute(
        "INSERT INTO counts VALUES (?, 1) ON CONFLICT(key) DO UPDATE SET n = n + 1", (GENERATION,)
    )


def add_results(db: sqlite3.Connection, pid: int, paper_id: str, rows: list[ResultRow]) -> None:
    """Add a paper's result rows (inside the index's write transaction)."""
    bump_generation(db)
    db.executemany(
        "INSERT INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [
            (
                pid,
                paper_id,
                r.number,
                r.unit,
                r.text,
                r.start,
                r.end,
                r.metric,
                r.dataset,
                r.task,
                r.method,
                int(r.proposed),
                int(r.relative),
                r.claim_text,
                r.claim_start,
                r.claim_end,
            )  # fmt: skip
            for r in rows
        ],
    )


def remove_results(db: sqlite3.Connection, pid: int) -> None:
    """Take a paper's result rows out."""
    bump_generation(db)
    db.execute("DELETE FROM results WHERE pid=?", (pid,))


def replace_taxonomy(db: sqlite3.Connection, links: Iterable[tuple[str, str]]) -> None:
    """Replace the ``taxonomy`` table with these ``(narrower, broader)`` links."""
    bump_generation(db)
    # Links from elsewhere: the bookkeeping of kg.store.index.taxonomy_rows no longer holds.
    db.execute("DELETE FROM meta WHERE key = 'taxonomy'")
    db.execute("DELETE FROM taxonomy")
    db.executemany("INSERT OR IGNORE INTO taxonomy VALUES (?, ?)", list(links))
