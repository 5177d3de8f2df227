"""What a read connection remembers of the filters it answered: a full-text
query's hit bitmap (:func:`text_hits`) and BM25 ranking (:func:`ranked_window`),
an entity filter's papers (:func:`filter_papers`) and a name prefix's
entities per popularity tier (:func:`tier_counts`), kept for the
:data:`KEPT` latest until anything is committed to the file (``PRAGMA
data_version``, which sees other connections' and processes' commits).

All are read in time that grows with what they match (a word in nearly every
abstract, the 13,000 papers of the most common task at 100k papers), and the
same ones come back: a user paging or refining a search, the explorer, the
facets of a listing. Kept, a repeated filter costs a lookup until the next
write, as a search engine's filter cache does."""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

KEPT = 32
"""Filters each read connection keeps (hit bitmaps of 12.5 kB at 100k papers,
paper lists of 8 bytes a paper: ≈ 100 kB for the most common task there)."""

_kept = threading.local()
T = TypeVar("T")


def _remembered(db: sqlite3.Connection, key: tuple[Any, ...], make: Callable[[], T]) -> T:
    (stamp,) = db.execute("PRAGMA data_version").fetchone()
    held = getattr(_kept, "entry", None)
    # The connection itself is held, so a new connection (another file, or a
    # reopened one) never takes another's entries by a reused id.
    if held is None or held[0] is not db or held[1] != stamp:
        held = _kept.entry = (db, stamp, OrderedDict())
    found: OrderedDict[tuple[Any, ...], Any] = held[2]
    if key in found:
        found.move_to_end(key)
        return found[key]  # type: ignore[no-any-return]
    value = found[key] = make()
    if len(found) > KEPT:
        found.popitem(last=False)
    return value


def text_hits(db: sqlite3.Connection, match: str) -> bytes:
    """The papers matching an FTS query as a bitmap (bit ``pid`` set).

    Intersected with an entity's papers inside SQLite, a word in nearly every
    abstract was copied into a temporary B-tree on every request (≈ 20 ms for
    99,000 matches at 100k papers); the bitmap is read once per change of the
    index, 1 bit per paper (12.5 kB at 100k)."""

    def read() -> bytes:
        # One row (see read.fetch_rows) and numpy, not a Python loop over the matches.
        (listed,) = db.execute(
            "SELECT group_concat(rowid) FROM papers_fts WHERE papers_fts MATCH ?", (match,)
        ).fetchone()
        (top,) = db.execute("SELECT coalesce(max(rowid), 0) FROM papers_fts").fetchone()
        hit = np.zeros((top // 8 + 1) * 8, dtype=bool)
        if listed:
            hit[np.fromstring(listed, dtype=np.int64, sep=",")] = True
        return np.packbits(hit, bitorder="little").tobytes()

    return _remembered(db, ("text", match), read)


def filter_papers(db: sqlite3.Connection, sql: str, args: Sequence[Any]) -> np.ndarray:
    """The row ids (``pid``) of the papers an entity filter's query finds, in
    the order it gives; ``sql`` selects one ``pid`` per row."""

    def read() -> np.ndarray:
        (listed,) = db.execute(f"SELECT group_concat(pid) FROM ({sql})", args).fetchone()
        return np.fromstring(listed or "", dtype=np.int64, sep=",")

    return _remembered(db, ("filter", sql, tuple(args)), read)


def ranked_window(db: sqlite3.Connection, match: str, window: int) -> np.ndarray:
    """The row ids (``pid``) of the ``window`` most recently indexed papers
    matching an FTS query, best BM25 first, then by paper id.

    BM25 scores every paper of the window (2,000 for a common word: 7 ms at
    100k papers); kept, the next page of the same search, or the same search
    from another user, reads only its page."""

    def read() -> np.ndarray:
        (listed,) = db.execute(
            "SELECT group_concat(pid) FROM (SELECT f.rowid AS pid FROM (SELECT rowid, rank "
            "FROM papers_fts WHERE papers_fts MATCH ? ORDER BY rowid DESC LIMIT ?) f "
            "JOIN papers p ON p.pid = f.rowid ORDER BY f.rank, p.id)",
            (match, window),
        ).fetchone()
        return np.fromstring(listed or "", dtype=np.int64, sep=",")

    return _remembered(db, ("ranked", match, window), read)


def tier_counts(db: sqlite3.Connection, sql: str, args: Sequence[Any]) -> dict[int, int]:
    """Tier → entities with a name under a prefix, as ``sql`` counts them
    (:func:`kg.store.index.read.named_per_tier`; the caller must not change it).

    Counting walks every name under the prefix (9,647 tasks under ``re`` at
    100k papers: 1.9 ms), and a prefix list asks again for each page it
    turns, as an autocomplete does for each user typing the same letters."""

    def read() -> dict[int, int]:
        return dict(db.execute(sql, args).fetchall())

    return _remembered(db, ("tiers", sql, tuple(args)), read)
