"""The SPARQL 1.1 endpoint through real clients (SPARQLWrapper, rdflib's
SPARQLStore, httpx) against a real ``kg serve`` on a copy of the sample store."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyoxigraph import QueryResultsFormat, RdfFormat, parse, parse_query_results
from rdflib import Graph, URIRef
from rdflib.plugins.stores.sparqlstore import SPARQLStore
from SPARQLWrapper import JSON, POST, TURTLE, XML, SPARQLWrapper

from kg.store.queries import default_registry
from tests.helpers import running_server

KG = "https://w3id.org/mlkg/ontology#"
DCT = "http://purl.org/dc/terms/"
PAPERS = f"SELECT ?paper ?id WHERE {{ ?paper a <{KG}Paper> ; <{DCT}identifier> ?id }}"
ASK_PAPER = f"ASK {{ ?paper a <{KG}Paper> }}"
CONSTRUCT_TITLES = (
    "CONSTRUCT { ?p <http://purl.org/dc/terms/identifier> ?t } "
    "WHERE { ?p <http://purl.org/dc/terms/identifier> ?t } LIMIT 5"
)


@pytest.fixture(scope="module")
def base(sample_store: Path) -> Iterator[str]:
    """A read-only server on the sample store (no token: the store is never written)."""
    with running_server(sample_store) as url:
        yield url


def test_sparqlwrapper_select_json_and_xml(base: str) -> None:
    for fmt in (JSON, XML):
        client = SPARQLWrapper(base + "/sparql")
        client.setQuery(PAPERS)
        client.setReturnFormat(fmt)
        result = client.query()
        converted = result.convert()
        if fmt == JSON:
            rows = converted["results"]["bindings"]
        else:
            rows = converted.getElementsByTagName("result")
        assert len(rows) == 37


def test_sparqlwrapper_post_ask_and_construct(base: str) -> None:
    client = SPARQLWrapper(base + "/sparql")
    client.setMethod(POST)
    client.setQuery(ASK_PAPER)
    client.setReturnFormat(JSON)
    assert client.query().convert()["boolean"] is True
    client.setQuery(CONSTRUCT_TITLES)
    client.setReturnFormat(TURTLE)
    graph = Graph().parse(data=client.query().convert(), format="turtle")
    assert len(graph) == 5


def test_rdflib_sparqlstore(base: str) -> None:
    graph = Graph(store=SPARQLStore(base + "/sparql"))
    rows = list(graph.query(PAPERS))
    assert len(rows) == 37
    assert all(isinstance(row.paper, URIRef) for row in rows)
    assert graph.query(ASK_PAPER).askAnswer is True
    titles = graph.query(CONSTRUCT_TITLES)
    assert len(titles.graph) == 5


def test_default_graph_is_union_unless_request_names_graphs(base: str) -> None:
    """The default graph is the union of all graphs; default-graph-uri restricts it."""
    count = f"PREFIX kg: <{KG}> SELECT (COUNT(*) AS ?n) WHERE {{ ?p a kg:Paper }}"
    union = _n(httpx.get(base + "/sparql", params={"query": count}))
    assert union == 37
    one_paper = _first_paper_graph(base)
    only = _n(httpx.get(base + "/sparql", params={"query": count, "default-graph-uri": one_paper}))
    assert only == 1
    named = httpx.post(
        base + "/sparql",
        data={
            "query": "SELECT (COUNT(DISTINCT ?g) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }",
            "named-graph-uri": one_paper,
        },
    )
    assert _n(named) == 1


CONNEG = [
    # (query, Accept, expected Content-Type or 406)
    (PAPERS, None, "application/sparql-results+json"),
    (PAPERS, "*/*", "application/sparql-results+json"),
    (PAPERS, "application/sparql-results+json", "application/sparql-results+json"),
    (PAPERS, "application/sparql-results+xml", "application/sparql-results+xml"),
    (PAPERS, "text/csv", "text/csv"),
    (PAPERS, "text/tab-separated-values", "text/tab-separated-values"),
    (PAPERS, "application/json", "application/sparql-results+json"),
    (
        PAPERS,
        "application/sparql-results+json;q=0.5, application/sparql-results+xml",
        "application/sparql-results+xml",
    ),
    (PAPERS, "text/csv;q=0.9, text/tab-separated-values;q=0.1", "text/csv"),
    (PAPERS, "text/*", "text/csv"),
    (PAPERS, "image/png", 406),
    (PAPERS, "text/turtle", 406),
    (ASK_PAPER, None, "application/sparql-results+json"),
    (ASK_PAPER, "application/sparql-results+xml", "application/sparql-results+xml"),
    (ASK_PAPER, "text/csv", 406),
    (CONSTRUCT_TITLES, None, "text/turtle"),
    (CONSTRUCT_TITLES, "application/n-triples", "application/n-triples"),
    (CONSTRUCT_TITLES, "application/rdf+xml", "application/rdf+xml"),
    (CONSTRUCT_TITLES, "application/ld+json", "application/ld+json"),
    (CONSTRUCT_TITLES, "application/n-quads", "application/n-quads"),
    (CONSTRUCT_TITLES, "application/trig", "application/trig"),
    (CONSTRUCT_TITLES, "application/rdf+xml;q=0.2, text/turtle;q=0.8", "text/turtle"),
    (CONSTRUCT_TITLES, "application/sparql-results+json", 406),
]


@pytest.mark.parametrize(("query", "accept", "expected"), CONNEG)
def test_content_negotiation(
    base: str, query: str, accept: str | None, expected: str | int
) -> None:
    headers = {"Accept": accept} if accept else {}
    response = httpx.get(base + "/sparql", params={"query": query}, headers=headers)
    if isinstance(expected, int):
        assert response.status_code == expected
        assert response.headers["content-type"] == "application/problem+json"
        return
    assert response.status_code == 200, response.text
    media = response.headers["content-type"].split(";")[0]
    assert media == expected
    _parses(response.content, media)


@pytest.mark.parametrize(
    ("fmt", "query", "expected"),
    [
        ("csv", PAPERS, "text/csv"),
        ("xml", PAPERS, "application/sparql-results+xml"),
        ("json", CONSTRUCT_TITLES, "application/ld+json"),
        ("ntriples", CONSTRUCT_TITLES, "application/n-triples"),
        ("text/turtle", CONSTRUCT_TITLES, "text/turtle"),
    ],
)
def test_format_parameter_overrides_accept(base: str, fmt: str, query: str, expected: str) -> None:
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    response = httpx.get(
        base + "/sparql", params={"query": query, "format": fmt}, headers={"Accept": browser}
    )
    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] == expected


def test_unknown_format_parameter_is_400(base: str) -> None:
    response = httpx.get(base + "/sparql", params={"query": PAPERS, "format": "png"})
    assert response.status_code == 400
    assert response.json()["parameter"] == "format"


def test_service_description_and_editor(base: str) -> None:
    sd = httpx.get(base + "/sparql", headers={"Accept": "text/turtle"})
    assert sd.status_code == 200
    # SERVICE is refused by default: no federation is advertised, and the comment says so.
    assert "BasicFederatedQuery" not in sd.text and "SERVICE and LOAD are refused" in sd.text
    assert sd.headers["content-type"].startswith("text/turtle")
    triples = list(parse(sd.content, RdfFormat.TURTLE))
    assert any(t.object.value.endswith("#SPARQL11Query") for t in triples)
    page = httpx.get(base + "/sparql", headers={"Accept": "text/html,*/*;q=0.8"})
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "/static/sparql.js" in page.text
    # Every asset is served by us: no CDN.
    assert "https://" not in page.text.replace("https://w3id.org", "")
    for asset in ("/static/sparql.js", "/static/sparql.css"):
        assert httpx.get(base + asset).status_code == 200
    examples = httpx.get(base + "/sparql/examples").json()
    assert examples["prefixes"]["kg"] == KG
    names = {e["name"] for e in examples["examples"]}
    # Written for people (queries/examples/), not the REST API's parameterised queries.
    assert {"unlearning", "provenance", "leaderboard-rows"} <= names
    assert not names & {q.name for q in default_registry().public()}
    # Each example answers on the sample, with labels (literals), not only bare IRIs.
    for example in examples["examples"]:
        assert example["title"] and example["description"], example["name"]
        ran = httpx.post(
            base + "/sparql",
            content=example["query"],
            headers={
                "Content-Type": "application/sparql-query",
                "Accept": "application/sparql-results+json",
            },
        )
        assert ran.status_code == 200, (example["name"], ran.text)
        rows = ran.json()["results"]["bindings"]
        assert rows, f"example {example['name']} finds nothing in the sample"
        assert any(t["type"] == "literal" and not t["value"].isdigit() for t in rows[0].values()), (
            example["name"],
            rows[0],
        )


def _parses(body: bytes, media: str) -> None:
    results = QueryResultsFormat.from_media_type(media)
    if results is not None and results != QueryResultsFormat.CSV:
        parse_query_results(body, results)
    elif results is None:
        fmt = RdfFormat.from_media_type(media)
        assert fmt is not None
        assert list(parse(io.BytesIO(body), fmt))


def _n(response: httpx.Response) -> int:
    assert response.status_code == 200, response.text
    return int(response.json()["results"]["bindings"][0]["n"]["value"])


def _first_paper_graph(base: str) -> str:
    query = f"PREFIX kg: <{KG}> SELECT ?g {{ GRAPH ?g {{ ?p a kg:Paper }} }} ORDER BY ?g LIMIT 1"
    response = httpx.get(base + "/sparql", params={"query": query})
    return response.json()["results"]["bindings"][0]["g"]["value"]


def test_service_description_follows_the_allow_list(sample_store: Path) -> None:
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings

    allowed = "https://query.wikidata.org/sparql"
    settings = Settings(
        store=str(sample_store), query_workers=1, log_level="warning", service_allowlist=(allowed,)
    )
    with TestClient(create_app(settings)) as client:
        sd = client.get("/sparql", headers={"Accept": "text/turtle"})
    assert sd.status_code == 200
    assert "BasicFederatedQuery" in sd.text and allowed in sd.text
