"""POST /papers and DELETE /papers/{id} in-process, on a private copy of the
sample store: the token rule, per-record outcomes, and that writes show up in
every read endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kg.ingest import extractor_version
from kg.reading.readers import derived_id
from service.app import create_app
from service.settings import Settings

TOKEN = "test-token-123456"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

GOOD = {
    "id": "rest-test-1",
    "title": "Forgetting on demand",
    "abstract": (
        "We study machine unlearning for large language models. We propose ForgetNet, a "
        "contrastive learning method that removes the influence of training examples. "
        "On CIFAR-10, ForgetNet reaches an accuracy of 91.2% while forgetting 99% of the "
        "targeted examples, outperforming gradient ascent."
    ),
    "authors": ["A. Author", "B. Author"],
    "year": 2026,
}


def assert_problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status and body["type"].startswith("https://w3id.org/mlkg/problems/")
    return body


@pytest.fixture
def writable(store_copy: Path, extractor: object) -> Iterator[TestClient]:
    settings = Settings(
        store=str(store_copy), update_token=TOKEN, query_workers=1, log_level="warning"
    )
    app = create_app(settings)
    with TestClient(app, raise_server_exceptions=False) as client:
        app.state.extractor = extractor  # the session's spaCy pipeline: no second load
        yield client


@pytest.fixture(scope="module")
def read_only(sample_store: Path) -> Iterator[TestClient]:
    app = create_app(Settings(store=str(sample_store), query_workers=1, log_level="warning"))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def test_read_only_service_refuses_writes(read_only: TestClient) -> None:
    assert_problem(read_only.post("/papers", json=GOOD, headers=AUTH), 403)
    assert_problem(read_only.delete("/papers/anything", headers=AUTH), 403)


def test_token_required(writable: TestClient) -> None:
    body = assert_problem(writable.post("/papers", json=GOOD), 401)
    assert "Bearer" in body["detail"]
    assert_problem(
        writable.post("/papers", json=GOOD, headers={"Authorization": "Bearer nope"}), 403
    )
    first = writable.get("/papers?limit=1").json()["items"][0]
    assert_problem(writable.delete(first["href"]), 401)
    assert_problem(writable.delete(first["href"], headers={"Authorization": "Basic x"}), 401)
    assert writable.get(first["href"]).status_code == 200  # still there


def test_post_then_read_then_delete(writable: TestClient) -> None:
    bad = {"id": "too-short", "abstract": "Too short."}
    response = writable.post("/papers", json=[GOOD, bad, "not an object"], headers=AUTH)
    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["added"], body["updated"], body["unchanged"]) == (1, 0, 0)
    statuses = [(r["record"], r["status"]) for r in body["results"]]
    assert statuses == [(1, "added"), (2, "rejected"), (3, "rejected")]
    # The paper's id is the hash of its abstract; the record's id is kept beside it.
    paper_id = body["results"][0]["id"]
    assert paper_id == derived_id(GOOD["abstract"])
    assert body["results"][0]["source_id"] == "rest-test-1"
    assert "shorter" in body["results"][1]["reason"]
    extraction = body["results"][0]["extraction"]
    assert extraction["id"] == GOOD["id"] and extraction["abstract"] == GOOD["abstract"]

    paper = writable.get("/papers/rest-test-1").json()  # found by its source id
    assert paper == writable.get(f"/papers/{paper_id}").json()
    assert paper["id"] == paper_id and paper["source_id"] == "rest-test-1"
    assert paper["title"] == GOOD["title"] and paper["year"] == 2026
    assert sorted(paper["authors"]) == GOOD["authors"]
    # Every entity the extraction found is linked; its type is the corpus's (one
    # type per node: "contrastive learning", a method in this paper, is a task in
    # most of the sample's papers).
    groups = ("tasks", "methods", "proposed_methods", "datasets", "metrics")
    found = {e["iri"].rsplit("/", 1)[1] for g in groups for e in extraction[g]}
    stored = {e["iri"].rsplit("/", 1)[1] for g in groups for e in paper[g]}
    assert found <= stored
    for group in ("proposed_methods", "datasets"):
        assert {e["iri"] for e in paper[group]} == {e["iri"] for e in extraction[group]}
    # the graph also links the broader task named inside a listed one ("unlearning"
    # in "LLM unlearning"), which the extraction does not list, and what the
    # corpus made a task
    listed = {e["iri"].rsplit("/", 1)[1] for e in extraction["tasks"]}
    linked = {e["iri"].rsplit("/", 1)[1] for e in paper["tasks"]}
    assert listed <= linked
    assert all(
        any(k.endswith("-" + extra) for k in listed) or extra in found for extra in linked - listed
    )
    assert len(paper["claims"]) == len(extraction["claims"])
    assert writable.get("/papers?limit=1").json()["total"] == 38
    assert writable.get("/stats").json()["counts"]["papers"] == 38
    for entity in paper["tasks"] + paper["datasets"]:
        linked = writable.get(entity["href"]).json()
        assert paper_id in {p["id"] for p in linked["papers"]}

    again = writable.post("/papers", json=GOOD, headers=AUTH)
    assert again.status_code == 200
    assert again.json()["results"][0]["status"] == "unchanged"
    changed = writable.post("/papers", json={**GOOD, "title": "New title"}, headers=AUTH)
    assert changed.status_code == 201 and changed.json()["results"][0]["status"] == "updated"
    assert writable.get("/papers/rest-test-1").json()["title"] == "New title"

    assert writable.delete("/papers/rest-test-1", headers=AUTH).status_code == 204
    assert_problem(writable.get("/papers/rest-test-1"), 404)
    assert_problem(writable.delete("/papers/rest-test-1", headers=AUTH), 404)
    assert writable.get("/stats").json()["counts"]["papers"] == 37


def test_post_bad_bodies(writable: TestClient) -> None:
    body = assert_problem(writable.post("/papers", json=[{"abstract": ""}, 5], headers=AUTH), 422)
    assert [e["record"] for e in body["errors"]] == [1, 2]
    assert_problem(writable.post("/papers", json=[], headers=AUTH), 422)
    assert_problem(writable.post("/papers", json=[GOOD] * 101, headers=AUTH), 422)
    broken = writable.post(
        "/papers", content=b"{not json", headers={**AUTH, "Content-Type": "application/json"}
    )
    assert_problem(broken, 422)
    assert writable.get("/stats").json()["counts"]["papers"] == 37


def test_duplicate_ids_in_one_request(writable: TestClient) -> None:
    response = writable.post("/papers", json=[GOOD, {**GOOD, "title": "Other"}], headers=AUTH)
    assert response.status_code == 201
    assert [r["status"] for r in response.json()["results"]] == ["added", "duplicate"]


class FailingOn:
    """The real extractor, made to fail on abstracts holding a marker (fault injection)."""

    def __init__(self, inner: Any, marker: str) -> None:
        self.inner = inner
        self.marker = marker
        self.version = extractor_version(inner)

    def extract(self, records: Any) -> Any:
        def checked(stream: Any) -> Any:
            for record in stream:
                if self.marker in record.abstract:
                    raise RuntimeError("injected extractor fault")
                yield record

        return self.inner.extract(checked(records))


def test_extractor_failure_is_isolated_per_record(writable: TestClient, extractor: Any) -> None:
    writable.app.state.extractor = FailingOn(extractor, "EXPLODE")
    poison = {**GOOD, "id": "poison", "abstract": GOOD["abstract"] + " EXPLODE."}
    response = writable.post("/papers", json=[poison, GOOD], headers=AUTH)
    assert response.status_code == 201, response.text
    results = response.json()["results"]
    assert [r["status"] for r in results] == ["failed", "added"]
    assert "server-side" in results[0]["reason"]
    assert writable.get("/papers/poison").status_code == 404
    assert writable.get("/papers/rest-test-1").status_code == 200
    only_poison = writable.post("/papers", json=poison, headers=AUTH)
    assert only_poison.status_code == 422
    assert only_poison.json()["errors"][0]["record"] == 1


@pytest.mark.parametrize(
    "record",
    [
        {"abstract": {"$gt": 1}},
        {"abstract": ["a", "list"]},
        {"abstract": GOOD["abstract"], "id": "x" * 300},
        {"abstract": GOOD["abstract"], "id": "bad\nid"},
        {"abstract": GOOD["abstract"] + "\x00"},
        {"abstract": "word " * 10_000},
        {"abstract": '"} UNION { ?s ?p ?o } # ' * 3},
    ],
)
def test_hostile_records_are_rejected_not_500(writable: TestClient, record: dict) -> None:
    response = writable.post("/papers", json=record, headers=AUTH)
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["record"] == 1


def test_odd_but_usable_fields(writable: TestClient) -> None:
    odd = {
        **GOOD,
        "id": "odd/id with spaces",
        "year": "not a year",
        "authors": {"x": 1},
        "keywords": "a; b",
        "title": ["Two", "parts"],
    }
    response = writable.post("/papers", json=odd, headers=AUTH)
    assert response.status_code == 201, response.text
    paper = writable.get("/papers/odd%2Fid%20with%20spaces")
    assert paper.status_code == 200 and paper.json()["year"] is None
    assert paper.json()["source_id"] == "odd/id with spaces"
    assert writable.get("/id/paper/odd%2Fid%20with%20spaces?format=ttl").status_code == 200
    assert writable.delete("/papers/odd%2Fid%20with%20spaces", headers=AUTH).status_code == 204
