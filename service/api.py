"""The REST API: papers, entities, claims, search, stats and the named queries.

Every handler answers from named queries in ``queries/*.rq`` (see
:mod:`kg.queries`), with user input bound through pyoxigraph substitutions and
never formatted into SPARQL. Most handlers are plain ``def`` functions run in
FastAPI's thread pool; ``GET /papers``, the hot path, runs its indexed lookups
on the event loop. The queries and the shaping of their results live in
:mod:`service.rest_data`, the response models in :mod:`service.rest_models`,
and the dereferencing of IRIs (HTML, Turtle, JSON-LD) in :mod:`service.pages`.

Filters that name an entity (``task``, ``method``, ``subject``…) accept its IRI,
``type/key`` (``task/unlearning``), its key, or a label or alias (ignoring case).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Body, Depends, Path, Query, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse

from kg.model import ClaimKind, Rejected
from kg.queries import MAX_STRING, ParameterError, UnknownQuery, default_registry
from kg.store import GraphStore
from kg.vocab import CLAIM_KINDS
from service import negotiation, pages
from service.deps import get_store, require_update_token
from service.errors import InvalidParameter, NotAcceptable, NotFound
from service.rest_data import (
    MAX_FILTER,
    MAX_OFFSET,
    MAX_PAGE,
    MAX_RECORDS,
    TYPES,
    EntityKind,
    alternates,
    check_text,
    claims_page,
    entity_detail,
    entity_href,
    entity_key,
    invalid,
    list_entities,
    page_links,
    paper_detail,
    paper_href,
    paper_summary,
    papers_page,
    py,
    resolve_entity,
    search_entities,
    solutions,
    take,
    with_labels,
)
from service.rest_models import (
    ClaimPage,
    EntityDetail,
    EntityPage,
    IngestResponse,
    PaperDetail,
    PaperPage,
    QueryInfo,
    SearchResult,
    Stats,
)

router = APIRouter()
log = logging.getLogger("kg.service")

# Parse and check every queries/*.rq now: a bad file stops the service at
# start-up (when the app is built) instead of failing its first request.
default_registry()

# ---------------------------------------------------------------- papers


Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description=f"Page size (1–{MAX_PAGE})")]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Items to skip")]
EntityFilter = Annotated[
    str | None,
    Query(max_length=MAX_FILTER, description="IRI, type/key, key, label or alias"),
]



@router.get("/papers", response_model=PaperPage, tags=["papers"], summary="List papers")
async def list_papers(
    request: Request,
    task: EntityFilter = None,
    method: EntityFilter = None,
    dataset: EntityFilter = None,
    metric: EntityFilter = None,
    q: Annotated[
        str | None,
        Query(max_length=MAX_FILTER, description="Text in the title or abstract (any case)"),
    ] = None,
    limit: Limit = 20,
    offset: Offset = 0,
) -> Response:
    """Papers, ordered by id, optionally only those linked to every given entity
    and containing the text ``q``. ``filters`` shows the IRI each filter resolved to."""
    # The hot path of the API. Entity filters are indexed lookups well under a
    # millisecond, so they run right here on the event loop: a thread hop and
    # GIL hand-offs between 16 pool threads would cost more than the query and
    # spread the latency tail. The text filter scans every abstract: a thread.
    store = get_store(request)
    given = {"task": task, "method": method, "dataset": dataset, "metric": metric}
    q = check_text("q", q)
    if q is None:
        body = papers_page(store, given, None, limit, offset)
    else:
        body = await asyncio.to_thread(papers_page, store, given, q, limit, offset)
    body = {**page_links(request, body.pop("total"), limit, offset), **body}
    # Built from named-query results with fixed types: skip re-validating the model.
    return JSONResponse(body)



@router.get(
    "/papers/{paper_id:path}",
    response_model=PaperDetail,
    tags=["papers"],
    summary="One paper with its entities and claims",
    responses={404: {"description": "No paper with this id"}},
)
def get_paper(
    paper_id: Annotated[str, Path(max_length=MAX_STRING, description="The paper's id")],
    store: Annotated[GraphStore, Depends(get_store)],
    response: Response,
) -> dict[str, Any]:
    """Title, abstract, metadata, the paper's tasks, methods (used and proposed),
    datasets and metrics with their mentions, and its claims, all with
    character offsets into the abstract."""
    detail = paper_detail(store, paper_id)
    if detail is None:
        raise NotFound(f"no paper with id {paper_id!r}", slug="unknown-paper")
    response.headers["Link"] = alternates(f"/id/paper/{quote(paper_id, safe='')}")
    return detail



def _extractor(request: Request) -> Any:
    # spaCy takes seconds to load: load it on the first POST, once per app.
    state = request.app.state
    with _EXTRACTOR_LOCK:
        if getattr(state, "extractor", None) is None:
            from kg.ingest import default_extractor

            state.extractor = default_extractor()
        return state.extractor


_EXTRACTOR_LOCK = threading.Lock()

_RECORD_EXAMPLE = {
    "id": "abc123",
    "title": "A paper",
    "abstract": "We propose a method for machine unlearning and evaluate it on CIFAR-10 ...",
    "authors": ["A. Author"],
    "year": 2026,
}


@router.post(
    "/papers",
    response_model=IngestResponse,
    status_code=201,
    tags=["papers"],
    summary="Ingest abstracts (token required)",
    dependencies=[Depends(require_update_token)],
    responses={
        200: {"description": "Nothing new was stored (every record unchanged or a duplicate)"},
        401: {"description": "No bearer token"},
        403: {"description": "Wrong token, or the service is read-only"},
        422: {"description": "No record could be used; each record's reason is listed"},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {
                "schema": {"oneOf": [
                    {"type": "object", "description": "One record"},
                    {"type": "array", "items": {"type": "object"}, "maxItems": MAX_RECORDS},
                ]},
                "example": [_RECORD_EXAMPLE],
            }},
        }
    },
)
async def post_papers(
    request: Request,
    response: Response,
    store: Annotated[GraphStore, Depends(get_store)],
    body: Annotated[Any, Body()],
) -> dict[str, Any]:
    """Extract and store one record or a list of records. A record is an object
    with ``abstract`` (required), ``id``, ``title``, ``authors``, ``year``,
    ``venue``, ``keywords``, ``url`` (the fields ``kg ingest`` reads from JSON);
    without an id, one is derived from the abstract. Each record's outcome is
    reported; bad records do not stop the others."""
    from kg.readers import record_from_object  # the JSON-record rules `kg ingest` uses

    records = body if isinstance(body, list) else [body]
    if not records:
        raise invalid("body", "the request holds no records")
    if len(records) > MAX_RECORDS:
        raise invalid("body", f"at most {MAX_RECORDS} records per request, got {len(records)}")
    items = [record_from_object(obj, "request", n) for n, obj in enumerate(records, start=1)]
    ids = [i.id for i in items if not isinstance(i, Rejected)]
    extractor = await asyncio.to_thread(_extractor, request)

    async with request.app.state.write_lock:
        before, reports, failed = await asyncio.to_thread(_ingest, store, extractor, items, ids)
    extracted = {e.record.id: e for r in reports for e in r.extractions}
    counts = {key: sum(getattr(r, key) for r in reports)
              for key in ("added", "updated", "unchanged", "duplicates")}
    results: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n, item in enumerate(items, start=1):
        if isinstance(item, Rejected):
            results.append({"record": n, "status": "rejected", "reason": item.reason})
            continue
        entry: dict[str, Any] = {"record": n, "id": item.id, "href": paper_href(item.id)}
        if item.id in seen:
            entry["status"] = "duplicate"
            entry["reason"] = "an earlier record of this request has the same id"
        elif n in failed:
            entry["status"] = "failed"
            entry["reason"] = failed[n]
            entry["href"] = None
        elif item.id in extracted:
            entry["status"] = "updated" if item.id in before else "added"
            entry["extraction"] = extracted[item.id].to_json()
        else:
            entry["status"] = "unchanged"
        seen.add(item.id)
        results.append(entry)
    stored = counts["added"] + counts["updated"] + counts["unchanged"]
    if not stored:
        raise InvalidParameter(
            "invalid parameter: body: no record could be used",
            errors=[{"parameter": "body", "in": "body", "record": r["record"],
                     "message": r["reason"]} for r in results if r.get("reason")],
        )
    if not counts["added"] and not counts["updated"]:
        response.status_code = 200
    return {**counts, "rejected": sum(r["status"] in {"rejected", "failed"} for r in results),
            "results": results}


def _ingest(
    store: GraphStore, extractor: Any, items: list[Any], ids: list[str]
) -> tuple[dict[str, str], list[Any], dict[int, str]]:
    """Ingest the request's items: the stored hashes before, the ingest reports, and
    the records (by 1-based position) the extractor failed on."""
    from kg.ingest import ingest_items

    before = store.paper_hashes(ids)
    try:
        return before, [ingest_items(items, store, extractor=extractor, keep_extractions=True)], {}
    except Exception:
        # An abstract that breaks the extractor is a bug on our side, logged with its
        # traceback; it must not sink the other records of the request, so they are
        # retried one by one (nothing was written: a batch is written after extraction).
        log.exception("extraction failed on a POST /papers batch; retrying record by record")
    reports: list[Any] = []
    failed: dict[int, str] = {}
    seen: set[str] = set()
    for n, item in enumerate(items, start=1):
        if isinstance(item, Rejected) or item.id in seen:
            continue
        seen.add(item.id)
        try:
            reports.append(
                ingest_items([item], store, extractor=extractor, keep_extractions=True)
            )
        except Exception:
            log.exception("extraction failed on record %d (id %r) of a POST /papers", n, item.id)
            failed[n] = "extraction failed (a server-side error, logged); the record was not stored"
    return before, reports, failed


@router.delete(
    "/papers/{paper_id:path}",
    status_code=204,
    tags=["papers"],
    summary="Delete a paper (token required)",
    dependencies=[Depends(require_update_token)],
    responses={404: {"description": "No paper with this id"}, 401: {}, 403: {}},
)
async def delete_paper(
    request: Request,
    paper_id: Annotated[str, Path(max_length=MAX_STRING)],
    store: Annotated[GraphStore, Depends(get_store)],
) -> Response:
    """Remove a paper's named graph (its entities stay, with one paper fewer)."""
    async with request.app.state.write_lock:
        deleted = await asyncio.to_thread(store.delete_paper, paper_id)
    if not deleted:
        raise NotFound(f"no paper with id {paper_id!r}", slug="unknown-paper")
    return Response(status_code=204)



# ---------------------------------------------------------------- entities


Prefix = Annotated[
    str | None,
    Query(max_length=MAX_FILTER, description="Only labels or aliases starting with this"),
]


@router.get("/tasks", response_model=EntityPage, tags=["entities"], summary="Tasks")
def list_tasks(request: Request, store: Annotated[GraphStore, Depends(get_store)],
               prefix: Prefix = None, limit: Limit = 20, offset: Offset = 0) -> dict[str, Any]:
    """Tasks with the number of papers addressing each, most papers first."""
    return list_entities(request, store, "task", prefix, limit, offset)


@router.get("/methods", response_model=EntityPage, tags=["entities"], summary="Methods")
def list_methods(request: Request, store: Annotated[GraphStore, Depends(get_store)],
                 prefix: Prefix = None, limit: Limit = 20, offset: Offset = 0) -> dict[str, Any]:
    """Methods with the number of papers proposing or using each, most papers first."""
    return list_entities(request, store, "method", prefix, limit, offset)


@router.get("/datasets", response_model=EntityPage, tags=["entities"], summary="Datasets")
def list_datasets(request: Request, store: Annotated[GraphStore, Depends(get_store)],
                  prefix: Prefix = None, limit: Limit = 20, offset: Offset = 0) -> dict[str, Any]:
    """Datasets with the number of papers evaluating on each, most papers first."""
    return list_entities(request, store, "dataset", prefix, limit, offset)


@router.get("/metrics", response_model=EntityPage, tags=["entities"], summary="Metrics")
def list_metrics(request: Request, store: Annotated[GraphStore, Depends(get_store)],
                 prefix: Prefix = None, limit: Limit = 20, offset: Offset = 0) -> dict[str, Any]:
    """Metrics with the number of papers reporting each, most papers first."""
    return list_entities(request, store, "metric", prefix, limit, offset)



@router.get(
    "/entities",
    tags=["entities"],
    summary="Find an entity by IRI",
    status_code=303,
    response_class=RedirectResponse,
    responses={303: {"description": "See /entities/{type}/{key}"},
               404: {"description": "Not an entity of this graph"}},
)
def entity_by_iri(
    iri: Annotated[str, Query(max_length=MAX_STRING, description="The entity's IRI")],
    store: Annotated[GraphStore, Depends(get_store)],
) -> RedirectResponse:
    """Redirects an entity IRI (``https://w3id.org/mlkg/id/{type}/{key}``) to its
    REST resource ``/entities/{type}/{key}``."""
    found = entity_key(iri)
    head = next(iter(solutions(store, "entity", entity=iri)), None) if found else None
    if head is None or head["type"].value != TYPES[found[0]].value:
        raise NotFound(f"no entity {iri!r}", slug="unknown-entity")
    return RedirectResponse(entity_href(iri), status_code=303)


@router.get(
    "/entities/{type}/{key:path}",
    response_model=EntityDetail,
    tags=["entities"],
    summary="One entity: label, aliases, papers, related entities",
    responses={404: {"description": "No entity of this type and key"}},
)
def get_entity(
    type: EntityKind,
    key: Annotated[str, Path(max_length=MAX_STRING, description="The key: the IRI's last segment")],
    store: Annotated[GraphStore, Depends(get_store)],
    response: Response,
    papers_limit: Annotated[int, Query(ge=0, le=10_000, description="Most papers listed")] = 100,
    related_limit: Annotated[
        int, Query(ge=0, le=1000, description="Most related entities of each type")
    ] = 20,
) -> dict[str, Any]:
    """The entity's label and aliases, its papers (with how each relates to it),
    and the tasks, methods, datasets and metrics that share papers with it, with
    the number of shared papers: for a task, the methods used for it; for a
    method, the tasks it is applied to. The entity's IRI is
    ``https://w3id.org/mlkg/id/{type}/{key}``."""
    detail = entity_detail(store, type.value, key, papers_limit=papers_limit,
                           related_limit=related_limit)
    if detail is None:
        raise NotFound(f"no {type.value} with key {key!r}", slug="unknown-entity")
    response.headers["Link"] = alternates(f"/id/{type.value}/{quote(key, safe='')}")
    return detail



# ---------------------------------------------------------------- claims


@router.get("/claims", response_model=ClaimPage, tags=["claims"], summary="Claims, filtered")
def list_claims(
    request: Request,
    store: Annotated[GraphStore, Depends(get_store)],
    subject: EntityFilter = None,
    kind: Annotated[ClaimKind | None, Query(description="The kind of claim")] = None,
    metric: EntityFilter = None,
    dataset: EntityFilter = None,
    min_value: Annotated[
        float | None, Query(allow_inf_nan=False, description="Keep claims stating a number ≥ this")
    ] = None,
    max_value: Annotated[
        float | None, Query(allow_inf_nan=False, description="Keep claims stating a number ≤ this")
    ] = None,
    limit: Limit = 20,
    offset: Offset = 0,
) -> dict[str, Any]:
    """Claims across papers, ordered by paper id and position, each with its
    paper, sentence, offsets into the abstract, subject, metric, dataset and
    stated values. Entity filters accept an IRI, ``type/key``, key or label."""
    if min_value is not None and max_value is not None and min_value > max_value:
        raise invalid("min_value", "is greater than max_value")
    filters: dict[str, str | None] = {}
    params: dict[str, object] = {}
    for name, value, type_name in (("subject", subject, None), ("metric", metric, "metric"),
                                   ("dataset", dataset, "dataset")):
        if value is not None:
            filters[name] = params[name] = resolve_entity(
                store, value, type_name=type_name, parameter=name
            )
    if any(v is None for v in filters.values()):
        return {**page_links(request, 0, limit, offset), "filters": filters, "items": []}
    if kind is not None:
        params["kind"] = CLAIM_KINDS[kind.value]
    if min_value is not None:
        params["min_value"] = min_value
    if max_value is not None:
        params["max_value"] = max_value
    total, items = claims_page(store, params, limit, offset)
    return {**page_links(request, total, limit, offset), "filters": filters, "items": items}


# ---------------------------------------------------------------- search and stats


@router.get("/search", response_model=SearchResult, tags=["search"], summary="Search")
def search(
    store: Annotated[GraphStore, Depends(get_store)],
    q: Annotated[str, Query(min_length=1, max_length=MAX_FILTER, description="Text to look for")],
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Most results of each kind")] = 20,
) -> dict[str, Any]:
    """Entities whose label or an alias contains ``q`` — exact matches first, then
    prefix matches, then other matches, shorter names first within each, most
    papers first among equals — and papers whose title contains ``q``. Entities
    without papers are left out."""
    text = check_text("q", q) or ""
    return {"q": text, "entities": search_entities(store, text, limit),
            "papers": [paper_summary(s["paper"], s["title"])
                       for s in take(solutions(store, "search-papers", text=text), 0, limit)]}


@router.get("/stats", response_model=Stats, tags=["search"], summary="Counts and top entities")
def stats(
    store: Annotated[GraphStore, Depends(get_store)],
    top: Annotated[int, Query(ge=1, le=100, description="How many top tasks and methods")] = 10,
) -> dict[str, Any]:
    """How many papers, tasks, methods, datasets, metrics and claims the graph
    holds, and the tasks and methods with most papers."""
    names = {"Paper": "papers", "Task": "tasks", "Method": "methods", "Dataset": "datasets",
             "Metric": "metrics", "Claim": "claims"}
    counts = dict.fromkeys(names.values(), 0)
    for s in solutions(store, "class-counts"):
        name = names.get(s["class"].value.rsplit("#", 1)[-1])
        if name:
            counts[name] = py(s["count"])

    def tops(type_name: str) -> list[dict[str, Any]]:
        page = take(solutions(store, "entities-by-type", type=TYPES[type_name]), 0, top)
        return with_labels(store, page)

    # No triple count: len() of a store walks every quad (~0.3 s for 1.3 M).
    return {"counts": counts, "top_tasks": tops("task"), "top_methods": tops("method")}


# ---------------------------------------------------------------- named queries


def query_info(name: str) -> dict[str, Any]:
    query = default_registry().get(name, public=True)
    return {**query.to_json(), "href": "/queries/" + query.name}


@router.get("/queries", response_model=list[QueryInfo], tags=["queries"],
            summary="List the named queries")
def list_queries() -> list[dict[str, Any]]:
    """Every named query: name, title, description, form and typed parameters.
    Run one with ``GET /queries/{name}?param=value``."""
    return [query_info(q.name) for q in default_registry().public()]


_FORMATS = {
    "select": negotiation.SELECT_FORMATS,
    "ask": negotiation.ASK_FORMATS,
    "construct": negotiation.GRAPH_FORMATS[:4],
}


@router.get(
    "/queries/{name}",
    tags=["queries"],
    summary="Run a named query",
    responses={
        200: {"description": "SPARQL results (JSON by default; XML, CSV, TSV by Accept) or, "
                             "for CONSTRUCT, RDF (Turtle by default)",
              "content": {"application/sparql-results+json": {}, "text/csv": {},
                          "text/turtle": {}}},
        404: {"description": "No public named query of this name"},
        406: {"description": "No acceptable result format"},
        422: {"description": "A parameter is missing, unknown or of the wrong type"},
    },
)
def run_query(
    name: str,
    request: Request,
    store: Annotated[GraphStore, Depends(get_store)],
    format: Annotated[
        str | None,
        Query(max_length=100, description="Result format by name (json, xml, csv, tsv, ttl, "
                                          "nt, jsonld…); wins over Accept"),
    ] = None,
) -> Response:
    """Run one named query with its parameters from the query string (see
    ``GET /queries`` for each query's parameters and their types)."""
    try:
        query = default_registry().get(name, public=True)
    except UnknownQuery:
        raise NotFound(f"no named query {name!r}", slug="unknown-query") from None
    params = _query_params(request.query_params)
    table = _FORMATS[query.form]
    if format is not None:
        fmt = negotiation.by_name(format, table)
        if fmt is None:
            raise invalid("format", f"{format!r} is not available for this query")
    else:
        fmt = negotiation.choose(negotiation.parse_accept(request.headers.get("accept")), table)
        if fmt is None:
            raise NotAcceptable(
                "none of the acceptable media types can represent this result; available: "
                + ", ".join(f.media_type for f in table)
            )
    try:
        result = default_registry().run(store, query.name, params)
    except ParameterError as exc:
        raise invalid(exc.parameter, exc.message) from None
    body = result.serialize(format=fmt.pyoxigraph)
    return Response(body, media_type=fmt.media_type)


def _query_params(query: Mapping[str, str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for key in query:
        if key == "format":
            continue
        values = query.getlist(key) if hasattr(query, "getlist") else [query[key]]
        if len(values) > 1:
            raise invalid(key, f"parameter {key!r} is given more than once")
        params[key] = values[0]
    return params



router.include_router(pages.router)
