"""The index's consolidation evidence: each paper's surface forms and acronym
definitions (:mod:`kg.mapping.consolidation`), kept beside its other rows so
that consolidation after a write reads the evidence it needs by key instead of
scanning every paper graph of the store.

* ``surfaces`` — one row per ``kg:SurfaceForm``: its key, label, type,
  confidence, aliases, the node it is resolved to, and ``short`` (the acronym it
  is written as, when it is one: what the corpus's acronym decisions count);
* ``acronyms`` — one row per ``(short form, long form)`` a paper defines, with
  the short form as the decisions group it and the long form's key.

A file made before these tables has them empty; the ``evidence`` row of
``meta`` says they hold every paper (a new file, or one ``kg reindex`` filled),
and only then does consolidation read from them.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from pyoxigraph import Quad

from kg.extraction.canonical import canonical_key
from kg.mapping.consolidation import Surface, acronym_short, text
from kg.vocab import KG, RDF

EVIDENCE_SCHEMA = """
CREATE TABLE IF NOT EXISTS surfaces (
  pid INTEGER NOT NULL, graph TEXT NOT NULL, iri TEXT NOT NULL, type TEXT NOT NULL,
  key TEXT NOT NULL, label TEXT NOT NULL, confidence REAL NOT NULL, aliases TEXT NOT NULL,
  resolved TEXT, short TEXT);
CREATE INDEX IF NOT EXISTS surfaces_pid ON surfaces (pid);
CREATE INDEX IF NOT EXISTS surfaces_key ON surfaces (key);
CREATE INDEX IF NOT EXISTS surfaces_short ON surfaces (short) WHERE short IS NOT NULL;
CREATE TABLE IF NOT EXISTS acronyms (
  pid INTEGER NOT NULL, graph TEXT NOT NULL, short TEXT NOT NULL, written TEXT NOT NULL,
  long TEXT NOT NULL, long_key TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS acronyms_pid ON acronyms (pid);
CREATE INDEX IF NOT EXISTS acronyms_short ON acronyms (short);
CREATE INDEX IF NOT EXISTS acronyms_long ON acronyms (long_key);
"""

_TYPE, _SURFACE, _DEFINITION = RDF.type, KG.SurfaceForm, KG.AcronymDefinition
_ALIAS, _LONG = KG.surfaceAlias, KG.longForm
_PROPS = {
    KG.surfaceType: "type",
    KG.surfaceKey: "key",
    KG.text: "label",
    KG.confidence: "confidence",
    KG.resolvedTo: "resolved",
    KG.shortForm: "short",
}


@dataclass(slots=True)
class Evidence:
    """Surface forms and acronym definitions ``(graph, short, long)`` of one paper or more."""

    surfaces: list[Surface]
    definitions: list[tuple[str, str, str]]


def evidence_rows(quads: Iterable[Quad]) -> Evidence:
    """The evidence in one paper's quads (what the ``store/surface-forms``,
    ``surface-aliases`` and ``acronym-definitions`` queries read)."""
    kinds: dict[str, str] = {}
    graph_of: dict[str, str] = {}
    props: dict[str, dict[str, str]] = defaultdict(dict)
    multi: dict[str, list[str]] = defaultdict(list)
    for q in quads:
        # Most quads are none of these: test the predicate before reading strings.
        pred = q.predicate
        if pred == _TYPE:
            o = q.object
            if o in (_SURFACE, _DEFINITION):
                s = text(q.subject)
                kinds[s] = text(o)
                graph_of[s] = text(q.graph_name)
        elif pred in _PROPS:
            props[text(q.subject)][_PROPS[pred]] = text(q.object)
        elif pred in (_ALIAS, _LONG):
            multi[text(q.subject)].append(text(q.object))
    surfaces, definitions = [], []
    for iri, kind in sorted(kinds.items()):
        p = props[iri]
        if kind == _DEFINITION.value:
            definitions += [
                (graph_of[iri], p["short"], long) for long in multi[iri] if "short" in p
            ]
        elif {"type", "key", "label", "confidence"} <= p.keys():
            surfaces.append(
                Surface(
                    paper=graph_of[iri],
                    iri=iri,
                    type=p["type"].rsplit("#", 1)[-1],
                    key=p["key"],
                    label=p["label"],
                    confidence=float(p["confidence"]),
                    aliases=tuple(sorted(multi[iri])),
                    resolved=p.get("resolved"),
                )
            )
    return Evidence(surfaces, sorted(definitions))


def add_evidence(db: sqlite3.Connection, pid: int, evidence: Evidence | None) -> None:
    """Add a paper's evidence rows (inside the index's write transaction), if it has any."""
    if evidence is None:
        return
    db.executemany(
        "INSERT INTO surfaces VALUES (?,?,?,?,?,?,?,?,?,?)",
        [
            (
                pid,
                s.paper,
                s.iri,
                s.type,
                s.key,
                s.label,
                s.confidence,
                json.dumps(s.aliases),
                s.resolved,
                acronym_short(s.label),
            )  # fmt: skip
            for s in evidence.surfaces
        ],
    )
    db.executemany(
        "INSERT INTO acronyms VALUES (?,?,?,?,?,?)",
        [
            (pid, graph, acronym_short(short, shaped=False), short, long, canonical_key(long))
            for graph, short, long in evidence.definitions
        ],
    )


def remove_evidence(db: sqlite3.Connection, pid: int) -> None:
    """Take a paper's evidence rows out."""
    db.execute("DELETE FROM surfaces WHERE pid=?", (pid,))
    db.execute("DELETE FROM acronyms WHERE pid=?", (pid,))


_SURFACE_COLUMNS = "graph, iri, type, key, label, confidence, aliases, resolved"


def _surface(row: tuple) -> Surface:
    graph, iri, type_name, key, label, confidence, aliases, resolved = row
    return Surface(
        graph, iri, type_name, key, label, confidence, tuple(json.loads(aliases)), resolved
    )


def surfaces_by_key(db: sqlite3.Connection, key: str) -> list[Surface]:
    """Surface forms with this key, or with a key that continues it (``key-…``)."""
    rows = db.execute(
        f"SELECT {_SURFACE_COLUMNS} FROM surfaces WHERE key = ? OR (key > ? AND key < ?)",
        (key, key + "-", key + "."),
    )
    return [_surface(r) for r in rows]


def surfaces_by_short(db: sqlite3.Connection, short: str) -> list[Surface]:
    """Surface forms written as this acronym."""
    rows = db.execute(f"SELECT {_SURFACE_COLUMNS} FROM surfaces WHERE short = ?", (short,))
    return [_surface(r) for r in rows]


def definitions_by_short(db: sqlite3.Connection, short: str) -> list[tuple[str, str, str]]:
    """Definitions of this acronym ``(graph, short as written, long)``."""
    rows = db.execute("SELECT graph, written, long FROM acronyms WHERE short = ?", (short,))
    return rows.fetchall()


def definitions_by_long_key(db: sqlite3.Connection, key: str) -> list[tuple[str, str, str]]:
    """Definitions whose long form has this key, or a key that continues it."""
    rows = db.execute(
        "SELECT graph, written, long FROM acronyms "
        "WHERE long_key = ? OR (long_key > ? AND long_key < ?)",
        (key, key + "-", key + "."),
    )
    return rows.fetchall()


def all_evidence(db: sqlite3.Connection) -> Evidence:
    """Every paper's evidence."""
    surfaces = [_surface(r) for r in db.execute(f"SELECT {_SURFACE_COLUMNS} FROM surfaces")]
    definitions = db.execute("SELECT graph, written, long FROM acronyms").fetchall()
    return Evidence(surfaces, definitions)


def papers_evidence(db: sqlite3.Connection, paper_ids: Iterable[str]) -> Evidence:
    """The evidence of these papers (by id)."""
    ids = sorted(set(paper_ids))
    surfaces: list[Surface] = []
    definitions: list[tuple[str, str, str]] = []
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        pids = f"SELECT pid FROM papers WHERE id IN ({','.join('?' * len(chunk))})"
        rows = db.execute(f"SELECT {_SURFACE_COLUMNS} FROM surfaces WHERE pid IN ({pids})", chunk)
        surfaces += [_surface(r) for r in rows]
        definitions += db.execute(
            f"SELECT graph, written, long FROM acronyms WHERE pid IN ({pids})", chunk
        ).fetchall()
    return Evidence(surfaces, definitions)
