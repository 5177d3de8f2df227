"""A query worker process: ``python -m service.worker STORE_DIR GENERATION``.

It opens the embedded store read-only, then answers framed requests on stdin
with framed replies on its original stdout (4-byte big-endian length + pickle),
typed as in :mod:`service.messages`: a :class:`~service.messages.QueryRequest`
in, an :class:`~service.messages.Answer` (the serialized result in the format
the parent chose) or a :class:`~service.messages.Failure` out. Rows are
counted in here, so the parent can refuse an oversized result (413) without
evaluating the query twice: SELECT results are first written as TSV (one line
per row) and CONSTRUCT results as N-Triples (one line per triple), then
converted by pyoxigraph only when another format was asked for.

It opens the store through :class:`kg.store.EmbeddedStore`, the interface
every other caller uses, and imports nothing else of the project (no spaCy, no
web framework), so a killed worker (on a timeout) is cheap to replace: importing
``kg.store.embedded`` costs ~0.1 s, pyoxigraph alone ~0.02 s.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
import sys
from pathlib import Path
from typing import Any

from pyoxigraph import (
    QueryBoolean,
    QueryResultsFormat,
    QuerySolutions,
    QueryTriples,
    RdfFormat,
    Store,
    parse,
    parse_query_results,
    serialize,
)

from kg.store.embedded import EmbeddedStore
from service.messages import (
    Answer,
    Failure,
    QueryRequest,
    Ready,
    Reopen,
    StartFailed,
    UpdateTrial,
)

_HEADER = struct.Struct(">I")


def read_frame(stream: Any) -> Any:
    """One pickled object from a binary stream, or None at end of input."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    return pickle.loads(stream.read(size))


def write_frame(stream: Any, obj: Any) -> None:
    """Write one pickled object to a binary stream."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


class Evaluator:
    """Holds the read-only store handle; reopens it when the parent says the store changed."""

    def __init__(self, path: str, generation: int) -> None:
        self.path = path
        self.generation = generation
        self.store = EmbeddedStore(Path(path), read_only=True)

    def reopen(self, path: str, generation: int) -> None:
        """Open a fresh handle on ``path``, which holds the store as of ``generation``."""
        self.store.close()
        self.store = EmbeddedStore(Path(path), read_only=True)
        self.path = path
        self.generation = generation

    def run(self, req: QueryRequest) -> Answer | Failure:
        """Evaluate one request."""
        if req.generation != self.generation or req.path != self.path:
            self.reopen(req.path, req.generation)
        try:
            return self._run(req)
        except OSError:
            # A store error may come from a stale handle: reopen once and retry
            # before reporting it.
            self.reopen(req.path, req.generation)
            return self._run(req)

    def _run(self, req: QueryRequest) -> Answer | Failure:
        result = self.store.query(
            req.query,
            base_iri=req.base_iri,
            default_graph=req.default_graph,
            named_graphs=req.named_graphs,
        )
        return render(result, req)


def trial_update(req: UpdateTrial) -> Answer:
    """Apply an update to a private copy of the store (``req.copy``), to learn
    whether it finishes in time before the web process applies it for real."""
    store = Store(req.copy)
    try:
        store.update(req.query, base_iri=req.base_iri)
    finally:
        del store
    return Answer("", b"")


def render(
    result: QueryBoolean | QuerySolutions | QueryTriples, req: QueryRequest
) -> Answer | Failure:
    """Serialize a query result in the format ``req`` chose for its kind, counting
    rows against ``req.limit``."""
    limit = req.limit
    if isinstance(result, QueryBoolean):
        fmt = req.ask_format
        if fmt is None:
            return Failure("not_acceptable", "boolean")
        return Answer(fmt, result.serialize(format=_results_format(fmt)) or b"")
    if isinstance(result, QuerySolutions):
        fmt = req.select_format
        if fmt is None:
            return Failure("not_acceptable", "solutions")
        # One TSV line per row plus the header; stop as soon as the cap is passed
        # rather than serializing (and evaluating) a huge result in full.
        try:
            tsv = _capped(lambda out: result.serialize(out, QueryResultsFormat.TSV), limit + 1)
        except _TooMany:
            return Failure("too_many", limit)
        target = _results_format(fmt)
        if target == QueryResultsFormat.TSV:
            return Answer(fmt, tsv)
        converted = parse_query_results(tsv, QueryResultsFormat.TSV).serialize(format=target)
        return Answer(fmt, converted or b"")
    fmt = req.graph_format
    if fmt is None:
        return Failure("not_acceptable", "triples")
    try:
        nt = _capped(lambda out: result.serialize(out, RdfFormat.N_TRIPLES), limit)
    except _TooMany:
        return Failure("too_many", limit)
    target = _rdf_format(fmt)
    if target == RdfFormat.N_TRIPLES:
        return Answer(fmt, nt)
    out = io.BytesIO()
    quads = parse(nt, RdfFormat.N_TRIPLES)
    if target.supports_datasets:
        serialize(quads, out, target)
    else:
        serialize((q.triple for q in quads), out, target, prefixes=req.prefixes or None)
    return Answer(fmt, out.getvalue())


class _TooMany(Exception):
    """More lines than allowed were written."""


class _CountingBuffer(io.RawIOBase):
    """A write-only buffer that raises :class:`_TooMany` past ``max_lines`` lines;
    pyoxigraph writes in chunks and stops serializing (and evaluating) at the raise."""

    def __init__(self, max_lines: int) -> None:
        super().__init__()
        self.max_lines = max_lines
        self.lines = 0
        self.chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.lines += chunk.count(b"\n")
        if self.lines > self.max_lines:
            raise _TooMany(self.lines)
        self.chunks.append(chunk)
        return len(chunk)


def _capped(write: Any, max_lines: int) -> bytes:
    out = _CountingBuffer(max_lines)
    write(out)
    return b"".join(out.chunks)


def _results_format(media_type: str) -> QueryResultsFormat:
    fmt = QueryResultsFormat.from_media_type(media_type)
    assert fmt is not None, media_type
    return fmt


def _rdf_format(media_type: str) -> RdfFormat:
    fmt = RdfFormat.from_media_type(media_type)
    assert fmt is not None, media_type
    return fmt


def main() -> None:
    """Serve requests until stdin closes."""
    # The protocol owns the original stdout; anything printed goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    try:
        evaluator = Evaluator(sys.argv[1], int(sys.argv[2]))
    except OSError as exc:
        write_frame(out, StartFailed(str(exc)))
        return
    write_frame(out, Ready(os.getpid()))
    while True:
        req = read_frame(inp)
        if req is None:
            return
        try:
            if isinstance(req, UpdateTrial):
                reply: Answer | Failure = trial_update(req)
            elif isinstance(req, Reopen):
                if (req.path, req.generation) != (evaluator.path, evaluator.generation):
                    evaluator.reopen(req.path, req.generation)
                reply = Answer("", b"")
            else:
                reply = evaluator.run(req)
        except SyntaxError as exc:
            reply = Failure("syntax", str(exc))
        except OSError as exc:
            reply = Failure("store", str(exc))
        except (ValueError, TypeError, RuntimeError) as exc:
            reply = Failure("evaluation", str(exc))
        write_frame(out, reply)


if __name__ == "__main__":
    main()
