"""Graph exports and the explorer page.

* ``GET /graph``: the graph (or a neighbourhood of it) in any format of
  :data:`kg.exporters.EXPORTERS`, chosen by ``format=`` or by ``Accept``.
  A cut graph says so in ``X-Graph-Truncated``/``X-Graph-Total-Nodes`` headers
  (and in the JSON formats' graph data).
* ``GET /graph/formats``: the formats, for clients and the page's download links.
* ``GET /graph/search?q=`` and ``GET /graph/node?id=``: what the explorer's
  search box and side panel show.
* ``GET /graph/queries/{name}``: the SPARQL text of a graph query, for the
  explorer's "view as SPARQL" link.
* ``GET /``: the explorer page (``service/static/explorer/``; its libraries are
  committed under ``service/static/vendor/``, so it works offline).

All of it reads the store through :mod:`kg.read.graphview`'s named queries.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, Response

from kg.read import exporters
from kg.read.graphview import (
    MAX_DEPTH,
    NODE_TYPES,
    PROJECTIONS,
    GraphDataCache,
    GraphRequest,
    GraphViewError,
    draw,
    named_query,
    node_details,
    parse_types,
    search,
)
from kg.store.index.graph import bounded_data
from service import negotiation as neg
from service.deps import get_settings, get_store
from service.errors import InvalidParameter, NotAcceptable, NotFound, Problem

EXPLORER = Path(__file__).resolve().parent / "static" / "explorer"
DEFAULT_LIMIT = 2000
"""Nodes a whole-graph ``GET /graph`` returns unless ``limit`` says otherwise."""
MAX_LIMIT = 100_000

# Graph queries the explorer may show as SPARQL (the rest are plumbing).
SHOWABLE_QUERIES = ("neighbourhood", "edges", "search", "node-claims")

STALE_AFTER = 30.0
"""Seconds a remote store's graph data is reused (its writers do not tell us)."""

router = APIRouter(tags=["graph"])
_graph_data = GraphDataCache()


def _data_token(request: Request) -> object:
    """Changes whenever the graph data may have changed: the query pool's store
    generation (bumped by every write through this service), else the clock."""
    pool = getattr(request.app.state, "query_pool", None)
    generation = getattr(pool, "generation", None)
    if generation is not None:
        return ("generation", generation)
    return ("clock", int(time.monotonic() // STALE_AFTER))


def _problem(exc: GraphViewError) -> Exception:
    if exc.status == 404:
        return NotFound(str(exc), parameter=exc.param)
    if exc.status == 413:
        return Problem(str(exc), status=413, slug="graph-too-large", parameter=exc.param)
    return InvalidParameter(str(exc), parameter=exc.param)


def _choose_exporter(request: Request, fmt: str | None) -> exporters.Exporter:
    if fmt:
        try:
            return exporters.exporter(fmt)
        except exporters.UnknownFormat as exc:
            raise InvalidParameter(str(exc), parameter="format") from None
    # No SPARQL aliases: application/json means D3 JSON here, not SPARQL results.
    ranges = neg.parse_accept(request.headers.get("accept"), aliases={})
    best: exporters.Exporter | None = None
    best_q = 0.0
    # The registry's order breaks ties, so */* gets the first format (GraphML).
    for media_type, exp in exporters.media_types().items():
        q = neg.quality(ranges, media_type)
        if q > best_q:
            best, best_q = exp, q
    if best is None:
        raise NotAcceptable(
            "none of the graph formats is acceptable; give format= or Accept one of: "
            + ", ".join(e.media_type for e in exporters.EXPORTERS.values()),
            available=[e.media_type for e in exporters.EXPORTERS.values()],
        )
    return best


@router.get("/graph", summary="The graph in a visualisation format")
async def get_graph(
    request: Request,
    format: Annotated[
        str | None,
        Query(description="One of: " + ", ".join(exporters.EXPORTERS) + " (default: by Accept)"),
    ] = None,
    focus: Annotated[
        str | None,
        Query(
            description="A paper or entity (IRI, `task/unlearning`, paper id, or key): "
            "draw its neighbourhood only",
            max_length=2000,
        ),
    ] = None,
    depth: Annotated[int, Query(ge=1, le=MAX_DEPTH, description="Hops around the focus")] = 1,
    types: Annotated[
        str | None,
        Query(description="Comma-separated node types: " + ",".join(NODE_TYPES), max_length=200),
    ] = None,
    min_support: Annotated[
        int, Query(ge=1, le=1_000_000, description="Least number of papers behind an edge")
    ] = 1,
    limit: Annotated[
        int | None,
        Query(
            ge=1,
            le=MAX_LIMIT,
            description="Most nodes; nearest to the focus first, then the most supported "
            f"(default: {DEFAULT_LIMIT} for the whole graph, KG_GRAPH_FOCUS_LIMIT (100) around "
            "a focus)",
        ),
    ] = None,
    projection: Annotated[
        str, Query(description="bipartite (papers and entities) or entity (co-occurrence)")
    ] = "bipartite",
    download: Annotated[bool, Query(description="Ask the browser to save the file")] = False,
) -> Response:
    """The graph, or a neighbourhood, as GraphML, GEXF, Cytoscape JSON, D3 JSON, DOT or CSV."""
    exporter = _choose_exporter(request, format)
    settings = get_settings(request)
    # A neighbourhood's size grows with the corpus; the whole graph's is bounded apart.
    default_limit = settings.graph_focus_limit if focus else DEFAULT_LIMIT
    if projection not in PROJECTIONS:
        raise InvalidParameter(
            f"projection must be one of {', '.join(PROJECTIONS)}", parameter="projection"
        )
    try:
        graph_request = GraphRequest(
            focus=focus or None,
            depth=depth,
            types=parse_types(types),
            min_support=min_support,
            limit=limit if limit is not None else default_limit,
            projection=projection,  # type: ignore[arg-type]
        )
    except GraphViewError as exc:
        raise _problem(exc) from None
    store = get_store(request)
    token = _data_token(request)

    def work() -> tuple[bytes, dict[str, Any]]:
        data = bounded_data(
            store,
            graph_request,
            _graph_data,
            token,
            max_papers=settings.graph_max_papers,
            max_nodes=settings.graph_max_nodes,
        )
        drawing = draw(store, graph_request, data=data)
        return exporter.write(drawing), dict(drawing.graph) | {
            "nodes": len(drawing.nodes),
            "edges": len(drawing.edges),
        }

    try:
        body, info = await asyncio.to_thread(work)
    except GraphViewError as exc:
        raise _problem(exc) from None
    headers = {
        "X-Graph-Nodes": str(info["nodes"]),
        "X-Graph-Edges": str(info["edges"]),
        "X-Graph-Total-Nodes": str(info["total_nodes"]),
        "X-Graph-Truncated": "true" if info["truncated"] else "false",
        "Vary": "Accept",
    }
    if download:
        headers["Content-Disposition"] = f'attachment; filename="{exporter.filename}"'
    media_type = exporter.media_type
    if media_type.startswith("text/") or media_type.endswith("+xml"):
        media_type += "; charset=utf-8"
    return Response(body, media_type=media_type, headers=headers)


@router.get("/graph/formats", summary="The graph export formats")
async def graph_formats() -> list[dict[str, str]]:
    """Every export format: name, media type, file extension, description."""
    return [
        {
            "name": e.name,
            "media_type": e.media_type,
            "extension": e.extension,
            "description": e.description,
        }
        for e in exporters.EXPORTERS.values()
    ]


@router.get("/graph/search", summary="Search entities and papers (explorer)")
async def graph_search(
    request: Request,
    q: Annotated[str, Query(min_length=1, max_length=200, description="Text to look for")],
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> dict[str, Any]:
    """Entities whose label or alias contains ``q``, then papers whose title or abstract does."""
    store = get_store(request)
    results = await asyncio.to_thread(search, store, q, limit)
    return {"query": q, "results": results}


@router.get("/graph/node", summary="One node for the explorer's side panel")
async def graph_node(
    request: Request,
    id: Annotated[
        str,
        Query(
            min_length=1,
            max_length=2000,
            description="IRI, `task/unlearning`, paper id or entity key",
        ),
    ],
) -> dict[str, Any]:
    """Label, type, aliases, papers (with abstract snippets), entities of a paper, and claims."""
    store = get_store(request)
    try:
        return await asyncio.to_thread(node_details, store, id)
    except GraphViewError as exc:
        raise _problem(exc) from None


@router.get("/graph/queries/{name}", summary="SPARQL text of a graph query")
async def graph_query_text(name: str) -> Response:
    """The text of ``queries/graph/{name}.rq`` (for the explorer's "view as SPARQL" link)."""
    if name not in SHOWABLE_QUERIES:
        raise NotFound(f"no graph query {name!r}; known: {', '.join(SHOWABLE_QUERIES)}")
    return Response(named_query(name).sparql, media_type="application/sparql-query")


@router.get("/", include_in_schema=False)
async def explorer() -> FileResponse:
    """The explorer page."""
    return FileResponse(EXPLORER / "index.html", media_type="text/html")


@router.get("/favicon.ico", include_in_schema=False)
async def favicon() -> FileResponse:
    """The site icon (browsers ask for it on every page, the SPARQL editor's too)."""
    return FileResponse(EXPLORER / "favicon.svg", media_type="image/svg+xml")
