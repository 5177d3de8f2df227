"""What the index keeps of a paper, read from the paper's quads.

The same function reads the quads a write is about to store
(:class:`kg.mapping.PaperQuads`) and the quads read back from a store by
``kg reindex``, so the index built incrementally and the one rebuilt from the
store cannot disagree about what a paper says.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from pyoxigraph import NamedNode, Quad

from kg import schema
from kg.store.index.evidence_rows import Evidence, evidence_rows
from kg.store.index.result_rows import ResultRow, result_rows
from kg.store.index.taxonomy_rows import stated_rows
from kg.vocab import DCTERMS, KG, RDF, SKOS

RELATION_TYPE = {KG[r.name].value: k.name for k, r in schema.relations()}
"""Paper → entity property → the type of entity the scanning queries count it for."""

ENTITY_CLASSES = tuple(k.name for k in schema.ENTITY_TYPES)
_CLASS_OF = {KG[name].value: name for name in ENTITY_CLASSES}
_CLAIM_PREDICATES = {
    KG.claimAbout.value: "subject",
    KG.claimMetric.value: "metric",
    KG.claimDataset.value: "dataset",
    KG.claimKind.value: "kind",
}
_TITLE, _ABSTRACT, _TYPE = DCTERMS.title.value, DCTERMS.abstract.value, RDF.type.value
_CLAIM, _VALUE, _NUMBER = KG.Claim.value, KG.claimValue.value, KG.numericValue.value
_DETAIL = {
    KG.text.value: "text",
    KG.start.value: "start",
    KG.end.value: "end",
    KG.inSentence.value: "sentence",
    KG.confidence.value: "confidence",
    KG.comparedTo.value: "baseline",
    KG.valueText.value: "valueText",
    KG.unit.value: "unit",
}
"""Properties of claims, their sentences and values that a claim's JSON shows."""
_WANTED = {
    NamedNode(p)
    for p in [
        *RELATION_TYPE,
        *_CLAIM_PREDICATES,
        *_DETAIL,
        _TITLE,
        _ABSTRACT,
        _TYPE,
        _VALUE,
        _NUMBER,
    ]
}


@dataclass(slots=True)
class ClaimRow:
    """One claim: its filters and the numbers it states."""

    iri: str
    subject: str | None = None
    metric: str | None = None
    dataset: str | None = None
    kind: str | None = None
    values: list[str] = field(default_factory=list)
    """IRIs of the claim's quantities (their numbers are looked up in ``numbers``)."""


@dataclass(slots=True)
class PaperRow:
    """One paper as the index keeps it."""

    paper_id: str
    iri: str
    title: str | None
    abstract: str
    links: set[tuple[str, str]]
    """(entity IRI, relation IRI) pairs."""
    claims: list[ClaimRow]
    numbers: dict[str, list[float]]
    """Quantity IRI → its numeric values."""
    props: dict[str, dict[str, str]] = field(default_factory=dict)
    """Node IRI → property (``_DETAIL`` names) → value, for claims' JSON."""
    results: list[ResultRow] = field(default_factory=list)
    """The paper's results (:mod:`kg.store.index.results`)."""
    evidence: Evidence | None = None
    """The paper's surface forms and acronym definitions (consolidation's evidence)."""
    stated: list[tuple[str, str]] = field(default_factory=list)
    """The method taxonomy pairs the paper states (:mod:`kg.store.index.taxonomy_rows`)."""

    def claim_detail(self, claim: ClaimRow) -> dict[str, Any]:
        """What ``GET /claims`` shows of a claim, without entity labels (read
        from the index when shown): the fields of ``claim.rq``'s rows."""
        own = self.props.get(claim.iri, {})
        sentence = self.props.get(own.get("sentence", ""), {})
        values = []
        for iri in claim.values:
            v = self.props.get(iri, {})
            stated = self.numbers.get(iri)
            values.append(
                {
                    "text": v.get("valueText"),
                    "number": stated[0] if stated else None,
                    "unit": v.get("unit"),
                    "start": _int(v.get("start")),
                    "end": _int(v.get("end")),
                    "iri": iri,
                }
            )
        # claim.rq orders a claim's values by start, then IRI; unbound starts first.
        values.sort(key=lambda v: (v["start"] is not None, v["start"] or 0, v["iri"]))
        return {
            "text": own.get("text"),
            "start": _int(own.get("start")),
            "end": _int(own.get("end")),
            "kind": claim.kind,
            "confidence": float(own["confidence"]) if "confidence" in own else None,
            "sentence": {
                "text": sentence.get("text"),
                "start": _int(sentence.get("start")),
                "end": _int(sentence.get("end")),
            }
            if sentence.get("text")
            else None,
            "subject_iri": claim.subject,
            "metric_iri": claim.metric,
            "dataset_iri": claim.dataset,
            "baseline_iri": own.get("baseline"),
            "values": [
                {k: v[k] for k in ("text", "number", "unit", "start", "end")} for v in values
            ],
        }

    def claim_values(self, claim: ClaimRow) -> list[float]:
        """The numbers a claim states."""
        return [n for v in claim.values for n in self.numbers.get(v, ())]


def paper_row(paper_id: str, iri: str, quads: Iterable[Quad]) -> PaperRow:
    """The index row of one paper from the quads of its graph."""
    title: str | None = None
    abstract = ""
    links: set[tuple[str, str]] = set()
    claims: dict[str, ClaimRow] = {}
    numbers: dict[str, list[float]] = {}
    props: dict[str, dict[str, str]] = {}
    quads = list(quads)  # read three times: here, for the results and for the evidence
    for q in quads:
        # Most quads (mentions, sentences, provenance) matter not: test the
        # predicate term first and read strings only for those that do.
        pred = q.predicate
        if pred not in _WANTED:
            continue
        p = pred.value
        s, o = _text(q.subject), _text(q.object)
        if s == iri:
            if p in RELATION_TYPE:
                links.add((o, p))
            elif p == _TITLE:
                title = o
            elif p == _ABSTRACT:
                abstract = o
        elif p == _TYPE:
            if o == _CLAIM:
                claims.setdefault(s, ClaimRow(s))
        elif p in _DETAIL:
            props.setdefault(s, {})[_DETAIL[p]] = o
        elif p in _CLAIM_PREDICATES:
            setattr(claims.setdefault(s, ClaimRow(s)), _CLAIM_PREDICATES[p], o)
        elif p == _VALUE:
            claims.setdefault(s, ClaimRow(s)).values.append(o)
        elif p == _NUMBER:
            # A value that is not a number is one the value filter cannot compare either.
            with suppress(ValueError):
                numbers.setdefault(s, []).append(float(o))
    return PaperRow(
        paper_id, iri, title, abstract, links, list(claims.values()), numbers, props,
        result_rows(quads), evidence_rows(quads), stated_rows(quads),
    )  # fmt: skip


def _text(term: Any) -> str:
    """A term's lexical value (our graphs hold no RDF-star triple terms)."""
    return str(term.value)


def _int(value: str | None) -> int | None:
    return int(value) if value is not None else None


@dataclass(slots=True)
class EntityInfo:
    """An entity's class and names, as written to the entities graph."""

    type: str | None = None
    label: str | None = None
    names: set[str] = field(default_factory=set)


def entity_infos(
    quads: Iterable[Quad], labels: dict[str, str] | None = None
) -> dict[str, EntityInfo]:
    """Entity IRI → class and names, from entities-graph quads (and, for a write,
    the labels the paper gives: each becomes the preferred label or an alias)."""
    out: dict[str, EntityInfo] = {}
    for q in quads:
        s, p, o = _text(q.subject), q.predicate.value, _text(q.object)
        if p == RDF.type.value and o in _CLASS_OF:
            out.setdefault(s, EntityInfo()).type = _CLASS_OF[o]
        elif p == SKOS.prefLabel.value:
            info = out.setdefault(s, EntityInfo())
            info.label = o
            info.names.add(o)
        elif p == SKOS.altLabel.value:
            out.setdefault(s, EntityInfo()).names.add(o)
    for iri, label in (labels or {}).items():
        info = out.setdefault(iri, EntityInfo())
        info.names.add(label)
        if info.label is None:
            info.label = label
    return out
