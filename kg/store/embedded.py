"""Graph stores behind one interface: the embedded on-disk Oxigraph store and
(:mod:`kg.store.remote`) any SPARQL 1.1 Protocol + Graph Store Protocol server.

Both backends return pyoxigraph result objects (``QuerySolutions``,
``QueryBoolean``, ``QueryTriples``), so the service and the CLI do not care
which one they talk to.

Write semantics, the same on both: each paper's statements live in its own
named graph; writing a paper replaces that graph in one transaction, so a
reader never sees half a paper and a crash leaves the previous version whole.
A paper's ``kg:contentHash`` is written last, so a paper whose write was cut
short has no hash and is written again by the next ingest.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from pyoxigraph import (
    BlankNode,
    DefaultGraph,
    Literal,
    NamedNode,
    Quad,
    RdfFormat,
    Store,
    serialize,
)

from kg.resources import ontology_dir, queries_dir
from kg.store.common import (
    DEFAULT_STORE,
    GraphStore,
    QueryResult,
    StoreError,
    Term,
    data_update,
    is_remote,
    merge_labels,
    sha256,
)
from kg.store.sparql_text import has_dataset_clause
from kg.vocab import (
    ENTITIES_GRAPH,
    KG,
    ONTOLOGY_GRAPH,
    PREFIXES,
    SKOS,
    paper_graph,
    paper_id_from_graph,
    paper_iri,
)

if TYPE_CHECKING:
    from kg.mapping.papers import PaperQuads  # annotations only (see kg.store.common)

__all__ = [
    "DEFAULT_STORE",
    "EmbeddedStore",
    "GraphStore",
    "QueryResult",
    "StoreError",
    "Term",
    "is_remote",
    "open_reader",
    "open_store",
]


def open_store(
    location: str | os.PathLike[str] | None = None,
    *,
    read_only: bool = False,
    index: bool = True,
) -> GraphStore:
    """Open the store at a directory (embedded) or an ``http(s)://`` URL (remote).

    ``index``: attach the local search index and aggregates (:mod:`kg.store.index`),
    which every paper write and delete through the returned store keeps in step."""
    target = str(location) if location else os.environ.get("KG_STORE") or str(DEFAULT_STORE)
    store: GraphStore
    if is_remote(target):
        from kg.store.remote import RemoteStore

        store = RemoteStore(target, read_only=read_only)
    else:
        store = EmbeddedStore(Path(target), read_only=read_only)
    if not index:
        return store
    from kg.store.index import with_index

    return with_index(store)


def open_reader(location: str | os.PathLike[str] | None = None) -> GraphStore:
    """A store opened for reading: an embedded one read-only (so a running
    server's writer is not locked out), a remote one as it is."""
    target = str(location) if location else os.environ.get("KG_STORE") or str(DEFAULT_STORE)
    # Readers (the CLI's stats, exports, queries, reindex) scan or dump: no index.
    return open_store(target, read_only=not is_remote(target), index=False)


def manifest_bytes(path: str | os.PathLike[str]) -> int:
    """The size of the current MANIFEST of the embedded store at ``path``: RocksDB's
    log of every flush and compaction since the store was last opened read-write
    (see :meth:`EmbeddedStore.reopen`); 0 when there is none."""
    try:
        name = (Path(path) / "CURRENT").read_text("ascii").strip()
        return (Path(path) / name).stat().st_size
    except OSError:
        return 0


def _graphs(iris: Sequence[str] | None) -> list[NamedNode | DefaultGraph] | None:
    if iris is None:
        return None
    return [NamedNode(i) for i in iris]


def _bulk_add(store: Store, quads: Sequence[Quad]) -> None:
    """Bulk-load quads as N-Quads text.

    ``Store.bulk_extend`` holds the GIL for the whole load (seconds for a write
    batch), which stops every other thread of this process: an ingest's worker
    pool then starves, its results uncollected and no new batch handed out.
    ``bulk_load`` of the serialized quads loads as fast and releases the GIL.
    Its parser renames blank nodes, so quads with any keep ``bulk_extend`` (a
    text without ``_:`` has none; one with it may, inside a literal). The text
    is pyoxigraph's own serialization of terms it validated when they were
    made, so the loader need not validate the IRIs again (``lenient``)."""
    text = serialize(quads, format=RdfFormat.N_QUADS) or b""  # None only with an output
    if b"_:" in text and any(
        isinstance(t, BlankNode) for q in quads for t in (q.subject, q.object, q.graph_name)
    ):
        store.bulk_extend(quads)
        return
    store.bulk_load(text, format=RdfFormat.N_QUADS, lenient=True)


class _Unopened:
    """Stands in for a handle that could not be opened again: every use says why."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __getattr__(self, name: str) -> object:
        raise StoreError(self.why)

    def __len__(self) -> int:
        raise StoreError(self.why)

    def __contains__(self, item: object) -> bool:
        raise StoreError(self.why)


class EmbeddedStore:
    """pyoxigraph's RocksDB-backed store in a directory."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.location = str(path)
        self.read_only = read_only
        try:
            if read_only:
                if not (path / "CURRENT").exists():
                    raise StoreError(f"no store at {path}")
                self._store = Store.read_only(str(path))
            else:
                path.mkdir(parents=True, exist_ok=True)
                self._store = Store(str(path))
        except OSError as exc:
            raise StoreError(f"cannot open the store at {path}: {exc}") from exc
        if not read_only:
            self.ensure_ontology()

    @property
    def raw(self) -> Store:
        """The pyoxigraph store, for code that needs its own API (benchmarks, tests)."""
        return self._store

    def native(self) -> Store | None:
        return self._store

    def reopen(self, timeout: float = 30.0) -> None:
        """Close the read-write handle and open it again.

        RocksDB appends every flush and compaction to its MANIFEST and, under
        the limit pyoxigraph sets (1 GB), starts a new one only when the store is
        opened. Every checkpoint copies that file and every reader opening one
        replays it, so under a steady stream of writes (a checkpoint per
        interval) opening grew from 19 to 89 ms in 1,200 checkpoints. Opening
        afresh writes a MANIFEST of one record.

        The caller makes sure nothing writes meanwhile. A query result still
        being read keeps the old handle's lock: the open is retried until it is
        released, for up to ``timeout`` seconds."""
        if self.read_only:
            return
        if not isinstance(self._store, _Unopened):  # else an earlier attempt failed
            self.flush()
        del self._store
        gc.collect()  # results of the old handle that only a cycle still holds
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._store = Store(str(self.path))
                return
            except OSError as exc:
                if "lock" not in str(exc).lower() or time.monotonic() >= deadline:
                    why = f"cannot reopen the store at {self.path}: {exc}"
                    # Every use raises this until a later reopen succeeds.
                    self._store = cast(Store, _Unopened(why))
                    raise StoreError(why) from exc
            time.sleep(0.01)

    def search_index(self) -> None:
        return None  # kg.store.index.IndexedStore wraps a store to add one

    def mark_stale(self, why: str) -> None:
        """Nothing to mark: this store keeps no index."""

    def ensure_ontology(self) -> None:
        """Load ``ontology/kg.ttl`` into its graph, replacing an older copy."""
        source = (ontology_dir() / "kg.ttl").read_bytes()
        marker = Quad(
            NamedNode("https://w3id.org/mlkg/ontology"),
            KG.contentHash,
            Literal(sha256(source)),
            ONTOLOGY_GRAPH,
        )
        if marker in self._store:
            return
        tmp = NamedNode(ONTOLOGY_GRAPH.value + "/loading")
        self._store.clear_graph(tmp) if self._store.contains_named_graph(tmp) else None
        self._store.load(source, format=RdfFormat.TURTLE, to_graph=tmp)
        self._store.add(Quad(marker.subject, marker.predicate, marker.object, tmp))
        self._store.update(f"MOVE SILENT GRAPH {tmp} TO {ONTOLOGY_GRAPH}")

    def query(
        self,
        sparql: str,
        *,
        substitutions: dict[str, Term] | None = None,
        default_graph: Sequence[str] | None = None,
        named_graphs: Sequence[str] | None = None,
        base_iri: str | None = None,
    ) -> QueryResult:
        from pyoxigraph import Variable

        subs = {Variable(k): v for k, v in substitutions.items()} if substitutions else None
        return self._store.query(
            sparql,
            # A query's own FROM / FROM NAMED picks its dataset; else the union.
            use_default_graph_as_union=default_graph is None and not has_dataset_clause(sparql),
            default_graph=_graphs(default_graph),
            named_graphs=_graphs(named_graphs),
            substitutions=subs,
            base_iri=base_iri,
        )

    def update(self, sparql: str) -> None:
        self._check_writable()
        self._store.update(sparql)

    def paper_hashes(self, ids: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for pid in ids:
            for quad in self._store.quads_for_pattern(
                paper_iri(pid), KG.contentHash, None, paper_graph(pid)
            ):
                found[pid] = quad.object.value
        return found

    def preferred_labels(self, iris: Iterable[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for iri in iris:
            for quad in self._store.quads_for_pattern(
                NamedNode(iri), SKOS.prefLabel, None, ENTITIES_GRAPH
            ):
                found[iri] = quad.object.value
                break
        return found

    def write_papers(
        self,
        papers: Sequence[PaperQuads],
        *,
        new: bool = False,
        known_labels: Mapping[str, str] | None = None,
    ) -> None:
        self._check_writable()
        entity_quads = [q for p in papers for q in p.entities]
        entity_quads.extend(merge_labels(self, papers, known_labels))
        markers = [q for p in papers for q in p.paper if q.predicate == KG.contentHash]
        body = [q for p in papers for q in p.paper if q.predicate != KG.contentHash]
        if new and any(self._store.contains_named_graph(p.graph) for p in papers):
            # A paper with a graph but no hash was cut short by a crash: replace it.
            new = False
        if new:
            # Nothing of these papers is stored: the bulk loader writes them
            # fastest; their hashes go in last, in one transaction.
            _bulk_add(self._store, entity_quads)
            _bulk_add(self._store, body)
            self._store.extend(markers)
            return
        self._store.extend(entity_quads)
        for paper in papers:
            tmp = NamedNode(paper.graph.value + "/loading")
            if self._store.contains_named_graph(tmp):
                self._store.remove_graph(tmp)
            self._store.extend(Quad(q.subject, q.predicate, q.object, tmp) for q in paper.paper)
            # The paper's graph IRI is built by kg.vocab from a percent-encoded
            # id and printed as an escaped N-Triples term: no raw input here.
            self._store.update(f"MOVE SILENT GRAPH {tmp} TO {paper.graph}")

    def delete_paper(self, paper_id: str) -> bool:
        self._check_writable()
        graph = paper_graph(paper_id)
        if not self._store.contains_named_graph(graph):
            return False
        self._store.remove_graph(graph)
        return True

    def replace_quads(self, remove: Sequence[Quad], add: Sequence[Quad], **_: object) -> None:
        """One SPARQL update, so readers see all of it or none of it (``graphs``: not needed)."""
        self._check_writable()
        if remove or add:
            self._store.update(data_update(remove, add))

    def paper_ids(self) -> Iterator[str]:
        for graph in self._store.named_graphs():
            pid = paper_id_from_graph(graph.value)
            if pid is not None and not pid.endswith("/loading"):
                yield pid

    def __len__(self) -> int:
        return len(self._store)

    def dump(self, output: IO[bytes], fmt: RdfFormat) -> None:
        if fmt.supports_datasets:
            self._store.dump(output, fmt, prefixes=PREFIXES)
        else:
            # Triple formats get the union of all graphs, as the SPARQL default graph shows it.
            triples = self._store.query(
                (queries_dir() / "store" / "union-graph.rq").read_text(),
                use_default_graph_as_union=True,
            )
            serialize(triples, output, fmt, prefixes=PREFIXES)

    def flush(self) -> None:
        """Make sure what was written is on disk."""
        if not self.read_only:
            self._store.flush()

    def optimize(self) -> None:
        """Compact the on-disk files after a large load."""
        if not self.read_only:
            self._store.optimize()

    def close(self) -> None:
        self.flush()
        del self._store

    def _check_writable(self) -> None:
        if self.read_only:
            raise StoreError(f"the store at {self.path} is open read-only")
