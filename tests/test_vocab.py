"""The vocabulary module, the ontology, the shapes and the queries agree."""

from __future__ import annotations

import re

import pytest
import rdflib
from rdflib.namespace import OWL, RDF, RDFS

from kg.resources import ontology_dir, queries_dir
from kg.vocab import KG


@pytest.fixture(scope="module")
def ontology() -> rdflib.Graph:
    return rdflib.Graph().parse(ontology_dir() / "kg.ttl", format="turtle")


def defined_terms(graph: rdflib.Graph) -> set[str]:
    return {
        str(s)[len(KG.iri) :]
        for s in graph.subjects()
        if isinstance(s, rdflib.URIRef) and str(s).startswith(KG.iri)
    }


def test_every_code_term_is_in_the_ontology_with_label_and_comment(ontology: rdflib.Graph) -> None:
    for name in sorted(KG.terms):
        node = rdflib.URIRef(KG.iri + name)
        assert (node, RDF.type, None) in ontology, f"kg:{name} is not declared in kg.ttl"
        assert ontology.value(node, RDFS.label), f"kg:{name} has no rdfs:label"
        assert ontology.value(node, RDFS.comment), f"kg:{name} has no rdfs:comment"


def test_the_ontology_has_no_term_the_code_lacks(ontology: rdflib.Graph) -> None:
    assert defined_terms(ontology) == set(KG.terms)


def test_required_classes_and_alignments(ontology: rdflib.Graph) -> None:
    for name in ("Paper", "Task", "Method", "Dataset", "Metric", "Claim"):
        assert (rdflib.URIRef(KG.iri + name), RDF.type, OWL.Class) in ontology
    assert (
        rdflib.URIRef(KG.iri + "Paper"),
        RDFS.subClassOf,
        rdflib.URIRef("https://schema.org/ScholarlyArticle"),
    ) in ontology


def test_unknown_term_raises() -> None:
    with pytest.raises(AttributeError):
        _ = KG.notATerm


def _kg_terms_in(text: str) -> set[str]:
    # Strip comments and strings so prose does not count as a use.
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    text = re.sub(r"#[^\n]*", "", text)
    return set(re.findall(r"\bkg:([A-Za-z_][\w-]*)", text))


def test_shapes_and_queries_use_only_ontology_terms() -> None:
    files = [ontology_dir() / "shapes.ttl", *sorted(queries_dir().rglob("*.rq"))]
    for path in files:
        unknown = _kg_terms_in(path.read_text(encoding="utf-8")) - set(KG.terms)
        assert not unknown, f"{path.name} uses terms kg.ttl lacks: {sorted(unknown)}"


def test_python_code_uses_only_ontology_terms() -> None:
    root = ontology_dir().parent
    for path in [*root.glob("kg/**/*.py"), *root.glob("service/**/*.py")]:
        used = set(re.findall(r"\bKG\.([A-Za-z_]\w*)", path.read_text(encoding="utf-8")))
        used -= {"iri", "terms"}
        unknown = used - set(KG.terms)
        assert not unknown, f"{path} uses KG terms kg.ttl lacks: {sorted(unknown)}"
