"""Entities: one page of a type's entities, one entity's detail, search."""

from __future__ import annotations

from typing import Any

from kg import schema
from kg.read.base import (
    RELATIONS,
    TYPE_NAME,
    TYPES,
    check_text,
    count,
    entity_counts,
    entity_ref,
    first,
    paper_summary,
    py,
    slice_solutions,
    solutions,
    take,
    with_labels,
)
from kg.store.embedded import GraphStore
from kg.store.index import index_of
from kg.vocab import entity_iri


def search_entities(store: GraphStore, text: str, limit: int) -> list[dict[str, Any]]:
    """Entities with papers whose label or an alias contains ``text``, best first.

    One scan finds the matching names; only the best ``limit`` entities by how
    closely a name matches get their type, label and paper count looked up."""
    wanted = text.lower()
    best: dict[str, tuple[int, int, str]] = {}
    for s in solutions(store, "search-entities", text=text):
        name = s["name"].value
        low = name.lower()
        rank = (0 if low == wanted else 1 if low.startswith(wanted) else 2, len(low), name)
        iri = s["entity"].value
        if iri not in best or rank < best[iri]:
            best[iri] = rank
    found: list[tuple[tuple[int, int, int], dict[str, Any]]] = []
    # Twice the page of candidates: some may have no papers any more.
    for iri, rank in sorted(best.items(), key=lambda item: item[1])[: 2 * limit]:
        head = first(store, "entity", entity=iri)
        papers = count(store, "count-papers-with-entity", entity=iri)
        if head is None or not papers:
            continue
        item = {
            **entity_ref(iri, head["type"], head["label"]),
            "papers": papers,
            "matched": rank[2],
        }
        found.append(((rank[0], -papers, rank[1]), item))
    found.sort(key=lambda pair: pair[0])
    return [item for _, item in found[:limit]]


def list_entities(
    store: GraphStore, type_name: str, prefix: str | None, limit: int, offset: int
) -> tuple[int, list[dict[str, Any]]]:
    """How many entities of a type (URL segment) have papers, and one page of them
    with paper counts, most papers first."""
    prefix = check_text("prefix", prefix) if prefix is not None else None
    index = index_of(store)
    if index is not None:
        from kg.read import indexed

        return indexed.list_entities(index, type_name, prefix, limit, offset)
    if prefix is None:
        total = count(store, "count-entities-by-type", var="entities", type=TYPES[type_name])
        page = take(solutions(store, "entities-by-type", type=TYPES[type_name]), offset, limit)
        items = with_labels(store, page)
    else:
        result = solutions(store, "entities-by-type-prefix", type=TYPES[type_name], prefix=prefix)
        total, page = slice_solutions(result, offset, limit)
        items = entity_counts(page)
    return total, items


def entity_detail(
    store: GraphStore,
    type_name: str,
    key: str,
    *,
    papers_limit: int = 100,
    papers_offset: int = 0,
    related_limit: int = 20,
) -> dict[str, Any] | None:
    """The JSON of one entity, or None when the graph has no entity of that type and
    key; its papers by id, ``papers_limit`` of them from ``papers_offset`` on."""
    index = index_of(store)
    if index is not None:
        from kg.read import indexed

        found = indexed.entity_detail(
            index,
            store,
            type_name,
            key,
            papers_limit=papers_limit,
            papers_offset=papers_offset,
            related_limit=related_limit,
        )
        return _with_task_tree(store, type_name, found)
    iri = entity_iri(schema.kind(type_name).name, key)
    head = first(store, "entity", entity=iri)
    if head is None or head["type"].value != TYPES[type_name].value:
        return None
    out = entity_ref(iri, head["type"], head["label"])
    out["aliases"] = [py(s["alias"]) for s in solutions(store, "entity-aliases", entity=iri)]
    papers: dict[str, dict[str, Any]] = {}
    for s in solutions(store, "entity-papers", entity=iri):
        paper = papers.get(s["paper"].value)
        if paper is None:
            paper = {**paper_summary(s["paper"], s["title"]), "relations": []}
            papers[s["paper"].value] = paper
        paper["relations"].append(RELATIONS.get(s["relation"].value, s["relation"].value))
    out["paper_count"] = len(papers)
    out["papers"] = sorted(papers.values(), key=lambda p: p["id"])[
        papers_offset : papers_offset + papers_limit
    ]
    plural = {k.segment: k.plural for k in schema.ENTITY_TYPES}
    kept: dict[str, list[Any]] = {k.plural: [] for k in schema.ENTITY_TYPES}
    for row in solutions(store, "related-entities", entity=iri):
        group = kept.get(plural.get(TYPE_NAME.get(row["type"].value, ""), ""))
        if group is not None and len(group) < related_limit:
            group.append(row)
    related = {group: with_labels(store, rows, var="other") for group, rows in kept.items()}
    out["related"] = related
    return _with_task_tree(store, type_name, out)


def _with_task_tree(
    store: GraphStore, type_name: str, out: dict[str, Any] | None
) -> dict[str, Any] | None:
    """A task's or method's detail with the nodes directly ``broader`` and
    ``narrower`` than it (methods: only the links a paper's text states)."""
    if out is None or type_name not in ("task", "method"):
        return out
    for relation in ("broader", "narrower"):
        out[relation] = []
    for s in solutions(store, "task-hierarchy", task=out["iri"]):
        relation = s["relation"].value.rsplit("#", 1)[-1]
        out[relation].append(entity_ref(s["other"].value, TYPES[type_name], s["label"]))
    return out


def search_papers(store: GraphStore, text: str, limit: int) -> list[dict[str, Any]]:
    """Papers whose title or abstract contains ``text``, best first: title matches,
    then the papers that mention it most often, then the earliest mention."""
    wanted = text.lower()
    ranked: list[tuple[tuple[int, int, int, str], dict[str, Any]]] = []
    for s in solutions(store, "search-papers", text=text):
        title = (py(s["title"]) or "").lower()
        abstract = (py(s["abstract"]) or "").lower()
        first_at = abstract.find(wanted)
        rank = (
            0 if wanted in title else 1,
            -(title.count(wanted) + abstract.count(wanted)),
            first_at if first_at >= 0 else len(abstract),
            s["paper"].value,
        )
        ranked.append((rank, paper_summary(s["paper"], s["title"])))
    ranked.sort(key=lambda pair: pair[0])
    return [item for _, item in ranked[:limit]]


def search(store: GraphStore, text: str, limit: int) -> dict[str, Any]:
    """Entities whose label or an alias contains ``text`` (see :func:`search_entities`)
    and papers whose title or abstract contains it (see :func:`search_papers`)."""
    text = check_text("q", text) or ""
    index = index_of(store)
    if index is not None:
        from kg.read import indexed

        return indexed.search(index, text, limit)
    return {
        "q": text,
        "entities": search_entities(store, text, limit),
        "papers": search_papers(store, text, limit),
    }


def class_counts(store: GraphStore) -> dict[str, int]:
    """How many nodes of each class (local name: ``Paper``, ``Task``…, ``Claim``)."""
    return {
        s["class"].value.rsplit("#", 1)[-1]: int(py(s["count"]))
        for s in solutions(store, "class-counts")
    }


def stats(store: GraphStore, top: int) -> dict[str, Any]:
    """How many papers, entities of each type and claims the graph holds, and the
    tasks and methods with most papers."""
    index = index_of(store)
    if index is not None:
        from kg.read import indexed

        return indexed.stats(index, top)
    names = {
        "Paper": "papers",
        **{k.name: k.plural for k in schema.ENTITY_TYPES},
        "Claim": "claims",
    }
    counts = dict.fromkeys(names.values(), 0)
    for name, number in class_counts(store).items():
        if name in names:
            counts[names[name]] = number

    def tops(type_name: str) -> list[dict[str, Any]]:
        page = take(solutions(store, "entities-by-type", type=TYPES[type_name]), 0, top)
        return with_labels(store, page)

    # No triple count: len() of a store walks every quad (~0.3 s for 1.3 M).
    return {"counts": counts, "top_tasks": tops("task"), "top_methods": tops("method")}
