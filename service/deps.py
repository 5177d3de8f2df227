"""Request dependencies shared by the routers: the store, the settings, and the
update-token check.

``check_update_token`` is a plain function so lean Starlette handlers (the
/sparql endpoints) and FastAPI routes (through ``require_update_token``) apply
exactly the same rule:

- no token configured, or the store forced read-only → 403 (the service is read-only);
- no ``Authorization: Bearer …`` header → 401 with ``WWW-Authenticate: Bearer``;
- a wrong token → 403.
"""

from __future__ import annotations

import hmac

from fastapi import Request
from starlette.requests import HTTPConnection

from kg.store.embedded import GraphStore
from service.errors import Forbidden, Problem, Unauthorized, Unavailable
from service.settings import Settings
from service.snapshots import PublishFailed


def get_settings(request: HTTPConnection) -> Settings:
    """The settings the app was created with."""
    return request.app.state.settings


def get_store(request: HTTPConnection) -> GraphStore:
    """The open store (503 while the service is starting or stopping)."""
    store = getattr(request.app.state, "store", None)
    if store is None:
        raise Unavailable("the store is not open")
    return store


def check_update_token(request: HTTPConnection) -> None:
    """Raise 401/403 unless the request carries the configured update token."""
    settings = get_settings(request)
    if not settings.update_token:
        raise Forbidden(
            "the service is read-only: start it with an update token (KG_UPDATE_TOKEN) to write",
            slug="read-only",
        )
    if settings.read_only:
        raise Forbidden(
            "the store is open read-only (several uvicorn workers share it): writes are disabled",
            slug="read-only",
        )
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized(
            "this operation needs an 'Authorization: Bearer <token>' header",
            headers={"WWW-Authenticate": 'Bearer realm="kg"'},
        )
    if not hmac.compare_digest(token.strip().encode(), settings.update_token.encode()):
        raise Forbidden("the bearer token is not valid", slug="invalid-token")


def require_update_token(request: Request) -> None:
    """FastAPI dependency: the request must carry the update token (401/403 otherwise)."""
    check_update_token(request)


async def read_body(request: Request) -> bytes:
    """The request body, refusing (413) one larger than ``KG_MAX_REQUEST_BYTES``
    before it is all in memory."""
    limit = get_settings(request).max_request_bytes
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> Problem:
    return Problem(
        f"the request body is larger than {limit} bytes",
        status=413,
        slug="request-too-large",
        limit=limit,
        setting="KG_MAX_REQUEST_BYTES",
    )


def store_written(request: HTTPConnection) -> None:
    """Tell the query workers the store changed; call after every write."""
    # SPARQL Update and the Graph Store Protocol write to the store directly and
    # can change anything: the search index and aggregates no longer follow.
    mark_stale = getattr(getattr(request.app.state, "store", None), "mark_stale", None)
    if mark_stale is not None:
        mark_stale("a SPARQL update or Graph Store Protocol write")
    notify = getattr(request.app.state, "store_written", None)
    if notify is not None:
        notify()


async def writes_visible(request: HTTPConnection) -> None:
    """Wait until SPARQL queries read every write made so far: a write is answered
    only then, so its client reads it in its next query (read-your-writes).

    The write itself is done: a 503 here says queries cannot see it yet."""
    pool = getattr(request.app.state, "query_pool", None)
    if pool is None:
        return
    try:
        await pool.visible(get_settings(request).update_timeout)
    except (TimeoutError, PublishFailed) as exc:
        raise Unavailable(
            f"the write is stored, but SPARQL queries cannot read it yet: {exc or 'timed out'}",
            slug="write-not-visible",
        ) from None
