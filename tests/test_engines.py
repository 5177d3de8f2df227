"""Distributed extraction on a real local Dask cluster of two worker PROCESSES:
the graph it builds is identical to a local ingest of the same input."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyoxigraph import RdfFormat

from kg.store.embedded import EmbeddedStore, open_store
from tests.helpers import REPO

distributed = pytest.importorskip("distributed", reason="Dask distributed is not installed")


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    """Two single-threaded worker processes, as on two machines."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    ) as local:
        yield local


def nquads(path: Path) -> set[bytes]:
    store = EmbeddedStore(path, read_only=True)
    out = io.BytesIO()
    store.dump(out, RdfFormat.N_QUADS)
    store.close()
    return set(out.getvalue().splitlines())


def sample_records() -> list:
    from kg.model import Record
    from kg.reading.readers import read_paths, unique
    from kg.resources import sample_corpus

    return [r for r in unique(read_paths(sample_corpus())) if isinstance(r, Record)]


def test_dask_ingest_builds_the_same_graph(cluster, sample_store: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from kg.extraction.engines import PLUGIN_NAME, DaskExtractor
    from kg.ingest import ingest
    from kg.resources import sample_corpus

    target = tmp_path / "dask-store"
    store = open_store(target)
    # Small batches and a small window, so results really arrive out of order.
    with DaskExtractor(cluster.scheduler_address, batch_size=3, in_flight=4) as engine:
        report = ingest(sample_corpus(), store, extractor=engine, write_batch=8)
        loads = engine.client.run(lambda dask_worker: dask_worker.plugins[PLUGIN_NAME].loads)
        workers_used = len(engine.client.run(lambda: 1))
    store.close()
    assert report.added == 37, report.to_json()
    assert nquads(target) == nquads(sample_store)
    assert workers_used == 2
    assert list(loads.values()) == [1, 1]  # the model was loaded once per worker


def test_results_come_back_in_input_order(cluster) -> None:  # noqa: ANN001
    from kg.extraction.engines import DaskExtractor

    records = sample_records()
    with DaskExtractor(cluster.scheduler_address, batch_size=2, in_flight=3) as engine:
        out = [e.record.id for e in engine.extract(iter(records))]
        again = [e.record.id for e in engine.extract(iter(records[:5]))]
    assert out == [r.id for r in records]
    assert again == [r.id for r in records[:5]]


def test_the_window_bounds_what_is_read_ahead(cluster) -> None:  # noqa: ANN001
    """The engine pulls records lazily: at most ``in_flight`` batches ahead of the consumer."""
    from kg.extraction.engines import DaskExtractor

    records = sample_records()
    pulled = 0

    def source() -> Iterator:
        nonlocal pulled
        for record in records:
            pulled += 1
            yield record

    with DaskExtractor(cluster.scheduler_address, batch_size=2, in_flight=3) as engine:
        stream = engine.extract(source())
        next(stream)
        assert pulled <= 2 * 3 + 2
        rest = list(stream)
    assert len(rest) == len(records) - 1


def test_cli_ingest_on_the_cluster(cluster, sample_store: Path, tmp_path: Path) -> None:  # noqa: ANN001
    target = tmp_path / "cli-store"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kg",
            "ingest",
            "--store",
            str(target),
            "--engine",
            "dask",
            "--scheduler",
            cluster.scheduler_address,
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert '"added": 37' in done.stdout
    assert nquads(target) == nquads(sample_store)


def test_pool_engine_builds_the_same_graph(sample_store: Path, tmp_path: Path) -> None:
    """The local whole-pipeline pool (two spawned processes) gives the same graph too."""
    from kg.extraction.engines import make_extractor
    from kg.ingest import ingest
    from kg.resources import sample_corpus

    target = tmp_path / "pool-store"
    store = open_store(target)
    engine = make_extractor("pool", processes=2, batch_size=4)
    try:
        report = ingest(sample_corpus(), store, extractor=engine, write_batch=8)
    finally:
        engine.close()
        store.close()
    assert report.added == 37
    assert nquads(target) == nquads(sample_store)


def test_unknown_engine_is_refused() -> None:
    from kg.extraction.engines import make_extractor

    with pytest.raises(ValueError, match="unknown engine"):
        make_extractor("spark")
