"""The named-query registry: every ``queries/**/*.rq`` file, parsed once and run
with typed, validated parameters.

A query file starts with a header of comment lines::

    # title: Papers that mention an entity
    # description: Papers linked to one task, method, dataset or metric.
    # description: (a second description line continues the first)
    # param: entity iri "IRI of the entity"
    # param: prefix string = "" "Only labels starting with this (lower case)"

A parameter is ``NAME TYPE [= DEFAULT] ["DESCRIPTION"]``; TYPE is one of
``iri``, ``string``, ``int``, ``float``, ``bool``. A parameter without a default
is required. Values reach the query only through pyoxigraph ``substitutions``
(never by formatting text), so the query must project each parameter's
variable: pyoxigraph refuses to substitute a variable the SELECT does not
return. ``BOUND(?param)`` is useless for the same reason (the optimiser folds
it to false), so an optional filter uses a sentinel default instead, e.g.
``urn:mlkg:any`` for an IRI or ``""`` for a string.

Queries name the entity types and paper → entity relations through the
ontology, never by listing them: ``?r rdfs:subPropertyOf kg:hasEntity .``,
``?r rdfs:subPropertyOf kg:hasEntity ; rdfs:range ?t .`` and
``?t rdfs:subClassOf kg:ResearchEntity .``. Run as they are (in the SPARQL
editor) they read the ontology graph; the registry replaces each such line by
the equivalent ``VALUES`` block generated from :mod:`kg.schema`
(:func:`expand_schema`), because Oxigraph plans a join on the ontology badly
(``related-entities`` 4–18× slower without; ``benchmarks/schema_queries.py``,
figures in BENCHMARKS.md). A test checks both forms give the same rows.

Files in sub-folders (``queries/store/…``) are internal: loaded and checked like
the others, named ``store/union-graph``, but not listed or run over HTTP.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from typing import Literal as TypingLiteral

from pyoxigraph import Literal, NamedNode, QueryBoolean, QuerySolutions, Store, Variable

from kg import schema
from kg.resources import queries_dir
from kg.store.common import GraphStore, QueryResult, Term

ParamType = TypingLiteral["iri", "string", "int", "float", "bool"]
QueryForm = TypingLiteral["select", "ask", "construct"]

ANY = "urn:mlkg:any"
"""The sentinel IRI that an optional IRI filter defaults to: "no filter"."""

MAX_STRING = 2000
"""Longest string parameter accepted; longer input is a client error, not work."""

MAX_IRI = 2000

_XSD = "http://www.w3.org/2001/XMLSchema#"
_HEADER = re.compile(r"^#\s*(?P<key>[a-z]+)\s*:\s*(?P<value>.*?)\s*$")
_PARAM = re.compile(
    r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s+(?P<type>iri|string|int|float|bool)"
    r"(?:\s*=\s*(?P<default>\"[^\"]*\"|\S+))?"
    r"(?:\s+\"(?P<description>[^\"]*)\")?$"
)
_INT = re.compile(r"^[+-]?[0-9]{1,18}$")
_FLOAT = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?$|^[+-]?INF$")
_IRI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class QueryFileError(Exception):
    """A query file has a bad header or does not parse: fail at start-up."""


class UnknownQuery(LookupError):
    """No named query of that name (or it is internal and was asked for publicly)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no named query {name!r}")
        self.name = name


class ParameterError(ValueError):
    """A parameter is missing, unknown or not of its declared type."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(f"parameter {parameter!r}: {message}")
        self.parameter = parameter
        self.message = message


@dataclass(frozen=True, slots=True)
class Param:
    """One declared parameter of a named query."""

    name: str
    type: ParamType
    description: str = ""
    default: str | None = None

    @property
    def required(self) -> bool:
        """A parameter without a default must be given."""
        return self.default is None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "description": self.description,
            "required": self.required,
            "default": self.default,
        }


@dataclass(frozen=True, slots=True)
class NamedQuery:
    """A parsed ``.rq`` file."""

    name: str
    title: str
    description: str
    params: tuple[Param, ...]
    sparql: str
    path: Path
    form: QueryForm
    internal: bool

    def param(self, name: str) -> Param | None:
        """The declared parameter of that name, if any."""
        return next((p for p in self.params if p.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "form": self.form,
            "parameters": [p.to_json() for p in self.params],
        }


def convert(param: Param, raw: object) -> Term:
    """One parameter value (a string from a URL, or a Python value) as an RDF term.

    Raises :class:`ParameterError` naming the parameter when the value does not fit.
    """
    if param.type == "iri":
        return _iri(param.name, raw)
    if isinstance(raw, Literal | NamedNode):
        raw = raw.value
    if param.type == "string":
        if not isinstance(raw, str):
            raise ParameterError(param.name, "must be text")
        if len(raw) > MAX_STRING:
            raise ParameterError(param.name, f"is longer than {MAX_STRING} characters")
        return Literal(raw)
    if param.type == "int":
        if isinstance(raw, bool) or not isinstance(raw, int | str):
            raise ParameterError(param.name, "must be an integer")
        text = str(raw).strip()
        if not _INT.match(text):
            raise ParameterError(param.name, f"must be an integer, got {_show(text)}")
        return Literal(str(int(text)), datatype=NamedNode(_XSD + "integer"))
    if param.type == "float":
        if isinstance(raw, bool) or not isinstance(raw, int | float | str):
            raise ParameterError(param.name, "must be a number")
        if isinstance(raw, str):
            text = raw.strip()
            if not _FLOAT.match(text):
                raise ParameterError(param.name, f"must be a number, got {_show(text)}")
            value = float(text)
        else:
            value = float(raw)
        if math.isnan(value):
            raise ParameterError(param.name, "must be a number, not NaN")
        return Literal(_double_lexical(value), datatype=NamedNode(_XSD + "double"))
    # bool
    text = str(raw).strip().lower()
    if text in {"true", "1", "yes"}:
        return Literal("true", datatype=NamedNode(_XSD + "boolean"))
    if text in {"false", "0", "no"}:
        return Literal("false", datatype=NamedNode(_XSD + "boolean"))
    raise ParameterError(param.name, f"must be true or false, got {_show(text)}")


def _iri(name: str, raw: object) -> NamedNode:
    if isinstance(raw, NamedNode):
        return raw
    if not isinstance(raw, str):
        raise ParameterError(name, "must be an IRI")
    if len(raw) > MAX_IRI:
        raise ParameterError(name, f"is longer than {MAX_IRI} characters")
    if not _IRI_SCHEME.match(raw):
        raise ParameterError(name, f"must be an absolute IRI, got {_show(raw)}")
    try:
        return NamedNode(raw)
    except ValueError as exc:
        raise ParameterError(name, f"is not a valid IRI: {exc}") from None


def _double_lexical(value: float) -> str:
    if math.isinf(value):
        return "INF" if value > 0 else "-INF"
    return repr(value)


def _show(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "…")


def _dummy(param: Param) -> Term:
    return {
        "iri": NamedNode(ANY),
        "string": Literal(""),
        "int": Literal("0", datatype=NamedNode(_XSD + "integer")),
        "float": Literal("0.0", datatype=NamedNode(_XSD + "double")),
        "bool": Literal("false", datatype=NamedNode(_XSD + "boolean")),
    }[param.type]


_SUB_PROPERTY = re.compile(
    r"^(?P<indent>\s*)\?(?P<rel>\w+)\s+rdfs:subPropertyOf\s+kg:"
    + schema.ENTITY_PROPERTY
    + r"\s*(?:;\s*rdfs:range\s+\?(?P<type>\w+)\s*)?\.\s*$",
    re.MULTILINE,
)
_SUB_CLASS = re.compile(
    r"^(?P<indent>\s*)\?(?P<type>\w+)\s+rdfs:subClassOf\s+kg:" + schema.ENTITY_CLASS + r"\s*\.\s*$",
    re.MULTILINE,
)


def expand_schema(sparql: str) -> str:
    """The query with its schema look-ups (see the module's docstring) replaced by
    ``VALUES`` blocks listing :mod:`kg.schema`'s types and relations."""

    def relations(m: re.Match[str]) -> str:
        if m["type"]:
            rows = " ".join(f"(kg:{k.name} kg:{r.name})" for k, r in schema.relations())
            return f"{m['indent']}VALUES (?{m['type']} ?{m['rel']}) {{ {rows} }}"
        names = " ".join(f"kg:{r.name}" for _, r in schema.relations())
        return f"{m['indent']}VALUES ?{m['rel']} {{ {names} }}"

    def classes(m: re.Match[str]) -> str:
        names = " ".join(f"kg:{k.name}" for k in schema.ENTITY_TYPES)
        return f"{m['indent']}VALUES ?{m['type']} {{ {names} }}"

    return _SUB_CLASS.sub(classes, _SUB_PROPERTY.sub(relations, sparql))


def parse_file(path: Path, name: str, *, internal: bool = False) -> NamedQuery:
    """Read and check one ``.rq`` file; raises :class:`QueryFileError` when it is bad."""
    text = expand_schema(path.read_text(encoding="utf-8"))
    fields: dict[str, list[str]] = {"title": [], "description": [], "param": []}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break  # the header ends at the first line of SPARQL
        match = _HEADER.match(stripped)
        if match and match["key"] in fields:
            fields[match["key"]].append(match["value"])
    # Public queries are documentation too: they need a title. Internal ones
    # (sub-folders) are only checked for parsing.
    if len(fields["title"]) > 1 or (not internal and not fields["title"]):
        raise QueryFileError(f"{path}: needs exactly one '# title:' line")
    params: list[Param] = []
    for spec in fields["param"]:
        m = _PARAM.match(spec)
        if not m:
            raise QueryFileError(f"{path}: bad '# param:' line {spec!r}")
        default = m["default"]
        if default is not None and default.startswith('"'):
            default = default[1:-1]
        param = Param(m["name"], m["type"], m["description"] or "", default)  # type: ignore[arg-type]
        if not re.search(rf"[?$]{param.name}\b", text):
            raise QueryFileError(f"{path}: parameter {param.name!r} is not a variable of the query")
        if default is not None:
            try:
                convert(param, default)
            except ParameterError as exc:
                raise QueryFileError(f"{path}: bad default: {exc}") from None
        params.append(param)
    # Run it once on an empty store with a value for every parameter: this
    # parses it and checks that pyoxigraph accepts each substitution.
    try:
        result = Store().query(
            text,
            use_default_graph_as_union=True,
            substitutions={Variable(p.name): _dummy(p) for p in params} or None,
        )
    except (SyntaxError, ValueError, RuntimeError, OSError) as exc:
        raise QueryFileError(f"{path}: {exc}") from None
    if isinstance(result, QuerySolutions):
        form: QueryForm = "select"
    elif isinstance(result, QueryBoolean):
        form = "ask"
    else:
        form = "construct"
    return NamedQuery(
        name=name,
        title=fields["title"][0] if fields["title"] else name,
        description=" ".join(fields["description"]),
        params=tuple(params),
        sparql=text,
        path=path,
        form=form,
        internal=internal,
    )


class QueryRegistry:
    """All named queries of a directory, checked when the registry is built."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or queries_dir()
        self._queries: dict[str, NamedQuery] = {}
        for path in sorted(self.directory.rglob("*.rq")):
            rel = path.relative_to(self.directory).with_suffix("")
            name = rel.as_posix()
            self._queries[name] = parse_file(path, name, internal=len(rel.parts) > 1)
        if not self._queries:
            raise QueryFileError(f"no .rq files in {self.directory}")

    def __contains__(self, name: object) -> bool:
        return name in self._queries

    def __len__(self) -> int:
        return len(self._queries)

    def get(self, name: str, *, public: bool = False) -> NamedQuery:
        """The query of that name; with ``public``, internal queries are not found."""
        query = self._queries.get(name)
        if query is None or (public and query.internal):
            raise UnknownQuery(name)
        return query

    def public(self) -> list[NamedQuery]:
        """The queries offered over HTTP, by name."""
        return [q for q in self._queries.values() if not q.internal]

    def all(self) -> list[NamedQuery]:
        """Every query, internal ones too."""
        return list(self._queries.values())

    def bind(
        self, name: str, params: Mapping[str, object], *, strict: bool = True
    ) -> dict[str, Term]:
        """Validated substitutions for a query: defaults filled, each value converted.

        ``strict``: a parameter the query does not declare is an error.
        """
        query = self.get(name)
        if strict:
            for key in params:
                if query.param(key) is None:
                    raise ParameterError(key, f"is not a parameter of query {name!r}")
        bound: dict[str, Term] = {}
        for param in query.params:
            raw = params.get(param.name)
            if raw is None:
                if param.default is None:
                    raise ParameterError(param.name, "is required")
                raw = param.default
            bound[param.name] = convert(param, raw)
        return bound

    def run(
        self,
        store: GraphStore,
        name: str,
        params: Mapping[str, object] | None = None,
        *,
        strict: bool = True,
    ) -> QueryResult:
        """Run a named query with validated parameters bound by substitution."""
        query = self.get(name)
        substitutions = self.bind(name, params or {}, strict=strict)
        return store.query(query.sparql, substitutions=substitutions or None)


@lru_cache(maxsize=1)
def default_registry() -> QueryRegistry:
    """The registry of the project's ``queries/`` directory (built once; immutable)."""
    return QueryRegistry()


def run(store: GraphStore, name: str, params: Mapping[str, object] | None = None) -> QueryResult:
    """Run a named query of the project's registry."""
    return default_registry().run(store, name, params)


def rows(result: QueryResult) -> list[dict[str, Term]]:
    """SELECT solutions as dicts of bound variables (unbound ones left out)."""
    if not isinstance(result, QuerySolutions):
        raise TypeError("rows() needs the result of a SELECT query")
    names = [v.value for v in result.variables]
    out: list[dict[str, Term]] = []
    for solution in result:
        row: dict[str, Term] = {}
        for key in names:
            value = solution[key]
            if value is not None:
                row[key] = value
        out.append(row)
    return out
