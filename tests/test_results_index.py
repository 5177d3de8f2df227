"""The indexed results read model answers exactly as the scanning one, after
every kind of write, and an index of an older schema is not used."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from kg.model import Record
from kg.read.results import ResultsIndex, indexed_results
from kg.store.index.results import IndexedResults
from tests.test_results_api import ABSTRACTS


def _same(indexed: IndexedResults, scanned: ResultsIndex) -> None:
    """Every question the REST API asks, answered alike by both read models."""
    assert indexed.leaderboards() == scanned.leaderboards()
    for board in scanned.leaderboards():
        d, m = board["dataset"]["iri"], board["metric"]["iri"]
        assert indexed.leaderboard(d, m) == scanned.leaderboard(d, m)
    tasks = [i for i, t in scanned.types.items() if t == "Task"]
    for task in tasks:
        assert indexed.leaderboards(task=task) == scanned.leaderboards(task=task)
        assert indexed.task_tree(task) == scanned.task_tree(task)
        assert indexed.with_narrower(task) == scanned.with_narrower(task)
    papers = sorted(scanned.papers)
    for paper in papers:
        assert indexed.related(paper, 10) == scanned.related(paper, 10)
        assert indexed.has_paper(paper)
    assert indexed.compare(papers) == scanned.compare(papers)
    for segment, name in [
        ("dataset", "imagenet"),
        ("dataset", "ImageNet"),
        ("metric", "FID"),
        ("metric", "metric/top1-accuracy"),
        ("task", "reinforcement learning"),
        ("dataset", "nowhere"),
    ]:
        assert indexed.find(segment, name) == scanned.find(segment, name), name


def _store(path: Path, extractor) -> Any:  # noqa: ANN001
    from kg.ingest import ingest_items
    from kg.store.embedded import open_store

    opened = open_store(path)
    ingest_items([Record(k, v) for k, v in ABSTRACTS.items()], opened, extractor=extractor)
    return opened


@pytest.fixture
def store(tmp_path: Path, extractor) -> Any:  # noqa: ANN001
    opened = _store(tmp_path / "store", extractor)
    yield opened
    opened.close()


def test_indexed_results_equal_the_scan_after_writes_and_deletes(store, extractor) -> None:  # noqa: ANN001
    from kg.ingest import ingest_items

    indexed = indexed_results(store)
    assert isinstance(indexed, IndexedResults)
    assert indexed.leaderboards(min_results=3)  # the boards are there at once: nothing built
    _same(indexed, ResultsIndex(store))
    # a re-ingest with another text, a new paper, a delete: the index follows each
    changed = {
        "beta": "We introduce BetaNet for image classification. "
        "BetaNet achieves 88.0% top-1 accuracy on ImageNet.",
        "omega": "We propose OmegaGAN for image generation. OmegaGAN achieves an FID of 1.7 "
        "on CIFAR-10.",
    }
    ingest_items([Record(k, v) for k, v in changed.items()], store, extractor=extractor)
    store.delete_paper("zeta")
    after = indexed_results(store)
    assert after is not None
    _same(after, ResultsIndex(store))
    board = after.leaderboard(after.find("dataset", "CIFAR-10"), after.find("metric", "FID"))
    assert [row["value"]["number"] for row in board["items"]] == [1.7, 2.1, 3.2]


def test_an_index_of_another_schema_version_is_not_used(tmp_path: Path, extractor) -> None:  # noqa: ANN001
    from kg.store.embedded import open_store
    from kg.store.index import index_path, rebuild

    location = tmp_path / "store"
    _store(location, extractor).close()
    path = index_path(str(location))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value='1' WHERE key='version'")
    reopened = open_store(location)
    assert indexed_results(reopened) is None  # REST falls back to the scan
    rebuild(reopened)
    reopened.close()
    fresh = open_store(location)
    rebuilt = indexed_results(fresh)
    assert rebuilt is not None
    _same(rebuilt, ResultsIndex(fresh))
    fresh.close()
