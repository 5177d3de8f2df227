"""Hostile request bodies, in-process on a private store copy: POST /papers
checks the token before reading, bounds the body while it streams and limits
JSON depth; lone surrogates are per-record 422s; an RDF/XML entity bomb sent to
PUT /store is refused before it expands."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.hostile.corpus import DEEP_JSON, RDF_BODIES

TOKEN = "hostile-token-0123"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON_TYPE = {"Content-Type": "application/json"}
ABSTRACT = (
    "We study machine unlearning for large language models. We propose ForgetNet, a "
    "contrastive learning method that removes the influence of training examples."
)
LIMIT = 1024 * 1024  # the test server's KG_MAX_REQUEST_BYTES


def _settings(store: Path) -> Settings:
    return Settings(
        store=str(store),
        update_token=TOKEN,
        query_workers=1,
        log_level="warning",
        max_request_bytes=LIMIT,
    )


@pytest.fixture
def client(store_copy: Path, extractor: object) -> Iterator[TestClient]:
    app = create_app(_settings(store_copy))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        app.state.extractor = extractor
        yield test_client


def _problem(response: Any, status: int) -> dict:
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"].startswith("application/problem+json")
    return response.json()


# ---------------------------------------------------------------- body limits


def _streamed(store: Path, headers: dict[str, str], chunks: int) -> tuple[int, int]:
    """POST /papers a body of ``chunks`` × 1 MB without Content-Length; the status
    and how many chunks the server pulled before answering."""
    pulled = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal pulled
        for _ in range(chunks):
            pulled += 1
            yield b" " * (1024 * 1024)

    async def go() -> int:
        app = create_app(_settings(store))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
                response = await http.post("/papers", content=body(), headers=headers)
                return response.status_code

    return asyncio.run(go()), pulled


def test_post_papers_checks_the_token_before_reading_the_body(store_copy: Path) -> None:
    status, pulled = _streamed(store_copy, JSON_TYPE, 50)
    assert status == 401
    assert pulled <= 1, f"{pulled} MB read before the 401"


def test_post_papers_bounds_the_body_while_it_streams(store_copy: Path) -> None:
    status, pulled = _streamed(store_copy, {**JSON_TYPE, **AUTH}, 50)
    assert status == 413
    assert pulled <= 2, f"{pulled} MB read before the 413"


def test_post_papers_refuses_a_declared_oversize_at_once(client: TestClient) -> None:
    response = client.post(
        "/papers", content=b"[" + b" " * (LIMIT + 10) + b"]", headers={**JSON_TYPE, **AUTH}
    )
    assert _problem(response, 413)["setting"] == "KG_MAX_REQUEST_BYTES"


# ---------------------------------------------------------------- JSON


@pytest.mark.parametrize("name", sorted(DEEP_JSON))
def test_deep_json_is_a_400_naming_the_limit(client: TestClient, name: str) -> None:
    response = client.post("/papers", content=DEEP_JSON[name], headers={**JSON_TYPE, **AUTH})
    body = _problem(response, 400)
    assert body["type"].endswith("/input-too-deep") and body["setting"] == "KG_MAX_JSON_DEPTH"
    assert client.get("/stats").json()["counts"]["papers"] == 37


@pytest.mark.parametrize("field", ["abstract", "id", "title", "authors", "venue"])
def test_lone_surrogate_is_a_per_record_rejection(client: TestClient, field: str) -> None:
    bad: dict[str, Any] = {"id": f"surrogate-{field}", "abstract": ABSTRACT}
    bad[field] = ["A. Author", "\udfff"] if field == "authors" else bad.get(field, "") + "\udfff"
    good = {"id": f"good-beside-{field}", "abstract": ABSTRACT + " " + field}
    # json.dumps writes the lone surrogate as the escape "\udfff", as a hostile client would.
    response = client.post(
        "/papers", content=json.dumps([bad, good]).encode(), headers={**JSON_TYPE, **AUTH}
    )
    assert response.status_code == 201, response.text
    results = response.json()["results"]
    assert results[0]["status"] == "rejected" and "surrogate" in results[0]["reason"]
    assert results[1]["status"] == "added"
    alone = client.post("/papers", content=json.dumps(bad).encode(), headers={**JSON_TYPE, **AUTH})
    assert _problem(alone, 422)["errors"][0]["record"] == 1


# ---------------------------------------------------------------- RDF


@pytest.mark.parametrize("name", sorted(RDF_BODIES))
def test_rdf_bodies(client: TestClient, name: str) -> None:
    media, body, status = RDF_BODIES[name]
    graph = f"http://example.org/hostile/{name}"
    response = client.put(
        "/store", params={"graph": graph}, content=body, headers={"Content-Type": media, **AUTH}
    )
    if status >= 400:
        _problem(response, status)
        assert client.get("/store", params={"graph": graph}).status_code == 404
    else:
        assert response.status_code == status, response.text
    assert client.get("/health").status_code == 200
