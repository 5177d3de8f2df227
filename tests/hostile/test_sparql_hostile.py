"""Hostile SPARQL against a real server: queries and updates nested deep enough
to overflow the engine's stack answer a 400 naming the limit (and the server
stays up), FROM restricts the default graph, and slow queries cannot starve the
endpoint (admission control)."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from kg.cli.main import main
from tests.helpers import running_server
from tests.hostile.corpus import DEEP_QUERIES, DEEP_UPDATES, NOT_DEEP

TOKEN = "hostile-token-0123"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
UPDATE = {**AUTH, "Content-Type": "application/sparql-update"}
QUERY = {"Content-Type": "application/sparql-query"}
# A cross product of the sample's ~13k triples with itself, counted: minutes of work.
SLOW = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
# Updates see the store's real default graph (empty): the data is in named graphs.
SLOW_UPDATE = (
    "INSERT { <urn:x> <urn:y> ?n } WHERE { { SELECT (COUNT(*) AS ?n) "
    "WHERE { GRAPH ?g { ?a ?b ?c } GRAPH ?h { ?d ?e ?f } GRAPH ?i { ?x ?y ?z } } } }"
)


@pytest.fixture(scope="module")
def server(sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = tmp_path_factory.mktemp("hostile") / "store"
    shutil.copytree(sample_store, store)
    env = {"KG_UPDATE_TOKEN": TOKEN, "KG_QUERY_TIMEOUT": "6", "KG_UPDATE_TIMEOUT": "2"}
    with running_server(store, env=env) as base:
        # The slow-lane worker starts in the background: wait for all three.
        deadline = time.monotonic() + 30
        while httpx.get(base + "/ready").json().get("query_workers") != 3:
            assert time.monotonic() < deadline, "the slow-lane worker did not start"
            time.sleep(0.1)
        yield base


def _problem(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"].startswith("application/problem+json")
    return response.json()


def _alive(base: str) -> None:
    assert httpx.get(base + "/health", timeout=5).status_code == 200
    ask = httpx.get(base + "/sparql", params={"query": "ASK { ?s ?p ?o }"}, timeout=10)
    assert ask.status_code == 200 and ask.json()["boolean"] is True


@pytest.mark.parametrize("name", sorted(DEEP_QUERIES))
def test_deep_query_is_a_400_naming_the_limit(server: str, name: str) -> None:
    response = httpx.post(
        server + "/sparql", content=DEEP_QUERIES[name].encode(), headers=QUERY, timeout=30
    )
    body = _problem(response, 400)
    assert body["type"].endswith("/query-too-deep")
    assert body["limit"] == 128 and body["setting"] == "KG_MAX_QUERY_DEPTH"
    _alive(server)


@pytest.mark.parametrize("name", sorted(DEEP_UPDATES))
def test_deep_update_is_a_400_and_the_server_stays_up(server: str, name: str) -> None:
    response = httpx.post(
        server + "/sparql/update", content=DEEP_UPDATES[name].encode(), headers=UPDATE, timeout=30
    )
    assert _problem(response, 400)["type"].endswith("/query-too-deep")
    _alive(server)


@pytest.mark.parametrize("name", sorted(NOT_DEEP))
def test_harmless_look_alikes_still_run(server: str, name: str) -> None:
    response = httpx.post(
        server + "/sparql", content=NOT_DEEP[name].encode(), headers=QUERY, timeout=30
    )
    assert response.status_code == 200, response.text[:300]


def test_deep_query_in_kg_query_is_one_line(sample_store: Path) -> None:
    result = CliRunner().invoke(
        main, ["query", DEEP_QUERIES["nested-groups"], "--store", str(sample_store)]
    )
    assert result.exit_code == 2
    assert "nests deeper than 128" in result.output
    assert "Traceback" not in result.output


# ---------------------------------------------------------------- FROM


FROM_NONE = "SELECT (COUNT(*) AS ?n) FROM <urn:none> WHERE { ?s ?p ?o }"
FROM_ONTOLOGY = (
    "SELECT (COUNT(*) AS ?n) FROM <https://w3id.org/mlkg/graph/ontology> WHERE { ?s ?p ?o }"
)
ALL = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"


def _count(base: str, query: str) -> int:
    response = httpx.get(base + "/sparql", params={"query": query})
    assert response.status_code == 200, response.text
    return int(response.json()["results"]["bindings"][0]["n"]["value"])


def test_from_restricts_the_default_graph(server: str) -> None:
    everything = _count(server, ALL)
    ontology = _count(server, FROM_ONTOLOGY)
    assert _count(server, FROM_NONE) == 0
    assert 0 < ontology < everything
    # The protocol's default-graph-uri still wins over FROM.
    response = httpx.get(
        server + "/sparql",
        params={"query": FROM_NONE, "default-graph-uri": "https://w3id.org/mlkg/graph/ontology"},
    )
    assert int(response.json()["results"]["bindings"][0]["n"]["value"]) == ontology


def test_from_in_kg_query(sample_store: Path) -> None:
    def count(query: str) -> int:
        result = CliRunner().invoke(
            main, ["query", query, "--format", "csv", "--store", str(sample_store)]
        )
        assert result.exit_code == 0, result.output
        return int(result.output.split()[-1])

    assert count(FROM_NONE) == 0
    assert 0 < count(FROM_ONTOLOGY) < count(ALL)


# ---------------------------------------------------------------- admission control


def test_ask_answers_while_two_slow_queries_run(server: str) -> None:
    """With the default pool (2 fast-lane workers + 1 slow-lane), two slow queries
    never hold every worker: ASK answers, and the slow query that found the slow
    lane full was stopped with a 503 + Retry-After. (A generous bound: this is not
    a timing test; benchmarks/slow_queries.py measures the latency.)"""
    outcomes: list[httpx.Response] = []

    def slow(tag: int) -> None:
        outcomes.append(
            httpx.get(server + "/sparql", params={"query": f"{SLOW} # {tag}"}, timeout=30)
        )

    threads = [threading.Thread(target=slow, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(1.5)  # both are past the 0.5 s budget now
    started = time.monotonic()
    ask = httpx.get(server + "/sparql", params={"query": "ASK { ?s ?p ?o } # fresh"}, timeout=30)
    elapsed = time.monotonic() - started
    assert ask.status_code == 200 and ask.json()["boolean"] is True
    assert elapsed < 3, f"ASK took {elapsed:.1f} s with two slow queries running"
    for thread in threads:
        thread.join()
    statuses = sorted(r.status_code for r in outcomes)
    assert statuses == [503, 503]
    kinds = sorted(r.json()["type"].rsplit("/", 1)[-1] for r in outcomes)
    assert kinds == ["overloaded", "query-timeout"]
    overloaded = next(r for r in outcomes if r.json()["type"].endswith("/overloaded"))
    assert overloaded.headers["retry-after"].isdigit()
    _alive(server)


def test_slow_update_times_out_and_leaves_the_store_as_it_was(server: str) -> None:
    before = _count(server, ALL)
    started = time.monotonic()
    response = httpx.post(
        server + "/sparql/update", content=SLOW_UPDATE.encode(), headers=UPDATE, timeout=30
    )
    elapsed = time.monotonic() - started
    body = _problem(response, 503)
    assert body["type"].endswith("/update-timeout") and body["limit"] == 2
    assert elapsed < 6
    assert _count(server, ALL) == before
    # A quick update with a WHERE clause still goes through its trial and applies.
    quick = "INSERT { <urn:q> <urn:r> ?n } WHERE { { SELECT (COUNT(*) AS ?n) { <urn:q> ?p ?o } } }"
    assert (
        httpx.post(server + "/sparql/update", content=quick.encode(), headers=UPDATE).status_code
        == 204
    )
    assert _count(server, ALL) == before + 1
