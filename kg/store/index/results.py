"""Results in the index: leaderboards, related papers and comparisons without a scan.

Tables (in the same SQLite file as :mod:`kg.store.index.db`):

* ``results`` — one row per ``kg:Result`` of a paper, with its value, metric,
  dataset, task, method, roles and claim, added and removed with the paper's
  other rows (:func:`add_results`, :func:`remove_results`);
* ``taxonomy`` — the ``skos:broader`` links of the taxonomy graph, replaced whole
  whenever :func:`kg.store.taxonomy.derive_taxonomy` replaces that graph.

:class:`IndexedResults` answers the questions of
:class:`kg.read.results.ResultsIndex` in the same shapes from these tables and
the index's ``papers``, ``entities``, ``names`` and ``links``: a leaderboard is
one indexed lookup, related papers one join over the paper's links, so nothing
has to be built after a start or a write.
"""

from __future__ import annotations

import math
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from pyoxigraph import Quad

from kg import schema
from kg.mapping.directions import key_direction
from kg.model import EntityType
from kg.vocab import ID_PREFIX, KG

if TYPE_CHECKING:
    from kg.store.index.db import Index

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

TASK, METHOD, DATASET, METRIC = (
    schema.kind(t.value).segment
    for t in (EntityType.TASK, EntityType.METHOD, EntityType.DATASET, EntityType.METRIC)
)
ROLES = {KG[r.name].value: r.key for _, r in schema.relations()}
"""Paper → entity property IRI → the JSON key of that role (``tasks``, …)."""
TASK_RELATIONS = tuple(KG[r.name].value for k, r in schema.relations() if k.segment == TASK)
COMPARE_ROLES = tuple(
    r.key for k, r in schema.relations() if r.proposed or not any(x.proposed for x in k.relations)
)
RELATED_RELATIONS = tuple(KG[r.name].value for k, r in schema.relations() if k.segment != METRIC)
"""What relatedness counts: what the papers are about, build on and evaluate on."""

_RESULT_PROPS = {
    KG.inPaper.value: "paper",
    KG.isProposed.value: "proposed",
    KG.isRelative.value: "relative",
    KG.resultValue.value: "value",
    KG.fromClaim.value: "claim",
    KG.resultMetric.value: "metric",
    KG.resultDataset.value: "dataset",
    KG.resultTask.value: "task",
    KG.resultMethod.value: "method",
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
        try:
            row = ResultRow(
                _number(v.get("number")), v.get("unit"), v["text"], int(v["start"]),
                int(v["end"]), r.get("metric"), r.get("dataset"), r.get("task"),
                r.get("method"), r["proposed"] == "true", r["relative"] == "true",
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


def add_results(db: sqlite3.Connection, pid: int, paper_id: str, rows: list[ResultRow]) -> None:
    """Add a paper's result rows (inside the index's write transaction)."""
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
    db.execute("DELETE FROM results WHERE pid=?", (pid,))


def write_taxonomy(index: Index, links: Iterable[tuple[str, str]]) -> None:
    """Replace the ``taxonomy`` table with these ``(narrower, broader)`` links."""
    with index._writer() as db:
        db.execute("DELETE FROM taxonomy")
        db.executemany("INSERT OR IGNORE INTO taxonomy VALUES (?, ?)", list(links))


_BOARD = "relative = 0 AND number IS NOT NULL AND dataset IS NOT NULL AND metric IS NOT NULL"
_SELECT_ROWS = (
    "SELECT r.paper_id, r.number, r.unit, r.text, r.method, r.proposed, r.claim_text, "
    "r.claim_start, r.claim_end, p.iri, p.title, r.vstart FROM results r "
    "JOIN papers p ON p.pid = r.pid "
)


class IndexedResults:
    """The results read model over the index: the methods of
    :class:`kg.read.results.ResultsIndex`, answered by SQL on each call."""

    def __init__(self, index: Index) -> None:
        self.db = index.reader()

    # ------------------------------------------------------------ helpers

    def _label(self, iri: str | None) -> str | None:
        if iri is None:
            return None
        row = self.db.execute("SELECT label FROM entities WHERE iri=?", (iri,)).fetchone()
        return row[0] if row else None

    def _labels(self, iris: Iterable[str]) -> dict[str, str | None]:
        wanted = sorted(set(iris))
        out: dict[str, str | None] = dict.fromkeys(wanted)
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for iri, label in self.db.execute(
                f"SELECT iri, label FROM entities WHERE iri IN ({marks})", chunk
            ):
                out[iri] = label
        return out

    def find(self, segment: str, value: str) -> str | None:
        """The IRI of an entity given as an IRI, ``segment/key``, key, label or alias."""
        type_name = segment.capitalize()
        value = value.strip()
        candidates = [value] if value.startswith(("http://", "https://")) else []
        key = value[len(segment) + 1 :] if value.lower().startswith(segment + "/") else value
        candidates.append(ID_PREFIX + segment + "/" + quote(key, safe="-._~"))
        for iri in candidates:
            row = self.db.execute("SELECT type FROM entities WHERE iri=?", (iri,)).fetchone()
            if row and row[0] == type_name:
                return iri
        row = self.db.execute(
            "SELECT e.iri FROM names n JOIN entities e ON e.eid = n.eid "
            "WHERE n.lname = ? AND e.type = ? ORDER BY e.iri LIMIT 1",
            (value.lower(), type_name),
        ).fetchone()
        return row[0] if row else None

    def has_paper(self, iri: str) -> bool:
        """Whether the paper is in the index."""
        return self.db.execute("SELECT 1 FROM papers WHERE iri=?", (iri,)).fetchone() is not None

    def ref(self, iri: str | None) -> dict[str, Any] | None:
        """``{iri, label}`` of an entity, or None."""
        return None if iri is None else {"iri": iri, "label": self._label(iri)}

    def paper_ref(self, iri: str) -> dict[str, Any]:
        """``{id, title, href}`` of a paper."""
        row = self.db.execute("SELECT id, title FROM papers WHERE iri=?", (iri,)).fetchone()
        pid = row[0] if row else unquote(iri.rsplit("/", 1)[-1])
        return {"id": pid, "title": row[1] if row else None, "href": f"/papers/{pid}"}

    def with_narrower(self, task: str) -> set[str]:
        """A task and every task below it in the taxonomy."""
        rows = self.db.execute(
            "WITH RECURSIVE t(iri) AS (SELECT ? UNION "
            "SELECT x.narrower FROM taxonomy x JOIN t ON x.broader = t.iri) SELECT iri FROM t",
            (task,),
        )
        return {iri for (iri,) in rows}

    # ------------------------------------------------------------ leaderboards

    def leaderboards(
        self,
        *,
        task: str | None = None,
        dataset: str | None = None,
        metric: str | None = None,
        min_results: int = 1,
    ) -> list[dict[str, Any]]:
        """Leaderboards (dataset × metric with absolute results), most results first."""
        where, args = [_BOARD], []
        for column, value in (("dataset", dataset), ("metric", metric)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        counts: dict[tuple[str, str], Counter[str | None]] = defaultdict(Counter)
        for d, m, t, n in self.db.execute(
            f"SELECT dataset, metric, task, COUNT(*) FROM results WHERE {' AND '.join(where)} "
            "GROUP BY dataset, metric, task",
            args,
        ):
            counts[(d, m)][t] += n
        boards = {k: c for k, c in counts.items() if sum(c.values()) >= min_results}
        if task is not None:
            boards = {k: c for k, c in boards.items() if k in self._boards_of(task)}
        labels = self._labels(i for k in boards for i in k)
        tasks = {k: _top_task(c) for k, c in boards.items()}
        task_labels = self._labels(t for t in tasks.values() if t)
        items: list[dict[str, Any]] = []
        for (d, m), c in boards.items():
            top = tasks[(d, m)]
            items.append(
                {
                    DATASET: {"iri": d, "label": labels[d]},
                    METRIC: {"iri": m, "label": labels[m], "higher_is_better": _direction(m)},
                    TASK: {"iri": top, "label": task_labels[top]} if top else None,
                    "results": sum(c.values()),
                    "href": "/leaderboards/" + "/".join(_key(i) for i in (d, m)),
                }
            )
        items.sort(
            key=lambda i: (-i["results"], i[DATASET]["label"] or "", i[METRIC]["label"] or "")
        )
        return items

    def _boards_of(self, task: str) -> set[tuple[str, str]]:
        """Boards with a result whose sentence or paper names the task or a narrower one."""
        rows = self.db.execute(
            "WITH RECURSIVE t(iri) AS (SELECT ? UNION "
            "SELECT x.narrower FROM taxonomy x JOIN t ON x.broader = t.iri) "
            f"SELECT DISTINCT r.dataset, r.metric FROM results r WHERE {_BOARD} AND ("
            "r.task IN (SELECT iri FROM t) OR r.pid IN (SELECT l.pid FROM links l "
            "JOIN entities e ON e.eid = l.eid WHERE e.iri IN (SELECT iri FROM t) "
            f"AND l.rel IN ({','.join('?' * len(TASK_RELATIONS))})))",
            (task, *TASK_RELATIONS),
        )
        return {(d, m) for d, m in rows}

    def leaderboard(self, dataset: str | None, metric: str | None) -> dict[str, Any] | None:
        """One leaderboard, best first by the metric's direction; None when empty."""
        if dataset is None or metric is None:
            return None
        rows: list[Any] = self.db.execute(
            _SELECT_ROWS + f"WHERE r.dataset = ? AND r.metric = ? AND {_BOARD}",
            (dataset, metric),
        ).fetchall()
        if not rows:
            return None
        higher = _direction(metric)
        rows.sort(key=lambda r: (-r[1] if higher is not False else r[1], r[9], r[11]))
        methods = self._labels(r[4] for r in rows if r[4])
        items, rank, previous = [], 0, None
        for position, r in enumerate(rows, start=1):
            if r[1] != previous:
                rank, previous = position, r[1]  # ties share a rank
            items.append(
                {
                    "rank": rank,
                    "value": {"number": r[1], "unit": r[2], "text": r[3]},
                    METHOD: {"iri": r[4], "label": methods[r[4]]} if r[4] else None,
                    "proposed": bool(r[5]),
                    "paper": {"id": r[0], "title": r[10], "href": f"/papers/{r[0]}"},
                    "claim": {"text": r[6], "start": r[7], "end": r[8]},
                }
            )
        return {
            DATASET: self.ref(dataset),
            METRIC: self.ref(metric),
            "higher_is_better": higher,
            "items": items,
        }

    # ------------------------------------------------------------ related papers

    def related(self, paper: str, limit: int) -> list[dict[str, Any]] | None:
        """Papers sharing tasks, methods or datasets, by summed IDF; None if unknown."""
        found = self.db.execute("SELECT pid FROM papers WHERE iri=?", (paper,)).fetchone()
        if found is None:
            return None
        n = max(self.db.execute("SELECT COUNT(*) FROM papers").fetchone()[0], 1)
        rels = ",".join("?" * len(RELATED_RELATIONS))
        rows = self.db.execute(
            "WITH mine(eid) AS (SELECT DISTINCT eid FROM links WHERE pid = ? "
            f"AND rel IN ({rels})) "
            "SELECT DISTINCT l.pid, m.eid FROM mine m JOIN links l ON l.eid = m.eid "
            f"WHERE l.pid != ? AND l.rel IN ({rels})",
            (found[0], *RELATED_RELATIONS, found[0], *RELATED_RELATIONS),
        ).fetchall()
        eids = {eid for _, eid in rows}
        info = {}
        for i in range(0, len(eids), 500):
            chunk = sorted(eids)[i : i + 500]
            for eid, iri, label, type_name, df in self.db.execute(
                "SELECT eid, iri, label, type, papers FROM entities "
                f"WHERE eid IN ({','.join('?' * len(chunk))})",
                chunk,
            ):
                info[eid] = (iri, label, type_name, math.log(n / df) if df else 0.0)
        shared: dict[int, list[int]] = defaultdict(list)
        for pid, eid in rows:
            if info[eid][3] > 0:
                shared[pid].append(eid)
        scores = {pid: round(sum(info[e][3] for e in es), 9) for pid, es in shared.items()}
        iris = dict(
            self.db.execute(
                f"SELECT pid, iri FROM papers WHERE pid IN ({','.join('?' * len(scores))})",
                list(scores),
            ).fetchall()
        )
        best = sorted(scores, key=lambda pid: (-scores[pid], iris[pid]))[:limit]
        return [
            {
                "paper": self.paper_ref(iris[pid]),
                "score": round(scores[pid], 4),
                "shared": [
                    {"iri": info[e][0], "label": info[e][1], "type": info[e][2]}
                    for e in sorted(shared[pid], key=lambda e: (-info[e][3], info[e][0]))
                ],
            }
            for pid in best
        ]

    # ------------------------------------------------------------ comparison

    def compare(self, papers: Iterable[str]) -> list[dict[str, Any]]:
        """Each paper's tasks, proposed methods, datasets, metrics and results."""
        out = []
        for iri in papers:
            found = self.db.execute("SELECT pid FROM papers WHERE iri=?", (iri,)).fetchone()
            if found is None:
                continue
            roles: dict[str, list[dict[str, Any]]] = {role: [] for role in COMPARE_ROLES}
            for rel, e_iri, label in self.db.execute(
                "SELECT DISTINCT l.rel, e.iri, e.label FROM links l "
                "JOIN entities e ON e.eid = l.eid WHERE l.pid = ?",
                found,
            ):
                role = ROLES.get(rel)
                if role in roles:
                    roles[role].append({"iri": e_iri, "label": label})
            for refs in roles.values():
                refs.sort(key=lambda ref: (ref["label"] or "").lower())
            rows = self.db.execute(
                "SELECT number, unit, text, metric, dataset, method, proposed, relative, "
                "claim_text, claim_start, claim_end FROM results WHERE pid = ? "
                "ORDER BY vstart, vend",
                found,
            ).fetchall()
            labels = self._labels(i for r in rows for i in r[3:6] if i)

            def ref(i: str | None, labels: dict[str, str | None] = labels) -> Any:
                return {"iri": i, "label": labels[i]} if i else None

            out.append(
                {
                    "paper": self.paper_ref(iri),
                    **roles,
                    "results": [
                        {
                            "value": {"number": r[0], "unit": r[1], "text": r[2]},
                            "metric": ref(r[3]),
                            "dataset": ref(r[4]),
                            METHOD: ref(r[5]),
                            "proposed": bool(r[6]),
                            "relative": bool(r[7]),
                            "claim": {"text": r[8], "start": r[9], "end": r[10]},
                        }
                        for r in rows
                    ],
                }
            )
        return out

    def task_tree(self, task: str) -> dict[str, list[dict[str, Any]]]:
        """The nodes directly broader and narrower than a task (or method)."""
        out = {}
        for relation, sql in (
            ("broader", "SELECT broader FROM taxonomy WHERE narrower = ?"),
            ("narrower", "SELECT narrower FROM taxonomy WHERE broader = ?"),
        ):
            labels = self._labels(i for (i,) in self.db.execute(sql, (task,)))
            out[relation] = sorted(
                ({"iri": i, "label": label} for i, label in labels.items()),
                key=lambda r: (r["label"] or "").lower(),
            )
        return out


def _top_task(counts: Counter[str | None]) -> str | None:
    """The task most results of a board name (ties: the first IRI)."""
    named = [(-n, t) for t, n in counts.items() if t]
    return min(named)[1] if named else None


def _direction(metric: str) -> bool | None:
    return key_direction(unquote(metric.rsplit("/", 1)[-1]))


def _key(iri: str) -> str:
    if iri.startswith(ID_PREFIX) and "/" in iri[len(ID_PREFIX) :]:
        return quote(unquote(iri.rsplit("/", 1)[-1]), safe="-._~")
    return quote(iri, safe="-._~")
