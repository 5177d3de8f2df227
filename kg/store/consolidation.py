"""Consolidation against a store: read the corpus's evidence, decide, rewrite.

:func:`consolidate` runs after every ingest and every delete (:mod:`kg.ingest`,
``POST``/``DELETE /papers``), on embedded and remote stores alike. It reads
every paper's surface forms and acronym definitions (the raw evidence each
paper graph keeps, :mod:`kg.mapping.consolidation`), decides the canonical node
of each (:func:`~kg.mapping.consolidation.resolve`), rewrites the graphs of the
papers whose surface forms now stand for another node, and replaces the
descriptions (type, labels, type evidence) of the nodes that changed in the
shared entities graph. Writes go through :meth:`GraphStore.replace_quads`, so
an indexed store keeps its aggregates in step.

The decision is a function of the stored evidence only, so ingesting papers in
any order, or twice, gives the same graph; a paper deleted takes its evidence
with it (a node no paper names any more disappears).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pyoxigraph import Literal, NamedNode, Quad

from kg import schema
from kg.mapping.consolidation import (
    Node,
    Resolution,
    Surface,
    resolve,
    rewrite_graph,
    text,
    type_evidence_iri,
)
from kg.mapping.directions import key_direction
from kg.mapping.papers import ENTITIES_GRAPH
from kg.mapping.results import boolean
from kg.model import EntityType
from kg.store.common import GraphStore
from kg.store.index import paper_quads
from kg.store.queries import rows, run
from kg.vocab import ID_PREFIX, KG, RDF, SKOS, XSD, paper_id_from_graph

_TYPES = tuple(k.name for k in schema.ENTITY_TYPES)
BATCH_QUADS = 20_000
"""Quads per store write: each write is one transaction (one SPARQL update)."""


@dataclass
class ConsolidationReport:
    """What one consolidation did."""

    surfaces: int = 0
    nodes: int = 0
    papers_rewritten: int = 0
    quads_removed: int = 0
    quads_added: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, float | int]:
        """The report as JSON (``kg ingest --json``, ``POST /papers``)."""
        return {
            "surface_forms": self.surfaces,
            "nodes": self.nodes,
            "papers_rewritten": self.papers_rewritten,
            "quads_removed": self.quads_removed,
            "quads_added": self.quads_added,
            "seconds": round(self.seconds, 3),
        }


def read_evidence(store: GraphStore) -> tuple[list[Surface], list[tuple[str, str, str]]]:
    """Every stored surface form, and every acronym definition as (graph, short, long)."""
    # One SPARQL join reads this faster than scans per property (measured).
    aliases: dict[str, list[str]] = defaultdict(list)
    for r in rows(run(store, "store/surface-aliases")):
        aliases[r["surface"].value].append(r["alias"].value)
    surfaces = [
        Surface(
            paper=r["graph"].value,
            iri=r["surface"].value,
            type=r["type"].value.rsplit("#", 1)[-1],
            key=r["key"].value,
            label=r["text"].value,
            confidence=float(r["confidence"].value),
            aliases=tuple(sorted(aliases.get(r["surface"].value, ()))),
            resolved=r["resolved"].value if r["resolved"] is not None else None,
        )
        for r in rows(run(store, "store/surface-forms"))
    ]
    definitions = [
        (r["graph"].value, r["short"].value, r["long"].value)
        for r in rows(run(store, "store/acronym-definitions"))
    ]
    return surfaces, definitions


def node_quads(node: Node) -> list[Quad]:
    """A node's description in the entities graph: type, labels, direction and
    the evidence for each type it was given (papers and summed confidence)."""
    g = ENTITIES_GRAPH
    n = NamedNode(node.iri)
    out = [
        Quad(n, RDF.type, KG[node.type], g),
        Quad(n, SKOS.prefLabel, Literal(node.label), g),
    ]
    out += [Quad(n, SKOS.altLabel, Literal(a), g) for a in sorted(node.names) if a.strip()]
    if node.type == EntityType.METRIC.value:
        higher = key_direction(node.key)
        if higher is not None:
            out.append(Quad(n, KG.higherIsBetter, boolean(higher), g))
    # Evidence is recorded where there was a choice: a node every paper typed
    # alike has its count in its links already (and 4,302 papers make ~20,000 such).
    for type_name in sorted(node.votes) if len(node.votes) > 1 else ():
        e = NamedNode(type_evidence_iri(node.iri, type_name))
        out += [
            Quad(n, KG.typeEvidence, e, g),
            Quad(e, RDF.type, KG.TypeEvidence, g),
            Quad(e, KG.evidenceClass, KG[type_name], g),
            Quad(e, KG.paperCount, Literal(str(node.papers[type_name]), datatype=XSD.integer), g),
            Quad(
                e, KG.weight, Literal(repr(round(node.votes[type_name], 3)), datatype=XSD.double), g
            ),
        ]
    return out


def _entity_quads(store: GraphStore) -> Iterator[Quad]:
    raw = store.native()
    if raw is not None:
        yield from raw.quads_for_pattern(None, None, None, ENTITIES_GRAPH)
        return
    for r in rows(run(store, "store/entities-graph")):
        yield Quad(r["s"], r["p"], r["o"], ENTITIES_GRAPH)  # type: ignore[arg-type]


def _key(q: Quad) -> tuple[str, str, object]:
    o = q.object
    if isinstance(o, Literal) and o.datatype == XSD.double:
        return (text(q.subject), text(q.predicate), float(text(o)))
    return (text(q.subject), text(q.predicate), str(o))


def _raw_iri(surface_iri: str) -> str:
    return ID_PREFIX + "/".join(surface_iri.rsplit("/", 2)[-2:])


def consolidate(store: GraphStore, *, forgotten: Iterable[str] = ()) -> ConsolidationReport:
    """Bring the store's nodes in line with its evidence (see the module docstring).

    ``forgotten``: entity IRIs that deleted papers named, whose descriptions
    must go when no other paper names them."""
    started = time.perf_counter()
    surfaces, definitions = read_evidence(store)
    report = ConsolidationReport(surfaces=len(surfaces))
    resolution = resolve(surfaces, definitions)
    report.nodes = len(resolution.nodes)
    remove: list[Quad] = []
    add: list[Quad] = []

    def write(force: bool = False) -> None:
        if (remove or add) and (force or len(remove) + len(add) >= BATCH_QUADS):
            store.replace_quads(list(remove), list(add))
            report.quads_removed += len(remove)
            report.quads_added += len(add)
            remove.clear()
            add.clear()

    papers = {s.paper: s.iri.rsplit("/surface/", 1)[0] for s in surfaces}
    for graph in _changed_papers(surfaces, resolution):
        pid = paper_id_from_graph(graph)
        if pid is None:
            continue
        old = list(paper_quads(store, pid))
        new = rewrite_graph(old, NamedNode(papers[graph]), resolution.targets)
        before, after = set(old), set(new)
        remove.extend(q for q in old if q not in after)
        add.extend(q for q in new if q not in before)
        report.papers_rewritten += 1
        write()
    write(force=True)

    managed = set(resolution.nodes) | set(forgotten)
    managed |= {_raw_iri(s.iri) for s in surfaces} | {s.resolved for s in surfaces if s.resolved}
    desired = {q for node in resolution.nodes.values() for q in node_quads(node)}
    evidence_of = {type_evidence_iri(iri, t): iri for iri in managed for t in _TYPES}
    current = {
        q
        for q in _entity_quads(store)
        if text(q.subject) in managed or text(q.subject) in evidence_of
    }
    # Compared by value: a store may print 3.0 back as "3".
    have, want = {_key(q): q for q in current}, {_key(q): q for q in desired}
    remove.extend(sorted((have[k] for k in have.keys() - want.keys()), key=str))
    add.extend(sorted((want[k] for k in want.keys() - have.keys()), key=str))
    write(force=True)
    report.seconds = time.perf_counter() - started
    return report


def forget(store: GraphStore, paper_id: str) -> set[str]:
    """The entity IRIs a paper's surface forms name (raw and resolved): what its
    deletion must pass to :func:`consolidate` as ``forgotten``."""
    out: set[str] = set()
    for q in paper_quads(store, paper_id):
        if q.predicate == KG.resolvedTo:
            out |= {text(q.object), _raw_iri(text(q.subject))}
    return out


def _changed_papers(surfaces: list[Surface], resolution: Resolution) -> list[str]:
    """Graphs of the papers with a surface form whose node changed."""
    return sorted({s.paper for s in surfaces if s.resolved != resolution.targets[s.iri].iri})
