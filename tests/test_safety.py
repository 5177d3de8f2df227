"""Each safety rule of the service has a test here that fails if the rule is removed:
read-only by default, the update token (401/403), no SERVICE/LOAD fetches,
the query timeout (503, worker killed and replaced), the result cap (413),
one problem-details error shape, and no 200 on error."""

from __future__ import annotations

import http.server
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.errors import ForbiddenQuery
from service.safety import apply_update_dataset, check_remote_access, remote_targets
from tests.helpers import running_server

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
COUNT = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
# Three-way cross product of the sample's ~13k triples: ~2e12 rows, hours of work.
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
PROBLEM_KEYS = {"type", "title", "status", "detail"}


@pytest.fixture(scope="module")
def readonly(sample_store: Path) -> Iterator[str]:
    """A server started without a token (the default): read-only."""
    with running_server(sample_store) as base:
        yield base


@pytest.fixture(scope="module")
def writable(sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server with an update token on a private copy of the sample."""
    store = tmp_path_factory.mktemp("writable") / "store"
    shutil.copytree(sample_store, store)
    with running_server(store, "--update-token", TOKEN) as base:
        yield base


@pytest.fixture(scope="module")
def limited(
    sample_store: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """A server with a 1 s timeout and a 5-row cap on its own copy (so its
    worker processes can be told apart by their store path)."""
    store = tmp_path_factory.mktemp("limited") / "store"
    shutil.copytree(sample_store, store)
    with running_server(store, "--query-timeout", "1", "--result-limit", "5") as base:
        yield base, store


# ---------------------------------------------------------------- read-only default


def test_read_only_by_default(readonly: str) -> None:
    before = _count(readonly)
    update = "INSERT DATA { <http://example.org/s> <http://example.org/p> 1 }"
    for headers in ({}, AUTH):
        response = httpx.post(
            readonly + "/sparql/update",
            content=update,
            headers={"Content-Type": "application/sparql-update", **headers},
        )
        assert response.status_code == 403
        _assert_problem(response, 403)
        assert "read-only" in response.json()["detail"]
    assert _count(readonly) == before


def test_update_token_401_403_and_success(writable: str) -> None:
    update = (
        "INSERT DATA { GRAPH <http://example.org/g> "
        "{ <http://example.org/s> <http://example.org/p> 1 } }"
    )
    ctype = {"Content-Type": "application/sparql-update"}
    before = _count(writable)
    missing = httpx.post(writable + "/sparql/update", content=update, headers=ctype)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    _assert_problem(missing, 401)
    wrong = httpx.post(
        writable + "/sparql/update",
        content=update,
        headers={**ctype, "Authorization": "Bearer not-the-token"},
    )
    assert wrong.status_code == 403
    _assert_problem(wrong, 403)
    assert _count(writable) == before
    ok = httpx.post(writable + "/sparql/update", content=update, headers={**ctype, **AUTH})
    assert ok.status_code == 204
    # The query workers see the write at once.
    assert _count(writable) == before + 1
    form = httpx.post(
        writable + "/sparql/update",
        headers=AUTH,
        data={"update": "DROP GRAPH <http://example.org/g>"},
    )
    assert form.status_code == 204
    assert _count(writable) == before


def test_update_via_get_is_refused(writable: str) -> None:
    response = httpx.get(writable + "/sparql/update", params={"update": "CLEAR ALL"}, headers=AUTH)
    assert response.status_code == 405
    _assert_problem(response, 405)
    assert _count(writable) > 0


# ---------------------------------------------------------------- no fetching


@pytest.fixture
def trap() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server that records every request it gets."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "text/turtle")
            self.end_headers()
            self.wfile.write(b"<http://example.org/s> <http://example.org/p> 1 .")

        do_POST = do_GET  # noqa: N815

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", hits
    server.shutdown()


@pytest.mark.parametrize(
    "template",
    [
        "SELECT * WHERE { SERVICE <{url}> { ?s ?p ?o } }",
        "SELECT * WHERE { SERVICE SILENT <{url}sparql> { ?s ?p ?o } }",
        "PREFIX t: <{url}> select * where { service t:sparql { ?s ?p ?o } }",
        "SELECT * WHERE { SERV\\u0049CE <{url}> { ?s ?p ?o } }",
        "SELECT * WHERE { BIND(<{url}> AS ?x) SERVICE ?x { ?s ?p ?o } }",
    ],
)
def test_service_is_refused(readonly: str, trap: tuple[str, list[str]], template: str) -> None:
    url, hits = trap
    response = httpx.get(readonly + "/sparql", params={"query": template.replace("{url}", url)})
    assert response.status_code == 400
    _assert_problem(response, 400)
    assert "SERVICE" in response.json()["detail"]
    assert hits == []


def test_load_is_refused(writable: str, trap: tuple[str, list[str]]) -> None:
    url, hits = trap
    for update in (
        f"LOAD <{url}data.ttl>",
        f"LOAD SILENT <{url}x> INTO GRAPH <http://example.org/g>",
    ):
        response = httpx.post(writable + "/sparql/update", data={"update": update}, headers=AUTH)
        assert response.status_code == 400
        _assert_problem(response, 400)
        assert "LOAD" in response.json()["detail"]
    assert hits == []


@pytest.mark.parametrize(
    "text",
    [
        'SELECT * WHERE { ?s ?p "SERVICE <http://evil.example/>" }',
        "SELECT * WHERE { ?s ?p ?o } # SERVICE <http://evil.example/>",
        "SELECT ?service ?load WHERE { ?service <http://example.org/load> ?load }",
        "PREFIX service: <http://example.org/> SELECT * WHERE { ?s service:load ?o }",
        "SELECT * WHERE { ?s ?p '''LOAD <http://evil.example/>\n''' }",
        "SELECT * WHERE { ?s <http://example.org/SERVICE> ?o }",
    ],
)
def test_keywords_inside_strings_comments_names_are_not_flagged(text: str) -> None:
    assert remote_targets(text) == []
    check_remote_access(text, ())


def test_allow_list() -> None:
    query = "SELECT * WHERE { SERVICE <https://query.wikidata.org/sparql> { ?s ?p ?o } }"
    check_remote_access(query, ("https://query.wikidata.org/sparql",))
    check_remote_access(query, ("https://query.wikidata.org/",))
    with pytest.raises(ForbiddenQuery):
        check_remote_access(query, ("https://query.wikidata.org",))  # no prefix match without '/'
    with pytest.raises(ForbiddenQuery):
        check_remote_access(query, ())


def test_update_dataset_parameters_become_using_clauses() -> None:
    update = "INSERT { GRAPH <urn:t> { ?s ?p ?o } } WHERE { ?s ?p ?o }"
    rewritten = apply_update_dataset(update, ["urn:a"], ["urn:b"])
    assert "USING <urn:a> USING NAMED <urn:b> WHERE" in rewritten


# ---------------------------------------------------------------- timeout and cap


def test_timeout_is_503_quickly_and_the_worker_is_replaced(limited: tuple[str, Path]) -> None:
    base, store = limited
    if not Path("/proc").is_dir():
        pytest.skip("needs /proc to find the worker processes")
    workers = _worker_pids(store)
    assert len(workers) >= 1
    started = time.monotonic()
    response = httpx.get(base + "/sparql", params={"query": RUNAWAY}, timeout=30)
    elapsed = time.monotonic() - started
    assert response.status_code == 503
    body = _assert_problem(response, 503)
    assert body["limit"] == 1
    assert elapsed < 4, f"the timeout took {elapsed:.1f} s"
    # The runaway worker is gone and a fresh one took its place.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        now = _worker_pids(store)
        if len(now) == len(workers) and now != workers:
            break
        time.sleep(0.1)
    assert len(now) == len(workers)
    assert len(workers - now) == 1, (workers, now)
    for pid in workers - now:
        assert not Path(f"/proc/{pid}").exists()
    # And the endpoint still answers.
    assert httpx.get(base + "/sparql", params={"query": "ASK {}"}).status_code == 200


def test_a_worker_killed_mid_query_is_a_503_and_replaced(limited: tuple[str, Path]) -> None:
    base, store = limited
    if not Path("/proc").is_dir():
        pytest.skip("needs /proc to find the worker processes")
    import signal
    import threading

    result: dict[str, httpx.Response] = {}
    thread = threading.Thread(
        target=lambda: result.setdefault(
            "r", httpx.get(base + "/sparql", params={"query": RUNAWAY + " # killed"}, timeout=30)
        )
    )
    thread.start()
    time.sleep(0.3)
    before = _worker_pids(store)
    for pid in before:  # kill them all: the busy one and the idle ones
        os.kill(pid, signal.SIGKILL)
    thread.join()
    assert result["r"].status_code == 503
    _assert_problem(result["r"], 503)
    # The next queries are answered by fresh workers (dead idle ones are not used).
    for _ in range(3):
        assert httpx.get(base + "/sparql", params={"query": "ASK {}"}).status_code == 200
    assert _worker_pids(store).isdisjoint(before)


def test_result_cap_is_413_never_truncated(limited: tuple[str, Path]) -> None:
    base, _ = limited
    five = httpx.get(base + "/sparql", params={"query": "SELECT * WHERE { ?s ?p ?o } LIMIT 5"})
    assert five.status_code == 200
    assert len(five.json()["results"]["bindings"]) == 5
    for query in (
        "SELECT * WHERE { ?s ?p ?o } LIMIT 6",
        "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o } LIMIT 6",
        # ~1.7e8 rows: the cap stops the evaluation early (413, not a 503 timeout).
        "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f }",
    ):
        response = httpx.get(base + "/sparql", params={"query": query})
        assert response.status_code == 413
        body = _assert_problem(response, 413)
        assert body["limit"] == 5


def test_oversized_request_body_is_413(sample_store: Path) -> None:
    with running_server(sample_store, env={"KG_MAX_REQUEST_BYTES": "1000"}) as base:
        big = "ASK { " + "?s ?p ?o . " * 200 + "}"
        response = httpx.post(
            base + "/sparql", content=big, headers={"Content-Type": "application/sparql-query"}
        )
        assert response.status_code == 413
        assert _assert_problem(response, 413)["limit"] == 1000
        small = httpx.post(
            base + "/sparql", content="ASK {}", headers={"Content-Type": "application/sparql-query"}
        )
        assert small.status_code == 200


# ---------------------------------------------------------------- errors


def test_error_shape_is_pinned(readonly: str) -> None:
    response = httpx.get(readonly + "/sparql", params={"query": "SELECT * WHERE { ?s ?p }"})
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body == {
        "type": "https://w3id.org/mlkg/problems/query-syntax",
        "title": "Bad Request",
        "status": 400,
        "detail": body["detail"],
        "instance": "/sparql",
        "line": 1,
        "column": body["column"],
    }
    assert body["detail"].startswith("the query does not parse: error at 1:")
    assert isinstance(body["column"], int)


def test_malformed_query_reports_line_and_column(readonly: str) -> None:
    query = "PREFIX kg: <https://w3id.org/mlkg/ontology#>\nSELECT * WHERE {\n  ?s kg:usesMethod \n}"
    response = httpx.post(
        readonly + "/sparql", content=query, headers={"Content-Type": "application/sparql-query"}
    )
    assert response.status_code == 400
    body = response.json()
    assert body["line"] in (3, 4)
    assert body["column"] >= 1


BAD_REQUESTS = [
    # (method, path, kwargs, expected status)
    ("GET", "/sparql", {"headers": {"Accept": "application/sparql-results+json"}}, 400),
    ("POST", "/sparql", {"data": {"default-graph-uri": "http://example.org/"}}, 400),
    ("POST", "/sparql", {"content": b"ASK {}", "headers": {"Content-Type": "text/plain"}}, 415),
    ("POST", "/sparql", {"content": b"ASK {}"}, 415),
    (
        "POST",
        "/sparql",
        {
            "content": "ASK {}".encode("utf-16"),
            "headers": {"Content-Type": "application/sparql-query; charset=utf-16"},
        },
        415,
    ),
    (
        "POST",
        "/sparql",
        {"content": b"ASK { \xff }", "headers": {"Content-Type": "application/sparql-query"}},
        400,
    ),
    ("GET", "/sparql?query=ASK%20%7B%7D&query=ASK%20%7B%7D", {}, 400),
    ("GET", "/sparql", {"params": {"query": "ASK {", "format": "json"}}, 400),
    ("GET", "/sparql", {"params": {"query": "ASK {}", "default-graph-uri": "not an iri"}}, 400),
    ("PUT", "/sparql", {"params": {"query": "ASK {}"}}, 405),
    ("GET", "/no/such/path", {}, 404),
    ("POST", "/sparql/update", {"data": {"update": "CLEAR ALL"}}, 403),
]


@pytest.mark.parametrize(("method", "path", "kwargs", "status"), BAD_REQUESTS)
def test_errors_are_problems_never_200(
    readonly: str, method: str, path: str, kwargs: dict, status: int
) -> None:
    response = httpx.request(method, readonly + path, **kwargs)
    assert response.status_code == status, response.text
    _assert_problem(response, status)


# ---------------------------------------------------------------- helpers


def _assert_problem(response: httpx.Response, status: int) -> dict:
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body.keys() >= PROBLEM_KEYS
    assert body["status"] == status
    assert body["type"].startswith("https://w3id.org/mlkg/problems/")
    assert "Traceback" not in response.text
    return body


def _count(base: str) -> int:
    response = httpx.get(base + "/sparql", params={"query": COUNT})
    assert response.status_code == 200, response.text
    return int(response.json()["results"]["bindings"][0]["n"]["value"])


def _worker_pids(store: Path) -> set[int]:
    """Query worker processes serving ``store`` (found by their command line)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"service.worker" in argv and any(str(store).encode() in a for a in argv):
            found.add(int(entry.name))
    return found
