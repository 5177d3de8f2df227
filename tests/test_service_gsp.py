"""SPARQL 1.1 Graph Store Protocol at /store, against a real server."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyoxigraph import RdfFormat, parse

from tests.helpers import running_server

TOKEN = "gsp-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
G = "http://example.org/gsp-graph"
TTL = {"Content-Type": "text/turtle"}


@pytest.fixture(scope="module")
def base(sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = tmp_path_factory.mktemp("gsp") / "store"
    shutil.copytree(sample_store, store)
    with running_server(store, "--update-token", TOKEN) as url:
        yield url


def _ask(base: str, query: str) -> bool:
    response = httpx.get(base + "/sparql", params={"query": query})
    assert response.status_code == 200, response.text
    return response.json()["boolean"]


def test_put_get_post_delete_a_graph(base: str) -> None:
    body = "<http://example.org/s> <http://example.org/p> 1 ."
    created = httpx.put(base + "/store", params={"graph": G}, content=body, headers={**TTL, **AUTH})
    assert created.status_code == 201
    assert _ask(base, f"ASK {{ GRAPH <{G}> {{ <http://example.org/s> ?p 1 }} }}")
    added = httpx.post(
        base + "/store",
        params={"graph": G},
        headers={**TTL, **AUTH},
        content="<http://example.org/s> <http://example.org/p> 2 .",
    )
    assert added.status_code == 204
    nt = {"Accept": "application/n-triples"}
    got = httpx.get(base + "/store", params={"graph": G}, headers=nt)
    assert got.status_code == 200
    assert got.headers["content-type"].startswith("application/n-triples")
    assert len(list(parse(got.content, RdfFormat.N_TRIPLES))) == 2
    replaced = httpx.put(
        base + "/store",
        params={"graph": G},
        headers={**TTL, **AUTH},
        content="<http://example.org/s> <http://example.org/p> 3 .",
    )
    assert replaced.status_code == 204
    assert not _ask(base, f"ASK {{ GRAPH <{G}> {{ ?s ?p 1 }} }}")
    deleted = httpx.delete(base + "/store", params={"graph": G}, headers=AUTH)
    assert deleted.status_code == 204
    assert httpx.get(base + "/store", params={"graph": G}).status_code == 404


def test_paper_graph_as_turtle(base: str) -> None:
    query = "SELECT ?g WHERE { GRAPH ?g { ?p a <https://w3id.org/mlkg/ontology#Paper> } } LIMIT 1"
    graph = httpx.get(base + "/sparql", params={"query": query}).json()
    iri = graph["results"]["bindings"][0]["g"]["value"]
    got = httpx.get(base + "/store", params={"graph": iri})
    assert got.status_code == 200
    assert got.headers["content-type"].startswith("text/turtle")
    assert len(list(parse(got.content, RdfFormat.TURTLE, base_iri=iri))) > 10


@pytest.mark.parametrize(
    ("method", "kwargs", "status"),
    [
        ("PUT", {"params": {"graph": G}, "content": "<a> <b> <c> .", "headers": TTL}, 401),
        (
            "PUT",
            {
                "params": {"graph": G},
                "content": "<http://a> <http://b> .",
                "headers": {**TTL, **AUTH},
            },
            400,
        ),
        (
            "PUT",
            {
                "params": {"graph": G},
                "content": "x",
                "headers": {"Content-Type": "application/pdf", **AUTH},
            },
            415,
        ),
        ("DELETE", {"params": {"graph": "http://example.org/none"}, "headers": AUTH}, 404),
        ("GET", {"params": {"graph": G, "default": ""}}, 400),
        ("GET", {"params": {"graph": "not an iri"}}, 400),
        ("GET", {"params": {"default": ""}, "headers": {"Accept": "image/png"}}, 406),
    ],
)
def test_errors(base: str, method: str, kwargs: dict, status: int) -> None:
    response = httpx.request(method, base + "/store", **kwargs)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"


def test_read_only_server_refuses_writes(sample_store: Path) -> None:
    with running_server(sample_store) as url:
        response = httpx.put(
            url + "/store",
            params={"graph": G},
            headers=TTL,
            content="<http://example.org/s> <http://example.org/p> 1 .",
        )
        assert response.status_code == 403
