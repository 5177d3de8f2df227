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

import sqlite3
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from urllib.parse import unquote

from pyoxigraph import Literal, NamedNode, Quad

from kg import schema
from kg.extraction.canonical import canonical_key
from kg.mapping.consolidation import (
    Node,
    Resolution,
    Surface,
    acronym_short,
    resolve,
    strip_chain,
    text,
    type_evidence_iri,
)
from kg.mapping.directions import key_direction
from kg.mapping.results import boolean
from kg.model import EntityType
from kg.store.common import GraphStore
from kg.store.index import evidence_rows as ev
from kg.store.index import index_of, paper_quads
from kg.store.index import read as ix
from kg.store.index.rows import PaperRow
from kg.store.queries import rows, run
from kg.store.rewriting import rewritten
from kg.vocab import ENTITIES_GRAPH, ID_PREFIX, KG, RDF, SKOS, XSD, paper_id_from_graph

_TYPES = tuple(k.name for k in schema.ENTITY_TYPES)
BATCH_QUADS = 20_000
"""Quads per store write: each write is one transaction (one SPARQL update)."""
FULL_READ_SHARE = 0.5
"""A write of this share of the corpus or more (a first ingest) reads all the
evidence: it reaches nearly all of it, and one read of the index's evidence
tables beats following them key by key (0.4 against 3.1 s for the 4,302 ICLR
papers; BENCHMARKS.md)."""
HELD_QUADS = 100_000
"""Quads of rewritten paper graphs held for the index before a write is forced."""
HELD_ROWS = 512
"""Index rows of rewritten papers held before a write is forced (a helper made them)."""


@dataclass
class ConsolidationReport:
    """What one consolidation did."""

    surfaces: int = 0
    nodes: int = 0
    papers_rewritten: int = 0
    quads_removed: int = 0
    quads_added: int = 0
    seconds: float = 0.0
    scoped: bool = False
    """Whether only the evidence the write could change was read (see :func:`consolidate`)."""

    def to_json(self) -> dict[str, float | int]:
        """The report as JSON (``kg ingest --json``, ``POST /papers``)."""
        return {
            "surface_forms": self.surfaces,
            "nodes": self.nodes,
            "papers_rewritten": self.papers_rewritten,
            "quads_removed": self.quads_removed,
            "quads_added": self.quads_added,
            "scoped": self.scoped,
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


@dataclass
class Forgotten:
    """What deleted papers named: the entity IRIs (raw and resolved) whose
    descriptions must go when no other paper names them, and the acronyms they
    were written as (their papers no longer count for the corpus's decisions)."""

    iris: set[str] = field(default_factory=set)
    shorts: set[str] = field(default_factory=set)


def scoped_evidence(
    db: sqlite3.Connection, keys: Iterable[str], shorts: Iterable[str]
) -> tuple[list[Surface], list[tuple[str, str, str]]]:
    """Every surface form and definition whose resolution can depend on these
    keys and acronyms, read from the index: a set closed under what
    :func:`~kg.mapping.consolidation.resolve` looks at (the same key and the
    keys that continue it, the acronyms a surface is written as, their
    definitions and long forms, and the keys container words strip to), so that
    resolving it alone decides its nodes exactly as resolving the whole corpus."""
    seen_keys: set[str] = set()
    seen_shorts: set[str] = set()
    todo_keys, todo_shorts = set(keys), set(shorts)
    surfaces: dict[str, Surface] = {}
    definitions: set[tuple[str, str, str]] = set()

    def follow(key: str, label: str) -> None:
        for k, lab in [(key, label), *strip_chain(key, label)]:
            todo_keys.add(k)
            if (short := acronym_short(lab)) is not None:
                todo_shorts.add(short)

    while todo_keys or todo_shorts:
        if todo_keys:
            key = todo_keys.pop()
            if not key or key in seen_keys:
                continue
            seen_keys.add(key)
            found, defined = ev.surfaces_by_key(db, key), ev.definitions_by_long_key(db, key)
        else:
            short = todo_shorts.pop()
            if short in seen_shorts:
                continue
            seen_shorts.add(short)
            todo_keys.add(canonical_key(short))
            found, defined = ev.surfaces_by_short(db, short), ev.definitions_by_short(db, short)
        for s in found:
            if s.iri not in surfaces:
                surfaces[s.iri] = s
                follow(s.key, s.label)
                if s.resolved:
                    todo_keys.add(_iri_key(s.resolved))
        for d in defined:
            if d not in definitions:
                definitions.add(d)
                if (written := acronym_short(d[1], shaped=False)) is not None:
                    todo_shorts.add(written)
                follow(canonical_key(d[2]), d[2])
    return sorted(surfaces.values(), key=lambda s: s.iri), sorted(definitions)


def _scoped(
    db: sqlite3.Connection, touched: Iterable[str], forgotten: Forgotten
) -> tuple[list[Surface], list[tuple[str, str, str]]]:
    """The evidence the touched papers' and the forgotten names' decisions depend on."""
    own = ev.papers_evidence(db, touched)
    keys = {s.key for s in own.surfaces} | {canonical_key(d[2]) for d in own.definitions}
    keys |= {_iri_key(i) for i in forgotten.iris}
    shorts = {a for s in own.surfaces if (a := acronym_short(s.label)) is not None}
    shorts |= {a for d in own.definitions if (a := acronym_short(d[1], shaped=False))}
    return scoped_evidence(db, keys, shorts | forgotten.shorts)


def _iri_key(iri: str) -> str:
    """The canonical key of an entity IRI (its last segment, decoded)."""
    return unquote(iri.rsplit("/", 1)[-1])


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


def _entity_quads(store: GraphStore, subjects: set[str] | None = None) -> Iterator[Quad]:
    """The entities graph's quads (only these subjects' when given and the store
    is embedded: one lookup each instead of a scan)."""
    raw = store.native()
    if raw is not None and subjects is not None:
        for subject in sorted(subjects):
            yield from raw.quads_for_pattern(NamedNode(subject), None, None, ENTITIES_GRAPH)
        return
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


def consolidate(
    store: GraphStore,
    *,
    forgotten: Forgotten | None = None,
    touched: Iterable[str] | None = None,
) -> ConsolidationReport:
    """Bring the store's nodes in line with its evidence (see the module docstring).

    ``touched``: ids of the papers a write added or replaced; ``forgotten``: what
    deleted papers named. Given either, and an index that holds the evidence,
    only the evidence those can change is read and decided
    (:func:`scoped_evidence`): the cost follows the write, not the store.
    Otherwise every paper's evidence is read."""
    started = time.perf_counter()
    forgotten = forgotten or Forgotten()
    index = index_of(store)
    report = ConsolidationReport()
    touched = list(touched) if touched is not None else None
    if index is not None and index.has_evidence() and (touched is not None or forgotten.iris):
        db = index.reader()
        if len(touched or ()) >= FULL_READ_SHARE * ix.count(index, "class:Paper"):
            every = ev.all_evidence(db)
            surfaces, definitions = every.surfaces, every.definitions
        else:
            surfaces, definitions = _scoped(db, touched or (), forgotten)
            report.scoped = True
    else:
        surfaces, definitions = read_evidence(store)
    report.surfaces = len(surfaces)
    resolution = resolve(surfaces, definitions)
    report.nodes = len(resolution.nodes)
    remove: list[Quad] = []
    add: list[Quad] = []
    graphs: dict[str, list[Quad]] = {}  # the rewritten papers' whole graphs
    made: dict[str, PaperRow] = {}  # or their index rows, made by a helper

    def write(force: bool = False) -> None:
        if (remove or add) and (
            force
            or len(remove) + len(add) >= BATCH_QUADS
            # the graphs held bound a batch's memory as much as the changes do
            or sum(map(len, graphs.values())) >= HELD_QUADS
            or len(made) >= HELD_ROWS
        ):
            store.replace_quads(list(remove), list(add), graphs=dict(graphs), rows=dict(made))
            report.quads_removed += len(remove)
            report.quads_added += len(add)
            remove.clear()
            add.clear()
            graphs.clear()
            made.clear()

    papers = {s.paper: s.iri.rsplit("/surface/", 1)[0] for s in surfaces}
    changed = {
        pid: papers[graph]
        for graph in _changed_papers(surfaces, resolution)
        if (pid := paper_id_from_graph(graph)) is not None
    }
    for done in rewritten(store, changed, resolution.targets):
        remove.extend(done.remove)
        add.extend(done.add)
        if done.row is not None:
            made[done.paper_id] = done.row
        elif done.graph is not None:
            graphs[done.paper_id] = done.graph
        report.papers_rewritten += 1
        write()
    write(force=True)

    managed = set(resolution.nodes) | forgotten.iris
    managed |= {_raw_iri(s.iri) for s in surfaces} | {s.resolved for s in surfaces if s.resolved}
    desired = {q for node in resolution.nodes.values() for q in node_quads(node)}
    evidence_of = {type_evidence_iri(iri, t): iri for iri in managed for t in _TYPES}
    current = {
        q
        for q in _entity_quads(store, None if not report.scoped else managed | set(evidence_of))
        if text(q.subject) in managed or text(q.subject) in evidence_of
    }
    # Compared by value: a store may print 3.0 back as "3".
    have, want = {_key(q): q for q in current}, {_key(q): q for q in desired}
    remove.extend(sorted((have[k] for k in have.keys() - want.keys()), key=str))
    add.extend(sorted((want[k] for k in want.keys() - have.keys()), key=str))
    write(force=True)
    report.seconds = time.perf_counter() - started
    return report


def forget(store: GraphStore, paper_id: str) -> Forgotten:
    """What a paper's surface forms name and how they are written: what its
    deletion must pass to :func:`consolidate` (call it before the deletion)."""
    out = Forgotten()
    for q in paper_quads(store, paper_id):
        if q.predicate == KG.resolvedTo:
            out.iris |= {text(q.object), _raw_iri(text(q.subject))}
        elif q.predicate == KG.text and "/surface/" in text(q.subject):
            out.shorts.add(acronym_short(text(q.object)) or "")
        elif q.predicate == KG.shortForm:
            out.shorts.add(acronym_short(text(q.object), shaped=False) or "")
    out.shorts.discard("")
    return out


def _changed_papers(surfaces: list[Surface], resolution: Resolution) -> list[str]:
    """Graphs of the papers with a surface form whose node changed."""
    return sorted({s.paper for s in surfaces if s.resolved != resolution.targets[s.iri].iri})
