"""The REST API end to end: the real ``kg serve`` (uvicorn in a subprocess) on a
free port, used through httpx as any client would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import rdflib

from tests.helpers import running_server

TOKEN = "e2e-token-abcdef"
UNLEARNING = "https://w3id.org/mlkg/id/task/unlearning"


@pytest.fixture(scope="module")
def base(sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import shutil

    store = tmp_path_factory.mktemp("e2e") / "store"
    shutil.copytree(sample_store, store)
    with running_server(store, env={"KG_UPDATE_TOKEN": TOKEN}) as url:
        yield url


def problem(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    return body


def test_papers_by_task_and_detail(base: str) -> None:
    with httpx.Client(base_url=base, timeout=30) as client:
        page = client.get("/papers", params={"task": "unlearning"}).json()
        assert page["filters"] == {"task": UNLEARNING} and page["total"] >= 2
        for item in page["items"]:
            paper = client.get(item["href"]).json()
            assert UNLEARNING in {t["iri"] for t in paper["tasks"]}
            for task in paper["tasks"]:
                for m in task["mentions"]:
                    assert paper["abstract"][m["start"] : m["end"]] == m["text"]
        entity = client.get("/entities/task/unlearning").json()
        assert entity["paper_count"] == page["total"]
        assert client.get("/openapi.json").json()["paths"]["/papers"]["get"]["summary"]


def test_dereference_over_http(base: str) -> None:
    with httpx.Client(base_url=base, timeout=30) as client:
        ttl = client.get("/id/task/unlearning", headers={"Accept": "text/turtle"})
        assert ttl.status_code == 200 and ttl.headers["content-type"].startswith("text/turtle")
        assert 'rel="alternate"' in ttl.headers["link"]
        graph = rdflib.Graph().parse(data=ttl.text, format="turtle")
        assert (
            rdflib.URIRef(UNLEARNING),
            rdflib.RDF.type,
            rdflib.URIRef("https://w3id.org/mlkg/ontology#Task"),
        ) in graph
        html = client.get("/id/task/unlearning", headers={"Accept": "text/html"})
        assert html.headers["content-type"].startswith("text/html") and "<h1>" in html.text
        json_ = client.get(
            "/id/task/unlearning", headers={"Accept": "application/json"}, follow_redirects=True
        )
        assert json_.json()["iri"] == UNLEARNING


@pytest.mark.parametrize(
    "raw",
    [
        "/papers?task=%22%7D%20UNION%20%7B%20%3Fs%20%3Fp%20%3Fo%20%7D",
        "/papers?limit=-1",
        "/papers?offset=1" + "0" * 40,
        "/claims?min_value=NaN",
        "/claims?min_value=abc",
        "/search?q=" + "%7B" * 2000,
        "/queries/claims?subject=%3E%7D",
        "/entities/task/%7D%22",
    ],
)
def test_hostile_requests_get_4xx_problems(base: str, raw: str) -> None:
    response = httpx.get(base + raw, timeout=30)
    assert 400 <= response.status_code < 500 or response.status_code == 200
    if response.status_code != 200:
        problem(response, response.status_code)


def test_ingest_and_delete_over_http(base: str) -> None:
    record = {
        "id": "e2e-paper",
        "title": "Unlearning end to end",
        "abstract": (
            "We study machine unlearning. We propose EraseAll, a method that removes the "
            "influence of training data, and evaluate it on CIFAR-10 where it keeps 90% "
            "accuracy."
        ),
    }
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=base, timeout=120) as client:
        problem(client.post("/papers", json=record), 401)
        problem(client.post("/papers", json=record, headers={"Authorization": "Bearer wrong"}), 403)
        created = client.post("/papers", json=[record], headers=auth)
        assert created.status_code == 201, created.text
        result = created.json()["results"][0]
        assert result["status"] == "added" and result["source_id"] == "e2e-paper"
        assert client.get("/papers/e2e-paper").json()["title"] == record["title"]
        # The SPARQL endpoint (query workers) sees the write too.
        ask = client.get(
            "/sparql",
            params={
                "query": f"ASK {{ <https://w3id.org/mlkg/id/paper/{result['id']}> a "
                "<https://w3id.org/mlkg/ontology#Paper> }"
            },
            headers={"Accept": "application/sparql-results+json"},
        )
        assert ask.json()["boolean"] is True
        assert client.delete("/papers/e2e-paper", headers=auth).status_code == 204
        problem(client.get("/papers/e2e-paper"), 404)
        problem(client.delete("/papers/e2e-paper", headers=auth), 404)
