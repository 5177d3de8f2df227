"""Graph exports: each format parsed back by an independent reader, counts checked
against SPARQL counts on the same store; the REST ``GET /graph`` and ``kg graph``
on top of the one exporter registry.

The sample store is the real 37-paper sample ingested by the real pipeline.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import networkx as nx
import pytest
from click.testing import CliRunner
from pyoxigraph import Literal, NamedNode

from kg.cli.main import main as cli
from kg.read.exporters import EXPORTERS, UnknownFormat, dot_quote, exporter, media_types, write_dot
from kg.read.graphview import (
    FocusNotFound,
    GraphRequest,
    GraphViewError,
    build_graph,
    draw,
    node_details,
    parse_types,
    run,
    search,
)
from kg.store.embedded import GraphStore, open_store
from tests.helpers import running_server

NODE_TYPES = {"Paper", "Task", "Method", "Dataset", "Metric"}


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def store(sample_store: Path) -> Iterator[GraphStore]:
    graph = open_store(sample_store, read_only=True)
    yield graph
    graph.close()


@pytest.fixture(scope="module")
def sparql_counts(store: GraphStore) -> dict[str, dict[str, int]]:
    """Node and edge counts of both projections, counted by SPARQL alone."""
    (bip,) = run(store, "count-bipartite")
    (co,) = run(store, "count-cooccurrence")
    return {
        "bipartite": {
            "nodes": int(bip["papers"]) + int(bip["entities"]),
            "edges": int(bip["edges"]),
        },
        "entity": {"nodes": int(co["entities"]), "edges": int(co["edges"])},
    }


@pytest.fixture(scope="module")
def unlearning(store: GraphStore) -> dict[str, object]:
    """The "unlearning" entity and its papers, found by SPARQL."""
    hits = [r for r in search(store, "unlearning") if r["type"] != "Paper"]
    assert hits, "no entity labelled 'unlearning' in the sample graph"
    iri = hits[0]["iri"]
    papers = {r["paper"] for r in run(store, "entity-papers", node=NamedNode(iri))}
    return {"iri": iri, "papers": papers}


def _dot_json(data: bytes) -> dict:
    dot = shutil.which("dot")
    if dot is None:
        pytest.skip("Graphviz 'dot' is not installed (Debian package graphviz)")
    done = subprocess.run([dot, "-Tjson0"], input=data, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


# Each reader is independent of our writer: networkx's readers, json, zipfile+csv, Graphviz.
def read_back(name: str, data: bytes) -> tuple[dict[str, dict], list[tuple[str, str, dict]]]:
    """Nodes (id → attributes) and edges (source, target, attributes) of an export."""
    if name == "graphml":
        g = nx.read_graphml(io.BytesIO(data))
        return dict(g.nodes(data=True)), list(g.edges(data=True))
    if name == "gexf":
        g = nx.read_gexf(io.BytesIO(data))
        return dict(g.nodes(data=True)), list(g.edges(data=True))
    if name == "cytoscape":
        doc = json.loads(data)
        assert isinstance(doc["data"], dict)  # Cytoscape desktop wants an object here
        g = nx.cytoscape_graph(doc)
        assert all(attrs["id"] == node for node, attrs in g.nodes(data=True))
        return dict(g.nodes(data=True)), list(g.edges(data=True))
    if name == "d3":
        doc = json.loads(data)
        nodes = {n["id"]: n for n in doc["nodes"]}
        return nodes, [(e["source"], e["target"], e) for e in doc["links"]]
    if name == "csv":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            assert sorted(archive.namelist()) == ["edges.csv", "nodes.csv"]
            node_rows = list(csv.DictReader(io.StringIO(archive.read("nodes.csv").decode())))
            edge_rows = list(csv.DictReader(io.StringIO(archive.read("edges.csv").decode())))
        nodes = {r["Id"]: {**r, "label": r["Label"]} for r in node_rows}
        return nodes, [(r["Source"], r["Target"], {**r, "weight": r["Weight"]}) for r in edge_rows]
    if name == "dot":
        doc = _dot_json(data)
        objects = doc.get("objects", [])
        nodes = {o["iri"]: o for o in objects}
        by_gvid = {o["_gvid"]: o["iri"] for o in objects}
        edges = [(by_gvid[e["tail"]], by_gvid[e["head"]], e) for e in doc.get("edges", [])]
        return nodes, edges
    raise AssertionError(name)


# ------------------------------------------------------------------ every format


@pytest.mark.parametrize("projection", ["bipartite", "entity"])
@pytest.mark.parametrize("name", list(EXPORTERS))
def test_export_parses_back_with_sparql_counts(
    store: GraphStore, sparql_counts: dict, name: str, projection: str
) -> None:
    graph = build_graph(store, GraphRequest(projection=projection))  # type: ignore[arg-type]
    nodes, edges = read_back(name, EXPORTERS[name].write(graph))
    expected = sparql_counts[projection]
    assert expected["nodes"] > 0 and expected["edges"] > 0
    assert len(nodes) == expected["nodes"]
    assert len(edges) == expected["edges"]
    # Node ids are the IRIs; labels, types and paper counts travel with them.
    assert set(nodes) == set(graph.nodes)
    for iri, attrs in nodes.items():
        assert iri.startswith("https://w3id.org/mlkg/id/")
        assert attrs["type"] in NODE_TYPES
        assert attrs["label"] and "$" not in attrs["label"] and "\\" not in attrs["label"]
        assert int(attrs["paper_count"]) >= 1
    for source, target, attrs in edges:
        assert (source, target) in graph.edges
        assert attrs["predicate"]
        assert int(attrs["weight"]) >= 1
        assert attrs["papers"]


@pytest.mark.parametrize(
    "request_",
    [
        GraphRequest(),
        GraphRequest(projection="entity", min_support=2),
        GraphRequest(limit=40),
        GraphRequest(focus="task/unlearning", depth=2),
    ],
    ids=["bipartite", "entity", "limited", "focus"],
)
@pytest.mark.parametrize("name", list(EXPORTERS))
def test_a_drawing_exports_as_its_networkx_graph(
    store: GraphStore, name: str, request_: GraphRequest
) -> None:
    """The same bytes whether a format is written from the plain drawing (the
    service's way; d3 without networkx) or from its networkx graph."""
    drawing = draw(store, request_)
    graph = drawing.to_networkx()
    assert graph.number_of_nodes() == len(drawing.nodes) > 0
    assert graph.number_of_edges() == len(drawing.edges) > 0
    written = EXPORTERS[name].write(drawing)
    if name == "csv":  # a zip records when it was written: compare what it holds
        assert read_back(name, written) == read_back(name, EXPORTERS[name].write(graph))
    else:
        assert written == EXPORTERS[name].write(graph)
    assert nx.utils.graphs_equal(graph, build_graph(store, request_))


def test_edge_weights_are_papers_behind_them(store: GraphStore) -> None:
    graph = build_graph(store, GraphRequest(projection="entity"))
    for _a, _b, attrs in graph.edges(data=True):
        assert attrs["weight"] == len(attrs["papers"]) >= 1
    # Method → task edges are named "usedFor"; every edge has a direction by type.
    kinds = {attrs["predicate"] for *_e, attrs in graph.edges(data=True)}
    assert kinds <= {"usedFor", "evaluatedOn", "measuredBy", "benchmarkedOn", "coOccursWith"}
    bipartite = build_graph(store)
    for paper, entity, attrs in bipartite.edges(data=True):
        assert bipartite.nodes[paper]["type"] == "Paper"
        assert bipartite.nodes[entity]["type"] != "Paper"
        assert attrs["papers"] == [paper]
        assert attrs["predicate"].startswith("https://w3id.org/mlkg/ontology#")


def test_lists_become_space_separated_in_scalar_formats(store: GraphStore) -> None:
    graph = build_graph(store, GraphRequest(projection="entity"))
    a, b, attrs = max(graph.edges(data=True), key=lambda e: e[2]["weight"])
    g = nx.read_graphml(io.BytesIO(EXPORTERS["graphml"].write(graph)))
    assert g.edges[a, b]["papers"].split() == attrs["papers"]
    doc = json.loads(EXPORTERS["d3"].write(graph))
    link = next(e for e in doc["links"] if e["source"] == a and e["target"] == b)
    assert link["papers"] == attrs["papers"]


# ------------------------------------------------------------------ what to draw


def test_neighbourhood_of_unlearning_matches_sparql(store: GraphStore, unlearning: dict) -> None:
    iri = unlearning["iri"]
    assert len(unlearning["papers"]) == 3
    graph = build_graph(store, GraphRequest(focus=iri, depth=2))
    rows = run(store, "neighbourhood", focus=NamedNode(iri))
    expected_nodes = {iri} | {r["paper"] for r in rows} | {r["entity"] for r in rows}
    assert set(graph.nodes) == expected_nodes
    assert graph.number_of_edges() == len({(r["paper"], r["entity"]) for r in rows})
    assert unlearning["papers"] <= set(graph.nodes)
    assert graph.graph["focus"] == iri and graph.graph["truncated"] is False
    # depth 1 around the entity: the entity and its three papers.
    near = build_graph(store, GraphRequest(focus=iri, depth=1))
    assert set(near.nodes) == {iri} | unlearning["papers"]


def test_focus_by_key_and_by_paper_id(store: GraphStore, unlearning: dict) -> None:
    iri = str(unlearning["iri"])
    key = iri.rsplit("/", 2)
    by_path = build_graph(store, GraphRequest(focus=f"{key[-2]}/{key[-1]}"))
    by_key = build_graph(store, GraphRequest(focus=key[-1]))
    assert by_path.graph["focus"] == by_key.graph["focus"] == iri
    paper = sorted(unlearning["papers"])[0]
    around_paper = build_graph(store, GraphRequest(focus=paper.rsplit("/", 1)[-1]))
    assert around_paper.graph["focus"] == paper
    assert iri in around_paper
    # In the entity projection a paper is not a node: its entities are the first hop.
    entities = build_graph(store, GraphRequest(focus=paper, projection="entity"))
    assert paper not in entities and iri in entities
    assert all(t != "Paper" for _n, t in entities.nodes(data="type"))


def test_types_filter(store: GraphStore) -> None:
    graph = build_graph(store, GraphRequest(types=parse_types("task,Paper")))
    assert {t for _n, t in graph.nodes(data="type")} == {"Task", "Paper"}
    entity_only = build_graph(
        store, GraphRequest(types=parse_types("Method,Task"), projection="entity")
    )
    assert {t for _n, t in entity_only.nodes(data="type")} <= {"Method", "Task"}
    for a, b, pred in entity_only.edges(data="predicate"):
        types = {entity_only.nodes[a]["type"], entity_only.nodes[b]["type"]}
        assert pred == ("usedFor" if types == {"Method", "Task"} else "coOccursWith")


def test_min_support(store: GraphStore) -> None:
    graph = build_graph(store, GraphRequest(projection="entity", min_support=2))
    assert graph.number_of_edges() > 0
    assert all(w >= 2 for *_e, w in graph.edges(data="weight"))
    assert all(graph.degree(n) > 0 for n in graph)
    bipartite = build_graph(store, GraphRequest(min_support=2))
    assert all(
        attrs["paper_count"] >= 2
        for _n, attrs in bipartite.nodes(data=True)
        if attrs["type"] != "Paper"
    )


def test_limit_keeps_most_supported_and_says_it_cut(store: GraphStore) -> None:
    full = build_graph(store, GraphRequest(projection="entity"))
    cut = build_graph(store, GraphRequest(projection="entity", limit=5))
    assert cut.number_of_nodes() == 5
    assert cut.graph["truncated"] is True
    assert cut.graph["total_nodes"] == full.number_of_nodes()
    counts = sorted((a["paper_count"] for _n, a in full.nodes(data=True)), reverse=True)
    assert sorted((a["paper_count"] for _n, a in cut.nodes(data=True)), reverse=True) == counts[:5]
    whole = build_graph(store, GraphRequest(limit=10_000))
    assert whole.graph["truncated"] is False


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"depth": 0}, "depth"),
        ({"depth": 4}, "depth"),
        ({"types": frozenset({"Author"})}, "types"),
        ({"types": frozenset()}, "types"),
        ({"min_support": 0}, "min_support"),
        ({"limit": 0}, "limit"),
        ({"projection": "tripartite"}, "projection"),
    ],
)
def test_bad_requests_name_their_parameter(kwargs: dict, param: str) -> None:
    with pytest.raises(GraphViewError) as info:
        GraphRequest(**kwargs)
    assert info.value.param == param


def test_unknown_focus(store: GraphStore) -> None:
    with pytest.raises(FocusNotFound):
        build_graph(store, GraphRequest(focus="no-such-thing-anywhere"))
    with pytest.raises(FocusNotFound):
        node_details(store, "https://example.org/not/ours")


def test_node_details_for_panel(store: GraphStore, unlearning: dict) -> None:
    details = node_details(store, str(unlearning["iri"]))
    assert details["label"].lower() == "unlearning"
    assert {p["iri"] for p in details["papers"]} == unlearning["papers"]
    assert all(p["snippet"] for p in details["papers"])
    paper = node_details(store, sorted(unlearning["papers"])[0])
    assert paper["type"] == "Paper" and paper["abstract"]
    assert unlearning["iri"] in {e["iri"] for e in paper["entities"]}
    for claim in paper["claims"]:
        assert claim["claim"] and "$" not in claim["claim"]


def test_search_puts_entities_first(store: GraphStore) -> None:
    hits = search(store, "UNLEARNING")
    assert hits[0]["type"] != "Paper"
    assert {h["type"] for h in hits} >= {"Paper"}
    assert search(store, "   ") == []
    # Hostile text is a literal bound by substitution: no match, no error.
    assert search(store, '") } DROP ALL #') == []


def test_search_query_binds_its_text_as_a_literal(store: GraphStore) -> None:
    rows = run(store, "search", q=Literal("contrastive"))
    assert rows and all("contrastive" in r["match"].lower() for r in rows)


# ------------------------------------------------------------------ DOT quoting


@pytest.mark.parametrize("focus", [None, "unlearning"])
def test_dot_renders_a_readable_picture(store: GraphStore, unlearning: dict, focus) -> None:  # noqa: ANN001
    """`dot -Tpng file.dot` used to draw a strip (375:1 for the whole sample)."""
    request = GraphRequest(focus=unlearning["iri"], depth=2) if focus else GraphRequest()
    # The `dot` command, no -K: the file itself must choose the layout.
    drawn = _dot_json(write_dot(build_graph(store, request)))
    x0, y0, x1, y1 = (float(v) for v in drawn["bb"].split(","))
    width, height = x1 - x0, y1 - y0
    assert max(width, height) / min(width, height) <= 4, (width, height)


def test_dot_quotes_hostile_labels() -> None:
    graph = nx.DiGraph()
    nasty = 'a "quoted" \\ back\\slash\nnew line; {braces} -> arrow'
    graph.add_node("https://w3id.org/mlkg/id/task/a%22b", label=nasty, type="Task", paper_count=2)
    graph.add_node("https://w3id.org/mlkg/id/paper/x:y", label="p", type="Paper", paper_count=1)
    graph.add_edge(
        "https://w3id.org/mlkg/id/paper/x:y",
        "https://w3id.org/mlkg/id/task/a%22b",
        predicate="p",
        weight=1,
        papers=["https://w3id.org/mlkg/id/paper/x:y"],
    )
    doc = _dot_json(write_dot(graph))
    assert len(doc["objects"]) == 2 and len(doc["edges"]) == 1
    label = next(o["label"] for o in doc["objects"] if o["type"] == "Task")
    # Graphviz keeps escString escapes in the attribute; undo ours to compare.
    assert label.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\") == nasty
    assert dot_quote('x"y') == '"x\\"y"'


def test_json_exports_are_the_bytes_the_standard_library_writes(store: GraphStore) -> None:
    """The JSON exporters write with orjson (an eighth of the time); a client must
    get what ``json.dumps`` gave before, hostile labels included."""
    graph = build_graph(store, GraphRequest())
    graph.add_node(
        "https://w3id.org/mlkg/id/task/x",
        label='é "q" \\ \x01\u2028 </script> 😀',
        type="Task",
        paper_count=3,
    )
    for name in ("d3", "cytoscape"):
        body = exporter(name).write(graph)
        again = json.dumps(json.loads(body), ensure_ascii=False, separators=(",", ":"))
        assert body == again.encode("utf-8"), name


# ------------------------------------------------------------------ registry


def test_registry_names_and_media_types() -> None:
    names = [e.name for e in EXPORTERS.values()]
    assert names == ["graphml", "gexf", "cytoscape", "d3", "dot", "csv"]
    assert len({e.media_type for e in EXPORTERS.values()}) == len(names)
    assert exporter("application/json").name == "d3"
    assert exporter("GEXF").name == "gexf"
    assert exporter("text/vnd.graphviz").name == "dot"
    assert set(media_types()) >= {e.media_type for e in EXPORTERS.values()}
    with pytest.raises(UnknownFormat):
        exporter("svg")


# ------------------------------------------------------------------ CLI


def test_cli_graph_writes_each_format(
    sample_store: Path, tmp_path: Path, sparql_counts: dict
) -> None:
    runner = CliRunner()
    for name in ("gexf", "d3"):
        out = tmp_path / f"g.{name}"
        result = runner.invoke(
            cli, ["graph", "--store", str(sample_store), "--format", name, "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
        nodes, edges = read_back(name, out.read_bytes())
        assert len(nodes) == sparql_counts["bipartite"]["nodes"]
        assert len(edges) == sparql_counts["bipartite"]["edges"]
    cut = runner.invoke(
        cli,
        [
            "graph",
            "--store",
            str(sample_store),
            "--format",
            "d3",
            "--projection",
            "entity",
            "--limit",
            "3",
        ],
    )
    assert cut.exit_code == 0
    assert len(json.loads(cut.stdout)["nodes"]) == 3
    assert "cut from" in cut.stderr
    bad = runner.invoke(
        cli, ["graph", "--store", str(sample_store), "--depth", "7", "--focus", "x"]
    )
    assert bad.exit_code == 2 and "--depth" in bad.stderr and "Traceback" not in bad.output


# ------------------------------------------------------------------ REST


@pytest.fixture(scope="module")
def server(sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    copy = tmp_path_factory.mktemp("graph-rest") / "store"
    shutil.copytree(sample_store, copy)
    with running_server(copy) as base:
        yield base


@pytest.mark.parametrize("name", list(EXPORTERS))
def test_rest_graph_by_format_and_by_accept(server: str, sparql_counts: dict, name: str) -> None:
    expected = sparql_counts["bipartite"]
    exp = EXPORTERS[name]
    by_param = httpx.get(f"{server}/graph", params={"format": name}, timeout=30)
    by_accept = httpx.get(f"{server}/graph", headers={"Accept": exp.media_type}, timeout=30)
    for response in (by_param, by_accept):
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].split(";")[0] == exp.media_type
        assert response.headers["x-graph-truncated"] == "false"
        nodes, edges = read_back(name, response.content)
        assert len(nodes) == expected["nodes"]
        assert len(edges) == expected["edges"]


def test_rest_graph_neighbourhood_limit_and_download(server: str, unlearning: dict) -> None:
    r = httpx.get(
        f"{server}/graph",
        params={"format": "cytoscape", "focus": unlearning["iri"], "depth": 2},
        timeout=30,
    )
    assert r.status_code == 200
    ids = {n["data"]["id"] for n in r.json()["elements"]["nodes"]}
    assert unlearning["papers"] <= ids
    r = httpx.get(
        f"{server}/graph", params={"format": "d3", "limit": 4, "download": "true"}, timeout=30
    )
    assert r.status_code == 200
    assert r.headers["x-graph-truncated"] == "true"
    assert int(r.headers["x-graph-total-nodes"]) > 4
    assert len(r.json()["nodes"]) == 4 and r.json()["graph"]["truncated"] is True
    assert r.headers["content-disposition"].startswith("attachment;")


@pytest.mark.parametrize(
    ("params", "headers", "status", "parameter"),
    [
        ({"format": "svg"}, {}, 422, "format"),
        ({"depth": "9"}, {}, 422, "depth"),
        ({"depth": "x"}, {}, 422, "depth"),
        ({"types": "Author"}, {}, 422, "types"),
        ({"min_support": "0"}, {}, 422, "min_support"),
        ({"limit": "-1"}, {}, 422, "limit"),
        ({"projection": "nope"}, {}, 422, "projection"),
        ({"focus": "no-such-node"}, {}, 404, "focus"),
        ({}, {"Accept": "image/png"}, 406, None),
    ],
)
def test_rest_graph_errors_are_problems(
    server: str, params: dict, headers: dict, status: int, parameter: str | None
) -> None:
    r = httpx.get(f"{server}/graph", params=params, headers=headers, timeout=30)
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["status"] == status
    if parameter:
        assert parameter in json.dumps(body)


def test_rest_search_node_formats_and_page(server: str, unlearning: dict) -> None:
    hits = httpx.get(f"{server}/graph/search", params={"q": "unlearning"}, timeout=30).json()
    assert hits["results"][0]["iri"] == unlearning["iri"]
    node = httpx.get(f"{server}/graph/node", params={"id": unlearning["iri"]}, timeout=30)
    assert node.status_code == 200 and len(node.json()["papers"]) == 3
    for hostile in ("nope", "a b", "<x>", "http:// x", 'task/un"learning', "\x00", "{}"):
        for path, param in (("/graph/node", "id"), ("/graph", "focus")):
            r = httpx.get(f"{server}{path}", params={param: hostile}, timeout=30)
            assert r.status_code == 404, (path, hostile, r.text)
            assert r.json()["status"] == 404
    formats = httpx.get(f"{server}/graph/formats", timeout=30).json()
    assert [f["name"] for f in formats] == list(EXPORTERS)
    text = httpx.get(f"{server}/graph/queries/neighbourhood", timeout=30)
    assert text.status_code == 200 and "?focus" in text.text
    assert httpx.get(f"{server}/graph/queries/../../etc", timeout=30).status_code == 404
    page = httpx.get(f"{server}/", timeout=30)
    assert page.status_code == 200 and "cytoscape.min.js" in page.text
    for asset in (
        "vendor/cytoscape.min.js",
        "vendor/cytoscape-fcose.js",
        "explorer/explorer.js",
        "explorer/explorer.css",
    ):
        assert httpx.get(f"{server}/static/{asset}", timeout=30).status_code == 200, asset


def test_rest_graph_sees_writes(sample_store: Path, tmp_path: Path) -> None:
    """The graph data is cached between requests, but never across a write."""
    copy = tmp_path / "store"
    shutil.copytree(sample_store, copy)
    token = "graph-test-token"
    with running_server(copy, env={"KG_UPDATE_TOKEN": token}) as base:

        def papers() -> int:
            r = httpx.get(f"{base}/graph", params={"format": "d3", "types": "Paper"}, timeout=60)
            assert r.status_code == 200, r.text
            return len(r.json()["nodes"])

        before = papers()
        assert papers() == before  # served from the cache
        record = {
            "id": "graph-cache-test",
            "title": "Gradient surgery for machine unlearning",
            "abstract": "We propose gradient surgery, a method for machine unlearning in large "
            "language models, and evaluate it on the TOFU benchmark, where it "
            "improves forget quality by 12% over gradient ascent.",
        }
        r = httpx.post(
            f"{base}/papers", json=record, timeout=300, headers={"Authorization": f"Bearer {token}"}
        )
        assert r.status_code == 201, r.text
        assert papers() == before + 1
        found = httpx.get(
            f"{base}/graph", params={"format": "d3", "focus": "graph-cache-test"}, timeout=60
        ).json()
        assert {n["label"] for n in found["nodes"]} >= {"Gradient surgery for machine unlearning"}
