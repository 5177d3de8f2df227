"""The REST API: papers, entities, claims, search, stats and the named queries.

Every handler answers from named queries in ``queries/*.rq`` (see
:mod:`kg.queries`), with user input bound through pyoxigraph substitutions and
never formatted into SPARQL. Handlers are plain ``def`` functions: FastAPI runs
them in its thread pool, and pyoxigraph releases the GIL while it evaluates.

The functions that build a paper's or an entity's JSON (:func:`paper_detail`,
:func:`entity_detail`) are shared with the dereferencing pages in
:mod:`service.pages`.

Filters that name an entity (``task``, ``method``, ``subject``…) accept its IRI,
``type/key`` (``task/unlearning``), its key, or a label or alias (ignoring case).
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Iterator, Mapping
from enum import StrEnum
from typing import Annotated, Any
from urllib.parse import quote, unquote

from fastapi import APIRouter, Body, Depends, Path, Query, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse
from pydantic import BaseModel, Field
from pyoxigraph import Literal, NamedNode, QuerySolutions

from kg.model import ClaimKind, EntityType, Rejected
from kg.queries import MAX_STRING, ParameterError, UnknownQuery, default_registry
from kg.store import GraphStore, QueryResult
from kg.vocab import CLAIM_KINDS, ID_PREFIX, KG, entity_iri, paper_graph, paper_iri
from service import negotiation
from service.deps import get_store, require_update_token
from service.errors import InvalidParameter, NotAcceptable, NotFound

router = APIRouter()
log = logging.getLogger("kg.service")

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


# ---------------------------------------------------------------- response models


class EntityRef(BaseModel):
    """A task, method, dataset or metric."""

    iri: str
    type: str = Field(description="task, method, dataset or metric")
    key: str
    label: str | None = None
    href: str = Field(description="This entity in the REST API")


class EntityCount(EntityRef):
    """An entity with the number of papers linked to it."""

    papers: int


class MentionOut(BaseModel):
    """A span of the abstract: ``abstract[start:end] == text``."""

    text: str
    start: int
    end: int


class PaperEntity(EntityRef):
    """An entity of one paper, with where the abstract names it."""

    confidence: float | None = None
    mentions: list[MentionOut] = []


class SentenceOut(BaseModel):
    """The sentence a claim is in, with its offsets into the abstract."""

    text: str
    start: int
    end: int


class ValueOut(BaseModel):
    """A number a claim states."""

    text: str
    number: float | None = None
    unit: str | None = None
    start: int | None = None
    end: int | None = None


class ClaimOut(BaseModel):
    """A claim of a paper; offsets are into the paper's abstract."""

    iri: str
    text: str
    start: int
    end: int
    kind: str | None
    confidence: float | None = None
    sentence: SentenceOut | None = None
    subject: str | None = None
    subject_iri: str | None = None
    metric: str | None = None
    metric_iri: str | None = None
    dataset: str | None = None
    dataset_iri: str | None = None
    baseline: str | None = None
    baseline_iri: str | None = None
    values: list[ValueOut] = []


class PaperSummary(BaseModel):
    """A paper in a list."""

    id: str
    iri: str
    title: str | None = None
    href: str = Field(description="This paper in the REST API")


class ClaimWithPaper(ClaimOut):
    """A claim with the paper that makes it."""

    paper: PaperSummary


class PaperDetail(BaseModel):
    """Everything the graph holds about a paper; keys as in ``kg extract`` output."""

    id: str
    iri: str
    title: str | None = None
    abstract: str
    year: int | None = None
    venue: str | None = None
    url: str | None = None
    authors: list[str] = []
    keywords: list[str] = []
    extractor_version: str | None = None
    tasks: list[PaperEntity] = []
    methods: list[PaperEntity] = []
    proposed_methods: list[PaperEntity] = []
    datasets: list[PaperEntity] = []
    metrics: list[PaperEntity] = []
    claims: list[ClaimOut] = []


class Page(BaseModel):
    """Paging of a list: ``next`` is the URL of the following page, when there is one."""

    total: int
    limit: int
    offset: int
    next: str | None = None
    previous: str | None = None


class PaperPage(Page):
    filters: dict[str, str | None] = Field(
        default={}, description="Each entity filter as given → the IRI it resolved to (null: none)"
    )
    items: list[PaperSummary]


class EntityPage(Page):
    items: list[EntityCount]


class ClaimPage(Page):
    filters: dict[str, str | None] = {}
    items: list[ClaimWithPaper]


class EntityPaper(PaperSummary):
    """A paper of an entity, with how it relates to the entity."""

    relations: list[str]


class Related(BaseModel):
    """Entities that share papers with an entity, most shared first."""

    tasks: list[EntityCount] = []
    methods: list[EntityCount] = []
    datasets: list[EntityCount] = []
    metrics: list[EntityCount] = []


class EntityDetail(EntityRef):
    """An entity with its aliases, papers and related entities."""

    aliases: list[str] = []
    paper_count: int
    papers: list[EntityPaper]
    related: Related


class SearchEntity(EntityCount):
    matched: str = Field(description="The label or alias that matched")


class SearchResult(BaseModel):
    q: str
    entities: list[SearchEntity]
    papers: list[PaperSummary]


class Stats(BaseModel):
    counts: dict[str, int] = Field(description="Papers, tasks, methods, datasets, metrics, claims")
    triples: int
    top_tasks: list[EntityCount]
    top_methods: list[EntityCount]


class ParameterInfo(BaseModel):
    name: str
    type: str
    description: str
    required: bool
    default: str | None = None


class QueryInfo(BaseModel):
    name: str
    title: str
    description: str
    form: str = Field(description="select, ask or construct")
    parameters: list[ParameterInfo]
    href: str


class RecordResult(BaseModel):
    """What happened to one record of a ``POST /papers`` body."""

    record: int = Field(description="1-based position in the request")
    id: str | None = None
    status: str = Field(
        description="added, updated, unchanged, duplicate, rejected (bad record) or failed "
                    "(the extractor failed on it: a server-side error, logged)"
    )
    reason: str | None = None
    href: str | None = None
    extraction: dict[str, Any] | None = Field(
        default=None, description="What was extracted (the `kg extract` JSON), for added/updated"
    )


class IngestResponse(BaseModel):
    added: int
    updated: int
    unchanged: int
    duplicates: int
    rejected: int
    results: list[RecordResult]


# ---------------------------------------------------------------- helpers


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


def paper_summary(paper: object, pid: object, title: object) -> dict[str, Any]:
    paper_id = py(pid)
    return {"iri": py(paper), "id": paper_id, "title": py(title), "href": paper_href(paper_id)}


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


def _check_text(name: str, value: str | None) -> str | None:
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
    value = _check_text(parameter, value) or ""
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
    for t in types:
        hit = next(iter(solutions(store, "entity-by-label", type=TYPES[t], label=value)), None)
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


def _key_guesses(value: str, type_name: str) -> list[str]:
    """IRIs worth trying directly for one filter of ``GET /papers`` (no lookups)."""
    value = value.strip()
    if _ABSOLUTE.match(value):
        try:
            return [NamedNode(value).value]
        except ValueError:
            return []  # resolve_entity reports it
    return key_candidates(value, [type_name]) if value else []


def _slice(
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
    q = _check_text("q", q)
    if q is None:
        body = papers_page(store, given, None, limit, offset)
    else:
        body = await asyncio.to_thread(papers_page, store, given, q, limit, offset)
    body = {**page_links(request, body.pop("total"), limit, offset), **body}
    # Built from named-query results with fixed types: skip re-validating the model.
    return JSONResponse(body)


def papers_page(
    store: GraphStore, given: Mapping[str, str | None], q: str | None, limit: int, offset: int
) -> dict[str, Any]:
    """``total``, ``filters`` and the ``items`` of one page of ``GET /papers``."""
    filters: dict[str, str | None] = {}
    wanted: list[tuple[str, dict[str, object]]] = []
    entity_filters = [(name, value) for name, value in given.items() if value is not None]
    if len(entity_filters) == 1 and q is None:
        # The common case, one entity given by key or IRI: try that IRI straight
        # away and skip the resolving lookup when it has papers.
        name, value = entity_filters[0]
        for guess in _key_guesses(value, name):
            result = solutions(store, "papers-with-entity", entity=guess)
            total, page = _slice(result, offset, limit, key="paper")
            if total:
                items = [paper_summary(s["paper"], s["id"], s["title"]) for s in page]
                return {"total": total, "filters": {name: guess}, "items": items}
    for name, value in entity_filters:
        iri = resolve_entity(store, value, type_name=name, parameter=name)
        filters[name] = iri
        wanted.append(("papers-with-entity", {"entity": iri}))
    if q is not None:
        wanted.append(("papers-matching-text", {"text": q}))
    if any(v is None for v in filters.values()):
        return {"total": 0, "filters": filters, "items": []}
    if len(wanted) <= 1:
        # One list: let the store order it and convert only the page.
        name, params = wanted[0] if wanted else ("papers", {})
        total, page = _slice(solutions(store, name, **params), offset, limit, key="paper")
        items = [paper_summary(s["paper"], s["id"], s["title"]) for s in page]
    else:
        # Several filters: intersect the (small) lists of paper IRIs.
        found: dict[str, tuple[Any, Any, Any]] | None = None
        for name, params in wanted:
            current = {
                s["paper"].value: (s["paper"], s["id"], s["title"])
                for s in solutions(store, name, **params)
            }
            found = current if found is None else {k: v for k, v in found.items() if k in current}
        rows = sorted((found or {}).values(), key=lambda r: r[1].value)
        total = len(rows)
        items = [paper_summary(*r) for r in rows[offset:offset + limit]]
    return {"total": total, "filters": filters, "items": items}


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
    out["claims"] = list(_claims(solutions(store, "paper-claims", paper=iri)))
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


def _claims(result: QuerySolutions, *, offset: int = 0, limit: int | None = None,
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
                    current["paper"] = paper_summary(s["paper"], s["id"], s["title"])
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
    from kg.readers import _from_object  # the JSON-record rules `kg ingest` uses

    records = body if isinstance(body, list) else [body]
    if not records:
        raise invalid("body", "the request holds no records")
    if len(records) > MAX_RECORDS:
        raise invalid("body", f"at most {MAX_RECORDS} records per request, got {len(records)}")
    items = [_from_object(obj, "request", n) for n, obj in enumerate(records, start=1)]
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
    prefix = _check_text("prefix", prefix) if prefix is not None else ""
    result = solutions(store, "entities-by-type", type=TYPES[type_name], prefix=prefix)
    total, page = _slice(result, offset, limit)
    return {**page_links(request, total, limit, offset), "items": entity_counts(page)}


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
            paper = {**paper_summary(s["paper"], s["id"], s["title"]), "relations": []}
            papers[s["paper"].value] = paper
        paper["relations"].append(RELATIONS.get(s["relation"].value, s["relation"].value))
    out["paper_count"] = len(papers)
    out["papers"] = list(papers.values())[:papers_limit]
    related: dict[str, list[dict[str, Any]]] = {t + "s": [] for t in TYPES}
    for item in entity_counts(list(solutions(store, "related-entities", entity=iri)), "other"):
        group = related.get(item["type"] + "s")
        if group is not None and len(group) < related_limit:
            group.append(item)
    out["related"] = related
    return out


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
    counter: list[int] = []
    items = list(_claims(solutions(store, "claims", **params), offset=offset, limit=limit,
                         counter=counter, with_paper=True))
    return {**page_links(request, counter[0], limit, offset), "filters": filters, "items": items}


# ---------------------------------------------------------------- search and stats


def _rank(q: str, item: dict[str, Any]) -> tuple[int, int, str]:
    matched = (item["matched"] or "").lower()
    closeness = 0 if matched == q else 1 if matched.startswith(q) else 2
    return closeness, -item["papers"], (item["label"] or "").lower()


@router.get("/search", response_model=SearchResult, tags=["search"], summary="Search")
def search(
    store: Annotated[GraphStore, Depends(get_store)],
    q: Annotated[str, Query(min_length=1, max_length=MAX_FILTER, description="Text to look for")],
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Most results of each kind")] = 20,
) -> dict[str, Any]:
    """Entities whose label or an alias contains ``q`` (exact matches first, then
    prefix matches, then by paper count), and papers whose title contains it."""
    text = _check_text("q", q) or ""
    entities = [
        {**entity_ref(s["entity"].value, s["type"], s["label"]), "papers": py(s["papers"]),
         "matched": py(s["matched"])}
        for s in solutions(store, "search-entities", text=text)
    ]
    entities.sort(key=lambda item: _rank(text.lower(), item))
    _, page = _slice(solutions(store, "search-papers", text=text), 0, limit)
    papers = [paper_summary(s["paper"], s["id"], s["title"]) for s in page]
    return {"q": text, "entities": entities[:limit], "papers": papers}


@router.get("/stats", response_model=Stats, tags=["search"], summary="Counts and top entities")
def stats(
    store: Annotated[GraphStore, Depends(get_store)],
    top: Annotated[int, Query(ge=1, le=100, description="How many top tasks and methods")] = 10,
) -> dict[str, Any]:
    """How many papers, tasks, methods, datasets, metrics and claims the graph
    holds, its size in triples, and the tasks and methods with most papers."""
    names = {"Paper": "papers", "Task": "tasks", "Method": "methods", "Dataset": "datasets",
             "Metric": "metrics", "Claim": "claims"}
    counts = dict.fromkeys(names.values(), 0)
    for s in solutions(store, "class-counts"):
        name = names.get(s["class"].value.rsplit("#", 1)[-1])
        if name:
            counts[name] = py(s["count"])

    def tops(type_name: str) -> list[dict[str, Any]]:
        _, page = _slice(solutions(store, "entities-by-type", type=TYPES[type_name]), 0, top)
        return entity_counts(page)

    return {"counts": counts, "triples": len(store), "top_tasks": tops("task"),
            "top_methods": tops("method")}


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


# ---------------------------------------------------------------- dereferencing

_DEREF_FORMATS = negotiation.GRAPH_FORMATS[:4]  # Turtle, N-Triples, RDF/XML, JSON-LD
_DEREF_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "The resource as HTML, Turtle, N-Triples, RDF/XML or JSON-LD",
          "content": {"text/html": {}, "text/turtle": {}, "application/ld+json": {}}},
    303: {"description": "`Accept: application/json` (or `format=json`): see the REST resource"},
    404: {"description": "Not in the graph"},
    406: {"description": "No acceptable representation"},
}
DerefFormat = Annotated[
    str | None,
    Query(max_length=100, description="html, ttl, nt, rdf, jsonld or json; wins over Accept"),
]


def _representation(request: Request, format: str | None) -> str | negotiation.Format:
    """``"html"``, ``"json"`` or the RDF format a dereferencing request asks for."""
    if format is not None:
        name = format.strip().lower()
        if name in {"html", "text/html"}:
            return "html"
        if name in {"json", "application/json"}:
            return "json"
        fmt = negotiation.by_name(name, _DEREF_FORMATS)
        if fmt is None:
            raise invalid("format", f"{format!r} is not one of html, ttl, nt, rdf, jsonld, json")
        return fmt
    ranges = negotiation.parse_accept(request.headers.get("accept"))
    if negotiation.prefers_html(ranges):
        return "html"
    fmt = negotiation.choose(ranges, _DEREF_FORMATS)
    if fmt is not None:
        return fmt
    # parse_accept reads application/json as SPARQL results JSON: here it means our JSON.
    if negotiation.quality(ranges, "application/sparql-results+json") > 0:
        return "json"
    raise NotAcceptable("available: text/html, text/turtle, application/n-triples, "
                        "application/rdf+xml, application/ld+json, application/json")


def _deref(
    request: Request, store: GraphStore, format: str | None, *, path: str, json_href: str,
    html: Any, describe: tuple[str, dict[str, object]],
) -> Response:
    wanted = _representation(request, format)
    headers = {"Vary": "Accept", "Link": alternates(path, json_href)}
    if wanted == "json":
        return RedirectResponse(json_href, status_code=303, headers=headers)
    if wanted == "html":
        from service import pages

        return Response(html(pages), media_type="text/html; charset=utf-8", headers=headers)
    assert isinstance(wanted, negotiation.Format)
    from pyoxigraph import serialize

    from kg.vocab import PREFIXES

    name, params = describe
    triples = list(run(store, name, **params))
    body = serialize(triples, format=wanted.pyoxigraph, prefixes=PREFIXES)
    return Response(body, media_type=wanted.media_type, headers=headers)


@router.get("/id/paper/{paper_id:path}", tags=["linked data"], summary="Dereference a paper IRI",
            response_class=Response, responses=_DEREF_RESPONSES)
def deref_paper(
    paper_id: Annotated[str, Path(max_length=MAX_STRING)],
    request: Request,
    store: Annotated[GraphStore, Depends(get_store)],
    format: DerefFormat = None,
) -> Response:
    """The paper ``https://w3id.org/mlkg/id/paper/{id}`` by content negotiation:
    HTML for browsers, Turtle, N-Triples, RDF/XML or JSON-LD (the paper's named
    graph plus its entities' labels), or a 303 to ``/papers/{id}`` for
    ``application/json``. Served directly (no redirect) with ``Vary: Accept``."""
    detail = paper_detail(store, paper_id)
    if detail is None:
        raise NotFound(f"no paper with id {paper_id!r}", slug="unknown-paper")
    path = "/id/paper/" + quote(paper_id, safe="")
    json_href = paper_href(paper_id)
    return _deref(
        request, store, format, path=path, json_href=json_href,
        html=lambda pages: pages.paper_page(detail, path=path, json_href=json_href),
        describe=("describe-paper", {"graph": paper_graph(paper_id)}),
    )


@router.get("/id/{type}/{key:path}", tags=["linked data"], summary="Dereference an entity IRI",
            response_class=Response, responses=_DEREF_RESPONSES)
def deref_entity(
    type: EntityKind,
    key: Annotated[str, Path(max_length=MAX_STRING)],
    request: Request,
    store: Annotated[GraphStore, Depends(get_store)],
    format: DerefFormat = None,
) -> Response:
    """The entity ``https://w3id.org/mlkg/id/{type}/{key}`` by content negotiation,
    as for papers; ``application/json`` gets a 303 to ``/entities/{type}/{key}``."""
    detail = entity_detail(store, type.value, key)
    if detail is None:
        raise NotFound(f"no {type.value} with key {key!r}", slug="unknown-entity")
    path = f"/id/{type.value}/{quote(key, safe='')}"
    json_href = detail["href"]
    return _deref(
        request, store, format, path=path, json_href=json_href,
        html=lambda pages: pages.entity_page(detail, path=path, json_href=json_href),
        describe=("describe-entity", {"entity": detail["iri"]}),
    )


__all__ = ["entity_detail", "paper_detail", "router"]
