"""The service core: settings from the environment, health and readiness, CORS,
the JSON access log, error handlers (422 naming the parameter, 500 without a
traceback), ``kg serve`` start-up time and its read-only multi-worker mode."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import Query

from service.app import create_app
from service.settings import Settings
from tests.helpers import running_server


@pytest.fixture(scope="module")
def base(sample_store: Path) -> Iterator[str]:
    with running_server(sample_store) as url:
        yield url


def test_settings_from_env_and_overrides() -> None:
    env = {
        "KG_STORE": "/data/kg",
        "KG_UPDATE_TOKEN": "a-long-secret",
        "KG_QUERY_TIMEOUT": "2.5",
        "KG_RESULT_LIMIT": "50",
        "KG_CORS_ORIGINS": "https://a.example, https://b.example",
        "KG_SERVICE_ALLOWLIST": "https://query.wikidata.org/sparql",
    }
    settings = Settings.from_env(env)
    assert settings.store == "/data/kg"
    assert settings.update_token == "a-long-secret"
    assert settings.writable
    assert settings.query_timeout == 2.5
    assert settings.result_limit == 50
    assert settings.cors_origins == ("https://a.example", "https://b.example")
    assert settings.service_allowlist == ("https://query.wikidata.org/sparql",)
    assert Settings.from_env(env, query_timeout=7.0).query_timeout == 7.0
    assert Settings.from_env(settings.to_env()) == settings
    defaults = Settings.from_env({})
    assert defaults.query_timeout == 10.0
    assert not defaults.writable
    with pytest.raises(ValueError, match="query_timeout"):
        Settings.from_env({"KG_QUERY_TIMEOUT": "0"})


def test_health_ready_and_cors(base: str) -> None:
    assert httpx.get(base + "/health").json() == {"status": "ok"}
    ready = httpx.get(base + "/ready")
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"
    assert ready.json()["writable"] is False
    cors = httpx.get(
        base + "/sparql",
        params={"query": "ASK {}"},
        headers={"Origin": "https://elsewhere.example"},
    )
    assert cors.headers["access-control-allow-origin"] == "*"


def test_cors_origins_are_configurable(sample_store: Path) -> None:
    env = {"KG_CORS_ORIGINS": "https://allowed.example"}
    with running_server(sample_store, env=env) as url:
        ok = httpx.get(url + "/health", headers={"Origin": "https://allowed.example"})
        assert ok.headers["access-control-allow-origin"] == "https://allowed.example"
        other = httpx.get(url + "/health", headers={"Origin": "https://other.example"})
        assert "access-control-allow-origin" not in other.headers


def _test_app(tmp_path: Path):  # noqa: ANN202
    app = create_app(Settings(store=str(tmp_path / "none")))

    async def needs_int(limit: int = Query(...)) -> dict:
        return {"limit": limit}

    async def breaks() -> dict:
        raise RuntimeError("secret internal detail")

    app.add_api_route("/t/int", needs_int)
    app.add_api_route("/t/boom", breaks)
    return app


def _get(app, path: str, **kwargs) -> httpx.Response:  # noqa: ANN001, ANN003
    """One request to ``app`` in-process (no lifespan: these routes need no store)."""

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get(path, **kwargs)

    return asyncio.run(go())


def test_validation_error_is_422_naming_the_parameter(tmp_path: Path) -> None:
    response = _get(_test_app(tmp_path), "/t/int", params={"limit": "many"})
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["detail"] == "invalid parameter: limit"
    assert body["errors"][0]["parameter"] == "limit"


def test_unhandled_error_is_a_500_problem_without_traceback(tmp_path: Path) -> None:
    response = _get(_test_app(tmp_path), "/t/boom")
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["detail"] == "internal server error"
    assert "secret internal detail" not in response.text
    assert "Traceback" not in response.text


def test_access_log_is_json(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _get(_test_app(tmp_path), "/health")
    err = capfd.readouterr().err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    entry = next(e for e in lines if e.get("path") == "/health")
    assert entry["method"] == "GET"
    assert entry["status"] == 200
    assert isinstance(entry["ms"], float)


def test_serve_starts_quickly_on_an_existing_store(sample_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(sample_store, store)
    # How fast it starts is measured in benchmarks/ (BENCHMARKS.md), not timed here:
    # a loaded CI machine makes a wall-clock bound flaky.
    with running_server(store) as url:
        assert httpx.get(url + "/ready").status_code == 200


def test_several_workers_open_the_store_read_only(sample_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(sample_store, store)
    with running_server(store, "--workers", "2", "--update-token", "a-long-secret") as url:
        ready = httpx.get(url + "/ready").json()
        assert ready["writable"] is False
        response = httpx.post(
            url + "/sparql/update",
            data={"update": "CLEAR ALL"},
            headers={"Authorization": "Bearer a-long-secret"},
        )
        assert response.status_code == 403
        assert "read-only" in response.json()["detail"]
        for _ in range(4):  # whichever worker answers, the data is there
            ask = httpx.get(url + "/sparql", params={"query": "ASK { ?s ?p ?o }"})
            assert ask.json()["boolean"] is True


def test_python_dash_m_kg_runs_the_cli() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "kg", "serve", "--help"], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0
    for flag in ("--host", "--port", "--store", "--workers", "--update-token", "--query-timeout"):
        assert flag in run.stdout


def test_first_start_on_an_empty_store_ingests_the_sample(tmp_path: Path) -> None:
    with running_server(tmp_path / "new-store", startup_timeout=180) as url:
        ready = httpx.get(url + "/ready")
        assert ready.status_code == 200
        query = "SELECT (COUNT(*) AS ?n) WHERE { ?p a <https://w3id.org/mlkg/ontology#Paper> }"
        count = httpx.get(url + "/sparql", params={"query": query})
        assert int(count.json()["results"]["bindings"][0]["n"]["value"]) == 37


def test_the_query_pool_starts_its_workers_in_the_background(sample_store: Path) -> None:
    from service.messages import Answer, QueryRequest
    from service.pool import QueryPool

    async def go() -> tuple[list[int], bool, object]:
        pool = QueryPool(str(sample_store), 1, slow_lane=1)
        await pool.start()
        # kg serve answers once start() returns: it must not have waited for a
        # worker process (their start is left to tasks that have not run yet).
        at_start = pool.pids
        try:
            running = await pool.wait_running(60)
            json_results = "application/sparql-results+json"
            query = QueryRequest("ASK { ?s ?p ?o }", None, None, None, 10, None, json_results, None)
            answer = await pool.run(query, 60)
        finally:
            await pool.close()
        return at_start, running, answer

    at_start, running, answer = asyncio.run(go())
    assert at_start == []
    assert running
    assert isinstance(answer, Answer)


def test_the_web_process_imports_no_spacy_nor_networkx() -> None:
    # Both cost CPU at every start (networkx ~0.2 s); graphs import networkx when drawn.
    code = (
        "import sys, kg.cli.main, service.app, service.protocol; "
        "print(sorted(m for m in ('spacy', 'networkx') if m in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_the_web_process_freezes_what_it_started_with_once(sample_store: Path) -> None:
    """After start-up the collector no longer walks the process's long-lived objects
    (a full collection during a request would), and a second app does not freeze again."""
    code = (
        "import gc, sys\n"
        "from fastapi.testclient import TestClient\n"
        "from service.app import create_app\n"
        "from service.settings import Settings\n"
        "before = gc.get_freeze_count()\n"
        "with TestClient(create_app(Settings(store=sys.argv[1], query_workers=1))):\n"
        "    first = gc.get_freeze_count()\n"
        "with TestClient(create_app(Settings(store=sys.argv[1], query_workers=1))):\n"
        "    second = gc.get_freeze_count()\n"
        "print(before, first, second)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(sample_store)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    before, first, second = map(int, run.stdout.split())
    # freed objects leave the frozen ones; a second freeze would add the second app
    assert before == 0 and first > 10_000 and second <= first
