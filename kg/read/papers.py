"""Papers and claims: one page of a list, one paper's detail, claims grouped
from their rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kg.read.base import (
    GROUPS,
    ReadError,
    count,
    entity_ref,
    first,
    paper_summary,
    py,
    solutions,
    take,
)
from kg.read.claims import group_claims
from kg.read.resolve import key_guesses, resolve_entity
from kg.store.embedded import GraphStore
from kg.store.index import index_of
from kg.vocab import CLAIM_KINDS, paper_iri


def papers_page(
    store: GraphStore,
    given: Mapping[str, str | None],
    q: str | None,
    limit: int,
    offset: int,
    *,
    exact: bool = False,
) -> dict[str, Any]:
    """``total``, ``filters`` and the ``items`` of one page of ``GET /papers``.

    One list (no filter, or one entity filter) is counted by a COUNT query and
    paged by pulling only the page's rows, in the store's index order: sorting
    hundreds of IRIs in Oxigraph costs more than the whole request should.
    Several filters (or ``q``) intersect full lists, sorted by IRI in Python.
    With the store's index in step (:mod:`kg.store.index`), all of it is read there."""
    index = index_of(store)
    if index is not None:
        from kg.read import indexed

        return indexed.papers_page(index, store, given, q, limit, offset, exact=exact)
    entity_filters = [(name, value) for name, value in given.items() if value is not None]
    if not entity_filters and q is None:
        total = count(store, "count-papers")
        page = take(solutions(store, "papers"), offset, limit)
        items = [paper_summary(s["paper"], s["title"]) for s in page]
        return {"total": total, "filters": {}, "items": items}
    if len(entity_filters) == 1 and q is None:
        # The common case, one entity given by key or IRI: try that IRI straight
        # away and skip the resolving lookups when it has papers.
        name, value = entity_filters[0]
        for iri in [*key_guesses(value, name), None]:
            if iri is None:
                iri = resolve_entity(store, value, type_name=name, parameter=name)
                if iri is None:
                    return {"total": 0, "filters": {name: None}, "items": []}
            # A task also finds the papers of its narrower tasks unless exact is asked.
            listing, counting, param = (
                ("papers-with-task", "count-papers-with-task", "task")
                if name == "task" and not exact
                else ("papers-with-entity", "count-papers-with-entity", "entity")
            )
            total = count(store, counting, **{param: iri})
            if total:
                page = take(solutions(store, listing, **{param: iri}), offset, limit)
                items = [paper_summary(s["paper"], s["title"]) for s in page]
                return {"total": total, "filters": {name: iri}, "items": items}
        return {"total": 0, "filters": {name: iri}, "items": []}
    filters: dict[str, str | None] = {}
    wanted: list[tuple[str, dict[str, object]]] = []
    for name, value in entity_filters:
        iri = resolve_entity(store, value, type_name=name, parameter=name)
        filters[name] = iri
        if name == "task" and not exact and iri is not None:
            wanted.append(("papers-with-task", {"task": iri}))
        else:
            wanted.append(("papers-with-entity", {"entity": iri}))
    if any(v is None for v in filters.values()):
        return {"total": 0, "filters": filters, "items": []}
    if q is not None:
        wanted.append(("papers-matching-text", {"text": q}))
    found: dict[str, Any] | None = None
    for name, params in wanted:
        current = {s["paper"].value: s["title"] for s in solutions(store, name, **params)}
        found = current if found is None else {k: v for k, v in found.items() if k in current}
    rows = sorted((found or {}).items())
    items = [paper_summary(iri, title) for iri, title in rows[offset : offset + limit]]
    return {"total": len(rows), "filters": filters, "items": items}


def resolve_paper_id(store: GraphStore, given: str) -> str:
    """The paper id for ``given``: itself when a paper has that id, else the id of
    the paper whose source gave it that id (unchanged when none did)."""
    if first(store, "paper", paper=paper_iri(given)) is not None:
        return given
    found = first(store, "paper-by-source-id", source=given)
    return py(found["id"]) if found is not None else given


def paper_detail(store: GraphStore, paper_id: str) -> dict[str, Any] | None:
    """The JSON of one paper, or None when it is not in the graph."""
    iri = paper_iri(paper_id)
    head = first(store, "paper", paper=iri)
    if head is None:
        return None
    out: dict[str, Any] = {
        "id": py(head["id"]),
        "source_id": py(head["sourceId"]),
        "iri": iri.value,
        "title": py(head["title"]),
        "abstract": py(head["abstract"]),
        "year": py(head["year"]),
        "venue": py(head["venue"]),
        "url": py(head["url"]),
        "extractor_version": py(head["extractorVersion"]),
        "authors": [],
        "keywords": [],
        **{group: [] for group in GROUPS.values()},
        "claims": [],
    }
    for s in solutions(store, "paper-lists", paper=iri):
        field = "authors" if s["field"].value.endswith("creator") else "keywords"
        out[field].append(py(s["value"]))
    entities: dict[tuple[str, str], dict[str, Any]] = {}
    for s in solutions(store, "paper-entities", paper=iri):
        relation, entity = s["relation"].value, s["entity"].value
        item = entities.get((relation, entity))
        if item is None:
            item = {
                **entity_ref(entity, s["type"], s["label"]),
                "confidence": py(s["confidence"]),
                "mentions": [],
            }
            entities[(relation, entity)] = item
            out[GROUPS[relation]].append(item)
        if s["mention"] is not None and s["text"] is not None:
            mention = {"text": py(s["text"]), "start": py(s["start"]), "end": py(s["end"])}
            if mention not in item["mentions"]:
                item["mentions"].append(mention)
    for group in GROUPS.values():
        for item in out[group]:
            item["mentions"].sort(key=lambda m: (m["start"], m["end"]))
    claims: list[dict[str, Any]] | None = None
    index = index_of(store)
    if index is not None:
        from kg.read import indexed

        claims = indexed.paper_claims(index, out["id"])
    if claims is None:
        claims = list(group_claims(solutions(store, "paper-claims", paper=iri)))
    out["claims"] = claims
    return out


CLAIM_FILTERS = {
    "subject": "claims-about",
    "metric": "claims-for-metric",
    "dataset": "claims-on-dataset",
    "kind": "claims-of-kind",
}
"""Claim filter → the named query listing the claims that match it."""


def claims_page(
    store: GraphStore, params: Mapping[str, object], limit: int, offset: int
) -> tuple[int, list[dict[str, Any]]]:
    """The number of claims matching every filter in ``params`` and one page of them.

    Each filter is its own indexed query (``claims-about``…, ``claims-with-value``
    for ``min_value``/``max_value``); several are intersected in Python and
    ordered by claim IRI. Without filters, the claims are counted by a COUNT
    query and paged in index order. Details come from ``claim.rq`` per claim of
    the page only. With the store's index in step, all of it is read there."""
    index = index_of(store)
    if index is not None:
        from kg.read import indexed

        return indexed.claims_page(index, store, params, limit, offset)
    sets: list[set[str]] = []
    for name, query in CLAIM_FILTERS.items():
        if name in params:
            sets.append({s["claim"].value for s in solutions(store, query, **{name: params[name]})})
    if "min_value" in params or "max_value" in params:
        bounds = {k: params[k] for k in ("min_value", "max_value") if k in params}
        sets.append({s["claim"].value for s in solutions(store, "claims-with-value", **bounds)})
    if sets:
        matching = sorted(set.intersection(*sets))
        total, page = len(matching), matching[offset : offset + limit]
    else:
        total = count(store, "count-claims", var="claims")
        page = [s["claim"].value for s in take(solutions(store, "claims"), offset, limit)]
    items: list[dict[str, Any]] = []
    for iri in page:
        items.extend(group_claims(solutions(store, "claim", claim=iri), with_paper=True))
    return total, items


def list_claims(
    store: GraphStore,
    *,
    subject: str | None = None,
    kind: str | None = None,
    metric: str | None = None,
    dataset: str | None = None,
    min_value: float | None = None,
    max_value: float | None = None,
    limit: int = 20,
    offset: int = 0,
) -> tuple[int, dict[str, str | None], list[dict[str, Any]]]:
    """Claims matching every filter: their number, the IRI each entity filter
    resolved to (None: no such entity, so nothing matches), and one page."""
    if min_value is not None and max_value is not None and min_value > max_value:
        raise ReadError("min_value", "is greater than max_value")
    filters: dict[str, str | None] = {}
    params: dict[str, object] = {}
    for name, value, type_name in (
        ("subject", subject, None),
        ("metric", metric, "metric"),
        ("dataset", dataset, "dataset"),
    ):
        if value is not None:
            filters[name] = params[name] = resolve_entity(
                store, value, type_name=type_name, parameter=name
            )
    if any(v is None for v in filters.values()):
        return 0, filters, []
    if kind is not None:
        params["kind"] = CLAIM_KINDS[kind]
    if min_value is not None:
        params["min_value"] = min_value
    if max_value is not None:
        params["max_value"] = max_value
    total, items = claims_page(store, params, limit, offset)
    return total, filters, items
