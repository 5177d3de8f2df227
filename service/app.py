"""The FastAPI application: ``create_app(settings)``.

The app owns three things, opened by its lifespan: the store
(``app.state.store``, a :class:`service.tracked.TrackedStore`), the pool of
query worker processes for an embedded store (``app.state.query_pool``) and a
write lock. Routers live in their own modules:
:mod:`service.sparql` (SPARQL 1.1 Protocol), :mod:`service.api` (REST) and
:mod:`service.graph` (exports and the explorer).
"""

from __future__ import annotations

import asyncio
import atexit
import gc
import json
import logging
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kg import __version__
from kg.store.embedded import (
    StoreError,
    is_remote,
    manifest_bytes,
    open_store,
)
from service import api, graph, gsp, results_api, sparql
from service.admission import Admission, Gate
from service.cache import ResultCache
from service.deps import get_store
from service.errors import Unavailable, install_error_handlers, problem_response
from service.openapi import openapi_builder
from service.pool import PoolError, QueryPool
from service.settings import Settings
from service.snapshots import PublishFailed, Roll, Snapshots, snapshot_root
from service.tracked import TrackedStore

log = logging.getLogger("kg.service")


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Open the store and the query pool; close them on shutdown."""
    settings: Settings = app.state.settings
    try:
        store = open_store(settings.store, read_only=not settings.writable)
    except StoreError as exc:
        log.error("cannot open the store: %s", exc)
        raise
    pool: QueryPool | None = None

    def written() -> None:
        if pool is not None:
            pool.invalidate()

    write_lock = asyncio.Lock()
    tracked = TrackedStore(store, written)
    if not is_remote(settings.store):
        # With a writer in this process, workers read checkpoints (see service.pool).
        snapshots = (
            Snapshots(
                store.native,
                snapshot_root(settings.store),
                interval=settings.snapshot_interval,
                roll=Roll(
                    size=lambda: manifest_bytes(settings.store),
                    reopen=tracked.reopen,
                    writes=write_lock,
                    limit=settings.manifest_limit,
                ),
            )
            if store.native() is not None and not store.read_only
            else None
        )
        pool = QueryPool(
            settings.store,
            settings.query_workers,
            snapshots,
            slow_lane=settings.slow_queries,
            budget=settings.query_budget,
            queue=settings.query_queue,
            max_wait=settings.request_max_wait,
        )
        try:
            await pool.start()
        except (PoolError, PublishFailed):
            await pool.close()
            store.close()
            raise

    app.state.store = tracked
    app.state.store_written = written
    app.state.query_pool = pool
    app.state.query_cache = ResultCache(settings.query_cache) if settings.query_cache else None
    app.state.write_lock = write_lock
    log.info(
        "store %s open (%s)", settings.store, "read-write" if settings.writable else "read-only"
    )
    # Everything alive now (modules, the app, its routes and models) lives as long as
    # the process: moved out of the collector's sight, a full collection no longer
    # walks it, and a request that happens to trigger one (a graph of a few hundred
    # nodes allocates enough to) no longer pays for it (BENCHMARKS.md, "The
    # collector's pauses": a star's p99 at c=4 on 100k papers 173 → 138 ms).
    # Once per process: freezing again would pin what earlier apps left behind
    # (tests make many) beyond the collector's reach.
    if not gc.get_freeze_count():
        gc.collect()
        gc.freeze()
    try:
        yield
    finally:
        app.state.store = None
        if pool is not None:
            await pool.close()
        store.close()


class ProblemCORSMiddleware(CORSMiddleware):
    """Starlette's CORS middleware with its preflight refusal (a plain-text 400) as
    problem details, like every other error."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code < 400:
            return response
        detail = bytes(response.body).decode("utf-8", "replace")
        headers = {
            k: v for k, v in response.headers.items() if k.lower().startswith("access-control-")
        }
        return problem_response(
            response.status_code,
            f"the CORS preflight is refused: {detail}",
            slug="cors-refused",
            instance=request_headers.get("access-control-request-path") or None,
            headers=headers,
        )


class HealthCheck:
    """Pure ASGI middleware: answers ``GET /health`` from a constant body before
    routing, dependencies or any handler run (inside CORS and the access log).

    Queries run in worker processes and parsing in threads, so nothing a client
    sends holds the event loop; this keeps the liveness answer off every other
    path too (a slow or stuck route, a full thread pool)."""

    _BODY = b'{"status":"ok"}'
    _HEADERS = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(_BODY)).encode()),
        (b"cache-control", b"no-store"),
    ]

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == "/health"
            and scope["method"] in ("GET", "HEAD")
        ):
            await send({"type": "http.response.start", "status": 200, "headers": self._HEADERS})
            body = self._BODY if scope["method"] == "GET" else b""
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


class AccessLog:
    """Pure ASGI middleware writing one JSON line per request to stderr.

    Going through :mod:`logging` for every request cost more than the rest of a
    cached /sparql answer, so lines are formatted here and written in batches:
    when 64 are pending or 0.2 s after the last write, and at exit.
    ``KG_LOG_LEVEL=warning`` (or higher) turns the access log off."""

    def __init__(self, app: ASGIApp, *, enabled: bool = True, stream: Any = None) -> None:
        self.app = app
        self.enabled = enabled
        self.stream = stream
        self._pending: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        self._flushed = 0.0
        atexit.register(self.flush)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.enabled:
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500
        size = 0

        async def send_and_note(message: Message) -> None:
            nonlocal status, size
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                size += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            client = scope.get("client")
            query = scope.get("query_string", b"")[:200].decode("latin-1")
            # Method and numbers need no escaping; path and query go through json.dumps.
            self._pending.append(
                f'{{"ts": {time.time():.3f}, "method": "{scope["method"]}", '
                f'"path": {json.dumps(scope["path"])}, "query": {json.dumps(query)}, '
                f'"status": {status}, "bytes": {size}, '
                f'"ms": {(time.perf_counter() - start) * 1000:.2f}, '
                f'"client": {json.dumps(client[0] if client else None)}}}\n'
            )
            if len(self._pending) >= 64 or time.monotonic() - self._flushed > 0.2:
                self.flush()  # a quiet server writes each line at once
            elif self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(0.2, self.flush)

    def flush(self) -> None:
        """Write the pending lines."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._flushed = time.monotonic()
        if not self._pending:
            return
        lines, self._pending = "".join(self._pending), []
        stream = self.stream or sys.stderr
        stream.write(lines)
        stream.flush()


def configure_logging(level: str) -> None:
    """JSON lines on stderr for the service logger (the access log writes its own)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter())
    logger = logging.getLogger("kg.service")
    logger.handlers[:] = [handler]
    logger.setLevel(level.upper())
    logger.propagate = False


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The service for ``settings`` (default: from ``KG_*`` environment variables)."""
    settings = settings or Settings.from_env()
    configure_logging(settings.log_level)
    app = FastAPI(
        title="ML research knowledge graph",
        version=__version__,
        description="SPARQL 1.1 endpoint and REST API over a knowledge graph of ML abstracts.",
        lifespan=lifespan,
        # FastAPI's own /docs and /redoc load their scripts from a CDN: blank pages
        # offline. The routes below serve the same pages from service/static/vendor/.
        docs_url=None,
        redoc_url=None,
    )
    app.openapi = openapi_builder(app)  # type: ignore[method-assign]
    app.state.settings = settings
    app.state.store = None
    app.state.query_pool = None
    app.state.query_cache = None
    install_error_handlers(app)
    # Added first, so it runs inside CORS and the access log (a /health answer
    # still carries CORS headers and is logged) but before routing and handlers.
    # Innermost, so its refusals still carry CORS headers and are logged.
    app.state.admission = Gate(
        concurrent=settings.max_concurrent_requests or 2 * (os.cpu_count() or 1),
        queue=settings.request_queue,
        max_wait=settings.request_max_wait,
    )
    app.add_middleware(Admission, gate=app.state.admission)
    app.add_middleware(HealthCheck)
    if settings.cors_origins:
        app.add_middleware(
            ProblemCORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=list(settings.cors_methods),
            allow_headers=["Accept", "Content-Type", "Authorization"],
        )
    app.add_middleware(
        AccessLog, enabled=logging.getLevelName(settings.log_level.upper()) <= logging.INFO
    )

    app.add_api_route("/health", health, methods=["GET"], tags=["service"])
    app.add_api_route("/ready", ready, methods=["GET"], tags=["service"])
    app.add_api_route("/docs", swagger_ui, methods=["GET"], include_in_schema=False)
    app.add_api_route("/redoc", redoc, methods=["GET"], include_in_schema=False)
    app.include_router(sparql.router)
    app.include_router(gsp.router)
    # Before api.router: its /papers/{id:path} would swallow /papers/{id}/related.
    app.include_router(results_api.router)
    app.include_router(api.router)
    app.include_router(graph.router)
    app.mount("/static", StaticFiles(directory=sparql.STATIC), name="static")
    return app


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory service.app:app_from_env`` (used by ``kg serve``)."""
    return create_app(Settings.from_env())


VENDOR = "/static/vendor"
# FastAPI's default icon is on fastapi.tiangolo.com.
FAVICON = "/static/explorer/favicon.svg"
# ReDoc's sidebar shows a logo from cdn.redoc.ly; this keeps the docs pages from
# reaching off the machine at all (the pages' own inline scripts stay allowed).
SAME_ORIGIN_ONLY = "default-src 'self' 'unsafe-inline' data: blob:"


async def swagger_ui(request: Request) -> HTMLResponse:
    """Swagger UI for the REST API, from the bundled copy (works offline)."""
    page = get_swagger_ui_html(
        openapi_url=request.app.openapi_url,
        title=f"{request.app.title} — Swagger UI",
        swagger_js_url=f"{VENDOR}/swagger-ui-bundle.js",
        swagger_css_url=f"{VENDOR}/swagger-ui.css",
        swagger_favicon_url=FAVICON,
    )
    page.headers["Content-Security-Policy"] = SAME_ORIGIN_ONLY
    return page


async def redoc(request: Request) -> HTMLResponse:
    """ReDoc for the REST API, from the bundled copy (works offline)."""
    page = get_redoc_html(
        openapi_url=request.app.openapi_url,
        title=f"{request.app.title} — ReDoc",
        redoc_js_url=f"{VENDOR}/redoc.standalone.js",
        redoc_favicon_url=FAVICON,
        with_google_fonts=False,
    )
    page.headers["Content-Security-Policy"] = SAME_ORIGIN_ONLY
    return page


async def health() -> dict[str, str]:
    """Liveness: the process answers."""
    return {"status": "ok"}


async def ready(request: Request) -> dict[str, Any]:
    """Readiness: the store is open and holds papers, and the query workers run."""
    store = get_store(request)
    pool: QueryPool | None = request.app.state.query_pool
    papers = await asyncio.to_thread(lambda: next(iter(store.paper_ids()), None) is not None)
    if not papers:
        raise Unavailable("the store holds no papers yet", slug="not-ready")
    # The workers start in the background (start-up stays quick): wait for the first.
    if pool is not None and not await pool.wait_running(30):
        raise Unavailable("no query worker is running", slug="not-ready")
    settings: Settings = request.app.state.settings
    return {
        "status": "ready",
        "store": "remote" if is_remote(settings.store) else "embedded",
        "writable": settings.writable and not store.read_only,
        "query_workers": len(pool.pids) if pool else 0,
        "refused_overloaded": request.app.state.admission.refused,
    }
