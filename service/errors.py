"""One error shape for every 4xx/5xx answer: RFC 9457 problem details.

Every error the service reports is a :class:`Problem` (or a subclass carrying
its status), rendered by :func:`problem_response` as ``application/problem+json``::

    {"type": "https://w3id.org/mlkg/problems/query-timeout",
     "title": "Query timeout", "status": 503,
     "detail": "the query ran longer than 10 s", "instance": "/sparql",
     "limit": 10.0}

FastAPI's validation errors become 422 problems naming the parameter, HTTP
errors raised by routing (404, 405) keep their status, and any other exception
is logged and answered with a bare 500 problem: no traceback leaves the server.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response
from starlette.routing import Match

from kg.read.base import ReadError
from kg.store.embedded import StoreError

PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_BASE = "https://w3id.org/mlkg/problems/"

log = logging.getLogger("kg.service")


class Problem(Exception):
    """An error with an HTTP status; ``slug`` names its ``type`` IRI."""

    status: int = 500
    slug: str = "internal-error"

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        slug: str | None = None,
        title: str | None = None,
        headers: dict[str, str] | None = None,
        **extensions: Any,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        if status is not None:
            self.status = status
        if slug is not None:
            self.slug = slug
        self.title = title or HTTPStatus(self.status).phrase
        self.headers = headers or {}
        self.extensions = extensions


class BadRequest(Problem):
    status, slug = 400, "bad-request"


class QuerySyntaxError(BadRequest):
    slug = "query-syntax"


class ForbiddenQuery(BadRequest):
    """SERVICE or LOAD of a target that is not on the allow-list."""

    slug = "forbidden-remote-access"


class QueryTooDeep(BadRequest):
    """A query or update nested past ``KG_MAX_QUERY_DEPTH`` (refused before the engine)."""

    slug = "query-too-deep"


class InputTooDeep(BadRequest):
    """A JSON body nested past ``KG_MAX_JSON_DEPTH``."""

    slug = "input-too-deep"


class Unauthorized(Problem):
    status, slug = 401, "unauthorized"


class Forbidden(Problem):
    status, slug = 403, "forbidden"


class NotFound(Problem):
    status, slug = 404, "not-found"


class NotAcceptable(Problem):
    status, slug = 406, "not-acceptable"


class ResultTooLarge(Problem):
    status, slug = 413, "result-too-large"


class UnsupportedMediaType(Problem):
    status, slug = 415, "unsupported-media-type"


class InvalidParameter(Problem):
    status, slug = 422, "invalid-parameter"


class QueryTimeout(Problem):
    status, slug = 503, "query-timeout"


class Unavailable(Problem):
    status, slug = 503, "unavailable"


class Overloaded(Unavailable):
    """Admission control refused the request: the queue or the slow lane is full.
    Always carries ``Retry-After``."""

    slug = "overloaded"

    def __init__(self, detail: str, *, retry_after: int = 1, **extensions: Any) -> None:
        super().__init__(detail, headers={"Retry-After": str(retry_after)}, **extensions)


def problem_body(
    status: int,
    detail: str,
    *,
    slug: str | None = None,
    title: str | None = None,
    instance: str | None = None,
    **extensions: Any,
) -> dict[str, Any]:
    """The JSON object of a problem; the single place its fields are chosen."""
    body: dict[str, Any] = {
        "type": PROBLEM_BASE + (slug or _default_slug(status)),
        "title": title or HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
    }
    if instance:
        body["instance"] = instance
    body.update(extensions)
    return body


def problem_response(
    status: int,
    detail: str,
    *,
    headers: dict[str, str] | None = None,
    **kwargs: Any,
) -> Response:
    """A problem as an ``application/problem+json`` response."""
    return JSONResponse(
        problem_body(status, detail, **kwargs),
        status_code=status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=headers,
    )


def _default_slug(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "-").replace("'", "")
    except ValueError:
        return "error"


async def _on_problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Problem)
    if exc.status >= 500:
        log.warning("%s %s: %s", request.method, request.url.path, exc.detail)
    return problem_response(
        exc.status,
        exc.detail,
        slug=exc.slug,
        title=exc.title,
        instance=request.url.path,
        headers=exc.headers,
        **exc.extensions,
    )


async def _on_validation(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = []
    for err in exc.errors():
        loc = [str(part) for part in err.get("loc", ())]
        # loc is like ("query", "limit"): the parameter is the last element.
        where, name = (loc[0], loc[-1]) if len(loc) >= 2 else ("request", ".".join(loc) or "body")
        errors.append({"parameter": name, "in": where, "message": err.get("msg", "invalid")})
    names = ", ".join(sorted({e["parameter"] for e in errors})) or "request"
    return problem_response(
        422,
        f"invalid parameter: {names}",
        slug=InvalidParameter.slug,
        instance=request.url.path,
        errors=errors,
    )


async def _on_http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
    headers = dict(getattr(exc, "headers", None) or {})
    if exc.status_code == 405:
        # Starlette names the methods of the first route that matched the path
        # only; GET /papers and POST /papers are two routes.
        headers["Allow"] = ", ".join(allowed_methods(request))
    return problem_response(exc.status_code, detail, instance=request.url.path, headers=headers)


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app serves at the request's path."""
    methods: set[str] = set()
    todo = list(request.app.router.routes)
    while todo:
        route = todo.pop()
        # Included routers (mounted without a prefix here) hold their own routes.
        inner = getattr(route, "original_router", None)
        if inner is not None:
            todo.extend(inner.routes)
            continue
        route_methods = getattr(route, "methods", None)
        if route_methods and route.matches(request.scope)[0] != Match.NONE:
            methods |= route_methods
    return sorted(methods)


async def _on_store_error(request: Request, exc: Exception) -> Response:
    # The store (a remote SPARQL server, usually) is down or refused us: the
    # service is unavailable, which is not the client's fault nor a bug here.
    log.warning("store unavailable on %s %s: %s", request.method, request.url.path, exc)
    return problem_response(
        503,
        f"the store is unavailable: {exc}",
        slug=Unavailable.slug,
        instance=request.url.path,
        headers={"Retry-After": "5"},
    )


async def _on_read_error(request: Request, exc: Exception) -> Response:
    # A value the read model (kg.read) refused: the client's 422, naming the parameter.
    assert isinstance(exc, ReadError)
    problem = InvalidParameter(
        str(exc), errors=[{"parameter": exc.parameter, "in": exc.where, "message": exc.message}]
    )
    return await _on_problem(request, problem)


async def _on_unhandled(request: Request, exc: Exception) -> Response:
    # A server fault: log it with its traceback here, tell the client nothing more.
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response(500, "internal server error", instance=request.url.path)


def install_error_handlers(app: FastAPI) -> None:
    """Make every error of ``app`` a problem-details response."""
    app.add_exception_handler(Problem, _on_problem)
    app.add_exception_handler(RequestValidationError, _on_validation)
    app.add_exception_handler(StarletteHTTPException, _on_http)
    app.add_exception_handler(StoreError, _on_store_error)
    app.add_exception_handler(ReadError, _on_read_error)
    app.add_exception_handler(Exception, _on_unhandled)
