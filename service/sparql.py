"""The SPARQL 1.1 Protocol endpoints.

- ``GET|POST /sparql``: queries (GET ``?query=``, POST form, POST
  ``application/sparql-query``) with ``default-graph-uri``/``named-graph-uri``;
  without a query, a service description (RDF Accept) or the query editor (HTML).
- ``POST /sparql/update``: updates, only with the update token.
- ``GET /sparql/examples``: the editor's prefixes and example queries (``queries/examples/``).

The query handlers are plain Starlette endpoints rather than FastAPI operations:
they read the raw request themselves (the protocol's rules on repeated
parameters and media types do not fit declared parameters), and skipping
FastAPI's validation layer keeps per-query overhead low.

Queries on the embedded store run in :class:`~service.pool.QueryPool` worker
processes, which enforce the timeout by killing a runaway worker; on a remote
store they run in a thread bounded by the HTTP client's timeout.
"""

from __future__ import annotations

import asyncio
import functools
import io
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from fastapi import APIRouter
from pyoxigraph import Literal, NamedNode, Triple, serialize
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response

from kg.store.queries import default_registry
from kg.vocab import PREFIXES
from service import negotiation as neg
from service.cache import ResultCache
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
    Overloaded,
    Problem,
    QuerySyntaxError,
    QueryTimeout,
    ResultTooLarge,
    Unavailable,
    UnsupportedMediaType,
)
from service.messages import Answer, Failure, QueryRequest
from service.pool import PoolBusy, PoolError, PoolTimeout, QueryPool
from service.safety import INLINE_LIMIT, vet_query, vet_update
from service.snapshots import PublishFailed
from service.worker import render

STATIC = Path(__file__).resolve().parent / "static"
FORM = "application/x-www-form-urlencoded"
QUERY_TYPE = "application/sparql-query"
UPDATE_TYPE = "application/sparql-update"

router = APIRouter()


# ------------------------------------------------------------------ parsing


def _media_type(request: Request) -> tuple[str, dict[str, str]]:
    """The request's Content-Type and its parameters (lower-cased)."""
    raw = request.headers.get("content-type", "")
    media, *params = (p.strip() for p in raw.split(";"))
    parsed = {}
    for param in params:
        key, _, value = param.partition("=")
        parsed[key.strip().lower()] = value.strip().strip('"').lower()
    return media.lower(), parsed


def _decode(body: bytes, charset: str | None) -> str:
    if charset and charset not in ("utf-8", "utf8"):
        raise UnsupportedMediaType(f"charset {charset} is not supported: send UTF-8")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"the request body is not UTF-8: {exc}") from None


def _form(body: bytes) -> list[tuple[str, str]]:
    try:
        return parse_qsl(
            body.decode("ascii"),
            keep_blank_values=True,
            strict_parsing=False,
            encoding="utf-8",
            errors="strict",
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequest(f"the form body is not valid URL-encoded UTF-8: {exc}") from None


async def _operation(
    request: Request, name: str, direct_type: str
) -> tuple[str | None, list[tuple[str, str]]]:
    """The operation text (``query`` or ``update``) and all protocol parameters.

    Parameters come from the URL and, for a form POST, from the body too."""
    params = list(request.query_params.multi_items())
    text: str | None = None
    if request.method == "POST":
        media, ctype_params = _media_type(request)
        body = await read_body(request)
        if media == FORM:
            _decode(b"", ctype_params.get("charset"))
            params += (
                _form(body) if len(body) <= INLINE_LIMIT else await asyncio.to_thread(_form, body)
            )
        elif media == direct_type:
            text = _decode(body, ctype_params.get("charset"))
            if any(k == name for k, _ in params):
                raise BadRequest(f"the {name} is both in the body and in the URL")
        else:
            shown = media or "no Content-Type"
            raise UnsupportedMediaType(
                f"{shown} is not supported here: send {FORM} or {direct_type}",
                supported=[FORM, direct_type],
            )
    if text is None:
        values = [v for k, v in params if k == name]
        if len(values) > 1:
            raise BadRequest(f"the request has {len(values)} '{name}' parameters; send exactly one")
        text = values[0] if values else None
    return text, params


def _iris(params: list[tuple[str, str]], name: str) -> list[str] | None:
    values = [v for k, v in params if k == name]
    for value in values:
        if not value or any(c in value for c in '<>"{}|^`\\ \n\t'):
            raise BadRequest(f"{name} is not an IRI: {value!r}", parameter=name)
    return values or None


# ------------------------------------------------------------------- query


async def query_endpoint(request: Request) -> Response:
    """SPARQL 1.1 Protocol query operation (GET and POST)."""
    text, params = await _operation(request, "query", QUERY_TYPE)
    accept = request.headers.get("accept")
    if text is None:
        if any(k == "update" for k, _ in params):
            raise BadRequest("updates go to /sparql/update (POST)")
        if request.method == "GET":
            ranges = neg.parse_accept(accept)
            if neg.prefers_html(ranges):
                return FileResponse(STATIC / "sparql.html", media_type="text/html")
            explicit_rdf = [
                f
                for f in neg.GRAPH_FORMATS
                if any(r.specificity == 2 and r.matches(f.media_type) and r.q > 0 for r in ranges)
            ]
            if explicit_rdf:
                return _service_description(request, ranges)
        raise BadRequest("the request has no 'query' parameter", parameter="query")
    settings = get_settings(request)
    await vet_query(text, settings.max_query_depth, settings.service_allowlist)
    formats = _formats(params, accept)
    default_graph = _iris(params, "default-graph-uri")
    named_graphs = _iris(params, "named-graph-uri")
    req = QueryRequest(
        query=text,
        base_iri=_endpoint_iri(request),
        default_graph=tuple(default_graph) if default_graph is not None else None,
        named_graphs=tuple(named_graphs) if named_graphs is not None else None,
        limit=settings.result_limit,
        select_format=formats["select_format"],
        ask_format=formats["ask_format"],
        graph_format=formats["graph_format"],
        prefixes=PREFIXES,
    )
    pool: QueryPool | None = request.app.state.query_pool
    cache: ResultCache | None = request.app.state.query_cache
    key = None
    if pool is not None and cache is not None:
        key = cache.key(pool.generation, req)
        hit = cache.get(key)
        if hit is not None:
            return Response(hit[1], media_type=hit[0], headers={"Vary": "Accept"})
    timeout = settings.query_timeout
    try:
        if pool is not None:
            outcome = await pool.run(req, timeout)
            if isinstance(outcome, Answer) and key is not None and cache is not None:
                cache.put(key, outcome.media_type, outcome.body)
        else:
            outcome = await asyncio.wait_for(
                asyncio.to_thread(_run_in_thread, get_store(request), req), timeout
            )
    except (PoolTimeout, TimeoutError):
        raise QueryTimeout(
            f"the query ran longer than the limit of {timeout:g} s and was stopped",
            limit=timeout,
            setting="KG_QUERY_TIMEOUT",
        ) from None
    except PoolBusy as exc:
        raise Overloaded(
            f"{exc}: try again shortly",
            setting="KG_SLOW_QUERIES, KG_QUERY_QUEUE",
        ) from None
    except PublishFailed as exc:
        raise Unavailable(str(exc), slug="write-not-visible") from None
    except PoolError as exc:
        # A worker that dies mid-query (e.g. out of memory) was most likely killed
        # by the query itself: report it as this query's failure, not a server fault.
        raise Unavailable(f"{exc}; it was replaced", slug="query-worker-died") from None
    if isinstance(outcome, Answer):
        return Response(outcome.body, media_type=outcome.media_type, headers={"Vary": "Accept"})
    raise _error(outcome.kind, outcome.detail, settings.result_limit)


def _formats(params: list[tuple[str, str]], accept: str | None) -> dict[str, str | None]:
    """The media type to use for each result kind: by ``format`` parameter, else by Accept."""
    names = [v for k, v in params if k == "format"]
    if names:
        chosen = {
            "select_format": neg.by_name(names[-1], neg.SELECT_FORMATS),
            "ask_format": neg.by_name(names[-1], neg.ASK_FORMATS),
            "graph_format": neg.by_name(names[-1], neg.GRAPH_FORMATS),
        }
        if not any(chosen.values()):
            known = sorted(
                {n for t in (neg.SELECT_FORMATS, neg.GRAPH_FORMATS) for f in t for n in f.names}
            )
            raise BadRequest(
                f"unknown format {names[-1]!r}; known: {', '.join(known)}", parameter="format"
            )
        return {k: (f.media_type if f else None) for k, f in chosen.items()}
    return dict(_by_accept(accept))


@functools.lru_cache(maxsize=512)
def _by_accept(accept: str | None) -> tuple[tuple[str, str | None], ...]:
    """The media type per result kind for an Accept header (clients send few distinct ones)."""
    ranges = neg.parse_accept(accept)
    chosen = {
        "select_format": neg.choose(ranges, neg.SELECT_FORMATS),
        "ask_format": neg.choose(ranges, neg.ASK_FORMATS),
        "graph_format": neg.choose(ranges, neg.GRAPH_FORMATS),
    }
    return tuple((k, f.media_type if f else None) for k, f in chosen.items())


def _endpoint_iri(request: Request) -> str:
    """The endpoint's own URL without query: the base IRI of relative IRIs."""
    scope = request.scope
    host = request.headers.get("host")
    if not host:
        server = scope.get("server") or ("localhost", None)
        host = f"{server[0]}:{server[1]}" if server[1] else server[0]
    return f"{scope.get('scheme', 'http')}://{host}{scope.get('root_path', '')}{scope['path']}"


def _run_in_thread(store: Any, req: QueryRequest) -> Answer | Failure:
    """Evaluate on a (remote) store in this thread, with the same rendering as the workers."""
    try:
        result = store.query(
            req.query, default_graph=req.default_graph, named_graphs=req.named_graphs
        )
        return render(result, req)
    except SyntaxError as exc:
        return Failure("syntax", str(exc))
    except (ValueError, TypeError) as exc:
        return Failure("evaluation", str(exc))
    except OSError as exc:
        return Failure("store", str(exc))


_POSITION = re.compile(r"error at (\d+):(\d+)")


def syntax_problem(what: str, message: str) -> Problem:
    """A 400 for a parse error, with the parser's line and column as fields."""
    found = _POSITION.search(message)
    where = {"line": int(found.group(1)), "column": int(found.group(2))} if found else {}
    return QuerySyntaxError(f"the {what} does not parse: {message}", **where)


def _error(kind: str, detail: Any, limit: int) -> Problem:
    if kind == "syntax":
        return syntax_problem("query", str(detail))
    if kind == "too_many":
        return ResultTooLarge(
            f"the result has more than {limit} rows (or triples), the limit of this "
            "service; add LIMIT/OFFSET to page through it",
            limit=limit,
            setting="KG_RESULT_LIMIT",
        )
    if kind == "not_acceptable":
        table = {"boolean": neg.ASK_FORMATS, "solutions": neg.SELECT_FORMATS}.get(
            detail, neg.GRAPH_FORMATS
        )
        return NotAcceptable(
            "none of the accepted media types can carry this result",
            available=[f.media_type for f in table],
        )
    if kind == "evaluation":
        return BadRequest(f"the query cannot be evaluated: {detail}", slug="query-evaluation")
    return Problem(
        f"the store failed while evaluating the query: {detail}", status=500, slug="store-error"
    )


# ------------------------------------------------------- service description

_SD = "http://www.w3.org/ns/sparql-service-description#"
_FORMATS = "http://www.w3.org/ns/formats/"
_RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
_FORMAT_IRIS = {
    "application/sparql-results+json": "SPARQL_Results_JSON",
    "application/sparql-results+xml": "SPARQL_Results_XML",
    "text/csv": "SPARQL_Results_CSV",
    "text/tab-separated-values": "SPARQL_Results_TSV",
    "text/turtle": "Turtle",
    "application/n-triples": "N-Triples",
    "application/rdf+xml": "RDF_XML",
    "application/ld+json": "JSON-LD",
    "application/n-quads": "N-Quads",
    "application/trig": "TriG",
}


def _allowed(settings: Any) -> list[str]:
    """What this server allows, in words, for the service description's comment."""
    allowed = settings.service_allowlist
    return [
        "Updates (SPARQL Update, Graph Store Protocol) need the bearer token."
        if settings.writable
        else "Read-only: no update token is configured.",
        f"SERVICE and LOAD may name only: {', '.join(allowed)}."
        if allowed
        else "SERVICE and LOAD are refused (no endpoint is on the allow-list).",
        f"Queries time out after {settings.query_timeout:g} s and return at most "
        f"{settings.result_limit} rows.",
    ]


def _service_description(request: Request, ranges: list[neg.Range]) -> Response:
    fmt = neg.choose(ranges, neg.GRAPH_FORMATS)
    if fmt is None:
        raise NotAcceptable("no acceptable RDF format for the service description")
    settings = get_settings(request)
    endpoint = NamedNode(str(request.url.replace(query="", fragment="")))
    service = NamedNode(endpoint.value + "#service")

    def sd(name: str) -> NamedNode:
        return NamedNode(_SD + name)

    triples = [
        Triple(service, _RDF_TYPE, sd("Service")),
        Triple(service, sd("endpoint"), endpoint),
        Triple(service, sd("supportedLanguage"), sd("SPARQL11Query")),
        Triple(service, sd("feature"), sd("UnionDefaultGraph")),
        Triple(
            service,
            NamedNode("http://www.w3.org/2000/01/rdf-schema#comment"),
            Literal(" ".join(_allowed(settings))),
        ),
    ]
    # SERVICE is refused unless the allow-list names an endpoint: only then federate.
    if settings.service_allowlist:
        triples.append(Triple(service, sd("feature"), sd("BasicFederatedQuery")))
    if settings.writable:
        triples.append(Triple(service, sd("supportedLanguage"), sd("SPARQL11Update")))
    for media in _FORMAT_IRIS.values():
        triples.append(Triple(service, sd("resultFormat"), NamedNode(_FORMATS + media)))
    out = io.BytesIO()
    serialize(triples, out, fmt.pyoxigraph, prefixes={"sd": _SD, "formats": _FORMATS})
    return Response(out.getvalue(), media_type=fmt.media_type, headers={"Vary": "Accept"})


# ------------------------------------------------------------------ update


async def update_endpoint(request: Request) -> Response:
    """SPARQL 1.1 Protocol update operation (POST only, update token required)."""
    check_update_token(request)
    store = get_store(request)
    if store.read_only:
        raise Forbidden("the store is open read-only", slug="read-only")
    text, params = await _operation(request, "update", UPDATE_TYPE)
    if text is None:
        raise BadRequest("the request has no 'update' parameter", parameter="update")
    settings = get_settings(request)
    text, where = await vet_update(
        text,
        settings.max_query_depth,
        settings.service_allowlist,
        _iris(params, "using-graph-uri") or [],
        _iris(params, "using-named-graph-uri") or [],
    )
    base = str(request.url.replace(query="", fragment=""))
    pool: QueryPool | None = request.app.state.query_pool
    if pool is not None and pool.snapshots is not None and where:
        # pyoxigraph cannot stop a running update: try it on a copy first, in a
        # worker that can be killed, so one that would outlive the timeout never
        # starts on the live store (which stays as it was).
        await _trial(pool, text, base, settings.update_timeout)
    lock: asyncio.Lock = request.app.state.write_lock
    async with lock:
        try:
            await asyncio.to_thread(_update, store, text, base)
        except SyntaxError as exc:
            raise syntax_problem("update", str(exc)) from None
        except ValueError as exc:
            raise BadRequest(
                f"the update cannot be applied: {exc}", slug="update-evaluation"
            ) from None
        finally:
            store_written(request)
    await writes_visible(request)
    return Response(status_code=204)


async def _trial(pool: QueryPool, text: str, base: str, timeout: float) -> None:
    try:
        reply = await pool.trial_update(text, base, timeout)
    except PoolTimeout:
        raise QueryTimeout(
            f"the update would run longer than the limit of {timeout:g} s: nothing was written",
            slug="update-timeout",
            limit=timeout,
            setting="KG_UPDATE_TIMEOUT",
            headers={"Retry-After": "5"},
        ) from None
    except PoolBusy as exc:
        raise Overloaded(f"{exc}: try again shortly; nothing was written") from None
    except PoolError as exc:
        raise Unavailable(f"{exc}; nothing was written", slug="query-worker-died") from None
    if isinstance(reply, Answer):
        return
    if reply.kind == "syntax":
        raise syntax_problem("update", str(reply.detail))
    if reply.kind == "evaluation":
        raise BadRequest(f"the update cannot be applied: {reply.detail}", slug="update-evaluation")
    # A store error on the copy (e.g. no disk space for it): the live store decides.


def _update(store: Any, text: str, base: str) -> None:
    raw = store.native()
    if raw is not None:
        # The embedded store: pyoxigraph resolves relative IRIs against the endpoint.
        raw.update(text, base_iri=base)
    else:
        store.update(text)


# ---------------------------------------------------------------- examples


EXAMPLES = "examples"
"""The editor's examples: ``queries/examples/*.rq``, written for people (labels, not
bare IRIs). The REST API's own queries are not offered: run with their parameters
unbound they answer little. The registry parses these files at start-up too."""


async def examples_endpoint(request: Request) -> Response:
    """The editor's prefixes and example queries: ``queries/examples/*.rq`` as the
    query registry parsed them (one header parser: :mod:`kg.store.queries`)."""
    prefix = EXAMPLES + "/"
    examples = [
        {
            "name": query.name.removeprefix(prefix),
            "title": query.title,
            "description": query.description,
            "query": query.sparql,
        }
        for query in default_registry().all()
        if query.name.startswith(prefix)
    ]
    return JSONResponse({"prefixes": PREFIXES, "examples": examples})


router.add_route("/sparql", query_endpoint, methods=["GET", "POST"], include_in_schema=False)
router.add_route("/sparql/update", update_endpoint, methods=["POST"], include_in_schema=False)
router.add_route("/sparql/examples", examples_endpoint, methods=["GET"], include_in_schema=False)
