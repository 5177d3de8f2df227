"""The domain schema: the one place that lists the kinds of research entity, how a
paper relates to each, and the kinds of claim.

Everything that depends on the list of types is derived from here: the model's
enums (:mod:`kg.model`), the vocabulary's terms (:mod:`kg.vocab`), the RDF
mapping's edge properties (:mod:`kg.mapping.papers`), the entity-type lists the named
queries bind (:mod:`kg.store.queries`), the read model and its JSON keys
(:mod:`kg.read`), the REST routes and response models, graph views, exporters'
colours, the CLI's choices and ``GET /schema``, which the explorer reads for
its legend. Adding a type means adding an :class:`EntityKind` here, its class
and properties to ``ontology/kg.ttl`` (``tests/test_vocab.py`` checks they
agree), and the extraction rules that find it.

The module is pure data and imports nothing of the project, so any layer may
import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import EnumMeta, StrEnum
from typing import TYPE_CHECKING, Any

ENTITY_CLASS = "ResearchEntity"
"""The ontology class every entity type is a subclass of."""

ENTITY_PROPERTY = "hasEntity"
"""The ontology property every paper → entity relation is a sub-property of."""

PAPER_COLOUR = "#8c96a8"
"""The colour of paper nodes in drawings and legends."""


@dataclass(frozen=True, slots=True)
class Relation:
    """One paper → entity property."""

    name: str
    """The property's local name in the ontology (``addressesTask``)."""
    api: str
    """What the REST API calls it in an entity's paper list (``addresses``)."""
    key: str
    """The JSON key of a paper's list of such entities (``tasks``)."""
    title: str
    """The heading of that list on a paper's HTML page."""
    label: str
    """The edge label in drawings (``evaluates on``)."""
    proposed: bool = False
    """The relation of entities the paper itself proposes (``kg:proposesMethod``)."""


@dataclass(frozen=True, slots=True)
class EntityKind:
    """One kind of research entity and everything derived from it."""

    name: str
    """Ontology class local name and ``type`` value of graph nodes (``Task``)."""
    segment: str
    """URL and IRI path segment, and the ``type`` of the REST API's JSON (``task``)."""
    plural: str
    """JSON key of groups of them and the REST list route (``tasks`` → ``/tasks``)."""
    label: str
    """Human label (``Task``)."""
    colour: str
    """Node colour in exports and the explorer."""
    highlight: str
    """Background of its mentions on HTML pages."""
    linked: str
    """How papers relate to it, for docs: "addressing", "evaluating on"."""
    relations: tuple[Relation, ...]
    """Paper → entity properties, in the order queries list them."""
    rank: int = 100
    """Source order of entity–entity edges in the co-occurrence projection."""

    def relation(self, *, proposed: bool = False) -> Relation:
        """The property linking a paper to an entity of this kind."""
        if proposed:
            for rel in self.relations:
                if rel.proposed:
                    return rel
        return next(rel for rel in self.relations if not rel.proposed)

    def to_json(self) -> dict[str, Any]:
        """This kind as ``GET /schema`` shows it."""
        return {
            "name": self.name,
            "segment": self.segment,
            "plural": self.plural,
            "label": self.label,
            "colour": self.colour,
            "highlight": self.highlight,
            "relations": [
                {
                    "name": r.name,
                    "api": r.api,
                    "key": r.key,
                    "label": r.label,
                    "proposed": r.proposed,
                }
                for r in self.relations
            ],
        }


ENTITY_TYPES: tuple[EntityKind, ...] = (
    EntityKind(
        "Task",
        "task",
        "tasks",
        "Task",
        "#e4572e",
        "#ffe8a3",
        "addressing",
        (Relation("addressesTask", "addresses", "tasks", "Tasks", "addresses"),),
        rank=1,
    ),
    EntityKind(
        "Method",
        "method",
        "methods",
        "Method",
        "#2e86ab",
        "#c8e6ff",
        "proposing or using",
        (
            Relation(
                "proposesMethod",
                "proposes",
                "proposed_methods",
                "Proposed methods",
                "proposes",
                proposed=True,
            ),
            Relation("usesMethod", "uses", "methods", "Methods used", "uses"),
        ),
        rank=0,
    ),
    EntityKind(
        "Dataset",
        "dataset",
        "datasets",
        "Dataset",
        "#3bb273",
        "#d4f5d0",
        "evaluating on",
        (Relation("evaluatesOn", "evaluates_on", "datasets", "Datasets", "evaluates on"),),
        rank=2,
    ),
    EntityKind(
        "Metric",
        "metric",
        "metrics",
        "Metric",
        "#f0a202",
        "#f3d4f5",
        "reporting",
        (Relation("reportsMetric", "reports", "metrics", "Metrics", "reports"),),
        rank=3,
    ),
)
"""The entity types, in the order lists, legends and JSON show them."""

PAIR_PREDICATES: dict[tuple[str, str], str] = {
    ("Method", "Task"): "usedFor",
    ("Method", "Dataset"): "evaluatedOn",
    ("Method", "Metric"): "measuredBy",
    ("Task", "Dataset"): "benchmarkedOn",
    ("Task", "Metric"): "measuredBy",
    ("Dataset", "Metric"): "measuredBy",
}
"""Names of the co-occurrence edges drawn between two entity types (source first);
other pairs are ``coOccursWith``."""

CO_OCCURS = "coOccursWith"


RESULT_ROLES: tuple[str, ...] = ("metric", "dataset", "task", "method")
"""The entities a ``kg:Result`` is tied to, by segment, in the order of the index's
``results`` columns; each is linked by ``kg:result`` + the kind's class name."""

METRIC_DIRECTIONS: dict[str, str] = {}
"""Metric key → ``higher`` or ``lower`` (is better), for comparing results; the
results records fill it (room for them here, so their direction is stated once)."""


@dataclass(frozen=True, slots=True)
class ClaimKindSpec:
    """One kind of claim: its gold-annotation spelling and its ontology individual."""

    name: str
    term: str
    label: str


CLAIM_KIND_SPECS: tuple[ClaimKindSpec, ...] = (
    ClaimKindSpec("contribution", "Contribution", "Contribution"),
    ClaimKindSpec("performance", "Performance", "Performance"),
    ClaimKindSpec("efficiency", "Efficiency", "Efficiency"),
    ClaimKindSpec("theoretical", "Theoretical", "Theoretical"),
    ClaimKindSpec("empirical-finding", "EmpiricalFinding", "Empirical finding"),
)


def _entity_enum(kinds: tuple[EntityKind, ...]) -> type[StrEnum]:
    return StrEnum("EntityType", [(k.name.upper(), k.name) for k in kinds], module=__name__)  # type: ignore[return-value]


def _claim_enum(kinds: tuple[ClaimKindSpec, ...]) -> type[StrEnum]:
    members = [(c.name.upper().replace("-", "_"), c.name) for c in kinds]
    return StrEnum("ClaimKind", members, module=__name__)  # type: ignore[return-value]


if TYPE_CHECKING:
    # The members are made from the tables above; a type checker sees an enum
    # whose members it cannot list.
    class _Members(EnumMeta):
        def __getattr__(cls, name: str) -> Any: ...

    class EntityType(StrEnum, metaclass=_Members):
        """The entity types as an enum (``EntityType.TASK == "Task"``)."""

    class ClaimKind(StrEnum, metaclass=_Members):
        """The claim kinds as an enum; values are the gold annotation's spelling."""

else:
    EntityType = _entity_enum(ENTITY_TYPES)
    ClaimKind = _claim_enum(CLAIM_KIND_SPECS)


def kind(name_or_segment: str) -> EntityKind:
    """The entity kind with this class name, segment or plural (any case)."""
    wanted = name_or_segment.lower()
    for k in ENTITY_TYPES:
        if wanted in (k.name.lower(), k.segment, k.plural):
            return k
    raise KeyError(name_or_segment)


def relations() -> list[tuple[EntityKind, Relation]]:
    """Every paper → entity relation with its entity kind, in schema order."""
    return [(k, r) for k in ENTITY_TYPES for r in k.relations]


def groups() -> list[tuple[EntityKind, Relation]]:
    """The relations in the order of a paper's JSON lists: of each kind, the
    entities the paper uses before those it proposes (``methods``,
    ``proposed_methods``)."""
    return [(k, r) for k in ENTITY_TYPES for r in sorted(k.relations, key=lambda r: r.proposed)]


def to_json() -> dict[str, Any]:
    """The schema as ``GET /schema`` returns it."""
    return {
        "entity_class": ENTITY_CLASS,
        "entity_property": ENTITY_PROPERTY,
        "paper": {"name": "Paper", "label": "Paper", "colour": PAPER_COLOUR},
        "entity_types": [k.to_json() for k in ENTITY_TYPES],
        "metric_directions": dict(METRIC_DIRECTIONS),
        "claim_kinds": [
            {"name": c.name, "term": c.term, "label": c.label} for c in CLAIM_KIND_SPECS
        ],
    }
