"""The ``kg`` command line, run as a user runs it: a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kg.reading.readers import read_paths, unique
from kg.resources import sample_corpus

CHINESE = "我们提出了一种新的图学习方法，并证明它在三个基准上优于最强的基线。"

EXTRACT_KEYS = {
    "id",
    "title",
    "abstract",
    "tasks",
    "methods",
    "proposed_methods",
    "datasets",
    "metrics",
    "claims",
    "results",
    "broader",
}
RESULT_KEYS = {"value", "metric", "dataset", "task", "method", "proposed", "relative", "claim"}
ENTITY_KEYS = {"label", "iri", "mentions"}
CLAIM_KEYS = {
    "text",
    "start",
    "end",
    "kind",
    "subject",
    "values",
    "metric",
    "dataset",
    "baseline",
}


def kg(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kg", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_extract_prints_37_objects_in_the_documented_shape() -> None:
    done = kg("extract", *map(str, sample_corpus()), "--format", "jsonl")
    assert done.returncode == 0, done.stderr
    objects = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(objects) == 37
    for obj in objects:
        assert set(obj) == EXTRACT_KEYS
        for field in ("tasks", "methods", "proposed_methods", "datasets", "metrics"):
            for entity in obj[field]:
                assert set(entity) == ENTITY_KEYS
                for m in entity["mentions"]:
                    assert obj["abstract"][m["start"] : m["end"]] == m["text"]
        for claim in obj["claims"]:
            assert set(claim) == CLAIM_KEYS
            assert obj["abstract"][claim["start"] : claim["end"]] == claim["text"]
            for value in claim["values"]:
                assert set(value) == {"text", "number", "unit"}
        for result in obj["results"]:
            assert set(result) == RESULT_KEYS
            value = result["value"]
            assert obj["abstract"][value["start"] : value["end"]] == value["text"]


def test_ingest_query_stats_export_validate(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    done = kg("ingest", "--store", store)
    assert done.returncode == 0, done.stderr
    assert "added 37" in done.stdout and "duplicates 1" in done.stdout
    again = kg("ingest", "--store", store, "--json", "-j", "2")
    summary = json.loads(again.stdout)
    assert summary["unchanged"] == 37 and summary["triples_added"] == 0
    # More than one process: whole-pipeline workers; one: in this process.
    assert (summary["engine"], summary["processes"]) == ("pool", 2)
    single = json.loads(kg("ingest", "--store", store, "--json", "-j", "1").stdout)
    assert (single["engine"], single["unchanged"]) == ("local", 37)

    stats = json.loads(kg("stats", "--store", store, "--json").stdout)
    assert stats["classes"]["Paper"] == 37 and stats["triples"] == summary["triples"]

    query = "SELECT (COUNT(*) AS ?n) WHERE { ?p a <https://w3id.org/mlkg/ontology#Paper> }"
    as_json = json.loads(kg("query", "--store", store, "--format", "json", query).stdout)
    assert as_json["results"]["bindings"][0]["n"]["value"] == "37"
    assert kg("query", "--store", store, "--format", "csv", query).stdout.splitlines() == [
        "n",
        "37",
    ]
    assert kg("query", "--store", store, "--format", "tsv", query).stdout.splitlines()[0] == "?n"

    env = {"KG_STORE": store}
    assert "37" in kg("query", query, env=env).stdout
    for fmt in ("turtle", "ntriples", "nquads", "trig", "jsonld"):
        out = tmp_path / f"dump.{fmt}"
        assert kg("export", "--store", store, "--format", fmt, "--out", str(out)).returncode == 0
        assert out.stat().st_size > 1000
    import rdflib

    graph = rdflib.Graph().parse(tmp_path / "dump.turtle", format="turtle")
    assert len(graph) > 1000
    valid = kg("validate", "--store", store)
    assert valid.returncode == 0 and "0 violations" in valid.stdout


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d: d / "missing.txt", "no such file"),
        (lambda d: d, "is a directory"),
        (lambda d: _write(d / "empty.txt", b""), "empty file"),
        (lambda d: _write(d / "bin.jsonl", os.urandom(2048).replace(b"\n", b"")), "UTF-8"),
        (
            lambda d: _write(
                d / "huge.jsonl", json.dumps({"abstract": "word " * 1_000_000}).encode()
            ),
            "more than",
        ),
        (
            lambda d: _write(
                d / "zh.jsonl",
                json.dumps(
                    {"abstract": CHINESE * 3},
                    ensure_ascii=False,
                ).encode(),
            ),
            "English",
        ),
    ],
)
def test_ingest_bad_input_is_one_line_and_nonzero(tmp_path: Path, setup, message: str) -> None:  # noqa: ANN001
    target = setup(tmp_path)
    done = kg("ingest", "--store", str(tmp_path / "store"), str(target))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert message in done.stderr
    assert str(Path(target).name) in done.stderr


def test_bad_query_is_one_line(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    kg("ingest", "--store", store, str(sample_corpus()[0]))
    done = kg("query", "--store", store, "SELECT ?x WHERE { ?x")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("kg: error: bad query")


def test_killed_ingest_keeps_what_was_stored(tmp_path: Path) -> None:
    abstracts = [r.abstract for r in unique(read_paths(sample_corpus())) if hasattr(r, "abstract")]
    source = tmp_path / "many.jsonl"
    with source.open("w") as fh:
        for round_ in range(4):
            for i, text in enumerate(abstracts):
                # Each round's abstracts differ: the same abstract would be one paper.
                record = {"id": f"r{round_}-{i}", "abstract": f"{text} Round {round_}."}
                fh.write(json.dumps(record) + "\n")
    store = str(tmp_path / "store")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kg",
            "ingest",
            "--store",
            store,
            "--batch-size",
            "4",
            # One process: SIGKILL reaches only this one, and spaCy's n_process
            # workers would be left behind (a terminal's Ctrl-C stops them all).
            "-j",
            "1",
            "--progress",
            "lines",
            str(source),
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 240
    for line in proc.stderr:
        if line.startswith("progress:") and " added 0 " not in line:
            break
        assert time.monotonic() < deadline
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = json.loads(kg("stats", "--store", store, "--json").stdout)
    assert 0 < partial["papers"] < 148
    rerun = kg("ingest", "--store", store, "--json", str(source))
    summary = json.loads(rerun.stdout)
    assert summary["added"] + summary["updated"] + summary["unchanged"] == 148
    assert summary["unchanged"] >= 4
    assert kg("validate", "--store", store).returncode == 0
