"""The REST API: papers, entities, claims, search, stats and the named queries.

Every handler answers from named queries in ``queries/*.rq`` (see
:mod:`kg.store.queries`), with user input bound through pyoxigraph substitutions and
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
import inspect
import logging
import threading
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import JSONResponse

from kg import schema
from kg.model import Rejected
from kg.read.base import MAX_FILTER, check_text
from kg.read.papers import paper_detail, papers_page, resolve_paper_id
from kg.store.embedded import GraphStore
from kg.store.queries import MAX_STRING, default_registry
from service import api_entities, api_queries, pages
from service.api_entities import TEXT, Limit, Offset
from service.deps import (
    get_settings,
    get_store,
    read_body,
    require_update_token,
    writes_visible,
)
from service.errors import InvalidParameter, NotFound
from service.rest_data import MAX_RECORDS, alternates, invalid, page_links, paper_href
from service.rest_models import IngestResponse, PaperDetail, PaperPage
from service.safety import parse_json

router = APIRouter()
log = logging.getLogger("kg.service")

# Parse and check every queries/*.rq now: a bad file stops the service at
# start-up (when the app is built) instead of failing its first request.
default_registry()

# ---------------------------------------------------------------- papers


def _entity_filters(**given: str | None) -> dict[str, str | None]:
    return given


# One filter per entity type of kg.schema (?task=, ?method=…): a dependency
# whose signature is made from the schema, so OpenAPI lists each of them.
_entity_filters.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        inspect.Parameter(
            k.segment,
            inspect.Parameter.KEYWORD_ONLY,
            default=Query(
                None,
                max_length=MAX_FILTER,
                pattern=TEXT,
                description=f"{k.label}: IRI, type/key, key, label or alias",
            ),
            annotation=str | None,
        )
        for k in schema.ENTITY_TYPES
    ]
)


@router.get("/papers", response_model=PaperPage, tags=["papers"], summary="List papers")
async def list_papers(
    request: Request,
    given: Annotated[dict[str, str | None], Depends(_entity_filters)],
    q: Annotated[
        str | None,
        Query(max_length=MAX_FILTER, pattern=TEXT, description="Text in the title or abstract"),
    ] = None,
    limit: Limit = 20,
    offset: Offset = 0,
    exact: Annotated[
        bool,
        Query(description="task= finds only that task, not also its narrower tasks"),
    ] = False,
) -> Response:
    """Papers, ordered by id, optionally only those linked to every given entity
    and containing the text ``q``. ``filters`` shows the IRI each filter resolved to.
    A task also finds the papers of its narrower tasks unless ``exact=true``."""
    # The hot path of the API. Entity filters are indexed lookups well under a
    # millisecond, so they run right here on the event loop: a thread hop and
    # GIL hand-offs between 16 pool threads would cost more than the query and
    # spread the latency tail. The text filter scans every abstract: a thread.
    store = get_store(request)
    q = check_text("q", q)
    if q is None:
        body = papers_page(store, given, None, limit, offset, exact=exact)
    else:
        body = await asyncio.to_thread(
            lambda: papers_page(store, given, q, limit, offset, exact=exact)
        )
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
    detail = paper_detail(store, resolve_paper_id(store, paper_id))
    if detail is None:
        raise NotFound(f"no paper with id {paper_id!r}", slug="unknown-paper")
    response.headers["Link"] = alternates(f"/id/paper/{quote(detail['id'], safe='')}")
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
            "content": {
                "application/json": {
                    "schema": {
                        "oneOf": [
                            {"type": "object", "description": "One record"},
                            {"type": "array", "items": {"type": "object"}, "maxItems": MAX_RECORDS},
                        ]
                    },
                    "example": [_RECORD_EXAMPLE],
                }
            },
        }
    },
)
async def post_papers(
    request: Request,
    response: Response,
    store: Annotated[GraphStore, Depends(get_store)],
) -> dict[str, Any]:
    """Extract and store one record or a list of records. A record is an object
    with ``abstract`` (required), ``id``, ``title``, ``authors``, ``year``,
    ``venue``, ``keywords``, ``url`` (the fields ``kg ingest`` reads from JSON).
    The paper's id is the hash of its abstract; a record's own ``id`` is kept as
    ``source_id`` and ``/papers/{id}`` finds the paper by either. Each record's
    outcome is reported; bad records do not stop the others."""
    from kg.reading.readers import record_from_object  # the JSON-record rules `kg ingest` uses

    # The body is read here, after the token dependency, and bounded while it streams.
    # Parsed in a thread: megabytes of JSON would hold the event loop for seconds.
    raw = await read_body(request)
    body = await asyncio.to_thread(parse_json, raw, get_settings(request).max_json_depth)
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
    await writes_visible(request)
    extracted = {e.record.id: e for r in reports for e in r.extractions}
    counts = {
        key: sum(getattr(r, key) for r in reports)
        for key in ("added", "updated", "unchanged", "duplicates")
    }
    results: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n, item in enumerate(items, start=1):
        if isinstance(item, Rejected):
            results.append({"record": n, "status": "rejected", "reason": item.reason})
            continue
        entry: dict[str, Any] = {
            "record": n,
            "id": item.id,
            "source_id": item.source_id,
            "href": paper_href(item.id),
        }
        if item.id in seen:
            entry["status"] = "duplicate"
            entry["reason"] = "an earlier record of this request has the same abstract"
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
            errors=[
                {"parameter": "body", "in": "body", "record": r["record"], "message": r["reason"]}
                for r in results
                if r.get("reason")
            ],
        )
    if not counts["added"] and not counts["updated"]:
        response.status_code = 200
    return {
        **counts,
        "rejected": sum(r["status"] in {"rejected", "failed"} for r in results),
        "results": results,
    }


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
            reports.append(ingest_items([item], store, extractor=extractor, keep_extractions=True))
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
    """Remove a paper's named graph and its evidence: its entities stay with one
    paper fewer, and one only it named disappears. The id may be the paper's own
    or the one its source gave."""
    from kg.ingest import remove_paper

    async with request.app.state.write_lock:
        known = await asyncio.to_thread(resolve_paper_id, store, paper_id)
        deleted = await asyncio.to_thread(remove_paper, store, known)
    await writes_visible(request)
    if not deleted:
        raise NotFound(f"no paper with id {paper_id!r}", slug="unknown-paper")
    return Response(status_code=204)


router.include_router(api_entities.router)
router.include_router(api_queries.router)
router.include_router(pages.router)
