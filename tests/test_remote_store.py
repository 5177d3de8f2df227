"""The remote store against a REAL ``oxigraph serve`` process on a free loopback
port: ingest, the same graph and the same query answers as the embedded store,
and ``kg serve --store http://…`` serving /sparql and the REST API from it."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyoxigraph import Literal, QueryBoolean, QuerySolutions, RdfFormat, Triple

from kg.resources import queries_dir
from kg.store.embedded import EmbeddedStore, StoreError, open_store
from tests.helpers import REPO, free_port, running_server
from tests.helpers import stop_process as stop

OXIGRAPH = shutil.which("oxigraph") or str(Path(sys.executable).with_name("oxigraph"))
pytestmark = pytest.mark.skipif(
    not Path(OXIGRAPH).exists(), reason="the `oxigraph` server (PyPI package oxigraph) is missing"
)


def start_oxigraph(location: Path, *, union: bool = True) -> tuple[subprocess.Popen, str]:
    """Start ``oxigraph serve`` on a free loopback port; return it and its base URL."""
    port = free_port()
    args = [OXIGRAPH, "serve", "--location", str(location), "--bind", f"127.0.0.1:{port}"]
    if union:
        args.append("--union-default-graph")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"oxigraph serve exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(base + "/query", params={"query": "ASK {}"}, timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("oxigraph serve did not start in 30 s")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def oxigraph_url(tmp_path_factory: pytest.TempPathFactory, extractor) -> Iterator[str]:  # noqa: ANN001
    """A real oxigraph server holding the sample, ingested through RemoteStore."""
    from kg.ingest import ingest
    from kg.resources import sample_corpus

    proc, base = start_oxigraph(tmp_path_factory.mktemp("oxigraph") / "data")
    try:
        store = open_store(base)
        report = ingest(sample_corpus(), store, extractor=extractor)
        store.close()
        assert report.added == 37, report.to_json()
        yield base
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def embedded(sample_store: Path) -> Iterator[EmbeddedStore]:
    store = EmbeddedStore(sample_store, read_only=True)
    yield store
    store.close()


@pytest.fixture
def remote(oxigraph_url: str) -> Iterator:
    store = open_store(oxigraph_url)
    yield store
    store.close()


def nquads(store) -> set[bytes]:  # noqa: ANN001
    out = io.BytesIO()
    store.dump(out, RdfFormat.N_QUADS)
    return set(out.getvalue().splitlines())


def canonical(result) -> object:  # noqa: ANN001
    """A comparable form of a query result (row order ignored)."""
    if isinstance(result, QueryBoolean):
        return bool(result)
    if isinstance(result, QuerySolutions):
        names = [v.value for v in result.variables]
        return names, sorted(
            tuple(str(s[n]) if s[n] is not None else "" for n in names) for s in result
        )
    return sorted(str(t) for t in result)


def test_same_graph_as_embedded(remote, embedded) -> None:  # noqa: ANN001
    assert len(remote) == len(embedded)
    assert nquads(remote) == nquads(embedded)
    assert sorted(remote.paper_ids()) == sorted(embedded.paper_ids())


def test_reingest_is_unchanged(remote, extractor) -> None:  # noqa: ANN001
    from kg.ingest import ingest
    from kg.resources import sample_corpus

    before = len(remote)
    report = ingest(sample_corpus(), remote, extractor=extractor)
    assert report.unchanged == 37 and report.added == report.updated == 0
    assert len(remote) == before


KG_TASK = "https://w3id.org/mlkg/ontology#Task"


def _sample_values(embedded: EmbeddedStore) -> dict[str, object]:
    """Real values from the sample for every parameter name the named queries use."""
    from kg.store.queries import rows, run

    paper = rows(run(embedded, "papers"))[0]["paper"]
    # The task named by the most papers (entities-by-type orders by paper count).
    task = rows(run(embedded, "entities-by-type", {"type": KG_TASK}))[0]["entity"].value
    label = embedded.preferred_labels([task])[task]
    return {
        "entity": task,
        "node": task,
        "focus": task,
        "subject": "urn:mlkg:any",
        "paper": paper.value,
        "graph": paper.value.replace("/id/paper/", "/graph/paper/"),
        "type": KG_TASK,
        "label": label,
        "text": "learning",
        "q": "learning",
        "prefix": "",
    }


def test_every_named_query_answers_the_same(remote, embedded) -> None:  # noqa: ANN001
    """Substitutions (VALUES on the remote side) give the embedded store's answers."""
    from kg.store.queries import default_registry

    registry = default_registry()
    values = _sample_values(embedded)
    compared = 0
    by_type = {
        "iri": values["entity"],
        "string": "learning",
        "int": "1",
        "float": "0.5",
        "bool": "true",
    }
    for query in registry.all():
        # Real sample values where the name is known; any value of the right type
        # for a required parameter that is not (the answers may then be empty,
        # and must be empty on both stores).
        params = {
            p.name: values.get(p.name, by_type[p.type])
            for p in query.params
            if p.name in values or p.required
        }
        subs = registry.bind(query.name, params)
        local = canonical(embedded.query(query.sparql, substitutions=subs))
        there = canonical(remote.query(query.sparql, substitutions=subs))
        assert there == local, query.name
        compared += 1
    assert compared >= 30


def test_substituted_text_cannot_escape(remote) -> None:  # noqa: ANN001
    from kg.store.queries import rows, run

    before = len(remote)
    hostile = 'x" } } DROP ALL ; SELECT * { ?s ?p ?o } #\n\'\'\' """'
    assert rows(run(remote, "papers-matching-text", {"text": hostile})) == []
    assert len(remote) == before


def test_construct_and_ask_types(remote, embedded) -> None:  # noqa: ANN001
    from kg.store.queries import run

    graph = _sample_values(embedded)["graph"]
    triples = list(run(remote, "describe-paper", {"graph": graph}))
    assert len(triples) > 10 and all(isinstance(t, Triple) for t in triples)
    marker = (queries_dir() / "store" / "ontology-marker.rq").read_text()
    assert isinstance(remote.query(marker, substitutions={"hash": Literal("no")}), QueryBoolean)
    assert bool(remote.query(marker, substitutions={"hash": Literal("no")})) is False


def test_bad_query_is_a_syntax_error(remote) -> None:  # noqa: ANN001
    with pytest.raises(SyntaxError):
        remote.query("SELEC nothing")


def test_write_and_delete_one_paper(remote, embedded, extractor) -> None:  # noqa: ANN001
    from kg.ingest import ingest_items
    from kg.model import Record

    record = Record(
        id="remote-test-1",
        title="A remote paper",
        abstract="We propose a graph neural network for link prediction on "
        "knowledge graphs and evaluate it on FB15k-237.",
    )
    report = ingest_items([record], remote, extractor=extractor)
    assert report.added == 1
    assert "remote-test-1" in set(remote.paper_ids())
    assert remote.delete_paper("remote-test-1") is True
    assert remote.delete_paper("remote-test-1") is False

    def papers_only(quads: set[bytes]) -> set[bytes]:
        return {q for q in quads if b"<https://w3id.org/mlkg/graph/entities>" not in q}

    assert papers_only(nquads(remote)) == papers_only(nquads(embedded))


def test_read_only_refuses_writes(oxigraph_url: str) -> None:
    store = open_store(oxigraph_url, read_only=True)
    with pytest.raises(StoreError, match="read-only"):
        store.update("CLEAR ALL")
    with pytest.raises(StoreError, match="read-only"):
        store.delete_paper("anything")
    store.close()


def test_server_down_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="cannot reach"):
        open_store(f"http://127.0.0.1:{free_port()}")


def test_default_graph_must_be_the_union(tmp_path: Path) -> None:
    proc, base = start_oxigraph(tmp_path / "plain", union=False)
    try:
        # Opening for writing loads the ontology graph, then finds it missing
        # from the default graph.
        with pytest.raises(StoreError, match="union-default-graph"):
            open_store(base)
        with pytest.raises(StoreError, match="union-default-graph"):
            open_store(base, read_only=True)
    finally:
        stop(proc)


def test_explicit_dataset_overrides_the_union(remote, embedded) -> None:  # noqa: ANN001
    counts = (queries_dir() / "class-counts.rq").read_text()
    ontology = ["https://w3id.org/mlkg/graph/ontology"]
    union = {s["class"].value: s["count"].value for s in remote.query(counts)}
    assert union["https://w3id.org/mlkg/ontology#Paper"] == "37"
    there = canonical(remote.query(counts, default_graph=ontology))
    assert there == canonical(embedded.query(counts, default_graph=ontology))
    assert there[1] == []  # no paper lives in the ontology graph


def test_cli_against_the_remote_store(oxigraph_url: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "kg", "stats", "--json", "--store", oxigraph_url],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert '"papers": 37' in out.stdout


def test_kg_serve_on_the_remote_store(oxigraph_url: str, embedded) -> None:  # noqa: ANN001
    with running_server(oxigraph_url) as base:
        from kg.store.queries import rows, run

        counts = (queries_dir() / "class-counts.rq").read_text()
        answer = httpx.get(
            base + "/sparql",
            params={"query": counts},
            headers={"Accept": "application/sparql-results+json"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        got = {
            b["class"]["value"].rsplit("#")[-1]: b["count"]["value"]
            for b in answer.json()["results"]["bindings"]
        }
        assert got["Paper"] == "37"
        task = _sample_values(embedded)["entity"]
        papers = httpx.get(
            base + "/papers", params={"task": task, "exact": "true", "limit": 100}, timeout=30
        )
        assert papers.status_code == 200, papers.text
        expected = rows(run(embedded, "papers-with-entity", {"entity": task}))
        assert {p["iri"] for p in papers.json()["items"]} == {r["paper"].value for r in expected}
        assert expected


def test_kg_serve_writes_through_to_the_remote_store(oxigraph_url: str) -> None:
    """POST /papers and DELETE /papers/{id} on ``kg serve --store http://…``: the
    paper lands on (and leaves) the oxigraph server."""
    token = "remote-test-token"
    record = {
        "id": "remote-rest-1",
        "title": "Remote write",
        "abstract": "We propose a contrastive learning method for image classification "
        "and evaluate it on CIFAR-10, improving accuracy by 2.1%.",
    }
    auth = {"Authorization": f"Bearer {token}"}
    with running_server(oxigraph_url, env={"KG_UPDATE_TOKEN": token}) as base:
        created = httpx.post(base + "/papers", json=record, headers=auth, timeout=120)
        assert created.status_code == 201, created.text
        seen = open_store(oxigraph_url, read_only=True)
        try:
            paper_id = created.json()["results"][0]["id"]
            assert paper_id in set(seen.paper_ids())
            detail = httpx.get(base + "/papers/remote-rest-1", timeout=30)
            assert detail.status_code == 200 and detail.json()["title"] == "Remote write"
            gone = httpx.delete(base + "/papers/remote-rest-1", headers=auth, timeout=30)
            assert gone.status_code in (200, 204), gone.text
            assert paper_id not in set(seen.paper_ids())
        finally:
            seen.close()


def test_dump_triple_format_is_the_union_graph(remote, embedded) -> None:  # noqa: ANN001
    def triples(store) -> set[bytes]:  # noqa: ANN001
        out = io.BytesIO()
        store.dump(out, RdfFormat.N_TRIPLES)
        return set(out.getvalue().splitlines())

    def papers_only(lines: set[bytes]) -> set[bytes]:
        return {t for t in lines if b"/id/paper/" in t.split(b" ", 1)[0]}

    assert papers_only(triples(remote)) == papers_only(triples(embedded))


def test_remote_store_going_down_is_a_503_problem(tmp_path: Path, extractor) -> None:  # noqa: ANN001
    from kg.ingest import ingest
    from kg.resources import sample_corpus

    proc, base = start_oxigraph(tmp_path / "data")
    try:
        ingest(sample_corpus()[:1], open_store(base), extractor=extractor)
        with running_server(base) as served:
            assert httpx.get(served + "/papers").status_code == 200
            paper = httpx.get(served + "/papers").json()["items"][0]["href"]
            stop(proc)
            # Lists and counts come from the local index and keep answering;
            # what only the store holds is a 503.
            assert httpx.get(served + "/stats", timeout=30).status_code == 200
            for path in (paper, "/entities/task/unlearning", "/sparql?query=ASK%7B%7D"):
                response = httpx.get(served + path, timeout=30)
                assert response.status_code == 503, (path, response.text)
                assert response.headers["content-type"].startswith("application/problem+json")
                assert "unavailable" in response.json()["detail"]
    finally:
        if proc.poll() is None:
            stop(proc)


def test_the_index_follows_a_remote_store(remote, tmp_path: Path) -> None:  # noqa: ANN001
    """The index of a remote store is a local file kept by this process's writes;
    its aggregates equal the scanning queries run on the server, and `kg
    reindex` rebuilds the same file from the server."""
    from kg.store.index import index_of, rebuild
    from kg.store.index.db import Index
    from tests.test_index import indexed, scanned

    index = index_of(remote)
    assert index is not None, "the fixture's ingest went through the index"
    expected = indexed(index)
    assert expected == scanned(remote)
    assert rebuild(remote, tmp_path / "rebuilt.sqlite") == 37
    assert indexed(Index(tmp_path / "rebuilt.sqlite")) == expected
