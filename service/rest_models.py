"""Response models of the REST API: they make the JSON shapes part of the
OpenAPI description (``/openapi.json``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, create_model

from kg import schema


class EntityRef(BaseModel):
    """A research entity (``GET /schema`` lists the types)."""

    iri: str
    type: str = Field(description="The type's URL segment (GET /schema lists them)")
    key: str
    label: str | None = None
    href: str = Field(description="This entity in the REST API")


class EntityCount(EntityRef):
    """An entity with the number of papers linked to it."""

    papers: int


class MentionOut(BaseModel):
    """A span of the abstract: ``abstract[start:end] == text``."""

    text: str
    start: int
    end: int


class PaperEntity(EntityRef):
    """An entity of one paper, with where the abstract names it."""

    confidence: float | None = None
    mentions: list[MentionOut] = []


class SentenceOut(BaseModel):
    """The sentence a claim is in, with its offsets into the abstract."""

    text: str
    start: int
    end: int


class ValueOut(BaseModel):
    """A number a claim states."""

    text: str
    number: float | None = None
    unit: str | None = None
    start: int | None = None
    end: int | None = None


class ClaimOut(BaseModel):
    """A claim of a paper; offsets are into the paper's abstract."""

    iri: str
    text: str
    start: int
    end: int
    kind: str | None
    confidence: float | None = None
    sentence: SentenceOut | None = None
    subject: str | None = None
    subject_iri: str | None = None
    metric: str | None = None
    metric_iri: str | None = None
    dataset: str | None = None
    dataset_iri: str | None = None
    baseline: str | None = None
    baseline_iri: str | None = None
    values: list[ValueOut] = []


class PaperSummary(BaseModel):
    """A paper in a list."""

    id: str
    iri: str
    title: str | None = None
    href: str = Field(description="This paper in the REST API")


class ClaimWithPaper(ClaimOut):
    """A claim with the paper that makes it."""

    paper: PaperSummary


class _PaperBase(BaseModel):
    id: str = Field(description="The paper's id: the hash of its abstract")
    source_id: str | None = Field(None, description="The id its source file gave it, if any")
    iri: str
    title: str | None = None
    abstract: str
    year: int | None = None
    venue: str | None = None
    url: str | None = None
    authors: list[str] = []
    keywords: list[str] = []
    extractor_version: str | None = None


PaperDetail = create_model(  # type: ignore[call-overload]
    "PaperDetail",
    __base__=_PaperBase,
    __doc__="Everything the graph holds about a paper; keys as in ``kg extract`` output.",
    **{r.key: (list[PaperEntity], []) for _, r in schema.groups()},
    claims=(list[ClaimOut], []),
)


class Page(BaseModel):
    """Paging of a list: ``next`` is the URL of the following page, when there is one."""

    total: int
    limit: int
    offset: int
    next: str | None = None
    previous: str | None = None


class PaperPage(Page):
    filters: dict[str, str | None] = Field(
        default={}, description="Each entity filter as given → the IRI it resolved to (null: none)"
    )
    items: list[PaperSummary]


class EntityPage(Page):
    items: list[EntityCount]


class ClaimPage(Page):
    filters: dict[str, str | None] = {}
    items: list[ClaimWithPaper]


class EntityPaper(PaperSummary):
    """A paper of an entity, with how it relates to the entity."""

    relations: list[str]


Related = create_model(  # type: ignore[call-overload]
    "Related",
    __doc__="Entities that share papers with an entity, most shared first.",
    **{k.plural: (list[EntityCount], []) for k in schema.ENTITY_TYPES},
)


class EntityDetail(EntityRef):
    """An entity with its aliases, papers and related entities."""

    aliases: list[str] = []
    paper_count: int
    papers: list[EntityPaper]
    related: Related  # type: ignore[valid-type]
    broader: list[EntityRef] | None = Field(
        None,
        description="Tasks and methods: the nodes directly broader (skos:broader); "
        "a method's only where a paper's text says so",
    )
    narrower: list[EntityRef] | None = Field(
        None,
        description="Tasks and methods: the nodes directly narrower (skos:narrower)",
    )


class SearchEntity(EntityCount):
    matched: str = Field(description="The label or alias that matched")


class SearchResult(BaseModel):
    q: str
    entities: list[SearchEntity]
    papers: list[PaperSummary]


class Stats(BaseModel):
    counts: dict[str, int] = Field(description="Papers, entities of each type, claims")
    top_tasks: list[EntityCount]
    top_methods: list[EntityCount]


class ParameterInfo(BaseModel):
    name: str
    type: str
    description: str
    required: bool
    default: str | None = None


class QueryInfo(BaseModel):
    name: str
    title: str
    description: str
    form: str = Field(description="select, ask or construct")
    parameters: list[ParameterInfo]
    href: str


class RecordResult(BaseModel):
    """What happened to one record of a ``POST /papers`` body."""

    record: int = Field(description="1-based position in the request")
    id: str | None = Field(None, description="The paper's id: the hash of its abstract")
    source_id: str | None = Field(None, description="The id the record gave, if any")
    status: str = Field(
        description="added, updated, unchanged, duplicate, rejected (bad record) or failed "
        "(the extractor failed on it: a server-side error, logged)"
    )
    reason: str | None = None
    href: str | None = None
    extraction: dict[str, Any] | None = Field(
        default=None, description="What was extracted (the `kg extract` JSON), for added/updated"
    )


class IngestResponse(BaseModel):
    added: int
    updated: int
    unchanged: int
    duplicates: int
    rejected: int
    results: list[RecordResult]
