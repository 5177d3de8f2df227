"""The REST API's entities, claims, search, stats and schema: thin HTTP over
:mod:`kg.read`. One list route per entity type of :mod:`kg.schema`
(``/tasks``, ``/methods``…), generated from it.

Filters that name an entity (``subject``, ``metric``…) accept its IRI,
``type/key`` (``task/unlearning``), its key, or a label or alias (ignoring case).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import RedirectResponse

from kg import schema
from kg.model import ClaimKind
from kg.read import entities as read_entities
from kg.read import papers as read_papers
from kg.read.base import MAX_FILTER, MAX_OFFSET, MAX_PAGE, TYPES, entity_href, entity_key, first
from kg.store.embedded import GraphStore
from kg.store.queries import MAX_STRING
from service.deps import get_store
from service.errors import NotFound
from service.rest_data import EntityKind, alternates, page_links
from service.rest_models import ClaimPage, EntityDetail, EntityPage, SearchResult, Stats

router = APIRouter()

Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description=f"Page size (1–{MAX_PAGE})")]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Items to skip")]
# What check_text accepts, declared so that OpenAPI says it too: some
# non-blank character and no NUL.
TEXT = r"^[^\x00]*[^\s\x00][^\x00]*$"
EntityFilter = Annotated[
    str | None,
    Query(max_length=MAX_FILTER, pattern=TEXT, description="IRI, type/key, key, label or alias"),
]
Prefix = Annotated[
    str | None,
    Query(
        max_length=MAX_FILTER,
        pattern=TEXT,
        description="Only labels or aliases starting with this (any case); "
        "equal paper counts then go in order of that name",
    ),
]


# ---------------------------------------------------------------- schema


@router.get("/schema", tags=["schema"], summary="Entity types, relations and claim kinds")
def get_schema() -> dict[str, Any]:
    """The domain schema (:mod:`kg.schema`): each entity type with its class, URL
    segment, JSON key, label, colour and paper → entity relations, and the claim
    kinds. The explorer draws its legend and colours from it."""
    return schema.to_json()


# ---------------------------------------------------------------- entities


def _list_route(kind: schema.EntityKind) -> Callable[..., dict[str, Any]]:
    def list_kind(
        request: Request,
        store: Annotated[GraphStore, Depends(get_store)],
        prefix: Prefix = None,
        limit: Limit = 20,
        offset: Offset = 0,
    ) -> dict[str, Any]:
        total, items = read_entities.list_entities(store, kind.segment, prefix, limit, offset)
        return {**page_links(request, total, limit, offset), "items": items}

    list_kind.__name__ = f"list_{kind.plural}"
    list_kind.__doc__ = (
        f"{kind.label}s with the number of papers {kind.linked} each, most papers first."
    )
    return list_kind


for _kind in schema.ENTITY_TYPES:
    router.get(
        f"/{_kind.plural}", response_model=EntityPage, tags=["entities"], summary=f"{_kind.label}s"
    )(_list_route(_kind))


@router.get(
    "/entities",
    tags=["entities"],
    summary="Find an entity by IRI",
    status_code=303,
    response_class=RedirectResponse,
    responses={
        303: {"description": "See /entities/{type}/{key}"},
        404: {"description": "Not an entity of this graph"},
    },
)
def entity_by_iri(
    iri: Annotated[str, Query(max_length=MAX_STRING, description="The entity's IRI")],
    store: Annotated[GraphStore, Depends(get_store)],
) -> RedirectResponse:
    """Redirects an entity IRI (``https://w3id.org/mlkg/id/{type}/{key}``) to its
    REST resource ``/entities/{type}/{key}``."""
    found = entity_key(iri)
    head = first(store, "entity", entity=iri) if found else None
    if found is None or head is None or head["type"].value != TYPES[found[0]].value:
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
    papers_offset: Annotated[
        int, Query(ge=0, le=MAX_OFFSET, description="Papers to skip (they are ordered by id)")
    ] = 0,
    related_limit: Annotated[
        int, Query(ge=0, le=1000, description="Most related entities of each type")
    ] = 20,
) -> dict[str, Any]:
    """The entity's label and aliases, its papers (with how each relates to it),
    and the entities of every type that share papers with it, with the number of
    shared papers: for a task, the methods used for it; for a method, the tasks
    it is applied to. The entity's IRI is ``https://w3id.org/mlkg/id/{type}/{key}``."""
    detail = read_entities.entity_detail(
        store,
        type.value,
        key,
        papers_limit=papers_limit,
        papers_offset=papers_offset,
        related_limit=related_limit,
    )
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
        float | None,
        Query(allow_inf_nan=False, description="Keep claims stating a number ≥ this (≤ max_value)"),
    ] = None,
    max_value: Annotated[
        float | None,
        Query(allow_inf_nan=False, description="Keep claims stating a number ≤ this (≥ min_value)"),
    ] = None,
    limit: Limit = 20,
    offset: Offset = 0,
) -> dict[str, Any]:
    """Claims across papers, ordered by paper id and position, each with its
    paper, sentence, offsets into the abstract, subject, metric, dataset and
    stated values. Entity filters accept an IRI, ``type/key``, key or label."""
    total, filters, items = read_papers.list_claims(
        store,
        subject=subject,
        kind=kind.value if kind is not None else None,
        metric=metric,
        dataset=dataset,
        min_value=min_value,
        max_value=max_value,
        limit=limit,
        offset=offset,
    )
    return {**page_links(request, total, limit, offset), "filters": filters, "items": items}


# ---------------------------------------------------------------- search and stats


@router.get("/search", response_model=SearchResult, tags=["search"], summary="Search")
def search(
    store: Annotated[GraphStore, Depends(get_store)],
    q: Annotated[
        str,
        Query(min_length=1, max_length=MAX_FILTER, pattern=TEXT, description="Text to look for"),
    ],
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Most results of each kind")] = 20,
) -> dict[str, Any]:
    """Entities whose label or an alias contains ``q`` — exact matches first, then
    prefix matches, then other matches, shorter names first within each, most
    papers first among equals — and papers whose title or abstract contains ``q``:
    title matches first, then those that mention it most often. Entities without
    papers are left out."""
    return read_entities.search(store, q, limit)


@router.get("/stats", response_model=Stats, tags=["search"], summary="Counts and top entities")
def stats(
    store: Annotated[GraphStore, Depends(get_store)],
    top: Annotated[int, Query(ge=1, le=100, description="How many top tasks and methods")] = 10,
) -> dict[str, Any]:
    """How many papers, entities of each type and claims the graph holds, and the
    tasks and methods with most papers."""
    return read_entities.stats(store, top)
