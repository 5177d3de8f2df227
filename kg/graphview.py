"""Graphs to look at: the store's papers and entities as a networkx graph.

Everything here is read through the named queries in ``queries/graph/*.rq``
(values bound with substitutions, never formatted into SPARQL). One call,
:func:`build_graph`, serves the REST ``GET /graph``, ``kg graph`` and the
explorer page, and :mod:`kg.exporters` writes its result in each format.

Two projections of the same data:

``bipartite``
    papers and entities as nodes; an edge ``paper → entity`` for each
    ``kg:addressesTask``, ``kg:proposesMethod``, ``kg:usesMethod``,
    ``kg:evaluatesOn`` and ``kg:reportsMetric`` (the predicate IRI is the
    edge's ``predicate``; its weight is 1, its supporting paper the paper).
``entity``
    entities only; an edge between two entities named by the same paper,
    weighted by the number of such papers. The edge's ``predicate`` names the
    kind of pair (``usedFor`` for method → task, ``evaluatedOn`` for method →
    dataset, ``measuredBy`` for … → metric, ``benchmarkedOn`` for task →
    dataset, ``coOccursWith`` otherwise). These are co-occurrence relations
    derived for drawing, not ontology properties.

Node attributes: ``iri`` (also the node key), ``label`` (clean text), ``type``
(``Paper``, ``Task``, ``Method``, ``Dataset``, ``Metric``), ``paper_count``
(papers linked to the entity; 1 for a paper), ``aliases`` (entities). Edge
attributes: ``predicate``, ``weight`` (supporting papers), ``papers`` (their
IRIs). Graph attributes say what was drawn and whether the node limit cut it
(``truncated``, ``total_nodes``).
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import Any
from typing import Literal as TypingLiteral

import networkx as nx
from pyoxigraph import Literal, NamedNode

from kg.queries import NamedQuery, default_registry
from kg.store import GraphStore
from kg.vocab import ID_PREFIX, paper_iri

NODE_TYPES: tuple[str, ...] = ("Paper", "Task", "Method", "Dataset", "Metric")
"""Node types, in the order legends and tables list them."""

ENTITY_TYPES = NODE_TYPES[1:]
Projection = TypingLiteral["bipartite", "entity"]
PROJECTIONS: tuple[str, ...] = ("bipartite", "entity")
MAX_DEPTH = 3

# Direction and name of an entity–entity edge, by the types of its ends. The
# lower rank is the source: methods point at tasks, datasets and metrics.
_RANK = {"Method": 0, "Task": 1, "Dataset": 2, "Metric": 3}
_PAIR_PREDICATE = {
    ("Method", "Task"): "usedFor",
    ("Method", "Dataset"): "evaluatedOn",
    ("Method", "Metric"): "measuredBy",
    ("Task", "Dataset"): "benchmarkedOn",
    ("Task", "Metric"): "measuredBy",
    ("Dataset", "Metric"): "measuredBy",
}
CO_OCCURS = "coOccursWith"


class GraphViewError(ValueError):
    """A graph request that cannot be answered; ``param`` names the culprit."""

    def __init__(self, message: str, *, param: str, status: int = 422) -> None:
        super().__init__(message)
        self.param = param
        self.status = status


class FocusNotFound(GraphViewError):
    """The focus names no paper or entity in the store."""

    def __init__(self, focus: str) -> None:
        super().__init__(f"no paper or entity {focus!r} in the graph", param="focus", status=404)


@dataclass(frozen=True, slots=True)
class GraphRequest:
    """What to draw. Validated on construction, so every entry point gets the same errors."""

    focus: str | None = None
    depth: int = 1
    types: frozenset[str] = frozenset(NODE_TYPES)
    min_support: int = 1
    limit: int | None = None
    projection: Projection = "bipartite"

    def __post_init__(self) -> None:
        if not 1 <= self.depth <= MAX_DEPTH:
            raise GraphViewError(f"depth must be 1 to {MAX_DEPTH}", param="depth")
        unknown = set(self.types) - set(NODE_TYPES)
        if unknown:
            raise GraphViewError(
                f"unknown node type(s) {', '.join(sorted(unknown))}; "
                f"known: {', '.join(NODE_TYPES)}",
                param="types",
            )
        if not self.types:
            raise GraphViewError("give at least one node type", param="types")
        if self.min_support < 1:
            raise GraphViewError("min_support must be at least 1", param="min_support")
        if self.limit is not None and self.limit < 1:
            raise GraphViewError("limit must be at least 1", param="limit")
        if self.projection not in PROJECTIONS:
            raise GraphViewError(
                f"projection must be one of {', '.join(PROJECTIONS)}", param="projection"
            )


def parse_types(value: str | Iterable[str] | None) -> frozenset[str]:
    """``"Task,method"`` → ``{"Task", "Method"}``; case-insensitive, empty means all."""
    if value is None:
        return frozenset(NODE_TYPES)
    parts = value.split(",") if isinstance(value, str) else list(value)
    names = [p.strip() for p in parts if p.strip()]
    if not names:
        return frozenset(NODE_TYPES)
    by_lower = {t.lower(): t for t in NODE_TYPES}
    return frozenset(by_lower.get(n.lower(), n) for n in names)


# ------------------------------------------------------------------ queries


def named_query(name: str) -> NamedQuery:
    """``queries/graph/{name}.rq`` from the project's query registry (parsed at start-up)."""
    return default_registry().get(f"graph/{name}")


def run(store: GraphStore, name: str, **bindings: NamedNode | Literal) -> list[dict[str, str]]:
    """Run a named graph query; each row as ``{variable: value}`` (unbound ones left out).

    Bindings go in as pyoxigraph substitutions. They are the internal
    callers' own terms, so optional ones (``node`` on ``entities``) need no
    declaration in the query header."""
    query = named_query(name)
    solutions = store.query(query.sparql, substitutions=dict(bindings) or None)
    names = [v.value for v in solutions.variables]
    return [
        {n: term.value for n, term in zip(names, row, strict=True) if term is not None}
        for row in solutions
    ]


# ------------------------------------------------------------------ labels


def local_name(iri: str) -> str:
    """``https://w3id.org/mlkg/ontology#Task`` → ``Task``."""
    return re.split(r"[#/]", iri)[-1]


def clean_text(text: str) -> str:
    """Text without LaTeX markup and with folded whitespace, for labels."""
    try:
        from kg.latex import clean_label
    except ImportError:  # pragma: no cover - the LaTeX module ships with kg
        return re.sub(r"\s+", " ", re.sub(r"[$\\{}]", "", text)).strip()
    return clean_label(text)


def paper_label(title: str | None, snippet: str | None, paper_id: str, width: int = 60) -> str:
    """A paper's title, or the start of its abstract cut at a word, or its id."""
    if title:
        return clean_text(title)
    if snippet:
        text = clean_text(snippet)
        if len(text) <= width:
            return text
        cut = text[:width].rsplit(" ", 1)[0].rstrip(",;:.")
        return cut + "…"
    return paper_id


# ------------------------------------------------------------------ building


@dataclass(slots=True)
class _Data:
    """Everything the projections need, read once per request."""

    edges: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    """(paper, entity) → predicates."""
    papers_of: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    entities_of: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)


def _read(store: GraphStore) -> _Data:
    data = _Data()
    for row in run(store, "edges"):
        paper, entity = row["paper"], row["entity"]
        data.edges.setdefault((paper, entity), set()).add(row["predicate"])
        data.papers_of[entity].add(paper)
        data.entities_of[paper].add(entity)
    for row in run(store, "papers"):
        iri = row["node"]
        pid = row.get("id") or local_name(iri)
        data.nodes[iri] = {
            "iri": iri,
            "label": paper_label(row.get("title"), row.get("snippet"), pid),
            "type": "Paper",
            "paper_count": 1,
            "aliases": "",
        }
    aliases: dict[str, list[str]] = defaultdict(list)
    for row in run(store, "aliases"):
        aliases[row["node"]].append(clean_text(row["alias"]))
    for row in run(store, "entities"):
        iri = row["node"]
        if iri not in data.papers_of or iri in data.nodes:
            continue  # entities named only by claims are not drawn; one type per node
        label = clean_text(row.get("label") or "") or local_name(iri)
        data.nodes[iri] = {
            "iri": iri,
            "label": label,
            "type": local_name(row["type"]),
            "paper_count": len(data.papers_of[iri]),
            "aliases": "; ".join(sorted({a for a in aliases[iri] if a and a != label})),
        }
    return data


def _bipartite(data: _Data) -> nx.DiGraph:
    graph = nx.DiGraph()
    for iri, attrs in data.nodes.items():
        graph.add_node(iri, **attrs)
    for (paper, entity), predicates in data.edges.items():
        if paper in data.nodes and entity in data.nodes:
            graph.add_edge(paper, entity, predicate=" ".join(sorted(predicates)),
                           weight=1, papers=[paper])
    return graph


def _entity(data: _Data) -> nx.DiGraph:
    graph = nx.DiGraph()
    for iri, attrs in data.nodes.items():
        if attrs["type"] != "Paper":
            graph.add_node(iri, **attrs)
    support: dict[tuple[str, str], set[str]] = defaultdict(set)
    for paper, entities in data.entities_of.items():
        present = sorted(e for e in entities if e in graph)
        for a, b in itertools.combinations(present, 2):
            support[_oriented(graph, a, b)].add(paper)
    for (a, b), papers in support.items():
        ta, tb = graph.nodes[a]["type"], graph.nodes[b]["type"]
        graph.add_edge(a, b, predicate=_PAIR_PREDICATE.get((ta, tb), CO_OCCURS),
                       weight=len(papers), papers=sorted(papers))
    return graph


def _oriented(graph: nx.DiGraph, a: str, b: str) -> tuple[str, str]:
    ra, rb = _RANK[graph.nodes[a]["type"]], _RANK[graph.nodes[b]["type"]]
    return (a, b) if (ra, a) <= (rb, b) else (b, a)


def resolve_focus(store: GraphStore, focus: str, known: Container[str] | None = None) -> str:
    """The IRI a focus names: an IRI, ``task/unlearning``, a paper id, or an entity key.

    ``known`` holds the IRIs of the drawable nodes; without it, each candidate
    is looked up in the store.
    """
    focus = focus.strip()
    candidates: list[str] = []
    if focus.startswith(("http://", "https://")):
        candidates.append(focus)
    elif focus:
        candidates.append(ID_PREFIX + focus)  # "task/unlearning", "paper/abc"
        candidates.append(paper_iri(focus).value)
        candidates.extend(f"{ID_PREFIX}{t.lower()}/{focus}" for t in ENTITY_TYPES)
    for iri in candidates:
        if known is not None:
            if iri in known:
                return iri
        else:
            node = NamedNode(iri)
            if run(store, "papers", node=node) or run(store, "entities", node=node):
                return iri
    raise FocusNotFound(focus)


def build_graph(store: GraphStore, request: GraphRequest | None = None) -> nx.DiGraph:
    """The graph a request asks for, ready for :mod:`kg.exporters`."""
    request = request or GraphRequest()
    data = _read(store)
    full = _bipartite(data) if request.projection == "bipartite" else _entity(data)
    focus = resolve_focus(store, request.focus, full.nodes) if request.focus else None

    graph = _filter(full, request, focus)
    distance: dict[str, int] = {}
    if focus is not None:
        distance = nx.single_source_shortest_path_length(
            graph.to_undirected(as_view=True), focus, cutoff=request.depth
        )
        graph = graph.subgraph(distance).copy()
    if request.min_support > 1:
        # Nodes that lost every edge to the support threshold are noise, not findings.
        graph.remove_nodes_from([n for n in list(graph) if graph.degree(n) == 0 and n != focus])

    total = graph.number_of_nodes()
    truncated = request.limit is not None and total > request.limit
    if truncated:
        # Nearest to the focus first, then the most supported: an entity by the
        # papers behind it, a paper by the entities it names (every paper has
        # one paper behind it, so ranking papers by that would drop them all).
        def support(n: str) -> int:
            attrs = graph.nodes[n]
            return graph.degree(n) if attrs["type"] == "Paper" else attrs["paper_count"]

        ranked = sorted(
            graph.nodes, key=lambda n: (distance.get(n, 0), -support(n), -graph.degree(n), n)
        )
        graph = graph.subgraph(ranked[: request.limit]).copy()

    graph.graph.update(
        {
            "name": "mlkg",
            "projection": request.projection,
            "focus": focus or "",
            "depth": request.depth if focus else 0,
            "types": ",".join(t for t in NODE_TYPES if t in request.types),
            "min_support": request.min_support,
            "node_limit": request.limit or 0,
            "truncated": truncated,
            "total_nodes": total,
        }
    )
    return graph


def _filter(graph: nx.DiGraph, request: GraphRequest, focus: str | None) -> nx.DiGraph:
    keep = [
        n
        for n, attrs in graph.nodes(data=True)
        if n == focus
        or (
            attrs["type"] in request.types
            # In the bipartite graph every edge has one paper behind it, so the
            # support threshold applies to the entity: papers that name it.
            and (
                request.projection != "bipartite"
                or attrs["type"] == "Paper"
                or attrs["paper_count"] >= request.min_support
            )
        )
    ]
    sub = graph.subgraph(keep).copy()
    if request.projection == "entity" and request.min_support > 1:
        sub.remove_edges_from(
            [(a, b) for a, b, w in sub.edges(data="weight") if w < request.min_support]
        )
    return sub


# ------------------------------------------------------------------ the side panel


def node_details(store: GraphStore, focus: str) -> dict[str, Any]:
    """What the explorer's side panel shows for one paper or entity."""
    iri = resolve_focus(store, focus)
    node = NamedNode(iri)
    details: dict[str, Any] = {"iri": iri}
    papers = run(store, "papers", node=node)
    if papers:
        row = papers[0]
        pid = row.get("id") or local_name(iri)
        details.update(
            type="Paper",
            id=pid,
            label=paper_label(row.get("title"), row.get("snippet"), pid),
            title=clean_text(row["title"]) if row.get("title") else None,
            aliases=[],
            papers=[],
            entities=[
                {
                    "iri": r["entity"],
                    "label": clean_text(r.get("label") or local_name(r["entity"])),
                    "type": local_name(r["type"]),
                    "predicate": local_name(r["predicate"]),
                }
                for r in run(store, "paper-entities", node=node)
            ],
        )
        whole = run(store, "paper-abstract", node=node)
        details["abstract"] = clean_text(whole[0]["abstract"]) if whole else ""
    else:
        entity = run(store, "entities", node=node)
        label = clean_text(entity[0].get("label") or "") if entity else ""
        details.update(
            type=local_name(entity[0]["type"]) if entity else "Entity",
            id=iri[len(ID_PREFIX):] if iri.startswith(ID_PREFIX) else iri,
            label=label or local_name(iri),
            aliases=sorted({clean_text(r["alias"]) for r in run(store, "aliases", node=node)}
                           - {label}),
            papers=[
                {
                    "iri": r["paper"],
                    "id": r.get("id") or local_name(r["paper"]),
                    "title": clean_text(r["title"]) if r.get("title") else None,
                    "label": paper_label(r.get("title"), r.get("snippet"),
                                         r.get("id") or local_name(r["paper"])),
                    "snippet": _snippet(r.get("snippet") or ""),
                    "predicate": local_name(r["predicate"]),
                }
                for r in run(store, "entity-papers", node=node)
            ],
            entities=[],
        )
    details["claims"] = [_claim(r) for r in run(store, "node-claims", node=node)]
    return details


def _snippet(text: str, width: int = 220) -> str:
    clean = clean_text(text)
    return clean if len(clean) <= width else clean[:width].rsplit(" ", 1)[0] + "…"


def _claim(row: dict[str, str]) -> dict[str, Any]:
    """A claim with its sentence split around it, LaTeX cleaned, for highlighting."""
    sentence = row.get("sentence") or row["text"]
    offset = max(0, int(row.get("offset", 0)))
    length = max(0, int(row.get("length", len(row["text"]))))
    end = offset + length
    before, claim, after = sentence[:offset], sentence[offset:end], sentence[end:]
    if not claim:
        before, claim, after = "", row["text"], ""
    return {
        "iri": row["claim"],
        "paper": row["paper"],
        "kind": local_name(row["kind"]) if row.get("kind") else None,
        "text": clean_text(row["text"]),
        "before": clean_text(before) + (" " if before.endswith((" ", "\n")) else ""),
        "claim": clean_text(claim),
        "after": (" " if after.startswith((" ", "\n")) else "") + clean_text(after),
    }


def search(store: GraphStore, text: str, limit: int = 20) -> list[dict[str, Any]]:
    """Entities and papers matching a text, best first (the explorer's search box)."""
    text = text.strip()
    if not text:
        return []
    out = []
    for row in run(store, "search", q=Literal(text))[:limit]:
        kind = local_name(row["type"])
        label = (
            paper_label(None, row.get("label"), local_name(row["node"]))
            if kind == "Paper"
            else clean_text(row.get("label") or local_name(row["node"]))
        )
        out.append(
            {
                "iri": row["node"],
                "type": kind,
                "label": label,
                "match": clean_text(row.get("match", "")),
                "papers": int(row.get("papers", 0)),
            }
        )
    return out


__all__ = [
    "CO_OCCURS",
    "ENTITY_TYPES",
    "FocusNotFound",
    "GraphRequest",
    "GraphViewError",
    "NODE_TYPES",
    "PROJECTIONS",
    "build_graph",
    "named_query",
    "node_details",
    "parse_types",
    "resolve_focus",
    "search",
]
