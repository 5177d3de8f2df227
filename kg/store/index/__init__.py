"""A search index and precomputed aggregates beside the graph store.

:class:`IndexedStore` wraps any :class:`~kg.store.GraphStore` and keeps an
:class:`~kg.store.index.db.Index` (a local SQLite file) in step with every paper
write and delete that goes through it; REST reads use the index while it is in
step (:func:`index_of`) and fall back to the scanning named queries otherwise.
``kg reindex`` (:func:`rebuild`) builds the file again from the store.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
from collections import deque
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from pathlib import Path
from typing import Any

from pyoxigraph import NamedNode, Quad, QuerySolutions, RdfFormat, parse

from kg.mapping.consolidation import text
from kg.mapping.papers import PaperQuads
from kg.store.common import GraphStore
from kg.store.index import read as ix
from kg.store.index.db import SCHEMA_VERSION, Index, IndexError_, upgrade_file
from kg.store.index.result_rows import replace_taxonomy
from kg.store.index.rows import EntityInfo, PaperRow, entity_infos, paper_row
from kg.store.queries import default_registry
from kg.vocab import ENTITIES_GRAPH, SKOS, paper_graph, paper_id_from_graph, paper_iri

log = logging.getLogger("kg.store.index")

__all__ = [
    "Index",
    "IndexError_",
    "IndexedStore",
    "index_of",
    "index_path",
    "rebuild",
    "with_index",
]


DERIVED_UPDATE = "# kg: derived graph only\n"
"""The first line of a SPARQL update that writes only a graph derived from the
papers and not held by the index (the task taxonomy): it leaves the index fresh."""


def index_path(location: str) -> Path:
    """Where the index of a store lives: ``KG_INDEX``, else beside a store
    directory (``<dir>.index.sqlite``), else (a remote store) under the user's
    data directory, named by a hash of the URL."""
    explicit = os.environ.get("KG_INDEX")
    if explicit:
        return Path(explicit)
    if location.startswith(("http://", "https://")):
        base = Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share"))
        digest = hashlib.sha256(location.encode()).hexdigest()[:16]
        return base / "mlkg" / "index" / f"{digest}.sqlite"
    return Path(location.rstrip("/") + ".index.sqlite")


class IndexedStore:
    """A store whose paper writes and deletes also update its index.

    Reads go straight to the wrapped store: it is a :class:`GraphStore` itself."""

    def __init__(self, store: GraphStore, index: Index) -> None:
        self._store = store
        self.index = index
        self.location = store.location
        self.read_only = store.read_only

    def query(self, sparql: str, **kwargs: Any) -> Any:
        return self._store.query(sparql, **kwargs)

    def paper_hashes(self, ids: Sequence[str]) -> dict[str, str]:
        return self._store.paper_hashes(ids)

    def preferred_labels(self, iris: Iterable[str]) -> dict[str, str]:
        return self._store.preferred_labels(iris)

    def paper_ids(self) -> Iterator[str]:
        return self._store.paper_ids()

    def dump(self, output: Any, fmt: Any) -> None:
        self._store.dump(output, fmt)

    def flush(self) -> None:
        self._store.flush()

    def optimize(self) -> None:
        self._store.optimize()

    def reopen(self) -> None:
        self._store.reopen()

    def native(self) -> Any:
        return self._store.native()

    def search_index(self) -> Index:
        return self.index

    @property
    def raw(self) -> Any:
        """The embedded pyoxigraph store (tests and benchmarks reach for it)."""
        native = self._store.native()
        if native is None:
            raise AttributeError("a remote store has no raw pyoxigraph store")
        return native

    def __len__(self) -> int:
        return len(self._store)

    @property
    def inner(self) -> GraphStore:
        """The wrapped store."""
        return self._store

    def write_papers(
        self,
        papers: Sequence[PaperQuads],
        *,
        new: bool = False,
        known_labels: Mapping[str, str] | None = None,
    ) -> None:
        """Write the papers, then their index rows (one transaction each).

        The labels the store already has for the papers' entities come from the
        index when it is in step: one indexed read instead of a point lookup in
        the store per entity, which grew with the store (BENCHMARKS.md)."""
        rows = [paper_row(p.paper_id, paper_iri(p.paper_id).value, p.paper) for p in papers]
        infos = write_infos(papers)
        if known_labels is None and self.index.usable:
            known_labels = ix.preferred_labels(self.index, (i for p in papers for i in p.labels))
        self._follow(
            lambda: self._store.write_papers(papers, new=new, known_labels=known_labels),
            lambda: self.index.write(rows, infos),
        )

    def delete_paper(self, paper_id: str) -> bool:
        """Delete the paper from the store and the index."""
        result: list[bool] = []
        self._follow(
            lambda: result.append(self._store.delete_paper(paper_id)),
            lambda: self.index.delete([paper_id]),
        )
        return result[0]

    def replace_quads(
        self,
        remove: Sequence[Quad],
        add: Sequence[Quad],
        *,
        graphs: Mapping[str, Sequence[Quad]] | None = None,
        rows: Mapping[str, PaperRow] | None = None,
    ) -> None:
        """Remove and add quads (consolidation), then rebuild the index rows of the
        papers they touch (``rows`` where given, else made from ``graphs``, else
        read back from the store) and of the entities they touch."""
        changed = [*remove, *add]
        papers = sorted({p for q in changed if (p := paper_id_from_graph(text(q.graph_name)))})
        entities = sorted({text(q.subject) for q in changed if q.graph_name == ENTITIES_GRAPH})
        old_names: dict[str, set[str]] = {}
        for q in remove:
            if q.graph_name == ENTITIES_GRAPH and q.predicate in (SKOS.prefLabel, SKOS.altLabel):
                old_names.setdefault(text(q.subject), set()).add(text(q.object))

        def index_write() -> None:
            given, made = graphs or {}, rows or {}
            kept = [made[pid] for pid in papers if pid in made]
            kept += [
                paper_row(pid, paper_iri(pid).value, given[pid])
                for pid in papers
                if pid in given and pid not in made
            ]
            rest = [pid for pid in papers if pid not in given and pid not in made]
            self.index.write([*kept, *read_rows(self._store, rest)], {})
            self.index.set_entities(entity_infos_of(self._store, entities), entities, old_names)

        self._follow(lambda: self._store.replace_quads(remove, add, graphs=graphs), index_write)

    def update(self, sparql: str) -> None:
        """A SPARQL update can change anything: the index is stale afterwards,
        unless it says it writes only a derived graph the index does not hold
        (:data:`DERIVED_UPDATE`, e.g. the task taxonomy)."""
        if sparql.startswith(DERIVED_UPDATE):
            self._store.update(sparql)
            return
        try:
            self._store.update(sparql)
        finally:
            self.mark_stale("a SPARQL update")

    def mark_stale(self, why: str) -> None:
        """Stop using the index until ``kg reindex`` rebuilds it."""
        if self.index.read_only:
            return
        if self.index.state() != "stale":
            log.warning("the index no longer follows the store after %s: run `kg reindex`", why)
        self.index.set_state("stale")

    def _follow(self, store_write: Any, index_write: Any) -> None:
        if self.index.read_only:
            store_write()
            return
        state = self.index.state()
        self.index.set_state("writing")
        try:
            store_write()
        except BaseException:
            self.index.set_state("stale")
            raise
        if state == "ok":
            try:
                index_write()
            except sqlite3.Error as exc:
                # The store already holds the write, so the store stays the truth and
                # the index steps aside until rebuilt; as an OSError, callers report
                # it like any other failed write (a full disk reaches SQLite first).
                with contextlib.suppress(sqlite3.Error):
                    self.index.set_state("stale")
                raise OSError(f"{exc} (in the search index; `kg reindex` rebuilds it)") from exc
        else:
            self.index.set_state(state)  # a stale index stays stale until rebuilt

    def close(self) -> None:
        """Close the index and the store."""
        self.index.close()
        self._store.close()


def write_infos(papers: Sequence[PaperQuads]) -> dict[str, EntityInfo]:
    """The entity names a write of these papers adds to the index."""
    infos = entity_infos(q for p in papers for q in p.entities)
    for paper in papers:
        # In paper order, as the store picks preferred labels: the first paper wins.
        for iri, label in paper.labels.items():
            info = infos.setdefault(iri, EntityInfo())
            info.names.add(label)
            if info.label is None:
                info.label = label
    return infos


def with_index(store: GraphStore, path: Path | None = None) -> IndexedStore:
    """The store with its index attached (created empty when missing).

    An index created here for a store that already holds papers stays unused
    (``empty``) until ``kg reindex`` fills it; so does one whose paper count is
    not the store's (the file of another store: a store directory replaced, a
    remote URL now served by another server)."""
    target = path or index_path(store.location)
    read_only = store.read_only
    if read_only and upgrade_file(target):
        log.info("the index at %s was brought up to schema version %s", target, SCHEMA_VERSION)
    # Read-only and missing: every read of its state fails, so it is never used.
    index = Index(target, read_only=read_only)
    if index.version() not in (None, SCHEMA_VERSION):
        log.warning(
            "the index at %s has schema version %s, not %s: not used until `kg reindex`",
            target,
            index.version(),
            SCHEMA_VERSION,
        )
        if not read_only:
            index.set_state("stale")
    state = index.state()
    if state in {"ok", "empty"}:
        stored = _stored_papers(store)
        if state == "empty" and stored == 0 and not read_only:
            index.set_state("ok")  # an empty store and an empty index agree
        elif state == "ok" and stored != ix.count(index, "class:Paper"):
            log.warning(
                "the index at %s holds %d papers, the store %d: not used until `kg reindex`",
                target,
                ix.count(index, "class:Paper"),
                stored,
            )
            index.trusted = False
            if not read_only:
                index.set_state("stale")
    if index.state() != "ok":
        log.warning(
            "the index at %s is %s: REST reads scan the graph until `kg reindex`",
            target,
            index.state(),
        )
    return IndexedStore(store, index)


def _stored_papers(store: GraphStore) -> int:
    row = next(_solutions(default_registry().run(store, "count-papers", {})), None)
    return int(row["papers"].value) if row is not None else 0


def index_of(store: GraphStore) -> Index | None:
    """The store's index when it is in step with the store, else None."""
    index = store.search_index()
    if isinstance(index, Index) and index.usable:
        return index
    return None


# ------------------------------------------------------------------ rebuilding


def paper_quads(store: GraphStore, paper_id: str) -> Iterator[Quad]:
    """Every quad of one paper's graph."""
    graph = paper_graph(paper_id)
    raw = store.native()
    if raw is not None:
        yield from raw.quads_for_pattern(None, None, None, graph)
        return
    for s in _solutions(
        default_registry().run(store, "store/paper-graph-quads", {"graph": graph.value})
    ):
        yield Quad(s["s"], s["p"], s["o"], graph)


READ_AHEAD = 256
"""Paper graphs :func:`paper_graphs` reads ahead of its caller: enough to keep
reading through a consolidation write (a second or so), at about 60 KB of
N-Triples a graph (15 MB)."""


def paper_graphs(store: GraphStore, paper_ids: Iterable[str]) -> Iterator[tuple[str, list[Quad]]]:
    """Each paper's id and the quads of its graph, in order.

    An embedded store's graphs are read ahead in a thread (:func:`paper_dumps`)."""
    if store.native() is None:
        for pid in paper_ids:
            yield pid, list(paper_quads(store, pid))
        return
    for pid, dumped in paper_dumps(store, paper_ids):
        yield pid, graph_quads(pid, dumped)


def paper_dumps(
    store: GraphStore, paper_ids: Iterable[str]
) -> Generator[tuple[str, bytes], None, None]:
    """Each paper's id and its graph as N-Triples, in order, from an embedded store.

    The dumps are read ahead in a thread. Reading is most of the cost of
    rewriting or re-indexing a paper (about 11 µs a quad, in RocksDB lookups of
    each term's string), and a graph's dump runs without the GIL, so it overlaps
    with the caller's work (BENCHMARKS.md)."""
    raw = store.native()
    if raw is None:
        raise ValueError("only an embedded store dumps its graphs")
    ids = iter(paper_ids)
    pending: deque[tuple[str, Future[bytes]]] = deque()
    with ThreadPoolExecutor(1, thread_name_prefix="kg-read") as reader:
        try:
            for pid in islice(ids, READ_AHEAD):
                pending.append((pid, reader.submit(_dump_graph, raw, pid)))
            while pending:
                pid, dumped = pending.popleft()
                for more in islice(ids, 1):
                    pending.append((more, reader.submit(_dump_graph, raw, more)))
                yield pid, dumped.result()
        finally:
            for _, dumped in pending:
                dumped.cancel()


def _dump_graph(raw: Any, paper_id: str) -> bytes:
    return bytes(raw.dump(format=RdfFormat.N_TRIPLES, from_graph=paper_graph(paper_id)))


def graph_quads(paper_id: str, dumped: bytes) -> list[Quad]:
    """The quads of a dumped paper graph (blank nodes keep their ids both ways)."""
    # Each N-Triples line ends in " .\n" (a literal's line breaks are escaped):
    # naming the graph there makes it N-Quads, parsed without building each quad
    # again in Python.
    named = dumped.replace(b" .\n", f" {paper_graph(paper_id)} .\n".encode())
    return list(parse(named, format=RdfFormat.N_QUADS))


def read_rows(store: GraphStore, paper_ids: Iterable[str]) -> Iterator[PaperRow]:
    """The index rows of stored papers, read back from their graphs."""
    for pid, quads in paper_graphs(store, paper_ids):
        yield paper_row(pid, paper_iri(pid).value, quads)


def read_entities(store: GraphStore) -> dict[str, EntityInfo]:
    """Every typed entity's class and names, read from the entities graph."""
    quads = (
        Quad(s["s"], s["p"], s["o"], ENTITIES_GRAPH)
        for s in _solutions(default_registry().run(store, "store/entity-names", {}))
    )
    return entity_infos(quads)


def entity_infos_of(store: GraphStore, iris: Sequence[str]) -> dict[str, EntityInfo]:
    """The class and names of these entities as the store now describes them."""
    raw = store.native()
    if raw is None:  # a remote store: one read of the whole entities graph
        wanted = set(iris)
        return {i: e for i, e in read_entities(store).items() if i in wanted}
    quads = (
        q for iri in iris for q in raw.quads_for_pattern(NamedNode(iri), None, None, ENTITIES_GRAPH)
    )
    return entity_infos(quads)


def rebuild(store: GraphStore, path: Path | None = None, *, batch: int = 512) -> int:
    """Build the index of ``store`` afresh into ``path`` (replacing the file when
    done, so a reader never sees half an index); the number of papers indexed."""
    target = path or index_path(store.location)
    tmp = target.with_name(target.name + ".building")
    for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        leftover.unlink(missing_ok=True)
    index = Index(tmp)
    index.write([], read_entities(store), state="writing")
    ids = iter(sorted(store.paper_ids()))
    done = 0
    while chunk := list(islice(ids, batch)):
        index.write(list(read_rows(store, chunk)), {}, state="writing")
        done += len(chunk)
    taxonomy = _solutions(default_registry().run(store, "store/taxonomy", {}))
    links = [(s["narrower"].value, s["broader"].value) for s in taxonomy]
    index.write_taxonomy(lambda db: replace_taxonomy(db, links))
    index.set_state("ok")
    index.close()
    for old in (Path(f"{target}-wal"), Path(f"{target}-shm")):
        old.unlink(missing_ok=True)
    os.replace(tmp, target)
    return done


def _solutions(result: object) -> Iterator[Any]:
    """The rows of a SELECT result (a named SELECT query always gives one)."""
    assert isinstance(result, QuerySolutions)
    return iter(result)
