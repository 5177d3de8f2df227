"""The named queries over HTTP: ``GET /queries`` lists them, ``GET
/queries/{name}`` runs one with its parameters from the query string."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response

from kg.store.embedded import GraphStore
from kg.store.queries import ParameterError, UnknownQuery, default_registry
from service import negotiation
from service.deps import get_store
from service.errors import NotAcceptable, NotFound
from service.rest_data import invalid
from service.rest_models import QueryInfo

router = APIRouter()


def query_info(name: str) -> dict[str, Any]:
    query = default_registry().get(name, public=True)
    return {**query.to_json(), "href": "/queries/" + query.name}


@router.get(
    "/queries", response_model=list[QueryInfo], tags=["queries"], summary="List the named queries"
)
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
        200: {
            "description": "SPARQL results (JSON by default; XML, CSV, TSV by Accept) or, "
            "for CONSTRUCT, RDF (Turtle by default)",
            "content": {"application/sparql-results+json": {}, "text/csv": {}, "text/turtle": {}},
        },
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
        Query(
            max_length=100,
            description="Result format by name (json, xml, csv, tsv, ttl, "
            "nt, jsonld…); wins over Accept",
        ),
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
