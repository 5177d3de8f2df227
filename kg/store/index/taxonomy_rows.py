"""What the index keeps so that deriving the taxonomy costs what a write changed.

Deriving it whole reads every task key, looks for each one's broader task and
rewrites the whole graph: 0.26 s at 4,302 papers and 0.6 s at 100,000 synthetic
ones, after every ingest, ``POST /papers`` and delete, however small
(:mod:`kg.store.taxonomy`). A task's broader task depends only on which keys are
tasks, so only the tasks that changed, and the tasks whose keys end with
theirs, can change links; a method link only when a statement of its pair (or
the reverse pair) came or went:

* ``task_changes`` — IRIs of entities that became, or stopped being, tasks since
  the last derivation: the two places that set an entity's type (a new entity,
  consolidation's retyping and deletes) record them (:func:`note_type`). Not
  triggers: with triggers on ``entities`` (even ones that did nothing), the
  index half of a 1,024-paper write into the 100k store took 6.1–6.9 s
  instead of 3.4–3.7, its inserts into ``entities`` five times as long.
* ``taxonomy_tasks`` — the task keys of the last derivation, **reversed**, so the
  tasks whose keys end with a given key are one B-tree range, each with its
  broader task (or NULL).
* ``stated`` — each paper's method taxonomy statements ("X is a kind of Y"), added
  and removed with the paper's other rows, the pairs they touch recorded in
  ``stated_changes``. Only a file made with them holds every paper's (meta
  ``stated`` = ``ok``); in an older one the statements are read from the store.
* ``taxonomy_stated`` — the method links of the last derivation.

They hold only while the meta row ``taxonomy`` is ``derived``: a whole
derivation writes them (:func:`reset`); a taxonomy table copied from the store
(:func:`replace_taxonomy`, ``kg reindex``) drops the row, and the next
derivation is whole again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pyoxigraph import Quad

from kg.mapping.consolidation import text
from kg.store.index.result_rows import bump_generation, replace_taxonomy
from kg.vocab import KG, RDF

TAXONOMY_SCHEMA = """
CREATE TABLE IF NOT EXISTS task_changes (iri TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS taxonomy_tasks (
  rkey TEXT PRIMARY KEY, iri TEXT NOT NULL, broader TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS taxonomy_stated (
  narrower TEXT NOT NULL, broader TEXT NOT NULL, PRIMARY KEY (narrower, broader)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS stated (
  pid INTEGER NOT NULL, narrower TEXT NOT NULL, broader TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS stated_paper ON stated (pid);
CREATE INDEX IF NOT EXISTS stated_pair ON stated (narrower, broader);
CREATE TABLE IF NOT EXISTS stated_changes (
  narrower TEXT NOT NULL, broader TEXT NOT NULL, PRIMARY KEY (narrower, broader)) WITHOUT ROWID;
INSERT OR IGNORE INTO meta SELECT 'stated', 'ok' WHERE NOT EXISTS (SELECT 1 FROM papers);
"""

_DERIVED = "derived"
Link = tuple[str, str]
BroaderOf = Callable[[str, Callable[[str], str | None]], str | None]
"""The rule: a task key and a lookup (key → the task's IRI, or None) to its broader task's IRI."""


@dataclass
class TaxonomyChange:
    """The links one derivation takes out and puts in."""

    removed: list[Link] = field(default_factory=list)
    added: list[Link] = field(default_factory=list)
    tasks_decided: int = 0
    """Task keys whose broader task was looked for again."""


def note_type(db: sqlite3.Connection, iri: str, old: str | None, new: str | None) -> None:
    """Record an entity's change of type when it makes or unmakes a task."""
    if old != new and "Task" in (old, new):
        db.execute("INSERT OR IGNORE INTO task_changes VALUES (?)", (iri,))


def stated_rows(quads: Iterable[Quad]) -> list[Link]:
    """The (narrower, broader) method pairs a paper's graph states."""
    kinds: set[str] = set()
    ends: dict[str, dict[str, str]] = {}
    for q in quads:
        if q.predicate == RDF.type and q.object == KG.TaxonomyStatement:
            kinds.add(text(q.subject))
        elif q.predicate in (RDF.subject, RDF.object):
            ends.setdefault(text(q.subject), {})[q.predicate.value] = text(q.object)
    sub, obj = RDF.subject.value, RDF.object.value
    found = (ends.get(statement, {}) for statement in kinds)
    return sorted((e[sub], e[obj]) for e in found if sub in e and obj in e)


def add_stated(db: sqlite3.Connection, pid: int, pairs: list[Link]) -> None:
    """Add a paper's statements (inside the index's write transaction)."""
    db.executemany("INSERT INTO stated VALUES (?, ?, ?)", [(pid, n, b) for n, b in pairs])
    db.executemany("INSERT OR IGNORE INTO stated_changes VALUES (?, ?)", pairs)


def remove_stated(db: sqlite3.Connection, pid: int) -> None:
    """Take a paper's statements out."""
    pairs = db.execute("SELECT narrower, broader FROM stated WHERE pid = ?", (pid,)).fetchall()
    if pairs:
        db.executemany("INSERT OR IGNORE INTO stated_changes VALUES (?, ?)", pairs)
        db.execute("DELETE FROM stated WHERE pid = ?", (pid,))


def _meta(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def holds_statements(db: sqlite3.Connection) -> bool:
    """Whether the ``stated`` table holds every paper's statements."""
    return _meta(db, "stated") == "ok"


def stated_pairs(db: sqlite3.Connection) -> list[Link]:
    """Every method pair some paper states (each once)."""
    return db.execute("SELECT DISTINCT narrower, broader FROM stated").fetchall()


def _stated_link(db: sqlite3.Connection, narrower: str, broader: str) -> bool:
    # As kg.store.taxonomy.stated_links decides: stated, and not also the other way round.
    def said(n: str, b: str) -> bool:
        return (
            db.execute(
                "SELECT 1 FROM stated WHERE narrower = ? AND broader = ? LIMIT 1", (n, b)
            ).fetchone()
            is not None
        )

    return narrower != broader and said(narrower, broader) and not said(broader, narrower)


def tracked(db: sqlite3.Connection) -> bool:
    """Whether the bookkeeping describes the taxonomy table (see the module docstring)."""
    return _meta(db, "taxonomy") == _DERIVED


def _task(db: sqlite3.Connection, key: str) -> tuple[str, str | None] | None:
    """A task key's (IRI, broader IRI) as of the bookkeeping, or None."""
    return db.execute(
        "SELECT iri, broader FROM taxonomy_tasks WHERE rkey = ?", (key[::-1],)
    ).fetchone()


def _was_stated(db: sqlite3.Connection, link: Link) -> bool:
    """Whether the last derivation kept this method link."""
    return (
        db.execute(
            "SELECT 1 FROM taxonomy_stated WHERE narrower = ? AND broader = ?", link
        ).fetchone()
        is not None
    )


def task_iris(db: sqlite3.Connection) -> list[str]:
    """Every task node the index knows."""
    return [iri for (iri,) in db.execute("SELECT iri FROM entities WHERE type = 'Task'")]


def reset(
    db: sqlite3.Connection, tasks: Iterable[tuple[str, str, str | None]], stated: Iterable[Link]
) -> None:
    """Record a whole derivation: ``tasks`` as (key, IRI, broader IRI or None),
    the method links ``stated``; the taxonomy table gets their links."""
    tasks = list(tasks)
    stated = sorted(set(stated))
    replace_taxonomy(db, [(iri, b) for _key, iri, b in tasks if b is not None] + stated)
    db.execute("DELETE FROM taxonomy_tasks")
    db.executemany(
        "INSERT OR REPLACE INTO taxonomy_tasks VALUES (?, ?, ?)",
        sorted((key[::-1], iri, b) for key, iri, b in tasks),
    )
    db.execute("DELETE FROM taxonomy_stated")
    db.executemany("INSERT INTO taxonomy_stated VALUES (?, ?)", stated)
    db.execute("DELETE FROM task_changes")
    db.execute("DELETE FROM stated_changes")
    db.execute("INSERT OR REPLACE INTO meta VALUES ('taxonomy', ?)", (_DERIVED,))


def derive_changes(
    db: sqlite3.Connection,
    prefix: str,
    key_of: Callable[[str], str],
    broader_of: BroaderOf,
    stated: Iterable[Link] | None,
) -> TaxonomyChange:
    """Bring the taxonomy table up to date with the tasks changed since the last
    derivation and the method links: ``stated`` (every one), or None to decide
    again only the pairs whose statements changed (:func:`holds_statements`).
    Call only when :func:`tracked`; the links taken out and put in, for the
    store's graph.

    ``prefix``: the IRI prefix of task nodes; ``key_of``: a task IRI's key."""
    change = TaxonomyChange()
    changed = [iri for (iri,) in db.execute("SELECT iri FROM task_changes")]
    now = {
        iri
        for (iri,) in db.execute(
            "SELECT e.iri FROM task_changes c JOIN entities e ON e.iri = c.iri "
            "WHERE e.type = 'Task'"
        )
    }
    old: dict[str, str | None] = {}  # narrower IRI → its broader before, where it changed
    new: dict[str, str | None] = {}
    keys = {key_of(iri): iri for iri in changed if iri.startswith(prefix)}
    for key, iri in keys.items():
        row = _task(db, key)
        if iri in now:
            if row is None:
                old[iri] = None
                db.execute("INSERT INTO taxonomy_tasks VALUES (?, ?, NULL)", (key[::-1], iri))
        elif row is not None:
            old[iri], new[iri] = row[1], None
            db.execute("DELETE FROM taxonomy_tasks WHERE rkey = ?", (key[::-1],))

    def task(key: str) -> str | None:
        row = _task(db, key)
        return row[0] if row else None

    # The tasks to decide again: the changed ones still tasks, and every task
    # whose key ends with a changed key ("offline-rl" when "rl" came or went).
    decide = {key for key, iri in keys.items() if iri in now}
    for key in keys:
        # Reversed keys that start with the reversed key and "-": up to the same
        # text and ".", the character after "-".
        low = key[::-1]
        decide.update(
            rkey[::-1]
            for (rkey,) in db.execute(
                "SELECT rkey FROM taxonomy_tasks WHERE rkey >= ? AND rkey < ?",
                (low + "-", low + "."),
            )
        )
    for key in sorted(decide):
        row = _task(db, key)
        assert row is not None, "every key decided again is a task"
        iri, before = row
        after = broader_of(key, task)
        old.setdefault(iri, before)
        new[iri] = after
        if after != before:
            db.execute("UPDATE taxonomy_tasks SET broader = ? WHERE rkey = ?", (after, key[::-1]))
    change.tasks_decided = len(decide)

    if stated is None:
        pairs = db.execute("SELECT narrower, broader FROM stated_changes").fetchall()
        touched = sorted({*pairs, *((b, n) for n, b in pairs)})
        stated_before = {link for link in touched if _was_stated(db, link)}
        stated_now = {link for link in touched if _stated_link(db, *link)}
        decided: set[Link] | None = set(touched)
    else:
        stated_before = set(db.execute("SELECT narrower, broader FROM taxonomy_stated").fetchall())
        stated_now = set(stated)
        decided = None  # every pair

    def stated_link(link: Link, now: bool) -> bool:
        if decided is None or link in decided:
            return link in (stated_now if now else stated_before)
        return _was_stated(db, link)  # a pair no statement of the write touched

    def task_link(narrower: str, broader: str, moved: dict[str, str | None]) -> bool:
        if narrower in moved:
            return moved[narrower] == broader
        if not narrower.startswith(prefix):
            return False
        row = _task(db, key_of(narrower))
        return row is not None and row[1] == broader

    # A link is in the table if it is a task link or a stated one, or both.
    candidates = {(n, b) for n, b in old.items() if b is not None}
    candidates |= {(n, b) for n, b in new.items() if b is not None}
    candidates |= stated_before ^ stated_now
    for link in sorted(candidates):
        was = stated_link(link, False) or task_link(*link, old)
        is_ = stated_link(link, True) or task_link(*link, new)
        if was and not is_:
            change.removed.append(link)
        elif is_ and not was:
            change.added.append(link)
    db.executemany("DELETE FROM taxonomy WHERE narrower = ? AND broader = ?", change.removed)
    db.executemany("INSERT OR IGNORE INTO taxonomy VALUES (?, ?)", change.added)
    db.executemany(
        "DELETE FROM taxonomy_stated WHERE narrower = ? AND broader = ?",
        sorted(stated_before - stated_now),
    )
    db.executemany("INSERT INTO taxonomy_stated VALUES (?, ?)", sorted(stated_now - stated_before))
    db.execute("DELETE FROM task_changes")
    db.execute("DELETE FROM stated_changes")
    if change.removed or change.added:
        bump_generation(db)
    return change


def link_count(db: sqlite3.Connection) -> int:
    """Links in the taxonomy table."""
    return int(db.execute("SELECT count(*) FROM taxonomy").fetchone()[0])
