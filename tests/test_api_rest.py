"""The REST API in-process (FastAPI TestClient on create_app) over the ingested
37-paper sample, opened read-only: papers, entities, claims, search, stats,
named queries, dereferencing, the error shape and hostile input."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import rdflib
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from service import api, api_entities, api_queries, pages
from service.app import create_app
from service.settings import Settings

KG = "https://w3id.org/mlkg/ontology#"


@pytest.fixture(scope="module")
def client(sample_store: Path) -> Iterator[TestClient]:
    app = create_app(Settings(store=str(sample_store), query_workers=1, log_level="warning"))
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def get(client: TestClient, url: str, **kw: Any) -> Any:
    response = client.get(url, **kw)
    assert response.status_code == 200, response.text
    return response.json()


def assert_problem(response: Any, status: int) -> dict[str, Any]:
    """The one error shape: RFC 9457 problem details."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    assert body["type"].startswith("https://w3id.org/mlkg/problems/")
    assert isinstance(body["title"], str) and isinstance(body["detail"], str)
    return body


def top_entity(client: TestClient, kind: str) -> dict[str, Any]:
    return get(client, f"/{kind}s?limit=1")["items"][0]


# ---------------------------------------------------------------- papers


def test_papers_paginate_over_all_37(client: TestClient) -> None:
    url: str | None = "/papers?limit=10"
    ids: list[str] = []
    pages = 0
    while url:
        page = get(client, url)
        assert page["total"] == 37
        ids += [p["id"] for p in page["items"]]
        url = page["next"]
        pages += 1
    assert pages == 4
    assert len(ids) == len(set(ids)) == 37
    assert ids == [p["id"] for p in get(client, "/papers?limit=37")["items"]]  # a stable order
    last = get(client, "/papers?limit=10&offset=30")
    assert last["next"] is None and last["previous"] == "/papers?offset=20&limit=10"


def test_papers_by_task_match_the_entity(client: TestClient) -> None:
    unlearning = get(client, "/papers?task=unlearning")
    iri = "https://w3id.org/mlkg/id/task/unlearning"
    assert unlearning["filters"] == {"task": iri}
    assert unlearning["total"] >= 2  # the sample has several unlearning papers
    entity = get(client, "/entities/task/unlearning")
    assert entity["paper_count"] == unlearning["total"]
    assert {p["id"] for p in entity["papers"]} == {p["id"] for p in unlearning["items"]}
    for item in unlearning["items"]:
        paper = get(client, item["href"])
        assert iri in {t["iri"] for t in paper["tasks"]}


@pytest.mark.parametrize(
    "value",
    ["unlearning", "task/unlearning", "https://w3id.org/mlkg/id/task/unlearning", "UNLEARNING"],
)
def test_entity_filter_forms(client: TestClient, value: str) -> None:
    page = get(client, "/papers", params={"task": value})
    assert page["filters"]["task"] == "https://w3id.org/mlkg/id/task/unlearning"
    assert page["total"] >= 2


def test_unknown_filter_gives_an_empty_list(client: TestClient) -> None:
    page = get(client, "/papers?task=no-such-task-anywhere")
    assert page == {**page, "total": 0, "items": [], "filters": {"task": None}}


def test_combined_filters_intersect(client: TestClient) -> None:
    task = top_entity(client, "task")
    metric = top_entity(client, "metric")
    both = get(
        client, "/papers", params={"task": task["iri"], "metric": metric["iri"], "limit": 200}
    )
    only_task = {
        p["id"] for p in get(client, "/papers", params={"task": task["iri"], "limit": 200})["items"]
    }
    only_metric = {
        p["id"]
        for p in get(client, "/papers", params={"metric": metric["iri"], "limit": 200})["items"]
    }
    assert {p["id"] for p in both["items"]} == only_task & only_metric
    assert both["total"] == len(only_task & only_metric)


def test_text_filter(client: TestClient) -> None:
    page = get(client, "/papers?q=UNLEARNING&limit=200")
    assert page["total"] >= 3
    for item in page["items"]:
        paper = get(client, item["href"])
        assert "unlearning" in (paper["abstract"] + (paper["title"] or "")).lower()


def test_paper_detail_offsets_point_into_the_abstract(client: TestClient) -> None:
    checked = 0
    for item in get(client, "/papers?limit=200")["items"]:
        paper = get(client, item["href"])
        abstract = paper["abstract"]
        for group in ("tasks", "methods", "proposed_methods", "datasets", "metrics"):
            for entity in paper[group]:
                assert entity["type"] + "s" in group or group == "proposed_methods"
                for m in entity["mentions"]:
                    assert abstract[m["start"] : m["end"]] == m["text"]
                    checked += 1
        for claim in paper["claims"]:
            sentence = claim["sentence"]
            assert abstract[sentence["start"] : sentence["end"]] == sentence["text"]
            assert sentence["start"] <= claim["start"] < claim["end"] <= sentence["end"]
            for value in claim["values"]:
                if value["start"] is not None:
                    assert abstract[value["start"] : value["end"]] == value["text"]
    assert checked > 100


def test_paper_detail_has_the_extract_keys(client: TestClient) -> None:
    first = get(client, "/papers?limit=1")["items"][0]
    response = client.get(first["href"])
    paper = response.json()
    for key in (
        "id",
        "title",
        "abstract",
        "tasks",
        "methods",
        "proposed_methods",
        "datasets",
        "metrics",
        "claims",
    ):
        assert key in paper
    assert paper["iri"] == first["iri"]
    assert 'rel="alternate"' in response.headers["link"]
    for claim in paper["claims"]:
        assert claim["kind"] in {
            "contribution",
            "performance",
            "efficiency",
            "theoretical",
            "empirical-finding",
        }


def test_unknown_paper_is_404(client: TestClient) -> None:
    body = assert_problem(client.get("/papers/no-such-paper"), 404)
    assert "no-such-paper" in body["detail"]


# ---------------------------------------------------------------- entities


@pytest.mark.parametrize("kind", ["task", "method", "dataset", "metric"])
def test_entity_lists_sorted_by_paper_count(client: TestClient, kind: str) -> None:
    page = get(client, f"/{kind}s?limit=200")
    assert page["total"] == len(page["items"]) > 0
    counts = [e["papers"] for e in page["items"]]
    assert counts == sorted(counts, reverse=True)
    assert all(e["type"] == kind and e["papers"] >= 1 for e in page["items"])
    stats = get(client, "/stats")
    assert page["total"] <= stats["counts"][kind + "s"]


def test_entity_list_prefix_and_paging(client: TestClient) -> None:
    page = get(client, "/tasks?prefix=UNL")
    assert page["items"]
    for item in page["items"]:
        entity = get(client, item["href"])
        names = [entity["label"], *entity["aliases"]]
        assert any(n.lower().startswith("unl") for n in names)
    two = get(client, "/methods?limit=2&offset=1")
    assert len(two["items"]) == 2 and two["offset"] == 1
    assert two["items"][0] == get(client, "/methods?limit=3")["items"][1]


def test_entity_detail(client: TestClient) -> None:
    task = top_entity(client, "task")
    entity = get(client, task["href"])
    assert entity["iri"] == task["iri"] and entity["type"] == "task"
    assert entity["paper_count"] == task["papers"] == len(entity["papers"])
    related = entity["related"]
    assert set(related) == {"tasks", "methods", "datasets", "metrics"}
    assert related["methods"], "methods used for the most common task"
    for other in related["methods"]:
        assert other["type"] == "method" and 1 <= other["papers"] <= entity["paper_count"]
        # the co-occurrence count is the number of shared papers
        shared = get(
            client, "/papers", params={"task": task["iri"], "method": other["iri"], "limit": 200}
        )
        assert shared["total"] == other["papers"]


def test_unknown_entity(client: TestClient) -> None:
    assert_problem(client.get("/entities/task/no-such-task"), 404)
    body = assert_problem(client.get("/entities/widget/x"), 422)
    assert body["errors"][0]["parameter"] == "type"


# ---------------------------------------------------------------- claims


def test_claims_filters(client: TestClient) -> None:
    everything = get(client, "/claims?limit=200")
    stats = get(client, "/stats")
    assert everything["total"] == stats["counts"]["claims"] == len(everything["items"])
    performance = get(client, "/claims?kind=performance&limit=200")
    assert 0 < performance["total"] < everything["total"]
    assert {c["kind"] for c in performance["items"]} == {"performance"}
    ranged = get(client, "/claims?min_value=50&max_value=100&limit=200")
    assert ranged["items"]
    for claim in ranged["items"]:
        assert any(v["number"] is not None and 50 <= v["number"] <= 100 for v in claim["values"])
        paper = get(client, claim["paper"]["href"])
        assert paper["abstract"][claim["start"] : claim["end"]] == claim["text"]
    with_subject = next(c for c in everything["items"] if c["subject_iri"])
    about = get(client, "/claims", params={"subject": with_subject["subject_iri"], "limit": 200})
    assert with_subject["iri"] in {c["iri"] for c in about["items"]}
    assert all(c["subject_iri"] == with_subject["subject_iri"] for c in about["items"])


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("min_value=abc", "min_value"),
        ("max_value=nan", "max_value"),
        ("kind=bogus", "kind"),
        ("min_value=5&max_value=1", "min_value"),
        ("limit=0", "limit"),
        ("offset=-1", "offset"),
    ],
)
def test_claims_bad_parameters(client: TestClient, query: str, parameter: str) -> None:
    body = assert_problem(client.get("/claims?" + query), 422)
    assert parameter in body["detail"]
    assert any(e["parameter"] == parameter for e in body["errors"])


# ---------------------------------------------------------------- search, stats


def test_search(client: TestClient) -> None:
    result = get(client, "/search?q=unlearning")
    assert result["entities"][0]["matched"].lower() == "unlearning"  # exact match first
    assert all("unlearning" in e["matched"].lower() for e in result["entities"])
    assert_problem(client.get("/search"), 422)
    assert_problem(client.get("/search?q="), 422)


def test_search_finds_papers_by_abstract_ranked(client: TestClient, sample_store) -> None:  # noqa: ANN001
    # The sample has no titles: papers are found by their abstracts (as /papers?q= does).
    result = get(client, "/search?q=unlearning&limit=50")  # ranked by BM25 over the index
    by_text = get(client, "/papers?q=unlearning&limit=50")
    assert {p["id"] for p in result["papers"]} == {p["id"] for p in by_text["items"]}
    assert len(result["papers"]) >= 3
    # Ranked by the full-text index's BM25, the same order /papers?q= gives alone.
    assert [p["id"] for p in result["papers"]] == [p["id"] for p in by_text["items"]]
    for paper in result["papers"]:
        assert "unlearn" in get(client, paper["href"])["abstract"].lower()

    # Without an index the scan finds the same papers, those that say it most often first.
    from kg.read.entities import search_papers
    from kg.store.embedded import open_store

    store = open_store(sample_store, read_only=True)
    try:
        scanned = search_papers(store, "unlearning", 50)
    finally:
        store.close()
    assert {p["id"] for p in scanned} == {p["id"] for p in result["papers"]}
    counts = [get(client, p["href"])["abstract"].lower().count("unlearning") for p in scanned]
    assert counts == sorted(counts, reverse=True), counts


def test_stats(client: TestClient) -> None:
    stats = get(client, "/stats?top=5")
    assert stats["counts"]["papers"] == 37
    assert len(stats["top_tasks"]) == 5
    assert stats["top_tasks"][0] == top_entity(client, "task")
    assert stats["top_methods"][0] == top_entity(client, "method")


# ---------------------------------------------------------------- named queries


def test_queries_listed(client: TestClient) -> None:
    listed = get(client, "/queries")
    names = {q["name"] for q in listed}
    assert {"papers-with-entity", "claims", "class-counts"} <= names
    assert not any("/" in n for n in names)
    entity = next(q for q in listed if q["name"] == "papers-with-entity")
    assert entity["parameters"] == [
        {
            "name": "entity",
            "type": "iri",
            "required": True,
            "default": None,
            "description": entity["parameters"][0]["description"],
        }
    ]


def test_run_named_query(client: TestClient) -> None:
    iri = "https://w3id.org/mlkg/id/task/unlearning"
    response = client.get("/queries/papers-with-entity", params={"entity": iri})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/sparql-results+json")
    bindings = response.json()["results"]["bindings"]
    assert len(bindings) == get(client, "/papers?task=unlearning")["total"]
    csv = client.get(
        "/queries/papers-with-entity", params={"entity": iri}, headers={"Accept": "text/csv"}
    )
    assert csv.headers["content-type"].startswith("text/csv")
    assert csv.text.splitlines()[0].startswith("paper,title,entity")
    ttl = client.get("/queries/describe-entity?format=ttl", params={"entity": iri})
    graph = rdflib.Graph().parse(data=ttl.text, format="turtle")
    assert (rdflib.URIRef(iri), rdflib.RDF.type, rdflib.URIRef(KG + "Task")) in graph


@pytest.mark.parametrize(
    ("url", "status", "parameter"),
    [
        ("/queries/papers-with-entity", 422, "entity"),
        ("/queries/papers-with-entity?entity=not-an-iri", 422, "entity"),
        ("/queries/papers-with-entity?entity=%3E%20%7D%20UNION%20%7B", 422, "entity"),
        ("/queries/papers?bogus=1", 422, "bogus"),
        ("/queries/claims?min_value=ten", 422, "min_value"),
        ("/queries/papers?format=png", 422, "format"),
        ("/queries/no-such-query", 404, None),
        ("/queries/store/union-graph", 404, None),
    ],
)
def test_named_query_errors(
    client: TestClient, url: str, status: int, parameter: str | None
) -> None:
    body = assert_problem(client.get(url), status)
    if parameter:
        assert any(e["parameter"] == parameter for e in body["errors"])


def test_named_query_not_acceptable(client: TestClient) -> None:
    assert_problem(client.get("/queries/papers", headers={"Accept": "image/png"}), 406)


# ---------------------------------------------------------------- dereferencing


def test_dereference_paper(client: TestClient) -> None:
    paper = get(client, "/papers?limit=1")["items"][0]
    path = "/id/paper/" + paper["id"]
    html = client.get(path, headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assert "<mark" in html.text and 'rel="alternate"' in html.headers["link"]
    assert "Accept" in html.headers["vary"]
    ttl = client.get(path, headers={"Accept": "text/turtle"})
    assert ttl.headers["content-type"].startswith("text/turtle")
    graph = rdflib.Graph().parse(data=ttl.text, format="turtle")
    iri = rdflib.URIRef(paper["iri"])
    assert (iri, rdflib.RDF.type, rdflib.URIRef(KG + "Paper")) in graph
    jsonld = client.get(path, headers={"Accept": "application/ld+json"})
    assert jsonld.headers["content-type"].startswith("application/ld+json")
    assert len(rdflib.Graph().parse(data=jsonld.text, format="json-ld")) == len(graph)
    redirect = client.get(path, headers={"Accept": "application/json"}, follow_redirects=False)
    assert redirect.status_code == 303 and redirect.headers["location"] == paper["href"]


def test_paper_page_renders_latex_as_text(client: TestClient) -> None:
    # The abstract as given keeps its LaTeX (offsets point into it); the page shows text.
    papers = get(client, "/papers?limit=100")["items"]
    with_latex = [d for d in (get(client, p["href"]) for p in papers) if "$" in d["abstract"]]
    assert with_latex, "the sample has abstracts with inline LaTeX"
    for detail in with_latex:
        html = client.get("/id/paper/" + detail["id"], headers={"Accept": "text/html"}).text
        abstract = html.split('<p class="abstract">', 1)[1].split("</p>", 1)[0]
        assert "$" not in abstract and "\\%" not in abstract and "\\times" not in abstract
        assert "<mark" in abstract or not any(detail[g] for g in ("tasks", "methods"))
    shown = "".join(
        client.get("/id/paper/" + d["id"], headers={"Accept": "text/html"}).text for d in with_latex
    )
    assert "×" in shown


def test_dereference_entity(client: TestClient) -> None:
    task = top_entity(client, "task")
    path = f"/id/task/{task['key']}"
    html = client.get(path, headers={"Accept": "text/html"})
    assert task["label"] in html.text
    ttl = client.get(path + "?format=ttl")
    graph = rdflib.Graph().parse(data=ttl.text, format="turtle")
    subject = rdflib.URIRef(task["iri"])
    assert (subject, rdflib.RDF.type, rdflib.URIRef(KG + "Task")) in graph
    papers = set(graph.subjects(rdflib.URIRef(KG + "addressesTask"), subject))
    assert len(papers) == task["papers"]
    nt = client.get(path, headers={"Accept": "application/n-triples"})
    assert len(rdflib.Graph().parse(data=nt.text, format="nt")) == len(graph)
    assert_problem(client.get(path, headers={"Accept": "image/png"}), 406)
    assert_problem(client.get("/id/task/no-such-task"), 404)
    assert_problem(client.get("/id/paper/no-such-paper"), 404)


# ---------------------------------------------------------------- robustness and docs


HOSTILE = [
    "/papers?task=%22%7D%20UNION%20%7B%20%3Fs%20%3Fp%20%3Fo%20%7D%20%23",
    "/papers?task=%3E%20%7D%20UNION%20%7B",
    "/papers?method=http://x/%3E%7D",
    "/papers?q=%27%22%5C%7B%7D",
    "/papers?q=" + "x" * 499,
    "/papers?q=" + "x" * 5000,
    "/papers?task=" + "a" * 5000,
    "/papers?dataset=%00",
    "/papers?limit=-5",
    "/papers?limit=abc",
    "/papers?offset=99999999999999999999999999",
    "/papers?offset=999999",
    "/papers?task=%F0%9F%98%80",
    "/claims?subject=%7D%7D%7B%7B",
    "/claims?min_value=1e400",
    "/claims?min_value=-inf",
    "/claims?metric=urn:x:%3E",
    "/tasks?prefix=%22%29%20%7D",
    "/tasks?prefix=" + "%7B" * 400,
    "/search?q=%5C",
    "/search?q=" + "%22" * 600,
    "/entities/task/%22%7D%20UNION",
    "/entities/task/" + "k" * 3000,
    "/papers/%22%3E%7D%20UNION%20%7B",
    "/papers/a/b/../c",
    "/papers/",
    "/entities/task/",
    "/entities/task/a%2Fb",
    "/id/task/",
    "/id/paper/%3E%3E",
    "/id/task/%7D?format=%22",
    "/queries/papers-with-entity?entity=http://x/%7D%3E",
    "/queries/papers-with-entity?entity=http://x/&entity=http://y/",
    "/queries/search-papers?text=" + "y" * 3000,
]


@pytest.mark.parametrize("url", HOSTILE)
def test_hostile_input_never_500(client: TestClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert_problem(response, response.status_code)


def test_openapi_documents_every_route(client: TestClient) -> None:
    spec = get(client, "/openapi.json")
    paths = spec["paths"]
    routers = (api.router, api_entities.router, api_queries.router, pages.router)
    routes = [r for router in routers for r in router.routes if isinstance(r, APIRoute)]
    # 17 routes, and GET /schema
    assert len(routes) == 18
    for route in routes:
        path = route.path.replace(":path}", "}")
        assert path in paths, path
        for method in route.methods:
            operation = paths[path][method.lower()]
            assert operation.get("summary") and operation.get("description"), (method, path)
    # Response models make the JSON shapes part of the contract.
    schemas = spec["components"]["schemas"]
    for name in (
        "PaperPage",
        "PaperDetail",
        "EntityPage",
        "EntityDetail",
        "ClaimPage",
        "SearchResult",
        "Stats",
        "QueryInfo",
        "IngestResponse",
    ):
        assert name in schemas
    assert client.get("/docs").status_code == 200


def test_responses_are_json_serialisable(client: TestClient) -> None:
    # Every list endpoint returns plain JSON that round-trips.
    for url in (
        "/papers",
        "/tasks",
        "/methods",
        "/datasets",
        "/metrics",
        "/claims",
        "/stats",
        "/queries",
        "/search?q=learning",
    ):
        body = get(client, url)
        assert json.loads(json.dumps(body)) == body
        io.StringIO(json.dumps(body))


def test_filter_by_alias_and_canonical_label(client: TestClient) -> None:
    tasks = get(client, "/tasks?limit=50")["items"]
    with_alias = next((e for e in (get(client, t["href"]) for t in tasks) if e["aliases"]), None)
    if with_alias is None:
        pytest.skip("no task of the sample has an alias")
    for name in (with_alias["aliases"][0], with_alias["label"].upper()):
        page = get(client, "/papers", params={"task": name, "exact": "true"})
        assert page["filters"]["task"] == with_alias["iri"], name
        assert page["total"] == with_alias["paper_count"]


def test_entity_by_iri(client: TestClient) -> None:
    task = top_entity(client, "task")
    response = client.get("/entities", params={"iri": task["iri"]}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == task["href"]
    assert_problem(client.get("/entities", params={"iri": "https://example.org/x"}), 404)
    assert_problem(client.get("/entities"), 422)


def test_extract_output_carries_the_baseline_the_store_records(
    client: TestClient,
    extractor,  # noqa: ANN001
) -> None:
    # REST shows each claim's baseline (kg:comparedTo); `kg extract` output must too.
    from kg.reading.readers import read_paths, unique
    from kg.resources import sample_corpus

    stored = {
        (c["paper"]["id"], c["text"]): c["baseline"]
        for offset in range(0, 1000, 200)
        for c in get(client, f"/claims?limit=200&offset={offset}")["items"]
    }
    assert any(stored.values()), "the sample has claims with a baseline"
    records = [r for r in unique(read_paths(sample_corpus())) if hasattr(r, "abstract")]
    extracted = {
        (paper.record.id, claim["text"]): claim["baseline"]
        for paper in extractor.extract(records)
        for claim in paper.to_json()["claims"]
    }
    assert extracted == stored
