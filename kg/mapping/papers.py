"""RDF mapping: a :class:`~kg.model.PaperExtraction` becomes quads.

Two kinds of graph receive them:

* the paper's own named graph (``kg.vocab.paper_graph``): the paper, its edges
  to entities, the reified statements with their provenance, mentions,
  sentences, claims and quantities. Every subject there is the paper or lives
  under the paper's IRI, so two papers never write the same triple and the
  union default graph never shows duplicates;
* the shared entities graph (:data:`ENTITIES_GRAPH`): each entity's type and
  labels, and the extractor components. Writing the same triple twice there is
  a no-op, which keeps re-ingesting idempotent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass

from pyoxigraph import Literal, NamedNode, Quad

from kg import schema
from kg.mapping.consolidation import evidence_quads
from kg.mapping.phrases import prune
from kg.mapping.results import direction_literal, map_hypernyms, map_results
from kg.model import Claim, Entity, EntityType, PaperExtraction, Record
from kg.vocab import (
    CLAIM_KINDS,
    DCTERMS,
    ENTITIES_GRAPH,
    KG,
    PROV,
    RDF,
    RDFS,
    SCHEMA,
    SKOS,
    XSD,
    component_iri,
    paper_graph,
    paper_iri,
)


def edge_predicate(entity: Entity) -> NamedNode:
    """The paper → entity property for an entity of this paper (:mod:`kg.schema`)."""
    return KG[schema.kind(entity.type.value).relation(proposed=entity.proposed).name]


def content_hash(record: Record, extractor_version: str) -> str:
    """A hash of everything that decides a paper's graph: unchanged hash, unchanged graph."""
    payload = json.dumps(
        [
            record.id,
            record.source_id,
            record.abstract,
            record.title,
            list(record.authors),
            record.year,
            record.venue,
            list(record.keywords),
            record.url,
            record.source,
            extractor_version,
        ],
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(slots=True)
class PaperQuads:
    """One paper's quads, split by the graph they go to."""

    paper_id: str
    graph: NamedNode
    paper: list[Quad]
    entities: list[Quad]
    labels: dict[str, str]
    """Entity IRI → preferred label; written only for entities that have none yet."""


def _int(value: int) -> Literal:
    return Literal(str(value), datatype=XSD.integer)


def _double(value: float) -> Literal:
    return Literal(repr(float(value)), datatype=XSD.double)


def map_paper(extraction: PaperExtraction) -> PaperQuads:
    """The quads for one paper's extraction (without phrases that are never
    nodes, with the paper's raw evidence for corpus-level consolidation)."""
    extraction = prune(extraction)
    record = extraction.record
    version = extraction.extractor_version
    g = paper_graph(record.id)
    p = paper_iri(record.id)
    quads: list[Quad] = []

    def add(s: NamedNode, pred: NamedNode, o: NamedNode | Literal) -> None:
        quads.append(Quad(s, pred, o, g))

    add(p, RDF.type, KG.Paper)
    add(p, DCTERMS.identifier, Literal(record.id))
    add(p, DCTERMS.abstract, Literal(record.abstract))
    if record.title:
        add(p, DCTERMS.title, Literal(record.title))
    for author in record.authors:
        add(p, DCTERMS.creator, Literal(author))
    if record.year is not None:
        add(p, SCHEMA.datePublished, Literal(f"{record.year:04d}", datatype=XSD.gYear))
    if record.venue:
        add(p, KG.venue, Literal(record.venue))
    for keyword in record.keywords:
        add(p, SCHEMA.keywords, Literal(keyword))
    if record.url:
        add(p, SCHEMA.url, Literal(record.url))
    if record.source:
        add(p, KG.sourceFile, Literal(record.source))
    if record.source_id:
        add(p, KG.sourceId, Literal(record.source_id))
    add(p, KG.contentHash, Literal(content_hash(record, version)))
    add(p, KG.extractorVersion, Literal(version))

    sentences: set[tuple[int, int]] = set()

    def sentence(start: int, end: int) -> NamedNode:
        node = NamedNode(f"{p.value}/sentence/{start}-{end}")
        if (start, end) not in sentences:
            sentences.add((start, end))
            add(node, RDF.type, KG.Sentence)
            add(node, KG.inPaper, p)
            add(node, KG.start, _int(start))
            add(node, KG.end, _int(end))
            add(node, KG.text, Literal(record.abstract[start:end]))
        return node

    entity_quads: list[Quad] = []
    labels: dict[str, str] = {}
    components: set[str] = set()

    described: list[Entity] = []

    def describe(entity: Entity) -> NamedNode:
        node = NamedNode(entity.iri)
        described.append(entity)
        if entity.iri not in labels:
            labels[entity.iri] = entity.label
            entity_quads.append(Quad(node, RDF.type, KG[entity.type.value], ENTITIES_GRAPH))
            for alias in entity.aliases:
                if alias != entity.label:
                    entity_quads.append(Quad(node, SKOS.altLabel, Literal(alias), ENTITIES_GRAPH))
            direction = direction_literal(entity) if entity.type is EntityType.METRIC else None
            if direction is not None:
                entity_quads.append(Quad(node, KG.higherIsBetter, direction, ENTITIES_GRAPH))
        return node

    def provenance(node: NamedNode, component: str, confidence: float) -> None:
        name = component or "unknown"
        components.add(name)
        add(node, KG.confidence, _double(min(1.0, max(0.0, confidence))))
        add(node, PROV.wasAttributedTo, component_iri(name))
        add(node, KG.extractorVersion, Literal(version))

    for entity in extraction.entities:
        e = describe(entity)
        pred = edge_predicate(entity)
        add(p, pred, e)
        local = pred.value.rsplit("#", 1)[-1]
        st = NamedNode(
            f"{p.value}/statement/{local}/{entity.type.value.lower()}/{_tail(entity.iri)}"
        )
        add(st, RDF.type, RDF.Statement)
        add(st, RDF.subject, p)
        add(st, RDF.predicate, pred)
        add(st, RDF.object, e)
        provenance(st, entity.component, entity.confidence)
        for m in entity.mentions:
            # One span may name two entities ("LLM unlearning" is also "unlearning"),
            # so the entity is part of the mention's identity.
            mn = NamedNode(
                f"{p.value}/mention/{m.start}-{m.end}/{entity.type.value.lower()}/{_tail(entity.iri)}"
            )
            add(mn, RDF.type, KG.Mention)
            add(mn, KG.inPaper, p)
            add(mn, KG.denotes, e)
            add(mn, KG.text, Literal(m.text))
            add(mn, KG.start, _int(m.start))
            add(mn, KG.end, _int(m.end))
            add(mn, KG.inSentence, sentence(m.sentence_start, m.sentence_end))
            add(st, KG.evidence, mn)

    for index, claim in enumerate(extraction.claims):
        _map_claim(claim, index, p, add, sentence, describe, provenance)
    map_results(extraction.results, p, add, sentence, describe, provenance)
    map_hypernyms(extraction.hypernyms, p, add, sentence, describe, provenance)

    quads.extend(evidence_quads(extraction, p, g, described))
    for name in sorted(components):
        node = component_iri(name)
        entity_quads.append(Quad(node, RDF.type, KG.ExtractorComponent, ENTITIES_GRAPH))
        entity_quads.append(Quad(node, RDFS.label, Literal(name), ENTITIES_GRAPH))

    return PaperQuads(record.id, g, quads, entity_quads, labels)


def _tail(iri: str) -> str:
    return iri.rsplit("/", 1)[-1]


def _map_claim(claim: Claim, index, p, add, sentence, describe, provenance) -> None:  # noqa: ANN001
    c = NamedNode(f"{p.value}/claim/{index + 1}")
    add(p, KG.makesClaim, c)
    add(c, RDF.type, KG.Claim)
    add(c, KG.inPaper, p)
    add(c, KG.text, Literal(claim.text))
    add(c, KG.start, _int(claim.start))
    add(c, KG.end, _int(claim.end))
    add(c, KG.inSentence, sentence(claim.sentence_start, claim.sentence_end))
    add(c, KG.claimKind, CLAIM_KINDS[str(claim.kind)])
    for pred, entity in (
        (KG.claimAbout, claim.subject),
        (KG.claimMetric, claim.metric),
        (KG.claimDataset, claim.dataset),
        (KG.comparedTo, claim.baseline),
    ):
        if entity is not None:
            add(c, pred, describe(entity))
    for vi, value in enumerate(claim.values):
        q = NamedNode(f"{c.value}/value/{vi + 1}")
        add(c, KG.claimValue, q)
        add(q, RDF.type, KG.Quantity)
        add(q, KG.valueText, Literal(value.text))
        add(q, KG.start, _int(value.start))
        add(q, KG.end, _int(value.end))
        if value.number is not None:
            add(q, KG.numericValue, _double(value.number))
        if value.unit:
            add(q, KG.unit, Literal(value.unit))
    provenance(c, claim.component, claim.confidence)


def label_quads(labels: dict[str, str], unlabelled: set[str]) -> Iterator[Quad]:
    """``skos:prefLabel`` quads for the entities that have no preferred label yet.

    The first paper to name an entity fixes its preferred label, so one entity
    never carries two; the same input in the same order gives the same labels.
    """
    for iri, label in labels.items():
        if iri in unlabelled:
            yield Quad(NamedNode(iri), SKOS.prefLabel, Literal(label), ENTITIES_GRAPH)
