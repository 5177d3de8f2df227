"""The index database: a SQLite file (standard library) beside the store. It
holds what REST reads would otherwise compute by scanning the graph:

* ``papers`` and ``papers_fts`` — each paper's id, title and abstract, with an
  FTS5 full-text index (Porter-stemmed words, BM25 ranking);
* ``entities`` — every typed entity with its preferred label and the number of
  papers linking it (``papers``), ranked by an index per type;
* ``names`` / ``names_tri`` — every label and alias, for prefix lookups (a
  B-tree over the lower-cased name) and substring search (FTS5 trigrams);
* ``links`` — paper → entity edges, ordered by entity then paper id;
* ``cooc`` — for each ordered pair of entities, the number of papers linking
  both (``related-entities.rq``), ranked only for pairs in two papers or more
  (97 % are in one at 100k papers: a rank entry each cost a page per write);
* ``claims`` / ``claim_values`` / ``claim_details`` — each claim's filters,
  stated numbers and JSON (what ``GET /claims`` shows, without labels);
* ``counts`` — class counts for ``/stats``, linked entities per type and claims
  per kind; ``tier_names`` — names by type and popularity tier, for
  ``?prefix=`` (both in :mod:`.counters`).

Every aggregate is changed by the write that changes its inputs (adding a paper
adds its contributions; replacing or deleting one first takes them away), so a
write costs what the paper holds, not what the store holds. ``meta.state`` says
whether the file is in step with the store: ``ok``, ``writing`` while a store
write is under way, ``stale`` after a write the index could not follow (SPARQL
UPDATE, Graph Store Protocol); readers use the index only when it is ``ok``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from uuid import uuid4

from kg.store.index.counters import (
    TIER_SCHEMA,
    Deltas,
    bump,
    bump_kinds,
    file_names,
    fill_kind_counts,
    fill_tier_names,
)
from kg.store.index.evidence_rows import EVIDENCE_SCHEMA, add_evidence, remove_evidence
from kg.store.index.result_rows import RESULTS_SCHEMA, add_results, remove_results
from kg.store.index.rows import RELATION_TYPE, EntityInfo, PaperRow
from kg.store.index.taxonomy_rows import TAXONOMY_SCHEMA, add_stated, note_type, remove_stated

SCHEMA_VERSION = "5"
"""2: ``names_entity`` (names by entity row id, for graph neighbourhoods); 3:
names by type, for ``?prefix=``; 4: the results and taxonomy tables, which only
``kg reindex`` fills: a file older than 4 is not used until then; 5: names by
type and tier (``tier_names``, in place of 3's ``type_names``) and claims
counted per kind, both filled when an older file is opened for writing, and a
file of 4 also when its store is opened read-only (:func:`upgrade_file`,
:mod:`.counters`)."""

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS papers (
  pid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, iri TEXT NOT NULL, title TEXT);
CREATE VIRTUAL TABLE IF NOT EXISTS papers_fts USING fts5(
  title, abstract, tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS entities (
  eid INTEGER PRIMARY KEY, iri TEXT NOT NULL UNIQUE, type TEXT, label TEXT,
  papers INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS entities_rank ON entities (type, papers DESC, iri);
CREATE TABLE IF NOT EXISTS names (
  lname TEXT NOT NULL, eid INTEGER NOT NULL, name TEXT NOT NULL,
  PRIMARY KEY (lname, eid, name)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS names_entity ON names (eid);
CREATE VIRTUAL TABLE IF NOT EXISTS names_tri USING fts5(
  lname, eid UNINDEXED, name UNINDEXED, tokenize = 'trigram');
CREATE TABLE IF NOT EXISTS links (
  eid INTEGER NOT NULL, paper_id TEXT NOT NULL, rel TEXT NOT NULL, pid INTEGER NOT NULL,
  PRIMARY KEY (eid, paper_id, rel)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS links_paper ON links (pid);
CREATE TABLE IF NOT EXISTS cooc (
  a INTEGER NOT NULL, b INTEGER NOT NULL, btype TEXT NOT NULL, n INTEGER NOT NULL,
  PRIMARY KEY (a, b)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS cooc_shared ON cooc (a, btype, n DESC, b) WHERE n > 1;
DROP INDEX IF EXISTS cooc_rank;
CREATE TABLE IF NOT EXISTS claims (
  cid INTEGER PRIMARY KEY, iri TEXT NOT NULL UNIQUE, pid INTEGER NOT NULL,
  subject TEXT, metric TEXT, dataset TEXT, kind TEXT);
CREATE INDEX IF NOT EXISTS claims_paper ON claims (pid);
CREATE INDEX IF NOT EXISTS claims_subject ON claims (subject, iri);
CREATE INDEX IF NOT EXISTS claims_metric ON claims (metric, iri);
CREATE INDEX IF NOT EXISTS claims_dataset ON claims (dataset, iri);
CREATE INDEX IF NOT EXISTS claims_kind ON claims (kind, iri);
CREATE TABLE IF NOT EXISTS claim_details (cid INTEGER PRIMARY KEY, detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS claim_values (cid INTEGER NOT NULL, number REAL NOT NULL);
CREATE INDEX IF NOT EXISTS claim_values_claim ON claim_values (cid);
CREATE INDEX IF NOT EXISTS claim_values_number ON claim_values (number);
CREATE TABLE IF NOT EXISTS counts (key TEXT PRIMARY KEY, n INTEGER NOT NULL);
"""
    + RESULTS_SCHEMA
    + EVIDENCE_SCHEMA
    + TAXONOMY_SCHEMA
    + TIER_SCHEMA
)


class IndexError_(Exception):
    """The index file cannot be used."""


class Index:
    """One index file: thread-local read connections, one serialised writer."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.trusted = True
        self._wdb: sqlite3.Connection | None = None
        """False once found not to match its store (see ``kg.store.index.with_index``)."""
        self._local = threading.local()
        self._write_lock = threading.Lock()
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._write_lock:
                db = self._wdb = self._connect(writer=True)
                db.executescript(SCHEMA)  # commits on its own: not inside _writer
                _upgrade(db)
                # Which file this is: a rebuilt index is another file with the same path.
                db.execute("INSERT OR IGNORE INTO meta VALUES ('instance', ?)", (uuid4().hex,))
        if self.version() != SCHEMA_VERSION:
            # Tables of another version may be missing or mean something else.
            self.trusted = False

    # ------------------------------------------------------------ connections

    def _connect(self, *, writer: bool = False) -> sqlite3.Connection:
        if self.read_only:
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        else:
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA cache_size=-65536")  # 64 MB per connection
        if writer:
            # A write touches ~70 co-occurrence rows per paper at random places of
            # growing B-trees: a 256 MB cache (filled as used) and the log copied back
            # every 50,000 pages, not 1,000 (a page written by several commits is
            # copied once), cut the growth (benchmarks/write_growth.py).
            db.execute("PRAGMA cache_size=-262144")
            db.execute("PRAGMA wal_autocheckpoint=50000")
        return db

    def reader(self) -> sqlite3.Connection:
        """This thread's read connection."""
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = self._connect()
        return db

    @contextmanager
    def _writer(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise IndexError_(f"the index at {self.path} is open read-only")
        with self._write_lock:
            db = self._wdb
            if db is None:
                db = self._wdb = self._connect(writer=True)
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def close(self) -> None:
        """Close this thread's reader and the writer, folding the log into the file."""
        if (local := getattr(self._local, "db", None)) is not None:
            local.close()
            self._local.db = None
        if (db := self._wdb) is not None:
            with suppress(sqlite3.Error):  # left to autocheckpoints, a 100k build kept 5 GB
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.close()
            self._wdb = None

    # ------------------------------------------------------------ state

    def _meta(self, key: str) -> str | None:
        try:
            row = self.reader().execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        except sqlite3.Error:
            return None
        return row[0] if row else None

    def version(self) -> str | None:
        """The schema version the file was made with (None: unreadable)."""
        return self._meta("version")

    def has_evidence(self) -> bool:
        """Whether the evidence tables hold every paper's (:mod:`.evidence_rows`)."""
        return self._meta("evidence") == "ok"

    def state(self) -> str:
        """``ok``, ``writing``, ``stale`` or ``empty`` (never filled)."""
        try:
            row = self.reader().execute("SELECT value FROM meta WHERE key='state'").fetchone()
        except sqlite3.Error:
            return "stale"
        return row[0] if row else "empty"

    @property
    def usable(self) -> bool:
        """Whether the index is in step with the store."""
        return self.trusted and self.state() == "ok"

    def set_state(self, state: str) -> None:
        """Record whether the index follows the store."""
        with self._writer() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('state', ?)", (state,))

    # ------------------------------------------------------------ writes

    def write_taxonomy(self, change: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run a change of the taxonomy tables (:mod:`.taxonomy_rows`) in one transaction."""
        with self._writer() as db:
            return change(db)

    def write(
        self, rows: Iterable[PaperRow], entities: dict[str, EntityInfo], *, state: str = "ok"
    ) -> None:
        """Add entities' names and (re)place papers, in one transaction."""
        with self._writer() as db:
            for iri, info in entities.items():
                eid = _entity(db, iri, info.type)
                if info.label is not None:
                    db.execute(
                        "UPDATE entities SET label=? WHERE eid=? AND label IS NULL",
                        (info.label, eid),
                    )
                if [name for name in info.names if _add_name(db, eid, name)]:
                    file_names(db, eid)
            deltas = Deltas()
            for row in rows:
                _remove_paper(db, row.paper_id, deltas)
                _add_paper(db, row, deltas)
            deltas.apply(db)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('state', ?)", (state,))

    def set_entities(
        self, infos: dict[str, EntityInfo], touched: Iterable[str], old_names: dict[str, set[str]]
    ) -> None:
        """Make these entities what the store now says (``infos``; an IRI of
        ``touched`` missing from it has no description left): type, preferred
        label and names replaced, not merged. ``old_names``: names each had
        before, to take out of the name tables."""
        with self._writer() as db:
            # Rows of the name search added from here on are not the ones dropped.
            found = db.execute("SELECT rowid FROM names_tri ORDER BY rowid DESC LIMIT 1")
            before = (found.fetchone() or (0,))[0]
            dropped: list[tuple[int, str]] = []
            for iri in touched:
                info = infos.get(iri)
                row = db.execute(
                    "SELECT eid, type, papers FROM entities WHERE iri=?", (iri,)
                ).fetchone()
                if row is None and (info is None or info.type is None):
                    continue
                eid = row[0] if row is not None else _entity(db, iri, None)
                old_type = row[1] if row is not None else None
                new_type = info.type if info is not None else None
                if old_type != new_type:
                    bump(db, f"class:{old_type}", -1) if old_type else None
                    bump(db, f"class:{new_type}", 1) if new_type else None
                    db.execute("UPDATE entities SET type=? WHERE eid=?", (new_type, eid))
                    note_type(db, iri, old_type, new_type)  # the taxonomy's bookkeeping
                keep = info.names if info is not None else set()
                # The entity's tier_names rows are filed again from the names below.
                for name in old_names.get(iri, set()) - keep:
                    _drop_name(db, eid, name)
                    dropped.append((eid, name))
                if info is None:
                    if row is None or row[2] == 0:
                        db.execute("DELETE FROM entities WHERE eid=?", (eid,))
                    else:
                        db.execute("UPDATE entities SET label=NULL WHERE eid=?", (eid,))
                    file_names(db, eid)
                    continue
                db.execute("UPDATE entities SET label=? WHERE eid=?", (info.label, eid))
                for name in info.names:
                    _add_name(db, eid, name)
                file_names(db, eid)
            _unsearch(db, dropped, before)

    def delete(self, paper_ids: Iterable[str]) -> None:
        """Take these papers and their contributions out."""
        with self._writer() as db:
            deltas = Deltas()
            for paper_id in paper_ids:
                _remove_paper(db, paper_id, deltas)
            deltas.apply(db)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('state', 'ok')")


def _upgrade(db: sqlite3.Connection) -> None:
    """Record the schema version of a new file; fill what an older one lacks."""
    row = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    if row is not None and int(row[0]) < int(SCHEMA_VERSION):
        db.execute("BEGIN IMMEDIATE")
        fill_tier_names(db)
        fill_kind_counts(db)
        db.execute("DROP TABLE IF EXISTS type_names")
        # 4 becomes 5; older files stay 3: only kg reindex fills the results tables.
        db.execute(
            "UPDATE meta SET value = ? WHERE key = 'version'",
            (SCHEMA_VERSION if int(row[0]) == 4 else "3",),
        )
        db.execute("COMMIT")
    elif row is None:
        db.execute("INSERT INTO meta VALUES ('version', ?)", (SCHEMA_VERSION,))
        # A new file holds every paper's evidence (an older one only the newer papers').
        db.execute("INSERT INTO meta VALUES ('evidence', 'ok')")


def upgrade_file(path: Path) -> bool:
    """Bring an index file of version 4 up to date, also for a store opened
    read-only (the file is the index's, not the store's): version 5 only fills
    tables from the file's own rows (and drops ``type_names``). Whether it was
    (False: nothing to do, or the file cannot be written)."""
    if not path.exists():
        return False
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        old = version(db)
        db.close()
        if old != 4:
            return False
        Index(path).close()
    except sqlite3.Error:
        return False
    return True


def version(db: sqlite3.Connection) -> int:
    """The schema version of an index file (0: none recorded, or unreadable)."""
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0]) if row else 0


def _add_name(db: sqlite3.Connection, eid: int, name: str) -> bool:
    """Give an entity a name (and its trigram row); whether it is new."""
    low = name.lower()
    if not db.execute("INSERT OR IGNORE INTO names VALUES (?,?,?)", (low, eid, name)).rowcount:
        return False
    db.execute("INSERT INTO names_tri VALUES (?,?,?)", (low, eid, name))
    return True


def _drop_name(db: sqlite3.Connection, eid: int, name: str) -> None:
    """Take a name from an entity; its row in the name search goes in :func:`_unsearch`."""
    db.execute("DELETE FROM names WHERE lname=? AND eid=? AND name=?", (name.lower(), eid, name))


SCAN_SHARE = 1 / 500
"""Names dropped, as a share of all, from which one scan of the name search finds
their rows sooner than a trigram query each (about 0.8 ms a query, 1.4 µs a row
scanned: 1,300 names of 20,435 took 1.0 s by query, 0.03 s by one scan)."""


def _unsearch(db: sqlite3.Connection, dropped: list[tuple[int, str]], before: int) -> None:
    """Delete the name search's rows of these (entity, name) pairs, among the rows
    up to ``before`` (a pair dropped and given again since has a newer row)."""
    if not dropped:
        return
    # The last row id bounds the rows a scan reads.
    if len(dropped) >= SCAN_SHARE * before:
        # Keyed, so the scan of the name search looks each of its rows up here.
        db.execute(
            "CREATE TEMP TABLE IF NOT EXISTS kg_dropped "
            "(eid INTEGER, name TEXT, PRIMARY KEY (eid, name)) WITHOUT ROWID"
        )
        # Emptied below once used; a write that fails rolls back what it put here.
        db.executemany("INSERT OR IGNORE INTO kg_dropped VALUES (?, ?)", dropped)
        db.execute(
            "DELETE FROM names_tri WHERE rowid IN (SELECT t.rowid FROM names_tri t "
            "JOIN kg_dropped d ON d.eid = t.eid AND d.name = t.name WHERE t.rowid <= ?)",
            (before,),
        )
        db.execute("DELETE FROM kg_dropped")
        return
    for eid, name in dropped:
        low = name.lower()
        if len(low) >= 3:
            # The trigram index finds the row; an unindexed column alone would scan the table.
            phrase = '"' + low.replace('"', '""') + '"'
            db.execute(
                "DELETE FROM names_tri WHERE rowid IN (SELECT rowid FROM names_tri "
                "WHERE names_tri MATCH ? AND eid=? AND name=? AND rowid <= ?)",
                (phrase, eid, name, before),
            )
        else:
            db.execute(
                "DELETE FROM names_tri WHERE eid=? AND name=? AND rowid <= ?", (eid, name, before)
            )


def _rowid(cursor: sqlite3.Cursor) -> int:
    assert cursor.lastrowid is not None, "an INSERT gives its row id"
    return cursor.lastrowid


def _entity(db: sqlite3.Connection, iri: str, type_name: str | None) -> int:
    row = db.execute("SELECT eid, type FROM entities WHERE iri=?", (iri,)).fetchone()
    if row is not None:
        if row[1] is None and type_name is not None:
            db.execute("UPDATE entities SET type=? WHERE eid=?", (type_name, row[0]))
            note_type(db, iri, None, type_name)
            file_names(db, row[0])
            bump(db, "class:" + type_name, 1)
        return row[0]
    cur = db.execute("INSERT INTO entities (iri, type) VALUES (?, ?)", (iri, type_name))
    note_type(db, iri, None, type_name)
    if type_name is not None:
        bump(db, "class:" + type_name, 1)
    return _rowid(cur)


def _add_paper(db: sqlite3.Connection, row: PaperRow, deltas: Deltas) -> None:
    pid = _rowid(
        db.execute(
            "INSERT INTO papers (id, iri, title) VALUES (?,?,?)", (row.paper_id, row.iri, row.title)
        )
    )
    db.execute(
        "INSERT INTO papers_fts (rowid, title, abstract) VALUES (?,?,?)",
        (pid, row.title or "", row.abstract),
    )
    bump(db, "class:Paper", 1)
    linked: dict[int, str] = {}  # eid → the type its relations give it
    for iri, rel in sorted(row.links):
        eid = _entity(db, iri, None)
        linked[eid] = RELATION_TYPE[rel]
        db.execute("INSERT INTO links VALUES (?,?,?,?)", (eid, row.paper_id, rel, pid))
    deltas.link(linked, 1)
    for claim in row.claims:
        cid = _rowid(
            db.execute(
                "INSERT INTO claims (iri, pid, subject, metric, dataset, kind) "
                "VALUES (?,?,?,?,?,?)",
                (claim.iri, pid, claim.subject, claim.metric, claim.dataset, claim.kind),
            )
        )
        db.execute(
            "INSERT INTO claim_details VALUES (?, ?)",
            (cid, json.dumps(row.claim_detail(claim), separators=(",", ":"))),
        )
        db.executemany(
            "INSERT INTO claim_values VALUES (?, ?)", [(cid, n) for n in row.claim_values(claim)]
        )
    bump(db, "class:Claim", len(row.claims))
    bump_kinds(db, (c.kind for c in row.claims), 1)
    add_results(db, pid, row.paper_id, row.results)
    add_stated(db, pid, row.stated)
    add_evidence(db, pid, row.evidence)


def _remove_paper(db: sqlite3.Connection, paper_id: str, deltas: Deltas) -> None:
    found = db.execute("SELECT pid FROM papers WHERE id=?", (paper_id,)).fetchone()
    if found is None:
        return
    pid = found[0]
    linked: dict[int, str] = {}
    for eid, rel in db.execute("SELECT eid, rel FROM links WHERE pid=?", (pid,)).fetchall():
        linked[eid] = RELATION_TYPE[rel]
    db.execute("DELETE FROM links WHERE pid=?", (pid,))
    deltas.link(linked, -1)
    filed = db.execute("SELECT cid, kind FROM claims WHERE pid=?", (pid,)).fetchall()
    claims = [c for c, _kind in filed]
    bump_kinds(db, (kind for _c, kind in filed), -1)
    db.executemany("DELETE FROM claim_values WHERE cid=?", [(c,) for c in claims])
    db.executemany("DELETE FROM claim_details WHERE cid=?", [(c,) for c in claims])
    db.execute("DELETE FROM claims WHERE pid=?", (pid,))
    remove_results(db, pid)
    remove_stated(db, pid)
    remove_evidence(db, pid)
    bump(db, "class:Claim", -len(claims))
    db.execute("DELETE FROM papers_fts WHERE rowid=?", (pid,))
    db.execute("DELETE FROM papers WHERE pid=?", (pid,))
    bump(db, "class:Paper", -1)
