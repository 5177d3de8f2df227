"""Ingest into a real on-disk Oxigraph store with the real spaCy extractor."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path

import pytest
from pyoxigraph import BlankNode, Literal, NamedNode, Quad, RdfFormat

from kg.ingest import ingest
from kg.mapping.papers import PaperQuads
from kg.reading.readers import derived_id, read_paths, unique
from kg.resources import queries_dir, sample_corpus
from kg.store.embedded import EmbeddedStore, StoreError, open_store
from kg.store.validation import validate_store
from kg.vocab import ENTITIES_GRAPH, KG, SKOS, paper_graph, paper_iri

PROVENANCE_QUERY = """
PREFIX kg: <https://w3id.org/mlkg/ontology#>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT ?sentence ?start ?end ?component ?confidence ?version WHERE {
  ?st rdf:subject ?paper ; rdf:predicate ?p ; rdf:object ?entity ;
      kg:confidence ?confidence ; prov:wasAttributedTo ?component ;
      kg:extractorVersion ?version ; kg:evidence ?m .
  ?m kg:inSentence ?s . ?s kg:text ?sentence ; kg:start ?start ; kg:end ?end .
}
"""


def nquads(store: EmbeddedStore) -> set[str]:
    buffer = io.BytesIO()
    store.dump(buffer, RdfFormat.N_QUADS)
    return set(buffer.getvalue().decode().splitlines())


def test_sample_graph_is_complete_and_valid(sample_store: Path) -> None:
    store = open_store(sample_store, read_only=True)
    assert sorted(store.paper_ids()).__len__() == 37
    result = validate_store(store)
    assert result.conforms, result.violations[:10]


def test_every_entity_statement_leads_to_its_sentence(sample_store: Path) -> None:
    store = open_store(sample_store, read_only=True)
    papers = {
        r.id: r.abstract for r in unique(read_paths(sample_corpus())) if hasattr(r, "abstract")
    }
    rows = list(store.query(PROVENANCE_QUERY, substitutions={}))
    assert rows, "no reified statements with evidence"
    for row in rows:
        start, end = int(row["start"].value), int(row["end"].value)
        assert 0 <= start < end
        assert any(text[start:end] == row["sentence"].value for text in papers.values())
        assert 0.0 <= float(row["confidence"].value) <= 1.0
        assert row["component"].value.startswith("https://w3id.org/mlkg/id/component/")


def test_reingesting_the_same_input_changes_nothing(store_copy: Path, extractor) -> None:  # noqa: ANN001
    store = open_store(store_copy)
    before = nquads(store)
    report = ingest(sample_corpus(), store, extractor=extractor)
    assert (report.added, report.updated, report.unchanged, report.duplicates) == (0, 0, 37, 1)
    assert report.quads_after == report.quads_before == len(before)
    assert nquads(store) == before
    store.close()


def test_same_input_gives_the_same_graph(sample_store: Path, tmp_path: Path, extractor) -> None:  # noqa: ANN001
    fresh = open_store(tmp_path / "again")
    ingest(sample_corpus(), fresh, extractor=extractor)
    assert nquads(fresh) == nquads(open_store(sample_store, read_only=True))


def test_changed_paper_is_replaced_whole(tmp_path: Path, extractor) -> None:  # noqa: ANN001
    abstract = next(
        r for r in unique(read_paths(sample_corpus())) if hasattr(r, "abstract")
    ).abstract
    source = tmp_path / "one.jsonl"
    source.write_text(json.dumps({"id": "p1", "title": "Old title", "abstract": abstract}) + "\n")
    store = open_store(tmp_path / "store")
    assert ingest([source], store, extractor=extractor).added == 1
    source.write_text(json.dumps({"id": "p1", "title": "New title", "abstract": abstract}) + "\n")
    report = ingest([source], store, extractor=extractor)
    assert (report.added, report.updated) == (0, 1)
    titles = [
        q.object.value
        for q in store.raw.quads_for_pattern(None, None, None, paper_graph(derived_id(abstract)))
        if q.predicate.value.endswith("/title")
    ]
    assert titles == ["New title"]
    assert not any(g.value.endswith("/loading") for g in store.raw.named_graphs())


def test_bad_records_are_skipped_and_the_rest_stored(tmp_path: Path, extractor) -> None:  # noqa: ANN001
    abstract = next(
        r for r in unique(read_paths(sample_corpus())) if hasattr(r, "abstract")
    ).abstract
    source = tmp_path / "mixed.jsonl"
    source.write_text(
        "\n".join(
            [
                json.dumps({"id": "good", "abstract": abstract}),
                json.dumps({"id": "empty", "abstract": ""}),
                "{broken",
            ]
        )
    )
    store = open_store(tmp_path / "store")
    report = ingest([source, tmp_path / "nope.txt"], store, extractor=extractor)
    assert report.added == 1
    assert [(Path(r.source).name, r.record) for r in report.rejected] == [
        ("mixed.jsonl", 2),
        ("mixed.jsonl", 3),
        ("nope.txt", 0),
    ]
    assert list(store.paper_ids()) == [derived_id(abstract)]


def test_same_abstract_in_two_files_is_one_paper(tmp_path: Path, extractor) -> None:  # noqa: ANN001
    """One file gives an id, the other not: still one paper, the source id kept."""
    abstract = next(
        r for r in unique(read_paths(sample_corpus())) if hasattr(r, "abstract")
    ).abstract
    with_id = tmp_path / "with-id.jsonl"
    with_id.write_text(json.dumps({"id": "Forum42", "abstract": abstract}) + "\n")
    without = tmp_path / "without-id.jsonl"
    without.write_text(json.dumps({"abstract": "  " + abstract.replace(" ", "\n", 2)}) + "\n")
    store = open_store(tmp_path / "store")
    report = ingest([with_id, without], store, extractor=extractor)
    assert (report.read, report.added, report.duplicates) == (2, 1, 1)
    assert list(store.paper_ids()) == [derived_id(abstract)]
    source_ids = [
        q.object.value
        for q in store.raw.quads_for_pattern(paper_iri(derived_id(abstract)), KG.sourceId, None)
    ]
    assert source_ids == ["Forum42"]
    # The other order, into a fresh store: the same one paper.
    other = open_store(tmp_path / "other")
    report = ingest([without, with_id], other, extractor=extractor)
    assert (report.added, report.duplicates) == (1, 1)
    assert list(other.paper_ids()) == [derived_id(abstract)]


def test_shacl_catches_a_broken_graph(store_copy: Path) -> None:
    store = open_store(store_copy)
    label = next(store.raw.quads_for_pattern(None, SKOS.prefLabel, None, ENTITIES_GRAPH))
    store.raw.add(Quad(label.subject, SKOS.prefLabel, Literal("a second label"), ENTITIES_GRAPH))
    store.raw.remove(
        Quad(
            NamedNode("https://w3id.org/mlkg/id/paper/cc753ecf2cb8"),
            NamedNode("http://purl.org/dc/terms/abstract"),
            next(
                store.raw.quads_for_pattern(
                    NamedNode("https://w3id.org/mlkg/id/paper/cc753ecf2cb8"),
                    NamedNode("http://purl.org/dc/terms/abstract"),
                    None,
                    None,
                )
            ).object,
            paper_graph("cc753ecf2cb8"),
        )
    )
    violations = validate_store(store).violations
    assert any("prefLabel" in v for v in violations)
    assert any("abstract" in v for v in violations)


def test_read_only_store_refuses_writes(sample_store: Path) -> None:
    store = open_store(sample_store, read_only=True)
    with pytest.raises(StoreError):
        store.delete_paper("cc753ecf2cb8")
    with pytest.raises(StoreError):
        open_store(sample_store.parent / "does-not-exist", read_only=True)


def test_counts_query_file_exists() -> None:
    assert (queries_dir() / "class-counts.rq").is_file()


EX_TITLE, EX_ABSTRACT, EX_YEAR, EX_CITES = (
    NamedNode(f"http://example.org/{name}") for name in ("title", "abstract", "year", "cites")
)


def _paper(paper_id: str, quads: list[tuple[object, object, object]]) -> PaperQuads:
    g = paper_graph(paper_id)
    return PaperQuads(paper_id, g, [Quad(s, p, o, g) for s, p, o in quads], [], {})  # type: ignore[arg-type]


def test_a_bulk_write_stores_every_term_as_given(tmp_path: Path) -> None:
    """New papers are bulk-loaded as N-Quads text: literals with quotes, line
    breaks, backslashes and ``_:`` come back exact, and so do blank nodes
    (which that text's parser would rename)."""
    store = open_store(tmp_path / "s", index=False)
    p = paper_iri("odd")
    odd = [
        (p, EX_TITLE, Literal('say "x"\n\\ _:b0 é 𝔽 \t end')),
        (p, EX_ABSTRACT, Literal("x", language="en-GB")),
        (p, EX_YEAR, Literal("2026", datatype=NamedNode("http://www.w3.org/2001/XMLSchema#gYear"))),
    ]
    blank = [
        (BlankNode("b7"), EX_TITLE, Literal("y")),
        (paper_iri("blank"), EX_CITES, BlankNode("b7")),
    ]
    store.write_papers([_paper("odd", odd)], new=True)
    store.write_papers([_paper("blank", blank)], new=True)
    for pid, quads in (("odd", odd), ("blank", blank)):
        g = paper_graph(pid)
        assert set(store.native().quads_for_pattern(None, None, None, g)) == {  # type: ignore[union-attr]
            Quad(s, p_, o, g)
            for s, p_, o in quads  # type: ignore[arg-type]
        }


def test_a_bulk_write_lets_other_threads_run(tmp_path: Path) -> None:
    """An ingest's worker pool is fed and drained by a thread of the writing
    process: a bulk write that held the GIL throughout starved the workers."""
    store = open_store(tmp_path / "s", index=False)
    quads = [(paper_iri(f"p{i}"), EX_TITLE, Literal(f"title {i} " * 8)) for i in range(60_000)]
    ticks: list[float] = []
    done = threading.Event()

    def tick() -> None:
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        time.sleep(0.05)
        started = time.perf_counter()
        store.write_papers([_paper("many", quads)], new=True)
        ended = time.perf_counter()
    finally:
        done.set()
        ticker.join()
    assert len(store) >= 60_000
    during = [started, *(t for t in ticks if started < t < ended), ended]
    longest = max(b - a for a, b in zip(during, during[1:], strict=False))
    # Held throughout the load, the ticker would stop for most of the write.
    assert longest < (ended - started) / 2, (longest, ended - started)
