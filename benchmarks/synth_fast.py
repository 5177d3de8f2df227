"""The fast path of ``benchmarks/synth.py`` (see its docstring): worker
processes make the papers, the writer bulk-loads them in a thread beside the
index transaction."""

from __future__ import annotations

import json
import multiprocessing
import sys
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from benchmarks.synth import STATS, Generator, derive_taxonomy_once

_GEN: Generator | None = None


def _init_worker(stats: str, seed: int) -> None:
    global _GEN
    _GEN = Generator(json.loads(Path(stats).read_text()), seed)


@dataclass
class Chunk:
    """Papers ``first``…``stop`` made by a worker: the store's quads as N-Quads
    bytes (a pickled pyoxigraph term costs 20× its N-Quads line), the entity
    quads and labels the writer needs, and the index rows."""

    ids: list[str]
    entities: bytes
    labels: list[dict[str, str]]
    body: bytes
    markers: bytes
    rows: list[Any]


def _make_chunk(first: int, stop: int) -> Chunk:
    from pyoxigraph import RdfFormat, serialize

    from kg.mapping.papers import map_paper
    from kg.store.index.rows import paper_row
    from kg.vocab import KG, paper_iri

    assert _GEN is not None, "the worker was started without _init_worker"
    mapped = [map_paper(_GEN.paper(i)) for i in range(first, stop)]
    nq = RdfFormat.N_QUADS
    return Chunk(
        ids=[p.paper_id for p in mapped],
        # One paper per line group: the writer splits entity quads by paper.
        entities=b"\0".join(serialize(p.entities, format=nq) or b"" for p in mapped),
        labels=[p.labels for p in mapped],
        body=serialize(
            [q for p in mapped for q in p.paper if q.predicate != KG.contentHash], format=nq
        )
        or b"",
        markers=serialize(
            [q for p in mapped for q in p.paper if q.predicate == KG.contentHash], format=nq
        )
        or b"",
        rows=[paper_row(p.paper_id, paper_iri(p.paper_id).value, p.paper) for p in mapped],
    )


def _chunks(ranges: list[tuple[int, int]], workers: int, stats: Path, seed: int) -> Iterator[Chunk]:
    """The chunks in order, made by ``workers`` processes (0: in this one), with
    at most a few waiting so memory stays bounded."""
    if workers <= 0:
        _init_worker(str(stats), seed)
        for first, stop in ranges:
            yield _make_chunk(first, stop)
        return
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers, _init_worker, (str(stats), seed)) as pool:
        pending: deque[Any] = deque()
        todo = iter(ranges)
        for first, stop in islice(todo, 2 * workers + 1):
            pending.append(pool.apply_async(_make_chunk, (first, stop)))
        while pending:
            chunk = pending.popleft().get()
            for first, stop in islice(todo, 1):
                pending.append(pool.apply_async(_make_chunk, (first, stop)))
            yield chunk


def build_fast(
    store_dir: Path,
    papers: int,
    *,
    seed: int = 14,
    start: int = 0,
    batch: int = 2000,
    chunk: int = 250,
    workers: int = 2,
    stats: Path = STATS,
) -> dict[str, float]:
    """Write ``papers`` synthetic papers (numbers ``start``…) into the store at
    ``store_dir``, fast: ``workers`` processes generate and map them and make
    their index rows; this process writes each batch of ``batch`` papers with
    the store's bulk loader (in a thread: pyoxigraph lets go of the GIL) while
    it writes the same batch's index rows in one SQLite transaction.

    The store and index hold what :func:`build` writes with the same ``batch``
    (``tests/test_synth.py`` compares them); the index is ``writing`` while a
    batch is under way, so an interrupted build leaves it for ``kg reindex``."""
    from pyoxigraph import RdfFormat, parse

    from kg.mapping.papers import PaperQuads
    from kg.store.common import merge_labels
    from kg.store.embedded import open_store
    from kg.store.index import write_infos
    from kg.vocab import paper_graph

    ranges = [
        (first, min(first + chunk, start + papers)) for first in range(start, start + papers, chunk)
    ]
    chunks = _chunks(ranges, workers, stats, seed)  # the pool starts before the store opens
    store = open_store(store_dir)
    index = store.search_index()
    raw = store.raw
    fresh = index.state() == "ok"
    if not fresh:
        print(f"synth: the index is {index.state()}: run `kg reindex` after", file=sys.stderr)
    nq = RdfFormat.N_QUADS
    started = time.perf_counter()
    timings = {"wait": 0.0, "index": 0.0, "store": 0.0}
    stop_file = Path(f"{store_dir}.stop")  # touch it to stop cleanly after the current batch
    done = 0
    with ThreadPoolExecutor(1) as writer:
        while done < papers:
            if stop_file.exists():
                print(f"synth: {stop_file} exists: stopping at {done:,} papers", file=sys.stderr)
                break
            t0 = time.perf_counter()
            got: list[Chunk] = []
            while (
                sum(len(c.ids) for c in got) < batch
                and done + sum(len(c.ids) for c in got) < papers
            ):
                got.append(next(chunks))
            t1 = time.perf_counter()
            light = [
                PaperQuads(
                    pid,
                    paper_graph(pid),
                    [],
                    list(parse(ents, format=nq)) if ents else [],
                    labels,
                )
                for c in got
                for pid, ents, labels in zip(c.ids, c.entities.split(b"\0"), c.labels, strict=True)
            ]
            if any(raw.contains_named_graph(p.graph) for p in light):
                raise SystemExit(f"synth: {store_dir} already holds some of these papers")
            entity_quads = [q for p in light for q in p.entities]
            entity_quads.extend(merge_labels(store, light))
            markers = [q for c in got for q in parse(c.markers, format=nq)] if got else []

            def write_store(
                entity_quads: list[Any] = entity_quads,
                got: list[Chunk] = got,
                markers: list[Any] = markers,
            ) -> None:
                raw.bulk_extend(entity_quads)
                raw.bulk_load(b"".join(c.body for c in got), format=nq)
                raw.extend(markers)  # the hashes last, as write_papers(new=True) does

            if fresh:
                index.set_state("writing")
            stored = writer.submit(write_store)
            c0 = time.thread_time()
            if fresh:
                index.write([r for c in got for r in c.rows], write_infos(light), state="writing")
            timings["index_cpu"] = timings.get("index_cpu", 0.0) + time.thread_time() - c0
            t2 = time.perf_counter()
            stored.result()
            t3 = time.perf_counter()
            if fresh:
                index.set_state("ok")
            timings["wait"] += t1 - t0
            timings["index"] += t2 - t1
            timings["store"] += t3 - t2
            done += len(light)
            print(
                f"synth: {done:,}/{papers:,} papers, {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    chunks.close()
    timings["taxonomy"] = derive_taxonomy_once(store)
    store.close()
    timings["seconds"] = time.perf_counter() - started
    timings["papers"] = done
    return timings
