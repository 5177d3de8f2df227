"""Search by name from the index: entities whose names contain a text
(:func:`search_entities`, ``GET /search``) and the explorer's search box
(:func:`search`)."""

from __future__ import annotations

import sqlite3
from typing import Any

from kg.read.labels import clean_text, local_name, paper_label
from kg.store.index import read as ix
from kg.store.index.db import Index
from kg.store.index.read import PREFIX_END
from kg.store.index.rows import ENTITY_CLASSES


def search(index: Index, text: str, limit: int = 20) -> list[dict[str, Any]]:
    """The explorer's search from the index: a paper whose id is ``text`` first,
    then entities whose names contain it (exact names first, most papers
    first), then papers by BM25 — the shape of :func:`kg.graphview.search`."""
    text = text.strip()
    if not text:
        return []
    out: list[dict[str, Any]] = []
    exact = (
        index.reader()
        .execute(
            "SELECT p.iri, p.id, p.title, substr(f.abstract, 1, 200) FROM papers p "
            "JOIN papers_fts f ON f.rowid = p.pid WHERE p.id = ?",
            (text,),
        )
        .fetchall()
    )
    found = [(iri, pid, title, snippet, 1) for iri, pid, title, snippet in exact]
    for e in search_entities(index, text, limit):
        out.append(
            {
                "iri": e["iri"],
                "type": e["type"],
                "label": clean_text(e["label"] or "") or local_name(e["iri"]),
                "match": clean_text(e["matched"]),
                "papers": e["papers"],
            }
        )
    ranked = [(iri, pid) for iri, pid, _title in ix.search_papers(index, text, limit)]
    ranked = [(iri, pid) for iri, pid in ranked if not exact or pid != text]
    # One read for every paper's snippet (see ix.fetch_rows), not one per paper.
    listed = ix.fetch_rows(
        index.reader(),
        "SELECT p.id, p.title, substr(f.abstract, 1, 200) FROM papers p JOIN papers_fts f "
        f"ON f.rowid = p.pid WHERE p.id IN ({','.join('?' * len(ranked))})",
        [pid for _iri, pid in ranked],
        3,
    )
    snippets = {pid: (title, snippet) for pid, title, snippet in listed}
    found += [(iri, pid, *snippets[pid], 0) for iri, pid in ranked if pid in snippets]
    papers = [
        {
            "iri": iri,
            "type": "Paper",
            "label": paper_label(None, title or snippet, pid),
            "match": clean_text(title or snippet or ""),
            "papers": 1,
        }
        for iri, pid, title, snippet, _exact in found
    ]
    return (papers[: len(exact)] + out + papers[len(exact) :])[:limit]


def search_entities(index: Index, text: str, limit: int) -> list[dict[str, Any]]:
    """Entities with papers whose label or an alias contains ``text`` (any
    case): exact matches first, then prefix matches, then others; most papers
    first among equals, then shorter names.

    Each kind of match is one ranked, limited SQL query, asked only while the
    page is not full: a later kind is reached only when every entity with
    papers of the earlier kinds is on the page, so an entity never shows twice
    and a common prefix does not read the substring matches."""
    low = text.lower()
    db = index.reader()
    if len(low) >= 3:
        phrase = '"' + low.replace('"', '""') + '"'
        substring = ("SELECT eid, name, lname FROM names_tri WHERE names_tri MATCH ?", (phrase,))
    else:
        substring = ("SELECT eid, name, lname FROM names WHERE instr(lname, ?) > 0", (low,))
    exact = ("SELECT eid, name, lname FROM names WHERE lname = ?", (low,))
    found: list[dict[str, Any]] = []
    # None: the prefix kind, whose rows are chosen (by tier) only when it is reached.
    for kind in (exact, None, substring):
        if len(found) >= limit:
            break
        names, args = kind if kind is not None else _prefixed(db, low, limit)
        found += _best_entities(
            db, names, args, low, [item["eid"] for item in found], limit - len(found)
        )
    for item in found:
        del item["eid"]
    return found


def _prefixed(db: sqlite3.Connection, low: str, wanted: int) -> tuple[str, tuple[Any, ...]]:
    """The (entity, name) rows of names starting with ``low``: only those in
    the top popularity tiers when these hold ``wanted`` entities (the page's,
    with the exact matches already on it; see
    :func:`kg.store.index.read.ranked_entities`), so a common prefix does not
    sort every entity it names; else all of them (the entities of tier 1,
    one paper each, are ordered by name length, which no index holds)."""
    # Tier 1, where most names are, is not counted: it is either not needed or read whole.
    upper = [t for t in ix.tiers_of(db, ENTITY_CLASSES) if t > 1]
    per_tier = ix.named_per_tier(db, ENTITY_CLASSES, upper, low)
    top = ix.top_tiers(per_tier, wanted)
    if sum(per_tier[t] for t in top) < wanted:
        return (
            "SELECT eid, name, lname FROM names WHERE lname >= ? AND lname < ?",
            (low, low + PREFIX_END),
        )
    return (
        "SELECT n.eid, n.name, n.lname FROM tier_names t CROSS JOIN names n "
        "ON n.lname = t.lname AND n.eid = t.eid "
        f"WHERE t.type IN ({','.join('?' * len(ENTITY_CLASSES))}) "
        f"AND t.tier IN ({','.join('?' * len(top))}) AND t.lname >= ? AND t.lname < ?",
        (*ENTITY_CLASSES, *top, low, low + PREFIX_END),
    )


ROWS_PER_ENTITY = 4
"""(entity, name) rows :func:`_best_entities` reads per entity wanted before it
reads them all."""


def _best_entities(
    db: sqlite3.Connection,
    names: str,
    args: tuple[Any, ...],
    low: str,
    seen: list[int],
    wanted: int,
) -> list[dict[str, Any]]:
    """The ``wanted`` entities with papers, not in ``seen``, whose names from
    ``names`` contain ``low``: most papers, then the shortest matching name,
    then IRI first; each with its shortest matching name.

    Rows are (entity, name) pairs sorted by the entities' order and then by
    name length, so an entity's first row carries its shortest name, and
    entities in order of first rows are in the order wanted. A SQL window
    picking each entity's shortest name first cost twice the whole query
    (14 against 6 ms for 3,300 prefix matches at 100k papers); a few rows
    per entity are read instead, and all of them only if that was too few."""
    # One row for the page: see ix.fetch_rows.
    sql = (
        f"SELECT e.eid, e.iri, e.type, e.label, e.papers, m.name FROM ({names}) m "
        "CROSS JOIN entities e ON e.eid = m.eid WHERE instr(m.lname, ?) > 0 AND e.papers > 0 "
        f"AND m.eid NOT IN ({','.join('?' * len(seen))}) "
        "ORDER BY e.papers DESC, length(m.name), e.iri, m.name LIMIT ?"
    )
    budget = wanted * ROWS_PER_ENTITY
    while True:
        rows = ix.fetch_rows(db, sql, (*args, low, *seen, budget), 6)
        found: dict[int, dict[str, Any]] = {}
        for eid, iri, t, label, n, name in rows:
            if eid not in found:
                found[eid] = {
                    "eid": eid,
                    "iri": iri,
                    "type": t,
                    "label": label,
                    "papers": n,
                    "matched": name,
                }
        if len(found) >= wanted or len(rows) < budget or budget < 0:
            return list(found.values())[:wanted]
        budget = -1  # no limit: every matching row
