"""Content negotiation as data: media-type tables, a q-value Accept parser, and
a chooser that picks the best format per query form.

The tables map media types to pyoxigraph's own serializers
(:class:`~pyoxigraph.QueryResultsFormat`, :class:`~pyoxigraph.RdfFormat`); the
service never writes a result format by hand. The first row of each table is
that form's default (what ``*/*`` or a missing Accept gets).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyoxigraph import QueryResultsFormat, RdfFormat


@dataclass(frozen=True)
class Format:
    """One serialization: its media type, the names the ``format`` parameter
    accepts, and the pyoxigraph format object."""

    media_type: str
    names: tuple[str, ...]
    pyoxigraph: QueryResultsFormat | RdfFormat


SELECT_FORMATS: tuple[Format, ...] = (
    Format("application/sparql-results+json", ("json", "srj"), QueryResultsFormat.JSON),
    Format("application/sparql-results+xml", ("xml", "srx"), QueryResultsFormat.XML),
    Format("text/csv", ("csv",), QueryResultsFormat.CSV),
    Format("text/tab-separated-values", ("tsv",), QueryResultsFormat.TSV),
)
"""SELECT results. Boolean (ASK) results have no CSV/TSV form."""

ASK_FORMATS: tuple[Format, ...] = SELECT_FORMATS[:2]

GRAPH_FORMATS: tuple[Format, ...] = (
    Format("text/turtle", ("turtle", "ttl"), RdfFormat.TURTLE),
    Format("application/n-triples", ("ntriples", "nt"), RdfFormat.N_TRIPLES),
    Format("application/rdf+xml", ("rdfxml", "rdf", "xml"), RdfFormat.RDF_XML),
    Format("application/ld+json", ("jsonld", "json"), RdfFormat.JSON_LD),
    Format("application/n-quads", ("nquads", "nq"), RdfFormat.N_QUADS),
    Format("application/trig", ("trig",), RdfFormat.TRIG),
)
"""CONSTRUCT and DESCRIBE results (and the service description)."""

# Aliases clients send for the same thing.
ALIASES = {
    "application/json": "application/sparql-results+json",
    "application/xml": "application/sparql-results+xml",
    "text/xml": "application/sparql-results+xml",
    "text/plain": "application/n-triples",
    "application/x-turtle": "text/turtle",
}


@dataclass(frozen=True)
class Range:
    """One media range of an Accept header."""

    type: str
    subtype: str
    q: float
    order: int

    def matches(self, media_type: str) -> bool:
        """Whether this range covers ``media_type``."""
        mtype, _, msub = media_type.partition("/")
        return (self.type in ("*", mtype)) and (self.subtype in ("*", msub))

    @property
    def specificity(self) -> int:
        return (self.type != "*") + (self.subtype != "*")


def parse_accept(header: str | None, aliases: Mapping[str, str] = ALIASES) -> list[Range]:
    """Parse an Accept header into media ranges (malformed parts are skipped).

    ``aliases`` rewrites the media types clients send for SPARQL results
    (``application/json``); pass ``{}`` where they mean something else."""
    if not header:
        return [Range("*", "*", 1.0, 0)]
    ranges: list[Range] = []
    for order, part in enumerate(header.split(",")):
        media, *params = (p.strip() for p in part.split(";"))
        media = aliases.get(media.lower(), media.lower())
        mtype, sep, msub = media.partition("/")
        if not sep or not mtype or not msub:
            continue
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = min(max(float(value), 0.0), 1.0)
                except ValueError:
                    q = 0.0
        ranges.append(Range(mtype, msub, q, order))
    return ranges


def quality(ranges: list[Range], media_type: str) -> float:
    """The q-value the client gives ``media_type`` (the most specific range wins)."""
    best: Range | None = None
    for r in ranges:
        if r.matches(media_type) and (best is None or r.specificity > best.specificity):
            best = r
    return best.q if best else 0.0


def choose(ranges: list[Range], table: tuple[Format, ...]) -> Format | None:
    """The format of ``table`` the client prefers, or None when none is acceptable.

    Ties go to the type the client listed first, then to the table's order, so
    ``*/*`` yields the table's default."""
    best: tuple[float, int, int, int] | None = None
    chosen: Format | None = None
    for index, fmt in enumerate(table):
        q = quality(ranges, fmt.media_type)
        if q <= 0:
            continue
        explicit = [r for r in ranges if r.specificity == 2 and r.matches(fmt.media_type)]
        order = explicit[0].order if explicit else len(ranges)
        key = (q, -int(not explicit), -order, -index)
        if best is None or key > best:
            best, chosen = key, fmt
    return chosen


def by_name(name: str, table: tuple[Format, ...]) -> Format | None:
    """The format of ``table`` named by a ``format`` parameter (a short name or a media type)."""
    wanted = ALIASES.get(name.strip().lower(), name.strip().lower())
    for fmt in table:
        if wanted == fmt.media_type or wanted in fmt.names:
            return fmt
    return None


def prefers_html(ranges: list[Range]) -> bool:
    """Whether a browser is asking: HTML is listed explicitly and ranks at least as
    high as every RDF and results type."""
    explicit = [r for r in ranges if r.type == "text" and r.subtype == "html" and r.q > 0]
    if not explicit:
        return False
    html_q = explicit[0].q
    others = [quality(ranges, f.media_type) for f in GRAPH_FORMATS + SELECT_FORMATS]
    explicit_others = [
        r.q for r in ranges if r.specificity == 2 and not (r.type == "text" and r.subtype == "html")
    ]
    return html_q >= max(explicit_others, default=0.0) and html_q >= max(others, default=0.0) - 1e-9
