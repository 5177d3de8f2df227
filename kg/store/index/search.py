"""Search by name from the index: entities whose names contain a text
(:func:`search_entities`, ``GET /search``) and the explorer's search box
(:func:`search`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
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
        seen = [item["eid"] for item in found]
        names = _fixed(*kind) if kind is not None else _prefixed(db, low, seen, limit)
        found += _best_entities(db, names, low, seen, limit - len(found))
    for item in found:
        del item["eid"]
    return found


Names = Callable[[int], tuple[str, tuple[Any, ...]]]
"""(entity, name, lower-cased name) rows to rank, as SQL and arguments, given
how many rows the ranking will read (-1: all)."""


def _fixed(sql: str, args: tuple[Any, ...]) -> Names:
    return lambda _budget: (sql, args)


def _prefixed(db: sqlite3.Connection, low: str, seen: list[int], wanted: int) -> Names:
    """The (entity, name) rows of names starting with ``low`` that can be on
    the page: those of the top popularity tiers when these hold ``wanted``
    entities (see :func:`kg.store.index.read.ranked_entities`), so a common
    prefix does not sort every entity it names; else every one of the upper
    tiers and the first of tier 1's.

    Every entity of tier 1 has one paper, so they rank by their names' length
    and IRI, which ``tier_names`` holds: those rows are sorted alone and only
    the ``budget`` best are joined to ``names`` (3,200 names start with
    ``diffusion`` at 100k papers, nearly all in tier 1; joining and sorting all
    of them was most of ``/search?q=diffusion``)."""
    # Tier 1, where most names are, is not counted: it is either not needed or
    # read through its ranked rows.
    upper = [t for t in ix.tiers_of(db, ENTITY_CLASSES) if t > 1]
    per_tier = ix.named_per_tier(db, ENTITY_CLASSES, upper, low)
    top = ix.top_tiers(per_tier, wanted)
    types = ",".join("?" * len(ENTITY_CLASSES))
    tiered = (
        "SELECT n.eid, n.name, n.lname FROM tier_names t CROSS JOIN names n "
        "ON n.lname = t.lname AND n.eid = t.eid "
        f"WHERE t.type IN ({types}) AND t.tier IN ({','.join('?' * len(top))}) "
        "AND t.lname >= ? AND t.lname < ?"
    )
    tiered_args = (*ENTITY_CLASSES, *top, low, low + PREFIX_END)
    if sum(per_tier[t] for t in top) >= wanted:
        return _fixed(tiered, tiered_args)
    # The order of _best_entities among equal paper counts, on tier 1's rows.
    first = (
        "SELECT n.eid, n.name, n.lname FROM (SELECT eid, lname FROM tier_names "
        f"WHERE type IN ({types}) AND tier = 1 AND lname >= ? AND lname < ? "
        f"AND eid NOT IN ({','.join('?' * len(seen))}) "
        "ORDER BY length(lname), iri, lname LIMIT ?) t "
        "CROSS JOIN names n ON n.lname = t.lname AND n.eid = t.eid"
    )
    first_args = (*ENTITY_CLASSES, low, low + PREFIX_END, *seen)
    return lambda budget: (
        f"{tiered} UNION ALL {first}",
        (*tiered_args, *first_args, budget),
    )


ROWS_PER_ENTITY = 4
"""(entity, name) rows :func:`_best_entities` reads per entity wanted before it
reads them all."""


def _best_entities(
    db: sqlite3.Connection,
    names: Names,
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
    budget = wanted * ROWS_PER_ENTITY
    while True:
        names_sql, args = names(budget)
        sql = (
            f"SELECT e.eid, e.iri, e.type, e.label, e.papers, m.name FROM ({names_sql}) m "
            "CROSS JOIN entities e ON e.eid = m.eid WHERE instr(m.lname, ?) > 0 "
            f"AND e.papers > 0 AND m.eid NOT IN ({','.join('?' * len(seen))}) "
            "ORDER BY e.papers DESC, length(m.lname), e.iri, m.name LIMIT ?"
        )
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
