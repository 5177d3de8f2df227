"""Named queries run, their terms turned into JSON values, and the references
(``iri``, ``type``, ``key``, ``label``, ``href``) every list is made of."""

from __future__ import annotations

import re
from itertools import islice
from typing import Any
from urllib.parse import quote, unquote

from pyoxigraph import Literal, NamedNode, QuerySolutions

from kg import schema
from kg.store.embedded import GraphStore, QueryResult
from kg.store.queries import ParameterError, default_registry
from kg.vocab import CLAIM_KINDS, ID_PREFIX, KG

MAX_PAGE = 200
MAX_OFFSET = 1_000_000
MAX_FILTER = 500
"""Longest entity filter or search text accepted (longer is a client error, not a scan)."""

TYPES: dict[str, NamedNode] = {k.segment: KG[k.name] for k in schema.ENTITY_TYPES}
"""URL segment (``task``) → ontology class."""
TYPE_NAME = {cls.value: name for name, cls in TYPES.items()}
"""Ontology class IRI → URL segment."""

RELATIONS: dict[str, str] = {KG[r.name].value: r.api for _, r in schema.relations()}
"""Paper → entity property → the name the API gives it."""

GROUPS: dict[str, str] = {KG[r.name].value: r.key for _, r in schema.groups()}
"""Paper → entity property → the key of a paper's list of such entities."""

KIND_NAME = {iri.value: name for name, iri in CLAIM_KINDS.items()}
PAPER_PREFIX = ID_PREFIX + "paper/"
_ABSOLUTE = re.compile(r"^(https?|urn):", re.IGNORECASE)


class ReadError(ValueError):
    """A value a client gave does not fit its parameter."""

    def __init__(self, parameter: str, message: str, *, where: str = "query") -> None:
        super().__init__(f"invalid parameter: {parameter}: {message}")
        self.parameter = parameter
        self.message = message
        self.where = where


def run(store: GraphStore, name: str, **params: object) -> QueryResult:
    """Run a named query; a parameter value that does not fit is a :class:`ReadError`."""
    try:
        return default_registry().run(store, name, params)
    except ParameterError as exc:
        raise ReadError(exc.parameter, exc.message) from None


def solutions(store: GraphStore, name: str, **params: object) -> QuerySolutions:
    """The solutions of a named SELECT query."""
    result = run(store, name, **params)
    assert isinstance(result, QuerySolutions)
    return result


def first(store: GraphStore, name: str, **params: object) -> Any:
    """The first solution of a named SELECT query, or None."""
    return next(iter(solutions(store, name, **params)), None)


def py(term: object) -> Any:
    """An RDF term as a plain Python value (numbers typed, IRIs as strings)."""
    if term is None:
        return None
    if isinstance(term, Literal):
        dt = term.datatype.value.rsplit("#", 1)[-1]
        try:
            if dt in {"integer", "int", "long", "gYear"}:
                return int(term.value)
            if dt in {"double", "decimal", "float"}:
                return float(term.value)
        except ValueError:
            return term.value
        if dt == "boolean":
            return term.value == "true"
        return term.value
    return getattr(term, "value", str(term))


def is_absolute(value: str) -> bool:
    """Whether a filter value is written as an IRI."""
    return bool(_ABSOLUTE.match(value))


def entity_key(iri: str) -> tuple[str, str] | None:
    """``(type, key)`` of an entity IRI of this graph, or None for other IRIs."""
    if not iri.startswith(ID_PREFIX):
        return None
    kind, _, key = iri[len(ID_PREFIX) :].partition("/")
    if kind not in TYPES or not key:
        return None
    return kind, unquote(key)


def entity_href(iri: str) -> str:
    """The entity's REST resource."""
    found = entity_key(iri)
    if found is None:
        return "/entities?iri=" + quote(iri, safe="")
    return f"/entities/{found[0]}/{quote(found[1], safe='')}"


def paper_href(paper_id: str) -> str:
    """The paper's REST resource."""
    return "/papers/" + quote(paper_id, safe="")


def entity_ref(iri: str, type_iri: object, label: object) -> dict[str, Any]:
    """An entity in a list: IRI, type, key, label and REST link."""
    found = entity_key(iri)
    type_name = TYPE_NAME.get(py(type_iri) or "", found[0] if found else "")
    return {
        "iri": iri,
        "type": type_name,
        "key": found[1] if found else iri,
        "label": py(label),
        "href": entity_href(iri),
    }


def paper_summary(paper: object, title: object, pid: object = None) -> dict[str, Any]:
    """A paper in a list; its id is read from its IRI unless given."""
    iri = py(paper)
    paper_id = py(pid) if pid is not None else paper_id_of(iri)
    return {"iri": iri, "id": paper_id, "title": py(title), "href": paper_href(paper_id)}


def paper_id_of(iri: str) -> str:
    """The id of a paper from its IRI (``kg.vocab.paper_iri`` percent-encodes it)."""
    return unquote(iri[len(PAPER_PREFIX) :]) if iri.startswith(PAPER_PREFIX) else iri


def take(result: QuerySolutions, offset: int, limit: int) -> list[Any]:
    """The solutions of one page, pulling no more rows than needed: the store
    evaluates lazily, so a first page of a long unsorted list is cheap."""
    return list(islice(result, offset, offset + limit))


def count(store: GraphStore, name: str, *, var: str = "papers", **params: object) -> int:
    """The single number a counting query returns (its ``var`` variable)."""
    row = first(store, name, **params)
    return int(py(row[var])) if row is not None else 0


def slice_solutions(
    result: QuerySolutions, offset: int, limit: int, *, key: str | None = None
) -> tuple[int, list[Any]]:
    """Count every solution but keep only those of the page (cheap for long lists).

    ``key``: a variable whose repeats in consecutive solutions count once."""
    total = 0
    kept: list[Any] = []
    last = None
    for solution in result:
        if key is not None:
            value = solution[key]
            if value == last:
                continue
            last = value
        if offset <= total < offset + limit:
            kept.append(solution)
        total += 1
    return total, kept


def check_text(name: str, value: str | None) -> str | None:
    """A text parameter stripped, or a :class:`ReadError` when it is empty or has a NUL."""
    if value is None:
        return None
    if not value.strip():
        raise ReadError(name, "is empty")
    if "\x00" in value:
        raise ReadError(name, "contains a NUL character")
    return value.strip()


def entity_counts(rows: list[Any], var: str = "entity") -> list[dict[str, Any]]:
    """Entity references with their ``papers`` count, from query solutions."""
    return [
        {**entity_ref(s[var].value, s["type"], s["label"]), "papers": py(s["papers"])} for s in rows
    ]


def with_labels(store: GraphStore, rows: list[Any], var: str = "entity") -> list[dict[str, Any]]:
    """Entity counts for rows without labels: each label is looked up (a page only)."""
    items = []
    for s in rows:
        iri = s[var].value
        head = first(store, "entity", entity=iri)
        label = head["label"] if head is not None else None
        items.append({**entity_ref(iri, s["type"], label), "papers": py(s["papers"])})
    return items
