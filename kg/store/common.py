"""What every graph store shares: the :class:`GraphStore` interface, its errors,
and helpers both backends use. :mod:`kg.store.embedded` (embedded) and :mod:`kg.store.remote`
(any SPARQL 1.1 server) implement it; this module imports neither, so the two
never import each other.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol, runtime_checkable

from pyoxigraph import (
    Literal,
    NamedNode,
    Quad,
    QueryBoolean,
    QuerySolutions,
    QueryTriples,
    RdfFormat,
    Store,
)

from kg.vocab import ENTITIES_GRAPH, SKOS

if TYPE_CHECKING:
    # Only for annotations: the mapping's imports would cost each query
    # worker process (which opens stores, never maps papers) ~90 ms to start.
    from kg.mapping.papers import PaperQuads
    from kg.store.index.rows import PaperRow

QueryResult = QuerySolutions | QueryBoolean | QueryTriples
Term = NamedNode | Literal
"""A value that can be bound into a query."""

DEFAULT_STORE = (
    Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "mlkg" / "store"
)
"""Where the embedded store lives unless ``--store`` or ``KG_STORE`` says otherwise."""


class StoreError(Exception):
    """The store could not be opened or written."""


@runtime_checkable
class GraphStore(Protocol):
    """What the CLI and the service need from a store."""

    location: str
    read_only: bool

    def query(
        self,
        sparql: str,
        *,
        substitutions: dict[str, Term] | None = None,
        default_graph: Sequence[str] | None = None,
        named_graphs: Sequence[str] | None = None,
        base_iri: str | None = None,
    ) -> QueryResult:
        """Run a SPARQL query. The default graph is the union of all graphs unless
        ``default_graph`` names graphs; ``substitutions`` pre-binds variables;
        ``base_iri`` resolves relative IRIs."""
        ...

    def update(self, sparql: str) -> None:
        """Run a SPARQL update (the service checks authorisation and LOAD first)."""
        ...

    def paper_hashes(self, ids: Sequence[str]) -> dict[str, str]:
        """The stored content hash of each of these papers that is stored whole."""
        ...

    def preferred_labels(self, iris: Iterable[str]) -> dict[str, str]:
        """The ``skos:prefLabel`` of each of these entities that has one."""
        ...

    def write_papers(
        self,
        papers: Sequence[PaperQuads],
        *,
        new: bool = False,
        known_labels: Mapping[str, str] | None = None,
    ) -> None:
        """Write (replace) these papers' graphs. ``new``: none of them is stored yet,
        so the bulk loader may be used. ``known_labels``: the preferred labels the
        store holds for these papers' entities, when the caller has them from a read
        model in step with the store (else the store is asked)."""
        ...

    def delete_paper(self, paper_id: str) -> bool:
        """Remove a paper's graph; False when there was none."""
        ...

    def replace_quads(
        self,
        remove: Sequence[Quad],
        add: Sequence[Quad],
        *,
        graphs: Mapping[str, Sequence[Quad]] | None = None,
        rows: Mapping[str, PaperRow] | None = None,
    ) -> None:
        """Remove some quads and add others, in one transaction (consolidation's
        rewrites of paper graphs and of the entities graph). ``graphs``: paper id
        → the whole graph that paper has after the write, where the caller holds
        it, so that a store keeping rows derived from papers need not read them
        back; ``rows``: paper id → those rows, where the caller made them."""
        ...

    def paper_ids(self) -> Iterator[str]:
        """Ids of every stored paper."""
        ...

    def __len__(self) -> int:
        """The number of quads."""
        ...

    def dump(self, output: IO[bytes], fmt: RdfFormat) -> None:
        """Write the whole dataset (or, for triple formats, the union graph)."""
        ...

    def close(self) -> None:
        """Release the store."""
        ...

    def flush(self) -> None:
        """Make what was written durable (a no-op where every write already is)."""
        ...

    def optimize(self) -> None:
        """Compact storage after a large load (a no-op where the server does it)."""
        ...

    def reopen(self) -> None:
        """Open the store afresh, with nothing else using it (see
        :meth:`kg.store.embedded.EmbeddedStore.reopen`); a no-op for a remote store."""
        ...

    def native(self) -> Store | None:
        """The embedded pyoxigraph store, for what only it offers (the Graph Store
        Protocol endpoint, base IRIs in updates, checkpoints for the query
        workers); None for a remote store."""
        ...

    def search_index(self) -> Any | None:
        """The search index and aggregates kept beside the store (:mod:`kg.store.index`),
        or None when the store has none."""
        ...

    def mark_stale(self, why: str) -> None:
        """The store was written around its index (a SPARQL update, GSP): stop
        using the index until it is rebuilt. A no-op without an index."""
        ...


def is_remote(location: str | os.PathLike[str]) -> bool:
    """Whether a store location is a SPARQL server's URL rather than a directory."""
    return str(location).startswith(("http://", "https://"))


def data_update(remove: Sequence[Quad], add: Sequence[Quad]) -> str:
    """One SPARQL update that deletes ``remove`` and inserts ``add``. The terms are
    pyoxigraph's, printed as escaped N-Triples terms: no raw text reaches the update."""

    def block(quads: Sequence[Quad]) -> str:
        graphs: dict[str, list[str]] = {}
        for q in quads:
            graphs.setdefault(str(q.graph_name), []).append(
                f"{q.subject} {q.predicate} {q.object} ."
            )
        return " ".join(f"GRAPH {g} {{ {' '.join(lines)} }}" for g, lines in graphs.items())

    parts = []
    if remove:
        parts.append(f"DELETE DATA {{ {block(remove)} }}")
    if add:
        parts.append(f"INSERT DATA {{ {block(add)} }}")
    return " ;\n".join(parts)


def merge_labels(
    store: GraphStore, papers: Sequence[PaperQuads], known: Mapping[str, str] | None = None
) -> list[Quad]:
    """The label quads these papers add: a ``skos:prefLabel`` for each entity that has
    none yet, and an alias for each known entity a paper names differently.
    ``known``: the stored preferred labels of their entities, if the caller has them."""
    from kg.mapping.papers import label_quads  # only writers need the mapping

    wanted = {iri for p in papers for iri in p.labels}
    known = dict(known) if known is not None else store.preferred_labels(wanted)
    out: list[Quad] = []
    for paper in papers:
        fresh = {iri for iri in paper.labels if iri not in known}
        for quad in label_quads(paper.labels, fresh):
            known[quad.subject.value] = quad.object.value
            out.append(quad)
        # A paper that names a known entity differently adds its label as an alias.
        for iri, label in paper.labels.items():
            if iri not in fresh and known.get(iri) != label:
                out.append(Quad(NamedNode(iri), SKOS.altLabel, Literal(label), ENTITIES_GRAPH))
    return out


def sha256(data: bytes) -> str:
    """The hex SHA-256 of some bytes (the ontology marker's hash)."""
    return hashlib.sha256(data).hexdigest()
