"""Graphs to look at: the store's papers and entities as a networkx graph.

Everything here is read through the named queries in ``queries/graph/*.rq``
(values bound with substitutions, never formatted into SPARQL). One call,
:func:`build_graph`, serves the REST ``GET /graph``, ``kg graph`` and the
explorer page, and :mod:`kg.read.exporters` writes its result in each format.

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
import threading
from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from typing import Literal as TypingLiteral

from kg import schema
from kg.read.graph import (
    FocusNotFound,
    GraphViewError,
    clean_text,
    local_name,
    named_query,
    node_details,
    paper_label,
    resolve_focus,
    run,
    search,
)
from kg.store.embedded import GraphStore

if TYPE_CHECKING:
    import networkx as nx

NODE_TYPES: tuple[str, ...] = ("Paper", *(k.name for k in schema.ENTITY_TYPES))
"""Node types, in the order legends and tables list them (:mod:`kg.schema`)."""

ENTITY_TYPES = NODE_TYPES[1:]
Projection = TypingLiteral["bipartite", "entity"]
PROJECTIONS: tuple[str, ...] = ("bipartite", "entity")
MAX_DEPTH = 3

# Direction and name of an entity–entity edge, by the types of its ends. The
# lower rank is the source: methods point at tasks, datasets and metrics.
_RANK = {k.name: k.rank for k in schema.ENTITY_TYPES}
_PAIR_PREDICATE = schema.PAIR_PREDICATES
CO_OCCURS = schema.CO_OCCURS


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


# ------------------------------------------------------------------ building

Edge = tuple[str, str]


@dataclass(slots=True)
class GraphData:
    """Everything the projections need, read from the store in four queries."""

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """IRI → node attributes, papers and entities."""
    links: dict[Edge, set[str]] = field(default_factory=dict)
    """(paper, entity) → the predicates linking them."""
    entities_of: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    papers_of: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    omitted: int = 0
    """Nodes of the neighbourhood left unread because the node limit cuts them
    anyway (see :func:`kg.store.index.graph.entity_star`): counted in the total."""
    star: str | None = None
    """The entity whose depth-1 neighbourhood is all this holds (its papers,
    linked to it only), when it was read as such."""
    _pairs: dict[str, dict[str, list[str]]] | None = None

    def pairs(self) -> dict[str, dict[str, list[str]]]:
        """entity → co-occurring entity → the papers naming both (symmetric; the
        same list object both ways). Computed once, on first use."""
        if self._pairs is None:
            support: dict[str, dict[str, list[str]]] = defaultdict(dict)
            for paper in sorted(self.entities_of):
                for a, b in itertools.combinations(sorted(self.entities_of[paper]), 2):
                    papers = support[a].get(b)
                    if papers is None:
                        papers = support[a][b] = support[b][a] = []
                    papers.append(paper)
            self._pairs = dict(support)
        return self._pairs

    def neighbours(self, node: str) -> set[str]:
        """The node's neighbours in the paper–entity graph."""
        return self.entities_of.get(node) or self.papers_of.get(node) or set()

    def oriented(self, a: str, b: str) -> Edge:
        """The direction an entity–entity edge is drawn in: by type rank, then IRI."""
        ra, rb = _RANK[self.nodes[a]["type"]], _RANK[self.nodes[b]["type"]]
        return (a, b) if (ra, a) <= (rb, b) else (b, a)


def read_graph_data(store: GraphStore) -> GraphData:
    """Read the paper–entity graph with its node attributes (four named queries)."""
    data = GraphData()
    papers_of: dict[str, set[str]] = defaultdict(set)
    for row in run(store, "edges"):
        paper, entity = row["paper"], row["entity"]
        data.links.setdefault((paper, entity), set()).add(row["predicate"])
        papers_of[entity].add(paper)
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
        if iri not in papers_of or iri in data.nodes:
            continue  # entities named only by claims are not drawn; one type per node
        label = clean_text(row.get("label") or "") or local_name(iri)
        data.nodes[iri] = {
            "iri": iri,
            "label": label,
            "type": local_name(row["type"]),
            "paper_count": len(papers_of[iri]),
            "aliases": "; ".join(sorted({a for a in aliases[iri] if a and a != label})),
        }
    # Keep only links whose both ends are drawable nodes.
    data.links = {k: v for k, v in data.links.items() if k[0] in data.nodes and k[1] in data.nodes}
    for paper, entity in data.links:
        data.entities_of[paper].add(entity)
        data.papers_of[entity].add(paper)
    return data


class GraphDataCache:
    """The last :class:`GraphData` read, reused while the caller's token is unchanged.

    The service passes a token that changes whenever the store is written (the
    query pool's generation), so exploring a graph does not re-read the store
    on every click.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[int, Hashable] | None = None
        self._data: GraphData | None = None

    def get(self, store: GraphStore, token: Hashable) -> GraphData:
        """The store's graph data for this token (read now when the token is new)."""
        key = (id(store), token)
        with self._lock:
            if self._key == key and self._data is not None:
                return self._data
        data = read_graph_data(store)
        data.pairs()  # computed here, once, rather than by the first entity-graph request
        with self._lock:
            self._key, self._data = key, data
        return data


@dataclass(slots=True)
class Drawing:
    """A drawn graph as plain lists, in the order networkx would hold it: the
    graph's attributes, its nodes (sorted) and its edges (by source, then
    target). The JSON exporters write it without networkx, which cost a third
    of a 476-paper star's Python at 100k papers; :meth:`to_networkx` gives the
    same graph as a ``networkx.DiGraph`` for the others."""

    graph: dict[str, Any]
    nodes: list[tuple[str, dict[str, Any]]]
    edges: list[tuple[str, str, dict[str, Any]]]

    def to_networkx(self) -> nx.DiGraph:
        """The same graph as a networkx ``DiGraph``."""
        import networkx as nx  # lazily: see kg.read.exporters

        graph = nx.DiGraph()
        graph.graph.update(self.graph)
        graph.add_nodes_from(self.nodes)
        graph.add_edges_from(self.edges)
        return graph


def build_graph(
    store: GraphStore, request: GraphRequest | None = None, *, data: GraphData | None = None
) -> nx.DiGraph:
    """The graph a request asks for, as a networkx ``DiGraph`` (see :func:`draw`)."""
    return draw(store, request, data=data).to_networkx()


def draw(
    store: GraphStore, request: GraphRequest | None = None, *, data: GraphData | None = None
) -> Drawing:
    """The graph a request asks for, ready for :mod:`kg.read.exporters`.

    ``data`` is the store's graph data when the caller has it already (see
    :class:`GraphDataCache`). The work runs on plain dicts.
    """
    request = request or GraphRequest()
    data = data or read_graph_data(store)
    focus = resolve_focus(store, request.focus, data.nodes) if request.focus else None
    bipartite = request.projection == "bipartite"
    if focus is not None and focus == data.star and bipartite and request.depth == 1:
        return _star(data, request, focus)
    pairs = {} if bipartite else data.pairs()

    # The projection's nodes and edges, filtered by type and support, are walked
    # lazily: a neighbourhood costs what it touches, not the whole store.
    def wanted(n: str) -> bool:
        attrs = data.nodes[n]
        if n == focus:
            return bipartite or attrs["type"] != "Paper"
        if attrs["type"] not in request.types:
            return False
        if bipartite:
            # Every bipartite edge has one paper behind it, so the support
            # threshold applies to the entity: the papers that name it.
            return attrs["type"] == "Paper" or attrs["paper_count"] >= request.min_support
        return attrs["type"] != "Paper"

    def neighbours(n: str) -> Iterable[str]:
        if bipartite:
            return (m for m in data.neighbours(n) if wanted(m))
        return (
            m
            for m, papers in pairs.get(n, {}).items()
            if len(papers) >= request.min_support and wanted(m)
        )

    # 1. What to draw: the focus's neighbourhood, or every wanted node.
    distance: dict[str, int] = {}
    if focus is not None:
        if wanted(focus):
            distance, first = {focus: 0}, 1
        else:
            # A paper in the entity projection: its entities are the first hop.
            distance = {e: 1 for e in data.entities_of.get(focus, ()) if wanted(e)}
            first = 2
        frontier = list(distance)
        for hop in range(first, request.depth + 1):
            frontier = [m for n in frontier for m in neighbours(n) if m not in distance]
            for m in frontier:
                distance.setdefault(m, hop)
        keep = set(distance)
    else:
        keep = {n for n in data.nodes if wanted(n)}
    adjacent = {n: {m for m in neighbours(n) if m in keep} for n in keep}
    if request.min_support > 1:
        # Nodes that lost every edge to the support threshold are noise, not findings.
        keep = {n for n in keep if n == focus or adjacent[n]}

    # 2. The node limit: nearest to the focus first, then the most supported (an
    # entity by its papers, a paper by the entities it names: every paper has one
    # paper behind it, so ranking papers by that would drop them all).
    total = len(keep) + data.omitted
    truncated = request.limit is not None and total > request.limit
    if truncated:

        def rank(n: str) -> tuple[int, int, int, str]:
            degree = len(adjacent[n])
            support = degree if data.nodes[n]["type"] == "Paper" else data.nodes[n]["paper_count"]
            return (distance.get(n, 0), -support, -degree, n)

        keep = set(sorted(keep, key=rank)[: request.limit])

    # 3. The edges among what is kept.
    edges: list[tuple[str, str, dict[str, Any]]] = []
    for a in sorted(keep):
        for b in sorted(adjacent[a] & keep):
            if bipartite:
                if data.nodes[a]["type"] == "Paper":
                    edges.append(
                        (
                            a,
                            b,
                            {
                                "predicate": " ".join(sorted(data.links[a, b])),
                                "weight": 1,
                                "papers": [a],
                            },
                        )
                    )
            elif data.oriented(a, b) == (a, b):
                papers = pairs[a][b]
                kinds = (data.nodes[a]["type"], data.nodes[b]["type"])
                edges.append(
                    (
                        a,
                        b,
                        {
                            "predicate": _PAIR_PREDICATE.get(kinds, CO_OCCURS),
                            "weight": len(papers),
                            "papers": list(papers),
                        },
                    )
                )

    attrs = _attributes(request, focus, truncated, total)
    # Sorted, so the same store gives the same file.
    return Drawing(attrs, [(n, dict(data.nodes[n])) for n in sorted(keep)], edges)


def _attributes(
    request: GraphRequest, focus: str | None, truncated: bool, total: int
) -> dict[str, Any]:
    """The graph's own attributes: what was asked for and whether the limit cut it."""
    return {
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


def _star(data: GraphData, request: GraphRequest, focus: str) -> Drawing:
    """What :func:`draw` draws for an entity's depth-1 bipartite neighbourhood,
    without its general walk: the focus is always drawn, every paper is
    wanted (support thresholds apply to entities) and has one edge, to the
    focus, so the node limit keeps the papers first by IRI. The walk's
    per-node passes were half of a 424-paper star's Python at 100k papers."""
    papers = sorted(data.papers_of.get(focus, ())) if "Paper" in request.types else []
    total = 1 + len(papers) + data.omitted
    limit = request.limit
    truncated = limit is not None and total > limit
    if limit is not None and truncated:
        papers = papers[: limit - 1]
    attrs = _attributes(request, focus, truncated, total)
    nodes = data.nodes
    edges = [
        (
            p,
            focus,
            {"predicate": " ".join(sorted(data.links[p, focus])), "weight": 1, "papers": [p]},
        )
        for p in papers
    ]
    return Drawing(attrs, [(n, dict(nodes[n])) for n in sorted([focus, *papers])], edges)


__all__ = [
    "CO_OCCURS",
    "Drawing",
    "ENTITY_TYPES",
    "FocusNotFound",
    "GraphData",
    "GraphDataCache",
    "GraphRequest",
    "GraphViewError",
    "NODE_TYPES",
    "PROJECTIONS",
    "build_graph",
    "draw",
    "named_query",
    "node_details",
    "parse_types",
    "read_graph_data",
    "resolve_focus",
    "search",
]
