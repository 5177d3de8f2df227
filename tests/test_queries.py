"""The named-query registry: every .rq parses, headers are documented, and
parameters are validated and bound by substitution, never spliced into SPARQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyoxigraph import Literal, NamedNode

from kg.resources import queries_dir
from kg.store.embedded import open_store
from kg.store.queries import (
    ANY,
    Param,
    ParameterError,
    QueryFileError,
    QueryRegistry,
    UnknownQuery,
    convert,
    default_registry,
    rows,
)

TASK = "https://w3id.org/mlkg/ontology#Task"


def test_every_query_file_parses() -> None:
    registry = QueryRegistry()
    files = sorted(queries_dir().rglob("*.rq"))
    assert len(registry) == len(files) > 10
    for query in registry.all():
        assert query.form in {"select", "ask", "construct"}


def test_public_queries_are_documented() -> None:
    for query in default_registry().public():
        assert query.title and query.title != query.name, query.name
        assert query.description, query.name
        for param in query.params:
            assert param.description, f"{query.name}: {param.name}"
            assert f"?{param.name}" in query.sparql


def test_subfolder_queries_are_internal() -> None:
    registry = default_registry()
    assert registry.get("store/union-graph").internal
    with pytest.raises(UnknownQuery):
        registry.get("store/union-graph", public=True)
    assert all("/" not in q.name for q in registry.public())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("SELECT ?x WHERE { ?x ?p ?o }\n", "title"),
        ("# title: Broken\nSELECT ?x WHERE { ?x ?p \n", "broken.rq"),
        ('# title: T\n# param: thing iri "x"\nSELECT ?x WHERE { ?x ?p ?o }\n', "not a variable"),
        ('# title: T\n# param: n whatever "x"\nSELECT ?n WHERE { ?n ?p ?o }\n', "param"),
        ('# title: T\n# param: n int = abc "x"\nSELECT ?n WHERE { ?n ?p ?o }\n', "default"),
        # pyoxigraph refuses to substitute a variable the SELECT does not project
        ('# title: T\n# param: n iri "x"\nSELECT ?x WHERE { ?x ?p ?n }\n', "broken.rq"),
    ],
)
def test_bad_files_fail_at_load(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "broken.rq").write_text(text, encoding="utf-8")
    with pytest.raises(QueryFileError, match=message):
        QueryRegistry(tmp_path)


def test_header_syntax(tmp_path: Path) -> None:
    (tmp_path / "q.rq").write_text(
        "# title: A query\n# description: one\n# description: two\n"
        '# param: who iri "The subject"\n'
        '# param: n int = 5 "How many"\n'
        '# param: label string = "" "A label"\n'
        "SELECT ?who ?n ?label WHERE { ?who ?p ?o }\n",
        encoding="utf-8",
    )
    query = QueryRegistry(tmp_path).get("q")
    assert query.title == "A query"
    assert query.description == "one two"
    assert [(p.name, p.type, p.default, p.required) for p in query.params] == [
        ("who", "iri", None, True),
        ("n", "int", "5", False),
        ("label", "string", "", False),
    ]


@pytest.mark.parametrize(
    ("ptype", "raw", "expected"),
    [
        (
            "int",
            "42",
            Literal("42", datatype=NamedNode("http://www.w3.org/2001/XMLSchema#integer")),
        ),
        (
            "float",
            "-1.5e3",
            Literal("-1500.0", datatype=NamedNode("http://www.w3.org/2001/XMLSchema#double")),
        ),
        (
            "float",
            "-INF",
            Literal("-INF", datatype=NamedNode("http://www.w3.org/2001/XMLSchema#double")),
        ),
        (
            "bool",
            "true",
            Literal("true", datatype=NamedNode("http://www.w3.org/2001/XMLSchema#boolean")),
        ),
        ("string", '"} UNION { ?s ?p ?o', Literal('"} UNION { ?s ?p ?o')),
        ("iri", "https://w3id.org/mlkg/id/task/x", NamedNode("https://w3id.org/mlkg/id/task/x")),
    ],
)
def test_convert(ptype: str, raw: str, expected: object) -> None:
    assert convert(Param("p", ptype), raw) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("ptype", "raw"),
    [
        ("int", "4.5"),
        ("int", "ten"),
        ("int", "9" * 40),
        ("float", "nan"),
        ("float", "1e99999"),
        ("float", "abc"),
        ("bool", "maybe"),
        ("iri", "not an iri"),
        ("iri", "> { ?s ?p ?o"),
        ("iri", "http://x/ y"),
        ("string", "x" * 5000),
        ("iri", "http://x/" + "a" * 5000),
    ],
)
def test_convert_rejects(ptype: str, raw: str) -> None:
    with pytest.raises(ParameterError) as info:
        convert(Param("p", ptype), raw)  # type: ignore[arg-type]
    assert info.value.parameter == "p"


def test_bind_checks_names_and_fills_defaults() -> None:
    registry = default_registry()
    with pytest.raises(ParameterError, match="required"):
        registry.bind("papers-with-entity", {})
    with pytest.raises(ParameterError) as info:
        registry.bind("papers-with-entity", {"entity": ANY, "bogus": "1"})
    assert info.value.parameter == "bogus"
    bound = registry.bind("claims-with-value", {})
    assert bound["min_value"].value == "-INF" and bound["max_value"].value == "INF"


def test_runs_on_the_sample(sample_store: Path) -> None:
    store = open_store(sample_store, read_only=True)
    try:
        registry = default_registry()
        papers = rows(registry.run(store, "papers"))
        assert len(papers) == 37
        tasks = rows(registry.run(store, "entities-by-type", {"type": TASK}))
        assert tasks and all(r["type"].value == TASK for r in tasks)
        counts = [int(r["papers"].value) for r in tasks]
        assert counts == sorted(counts, reverse=True)
        top = tasks[0]["entity"].value
        linked = rows(registry.run(store, "papers-with-entity", {"entity": top}))
        assert len(linked) == counts[0]
    finally:
        store.close()


@pytest.mark.parametrize(
    "hostile",
    ['") } UNION { ?paper ?p ?o } #', "'; DROP ALL; #", "}}}}{{{{", "\\u0022", "a" * 1999],
)
def test_injection_is_inert(sample_store: Path, hostile: str) -> None:
    """Hostile text is a literal to search for: it matches nothing and breaks nothing."""
    store = open_store(sample_store, read_only=True)
    try:
        registry = default_registry()
        assert rows(registry.run(store, "search-papers", {"text": hostile})) == []
        by_label = registry.run(store, "entity-by-label", {"type": TASK, "label": hostile})
        assert rows(by_label) == []
    finally:
        store.close()
