"""Fixtures shared by the test suite: the real extractor and a real on-disk
store holding the ingested bundled sample, built once per session."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import SHARED


@pytest.fixture(scope="session", autouse=True)
def _private_data_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Index files of remote stores go under XDG_DATA_HOME: keep them out of ~."""
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("data-home")))
    yield
    mp.undo()


@pytest.fixture(scope="session")
def extractor():  # noqa: ANN201
    """The real spaCy extractor, loaded once."""
    from kg.ingest import default_extractor

    return default_extractor()


@pytest.fixture(scope="session")
def sample_store(tmp_path_factory: pytest.TempPathFactory, extractor) -> Path:  # noqa: ANN001
    """A store directory with the 37-paper sample ingested. Do not write to it:
    copy it with :func:`shutil.copytree` (or use ``store_copy``)."""
    from kg.ingest import ingest
    from kg.resources import sample_corpus
    from kg.store.embedded import open_store

    path = tmp_path_factory.mktemp("sample") / "store"
    store = open_store(path)
    report = ingest(sample_corpus(), store, extractor=extractor)
    store.close()
    assert report.added == 37, report.to_json()
    return path


@pytest.fixture
def store_copy(sample_store: Path, tmp_path: Path) -> Iterator[Path]:
    """A private, writable copy of the sample store (and of its index)."""
    target = tmp_path / "store"
    shutil.copytree(sample_store, target)
    shutil.copy(f"{sample_store}.index.sqlite", f"{target}.index.sqlite")
    yield target


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` beside the checkout; tests that need it skip without it."""
    if not SHARED.is_dir():
        pytest.skip("../shared (gold, data, tools) is not beside the checkout")
    return SHARED
