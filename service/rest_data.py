"""HTTP glue over the read model (:mod:`kg.read`): paging links, ``Link``
headers, the URL-segment enum of entity types, and the 422 of a bad value.

The queries and the shaping of their results live in :mod:`kg.read`; the names
below are re-exported for the routers that import them from here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from fastapi import Request

from kg import schema
from kg.read.base import (
    MAX_FILTER,
    MAX_OFFSET,
    MAX_PAGE,
    RELATIONS,
    TYPES,
    ReadError,
    check_text,
    count,
    entity_counts,
    entity_href,
    entity_key,
    entity_ref,
    first,
    paper_href,
    paper_id_of,
    paper_summary,
    py,
    run,
    slice_solutions,
    solutions,
    take,
    with_labels,
)
from kg.read.entities import entity_detail, list_entities, search_entities
from kg.read.papers import claims_page, group_claims, paper_detail, papers_page
from kg.read.resolve import key_candidates, key_guesses, resolve_entity
from service.errors import InvalidParameter

MAX_RECORDS = 100
"""Most abstracts one ``POST /papers`` may carry: extraction runs in the request."""

EntityKind = StrEnum("EntityKind", [(k.segment, k.segment) for k in schema.ENTITY_TYPES])  # type: ignore[misc]
"""The entity types as URL segments (:mod:`kg.schema`)."""

__all__ = [
    "MAX_FILTER",
    "MAX_OFFSET",
    "MAX_PAGE",
    "MAX_RECORDS",
    "RELATIONS",
    "TYPES",
    "EntityKind",
    "ReadError",
    "alternates",
    "check_text",
    "claims_page",
    "count",
    "entity_counts",
    "entity_detail",
    "entity_href",
    "entity_key",
    "entity_ref",
    "first",
    "group_claims",
    "invalid",
    "key_candidates",
    "key_guesses",
    "list_entities",
    "page_links",
    "paper_detail",
    "paper_href",
    "paper_id_of",
    "paper_summary",
    "papers_page",
    "py",
    "resolve_entity",
    "run",
    "search_entities",
    "slice_solutions",
    "solutions",
    "take",
    "with_labels",
]


def invalid(parameter: str, message: str, *, where: str = "query") -> InvalidParameter:
    """A 422 naming the parameter, in the same shape as FastAPI's validation errors."""
    return InvalidParameter(
        f"invalid parameter: {parameter}: {message}",
        errors=[{"parameter": parameter, "in": where, "message": message}],
    )


def from_read_error(exc: ReadError) -> InvalidParameter:
    """The 422 of a value the read model refused."""
    return invalid(exc.parameter, exc.message, where=exc.where)


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


def alternates(path: str, json_href: str | None = None) -> str:
    """The ``Link`` header advertising a resource's other representations."""
    links = [
        f'<{path}?format={name}>; rel="alternate"; type="{media}"'
        for name, media in (
            ("html", "text/html"),
            ("ttl", "text/turtle"),
            ("jsonld", "application/ld+json"),
        )
    ]
    if json_href:
        links.append(f'<{json_href}>; rel="alternate"; type="application/json"')
    return ", ".join(links)
