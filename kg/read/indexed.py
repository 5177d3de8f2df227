"""Reads answered from the search index and aggregates (:mod:`kg.store.index`).

Each function gives exactly the JSON its scanning counterpart in
:mod:`kg.read.papers` / :mod:`kg.read.entities` gives, in the same shapes; those
call these whenever the store's index is in step with the store
(``kg.store.index.index_of``). Point lookups the store answers from its own indexes
(an entity's label and aliases) stay SPARQL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kg import schema
from kg.read import base as rd
from kg.read.claims import group_claims
from kg.read.resolve import key_guesses, resolve_entity
from kg.store.common import GraphStore
from kg.store.index import Index
from kg.store.index import read as ix
from kg.store.index.search import search_entities
from kg.vocab import KG, entity_iri


def _summary(row: tuple[str, str, str | None]) -> dict[str, Any]:
    iri, pid, title = row
    return rd.paper_summary(iri, title, pid)


def _counted(rows: list[tuple[str, str, str | None, int]]) -> list[dict[str, Any]]:
    return [{**rd.entity_ref(iri, KG[t].value, label), "papers": n} for iri, t, label, n in rows]


def papers_page(
    index: Index,
    store: GraphStore,
    given: Mapping[str, str | None],
    q: str | None,
    limit: int,
    offset: int,
    *,
    exact: bool = False,
) -> dict[str, Any]:
    """``GET /papers``: entity filters intersected in the index, ``q`` by BM25.
    A task also stands for the tasks below it in the taxonomy (read from the
    store: the index holds no taxonomy) unless ``exact``."""
    filters: dict[str, str | None] = {}
    for name, value in given.items():
        if value is None:
            continue
        # The IRI a key names directly, when the index knows it: no lookups.
        iri = next((i for i in key_guesses(value, name) if ix.entity_papers_count(index, i)), None)
        filters[name] = iri or resolve_entity(store, value, type_name=name, parameter=name)
    if any(v is None for v in filters.values()):
        return {"total": 0, "filters": filters, "items": []}
    entities: list[str | list[str]] = []
    for name, iri in filters.items():
        assert iri is not None
        if name == "task" and not exact:
            below = [rd.py(s["sub"]) for s in rd.solutions(store, "task-descendants", task=iri)]
            entities.append(sorted({iri, *below}))
        else:
            entities.append(iri)
    total, rows = ix.filtered_papers(index, entities, q, limit, offset)
    return {"total": total, "filters": filters, "items": [_summary(r) for r in rows]}


def search(index: Index, text: str, limit: int) -> dict[str, Any]:
    """``GET /search``: entities by name (trigram index), papers by BM25."""
    entities = [
        {
            **rd.entity_ref(e["iri"], KG[e["type"]].value, e["label"]),
            "papers": e["papers"],
            "matched": e["matched"],
        }
        for e in search_entities(index, text, limit)
    ]
    papers = [_summary(r) for r in ix.search_papers(index, text, limit)]
    return {"q": text, "entities": entities, "papers": papers}


def list_entities(
    index: Index, type_name: str, prefix: str | None, limit: int, offset: int
) -> tuple[int, list[dict[str, Any]]]:
    """``GET /tasks`` and friends: the total and one page, most papers first."""
    total, rows = ix.ranked_entities(index, schema.kind(type_name).name, prefix, limit, offset)
    return total, _counted(rows)


def entity_detail(
    index: Index,
    store: GraphStore,
    type_name: str,
    key: str,
    *,
    papers_limit: int,
    papers_offset: int = 0,
    related_limit: int,
) -> dict[str, Any] | None:
    """``GET /entities/{type}/{key}``: papers and related entities from the index."""
    iri = entity_iri(schema.kind(type_name).name, key)
    head = rd.first(store, "entity", entity=iri)
    if head is None or head["type"].value != rd.TYPES[type_name].value:
        return None
    out = rd.entity_ref(iri, head["type"], head["label"])
    out["aliases"] = [rd.py(s["alias"]) for s in rd.solutions(store, "entity-aliases", entity=iri)]
    total, rows = ix.entity_papers(index, iri, papers_limit, papers_offset)
    out["paper_count"] = total
    out["papers"] = [
        {**rd.paper_summary(piri, title, pid), "relations": [rd.RELATIONS.get(r, r) for r in rels]}
        for piri, pid, title, rels in rows
    ]
    out["related"] = {
        t + "s": _counted(ix.related(index, iri, t.capitalize(), related_limit)) for t in rd.TYPES
    }
    return out


def claims_page(
    index: Index, store: GraphStore, params: Mapping[str, object], limit: int, offset: int
) -> tuple[int, list[dict[str, Any]]]:
    """``GET /claims``: filters in the index, each claim of the page from the store."""
    total, page = ix.claims(index, dict(params), limit, offset)
    details = ix.claim_details(index, page)
    if details is not None:
        return total, [_claim(d) for d in details]
    items: list[dict[str, Any]] = []
    for iri in page:
        items.extend(group_claims(rd.solutions(store, "claim", claim=iri), with_paper=True))
    return total, items


def paper_claims(index: Index, paper_id: str) -> list[dict[str, Any]] | None:
    """A paper's claims as ``GET /papers/{id}`` shows them (``paper-claims.rq``'s
    order: by start, then IRI), from the index's stored JSON; None when that
    is missing. At 100k papers the query took 9 ms of the detail's 19."""
    details = ix.claim_details(index, ix.paper_claims(index, paper_id))
    if details is None:
        return None
    claims = [_claim(d) for d in details]
    for claim in claims:
        del claim["paper"]
    return sorted(claims, key=lambda c: (c["start"], c["iri"]))


def _claim(d: dict[str, Any]) -> dict[str, Any]:
    """A claim's stored JSON in the shape of :func:`service.rest_data.group_claims`."""
    piri, pid, title = d.pop("paper")
    kind = d.pop("kind")
    return {
        "iri": d.pop("iri"),
        "text": d["text"],
        "start": d["start"],
        "end": d["end"],
        "kind": rd.KIND_NAME.get(kind or ""),
        **{k: v for k, v in d.items() if k not in {"text", "start", "end"}},
        "paper": rd.paper_summary(piri, title, pid),
    }


def stats(index: Index, top: int) -> dict[str, Any]:
    """``GET /stats`` from the maintained counters."""
    names = {
        "Paper": "papers",
        **{k.name: k.plural for k in schema.ENTITY_TYPES},
        "Claim": "claims",
    }
    found = ix.class_counts(index)
    counts = {plural: found.get(cls, 0) for cls, plural in names.items()}
    return {
        "counts": counts,
        "top_tasks": _counted(ix.ranked_entities(index, "Task", None, top, 0)[1]),
        "top_methods": _counted(ix.ranked_entities(index, "Method", None, top, 0)[1]),
    }
