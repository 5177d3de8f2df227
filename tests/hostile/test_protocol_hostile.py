"""The smaller findings: Allow on 405, the OpenAPI description of errors and
inputs, CORS refusals and uvicorn's own 400 as problem details, and a full
query queue answered at once with 503 + Retry-After."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.helpers import running_server

SLOW = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"


@pytest.fixture(scope="module")
def client(sample_store: Path) -> Iterator[TestClient]:
    settings = Settings(
        store=str(sample_store),
        query_workers=1,
        log_level="warning",
        cors_origins=("https://allowed.example",),
    )
    with TestClient(create_app(settings), raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.mark.parametrize(
    ("path", "allow"),
    [("/papers", "GET, POST"), ("/papers/some-id", "DELETE, GET"), ("/health", "GET")],
)
def test_405_lists_every_method_of_the_path(client: TestClient, path: str, allow: str) -> None:
    response = client.options(path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow
    assert response.headers["content-type"].startswith("application/problem+json")


def test_openapi_describes_errors_as_problems(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert "Problem" in schema["components"]["schemas"]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            assert {"400", "503"} <= set(responses), (path, method)
            if "{" in path:
                assert "404" in responses, (path, method)
            for code, response in responses.items():
                if code[0] in "45":
                    assert list(response["content"]) == ["application/problem+json"], (path, code)


@pytest.mark.parametrize(
    ("path", "parameter"),
    [("/tasks", "prefix"), ("/papers", "q"), ("/papers", "task"), ("/search", "q")],
)
def test_openapi_refuses_what_the_server_refuses(
    client: TestClient, path: str, parameter: str
) -> None:
    schema = client.get("/openapi.json").json()
    declared = next(
        p for p in schema["paths"][path]["get"]["parameters"] if p["name"] == parameter
    )["schema"]
    pattern = (declared.get("anyOf") or [declared])[0]["pattern"]
    for value in ("", "   ", "a\x00b"):
        response = client.get(path, params={parameter: value})
        assert response.status_code == 422, (path, parameter, value)
    assert not re.match(pattern, "") and not re.match(pattern, "a\x00b")
    assert re.match(pattern, "unlearning")


def test_min_above_max_is_described(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    params = {p["name"]: p for p in schema["paths"]["/claims"]["get"]["parameters"]}
    assert "max_value" in params["min_value"]["description"]
    assert client.get("/claims", params={"min_value": 2, "max_value": 1}).status_code == 422


def test_cors_refusal_is_a_problem(client: TestClient) -> None:
    response = client.options(
        "/papers",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"},
    )
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"].endswith("/cors-refused")
    allowed = client.options(
        "/papers",
        headers={"Origin": "https://allowed.example", "Access-Control-Request-Method": "GET"},
    )
    assert allowed.status_code == 200


@pytest.fixture(scope="module")
def crowded(sample_store: Path) -> Iterator[str]:
    """One fast-lane and one slow-lane worker, no waiting room, a long budget."""
    env = {
        "KG_QUERY_QUEUE": "0",
        "KG_QUERY_WORKERS": "1",
        "KG_SLOW_QUERIES": "1",
        "KG_QUERY_BUDGET": "4",
        "KG_QUERY_TIMEOUT": "5",
    }
    with running_server(sample_store, env=env) as base:
        # The slow-lane worker starts in the background: wait for both.
        deadline = time.monotonic() + 30
        while httpx.get(base + "/ready").json().get("query_workers") != 2:
            assert time.monotonic() < deadline, "the slow-lane worker did not start"
            time.sleep(0.1)
        yield base


def test_malformed_http_is_a_problem(crowded: str) -> None:
    host, port = crowded.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert b"content-type: application/problem+json" in head.lower()
    assert b'"status": 400' in body


def test_full_queue_is_an_immediate_503_with_retry_after(crowded: str) -> None:
    threads = [
        threading.Thread(
            target=httpx.get,
            args=(crowded + "/sparql",),
            kwargs={"params": {"query": f"{SLOW} # {i}"}, "timeout": 30},
        )
        for i in range(2)
    ]
    for thread in threads:
        thread.start()
    time.sleep(1.0)  # both workers hold a young query; nobody may wait
    started = time.monotonic()
    response = httpx.get(crowded + "/sparql", params={"query": "ASK { ?s ?p ?o }"}, timeout=30)
    assert time.monotonic() - started < 2
    assert response.status_code == 503
    assert response.json()["type"].endswith("/overloaded")
    assert response.headers["retry-after"].isdigit()
    for thread in threads:
        thread.join()
    # Both slow queries were stopped and their workers replaced; once they are
    # back (a second or more on a busy machine), queries are served again.
    deadline = time.monotonic() + 30
    while httpx.get(crowded + "/ready").json().get("query_workers") != 2:
        assert time.monotonic() < deadline, "the query workers were not replaced"
        time.sleep(0.1)
    assert httpx.get(crowded + "/sparql", params={"query": "ASK { ?s ?p ?o }"}).status_code == 200
