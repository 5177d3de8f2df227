"""Results in the index: leaderboards, related papers and comparisons without a scan.

:class:`IndexedResults` answers the questions of
:class:`kg.read.results.ResultsIndex` in the same shapes from the index's
``results`` and ``taxonomy`` tables (:mod:`kg.store.index.result_rows`) and its
``papers``, ``entities``, ``names`` and ``links``: a leaderboard is one indexed
lookup, related papers one join over the paper's links, so nothing has to be
built after a start or a write. Answers are remembered until a write changes
the results.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, unquote

from kg import schema
from kg.mapping.directions import key_direction
from kg.model import EntityType
from kg.store.index.result_rows import GENERATION
from kg.vocab import ID_PREFIX, KG

if TYPE_CHECKING:
    from kg.store.index.db import Index

T = TypeVar("T")

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


_BOARD = "relative = 0 AND number IS NOT NULL AND dataset IS NOT NULL AND metric IS NOT NULL"
_SELECT_ROWS = (
    "SELECT r.paper_id, r.number, r.unit, r.text, r.method, r.proposed, r.claim_text, "
    "r.claim_start, r.claim_end, p.iri, p.title, r.vstart FROM results r "
    "JOIN papers p ON p.pid = r.pid "
)


_MEMO: dict[tuple[Any, ...], Any] = {}
_MEMO_LOCK = threading.Lock()
_MEMO_SIZE = 512


def _memo(method: Callable[..., T]) -> Callable[..., T]:
    """Remember a method's answers while the index's results generation (and file)
    stays the same: a write bumps it, so an answer is never older than the data.
    Callers must not change what they are given."""

    @functools.wraps(method)
    def wrapper(self: IndexedResults, *args: Any, **kwargs: Any) -> T:
        # an iterable argument (compare's papers) is read once, as a tuple
        args = tuple(a if isinstance(a, str | int | float | None) else tuple(a) for a in args)
        key = (self.path, self.generation, method.__name__, args, tuple(sorted(kwargs.items())))
        with _MEMO_LOCK:
            if key in _MEMO:
                return _MEMO[key]  # type: ignore[no-any-return]
        found = method(self, *args, **kwargs)
        with _MEMO_LOCK:
            if len(_MEMO) >= _MEMO_SIZE:
                _MEMO.clear()
            _MEMO[key] = found
        return found

    return wrapper


class IndexedResults:
    """The results read model over the index: the methods of
    :class:`kg.read.results.ResultsIndex`, answered by SQL (and remembered until
    the next write changes the results)."""

    def __init__(self, index: Index) -> None:
        self.db = index.reader()
        row = self.db.execute(
            "SELECT (SELECT value FROM meta WHERE key='instance'), "
            "(SELECT n FROM counts WHERE key=?)",
            (GENERATION,),
        ).fetchone()
        # The file (a rebuilt index is another one at the same path) and its results' state
        self.path = f"{index.path}#{row[0]}"
        self.generation = row[1] or 0

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

    @_memo
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
        return (
            self.db.execute("SELECT 1 FROM papers WHERE id=?", (_id(iri),)).fetchone() is not None
        )

    def ref(self, iri: str | None) -> dict[str, Any] | None:
        """``{iri, label}`` of an entity, or None."""
        return None if iri is None else {"iri": iri, "label": self._label(iri)}

    def paper_ref(self, iri: str) -> dict[str, Any]:
        """``{id, title, href}`` of a paper."""
        row = self.db.execute("SELECT id, title FROM papers WHERE id=?", (_id(iri),)).fetchone()
        pid = row[0] if row else unquote(iri.rsplit("/", 1)[-1])
        return {"id": pid, "title": row[1] if row else None, "href": f"/papers/{pid}"}

    @_memo
    def with_narrower(self, task: str) -> set[str]:
        """A task and every task below it in the taxonomy."""
        rows = self.db.execute(
            "WITH RECURSIVE t(iri) AS (SELECT ? UNION "
            "SELECT x.narrower FROM taxonomy x JOIN t ON x.broader = t.iri) SELECT iri FROM t",
            (task,),
        )
        return {iri for (iri,) in rows}

    # ------------------------------------------------------------ leaderboards

    @_memo
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

    @_memo
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

    @_memo
    def related(self, paper: str, limit: int) -> list[dict[str, Any]] | None:
        """Papers sharing tasks, methods or datasets, by summed IDF; None if unknown."""
        found = self.db.execute("SELECT pid FROM papers WHERE id=?", (_id(paper),)).fetchone()
        if found is None:
            return None
        n = max(self.db.execute("SELECT COUNT(*) FROM papers").fetchone()[0], 1)
        rels = ",".join("?" * len(RELATED_RELATIONS))
        rows = self.db.execute(
            "WITH mine(eid) AS (SELECT DISTINCT eid FROM links WHERE pid = ? "
            f"AND rel IN ({rels})) "
            # an entity of a related kind has only related links: no filter needed here
            "SELECT DISTINCT l.pid, m.eid FROM mine m JOIN links l ON l.eid = m.eid "
            "WHERE l.pid != ?",
            (found[0], *RELATED_RELATIONS, found[0]),
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

    @_memo
    def compare(self, papers: Iterable[str]) -> list[dict[str, Any]]:
        """Each paper's tasks, proposed methods, datasets, metrics and results."""
        out = []
        for iri in papers:
            found = self.db.execute("SELECT pid FROM papers WHERE id=?", (_id(iri),)).fetchone()
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

    @_memo
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


@functools.lru_cache(maxsize=4096)
def _direction(metric: str) -> bool | None:
    return key_direction(unquote(metric.rsplit("/", 1)[-1]))


def _id(iri: str) -> str:
    """A paper's id from its IRI (``papers.id`` is indexed, ``papers.iri`` is not)."""
    return unquote(iri.rsplit("/", 1)[-1])


def _key(iri: str) -> str:
    if iri.startswith(ID_PREFIX) and "/" in iri[len(ID_PREFIX) :]:
        return quote(unquote(iri.rsplit("/", 1)[-1]), safe="-._~")
    return quote(iri, safe="-._~")
