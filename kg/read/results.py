"""The results read model: leaderboards, related papers, comparisons, task trees.

Two implementations answer the same methods in the same shapes:

* :class:`kg.store.index.results.IndexedResults` reads the store's index (the
  SQLite file beside it, kept in step by every paper write): nothing is built,
  each answer is a lookup. :func:`indexed_results` gives it while the index
  is in step with the store;
* :class:`ResultsIndex` reads the store once through named queries
  (``results``, ``store/result-index``, ``store/entity-labels``,
  ``store/taxonomy``, ``papers``) and answers from memory: the fallback for a
  store without a usable index. :class:`ResultsIndexCache` keeps the last one
  while the caller's data token (the service's store generation) is unchanged.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from kg import schema
from kg.model import EntityType
from kg.store.embedded import GraphStore
from kg.store.index.result_rows import ResultRow
from kg.store.index.results import IndexedResults
from kg.store.queries import rows, run
from kg.vocab import ID_PREFIX, KG

# The JSON keys and roles come from kg.schema: an entity kind's segment (task,
# dataset, …) names one entity, a relation's key (its plural list) a paper's role.
TASK, METHOD, DATASET, METRIC = (
    schema.kind(t.value).segment
    for t in (EntityType.TASK, EntityType.METHOD, EntityType.DATASET, EntityType.METRIC)
)
_ROLES = {KG[r.name].value: r.key for _, r in schema.relations()}
_TASK_ROLE = next(r.key for k, r in schema.relations() if k.segment == TASK)
_METRIC_ROLE = next(r.key for k, r in schema.relations() if k.segment == METRIC)
# What relatedness counts: what the papers are about, build on and evaluate on.
# Side by side: each kind's list, only the proposed ones of a kind that has them.
_COMPARE_ROLES = tuple(
    r.key for k, r in schema.relations() if r.proposed or not any(x.proposed for x in k.relations)
)
_RELATED_FIELDS = tuple(r.key for k, r in schema.relations() if k.segment != METRIC)


@dataclass(slots=True)
class IndexedResult(ResultRow):
    """One result row, with plain Python values, and the paper it is of."""

    paper: str


@dataclass(slots=True)
class PaperLinks:
    """A paper's title and its entities by role."""

    title: str | None = None
    links: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


def _py(term: Any) -> Any:
    if term is None:
        return None
    value = term.value
    datatype = getattr(getattr(term, "datatype", None), "value", "")
    if datatype.endswith("#boolean"):
        return value == "true"
    if datatype.endswith(("#integer", "#int")):
        return int(value)
    if datatype.endswith(("#double", "#decimal", "#float")):
        return float(value)
    return value


def paper_id(iri: str) -> str:
    """The id of a paper IRI."""
    return unquote(iri.rsplit("/", 1)[-1])


def entity_key(iri: str) -> tuple[str, str] | None:
    """``(segment, key)`` of an entity IRI, e.g. the segment and ``imagenet``."""
    if not iri.startswith(ID_PREFIX):
        return None
    segment, _, key = iri[len(ID_PREFIX) :].partition("/")
    return (segment, unquote(key)) if key else None


class ResultsIndex:
    """Everything the results endpoints need, read from the store once."""

    def __init__(self, store: GraphStore) -> None:
        self.labels: dict[str, str] = {}
        self.types: dict[str, str] = {}
        self.direction: dict[str, bool | None] = {}
        for r in rows(run(store, "store/entity-types")):
            iri = r["entity"].value
            self.types[iri] = r["type"].value.rsplit("#", 1)[-1]
            if r.get("higherIsBetter") is not None:
                self.direction[iri] = _py(r["higherIsBetter"])
        for r in rows(run(store, "store/entity-labels")):
            self.labels[r["entity"].value] = r["label"].value
        # Lower-cased label or alias → IRIs, for resolving what a user typed.
        self.names: dict[str, set[str]] = defaultdict(set)
        for iri, label in self.labels.items():
            self.names[label.lower()].add(iri)
        for r in rows(run(store, "store/entity-altlabels")):
            self.names[r["alias"].value.lower()].add(r["entity"].value)
        self.papers: dict[str, PaperLinks] = {}
        for r in rows(run(store, "papers")):
            self.papers[r["paper"].value] = PaperLinks(_py(r.get("title")))
        for r in rows(run(store, "store/result-index")):
            role = _ROLES.get(r["predicate"].value)
            paper = self.papers.get(r["paper"].value)
            if role is not None and paper is not None:
                paper.links[role].add(r["entity"].value)
        self.results: list[IndexedResult] = []
        for r in rows(run(store, "results")):
            v = {k: _py(t) for k, t in r.items()}
            self.results.append(
                IndexedResult(
                    v.get("number"),
                    v.get("unit"),
                    v["valueText"],
                    v["valueStart"],
                    v["valueEnd"],
                    v.get("resultMetric"),
                    v.get("resultDataset"),
                    v.get("resultTask"),
                    v.get("resultMethod"),
                    v["proposed"],
                    v["relative"],
                    v["claimText"],
                    v["claimStart"],
                    v["claimEnd"],
                    v["paper"],
                )  # fmt: skip
            )
        self.narrower: dict[str, set[str]] = defaultdict(set)
        self.broader: dict[str, set[str]] = defaultdict(set)
        for r in rows(run(store, "store/taxonomy")):
            self.narrower[r["broader"].value].add(r["narrower"].value)
            self.broader[r["narrower"].value].add(r["broader"].value)
        self.by_paper: dict[str, list[IndexedResult]] = defaultdict(list)
        self.boards: dict[tuple[str, str], list[IndexedResult]] = defaultdict(list)
        for res in self.results:
            self.by_paper[res.paper].append(res)
            if not res.relative and res.number is not None and res.dataset and res.metric:
                self.boards[(res.dataset, res.metric)].append(res)
        # Document frequency of every entity a relatedness score can share.
        self.frequency: Counter[str] = Counter()
        self.postings: dict[str, list[str]] = defaultdict(list)
        for iri, paper in self.papers.items():
            for entity in self._related_entities(paper):
                self.frequency[entity] += 1
                self.postings[entity].append(iri)

    # ------------------------------------------------------------ helpers

    def find(self, segment: str, value: str) -> str | None:
        """The IRI of a ``task``/``method``/``dataset``/``metric`` given as an IRI,
        ``segment/key``, key, label or alias (any case); None when there is none."""
        type_name = segment.capitalize()
        value = value.strip()
        candidates = [value] if value.startswith(("http://", "https://")) else []
        key = value[len(segment) + 1 :] if value.lower().startswith(segment + "/") else value
        candidates.append(ID_PREFIX + segment + "/" + quote(key, safe="-._~"))
        candidates.extend(sorted(self.names.get(value.lower(), ())))
        return next((iri for iri in candidates if self.types.get(iri) == type_name), None)

    @staticmethod
    def _related_entities(paper: PaperLinks) -> set[str]:
        return set().union(*(paper.links.get(f, set()) for f in _RELATED_FIELDS))

    def has_paper(self, iri: str) -> bool:
        """Whether the paper is in the store."""
        return iri in self.papers

    def ref(self, iri: str | None) -> dict[str, Any] | None:
        """``{iri, label}`` of an entity, or None."""
        if iri is None:
            return None
        return {"iri": iri, "label": self.labels.get(iri)}

    def paper_ref(self, iri: str) -> dict[str, Any]:
        """``{id, title, href}`` of a paper."""
        pid = paper_id(iri)
        paper = self.papers.get(iri)
        return {"id": pid, "title": paper.title if paper else None, "href": f"/papers/{pid}"}

    def with_narrower(self, task: str) -> set[str]:
        """A task and every task below it in the taxonomy."""
        seen = {task}
        todo = [task]
        while todo:
            for child in self.narrower.get(todo.pop(), ()):
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
        return seen

    # ------------------------------------------------------------ leaderboards

    def leaderboards(
        self,
        *,
        task: str | None = None,
        dataset: str | None = None,
        metric: str | None = None,
        min_results: int = 1,
    ) -> list[dict[str, Any]]:
        """Leaderboards (dataset × metric with absolute results), most results first.

        ``task`` keeps boards with a result of a paper that addresses the task or
        a narrower one, or whose sentence names such a task.
        """
        tasks = self.with_narrower(task) if task else None
        items = []
        for (d, m), results in self.boards.items():
            if (dataset and d != dataset) or (metric and m != metric) or len(results) < min_results:
                continue
            if tasks is not None and not any(
                r.task in tasks or tasks & self.papers[r.paper].links.get(_TASK_ROLE, set())
                for r in results
                if r.paper in self.papers
            ):
                continue
            counts = Counter(r.task for r in results if r.task)
            # ties: the first IRI, as the indexed read model does
            top_task = min((-n, t) for t, n in counts.items())[1] if counts else None
            dk, mk = entity_key(d), entity_key(m)
            items.append(
                {
                    DATASET: self.ref(d),
                    METRIC: {**self.ref(m), "higher_is_better": self.direction.get(m)},
                    TASK: self.ref(top_task),
                    "results": len(results),
                    "href": "/leaderboards/"
                    + "/".join(quote(k[1] if k else i, safe="-._~") for k, i in ((dk, d), (mk, m))),
                }
            )
        items.sort(
            key=lambda i: (-i["results"], i[DATASET]["label"] or "", i[METRIC]["label"] or "")
        )
        return items

    def leaderboard(self, dataset: str, metric: str) -> dict[str, Any] | None:
        """One leaderboard, best first by the metric's direction; None when empty.

        Unknown direction: highest first, and ``higher_is_better`` is null.
        """
        results = self.boards.get((dataset, metric))
        if not results:
            return None
        higher = self.direction.get(metric)
        ordered = sorted(
            results,
            key=lambda r: (-r.number if higher is not False else r.number, r.paper, r.start),
        )
        items = []
        rank = 0
        previous: float | None = None
        for position, r in enumerate(ordered, start=1):
            if r.number != previous:
                rank, previous = position, r.number  # ties share a rank
            items.append(
                {
                    "rank": rank,
                    "value": {"number": r.number, "unit": r.unit, "text": r.text},
                    METHOD: self.ref(r.method),
                    "proposed": r.proposed,
                    "paper": self.paper_ref(r.paper),
                    "claim": {"text": r.claim_text, "start": r.claim_start, "end": r.claim_end},
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
        """Papers sharing tasks, methods or datasets, by summed IDF; None if unknown.

        IDF is ``log(N / df)``: an entity every paper has counts nothing, one
        that two papers share counts most. The paper itself is never listed.
        """
        links = self.papers.get(paper)
        if links is None:
            return None
        n = max(len(self.papers), 1)
        scores: dict[str, float] = defaultdict(float)
        shared: dict[str, list[str]] = defaultdict(list)
        for entity in self._related_entities(links):
            df = self.frequency.get(entity, 0)
            idf = math.log(n / df) if df else 0.0
            if idf <= 0:
                continue
            for other in self.postings.get(entity, ()):
                if other != paper:
                    scores[other] += idf
                    shared[other].append(entity)
        # Rounded before ranking so that the summation order never decides a tie.
        scores = {other: round(score, 9) for other, score in scores.items()}
        best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return [
            {
                "paper": self.paper_ref(other),
                "score": round(score, 4),
                "shared": [
                    {"iri": e, "label": self.labels.get(e), "type": self.types.get(e)}
                    for e in sorted(
                        shared[other], key=lambda e: (-math.log(n / self.frequency[e]), e)
                    )
                ],
            }
            for other, score in best
        ]

    # ------------------------------------------------------------ comparison

    def compare(self, papers: Iterable[str]) -> list[dict[str, Any]]:
        """Each paper's tasks, proposed methods, datasets, metrics and results."""
        out = []
        for iri in papers:
            links = self.papers.get(iri)
            if links is None:
                continue

            def refs(role: str, links: PaperLinks = links) -> list[dict[str, Any]]:
                found = [self.ref(e) for e in links.links.get(role, set())]
                return sorted(found, key=lambda ref: (ref["label"] or "").lower())

            out.append(
                {
                    "paper": self.paper_ref(iri),
                    **{role: refs(role) for role in _COMPARE_ROLES},
                    "results": [
                        {
                            "value": {"number": r.number, "unit": r.unit, "text": r.text},
                            "metric": self.ref(r.metric),
                            "dataset": self.ref(r.dataset),
                            METHOD: self.ref(r.method),
                            "proposed": r.proposed,
                            "relative": r.relative,
                            "claim": {
                                "text": r.claim_text,
                                "start": r.claim_start,
                                "end": r.claim_end,
                            },
                        }
                        for r in sorted(self.by_paper.get(iri, []), key=lambda r: r.start)
                    ],
                }
            )
        return out

    def task_tree(self, task: str) -> dict[str, list[dict[str, Any]]]:
        """The tasks directly broader and narrower than a task."""

        def refs(iris: Iterable[str]) -> list[dict[str, Any]]:
            return sorted((self.ref(i) for i in iris), key=lambda r: (r["label"] or "").lower())

        return {
            "broader": refs(self.broader.get(task, ())),
            "narrower": refs(self.narrower.get(task, ())),
        }


def indexed_results(store: GraphStore) -> IndexedResults | None:
    """The results read model over the store's index when the index is in step
    with the store (nothing to build: every answer is a lookup), else None."""
    from kg.store.index import index_of

    index = index_of(store)
    return IndexedResults(index) if index is not None else None


class ResultsIndexCache:
    """The last :class:`ResultsIndex`, reused while the caller's token is unchanged."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._build = threading.Lock()
        self._key: tuple[int, Hashable] | None = None
        self._index: ResultsIndex | None = None

    def get(self, store: GraphStore, token: Hashable) -> ResultsIndex:
        """The index for this store and token (built now when the token is new)."""
        key = (id(store), token)
        with self._lock:
            if self._key == key and self._index is not None:
                return self._index
        # One build at a time: concurrent first requests wait for it instead of
        # each reading the whole store.
        with self._build:
            with self._lock:
                if self._key == key and self._index is not None:
                    return self._index
            index = ResultsIndex(store)
            with self._lock:
                self._key, self._index = key, index
            return index


__all__ = ["ResultsIndex", "ResultsIndexCache", "entity_key", "indexed_results", "paper_id"]
