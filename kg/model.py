"""The records that flow through the pipeline: read → extracted → mapped to RDF.

These classes are the contract between the stages. Readers produce
:class:`Record`; extraction turns a record into a :class:`PaperExtraction`;
:mod:`kg.mapping.papers` turns that into quads. Offsets are always character offsets
into ``Record.abstract`` exactly as read (LaTeX and all).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kg import schema

EntityType = schema.EntityType
"""The kinds of entity the extractor finds; values are ontology class names (:mod:`kg.schema`)."""

ClaimKind = schema.ClaimKind
"""The kinds of claim; values are the gold annotation's spelling (:mod:`kg.schema`)."""


@dataclass(frozen=True, slots=True)
class Record:
    """One paper as read from a source file, before any extraction.

    ``id`` is the paper's identity in the graph: the hash of its abstract
    (:func:`kg.readers.derived_id`), so the same abstract in two files is one paper
    whether or not a file gives an id. The id a source gives (an OpenReview forum
    id, a DOI…) is kept as ``source_id``."""

    id: str
    abstract: str
    title: str | None = None
    authors: tuple[str, ...] = ()
    year: int | None = None
    venue: str | None = None
    keywords: tuple[str, ...] = ()
    url: str | None = None
    source: str = ""
    record: int = 0
    source_id: str | None = None

    @property
    def external_id(self) -> str:
        """The id the source gave, else the paper id: what gold files and users know."""
        return self.source_id or self.id


@dataclass(frozen=True, slots=True)
class Rejected:
    """A record that could not be read, with where it was and why."""

    source: str
    record: int
    reason: str

    def __str__(self) -> str:
        return f"{self.source}: record {self.record}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Mention:
    """A span of the abstract that names an entity or states a value."""

    text: str
    start: int
    end: int
    sentence_start: int
    sentence_end: int

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "start": self.start, "end": self.end}


@dataclass(slots=True)
class Entity:
    """An entity of one paper: its canonical identity plus where the paper names it."""

    type: EntityType
    key: str
    label: str
    iri: str
    mentions: list[Mention] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    proposed: bool = False
    component: str = ""
    confidence: float = 0.5
    derived: bool = False
    """A broader concept the paper names only inside a longer phrase ("unlearning"
    in "LLM unlearning"): the graph links the paper to it, ``kg extract`` does not
    list it."""

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "iri": self.iri,
            "mentions": [m.to_json() for m in self.mentions],
        }


@dataclass(frozen=True, slots=True)
class Value:
    """A number stated in a claim, parsed: ``$\\times$46`` → 46.0 with unit ``×``."""

    text: str
    number: float | None
    unit: str | None
    start: int
    end: int

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "number": self.number, "unit": self.unit}


@dataclass(slots=True)
class Claim:
    """A statement of contribution or result, with its slots filled where found."""

    text: str
    start: int
    end: int
    kind: ClaimKind
    sentence_start: int
    sentence_end: int
    subject: Entity | None = None
    values: list[Value] = field(default_factory=list)
    metric: Entity | None = None
    dataset: Entity | None = None
    baseline: Entity | None = None
    component: str = ""
    confidence: float = 0.5

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "start": self.start,
            "end": self.end,
            "kind": str(self.kind),
            "subject": self.subject.label if self.subject else None,
            "values": [v.to_json() for v in self.values],
            "metric": self.metric.label if self.metric else None,
            "dataset": self.dataset.label if self.dataset else None,
            # What the claim compares against: the store records it as kg:comparedTo.
            "baseline": self.baseline.label if self.baseline else None,
        }


@dataclass(slots=True)
class Result:
    """One reported number tied to what it measures: metric, dataset, task, method.

    ``relative`` marks a change against something else (``+5.48%``, ``×46``,
    ``30% fewer``) as opposed to an absolute score (``84.7% accuracy``);
    ``proposed`` marks a number of the paper's own method rather than a baseline's.
    """

    value: Value
    claim: Claim
    claim_index: int
    metric: Entity | None = None
    dataset: Entity | None = None
    task: Entity | None = None
    method: Entity | None = None
    proposed: bool = False
    relative: bool = False
    metric_text: str | None = None
    """The metric as the claim writes it ("mAP"); ``metric`` is its canonical node."""
    component: str = "kg_results"
    confidence: float = 0.5

    def to_json(self) -> dict[str, Any]:
        def ref(e: Entity | None) -> dict[str, str] | None:
            return {"label": e.label, "iri": e.iri} if e is not None else None

        v = self.value
        out: dict[str, Any] = {
            "value": {
                "text": v.text,
                "number": v.number,
                "unit": v.unit,
                "start": v.start,
                "end": v.end,
            },
            "proposed": self.proposed,
            "relative": self.relative,
            "claim": {"text": self.claim.text, "start": self.claim.start, "end": self.claim.end},
        }
        # Keyed by each entity kind's segment in kg.schema (metric, dataset, task, method).
        refs = {
            EntityType.METRIC: self.metric,
            EntityType.DATASET: self.dataset,
            EntityType.TASK: self.task,
            EntityType.METHOD: self.method,
        }
        for kind, entity in refs.items():
            out[schema.kind(kind.value).segment] = ref(entity)
        if self.metric is not None and self.metric_text:
            out[schema.kind(EntityType.METRIC.value).segment]["label"] = self.metric_text
        return out


@dataclass(frozen=True, slots=True)
class Hypernym:
    """The text says one method is a kind of another: "GRPO, a policy-gradient method".

    ``start``/``end`` span the words that say it, in the abstract; ``cue`` names the
    form ("appositive", "copula", "such as", "including")."""

    narrower: Entity
    broader: Entity
    cue: str
    start: int
    end: int
    sentence_start: int
    sentence_end: int

    def to_json(self) -> dict[str, Any]:
        return {
            "narrower": {"label": self.narrower.label, "iri": self.narrower.iri},
            "broader": {"label": self.broader.label, "iri": self.broader.iri},
            "cue": self.cue,
            "start": self.start,
            "end": self.end,
        }


@dataclass(slots=True)
class PaperExtraction:
    """Everything extracted from one paper."""

    record: Record
    entities: list[Entity]
    claims: list[Claim]
    extractor_version: str
    results: list[Result] = field(default_factory=list)
    hypernyms: list[Hypernym] = field(default_factory=list)
    """Method taxonomy links the text states (see :mod:`kg.extraction.hypernyms`)."""
    acronyms: list[tuple[str, str]] = field(default_factory=list)
    """``(short form, long form)`` pairs the abstract defines ("RL", "reinforcement
    learning"): recorded so the corpus can resolve papers that use the short form bare."""

    def of_type(self, kind: EntityType, *, proposed: bool | None = None) -> list[Entity]:
        """The entities of one type, optionally only the proposed (or not proposed) ones."""
        return [
            e
            for e in self.entities
            if e.type is kind and (proposed is None or e.proposed is proposed)
        ]

    def to_json(self) -> dict[str, Any]:
        """The ``kg extract --format jsonl`` object: exactly the documented keys."""

        def js(items: list[Entity]) -> list[dict[str, Any]]:
            return [e.to_json() for e in items]

        out: dict[str, Any] = {
            "id": self.record.external_id,
            "title": self.record.title,
            "abstract": self.record.abstract,
        }
        for kind, relation in schema.groups():
            # A kind with a "proposed" relation splits its entities between its lists.
            split = any(r.proposed for r in kind.relations)
            proposed = relation.proposed if split else None
            named = [
                e for e in self.of_type(EntityType(kind.name), proposed=proposed) if not e.derived
            ]
            out[relation.key] = js(named)
        out["claims"] = [c.to_json() for c in self.claims]
        out["results"] = [r.to_json() for r in self.results]
        out["broader"] = [h.to_json() for h in self.hypernyms]
        return out
