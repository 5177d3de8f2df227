"""The index's counters and what a write changes in them: papers per entity,
co-occurrence, an entity's popularity tier and claims per kind.

* ``counts`` rows — class counts, linked entities per type and the claims of
  each kind (``claims:kind:<iri>``: ``GET /claims?kind=…`` counted 160,000 rows
  at 100k papers on every request; a subject, metric or dataset names at most
  a few thousand claims there, counted in under a millisecond, and counters
  for their 150,000 values would be written at random places by every paper);
* ``tier_names`` — every name of a typed entity with papers under its **tier**,
  the bit length of its paper count (1 for one paper, 2 for two or three, 3 for
  four to seven…). ``?prefix=`` lists the entities named by a prefix most
  papers first; sorting every match cost time linear in the matches (3,243
  methods named ``tra…`` at 100k papers). Per tier, the matches are a B-tree
  range, and every entity of a tier has more papers than any of a lower one,
  so a page reads the top tiers only (:func:`kg.store.index.read.ranked_entities`).
  An entity changes tier only when its paper count crosses a power of two, so
  the rows move a handful of times in its life, not at every paper.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable
from itertools import permutations
from typing import Any

TIER_SCHEMA = """
CREATE TABLE IF NOT EXISTS tier_names (
  type TEXT NOT NULL, tier INTEGER NOT NULL, lname TEXT NOT NULL, eid INTEGER NOT NULL,
  iri TEXT NOT NULL, prev TEXT, PRIMARY KEY (type, tier, lname, eid)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tier_names_entity ON tier_names (eid);
"""


def tier(papers: int) -> int:
    """An entity's popularity tier: the bit length of its paper count."""
    return max(papers, 0).bit_length()


def bump(db: sqlite3.Connection, key: str, by: int) -> None:
    """Add ``by`` to one counter."""
    if by:
        db.execute(
            "INSERT INTO counts VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET n = n + ?",
            (key, by, by),
        )


def kind_key(kind: str) -> str:
    """The counter of claims of a kind (an IRI)."""
    return f"claims:kind:{kind}"


def bump_kinds(db: sqlite3.Connection, kinds: Iterable[str | None], by: int) -> None:
    """Count (``by`` = 1) or uncount (-1) claims of these kinds."""
    for kind, n in sorted(Counter(k for k in kinds if k).items()):
        bump(db, kind_key(kind), by * n)


def fill_kind_counts(db: sqlite3.Connection) -> None:
    """Count the claims of every kind (a file made before the counters)."""
    db.execute("DELETE FROM counts WHERE key LIKE 'claims:kind:%'")
    db.execute(
        "INSERT INTO counts SELECT 'claims:kind:' || kind, count(*) FROM claims "
        "WHERE kind IS NOT NULL GROUP BY kind"
    )


def file_names(db: sqlite3.Connection, eid: int) -> None:
    """File an entity's names as its type, paper count and names now are (an
    entity without a type or papers has none: no list shows it): every row of
    the entity rewritten, each with the entity's previous name in order
    (``prev``), so that a name whose ``prev`` is before a prefix is the first
    of its entity's names under it and counting those counts entities, not
    names."""
    db.execute("DELETE FROM tier_names WHERE eid = ?", (eid,))
    row = db.execute("SELECT type, papers, iri FROM entities WHERE eid = ?", (eid,)).fetchone()
    if row is None or row[0] is None or row[1] <= 0:
        return
    type_name, papers, iri = row
    names = sorted({n for (n,) in db.execute("SELECT lname FROM names WHERE eid = ?", (eid,))})
    db.executemany(
        "INSERT INTO tier_names VALUES (?, ?, ?, ?, ?, ?)",
        [
            (type_name, tier(papers), name, eid, iri, names[i - 1] if i else None)
            for i, name in enumerate(names)
        ],
    )


def fill_tier_names(db: sqlite3.Connection) -> None:
    """File every typed entity's names (a file made before them)."""
    db.create_function("kg_tier", 1, tier, deterministic=True)
    db.execute("DELETE FROM tier_names")
    # An entity's previous name: the window over its distinct names in order.
    db.execute(
        "INSERT INTO tier_names SELECT e.type, kg_tier(e.papers), n.lname, n.eid, e.iri, "
        "lag(n.lname) OVER (PARTITION BY n.eid ORDER BY n.lname) FROM "
        "(SELECT DISTINCT eid, lname FROM names) n JOIN entities e ON e.eid = n.eid "
        "WHERE e.type IS NOT NULL AND e.papers > 0"
    )


class Deltas:
    """What a write changes in the counters (papers per entity, co-occurrence),
    summed over all its papers and applied once, in key order.

    Applied paper by paper, every paper touched ~70 co-occurrence rows (and
    their rank index) at random places in B-trees that grow with the store:
    once those outgrow SQLite's page cache, each touch is a page read, and a
    write into a 30,000-paper index cost 1.8× one into an empty index. Summed,
    a pair named by several papers of the write is one update, and the updates
    sweep the B-trees in order, reading each page once."""

    def __init__(self) -> None:
        self.papers: dict[int, int] = {}
        self.types: dict[int, str] = {}  # eid → the type its relations give it
        self.pairs: dict[tuple[int, int], list[Any]] = {}  # (a, b) → [change, b's type]

    def link(self, linked: dict[int, str], by: int) -> None:
        """Add (``by`` = 1) or take away (-1) one paper linking these entities."""
        for eid, type_name in linked.items():
            self.papers[eid] = self.papers.get(eid, 0) + by
            self.types[eid] = type_name
        for a, b in permutations(linked, 2):
            pair = self.pairs.get((a, b))
            if pair is None:
                self.pairs[(a, b)] = [by, linked[b]]
            else:
                pair[0] += by

    def apply(self, db: sqlite3.Connection) -> None:
        """Write the summed changes."""
        for eid, change in sorted(self.papers.items()):
            if not change:
                continue
            (old, type_name) = db.execute(
                "UPDATE entities SET papers = papers + ? WHERE eid=? RETURNING papers - ?, type",
                (change, eid, change),
            ).fetchone()
            if old == 0:
                bump(db, "linked:" + self.types[eid], 1)
            elif old + change == 0:
                bump(db, "linked:" + self.types[eid], -1)
            if type_name is not None and tier(old) != tier(old + change):
                file_names(db, eid)
        ups = sorted((a, b, t, n) for (a, b), (n, t) in self.pairs.items() if n > 0)
        db.executemany(
            "INSERT INTO cooc VALUES (?,?,?,?) ON CONFLICT(a, b) DO UPDATE SET n = n + excluded.n",
            ups,
        )
        downs = sorted((a, b, n) for (a, b), (n, _type) in self.pairs.items() if n < 0)
        db.executemany(
            "UPDATE cooc SET n = n + ? WHERE a=? AND b=?", [(n, a, b) for a, b, n in downs]
        )
        db.executemany(
            "DELETE FROM cooc WHERE a=? AND b=? AND n <= 0", [(a, b) for a, b, _n in downs]
        )
