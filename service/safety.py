"""Static checks on SPARQL text before it reaches the store.

:func:`check_depth` refuses (400) a query or update nested deeper than
``KG_MAX_QUERY_DEPTH``: the engine would overflow its stack on it and crash.

pyoxigraph would evaluate ``SERVICE <iri>`` and ``LOAD <iri>`` by fetching the
IRI, so a client could make the server issue requests. :func:`check_remote_access`
finds those keywords with a small tokenizer that understands what is *not*
code — strings, comments and IRIs — and refuses every target that is not on the
allow-list. It also applies SPARQL's ``\\uXXXX`` escapes first, as the parser
does, so ``SERV\\u0049CE`` is caught too.

:func:`apply_update_dataset` adds the protocol's ``using-graph-uri`` /
``using-named-graph-uri`` to an update as ``USING`` clauses (pyoxigraph's
``Store.update`` has no dataset argument).

:func:`vet_query` and :func:`vet_update` run these checks where they cannot hold
up other requests: on the event loop for a short text, in a thread for a long
one. The tokenizer is pure Python, and a body of megabytes of short tokens took
seconds (37 s for 10 MB of numbers), during which not even ``/health`` answered.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any

from kg.reading.jsonlimits import JsonTooDeep, JsonTooLarge, check_json
from kg.store import sparql_text
from kg.store.sparql_text import Token, tokens, unescape
from service.errors import (
    BadRequest,
    ForbiddenQuery,
    InputTooDeep,
    InvalidParameter,
    Problem,
    QueryTooDeep,
)

__all__ = [
    "Token",
    "apply_update_dataset",
    "check_depth",
    "check_remote_access",
    "vet_query",
    "vet_update",
    "parse_json",
    "tokens",
    "unescape",
]

_keyword = sparql_text.keyword


def check_depth(text: str, limit: int) -> None:
    """Raise a 400 naming the limit when ``text`` nests deeper than ``limit`` levels
    (see :mod:`kg.store.sparql_text`): checked before the engine, which would crash on it."""
    try:
        sparql_text.check_depth(text, limit)
    except sparql_text.QueryTooDeep as exc:
        raise QueryTooDeep(str(exc), limit=limit, setting="KG_MAX_QUERY_DEPTH") from None


def remote_targets(text: str) -> list[tuple[str, str | None]]:
    """Every ``SERVICE`` and ``LOAD`` in ``text`` with its target IRI (None when the
    target is not a constant IRI, e.g. a variable)."""
    source = unescape(text)
    lowered = source.lower()
    if "service" not in lowered and "load" not in lowered:
        return []  # the common case costs one scan
    toks = list(tokens(source))
    prefixes: dict[str, str] = {}
    found: list[tuple[str, str | None]] = []
    for i, tok in enumerate(toks):
        kw = _keyword(tok)
        if kw == "PREFIX" and i + 2 < len(toks) and toks[i + 2].kind == "iri":
            prefixes[toks[i + 1].text.rstrip(":")] = toks[i + 2].text[1:-1]
        if kw not in ("SERVICE", "LOAD"):
            continue
        j = i + 1
        if j < len(toks) and _keyword(toks[j]) == "SILENT":
            j += 1
        target: str | None = None
        if j < len(toks):
            nxt = toks[j]
            if nxt.kind == "iri":
                target = nxt.text[1:-1]
            elif nxt.kind == "word" and ":" in nxt.text:
                prefix, _, local = nxt.text.partition(":")
                if prefix in prefixes:
                    target = prefixes[prefix] + local
        found.append((kw, target))
    return found


def allowed(target: str, allowlist: Sequence[str]) -> bool:
    """Whether ``target`` is on the allow-list: equal to an entry, or under an
    entry that ends in ``/`` or ``#``."""
    return any(
        target == entry or (entry.endswith(("/", "#")) and target.startswith(entry))
        for entry in allowlist
    )


def check_remote_access(text: str, allowlist: Sequence[str]) -> None:
    """Raise :class:`~service.errors.ForbiddenQuery` (400) when ``text`` would make
    the server fetch something not on the allow-list."""
    for keyword, target in remote_targets(text):
        if target is None:
            raise ForbiddenQuery(
                f"{keyword} is only allowed with a constant IRI on the allow-list",
                keyword=keyword,
            )
        if not allowed(target, allowlist):
            raise ForbiddenQuery(
                f"{keyword} <{target}> is refused: the server does not fetch URLs "
                "that are not on its allow-list (KG_SERVICE_ALLOWLIST)",
                keyword=keyword,
                target=target,
            )


INLINE_LIMIT = 64 * 1024
"""Texts and bodies up to this many characters are checked or parsed on the event
loop (a thread hop costs more than that); larger ones in a thread."""


async def vet_query(text: str, max_depth: int, allowlist: Sequence[str]) -> None:
    """:func:`check_depth` and :func:`check_remote_access`, off the event loop when long."""

    def run() -> None:
        check_depth(text, max_depth)
        check_remote_access(text, allowlist)

    if len(text) <= INLINE_LIMIT:
        run()
    else:
        await asyncio.to_thread(run)


async def vet_update(
    text: str,
    max_depth: int,
    allowlist: Sequence[str],
    using_graphs: Sequence[str],
    using_named_graphs: Sequence[str],
) -> tuple[str, bool]:
    """The checks of :func:`vet_query`, then the update with the protocol's dataset
    applied (:func:`apply_update_dataset`) and whether it has a ``WHERE`` clause;
    off the event loop when long."""

    def run() -> tuple[str, bool]:
        check_depth(text, max_depth)
        check_remote_access(text, allowlist)
        full = apply_update_dataset(text, using_graphs, using_named_graphs)
        return full, sparql_text.has_where(full)

    if len(text) <= INLINE_LIMIT:
        return run()
    return await asyncio.to_thread(run)


def apply_update_dataset(
    text: str, using_graphs: Sequence[str], using_named_graphs: Sequence[str]
) -> str:
    """Add ``USING``/``USING NAMED`` clauses for the protocol's dataset parameters
    to every ``DELETE/INSERT … WHERE`` operation of an update.

    The protocol forbids combining them with the update's own ``USING``/``WITH``:
    that is a 400."""
    if not using_graphs and not using_named_graphs:
        return text
    for graph in (*using_graphs, *using_named_graphs):
        if not _IRI.fullmatch(f"<{graph}>"):
            raise BadRequest(f"not an IRI: {graph!r}")
    source = unescape(text)
    clause = " ".join(
        [f"USING <{g}>" for g in using_graphs] + [f"USING NAMED <{g}>" for g in using_named_graphs]
    )
    inserts: list[int] = []
    depth = 0
    previous: str | None = None
    for tok in tokens(source):
        if tok.text in ("{", "}"):
            depth += 1 if tok.text == "{" else -1
        kw = _keyword(tok)
        if depth == 0 and kw in ("USING", "WITH"):
            raise BadRequest(
                "the update has its own USING/WITH and the request also gives "
                "using-graph-uri/using-named-graph-uri: use one or the other",
            )
        if depth == 0 and kw == "WHERE" and previous != "DELETE":
            inserts.append(tok.start)
        previous = kw
    for offset in reversed(inserts):
        source = source[:offset] + clause + " " + source[offset:]
    return source


_IRI = re.compile(r"<[^<>\"{}|^`\\\x00-\x20]*>")


JSON_VALUES_LIMIT = 100_000
"""Most values (separators plus containers) a JSON request body may hold: a
thousand per record of the most a ``POST /papers`` may carry, far more than a
record needs. Parsing is one call that holds the interpreter lock: millions of
tiny values held every other request (``/health`` included) for seconds."""


def parse_json(body: bytes, max_depth: int) -> Any:
    """A JSON request body: 400 past ``max_depth`` levels, 413 past
    :data:`JSON_VALUES_LIMIT` values, 422 when it is not JSON."""
    try:
        check_json(body, max_depth, JSON_VALUES_LIMIT)
    except JsonTooDeep:
        raise InputTooDeep(
            f"the JSON body nests deeper than {max_depth} levels",
            limit=max_depth,
            setting="KG_MAX_JSON_DEPTH",
        ) from None
    except JsonTooLarge:
        raise Problem(
            f"the JSON body holds more than {JSON_VALUES_LIMIT} values",
            status=413,
            slug="request-too-large",
            limit=JSON_VALUES_LIMIT,
        ) from None
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidParameter(
            f"invalid parameter: body: not JSON: {exc}",
            errors=[{"parameter": "body", "in": "body", "message": f"not JSON: {exc}"}],
        ) from None
