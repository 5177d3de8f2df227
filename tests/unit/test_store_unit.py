"""The store interface on the embedded store: writes replace a paper's graph,
labels merge, and capabilities are asked, not sniffed."""

from __future__ import annotations

import shutil
from pathlib import Path

from pyoxigraph import Store

from kg.mapping.papers import map_paper
from kg.store.embedded import EmbeddedStore, GraphStore, is_remote, open_reader, open_store
from tests.unit.conftest import extraction


def test_open_reader_opens_an_embedded_store_read_only(tiny_store: Path) -> None:
    store = open_reader(str(tiny_store))
    try:
        assert isinstance(store, EmbeddedStore) and isinstance(store, GraphStore)
        assert store.read_only
        assert sorted(store.paper_ids()) == ["p1", "p2"]
        assert isinstance(store.native(), Store)
    finally:
        store.close()


def test_is_remote() -> None:
    assert is_remote("http://host:7878") and is_remote("https://h/x")
    assert not is_remote("/data/store") and not is_remote("httpish-dir")


def test_rewriting_a_paper_replaces_its_graph_and_keeps_the_first_label(
    tiny_store: Path, tmp_path: Path
) -> None:
    shutil.copytree(tiny_store, tmp_path / "s")
    store = open_store(tmp_path / "s")
    try:
        before = len(store)
        store.write_papers([map_paper(extraction("p1"))])
        assert len(store) == before
        labels = store.preferred_labels(["https://w3id.org/mlkg/id/task/machine-unlearning"])
        # p1 named it first; p2's spelling became an alias.
        assert labels == {"https://w3id.org/mlkg/id/task/machine-unlearning": "machine unlearning"}
        assert store.delete_paper("p1") and not store.delete_paper("p1")
        store.flush()
        store.optimize()
    finally:
        store.close()
