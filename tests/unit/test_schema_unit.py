"""kg.schema is the single list of types: the mapping, the vocabulary and the
named queries derive from it."""

from __future__ import annotations

from pathlib import Path

from pyoxigraph import Variable

from kg import schema
from kg.mapping.papers import edge_predicate
from kg.model import EntityType
from kg.resources import queries_dir
from kg.store.embedded import open_reader
from kg.store.queries import default_registry, expand_schema
from kg.vocab import KG
from tests.unit.conftest import extraction


def test_every_entity_type_has_a_class_and_relations_in_the_vocabulary() -> None:
    assert [t.value for t in EntityType] == [k.name for k in schema.ENTITY_TYPES]
    for kind, relation in schema.relations():
        assert KG[kind.name] and KG[relation.name]


def test_edge_predicates_come_from_the_schema() -> None:
    entities = {e.label: e for e in extraction("p1").entities}
    assert edge_predicate(entities["FastForget"]) == KG.proposesMethod
    assert edge_predicate(entities["CIFAR-10"]) == KG.evaluatesOn


def test_no_query_lists_the_types_and_every_lookup_is_expanded() -> None:
    for query in default_registry().all():
        assert "subPropertyOf kg:hasEntity" not in query.sparql, query.name
        assert "subClassOf kg:ResearchEntity" not in query.sparql, query.name


def test_expanded_and_ontology_forms_give_the_same_rows(tiny_store: Path) -> None:
    """The VALUES the registry binds mean what the ontology says (kg.ttl is in the store)."""
    store = open_reader(tiny_store)
    entity = "https://w3id.org/mlkg/id/task/machine-unlearning"
    try:
        for path in sorted(queries_dir().rglob("*.rq")):
            text = path.read_text(encoding="utf-8")
            if "kg:hasEntity" not in text and "kg:ResearchEntity" not in text:
                continue
            name = path.relative_to(queries_dir()).with_suffix("").as_posix()
            params = (
                default_registry().bind(name, {}, strict=False)
                if not any(p.required for p in default_registry().get(name).params)
                else None
            )
            if params is None:
                query = default_registry().get(name)
                values = {p.name: entity if p.type == "iri" else "a" for p in query.params}
                params = default_registry().bind(name, values)

            def rows(sparql: str, params: dict = params) -> list:  # noqa: B006
                subs = {Variable(k): v for k, v in params.items()} or None
                native = store.native()
                assert native is not None
                result = native.query(sparql, use_default_graph_as_union=True, substitutions=subs)
                if hasattr(result, "variables"):
                    return sorted(str([s[v] for v in result.variables]) for s in result)
                return sorted(str(t) for t in result)

            assert rows(expand_schema(text)) == rows(text), name
    finally:
        store.close()
