"""The synthetic corpus builder (benchmarks/synth.py): deterministic per seed, and
its fast path (worker processes, bulk loader in a thread, index rows in one
transaction per batch) writes exactly what ingest's write path writes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from pyoxigraph import RdfFormat, Store

from benchmarks.synth import build
from benchmarks.synth_fast import build_fast
from kg.store.index import index_path

TABLES = [
    "papers",
    "papers_fts",
    "entities",
    "names",
    "names_tri",
    "links",
    "cooc",
    "claims",
    "claim_details",
    "claim_values",
    "counts",
    "meta",
]


def _quads(store: Path) -> set[str]:
    raw = Store.read_only(str(store))
    lines = raw.dump(format=RdfFormat.N_QUADS).decode().splitlines()
    del raw
    return set(lines)


def _tables(store: Path) -> dict[str, list[tuple]]:
    db = sqlite3.connect(f"file:{index_path(str(store))}?mode=ro", uri=True)
    out = {}
    for table in TABLES:
        # Row ids are compared too (entity and paper numbers), except where
        # INSERT OR REPLACE renumbers rows (meta, counts) or there are none.
        columns = "*" if table in {"meta", "counts", "names", "links", "cooc"} else "rowid, *"
        rows = db.execute(f"SELECT {columns} FROM {table}").fetchall()
        # Each index file has an instance id of its own (which file it is).
        out[table] = sorted((r for r in rows if table != "meta" or r[0] != "instance"), key=repr)
    db.close()
    return out


def test_fast_build_writes_what_the_write_path_writes(tmp_path: Path) -> None:
    serial, fast = tmp_path / "serial", tmp_path / "fast"
    build(serial, 60, seed=3, batch=20)
    timings = build_fast(fast, 60, seed=3, batch=20, chunk=10, workers=0)
    assert timings["papers"] == 60
    assert _quads(serial) == _quads(fast)
    assert _tables(serial) == _tables(fast)
    tables = _tables(fast)
    assert ("state", "ok") in tables["meta"]
    assert ("class:Paper", 60) in tables["counts"]


def test_fast_build_with_workers_and_in_two_runs_is_the_same(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    build_fast(one, 40, seed=5, batch=20, chunk=10, workers=0)
    # Two worker processes, and the store made in two runs (--start): the same papers.
    build_fast(two, 20, seed=5, batch=20, chunk=10, workers=2)
    build_fast(two, 20, seed=5, start=20, batch=20, chunk=10, workers=2)
    assert _quads(one) == _quads(two)
    assert _tables(one) == _tables(two)


def test_a_seed_gives_other_papers(tmp_path: Path) -> None:
    build_fast(tmp_path / "a", 10, seed=1, batch=10, chunk=10, workers=0)
    build_fast(tmp_path / "b", 10, seed=2, batch=10, chunk=10, workers=0)
    assert _quads(tmp_path / "a") != _quads(tmp_path / "b")


def test_papers_already_in_the_store_are_refused(tmp_path: Path) -> None:
    build_fast(tmp_path / "s", 10, seed=1, batch=10, chunk=10, workers=0)
    with pytest.raises(SystemExit, match="already holds"):
        build_fast(tmp_path / "s", 10, seed=1, batch=10, chunk=10, workers=0)
