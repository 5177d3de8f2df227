"""A focus's neighbourhood read from the index, for ``GET /graph?focus=…``.

:func:`kg.graphview.read_graph_data` reads the whole graph (fine for a few
thousand papers, not for 100,000). Here only the nodes within ``radius`` hops
of the focus in the paper–entity graph are read, with the same node attributes
and the links they take part in, so :func:`kg.graphview.build_graph` draws
exactly what it would draw from the whole graph:

* bipartite projection, ``depth`` d: every node within d hops, with the links
  of the nodes nearer than d (two nodes at the same distance are of the same
  kind, papers or entities, so there is no other link among them);
* entity projection, depth d: an entity-to-entity hop is two bipartite hops, and
  the weight of an edge counts every paper naming both ends, so the ball has
  radius 2d + 1 (every paper of every entity drawn).

A ball larger than ``cap`` nodes raises :class:`NeighbourhoodTooLarge` instead
of being read.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

from pyoxigraph import QuerySolutions

from kg.read.graph import GraphViewError, clean_text, local_name, paper_label, resolve_focus
from kg.read.graphview import GraphData, GraphDataCache, GraphRequest
from kg.read.resolve import focus_candidates
from kg.store.common import GraphStore
from kg.store.index.db import Index
from kg.store.queries import default_registry
from kg.vocab import ID_PREFIX


class GraphTooLarge(GraphViewError):
    """What was asked for is too large to draw (the service answers 413)."""

    def __init__(self, message: str, *, param: str) -> None:
        super().__init__(message, param=param, status=413)


class NeighbourhoodTooLarge(GraphTooLarge):
    """The neighbourhood asked for holds more nodes than the cap."""

    def __init__(self, nodes: int, cap: int) -> None:
        GraphTooLarge.__init__(
            self,
            f"the neighbourhood reaches more than {cap:,} nodes (at least {nodes:,}); ask for "
            "a smaller depth, the bipartite projection, or fewer types",
            param="depth",
        )
        self.nodes, self.cap = nodes, cap


def bounded_data(
    store: GraphStore,
    request: GraphRequest,
    cache: GraphDataCache,
    token: object,
    *,
    max_papers: int,
    max_nodes: int,
) -> GraphData:
    """The graph data a request needs, read so that its cost stays bounded: a
    focus's neighbourhood from the index (when it is in step), the whole graph
    only for stores of at most ``max_papers`` papers, else :class:`GraphTooLarge`."""
    from kg.store.index import index_of
    from kg.store.index import read as ix

    index = index_of(store)
    if request.focus and index is not None:
        iri = indexed_focus(index, request.focus) or resolve_focus(store, request.focus)
        if request.projection == "bipartite" and request.depth == 1:
            star = entity_star(index, iri, request, max_nodes)
            if star is not None:
                return star
        radius = request.depth if request.projection == "bipartite" else 2 * request.depth + 1
        return neighbourhood(index, iri, radius, max_nodes)
    if index is not None:
        papers = ix.count(index, "class:Paper")
    else:
        row = next(_solutions(default_registry().run(store, "count-papers", {})), None)
        papers = int(row["papers"].value) if row is not None else 0
    if papers > max_papers:
        raise GraphTooLarge(
            f"the graph holds {papers:,} papers, more than the {max_papers:,} drawn whole "
            "(KG_GRAPH_MAX_PAPERS); give focus=… (a paper or entity) and depth for a "
            "neighbourhood, with min_support and types to thin it, or export offline with "
            "`kg graph`",
            param="focus",
        )
    return cache.get(store, token)


def indexed_focus(index: Index, focus: str) -> str | None:
    """The IRI a focus names when the index holds that paper or entity (None:
    ask :func:`kg.read.graph.resolve_focus`, which also knows a source's paper id).

    The same candidates in the same order as ``resolve_focus``, one lookup each
    instead of two SPARQL queries: a star's request spent 2 ms resolving
    ``method/claude`` at 100k papers."""
    db = index.reader()
    for iri in focus_candidates(focus.strip()):
        if _lookup(db, iri) != (None, None):
            return iri
    return None


def _lookup(db: Any, iri: str) -> tuple[int | None, int | None]:
    """``(pid, eid)``: the index's row of the paper or entity an IRI names (a paper
    by its id, which is indexed; an entity by its IRI), None where it names none."""
    prefix = ID_PREFIX + "paper/"
    if iri.startswith(prefix):
        row = db.execute("SELECT pid FROM papers WHERE id = ?", (unquote(iri[len(prefix) :]),))
        found = row.fetchone()
        return (found[0] if found else None), None
    found = db.execute("SELECT eid FROM entities WHERE iri = ?", (iri,)).fetchone()
    return None, (found[0] if found else None)


def _chunks(items: list[Any], size: int = 500) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def neighbourhood(index: Index, focus: str, radius: int, cap: int) -> GraphData:
    """The graph data of the nodes within ``radius`` hops of ``focus`` (an IRI)."""
    db = index.reader()
    pid, eid = _lookup(db, focus)
    papers: set[int] = {pid} if pid is not None else set()
    entities: set[int] = {eid} if eid is not None else set()
    frontier_p, frontier_e = set(papers), set(entities)
    links: list[tuple[int, int, str]] = []  # (pid, eid, relation)
    for _hop in range(radius):
        found: list[tuple[int, int, str]] = []
        for chunk in _chunks(sorted(frontier_p)):
            found += db.execute(
                f"SELECT pid, eid, rel FROM links WHERE pid IN ({','.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
        for chunk in _chunks(sorted(frontier_e)):
            found += db.execute(
                f"SELECT pid, eid, rel FROM links WHERE eid IN ({','.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
        links += found
        frontier_p = {p for p, _e, _r in found} - papers
        frontier_e = {e for _p, e, _r in found} - entities
        papers |= frontier_p
        entities |= frontier_e
        if len(papers) + len(entities) > cap:
            raise NeighbourhoodTooLarge(len(papers) + len(entities), cap)
        if not frontier_p and not frontier_e:
            break
    return _graph_data(index, papers, entities, links)


def entity_star(index: Index, focus: str, request: GraphRequest, cap: int) -> GraphData | None:
    """The depth-1 bipartite neighbourhood of an entity (None: ``focus`` is not
    one), reading only the papers the node limit keeps.

    :func:`kg.read.graphview.build_graph` keeps the focus, then its papers by
    IRI (each paper has the same support there: one edge, to the focus), so the
    first ``limit - 1`` papers by IRI are read and the others only counted."""
    db = index.reader()
    row = db.execute("SELECT eid FROM entities WHERE iri = ?", (focus,)).fetchone()
    if row is None:
        return None
    eid = row[0]
    links: list[tuple[int, int, str]] = []
    omitted = 0
    if "Paper" in request.types:
        # The entity's paper count is kept at write time; counting its links
        # grew with its papers (13k for the top task at 100k papers).
        (papers,) = db.execute("SELECT papers FROM entities WHERE eid = ?", (eid,)).fetchone()
        keep = papers if request.limit is None else min(papers, request.limit - 1)
        if keep + 1 > cap:
            raise NeighbourhoodTooLarge(papers + 1, cap)
        omitted = papers - keep
        # The first papers by IRI are the first by id (an IRI is the id with only
        # unreserved characters left as they are, and ids are hashes), so their
        # links are one range of the links' primary key, up to the last kept
        # paper's id: the walk stops there, where sorting the papers by IRI read
        # them all, and no lookup per paper (links of 424 papers looked up by
        # pid: 1.1 ms; their range: 0.14 ms). One row: see _graph_data.
        (found,) = db.execute(
            "SELECT json_group_array(json_array(pid, eid, rel)) FROM links WHERE eid = ? "
            "AND paper_id <= (SELECT max(paper_id) FROM (SELECT DISTINCT paper_id FROM links "
            "WHERE eid = ? ORDER BY paper_id LIMIT ?))",
            (eid, eid, keep),
        ).fetchone()
        links = [(pid, e, rel) for pid, e, rel in json.loads(found)]
    pids = {pid for pid, _e, _rel in links}
    data = _graph_data(index, pids, {eid}, links)
    data.omitted = omitted
    data.star = focus
    return data


def _graph_data(
    index: Index, papers: set[int], entities: set[int], links: list[tuple[int, int, str]]
) -> GraphData:
    db = index.reader()
    data = GraphData()
    piri: dict[int, str] = {}
    for chunk in _chunks(sorted(papers)):
        # The abstract's start labels only a paper without a title: reading it
        # from the full-text table for every paper cost a lookup each. The rows
        # come as one JSON value: a row per paper hands the GIL over per row, and
        # under concurrent requests each hand-back can wait a switch interval.
        (found,) = db.execute(
            "SELECT json_group_array(json_array(p.pid, p.iri, p.id, p.title, "
            "CASE WHEN coalesce(p.title, '') = '' THEN (SELECT substr(f.abstract, 1, 300) "
            "FROM papers_fts f WHERE f.rowid = p.pid) END)) "
            f"FROM papers p WHERE p.pid IN ({','.join('?' * len(chunk))})",
            chunk,
        ).fetchone()
        for pid, iri, paper_id, title, snippet in json.loads(found):
            piri[pid] = iri
            data.nodes[iri] = {
                "iri": iri,
                "label": paper_label(title or None, snippet, paper_id),
                "type": "Paper",
                "paper_count": 1,
                "aliases": "",
            }
    eiri: dict[int, str] = {}
    names: dict[int, list[str]] = defaultdict(list)
    for chunk in _chunks(sorted(entities)):
        marks = ",".join("?" * len(chunk))
        for eid, name in db.execute(f"SELECT eid, name FROM names WHERE eid IN ({marks})", chunk):
            names[eid].append(clean_text(name))
        for eid, iri, type_name, label, count in db.execute(
            f"SELECT eid, iri, type, label, papers FROM entities WHERE eid IN ({marks}) "
            "AND papers > 0 AND type IS NOT NULL",
            chunk,
        ):
            eiri[eid] = iri
            shown = clean_text(label or "") or local_name(iri)
            data.nodes[iri] = {
                "iri": iri,
                "label": shown,
                "type": type_name,
                "paper_count": count,
                "aliases": "; ".join(sorted({a for a in names[eid] if a and a != shown})),
            }
    for pid, eid, rel in links:
        if pid in piri and eid in eiri:
            data.links.setdefault((piri[pid], eiri[eid]), set()).add(rel)
    for paper, entity in data.links:
        data.entities_of[paper].add(entity)
        data.papers_of[entity].add(paper)
    return data


def _solutions(result: object) -> Iterator[Any]:
    """The rows of a SELECT result (a named SELECT query always gives one)."""
    assert isinstance(result, QuerySolutions)
    return iter(result)
