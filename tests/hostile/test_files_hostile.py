"""Hostile files for ``kg ingest``: each bad record or file is reported in one line
and the good ones are stored; a full disk is one clean error that leaves no stray
bulk-load file, and the rerun completes the store."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kg.ingest import ingest
from kg.reading.readers import derived_id, read_paths
from kg.store.embedded import open_store
from tests.helpers import REPO

ABSTRACT = (
    "We study machine unlearning for large language models. We propose ForgetNet, a "
    "contrastive learning method that removes the influence of training examples."
)


def _good(path: Path, paper_id: str) -> Path:
    path.write_text(json.dumps({"id": paper_id, "abstract": ABSTRACT + " " + paper_id}))
    return path


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("deep-array.json", "[" * 100_000 + "]" * 100_000),
        ("deep-object.json", '{"a":' * 100_000 + "1" + "}" * 100_000),
        ("deep-in-array.json", '[{"abstract": "x"}, ' + "[" * 100_000 + "]" * 100_000 + "]"),
        ("deep-line.jsonl", "[" * 100_000 + "]" * 100_000 + "\n"),
        # Under Python's recursion limit: parsed and stored before, as were the
        # records after it in the file.
        ("deep-field.json", '{"abstract": "x", "keywords": ' + "[" * 900 + "]" * 900 + "}"),
        ("shallow-but-past-the-limit.jsonl", '{"abstract": "x", "k": ' + "[" * 40 + "]" * 40 + "}"),
    ],
)
def test_deep_json_file_is_one_rejection_and_the_good_files_are_stored(
    tmp_path: Path, extractor: object, name: str, content: str
) -> None:
    first = _good(tmp_path / "first.json", "good-before")
    bad = tmp_path / name
    bad.write_text(content)
    last = _good(tmp_path / "last.json", "good-after")
    store = open_store(tmp_path / "store")
    report = ingest([first, bad, last], store, extractor=extractor)
    assert report.added == 2
    reasons = [r.reason for r in report.rejected if r.source == str(bad)]
    deep = [r for r in reasons if "deeper than 32 levels (KG_MAX_JSON_DEPTH)" in r]
    assert len(deep) == 1, reasons
    # Papers are stored under the hash of their abstract (the source's id is kept beside it).
    expected = {derived_id(ABSTRACT + " good-before"), derived_id(ABSTRACT + " good-after")}
    assert set(store.paper_ids()) == expected
    store.close()


def test_lone_surrogates_in_a_file_are_rejected_per_record(
    tmp_path: Path, extractor: object
) -> None:
    path = tmp_path / "records.jsonl"
    lines = [
        json.dumps({"id": "bad-abstract", "abstract": ABSTRACT + "\udfff"}),
        json.dumps({"id": "bad\udfffid", "abstract": ABSTRACT + " two"}),
        json.dumps({"id": "bad-title", "title": "T\ud800", "abstract": ABSTRACT + " three"}),
        json.dumps({"id": "fine", "abstract": ABSTRACT + " four"}),
    ]
    path.write_text("\n".join(lines) + "\n")
    store = open_store(tmp_path / "store")
    report = ingest([path], store, extractor=extractor)
    assert report.added == 1
    assert list(store.paper_ids()) == [derived_id(ABSTRACT + " four")]
    assert [r.record for r in report.rejected] == [1, 2, 3]
    assert all("surrogate" in r.reason for r in report.rejected)
    store.close()


def test_symlink_loop_is_named(tmp_path: Path) -> None:
    loop = tmp_path / "loop.json"
    os.symlink(loop, loop)
    missing = tmp_path / "missing.json"
    reasons = {r.source: r.reason for r in read_paths([loop, missing])}
    assert "symbolic links" in reasons[str(loop)]
    assert reasons[str(missing)] == "no such file"


def _limit_file_size(limit: int) -> None:
    # Writes past the limit fail with EFBIG, as on a full disk (no root or tmpfs needed).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _kg(*args: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kg", *args, "--progress", "none"]
        if args[0] == "ingest"
        else [sys.executable, "-m", "kg", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=(lambda: _limit_file_size(limit)) if limit else None,
    )


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_FSIZE"), reason="needs RLIMIT_FSIZE")
def test_disk_full_is_one_line_and_the_rerun_completes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    full = _kg("ingest", "--store", str(store), limit=450_000)
    assert full.returncode != 0
    assert "Traceback" not in full.stderr, full.stderr[-2000:]
    errors = [line for line in full.stderr.splitlines() if line.startswith("kg: error:")]
    # RocksDB names the cause; SQLite (the search index beside it) only says "disk I/O".
    assert len(errors) == 1, full.stderr[-2000:]
    assert "File too large" in errors[0] or "disk I/O error" in errors[0], errors[0]
    assert not list(store.glob("bulk-*.sst"))
    rerun = _kg("ingest", "--store", str(store))
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    fresh = tmp_path / "fresh"
    assert _kg("ingest", "--store", str(fresh)).returncode == 0
    exports = [
        _kg("export", "--format", "nquads", "--store", str(s)).stdout for s in (store, fresh)
    ]
    assert sorted(exports[0].splitlines()) == sorted(exports[1].splitlines())
    shutil.rmtree(fresh)


def test_deep_records_are_rejected_one_line_each_and_the_others_stored(
    tmp_path: Path, extractor: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The limit is the service's KG_MAX_JSON_DEPTH: what POST /papers refuses.
    monkeypatch.setenv("KG_MAX_JSON_DEPTH", "4")
    nested = {"id": "deep", "abstract": ABSTRACT + " deep", "keywords": [[[["x"]]]]}
    lines = [
        json.dumps({"id": "one", "abstract": ABSTRACT + " one"}),
        json.dumps(nested),
        json.dumps({"id": "two", "abstract": ABSTRACT + " two", "keywords": [["x"]]}),
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(lines) + "\n")
    store = open_store(tmp_path / "store")
    report = ingest([path], store, extractor=extractor)
    assert report.added == 2
    assert [(r.record, "deeper than 4 levels" in r.reason) for r in report.rejected] == [(2, True)]
    store.close()
