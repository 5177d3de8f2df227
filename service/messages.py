"""The messages between the service and its query worker processes, as types.

The parent sends a :class:`QueryRequest`; a worker answers :class:`Ready` (or
:class:`StartFailed`) once when it starts, then one :class:`Answer` or
:class:`Failure` per request. They travel pickled in length-prefixed frames
(:mod:`service.worker`); this module imports nothing of pyoxigraph or the web
framework, so both sides load it cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class QueryRequest:
    """One SPARQL query to evaluate, with the result formats chosen for each kind."""

    query: str
    base_iri: str | None
    default_graph: tuple[str, ...] | None
    named_graphs: tuple[str, ...] | None
    limit: int
    """Most rows (SELECT) or triples (CONSTRUCT/DESCRIBE); more is a ``too_many`` failure."""
    select_format: str | None
    ask_format: str | None
    graph_format: str | None
    prefixes: dict[str, str] = field(default_factory=dict, compare=False)
    path: str = ""
    """The store directory to read (set by the pool: the store or a checkpoint)."""
    generation: int = 0
    """The store generation ``path`` holds (set by the pool)."""

    def at(self, path: str, generation: int) -> QueryRequest:
        """This request, to be read from ``path`` at ``generation``."""
        return replace(self, path=path, generation=generation)

    def cache_key(self, generation: int) -> tuple[Any, ...]:
        """What decides the answer, at a store generation (for the result cache)."""
        return (
            generation,
            self.query,
            self.base_iri,
            self.default_graph,
            self.named_graphs,
            self.select_format,
            self.ask_format,
            self.graph_format,
            self.limit,
        )


@dataclass(frozen=True, slots=True)
class UpdateTrial:
    """A SPARQL update to run on ``copy``, a private checkpoint of the store, to learn
    whether it finishes in time (the live store is written only after it does)."""

    query: str
    base_iri: str | None
    copy: str

    def at(self, path: str, generation: int) -> UpdateTrial:
        """The trial reads its own copy, whatever the store's generation."""
        return self


@dataclass(frozen=True, slots=True)
class Answer:
    """The serialized result."""

    media_type: str
    body: bytes


@dataclass(frozen=True, slots=True)
class Failure:
    """Why there is no result: ``kind`` is ``syntax``, ``evaluation``, ``store``,
    ``not_acceptable`` (``detail``: the result kind) or ``too_many`` (the limit)."""

    kind: str
    detail: Any


@dataclass(frozen=True, slots=True)
class Ready:
    """A worker opened the store and waits for requests."""

    pid: int


@dataclass(frozen=True, slots=True)
class StartFailed:
    """A worker could not open the store."""

    message: str


@dataclass(frozen=True, slots=True)
class Reopen:
    """Open ``path``, the store as of ``generation``, before the next query needs it;
    the worker answers an empty :class:`Answer`."""

    path: str
    generation: int
