"""Limits on JSON text, checked before :func:`json.loads` sees it.

The standard parser recurses once per nested array or object and gives up only
at Python's recursion limit, and whatever walks the parsed value afterwards
recurses too; a parse of many megabytes of tiny values holds the interpreter
lock for seconds. So ``kg ingest`` and ``POST /papers`` measure the text first
with one scanner (strings skipped, so brackets inside them do not count) and
refuse what is nested deeper than ``KG_MAX_JSON_DEPTH`` levels (default 32) or,
for request bodies, holds more values than a request can need.
"""

from __future__ import annotations

import os
import re

DEFAULT_MAX_DEPTH = 32
"""Deepest nesting of arrays and objects accepted (``KG_MAX_JSON_DEPTH``)."""

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},]')
_TOKENS_BYTES = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},]')


class JsonTooDeep(ValueError):
    """The text nests arrays or objects deeper than the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"arrays or objects nested deeper than {limit} levels")
        self.limit = limit


class JsonTooLarge(ValueError):
    """The text holds more values than the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} JSON values")
        self.limit = limit


def configured_max_depth() -> int:
    """``KG_MAX_JSON_DEPTH`` when set (the service's setting: ``kg ingest`` refuses
    what ``POST /papers`` refuses), else :data:`DEFAULT_MAX_DEPTH`."""
    raw = os.environ.get("KG_MAX_JSON_DEPTH", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_DEPTH


def check_json(text: str | bytes, max_depth: int, max_values: int | None = None) -> None:
    """Raise :class:`JsonTooDeep` when ``text`` nests deeper than ``max_depth``, or
    :class:`JsonTooLarge` when it holds more than ``max_values`` values (counted as
    separators plus containers). Text that is not JSON passes: the parser says why."""
    if isinstance(text, bytes):
        opens = text.count(b"[") + text.count(b"{")
        commas = text.count(b",")
        pattern = _TOKENS_BYTES
        open_chars, close_chars, comma = b"[{", b"]}", b","
    else:
        opens = text.count("[") + text.count("{")
        commas = text.count(",")
        pattern = _TOKENS  # type: ignore[assignment]
        open_chars, close_chars, comma = "[{", "]}", ","  # type: ignore[assignment]
    if opens <= max_depth and (max_values is None or opens + commas <= max_values):
        return  # counted with brackets and commas inside strings: an upper bound
    depth = values = 0
    for match in pattern.finditer(text):  # type: ignore[arg-type]
        token = match.group()
        if len(token) != 1:
            continue  # a string
        if token in open_chars:
            depth += 1
            values += 1
            if depth > max_depth:
                raise JsonTooDeep(max_depth)
        elif token in close_chars:
            depth -= 1
        elif token == comma:
            values += 1
        if max_values is not None and values > max_values:
            raise JsonTooLarge(max_values)


def first_value_within(text: str, max_depth: int) -> bool:
    """Whether the JSON value at the start of ``text`` ends within it (False: more
    text is needed); raises :class:`JsonTooDeep` once it nests past ``max_depth``.
    Reads only as far as that value, so a stream of values is measured one by one."""
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if len(token) != 1:
            if depth == 0:
                return True  # a string at the top level
            continue
        if token in "[{":
            depth += 1
            if depth > max_depth:
                raise JsonTooDeep(max_depth)
        elif token in "]}":
            depth -= 1
            if depth <= 0:
                return True
        elif depth == 0:
            return True  # a comma after a number or literal
    return False
