"""RDF mapping of results (see :mod:`kg.mapping.papers`, which calls this for each paper).

A result lives under its paper's IRI (``…/paper/{id}/result/{n}``) in the
paper's graph, like claims; its metric, dataset, task and method are the shared
entity nodes, and a metric node carries its direction (``kg:higherIsBetter``)
from :mod:`kg.mapping.directions`.
"""

from __future__ import annotations

from collections.abc import Callable

from pyoxigraph import Literal, NamedNode

from kg.mapping.directions import key_direction
from kg.model import Entity, Hypernym, Result
from kg.vocab import KG, RDF, SKOS, XSD

Add = Callable[[NamedNode, NamedNode, NamedNode | Literal], None]


def boolean(value: bool) -> Literal:
    """An ``xsd:boolean`` literal."""
    return Literal("true" if value else "false", datatype=XSD.boolean)


def direction_literal(entity: Entity) -> Literal | None:
    """The ``kg:higherIsBetter`` value of a metric node, or None when unknown."""
    higher = key_direction(entity.key)
    return None if higher is None else boolean(higher)


def map_results(
    results: list[Result],
    paper: NamedNode,
    add: Add,
    sentence: Callable[[int, int], NamedNode],
    describe: Callable[[Entity], NamedNode],
    provenance: Callable[[NamedNode, str, float], None],
) -> None:
    """Add the quads of a paper's results through the mapping's helpers."""
    for index, result in enumerate(results):
        r = NamedNode(f"{paper.value}/result/{index + 1}")
        claim = result.claim
        add(paper, KG.reportsResult, r)
        add(r, RDF.type, KG.Result)
        add(r, KG.inPaper, paper)
        add(r, KG.fromClaim, NamedNode(f"{paper.value}/claim/{result.claim_index + 1}"))
        add(r, KG.inSentence, sentence(claim.sentence_start, claim.sentence_end))
        add(r, KG.isProposed, boolean(result.proposed))
        add(r, KG.isRelative, boolean(result.relative))
        value = result.value
        q = NamedNode(f"{r.value}/value")
        add(r, KG.resultValue, q)
        add(q, RDF.type, KG.Quantity)
        add(q, KG.valueText, Literal(value.text))
        add(q, KG.start, Literal(str(value.start), datatype=XSD.integer))
        add(q, KG.end, Literal(str(value.end), datatype=XSD.integer))
        if value.number is not None:
            add(q, KG.numericValue, Literal(repr(float(value.number)), datatype=XSD.double))
        if value.unit:
            add(q, KG.unit, Literal(value.unit))
        for pred, entity in (
            (KG.resultMetric, result.metric),
            (KG.resultDataset, result.dataset),
            (KG.resultTask, result.task),
            (KG.resultMethod, result.method),
        ):
            if entity is not None:
                add(r, pred, describe(entity))
        provenance(r, result.component, result.confidence)


def map_hypernyms(
    hypernyms: list[Hypernym],
    paper: NamedNode,
    add: Add,
    sentence: Callable[[int, int], NamedNode],
    describe: Callable[[Entity], NamedNode],
    provenance: Callable[[NamedNode, str, float], None],
) -> None:
    """Add a paper's method taxonomy statements (``narrower skos:broader broader``,
    reified with the words that state it); :mod:`kg.store.taxonomy` turns them into links."""
    for h in hypernyms:
        narrower, broader = describe(h.narrower), describe(h.broader)
        tail = f"{narrower.value.rsplit('/', 1)[-1]}/{broader.value.rsplit('/', 1)[-1]}"
        st = NamedNode(f"{paper.value}/taxonomy/{tail}")
        add(st, RDF.type, KG.TaxonomyStatement)
        add(st, RDF.subject, narrower)
        add(st, RDF.predicate, SKOS.broader)
        add(st, RDF.object, broader)
        add(st, KG.inPaper, paper)
        add(st, KG.inSentence, sentence(h.sentence_start, h.sentence_end))
        add(st, KG.start, Literal(str(h.start), datatype=XSD.integer))
        add(st, KG.end, Literal(str(h.end), datatype=XSD.integer))
        add(st, KG.cue, Literal(h.cue))
        provenance(st, "kg_hypernyms", 0.8)
