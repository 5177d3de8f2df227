"""Corpus readers: files in, a stream of :class:`~kg.model.Record` or
:class:`~kg.model.Rejected` out.

Every reader streams: it holds one record in memory at a time, so a file of a
million abstracts costs no more memory than a file of ten. A bad record is
reported with its file and record number and skipped; a bad file is reported
once and skipped.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from kg.model import Record, Rejected
from kg.reading.jsonlimits import JsonTooDeep, check_json, configured_max_depth, first_value_within

MAX_ABSTRACT_CHARS = 20_000
"""Longer "abstracts" are rejected: real ones are under 3,000 characters."""

MIN_ABSTRACT_CHARS = 20


def _too_deep(limit: int) -> str:
    return (
        f"not JSON this reader accepts: arrays or objects nested deeper than {limit} "
        "levels (KG_MAX_JSON_DEPTH)"
    )


# A lone UTF-16 surrogate (JSON "\udfff") is not text: it cannot be encoded as
# UTF-8, so it would fail later in IRIs, the store or the extractor.
_SURROGATE = re.compile("[\ud800-\udfff]")

_WS = re.compile(r"\s+")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
"""Control characters other than tab, newline and carriage return."""
# Common English function words: abstracts in English use many of them.
_ENGLISH_WORDS = frozenset(
    re.findall(
        r"\w+",
        "the of and to in a is that for we on with as this by are be an our from it which "
        "can at or these its not has have show than such both into their using while",
    )
)

Item = Record | Rejected

FIELD_NAMES: dict[str, tuple[str, ...]] = {
    "abstract": ("abstract", "Abstract", "summary", "text"),
    "id": ("id", "paper_id", "forum_id", "forum", "doc_key", "arxiv_id", "doi"),
    "title": ("title", "Title"),
    "authors": ("authors", "author", "authorids"),
    "year": ("year", "publication_year"),
    "venue": ("venue", "venueid", "conference"),
    "keywords": ("keywords", "keyword"),
    "url": ("url", "openreview_url", "link", "pdf"),
}
"""The JSON keys or CSV columns read for each field; the first one present wins."""


def normalise_text(text: str) -> str:
    """Whitespace-folded, stripped text: the basis of derived paper ids."""
    return _WS.sub(" ", text).strip()


def derived_id(abstract: str) -> str:
    """A paper's id: a hash of its whitespace-folded abstract (the source's own id,
    if any, is kept beside it as ``Record.source_id``)."""
    return hashlib.sha256(normalise_text(abstract).encode("utf-8")).hexdigest()[:12]


def check_abstract(abstract: str) -> str | None:
    """Why an abstract cannot be used, or None when it can."""
    if not abstract.strip():
        return "no abstract"
    if "\x00" in abstract:
        return "binary data (NUL bytes) in the abstract"
    if len(abstract) > MAX_ABSTRACT_CHARS:
        return (
            f"abstract is {len(abstract):,} characters, "
            f"more than the {MAX_ABSTRACT_CHARS:,} allowed"
        )
    if len(abstract.strip()) < MIN_ABSTRACT_CHARS:
        return f"abstract is shorter than {MIN_ABSTRACT_CHARS} characters"
    if _CONTROL.search(abstract):
        return "binary data (control characters) in the abstract"
    # Counted by C loops (map), not per character in Python: every record passes here.
    letters = sum(map(str.isalpha, abstract))
    if not letters:
        return "abstract has no letters"
    latin = sum(map(str.isalpha, abstract.encode("ascii", "ignore").decode("ascii")))
    words = re.findall(r"[a-z]+", abstract.lower())
    english = sum(1 for w in words if w in _ENGLISH_WORDS)
    if latin / letters < 0.8 or english < max(2, 0.08 * len(words)):
        return "abstract does not look like English text"
    return None


def read_paths(paths: Iterable[str | Path]) -> Iterator[Item]:
    """Read every path in turn, choosing the reader by file suffix."""
    for raw in paths:
        path = Path(raw)
        source = str(raw)
        try:
            path.stat()
        except FileNotFoundError:
            yield Rejected(source, 0, "no such file")
            continue
        except OSError as exc:  # a symlink loop (ELOOP), a name too long, no permission…
            yield Rejected(source, 0, f"cannot read: {exc.strerror or exc}")
            continue
        if path.is_dir():
            yield Rejected(source, 0, "is a directory, not a file")
            continue
        try:
            if path.stat().st_size == 0:
                yield Rejected(source, 0, "empty file")
                continue
            yield from read_file(path, source)
        except OSError as exc:
            yield Rejected(source, 0, f"cannot read: {exc.strerror or exc}")


def read_file(path: Path, source: str | None = None) -> Iterator[Item]:
    """Read one file; the suffix picks the format (``.txt``, ``.jsonl``, ``.json``, ``.csv``)."""
    source = source or str(path)
    suffix = path.suffix.lower()
    if suffix in {".jsonl", ".ndjson"}:
        items = _read_jsonl(path, source)
    elif suffix == ".json":
        items = _read_json(path, source)
    elif suffix in {".csv", ".tsv"}:
        items = _read_csv(path, source, delimiter="\t" if suffix == ".tsv" else ",")
    else:
        items = _read_text_list(path, source)
    yield from items


def _lines(path: Path, source: str) -> Iterator[tuple[int, str | Rejected]]:
    """Numbered decoded lines; a line that is not UTF-8 comes back as a rejection."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                yield number, raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                yield number, Rejected(source, number, f"not UTF-8 text (byte {exc.start} of line)")


def _read_text_list(path: Path, source: str) -> Iterator[Item]:
    # The sample format: a header line, then one abstract per paragraph.
    # Records are numbered by paragraph (1-based) so errors point at a paragraph.
    paragraph: list[str] = []
    bad: Rejected | None = None
    number = 0
    header_seen = False

    def flush() -> Iterator[Item]:
        nonlocal paragraph, bad, number
        if not paragraph and bad is None:
            return
        number += 1
        if bad is not None:
            yield Rejected(source, number, bad.reason)
        else:
            yield _make_record({"abstract": " ".join(paragraph)}, source, number)
        paragraph, bad = [], None

    for _, line in _lines(path, source):
        if isinstance(line, Rejected):
            if not header_seen:
                yield Rejected(source, 0, "not UTF-8 text: cannot read the header line")
                return
            bad = line
            continue
        if not header_seen:
            header_seen = True
            continue
        if line.strip():
            paragraph.append(line.strip())
        else:
            yield from flush()
    yield from flush()
    if number == 0:
        yield Rejected(source, 0, "no abstracts after the header line")


def _read_jsonl(path: Path, source: str) -> Iterator[Item]:
    max_depth = configured_max_depth()
    seen_any = False
    for number, line in _lines(path, source):
        if isinstance(line, Rejected):
            yield line
            continue
        if not line.strip():
            continue
        seen_any = True
        try:
            check_json(line, max_depth)
            obj = json.loads(line)
        except JsonTooDeep:
            yield Rejected(source, number, _too_deep(max_depth))
            continue
        except json.JSONDecodeError as exc:
            yield Rejected(source, number, f"not JSON: {exc.msg} at column {exc.colno}")
            continue
        yield record_from_object(obj, source, number)
    if not seen_any:
        yield Rejected(source, 0, "no records")


def _read_json(path: Path, source: str) -> Iterator[Item]:
    """A JSON array (streamed element by element) or a single JSON object."""
    max_depth = configured_max_depth()
    try:
        with path.open("r", encoding="utf-8-sig") as fh:
            head = fh.read(1)
            while head and head.isspace():
                head = fh.read(1)
            if head == "[":
                yield from _stream_array(fh, source, max_depth)
                return
            rest = head + fh.read()
    except UnicodeDecodeError as exc:
        yield Rejected(source, 0, f"not UTF-8 text (byte {exc.start})")
        return
    try:
        check_json(rest, max_depth)
        obj = json.loads(rest)
    except JsonTooDeep:
        yield Rejected(source, 0, _too_deep(max_depth))
        return
    except json.JSONDecodeError as exc:
        yield Rejected(source, 0, f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
        return
    # OpenReview API exports wrap the notes: {"notes": [...]}.
    if isinstance(obj, dict) and isinstance(obj.get("notes"), list):
        for number, note in enumerate(obj["notes"], start=1):
            yield record_from_object(note, source, number)
    else:
        yield record_from_object(obj, source, 1)


def _stream_array(fh: io.TextIOBase, source: str, max_depth: int) -> Iterator[Item]:
    decoder = json.JSONDecoder()
    buffer = ""
    number = 0
    eof = False
    while True:
        buffer = buffer.lstrip().lstrip(",").lstrip()
        if buffer.startswith("]"):
            return
        if buffer:
            try:
                # The next element's depth is measured before the parser sees it;
                # where it ends is unknown then, so the rest of the file goes too.
                complete = first_value_within(buffer, max_depth)
            except JsonTooDeep:
                yield Rejected(source, number + 1, _too_deep(max_depth) + "; the rest of the file")
                return
            try:
                if not complete and not eof:
                    raise json.JSONDecodeError("incomplete", buffer, len(buffer))
                obj, end = decoder.raw_decode(buffer)
            except json.JSONDecodeError as exc:
                if eof:
                    yield Rejected(source, number + 1, f"not JSON: {exc.msg}")
                    return
            else:
                number += 1
                buffer = buffer[end:]
                yield record_from_object(obj, source, number)
                continue
        elif eof:
            yield Rejected(source, number + 1, "not JSON: the array is not closed")
            return
        chunk = fh.read(1 << 16)
        if not chunk:
            eof = True
        buffer += chunk


def _read_csv(path: Path, source: str, delimiter: str) -> Iterator[Item]:
    csv.field_size_limit(sys.maxsize)
    try:
        with path.open("r", encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh, delimiter=delimiter)
            columns = reader.fieldnames or []
            if columns and not set(columns) & set(FIELD_NAMES["abstract"]):
                # Otherwise every row would be rejected, one line each, for "no abstract".
                yield Rejected(
                    source,
                    0,
                    f"no abstract column (columns: {', '.join(columns)}; "
                    f"accepted for the abstract: {', '.join(FIELD_NAMES['abstract'])})",
                )
                return
            number = 0
            for number, row in enumerate(reader, start=1):
                yield record_from_object(row, source, number)
            if number == 0:
                yield Rejected(source, 0, "no records after the header row")
    except UnicodeDecodeError as exc:
        yield Rejected(source, 0, f"not UTF-8 text (byte {exc.start}); records before it were read")
    except csv.Error as exc:
        yield Rejected(source, 0, f"not CSV: {exc}")


def _unwrap(value: Any) -> Any:
    # OpenReview API v2 wraps every content field as {"value": ...}.
    if isinstance(value, dict) and "value" in value:
        return value["value"]
    return value


def record_from_object(obj: Any, source: str, number: int) -> Item:
    """A record from one JSON object (plain or an OpenReview note), or why not."""
    if not isinstance(obj, dict):
        return Rejected(source, number, f"expected a JSON object, got {type(obj).__name__}")
    fields = dict(obj)
    content = obj.get("content")
    if isinstance(content, dict):  # an OpenReview note
        fields = {k: _unwrap(v) for k, v in content.items()}
        fields.setdefault("id", obj.get("forum") or obj.get("id"))
        if "venue" not in fields and obj.get("venue"):
            fields["venue"] = obj.get("venue")
        if obj.get("forum") or obj.get("id"):
            fields.setdefault(
                "url", f"https://openreview.net/forum?id={obj.get('forum') or obj.get('id')}"
            )
        if not fields.get("year") and isinstance(obj.get("pdate") or obj.get("cdate"), int):
            import datetime as dt

            ms = obj.get("pdate") or obj.get("cdate")
            fields["year"] = dt.datetime.fromtimestamp(ms / 1000, dt.UTC).year
    return _make_record(fields, source, number)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value)
    text = str(value).strip()
    return text or None


def _list(value: Any) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        parts = value.split(";") if ";" in value else value.split(",")
        return tuple(p.strip() for p in parts if p.strip())
    if isinstance(value, list):
        return tuple(str(v).strip() for v in value if str(v).strip())
    return (str(value),)


def _first(fields: dict[str, Any], *names: str) -> Any:
    for name in names:
        value = fields.get(name)
        if value not in (None, "", []):
            return value
    return None


def _make_record(fields: dict[str, Any], source: str, number: int) -> Item:
    for name, value in fields.items():
        if _has_surrogate(value):
            return Rejected(source, number, f"{name} is not valid Unicode (a lone surrogate)")
    abstract = _first(fields, *FIELD_NAMES["abstract"])
    if abstract is not None and not isinstance(abstract, str):
        return Rejected(source, number, "abstract is not text")
    abstract = abstract or ""
    problem = check_abstract(abstract)
    if problem:
        return Rejected(source, number, problem)
    given = _text(_first(fields, *FIELD_NAMES["id"]))
    if given is not None and (len(given) > 200 or any(ord(c) < 32 for c in given)):
        return Rejected(source, number, "id is not a usable identifier")
    year_raw = _first(fields, *FIELD_NAMES["year"])
    year: int | None = None
    if year_raw is not None:
        try:
            year = int(str(year_raw)[:4])
        except ValueError:
            year = None
    return Record(
        id=derived_id(abstract),
        source_id=given,
        abstract=abstract.strip(),
        title=_text(_first(fields, *FIELD_NAMES["title"])),
        authors=_list(_first(fields, *FIELD_NAMES["authors"])),
        year=year,
        venue=_text(_first(fields, *FIELD_NAMES["venue"])),
        keywords=_list(_first(fields, *FIELD_NAMES["keywords"])),
        url=_text(_first(fields, *FIELD_NAMES["url"])),
        source=Path(source).name,
        record=number,
    )


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, list):
        return any(isinstance(v, str) and _SURROGATE.search(v) is not None for v in value)
    return False


def unique(items: Iterable[Item]) -> Iterator[Item]:
    """Drop repeats of a paper id already seen in this stream (the first wins)."""
    seen: set[str] = set()
    for item in items:
        if isinstance(item, Record):
            if item.id in seen:
                continue
            seen.add(item.id)
        yield item
