"""SPARQL 1.1 Graph Store HTTP Protocol at ``/store``.

- ``GET|HEAD /store?graph=IRI`` / ``?default``: one graph in a negotiated RDF
  format; ``GET /store`` without a target: the whole dataset (N-Quads or TriG).
- ``PUT`` (replace), ``POST`` (add) and ``DELETE`` a graph: update token required.
  ``POST /store`` without a target adds the quads of a dataset body.

``?default`` is the store's real default graph (our data lives in named graphs,
so it is usually empty); the SPARQL endpoint's default graph is the union.
Reads obey the result cap (413); writes tell the query workers to reopen.
"""

from __future__ import annotations

import asyncio
import io
import time
from typing import Any

from fastapi import APIRouter
from pyoxigraph import DefaultGraph, NamedNode, Quad, RdfFormat, parse, serialize
from starlette.requests import Request
from starlette.responses import Response

from kg.store.common import is_remote
from kg.vocab import PREFIXES
from service import negotiation as neg
from service.deps import (
    check_update_token,
    get_settings,
    get_store,
    read_body,
    store_written,
    writes_visible,
)
from service.errors import (
    BadRequest,
    Forbidden,
    NotAcceptable,
    NotFound,
    Overloaded,
    Problem,
    ResultTooLarge,
    UnsupportedMediaType,
)

router = APIRouter()

_TRIPLE_FORMATS = tuple(f for f in neg.GRAPH_FORMATS if not f.pyoxigraph.supports_datasets)
_DATASET_FORMATS = tuple(f for f in neg.GRAPH_FORMATS if f.pyoxigraph.supports_datasets)


def _target(request: Request) -> NamedNode | DefaultGraph | None:
    """The graph the request names: ``?graph=IRI``, ``?default``, or None (the dataset)."""
    params = request.query_params
    graphs = params.getlist("graph")
    if "default" in params and graphs:
        raise BadRequest("give either ?default or ?graph=IRI, not both")
    if "default" in params:
        return DefaultGraph()
    if not graphs:
        return None
    if len(graphs) > 1:
        raise BadRequest("give one ?graph parameter", parameter="graph")
    try:
        return NamedNode(graphs[0])
    except ValueError:
        raise BadRequest(f"graph is not an IRI: {graphs[0]!r}", parameter="graph") from None


def _require_embedded(request: Request) -> None:
    """A 501 for a remote store (without touching the store's handle)."""
    if is_remote(get_store(request).location):
        raise Problem(
            "the Graph Store Protocol is only served over an embedded store",
            status=501,
            slug="not-implemented",
        )


def _raw(request: Request) -> Any:
    """The embedded pyoxigraph store (:func:`_require_embedded` checked that it is
    one), taken in the thread that uses it."""
    return get_store(request).native()


async def store_endpoint(request: Request) -> Response:
    """Dispatch on the HTTP method."""
    target = _target(request)
    if request.method in ("GET", "HEAD"):
        return await asyncio.to_thread(_read, request, target)
    check_update_token(request)
    if get_store(request).read_only:
        raise Forbidden("the store is open read-only", slug="read-only")
    _require_embedded(request)  # before the body is read
    # The handle itself is taken under the write lock: the store may be reopened
    # (service.snapshots.Roll) while a body arrives, and an old handle kept here
    # would hold the store's lock against the new one.
    if request.method == "DELETE":
        if target is None:
            raise BadRequest("DELETE needs ?graph=IRI or ?default")
        async with request.app.state.write_lock:
            status = await asyncio.to_thread(lambda: _delete(_raw(request), target))
            store_written(request)
        await writes_visible(request)
        return Response(status_code=status)
    body = await read_body(request)
    # Parsing is CPU work: off the event loop, so /health and other requests
    # are not stalled behind a large body.
    quads = await asyncio.to_thread(
        _parse_body, request, body, target, get_settings(request).update_timeout
    )
    put = request.method == "PUT"
    async with request.app.state.write_lock:
        status = await asyncio.to_thread(lambda: _write(_raw(request), target, quads, put))
        store_written(request)
    await writes_visible(request)
    return Response(status_code=status)


def _read(request: Request, target: NamedNode | DefaultGraph | None) -> Response:
    _require_embedded(request)
    raw = _raw(request)
    limit = get_settings(request).result_limit
    ranges = neg.parse_accept(request.headers.get("accept"))
    table = _DATASET_FORMATS if target is None else _TRIPLE_FORMATS
    fmt = neg.choose(ranges, table)
    if fmt is None:
        raise NotAcceptable("no acceptable RDF format", available=[f.media_type for f in table])
    if isinstance(target, NamedNode) and not raw.contains_named_graph(target):
        raise NotFound(f"there is no graph <{target.value}>")
    quads = []
    for quad in raw.quads_for_pattern(None, None, None, target):
        quads.append(quad)
        if len(quads) > limit:
            raise ResultTooLarge(
                f"the graph holds more than {limit} triples; use the export endpoints or "
                "SPARQL with LIMIT/OFFSET",
                limit=limit,
                setting="KG_RESULT_LIMIT",
            )
    out = io.BytesIO()
    if target is None:
        serialize(quads, out, fmt.pyoxigraph, prefixes=PREFIXES)
    else:
        serialize((q.triple for q in quads), out, fmt.pyoxigraph, prefixes=PREFIXES)
    return Response(out.getvalue(), media_type=fmt.media_type, headers={"Vary": "Accept"})


def _parse_body(
    request: Request, body: bytes, target: NamedNode | DefaultGraph | None, timeout: float
) -> list[Quad]:
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    fmt = RdfFormat.from_media_type(media) if media else None
    if fmt is None:
        raise UnsupportedMediaType(
            f"{media or 'no Content-Type'} is not an RDF format",
            supported=[f.media_type for f in neg.GRAPH_FORMATS],
        )
    if target is None and not fmt.supports_datasets:
        raise BadRequest("a triples body needs ?graph=IRI or ?default")
    if fmt == RdfFormat.RDF_XML and _declares_entities(body):
        # Nested entities expand a few hundred bytes into gigabytes (the "billion
        # laughs"); RDF data has no need for them, so no DTD entity is accepted.
        raise BadRequest(
            "the RDF/XML body declares XML entities (<!ENTITY>), which this service refuses",
            slug="xml-entities",
        )
    base = target.value if isinstance(target, NamedNode) else str(request.url)
    deadline = time.monotonic() + timeout
    parsed: list[Quad] = []
    try:
        for quad in parse(body, fmt, base_iri=base):
            parsed.append(quad)
            if len(parsed) % 10_000 == 0 and time.monotonic() > deadline:
                raise Overloaded(
                    f"parsing the body took longer than {timeout:g} s; nothing was written",
                    limit=timeout,
                    setting="KG_UPDATE_TIMEOUT",
                )
    except SyntaxError as exc:
        raise BadRequest(f"the body does not parse as {media}: {exc}", slug="rdf-syntax") from None
    if target is None:
        return parsed
    if any(not isinstance(q.graph_name, DefaultGraph) for q in parsed):
        raise BadRequest("the body names graphs; send triples to write one graph")
    return [Quad(q.subject, q.predicate, q.object, target) for q in parsed]


def _declares_entities(body: bytes) -> bool:
    # NUL bytes dropped: the same declaration in UTF-16 is caught too.
    return b"<!ENTITY" in body or b"<!ENTITY" in body.replace(b"\x00", b"")


def _exists(raw: Any, target: NamedNode | DefaultGraph) -> bool:
    return isinstance(target, DefaultGraph) or raw.contains_named_graph(target)


def _write(
    raw: Any, target: NamedNode | DefaultGraph | None, quads: list[Quad], replace: bool
) -> int:
    if target is None:
        raw.extend(quads)  # one transaction
        return 204
    existed = _exists(raw, target)
    raw.update(_write_update(target, quads, replace))
    return 204 if existed else 201


def _write_update(target: NamedNode | DefaultGraph, quads: list[Quad], replace: bool) -> str:
    """One SPARQL update that clears (for PUT), creates and fills the graph.

    pyoxigraph runs an update in one transaction, so a reader never sees the graph
    emptied but not yet refilled, and a failure leaves it as it was (``clear_graph``
    then ``extend`` were two). Every part is written by pyoxigraph from parsed terms
    (the graph's IRI was checked by :class:`NamedNode`, the triples are N-Triples
    from :func:`serialize`), not from the request's text."""
    out = io.BytesIO()
    serialize((q.triple for q in quads), out, RdfFormat.N_TRIPLES)
    triples = out.getvalue().decode("utf-8")
    graph = "DEFAULT" if isinstance(target, DefaultGraph) else f"GRAPH {target}"
    operations = [f"CLEAR SILENT {graph}"] if replace else []
    if isinstance(target, NamedNode):
        operations.append(f"CREATE SILENT GRAPH {target}")
        triples = f"GRAPH {target} {{\n{triples}}}"
    operations.append(f"INSERT DATA {{\n{triples}}}")
    return " ;\n".join(operations)


def _delete(raw: Any, target: NamedNode | DefaultGraph) -> int:
    if isinstance(target, DefaultGraph):
        raw.clear_graph(target)
        return 204
    if not raw.contains_named_graph(target):
        raise NotFound(f"there is no graph <{target.value}>")
    raw.remove_graph(target)
    return 204


router.add_route(
    "/store",
    store_endpoint,
    methods=["GET", "HEAD", "PUT", "POST", "DELETE"],
    include_in_schema=False,
)
