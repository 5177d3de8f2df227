"""Graph exporters: one registry, by name and media type, shared by REST and CLI.

Each exporter turns a drawn graph (a :class:`kg.read.graphview.Drawing`, or the
networkx graph of :func:`kg.read.graphview.build_graph`) into bytes in a format
a visualisation tool opens:

=========  ==================================  =========================================
name       media type                          opens in
=========  ==================================  =========================================
graphml    application/graphml+xml             yEd, Gephi, Cytoscape, networkx, igraph
gexf       application/gexf+xml                Gephi (colours and sizes included)
cytoscape  application/vnd.cytoscape+json      Cytoscape (File → Import → Network), Cytoscape.js
d3         application/vnd.d3+json             D3 force layouts (node-link JSON: nodes, links)
dot        text/vnd.graphviz                   Graphviz (``dot``, ``sfdp``), xdot, Gephi
csv        application/zip                     a zip of ``nodes.csv`` and ``edges.csv``
=========  ==================================  =========================================

GraphML and GEXF are written by networkx's own writers; the JSON formats write
what networkx's ``node_link_data`` and ``cytoscape_data`` give, straight from a
drawing (from a networkx graph, by those functions).
Graphviz DOT is written here: networkx's DOT path needs pydot or pygraphviz
and rejects node names with ``:`` (every IRI has one), so nodes get short ids
(``n0``, ``n1``…) and the IRI goes into ``URL``/``iri`` attributes, every string
quoted and escaped.

List-valued attributes (an edge's supporting papers) stay lists in JSON and
become space-separated IRIs in the XML, DOT and CSV formats, which only hold
scalars.
"""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from kg import schema
from kg.read.graphview import Drawing

if TYPE_CHECKING:
    import networkx as nx

# networkx is imported where a graph is drawn: it costs ~0.2 s of CPU, which
# `kg serve` would otherwise spend at every start (docs/scaling.md).

TYPE_COLOURS: dict[str, str] = {
    "Paper": schema.PAPER_COLOUR,
    **{k.name: k.colour for k in schema.ENTITY_TYPES},
}
"""One colour per node type, shared by the GEXF/DOT exports and the explorer's legend."""


@dataclass(frozen=True, slots=True)
class Exporter:
    """One export format."""

    name: str
    media_type: str
    extension: str
    description: str
    write: Callable[[nx.DiGraph | Drawing], bytes]

    @property
    def filename(self) -> str:
        """The file name a download gets."""
        return f"mlkg-graph.{self.extension}"


def _networkx(graph: nx.DiGraph | Drawing) -> nx.DiGraph:
    return graph.to_networkx() if isinstance(graph, Drawing) else graph


def _scalar_graph(graph: nx.DiGraph) -> nx.DiGraph:
    """A copy whose attributes are all scalars (lists joined by spaces)."""
    import networkx as nx

    out = nx.DiGraph()
    out.graph.update({k: _scalar(v) for k, v in graph.graph.items()})
    for node, attrs in graph.nodes(data=True):
        out.add_node(node, **{k: _scalar(v) for k, v in attrs.items()})
    for a, b, attrs in graph.edges(data=True):
        out.add_edge(a, b, **{k: _scalar(v) for k, v in attrs.items()})
    return out


def _scalar(value: Any) -> str | int | float | bool:
    if isinstance(value, list | tuple | set | frozenset):
        return " ".join(str(v) for v in value)
    if value is None:
        return ""
    return value


def write_graphml(graph: nx.DiGraph | Drawing) -> bytes:
    """GraphML via networkx (typed ``<key>`` declarations for every attribute)."""
    graph = _networkx(graph)
    import networkx as nx

    buffer = io.BytesIO()
    nx.write_graphml(_scalar_graph(graph), buffer, encoding="utf-8", named_key_ids=True)
    return buffer.getvalue()


def _rgb(hex_colour: str) -> dict[str, int | float]:
    value = hex_colour.lstrip("#")
    return {"r": int(value[0:2], 16), "g": int(value[2:4], 16), "b": int(value[4:6], 16), "a": 1.0}


def write_gexf(graph: nx.DiGraph | Drawing) -> bytes:
    """GEXF 1.2 via networkx, with ``viz`` colour by type and size by paper count for Gephi."""
    graph = _networkx(graph)
    import networkx as nx

    out = _scalar_graph(graph)
    for _node, attrs in out.nodes(data=True):
        attrs["viz"] = {
            "color": _rgb(TYPE_COLOURS.get(str(attrs.get("type")), "#999999")),
            "size": float(4 + 3 * int(attrs.get("paper_count", 1)) ** 0.5),
        }
    buffer = io.BytesIO()
    nx.write_gexf(out, buffer, encoding="utf-8", version="1.2draft")
    return buffer.getvalue()


def _json(obj: Any) -> bytes:
    # orjson writes the bytes json.dumps(ensure_ascii=False, compact) wrote, in an
    # eighth of the time: 2.8 → 0.4 ms of a 477-node star's 18 ms at 100k papers
    # (benchmarks/graph_export.py; BENCHMARKS.md, "REST at 100k: … graph exports with orjson").
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)


def write_cytoscape(graph: nx.DiGraph | Drawing) -> bytes:
    """Cytoscape.js JSON (``elements.nodes``/``.edges``) via networkx's ``cytoscape_data``.

    Read back by ``networkx.cytoscape_graph`` and Cytoscape desktop alike: each node
    keeps networkx's ``value`` (its key, here the IRI, which the reader needs) and
    ``name`` (the label Cytoscape shows). Written straight from a :class:`Drawing`
    (what the explorer asks for), without networkx."""
    if isinstance(graph, Drawing):
        nodes = [
            {
                "data": {
                    **attrs,
                    "id": attrs.get("id") or str(n),
                    "value": n,
                    "name": attrs.get("label") or str(n),
                }
            }
            for n, attrs in graph.nodes
        ]
        edges = [
            {"data": {**attrs, "source": a, "target": b, "id": f"{a} {b}"}}
            for a, b, attrs in graph.edges
        ]
        return _json(
            {
                "data": dict(graph.graph),
                "directed": True,
                "multigraph": False,
                "elements": {"nodes": nodes, "edges": edges},
            }
        )
    import networkx as nx

    data = nx.cytoscape_data(graph, name="label", ident="id")
    data["data"] = dict(graph.graph)  # networkx gives a list of pairs; Cytoscape wants an object
    for edge in data["elements"]["edges"]:
        # Stable ids (one edge per ordered pair), so graphs fetched separately merge.
        edge["data"]["id"] = f"{edge['data']['source']} {edge['data']['target']}"
    return _json(data)


def write_d3(graph: nx.DiGraph | Drawing) -> bytes:
    """node-link JSON (``nodes``, ``links`` with ``source``/``target``) for D3 force layouts:
    networkx's ``node_link_data``, written straight from a :class:`Drawing`."""
    if isinstance(graph, Drawing):
        return _json(
            {
                "directed": True,
                "multigraph": False,
                "graph": graph.graph,
                "nodes": [{**attrs, "id": n} for n, attrs in graph.nodes],
                "links": [{**attrs, "source": a, "target": b} for a, b, attrs in graph.edges],
            }
        )
    import networkx as nx

    return _json(nx.node_link_data(graph, edges="links"))


def dot_quote(value: object) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, newlines as ``\\n``."""
    text = str(value)
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    return f'"{text}"'


def _dot_attrs(attrs: Iterable[tuple[str, object]]) -> str:
    return ", ".join(f"{key}={dot_quote(value)}" for key, value in attrs)


def write_dot(graph: nx.DiGraph | Drawing) -> bytes:
    """Graphviz DOT: a ``digraph`` with labelled, coloured nodes and weighted edges,
    laid out by ``sfdp`` (force-directed) whichever Graphviz command renders it."""
    graph = _networkx(graph)
    ids = {node: f"n{i}" for i, node in enumerate(graph.nodes)}
    lines = [
        "digraph mlkg {",
        # The layout is chosen in the file, so a plain `dot -Tpng file.dot` draws
        # a readable picture: dot's ranked layout puts a star-shaped neighbourhood,
        # and the whole bipartite graph, on one line hundreds of times wider than high.
        # Straight edges: spline routing took 15-30 s for the 37-paper sample.
        "  graph [layout=sfdp, overlap=false, outputorder=edgesfirst];",
        '  node [shape=ellipse, style=filled, fontname="Helvetica", fontsize=10];',
        '  edge [color="#00000055", arrowsize=0.5];',
    ]
    for key, value in graph.graph.items():
        if key in {"name"}:
            continue
        lines.append(f"  // {key}: {str(_scalar(value)).replace(chr(10), ' ')}")
    for node, attrs in graph.nodes(data=True):
        node_type = str(attrs.get("type", ""))
        fields = [
            ("label", attrs.get("label", node)),
            ("tooltip", node),
            ("URL", node),
            ("iri", node),
            ("type", node_type),
            ("paper_count", attrs.get("paper_count", 0)),
            ("fillcolor", TYPE_COLOURS.get(node_type, "#999999")),
        ]
        if attrs.get("aliases"):
            fields.append(("aliases", attrs["aliases"]))
        lines.append(f"  {ids[node]} [{_dot_attrs(fields)}];")
    for a, b, attrs in graph.edges(data=True):
        weight = int(attrs.get("weight", 1))
        fields = [
            ("predicate", attrs.get("predicate", "")),
            ("weight", weight),
            ("penwidth", round(1 + 0.5 * (weight - 1), 2)),
            ("papers", _scalar(attrs.get("papers", []))),
        ]
        lines.append(f"  {ids[a]} -> {ids[b]} [{_dot_attrs(fields)}];")
    lines.append("}")
    return ("\n".join(lines) + "\n").encode("utf-8")


NODE_COLUMNS = ("Id", "Label", "type", "paper_count", "aliases")
EDGE_COLUMNS = ("Source", "Target", "Weight", "predicate", "papers")


def write_csv(graph: nx.DiGraph | Drawing) -> bytes:
    """A zip of ``nodes.csv`` and ``edges.csv`` (column names Gephi's spreadsheet import knows)."""
    graph = _networkx(graph)
    nodes = io.StringIO()
    writer = csv.writer(nodes, lineterminator="\n")
    writer.writerow(NODE_COLUMNS)
    for node, attrs in graph.nodes(data=True):
        writer.writerow(
            [
                node,
                attrs.get("label", ""),
                attrs.get("type", ""),
                attrs.get("paper_count", 0),
                attrs.get("aliases", ""),
            ]
        )
    edges = io.StringIO()
    writer = csv.writer(edges, lineterminator="\n")
    writer.writerow(EDGE_COLUMNS)
    for a, b, attrs in graph.edges(data=True):
        writer.writerow(
            [
                a,
                b,
                attrs.get("weight", 1),
                attrs.get("predicate", ""),
                _scalar(attrs.get("papers", [])),
            ]
        )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("nodes.csv", nodes.getvalue())
        archive.writestr("edges.csv", edges.getvalue())
    return buffer.getvalue()


EXPORTERS: dict[str, Exporter] = {
    e.name: e
    for e in (
        Exporter(
            "graphml",
            "application/graphml+xml",
            "graphml",
            "GraphML for yEd, Gephi, Cytoscape",
            write_graphml,
        ),
        Exporter("gexf", "application/gexf+xml", "gexf", "GEXF 1.2 for Gephi", write_gexf),
        Exporter(
            "cytoscape",
            "application/vnd.cytoscape+json",
            "cyjs",
            "Cytoscape.js JSON for Cytoscape and Cytoscape.js",
            write_cytoscape,
        ),
        Exporter("d3", "application/vnd.d3+json", "json", "node-link JSON for D3", write_d3),
        Exporter("dot", "text/vnd.graphviz", "dot", "Graphviz DOT", write_dot),
        Exporter("csv", "application/zip", "zip", "nodes.csv and edges.csv in a zip", write_csv),
    )
}
"""Every exporter by name; the first is the default."""

MEDIA_TYPE_ALIASES: dict[str, str] = {
    "application/json": "d3",
    "application/xml": "graphml",
    "text/xml": "graphml",
    "application/x-graphviz": "dot",
    "text/x-graphviz": "dot",
    "application/cytoscape+json": "cytoscape",
}
"""Other media types clients send for one of the formats."""


class UnknownFormat(ValueError):
    """No exporter of that name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown graph format {name!r}; known: {', '.join(EXPORTERS)}")
        self.name = name


def exporter(name: str) -> Exporter:
    """The exporter named ``name`` (a short name or one of its media types)."""
    key = name.strip().lower()
    if key in EXPORTERS:
        return EXPORTERS[key]
    for exp in EXPORTERS.values():
        if exp.media_type == key:
            return exp
    if key in MEDIA_TYPE_ALIASES:
        return EXPORTERS[MEDIA_TYPE_ALIASES[key]]
    raise UnknownFormat(name)


def media_types() -> dict[str, Exporter]:
    """Every media type a client may ask for, each with its exporter."""
    table = {e.media_type: e for e in EXPORTERS.values()}
    table.update({mt: EXPORTERS[name] for mt, name in MEDIA_TYPE_ALIASES.items()})
    return table


def export(graph: nx.DiGraph | Drawing, name: str) -> bytes:
    """The graph in the format named ``name``."""
    return exporter(name).write(graph)
