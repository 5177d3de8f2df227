"""The command line's rough edges a new user hits in the first hour (issue 15),
each run as a user runs it: ``python -m kg`` in a subprocess."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kg.cli.main import main as cli
from kg.cpus import available_cpus
from kg.reading.readers import derived_id
from kg.store.embedded import open_store
from tests.test_cli import kg

ABSTRACT = (
    "We propose a new method for graph learning and show that it outperforms the "
    "strongest baselines on three benchmarks while using less memory than prior work."
)


def _jsonl(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_busy_store_says_what_to_do(tmp_path: Path) -> None:
    source = _jsonl(tmp_path / "one.jsonl", {"abstract": ABSTRACT})
    holder = open_store(tmp_path / "store")  # read-write, as `kg serve` with a token holds it
    try:
        done = kg("ingest", "--store", str(tmp_path / "store"), "-j", "1", str(source))
    finally:
        holder.close()
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "LOCK" in done.stderr  # RocksDB's own words stay
    assert "stop the server" in done.stderr
    assert "/papers" in done.stderr and "--store http://" in done.stderr


def test_papers_read_counts_rejected_records(tmp_path: Path) -> None:
    source = _jsonl(
        tmp_path / "mixed.jsonl",
        {"abstract": ABSTRACT},
        {"abstract": "Too short."},
        {"title": "no abstract"},
    )
    done = kg("ingest", "--store", str(tmp_path / "store"), "-j", "1", str(source))
    assert done.returncode == 0, done.stderr
    assert "papers read 3: added 1, updated 0, unchanged 0, duplicates 0, rejected 2" in done.stdout


def test_csv_without_an_abstract_column_names_the_accepted_ones(tmp_path: Path) -> None:
    source = tmp_path / "papers.csv"
    source.write_text(f'id,title,body\np1,A title,"{ABSTRACT}"\np2,B,"{ABSTRACT} Two."\n')
    done = kg("ingest", "--store", str(tmp_path / "store"), "-j", "1", str(source))
    assert done.returncode == 1
    skipped = [line for line in done.stderr.splitlines() if line.startswith("kg: skipped")]
    assert len(skipped) == 1, skipped  # one line for the file, not one per row
    assert "no abstract column (columns: id, title, body" in skipped[0]
    assert "abstract, Abstract, summary, text" in skipped[0]


def test_help_lists_formats_fields_and_defaults() -> None:
    ingest = kg("ingest", "--help").stdout
    for word in (
        ".jsonl",
        ".json",
        ".csv",
        ".tsv",
        "OpenReview",
        "abstract",
        "forum_id",
        "authors",
        "keywords",
        "the CPUs",
    ):
        assert word in ingest, word
    extract = kg("extract", "--help").stdout
    assert "one JSON object per paper" in " ".join(extract.split())
    # `kg train` writes into the current directory unless told otherwise, never into
    # the installed package by default.
    (output,) = [p for p in cli.commands["train"].params if p.name == "output"]
    assert output.default == Path("kg-recogniser") and not Path(output.default).is_absolute()


def test_ingest_uses_every_available_cpu_by_default() -> None:
    assert available_cpus() == len(os.sched_getaffinity(0))
    (processes,) = [p for p in cli.commands["ingest"].params if p.name == "processes"]
    assert processes.default is None  # resolved to available_cpus() when the command runs


def test_delete_by_paper_id_and_by_source_id(tmp_path: Path) -> None:
    source = _jsonl(
        tmp_path / "two.jsonl",
        {"id": "Forum7", "abstract": ABSTRACT},
        {"abstract": ABSTRACT + " Second paper."},
    )
    store = str(tmp_path / "store")
    assert kg("ingest", "--store", store, "-j", "1", str(source)).returncode == 0
    by_source = kg("delete", "--store", store, "Forum7")
    assert by_source.returncode == 0, by_source.stderr
    assert by_source.stdout.strip() == f"deleted paper {derived_id(ABSTRACT)}"
    second = derived_id(ABSTRACT + " Second paper.")
    by_iri = kg("delete", "--store", store, f"https://w3id.org/mlkg/id/paper/{second}")
    assert by_iri.returncode == 0 and second in by_iri.stdout
    stats = json.loads(kg("stats", "--store", store, "--json").stdout)
    assert stats["papers"] == 0
    again = kg("delete", "--store", store, "Forum7")
    assert again.returncode == 1 and "no paper 'Forum7'" in again.stderr


def test_delete_on_a_remote_store(tmp_path: Path) -> None:
    from tests.test_remote_store import OXIGRAPH, start_oxigraph
    from tests.test_remote_store import stop as stop_server

    if not Path(OXIGRAPH).exists():
        pytest.skip("the `oxigraph` server (PyPI package oxigraph) is missing")
    source = _jsonl(tmp_path / "one.jsonl", {"id": "Remote1", "abstract": ABSTRACT})
    proc, base = start_oxigraph(tmp_path / "data")
    try:
        assert kg("ingest", "--store", base, "-j", "1", str(source)).returncode == 0
        done = kg("delete", "--store", base, "Remote1")
        assert done.returncode == 0, done.stderr
        assert json.loads(kg("stats", "--store", base, "--json").stdout)["papers"] == 0
    finally:
        stop_server(proc)


def test_query_table_marks_cut_cells(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    kg(
        "ingest",
        "--store",
        store,
        "-j",
        "1",
        str(_jsonl(tmp_path / "one.jsonl", {"abstract": ABSTRACT})),
    )
    done = kg(
        "query", "--store", store, "SELECT ?a WHERE { ?p <http://purl.org/dc/terms/abstract> ?a }"
    )
    assert done.returncode == 0, done.stderr
    row = done.stdout.splitlines()[2]
    assert row.rstrip().endswith("…") and len(row.rstrip()) == 60
    assert ABSTRACT.startswith(row.rstrip()[:-1])
