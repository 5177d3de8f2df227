"""The data behind the REST API: named queries run and their results shaped
into the API's JSON. Shared by the REST routes (:mod:`service.api`) and the
dereferencing pages (:mod:`service.pages`).

Every value from a client reaches SPARQL only as a substitution through
:mod:`kg.queries`; a value that does not fit its parameter is a 422 naming it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from enum import StrEnum
from itertools import islice
from typing import Any
from urllib.parse import quote, unquote

from fastapi import Request
from pyoxigraph import Literal, NamedNode, QuerySolutions

from kg.model import EntityType
from kg.queries import ParameterError, default_registry
from kg.store import GraphStore, QueryResult
from kg.vocab import CLAIM_KINDS, ID_PREFIX, KG, entity_iri, paper_iri
from service.errors import InvalidParameter

MAX_PAGE = 200
MAX_OFFSET = 1_000_000
MAX_RECORDS = 100
"""Most abstracts one ``POST /papers`` may carry: extraction runs in the request."""
MAX_FILTER = 500
"""Longest entity filter or search text accepted (longer is a 422, not a scan)."""

class EntityKind(StrEnum):
    """The entity types as URL segments."""

    task = "task"
    method = "method"
    dataset = "dataset"
    metric = "metric"


TYPES: dict[str, NamedNode] = {t.value.lower(): KG[t.value] for t in EntityType}
"""URL segment (``task``) → ontology class."""
_TYPE_NAME = {cls.value: name for name, cls in TYPES.items()}

RELATIONS: dict[str, str] = {
    KG.addressesTask.value: "addresses",
    KG.proposesMethod.value: "proposes",
    KG.usesMethod.value: "uses",
    KG.evaluatesOn.value: "evaluates_on",
    KG.reportsMetric.value: "reports",
}
"""Paper → entity property → the name the API gives it."""

_GROUP = {
    KG.addressesTask.value: "tasks",
    KG.usesMethod.value: "methods",
    KG.proposesMethod.value: "proposed_methods",
    KG.evaluatesOn.value: "datasets",
    KG.reportsMetric.value: "metrics",
}
_KIND_NAME = {iri.value: name for name, iri in CLAIM_KINDS.items()}
_TYPED_KEY = re.compile(r"^(task|method|dataset|metric)/(.+)$", re.IGNORECASE)
_ABSOLUTE = re.compile(r"^(https?|urn):", re.IGNORECASE)
PAPER_PREFIX = ID_PREFIX + "paper/"


def run(store: GraphStore, name: str, **params: object) -> QueryResult:
    """Run a named query; a parameter the client supplied that does not fit → 422."""
    try:
        return default_registry().run(store, name, params)
    except ParameterError as exc:
        raise invalid(exc.parameter, exc.message) from None


def invalid(parameter: str, message: str, *, where: str = "query") -> InvalidParameter:
    """A 422 naming the parameter, in the same shape as FastAPI's validation errors."""
    return InvalidParameter(
        f"invalid parameter: {parameter}: {message}",
        errors=[{"parameter": parameter, "in": where, "message": message}],
    )


def solutions(store: GraphStore, name: str, **params: object) -> QuerySolutions:
    result = run(store, name, **params)
    assert isinstance(result, QuerySolutions)
    return result


def py(term: object) -> Any:
    """An RDF term as a plain Python value (numbers typed, IRIs as strings)."""
    if term is None:
        return None
    if isinstance(term, Literal):
        dt = term.datatype.value.rsplit("#", 1)[-1]
        try:
            if dt in {"integer", "int", "long", "gYear"}:
                return int(term.value)
            if dt in {"double", "decimal", "float"}:
                return float(term.value)
        except ValueError:
            return term.value
        if dt == "boolean":
            return term.value == "true"
        return term.value
    return getattr(term, "value", str(term))


def entity_key(iri: str) -> tuple[str, str] | None:
    """``(type, key)`` of an entity IRI of this graph, or None for other IRIs."""
    if not iri.startswith(ID_PREFIX):
        return None
    kind, _, key = iri[len(ID_PREFIX):].partition("/")
    if kind not in TYPES or not key:
        return None
    return kind, unquote(key)


def entity_href(iri: str) -> str:
    found = entity_key(iri)
    if found is None:
        return "/entities?iri=" + quote(iri, safe="")
    return f"/entities/{found[0]}/{quote(found[1], safe='')}"


def paper_href(paper_id: str) -> str:
    return "/papers/" + quote(paper_id, safe="")


def entity_ref(iri: str, type_iri: object, label: object) -> dict[str, Any]:
    found = entity_key(iri)
    type_name = _TYPE_NAME.get(py(type_iri) or "", found[0] if found else "")
    return {
        "iri": iri,
        "type": type_name,
        "key": found[1] if found else iri,
        "label": py(label),
        "href": entity_href(iri),
    }


def paper_summary(paper: object, title: object, pid: object = None) -> dict[str, Any]:
    """A paper in a list; its id is read from its IRI unless given."""
    iri = py(paper)
    paper_id = py(pid) if pid is not None else paper_id_of(iri)
    return {"iri": iri, "id": paper_id, "title": py(title), "href": paper_href(paper_id)}


def paper_id_of(iri: str) -> str:
    """The id of a paper from its IRI (``kg.vocab.paper_iri`` percent-encodes it)."""
    return unquote(iri[len(PAPER_PREFIX):]) if iri.startswith(PAPER_PREFIX) else iri


def take(result: QuerySolutions, offset: int, limit: int) -> list[Any]:
    """The solutions of one page, pulling no more rows than needed: the store
    evaluates lazily, so a first page of a long unsorted list is cheap."""
    return list(islice(result, offset, offset + limit))


def count(store: GraphStore, name: str, *, var: str = "papers", **params: object) -> int:
    """The single number a counting query returns (its ``var`` variable)."""
    row = next(iter(solutions(store, name, **params)), None)
    return int(py(row[var])) if row is not None else 0


def page_links(request: Request, total: int, limit: int, offset: int) -> dict[str, Any]:
    """``next``/``previous`` URLs of a list (relative to the server root)."""
    def link(new_offset: int) -> str:
        query = request.url.include_query_params(offset=new_offset, limit=limit).query
        return f"{request.url.path}?{query}"

    return {
        "total": total,
        "limit": limit,
        "offset": offset,
        "next": link(offset + limit) if offset + limit < total else None,
        "previous": link(max(0, offset - limit)) if offset > 0 and total else None,
    }


def check_text(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    if not value.strip():
        raise invalid(name, "is empty")
    if "\x00" in value:
        raise invalid(name, "contains a NUL character")
    return value.strip()


def resolve_entity(
    store: GraphStore, value: str, *, type_name: str | None, parameter: str
) -> str | None:
    """The IRI an entity filter names, or None when the graph has no such entity.

    Tried in order: an absolute IRI; ``type/key``; a key of the given type (as
    given, then as the extractor would canonicalise it, so ``Machine Unlearning``
    finds ``machine-unlearning``); a label or alias of the given type (or of any
    type when none is given), ignoring case.
    """
    value = check_text(parameter, value) or ""
    if _ABSOLUTE.match(value):
        try:
            NamedNode(value)
        except ValueError:
            raise invalid(parameter, "is not a valid IRI") from None
        return value
    types = [type_name] if type_name else list(TYPES)
    for iri in key_candidates(value, types):
        if next(iter(solutions(store, "entity", entity=iri)), None) is not None:
            return iri
    # A label as written is an index lookup; any other case needs a scan of labels.
    for query in ("entity-by-exact-label", "entity-by-label"):
        for t in types:
            hit = next(iter(solutions(store, query, type=TYPES[t], label=value)), None)
            if hit is not None:
                return hit["entity"].value
    return None


def key_candidates(value: str, types: list[str]) -> list[str]:
    """Entity IRIs a non-IRI filter value may name, most likely first."""
    from kg.extraction.canonical import canonical_key  # the extractor's own key rule

    typed = _TYPED_KEY.match(value)
    if typed and typed[1].lower() in types:
        types, keys = [typed[1].lower()], [typed[2]]
    else:
        keys = [value]
    keys.append(canonical_key(keys[0]))
    out: list[str] = []
    for t in types:
        for key in keys:
            iri = entity_iri(t.capitalize(), key)
            if key and iri not in out:
                out.append(iri)
    return out


def key_guesses(value: str, type_name: str) -> list[str]:
    """IRIs worth trying directly for one filter of ``GET /papers`` (no lookups)."""
    value = value.strip()
    if _ABSOLUTE.match(value):
        try:
            return [NamedNode(value).value]
        except ValueError:
            return []  # resolve_entity reports it
    return key_candidates(value, [type_name]) if value else []


def slice_solutions(
    result: QuerySolutions, offset: int, limit: int, *, key: str | None = None
) -> tuple[int, list[Any]]:
    """Count every solution but keep only those of the page (cheap for long lists).

    ``key``: a variable whose repeats in consecutive solutions count once."""
    total = 0
    kept: list[Any] = []
    last = None
    for solution in result:
        if key is not None:
            value = solution[key]
            if value == last:
                continue
            last = value
        if offset <= total < offset + limit:
            kept.append(solution)
        total += 1
    return total, kept


def papers_page(
    store: GraphStore, given: Mapping[str, str | None], q: str | None, limit: int, offset: int
) -> dict[str, Any]:
    """``total``, ``filters`` and the ``items`` of one page of ``GET /papers``.

    One list (no filter, or one entity filter) is counted by a COUNT query and
    paged by pulling only the page's rows, in the store's index order: sorting
    hundreds of IRIs in Oxigraph costs more than the whole request should.
    Several filters (or ``q``) intersect full lists, sorted by IRI in Python."""
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
            total = count(store, "count-papers-with-entity", entity=iri)
            if total:
                page = take(solutions(store, "papers-with-entity", entity=iri), offset, limit)
                items = [paper_summary(s["paper"], s["title"]) for s in page]
                return {"total": total, "filters": {name: iri}, "items": items}
        return {"total": 0, "filters": {name: iri}, "items": []}
    filters: dict[str, str | None] = {}
    wanted: list[tuple[str, dict[str, object]]] = []
    for name, value in entity_filters:
        iri = resolve_entity(store, value, type_name=name, parameter=name)
        filters[name] = iri
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
    items = [paper_summary(iri, title) for iri, title in rows[offset:offset + limit]]
    return {"total": len(rows), "filters": filters, "items": items}


def paper_detail(store: GraphStore, paper_id: str) -> dict[str, Any] | None:
    """The JSON of one paper, or None when it is not in the graph."""
    iri = paper_iri(paper_id)
    head = next(iter(solutions(store, "paper", paper=iri)), None)
    if head is None:
        return None
    out: dict[str, Any] = {
        "id": py(head["id"]),
        "iri": iri.value,
        "title": py(head["title"]),
        "abstract": py(head["abstract"]),
        "year": py(head["year"]),
        "venue": py(head["venue"]),
        "url": py(head["url"]),
        "extractor_version": py(head["extractorVersion"]),
        "authors": [],
        "keywords": [],
        **{group: [] for group in _GROUP.values()},
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
            item = {**entity_ref(entity, s["type"], s["label"]), "confidence": py(s["confidence"]),
                    "mentions": []}
            entities[(relation, entity)] = item
            out[_GROUP[relation]].append(item)
        if s["mention"] is not None and s["text"] is not None:
            mention = {"text": py(s["text"]), "start": py(s["start"]), "end": py(s["end"])}
            if mention not in item["mentions"]:
                item["mentions"].append(mention)
    for group in _GROUP.values():
        for item in out[group]:
            item["mentions"].sort(key=lambda m: (m["start"], m["end"]))
    out["claims"] = list(group_claims(solutions(store, "paper-claims", paper=iri)))
    return out


def _claim(s: Any) -> dict[str, Any]:
    def pair(var: str) -> tuple[str | None, str | None]:
        return py(s[f"claim{var}Label"]), py(s[f"claim{var}"])

    subject, subject_iri = pair("Subject")
    metric, metric_iri = pair("Metric")
    dataset, dataset_iri = pair("Dataset")
    baseline, baseline_iri = pair("Baseline")
    sentence = None
    if s["sentence"] is not None and s["sentenceText"] is not None:
        sentence = {"text": py(s["sentenceText"]), "start": py(s["sentenceStart"]),
                    "end": py(s["sentenceEnd"])}
    return {
        "iri": s["claim"].value,
        "text": py(s["text"]),
        "start": py(s["start"]),
        "end": py(s["end"]),
        "kind": _KIND_NAME.get(py(s["claimKind"]) or ""),
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


def group_claims(result: QuerySolutions, *, offset: int = 0, limit: int | None = None,
            counter: list[int] | None = None, with_paper: bool = False,
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
            current["values"].append({
                "text": py(s["valueText"]), "number": py(s["number"]), "unit": py(s["unit"]),
                "start": py(s["valueStart"]), "end": py(s["valueEnd"]),
            })
    if current is not None:
        yield current
    if counter is not None:
        counter.append(index + 1)



def search_entities(store: GraphStore, text: str, limit: int) -> list[dict[str, Any]]:
    """Entities with papers whose label or an alias contains ``text``, best first.

    One scan finds the matching names; only the best ``limit`` entities by how
    closely a name matches get their type, label and paper count looked up."""
    wanted = text.lower()
    best: dict[str, tuple[int, int, str]] = {}
    for s in solutions(store, "search-entities", text=text):
        name = s["name"].value
        low = name.lower()
        rank = (0 if low == wanted else 1 if low.startswith(wanted) else 2, len(name), name)
        iri = s["entity"].value
        if iri not in best or rank < best[iri]:
            best[iri] = rank
    found: list[tuple[tuple[int, int, str], dict[str, Any]]] = []
    # Twice the page of candidates: some may have no papers any more.
    for iri, rank in sorted(best.items(), key=lambda item: item[1])[: 2 * limit]:
        head = next(iter(solutions(store, "entity", entity=iri)), None)
        papers = count(store, "count-papers-with-entity", entity=iri)
        if head is None or not papers:
            continue
        item = {**entity_ref(iri, head["type"], head["label"]), "papers": papers,
                "matched": rank[2]}
        found.append(((rank[0], -papers, rank[1]), item))
    found.sort(key=lambda pair: pair[0])
    return [item for _, item in found[:limit]]


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
    the page only."""
    sets: list[set[str]] = []
    for name, query in CLAIM_FILTERS.items():
        if name in params:
            sets.append({s["claim"].value for s in solutions(store, query, **{name: params[name]})})
    if "min_value" in params or "max_value" in params:
        bounds = {k: params[k] for k in ("min_value", "max_value") if k in params}
        sets.append({s["claim"].value for s in solutions(store, "claims-with-value", **bounds)})
    if sets:
        matching = sorted(set.intersection(*sets))
        total, page = len(matching), matching[offset:offset + limit]
    else:
        total = count(store, "count-claims", var="claims")
        page = [s["claim"].value for s in take(solutions(store, "claims"), offset, limit)]
    items: list[dict[str, Any]] = []
    for iri in page:
        items.extend(group_claims(solutions(store, "claim", claim=iri), with_paper=True))
    return total, items


def alternates(path: str, json_href: str | None = None) -> str:
    """The ``Link`` header advertising a resource's other representations."""
    links = [
        f'<{path}?format={name}>; rel="alternate"; type="{media}"'
        for name, media in (("html", "text/html"), ("ttl", "text/turtle"),
                            ("jsonld", "application/ld+json"))
    ]
    if json_href:
        links.append(f'<{json_href}>; rel="alternate"; type="application/json"')
    return ", ".join(links)




def entity_counts(rows: list[Any], var: str = "entity") -> list[dict[str, Any]]:
    """Entity references with their ``papers`` count, from query solutions."""
    return [
        {**entity_ref(s[var].value, s["type"], s["label"]), "papers": py(s["papers"])}
        for s in rows
    ]



def list_entities(
    request: Request, store: GraphStore, type_name: str, prefix: str | None, limit: int, offset: int
) -> dict[str, Any]:
    """One page of the entities of a type with paper counts, most papers first."""
    prefix = check_text("prefix", prefix) if prefix is not None else None
    if prefix is None:
        total = count(store, "count-entities-by-type", var="entities", type=TYPES[type_name])
        page = take(solutions(store, "entities-by-type", type=TYPES[type_name]), offset, limit)
        items = with_labels(store, page)
    else:
        result = solutions(store, "entities-by-type-prefix", type=TYPES[type_name], prefix=prefix)
        total, page = slice_solutions(result, offset, limit)
        items = entity_counts(page)
    return {**page_links(request, total, limit, offset), "items": items}


def with_labels(store: GraphStore, rows: list[Any], var: str = "entity") -> list[dict[str, Any]]:
    """Entity counts for rows without labels: each label is looked up (a page only)."""
    items = []
    for s in rows:
        iri = s[var].value
        head = next(iter(solutions(store, "entity", entity=iri)), None)
        label = head["label"] if head is not None else None
        items.append({**entity_ref(iri, s["type"], label), "papers": py(s["papers"])})
    return items


def entity_detail(
    store: GraphStore, type_name: str, key: str, *, papers_limit: int = 100, related_limit: int = 20
) -> dict[str, Any] | None:
    """The JSON of one entity, or None when the graph has no entity of that type and key."""
    iri = entity_iri(type_name.capitalize(), key)
    head = next(iter(solutions(store, "entity", entity=iri)), None)
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
    out["papers"] = sorted(papers.values(), key=lambda p: p["id"])[:papers_limit]
    kept: dict[str, list[Any]] = {t + "s": [] for t in TYPES}
    for row in solutions(store, "related-entities", entity=iri):
        group = kept.get(_TYPE_NAME.get(row["type"].value, "") + "s")
        if group is not None and len(group) < related_limit:
            group.append(row)
    related = {group: with_labels(store, rows, var="other") for group, rows in kept.items()}
    out["related"] = related
    return out


