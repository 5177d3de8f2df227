"""Ingest: files or records in, papers in the store out.

One streaming pass: read → skip what is stored unchanged → extract (one
``nlp.pipe`` over the whole stream, so worker processes start once) → map to
quads → write in batches. Memory is bounded by the batch size, not the corpus.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote

from kg.mapping.papers import PaperQuads, content_hash, map_paper
from kg.model import PaperExtraction, Record, Rejected
from kg.reading.readers import Item, read_paths, unique
from kg.store.consolidation import ConsolidationReport, Forgotten, consolidate, forget
from kg.store.embedded import GraphStore, StoreError
from kg.store.queries import rows, run
from kg.store.taxonomy import derive_taxonomy
from kg.vocab import ID_PREFIX

WRITE_BATCH = 1024
"""Papers per store write. An embedded store bulk-loads each write as new sorted
files, which RocksDB then compacts in background threads of this process, on
the cores extraction needs: a quarter as many writes of four times the papers
cut an ingest of the 4,302 ICLR abstracts on 2 cores from about 263 to 232 s
of CPU and by about 10 s of wall time, for about 180 MB more peak memory
(BENCHMARKS.md; 2,048 was no faster and took 1.2 GB)."""


class PaperExtractor(Protocol):
    """What ingest needs from an extraction engine (local spaCy or a cluster)."""

    version: str

    def extract(self, records: Iterable[Record]) -> Iterator[PaperExtraction]:
        """Extract each record, in order."""
        ...


@dataclass
class IngestReport:
    """What an ingest did, for the CLI summary and the REST response."""

    read: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    duplicates: int = 0
    rejected: list[Rejected] = field(default_factory=list)
    quads_before: int = 0
    quads_after: int = 0
    seconds: float = 0.0
    extractions: list[PaperExtraction] = field(default_factory=list)
    consolidation: ConsolidationReport | None = None

    @property
    def stored(self) -> int:
        """Papers written or confirmed unchanged."""
        return self.added + self.updated + self.unchanged

    def to_json(self) -> dict[str, Any]:
        """The summary as JSON (without the extractions)."""
        return {
            "read": self.read,
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "duplicates": self.duplicates,
            "rejected": [
                {"file": r.source, "record": r.record, "reason": r.reason} for r in self.rejected
            ],
            "triples": self.quads_after,
            "triples_added": self.quads_after - self.quads_before,
            "seconds": round(self.seconds, 3),
            **({"consolidation": self.consolidation.to_json()} if self.consolidation else {}),
        }


def default_extractor(*, n_process: int = 1, batch_size: int = 32) -> PaperExtractor:
    """The local spaCy extractor."""
    from kg.extraction import Extractor

    return Extractor(n_process=n_process, batch_size=batch_size)


def extractor_version(extractor: object) -> str:
    """The version an extractor stamps on its output."""
    version = getattr(extractor, "version", None)
    if version is None:
        from kg.extraction import EXTRACTOR_VERSION

        version = EXTRACTOR_VERSION
    return str(version)


def ingest(
    paths: Iterable[str | Path],
    store: GraphStore,
    *,
    extractor: PaperExtractor | None = None,
    write_batch: int = WRITE_BATCH,
    progress: Callable[[IngestReport], None] | None = None,
    keep_extractions: bool = False,
) -> IngestReport:
    """Read files and ingest every good record into the store."""
    return ingest_items(
        read_paths(paths),
        store,
        extractor=extractor,
        write_batch=write_batch,
        progress=progress,
        keep_extractions=keep_extractions,
    )


def ingest_items(
    items: Iterable[Item],
    store: GraphStore,
    *,
    extractor: PaperExtractor | None = None,
    write_batch: int = WRITE_BATCH,
    progress: Callable[[IngestReport], None] | None = None,
    keep_extractions: bool = False,
) -> IngestReport:
    """Ingest records (and count rejections) from any source of items."""
    started = time.perf_counter()
    extractor = extractor or default_extractor()
    version = extractor_version(extractor)
    report = IngestReport(quads_before=len(store))
    status: dict[str, bool] = {}  # id → already stored (update) or not (add)
    seen: set[str] = set()

    def to_extract() -> Iterator[Record]:
        stream = _count(items, report, seen)
        while True:
            batch = list(islice(stream, write_batch))
            if not batch:
                return
            stored = store.paper_hashes([r.id for r in batch])
            for record in batch:
                old = stored.get(record.id)
                if old == content_hash(record, version):
                    report.unchanged += 1
                    continue
                status[record.id] = old is not None
                yield record
            if progress:
                progress(report)

    pending: list[PaperQuads] = []
    pending_new: list[PaperQuads] = []
    written: list[str] = []
    replaced = Forgotten()  # what the papers a write replaces named before

    def flush() -> None:
        if pending_new:
            store.write_papers(pending_new, new=True)
        if pending:
            for p in pending:
                old = forget(store, p.paper_id)
                replaced.iris |= old.iris
                replaced.shorts |= old.shorts
            store.write_papers(pending)
        for p in pending_new:
            report.added += 1
            status.pop(p.paper_id, None)
            written.append(p.paper_id)
        for p in pending:
            report.updated += 1
            status.pop(p.paper_id, None)
            written.append(p.paper_id)
        pending.clear()
        pending_new.clear()
        if progress:
            progress(report)

    try:
        for extraction in extractor.extract(to_extract()):
            quads = map_paper(extraction)
            (pending if status.get(quads.paper_id) else pending_new).append(quads)
            if keep_extractions:
                report.extractions.append(extraction)
            if len(pending) + len(pending_new) >= write_batch:
                flush()
        flush()
        if report.added or report.updated:
            # Nodes and the taxonomy are decided across papers: they follow every change.
            report.consolidation = consolidate(store, touched=written, forgotten=replaced)
            derive_taxonomy(store)
        store.flush()
    except OSError as exc:
        # Disk full, a quota, an I/O error: the store stays consistent (each
        # paper's hash is written last, so a rerun redoes what was cut short), but
        # the bulk loader may leave its half-written files behind.
        _remove_bulk_files(store)
        raise StoreError(
            f"cannot write to the store: {exc.strerror or exc}; {report.added + report.updated} "
            "papers were stored before it, run the ingest again once the cause is fixed"
        ) from exc
    report.quads_after = len(store)
    report.seconds = time.perf_counter() - started
    return report


def _remove_bulk_files(store: GraphStore) -> None:
    """Delete the SST files a failed bulk load left in an embedded store's directory
    (a successful load moves them into the database, so only strays match)."""
    if store.native() is None:
        return  # a remote store: its files are the server's
    path = Path(store.location)
    for stray in path.glob("bulk-*.sst"):
        stray.unlink(missing_ok=True)


def delete_paper(store: GraphStore, given: str) -> str | None:
    """Delete one paper, named by its id, its IRI or the id its source gave, and
    take its evidence out of the corpus's nodes; the deleted paper's id, or None
    when no paper answers to ``given``."""
    prefix = ID_PREFIX + "paper/"
    if given.startswith(prefix):
        given = unquote(given[len(prefix) :])
    candidates = [given]
    found = rows(run(store, "paper-by-source-id", {"source": given}))
    if found:
        candidates.append(found[0]["id"].value)
    for paper_id in candidates:
        if remove_paper(store, paper_id):
            return paper_id
    return None


def remove_paper(store: GraphStore, paper_id: str) -> bool:
    """Delete a paper by its id, then consolidate and derive the taxonomy again
    (a node only this paper named disappears); False when there was no such paper."""
    named = forget(store, paper_id)
    if not store.delete_paper(paper_id):
        return False
    consolidate(store, forgotten=named)
    derive_taxonomy(store)
    return True


def _count(items: Iterable[Item], report: IngestReport, seen: set[str]) -> Iterator[Record]:
    for item in items:
        if isinstance(item, Rejected):
            report.rejected.append(item)
            continue
        report.read += 1
        if item.id in seen:
            report.duplicates += 1
            continue
        seen.add(item.id)
        yield item


__all__ = [
    "WRITE_BATCH",
    "IngestReport",
    "delete_paper",
    "remove_paper",
    "PaperExtractor",
    "default_extractor",
    "ingest",
    "ingest_items",
    "unique",
]
