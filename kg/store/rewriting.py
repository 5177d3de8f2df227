"""Rewriting paper graphs onto the nodes consolidation chose.

A first ingest's consolidation rewrites about a third of its papers (1,326 of
the 4,302 ICLR ones) after the extraction workers have finished: alone on one
core, while the others idle. Most of that is per paper and pure (parse the
graph, rewrite it, compare it with the old one, make its index rows), so a
large rewrite of an embedded store hands it to helper processes, which get the
graphs as dumped N-Triples and give back the quads to remove and to add as
N-Quads with the paper's index row. This process keeps what must stay in one
place, reading the store and writing it and the index, and rewrites a paper
itself whenever the helpers' next answer is not ready (BENCHMARKS.md)."""

from __future__ import annotations

import logging
import multiprocessing
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import islice
from urllib.parse import unquote

from pyoxigraph import NamedNode, Quad, RdfFormat, parse, serialize

from kg import schema
from kg.cpus import available_cpus
from kg.mapping.consolidation import Target, rewrite_graph, text
from kg.store.common import GraphStore
from kg.store.index import graph_quads, paper_dumps, paper_graphs
from kg.store.index.rows import PaperRow, paper_row
from kg.vocab import ID_PREFIX, KG, paper_iri

log = logging.getLogger(__name__)

PARALLEL_MIN = 256
"""Papers to rewrite from which helper processes take the work: starting one
costs about a second of CPU (a fresh interpreter importing the mapping), paid
back at about 4 ms of this process's CPU per paper."""
CHUNK = 16
"""Papers per task sent to a helper: fewer round trips, a small window."""
WINDOW = 32
"""Tasks in flight per helper: enough to keep it busy while this process writes
a batch (about a second: 8 a helper left it idle for most of each write). The
dumped graphs they hold are about 30 MB a helper (58 KB a paper)."""


@dataclass
class Rewritten:
    """One paper graph's rewrite: the quads it loses and gains, and either its
    whole new graph or, made by a helper, its index row."""

    paper_id: str
    remove: list[Quad]
    add: list[Quad]
    graph: list[Quad] | None = None
    row: PaperRow | None = None


def _current_target(iri: str) -> Target:
    """The node a surface form is resolved to now, as a :class:`Target`."""
    segment = iri[len(ID_PREFIX) :].split("/", 1)[0]
    return Target(iri, schema.kind(segment).name, unquote(iri.rsplit("/", 1)[-1]))


def rewrite(
    old: list[Quad], paper: str, targets: Mapping[str, Target]
) -> tuple[list[Quad], list[Quad], list[Quad]]:
    """One paper graph on the chosen nodes: the quads to remove, to add, and the
    whole new graph. ``targets``: at least this paper's surface forms that were
    decided; the others keep the node they stand for."""
    # Surface forms outside a scoped read keep the node they stand for.
    kept = {
        text(q.subject): _current_target(text(q.object))
        for q in old
        if q.predicate == KG.resolvedTo and text(q.subject) not in targets
    }
    new = rewrite_graph(old, NamedNode(paper), {**kept, **targets})
    before, after = set(old), set(new)
    remove = [q for q in old if q not in after]
    add = [q for q in new if q not in before]
    return remove, add, list(dict.fromkeys(new))


def rewritten(
    store: GraphStore,
    papers: Mapping[str, str],
    targets: Mapping[str, Target],
) -> Iterator[Rewritten]:
    """Each paper's rewrite, in the order given. ``papers``: paper id → paper
    IRI; ``targets``: surface form → its node, for every decided surface form."""
    ids = list(papers)
    helpers = _helpers()
    if store.native() is not None and len(ids) >= PARALLEL_MIN and helpers:
        by_paper: dict[str, dict[str, Target]] = {}
        for surface, target in targets.items():
            by_paper.setdefault(surface.rsplit("/surface/", 1)[0], {})[surface] = target
        done: set[str] = set()
        try:
            for r in _in_helpers(store, ids, papers, by_paper, helpers):
                done.add(r.paper_id)
                yield r
            return
        except BrokenProcessPool as exc:
            log.warning("a rewriting helper process died (%s): rewriting the rest here", exc)
            ids = [pid for pid in ids if pid not in done]
    for pid, old in paper_graphs(store, ids):
        remove, add, graph = rewrite(old, papers[pid], targets)
        yield Rewritten(pid, remove, add, graph=graph)


def _helpers() -> int:
    """Helper processes beside this one: one for each other CPU, up to four."""
    return max(0, min(available_cpus() - 1, 4))


_Task = tuple[str, bytes, str, dict[str, Target]]
"""A paper to rewrite: its id, its dumped graph, its IRI and its decided surface forms."""


def _in_helpers(
    store: GraphStore,
    ids: list[str],
    papers: Mapping[str, str],
    by_paper: dict[str, dict[str, Target]],
    helpers: int,
) -> Iterator[Rewritten]:
    dumps = paper_dumps(store, ids)

    def task(pid: str, dumped: bytes) -> _Task:
        return pid, dumped, papers[pid], by_paper.get(papers[pid], {})

    window: deque[tuple[Future[list[tuple[str, bytes, bytes, PaperRow]]], list[_Task]]] = deque()
    # Spawned, not forked: this process runs RocksDB's threads and the reader's.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(helpers, mp_context=context) as pool:
        try:
            while True:
                while len(window) < WINDOW * helpers:
                    chunk = [task(pid, dumped) for pid, dumped in islice(dumps, CHUNK)]
                    if not chunk:
                        break
                    window.append((pool.submit(_rewrite_dumped, chunk), chunk))
                if not window:
                    return
                if not window[0][0].done():
                    # Rather than wait, rewrite a paper here (in any order: what
                    # a write removes and adds does not depend on it): the next
                    # one read, or once all are read, the last task no helper
                    # has started.
                    if (local := next(dumps, None)) is not None:
                        tasks = [task(*local)]
                    elif len(window) > 1 and window[-1][0].cancel():
                        tasks = window.pop()[1]
                    else:
                        tasks = []
                    if tasks:
                        for pid, dumped, paper, targets in tasks:
                            remove, add, graph = rewrite(graph_quads(pid, dumped), paper, targets)
                            yield Rewritten(pid, remove, add, graph=graph)
                        continue
                for pid, removed, added, row in window.popleft()[0].result():
                    yield Rewritten(pid, _quads(removed), _quads(added), row=row)
        finally:
            for future, _ in window:
                future.cancel()
            dumps.close()


def _rewrite_dumped(chunk: Iterable[_Task]) -> list[tuple[str, bytes, bytes, PaperRow]]:
    """In a helper: rewrite dumped paper graphs; each one's removed and added quads
    as N-Quads, and its new index row."""
    out = []
    for pid, dumped, paper, targets in chunk:
        remove, add, graph = rewrite(graph_quads(pid, dumped), paper, targets)
        out.append(
            (pid, _nquads(remove), _nquads(add), paper_row(pid, paper_iri(pid).value, graph))
        )
    return out


def _nquads(quads: list[Quad]) -> bytes:
    return serialize(quads, format=RdfFormat.N_QUADS) or b""  # None only with an output


def _quads(nquads: bytes) -> list[Quad]:
    return list(parse(nquads, format=RdfFormat.N_QUADS))


__all__ = ["PARALLEL_MIN", "Rewritten", "rewrite", "rewritten"]
