"""Reads from the index: the answers REST would otherwise compute by scanning.

Each function returns plain tuples and dicts; :mod:`service.rest_data` shapes
them into the API's JSON exactly as it shapes the named queries' results.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from kg.store.index.counters import kind_key, tier
from kg.store.index.db import Index
from kg.store.index.kept import filter_papers, ranked_window, text_hits, tier_counts

_WORD = re.compile(r"\w+", re.UNICODE)
PREFIX_END = "\U0010ffff"  # sorts after every character: the end of a prefix range


def fetch_rows(db: sqlite3.Connection, sql: str, args: Sequence[Any], width: int) -> list[Any]:
    """A query's rows, in its order, fetched as one row (a JSON array of arrays).

    Python's sqlite3 lets go of the GIL for every row it steps to; under
    concurrent requests each hand-back can wait a switch interval (5 ms) for a
    thread running Python, so a page of 20 rows could wait 20 times. Only for
    text and integer columns, which JSON carries exactly; ``width``: columns."""
    cols = ", ".join(f"c{i}" for i in range(width))
    (listed,) = db.execute(
        f"WITH q({cols}) AS ({sql}) SELECT json_group_array(json_array({cols})) FROM q", args
    ).fetchone()
    return [tuple(row) for row in json.loads(listed)]


def fts_query(text: str) -> str | None:
    """The FTS5 query for free text: every word, each quoted (so no FTS syntax
    from the client is ever interpreted), all required. None: no word at all."""
    words = _WORD.findall(text)
    return " ".join(f'"{w}"' for w in words) if words else None


def count(index: Index, key: str) -> int:
    """One maintained counter (``class:Paper``, ``linked:Task``…)."""
    row = index.reader().execute("SELECT n FROM counts WHERE key=?", (key,)).fetchone()
    return int(row[0]) if row else 0


def class_counts(index: Index) -> dict[str, int]:
    """Class local name → instances, as ``class-counts.rq`` counts them."""
    rows = index.reader().execute("SELECT key, n FROM counts WHERE key LIKE 'class:%'")
    return {key[6:]: n for key, n in rows if n}


def entity_id(index: Index, iri: str) -> int | None:
    """The index's row id of an entity."""
    row = index.reader().execute("SELECT eid FROM entities WHERE iri=?", (iri,)).fetchone()
    return row[0] if row else None


def entity_papers_count(index: Index, iri: str) -> int:
    """How many papers link the entity."""
    row = index.reader().execute("SELECT papers FROM entities WHERE iri=?", (iri,)).fetchone()
    return int(row[0]) if row else 0


def preferred_labels(index: Index, iris: Iterable[str]) -> dict[str, str]:
    """The preferred label of each of these entities that has one (what the store's
    ``skos:prefLabel`` says, while the index is in step with it)."""
    found: dict[str, str] = {}
    wanted = sorted(set(iris))
    for at in range(0, len(wanted), 500):  # under SQLite's bound-parameter limit
        chunk = wanted[at : at + 500]
        found.update(
            index.reader().execute(
                f"SELECT iri, label FROM entities WHERE iri IN ({_marks(chunk)}) "
                "AND label IS NOT NULL",
                chunk,
            )
        )
    return found


def papers(index: Index, limit: int, offset: int) -> tuple[int, list[tuple[str, str, str | None]]]:
    """All papers by id: the total and one page of (iri, id, title)."""
    rows = fetch_rows(
        index.reader(),
        "SELECT iri, id, title FROM papers ORDER BY id LIMIT ? OFFSET ?",
        (limit, offset),
        3,
    )
    return count(index, "class:Paper"), rows


RANK_WINDOW = 2000
"""Most matches of a text query ranked by BM25: a query matching more papers
ranks the ``RANK_WINDOW`` most recently indexed of them (the rest follow, newest
first), so its cost stays bounded however many papers contain a common word."""


def filtered_papers(
    index: Index,
    entities: Sequence[str | Sequence[str]],
    text: str | None,
    limit: int,
    offset: int,
) -> tuple[int, list[tuple[str, str, str | None]]]:
    """Papers linking every entity and matching ``text``: the total and one page
    of (iri, id, title) — ranked for text alone (see :func:`text_papers`), else
    by id. An entry of ``entities`` that is a list of IRIs is met by a paper
    linking any of them (a task and its narrower tasks)."""
    match = fts_query(text) if text is not None else None
    if text is not None and match is None:
        return 0, []
    groups: list[tuple[int, list[int]]] = []  # (papers at most, entity row ids)
    for entry in entities:
        iris = [entry] if isinstance(entry, str) else list(entry)
        sizes = _entity_sizes(index, iris)
        if not sizes:
            return 0, []
        groups.append((sum(sizes.values()), sorted(sizes)))
    if not groups:
        return text_papers(index, match, limit, offset) if match else papers(index, limit, offset)
    db = index.reader()
    if len(groups) == 1 and len(groups[0][1]) == 1 and match is None:
        size, (eid,) = groups[0]
        rows = fetch_rows(
            db,
            "SELECT p.iri, p.id, p.title FROM (SELECT DISTINCT paper_id, pid FROM links "
            "WHERE eid = ? ORDER BY paper_id LIMIT ? OFFSET ?) l JOIN papers p ON p.pid = l.pid "
            "ORDER BY l.paper_id",
            (eid, limit, offset),
            3,
        )
        return size, rows
    # The rarest entity's papers drive; each is checked against the other
    # filters by primary-key lookups, so the cost follows the smallest list,
    # not the store.
    groups.sort()
    (_, driver), others = groups[0], groups[1:]
    sql = f"SELECT DISTINCT l.paper_id, l.pid FROM links l WHERE l.eid IN ({_marks(driver)})"
    args: list[Any] = list(driver)
    for _size, eids in others:
        sql += (
            f" AND EXISTS (SELECT 1 FROM links x WHERE x.eid IN ({_marks(eids)}) "
            "AND x.paper_id = l.paper_id)"
        )
        args += eids
    if len(groups) == 2 and len(driver) == len(others[0][1]) == 1 and match is None:
        # Two entities: the co-occurrence table counts their shared papers, and
        # the page stops once full (the driver's list is read in id order).
        row = db.execute(
            "SELECT n FROM cooc WHERE a = ? AND b = ?", (driver[0], others[0][1][0])
        ).fetchone()
        page = db.execute(f"{sql} ORDER BY l.paper_id LIMIT ? OFFSET ?", [*args, limit, offset])
        return (row[0] if row else 0), _papers_by_pid(db, [pid for _id, pid in page.fetchall()])
    # The papers the filters leave, in id order, come as one row (a row per paper
    # hands the GIL over per row, and under concurrent requests each hand-back
    # can wait a switch interval), kept by the connection until the next write
    # with the word's hit bitmap (kept.py): reinforcement learning and its 16
    # narrower tasks have 15,070 papers at 100k, read row by row at 162 ms p50
    # at c=4 (31 ms once, then 1 ms). The word's test is a numpy gather over all
    # of them at once.
    pids = filter_papers(db, f"SELECT pid FROM ({sql} ORDER BY l.paper_id)", args)
    if match is not None:
        bits = np.frombuffer(text_hits(db, match), dtype=np.uint8)
        pids = pids[(pids >> 3) < bits.size]  # past the bitmap's end: no text matched
        pids = pids[(bits[pids >> 3] >> (pids & 7)) & 1 == 1]
    shown = [int(pid) for pid in pids[offset : offset + limit]]
    return int(pids.size), _papers_by_pid(db, shown)


def text_papers(
    index: Index, match: str, limit: int, offset: int
) -> tuple[int, list[tuple[str, str, str | None]]]:
    """Papers matching an FTS query: the total and one page, best BM25 first
    among the newest :data:`RANK_WINDOW` matches, then the older ones newest
    first (all of them by BM25 when there are no more than the window)."""
    db = index.reader()
    # The count from the query's kept hit bitmap: counting the FTS matches
    # walks every one of them each time (6 ms for "diffusion" at 100k papers).
    total = int.from_bytes(text_hits(db, match), "little").bit_count()
    window = min(total, RANK_WINDOW)
    rows: list[Any] = []
    if offset < window:
        ranked = ranked_window(db, match, window)
        rows = _papers_by_pid(db, [int(pid) for pid in ranked[offset : offset + limit]])
    if len(rows) < limit and offset + len(rows) < total:
        rest = db.execute(
            "SELECT rowid FROM papers_fts WHERE papers_fts MATCH ? ORDER BY rowid DESC "
            "LIMIT ? OFFSET ?",
            (match, limit - len(rows), max(offset, window)),
        ).fetchall()
        rows += _papers_by_pid(db, [pid for (pid,) in rest])
    return total, rows


def _marks(items: Sequence[object]) -> str:
    return ",".join("?" * len(items))


def _entity_sizes(index: Index, iris: list[str]) -> dict[int, int]:
    """Row id → papers of each of these entities the index knows."""
    rows = index.reader().execute(
        f"SELECT eid, papers FROM entities WHERE iri IN ({_marks(iris)})", iris
    )
    return dict(rows.fetchall())


def _papers_by_pid(db: sqlite3.Connection, pids: list[int]) -> list[tuple[str, str, str | None]]:
    """(iri, id, title) of these papers, in the order given."""
    if not pids:
        return []
    found = {
        pid: (iri, paper_id, title)
        for pid, iri, paper_id, title in fetch_rows(
            db, f"SELECT pid, iri, id, title FROM papers WHERE pid IN ({_marks(pids)})", pids, 4
        )
    }
    return [found[pid] for pid in pids if pid in found]


def search_papers(index: Index, text: str, limit: int) -> list[tuple[str, str, str | None]]:
    """The best ``limit`` papers for free text by BM25 (title and abstract)."""
    return filtered_papers(index, [], text, limit, 0)[1]


def ranked_entities(
    index: Index, type_name: str, prefix: str | None, limit: int, offset: int
) -> tuple[int, list[tuple[str, str, str | None, int]]]:
    """Entities of a type with papers, most papers first, ties by IRI; with
    ``prefix``, only those with a label or alias starting with it (any case),
    ties by their first such name, then IRI: the total and one page of (iri,
    type, label, papers)."""
    db = index.reader()
    if prefix is None:
        rows = fetch_rows(
            db,
            "SELECT iri, type, label, papers FROM entities WHERE type = ? AND papers > 0 "
            "ORDER BY papers DESC, iri LIMIT ? OFFSET ?",
            (type_name, limit, offset),
            4,
        )
        return count(index, "linked:" + type_name), rows
    low = prefix.lower()
    # Per tier, the names in the prefix's range are one B-tree range of
    # tier_names (see kg.store.index.counters); every entity of a tier has more
    # papers than any of a lower one, so the page is in the top tiers that
    # hold offset + limit entities, and only those are sorted. Each entity has
    # one row in the range (FIRST_NAME), its first name there, which breaks
    # ties in paper counts.
    per_tier = named_per_tier(db, [type_name], tiers_of(db, [type_name]), low)
    total = sum(per_tier.values())
    if not total or offset >= total:
        return total, []
    top = top_tiers(per_tier, offset + limit)
    upper = [t for t in top if t > 1]
    sql = (
        "SELECT e.iri, e.type, e.label, e.papers FROM tier_names t CROSS JOIN entities e "
        f"ON e.eid = t.eid WHERE t.type = ? AND t.tier IN ({_marks(upper)}) AND t.lname >= ? "
        f"AND t.lname < ? AND {FIRST_NAME} ORDER BY e.papers DESC, t.lname, e.iri"
    )
    args = (type_name, *upper, low, low + PREFIX_END, low)
    if 1 not in top:
        return total, fetch_rows(db, f"{sql} LIMIT ? OFFSET ?", (*args, limit, offset), 4)
    # The tiers above 1 hold fewer than offset + limit entities: all of them,
    # then tier 1's, where every entity has one paper, so they are in name
    # order, the rows' own: the walk stops at the page (SQLite sorts only
    # equal names by IRI), where ordering by IRI sorted every match (3,255
    # methods under "tra" at 100k papers), and only the page's entities are
    # looked up.
    held = fetch_rows(db, sql, args, 4) if upper else []
    page = held[offset : offset + limit]
    iris = db.execute(
        "SELECT iri FROM tier_names t WHERE type = ? AND tier = 1 AND lname >= ? AND lname < ? "
        f"AND {FIRST_NAME} ORDER BY lname, iri LIMIT ? OFFSET ?",
        (type_name, low, low + PREFIX_END, low, limit - len(page), max(0, offset - len(held))),
    )
    return total, page + _entity_rows(db, [iri for (iri,) in iris])


FIRST_NAME = "(t.prev IS NULL OR t.prev < ?)"
"""A tier_names row that is its entity's first name in a prefix's range (its
previous name is before the prefix): counting these counts entities, not names."""


def _entity_rows(db: sqlite3.Connection, iris: list[str]) -> list[tuple[str, str, str | None, int]]:
    """(iri, type, label, papers) of these entities, in the order given."""
    found = {
        r[0]: r
        for r in fetch_rows(
            db,
            f"SELECT iri, type, label, papers FROM entities WHERE iri IN ({_marks(iris)})",
            iris,
            4,
        )
    }
    return [found[iri] for iri in iris if iri in found]


def tiers_of(db: sqlite3.Connection, types: Sequence[str]) -> list[int]:
    """Every tier an entity of these types can be in, highest first (the most
    papers of each type is the first row of its ``entities_rank`` range)."""
    most = max(
        (
            db.execute(
                "SELECT papers FROM entities WHERE type = ? ORDER BY papers DESC LIMIT 1", (t,)
            ).fetchone()
            or (0,)
        )[0]
        for t in types
    )
    return list(range(tier(most), 0, -1))


def named_per_tier(
    db: sqlite3.Connection, types: Sequence[str], tiers: Sequence[int], low: str
) -> dict[int, int]:
    """Tier → entities of these types having a name that starts with ``low``."""
    if not tiers:
        return {}
    # tier IN (...) with the types listed: one range seek per (type, tier), not a
    # scan of every name of the tiers above the lowest.
    return tier_counts(
        db,
        f"SELECT tier, count(*) FROM tier_names t WHERE type IN ({_marks(types)}) "
        f"AND tier IN ({_marks(tiers)}) AND lname >= ? AND lname < ? AND {FIRST_NAME} "
        "GROUP BY tier",
        (*types, *tiers, low, low + PREFIX_END, low),
    )


def top_tiers(per_tier: dict[int, int], wanted: int) -> list[int]:
    """The highest tiers that together hold at least ``wanted`` entities (all if fewer)."""
    top: list[int] = []
    held = 0
    for t in sorted(per_tier, reverse=True):
        top.append(t)
        held += per_tier[t]
        if held >= wanted:
            break
    return top


def entity_papers(
    index: Index, iri: str, limit: int, offset: int = 0
) -> tuple[int, list[tuple[str, str, str | None, list[str]]]]:
    """How many papers link the entity, and ``limit`` of them by id from
    ``offset`` on, as (iri, id, title, relation IRIs)."""
    db = index.reader()
    eid = entity_id(index, iri)
    if eid is None:
        return 0, []
    rows = fetch_rows(
        db,
        # CROSS JOIN: the page's papers drive. Left to choose, SQLite read every
        # link of the entity and probed the page for each (13,400 rows, 10 ms, for
        # the most common task at 100k papers; 0.3 ms driven by the page).
        "SELECT p.iri, p.id, p.title, l.rel FROM (SELECT DISTINCT paper_id FROM links "
        "WHERE eid = ? ORDER BY paper_id LIMIT ? OFFSET ?) f CROSS JOIN links l ON l.eid = ? "
        "AND l.paper_id = f.paper_id CROSS JOIN papers p ON p.pid = l.pid "
        "ORDER BY l.paper_id, l.rel",
        (eid, limit, offset, eid),
        4,
    )
    out: dict[str, tuple[str, str, str | None, list[str]]] = {}
    for piri, pid, title, rel in rows:
        out.setdefault(pid, (piri, pid, title, []))[3].append(rel)
    return entity_papers_count(index, iri), list(out.values())


def related(
    index: Index, iri: str, type_name: str, limit: int
) -> list[tuple[str, str, str | None, int]]:
    """Entities of a type sharing papers with the entity, most shared papers
    first: (iri, type, label, shared papers)."""
    eid = entity_id(index, iri)
    if eid is None:
        return []
    # Pairs in two papers or more from their rank index, most first; then pairs
    # in one paper, which share n = 1, by id from the primary key (see db.py).
    db = index.reader()
    head = "SELECT e.iri, e.type, e.label, c.n FROM cooc c JOIN entities e ON e.eid = c.b "
    rows = fetch_rows(
        db,
        head + "WHERE c.a = ? AND c.btype = ? AND c.n > 1 ORDER BY c.n DESC, c.b LIMIT ?",
        (eid, type_name, limit),
        4,
    )
    if len(rows) < limit:
        rows += fetch_rows(
            db,
            head + "WHERE c.a = ? AND c.btype = ? AND c.n = 1 ORDER BY c.b LIMIT ?",
            (eid, type_name, limit - len(rows)),
            4,
        )
    return rows


def claims(index: Index, filters: dict[str, Any], limit: int, offset: int) -> tuple[int, list[str]]:
    """Claims matching every filter (``subject``, ``metric``, ``dataset``,
    ``kind`` as IRIs; ``min_value``/``max_value`` as numbers): the total and one
    page of claim IRIs, ordered by IRI."""
    where: list[str] = []
    args: list[Any] = []
    for name in ("subject", "metric", "dataset", "kind"):
        if name in filters:
            where.append(f"{name} = ?")
            args.append(getattr(filters[name], "value", filters[name]))
    if "min_value" in filters or "max_value" in filters:
        low = float(filters.get("min_value", float("-inf")))
        high = float(filters.get("max_value", float("inf")))
        # Behind another filter, each of its claims is checked by its values;
        # alone, the values in range are the list.
        where.append(
            "EXISTS (SELECT 1 FROM claim_values v WHERE v.cid = claims.cid "
            "AND v.number BETWEEN ? AND ?)"
            if where
            else "cid IN (SELECT cid FROM claim_values WHERE number BETWEEN ? AND ?)"
        )
        args.extend((low, high))
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    db = index.reader()
    if not where:
        total = count(index, "class:Claim")
    elif len(where) == 1 and "kind" in filters:
        # A kind alone: its counter (kg.store.index.counters), not its rows.
        total = count(index, kind_key(args[0]))
    else:
        total = db.execute(f"SELECT count(*) FROM claims {clause}", args).fetchone()[0]
    rows = fetch_rows(
        db,
        f"SELECT iri FROM claims {clause} ORDER BY iri LIMIT ? OFFSET ?",
        [*args, limit, offset],
        1,
    )
    return total, [iri for (iri,) in rows]


def paper_claims(index: Index, paper_id: str) -> list[str]:
    """The IRIs of a paper's claims."""
    rows = index.reader().execute(
        "SELECT c.iri FROM papers p JOIN claims c ON c.pid = p.pid WHERE p.id = ?", (paper_id,)
    )
    return [iri for (iri,) in rows]


def claim_details(index: Index, iris: list[str]) -> list[dict[str, Any]] | None:
    """The stored JSON of these claims, in order, with their entities' labels
    and their paper's (iri, id, title) under ``paper``; None when any claim has
    no stored JSON (an index written before it was kept).

    Two reads for the page (claims, then every label they name), not five per
    claim: see :func:`fetch_rows`."""
    if not iris:
        return []
    db = index.reader()
    try:
        rows = fetch_rows(
            db,
            "SELECT c.iri, d.detail, p.iri, p.id, p.title FROM claims c JOIN claim_details d "
            f"ON d.cid = c.cid JOIN papers p ON p.pid = c.pid WHERE c.iri IN ({_marks(iris)})",
            iris,
            5,
        )
    except sqlite3.OperationalError:
        return None  # an index file from before claim_details, opened read-only
    found = {
        iri: (json.loads(detail), (piri, pid, title)) for iri, detail, piri, pid, title in rows
    }
    if any(iri not in found for iri in iris):
        return None
    roles = ("subject", "metric", "dataset", "baseline")
    named = sorted(
        {e for detail, _ in found.values() for r in roles if (e := detail.get(f"{r}_iri"))}
    )
    labels = (
        dict(
            fetch_rows(
                db, f"SELECT iri, label FROM entities WHERE iri IN ({_marks(named)})", named, 2
            )
        )
        if named
        else {}
    )
    out: list[dict[str, Any]] = []
    for iri in iris:
        detail, paper = found[iri]
        for role in roles:
            detail[role] = labels.get(detail.get(f"{role}_iri"))
        detail["iri"] = iri
        detail["paper"] = paper
        out.append(detail)
    return out
