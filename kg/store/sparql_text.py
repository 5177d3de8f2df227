"""The one SPARQL tokenizer: what is code in a query and what is not (strings,
comments, IRIs, variables). The service's safety checks (``SERVICE``/``LOAD``
targets) and the remote store's ``VALUES`` placement both read queries with it.

It also makes the static checks taken before the engine parses a query:

- :func:`check_depth`. Oxigraph's parser and evaluator recurse once per level of
  the query's syntax tree, and a deep enough tree overflows the native stack: the
  process dies with a segfault no ``except`` can catch (5,000 nested ``{ }`` kill
  the web server through ``/sparql/update``; a chain of 1,000 property-path steps
  or 300 nested ``[ ]`` kills a query worker). So the depth of the tree the
  parser would build is measured and a query past a limit refused, far below
  where the engine fails: every open bracket (``{``, ``(``, ``[``) is one level;
  inside a bracket, each operator that chains into a deeper tree (``UNION``,
  ``OPTIONAL``, ``MINUS``, ``&&``, ``||``, ``!``, ``/``, ``|``, ``^``, ``+``,
  ``-``, ``*``) and each group that follows another adds one, since the engine
  folds ``a || b || c`` and ``{…} {…} {…}`` into left-deep trees.
- :func:`has_dataset_clause`: a query with its own ``FROM``/``FROM NAMED``.
- :func:`has_where`: an update whose cost the data decides.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")


@functools.cache
def _token_pattern() -> re.Pattern[str]:
    # Compiled on first use: its Unicode ranges take ~20 ms, which every query
    # worker process paid at start, though most queries never need tokens.
    return re.compile(
        r"""
        (?P<ws>\s+)
      | (?P<comment>\#[^\n]*)
      | (?P<string>'''(?:[^'\\]|\\.|'(?!''))*'''
                  | \"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
                  | '(?:[^'\\\n]|\\.)*'
                  | "(?:[^"\\\n]|\\.)*")
      | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
      | (?P<var>[?$][^\s{}()<>,;.'"\#=!&|+*/\[\]^]+)
      | (?P<word>(?:[A-Za-z_\u00C0-\U000EFFFF][\w\-.\u00B7\u00C0-\U000EFFFF]*)?:
                     [^\s{}()<>,;'"\#=!&|+*/\[\]^]*
                 | [A-Za-z_\u00C0-\U000EFFFF][\w\-\u00B7\u00C0-\U000EFFFF]*)
      | (?P<other>.)
        """,
        re.VERBOSE | re.DOTALL,
    )


@dataclass(frozen=True)
class Token:
    """A lexical token: its kind (a group name of :func:`_token_pattern`), text and offset."""

    kind: str
    text: str
    start: int


def unescape(text: str) -> str:
    """Apply SPARQL's codepoint escapes (``\\uXXXX``, ``\\UXXXXXXXX``) as the parser does."""
    if "\\" not in text:
        return text
    return _ESCAPE.sub(lambda m: _char(m.group(1) or m.group(2)), text)


def _char(hex_digits: str) -> str:
    code = int(hex_digits, 16)
    # An escape past U+10FFFF is a syntax error for the parser; keep it inert here.
    return chr(code) if code <= 0x10FFFF else "\ufffd"


def tokens(text: str) -> Iterator[Token]:
    """The significant tokens of SPARQL ``text`` (whitespace and comments dropped)."""
    for match in _token_pattern().finditer(text):
        kind = match.lastgroup or "other"
        if kind in ("ws", "comment"):
            continue
        yield Token(kind, match.group(), match.start())


DEFAULT_MAX_DEPTH = 128
"""Deepest query accepted by default. Measured on pyoxigraph 0.5 with an 8 MB
stack: 200 nested ``[ ]`` or 700 path steps still evaluate, 300 and 1,000 crash."""

_OPEN = frozenset("{([")
_CLOSE = frozenset("})]")
_CHAIN_SYMBOLS = frozenset("!/|^+-*&")
_CHAIN_WORDS = frozenset({"UNION", "OPTIONAL", "MINUS"})
# Characters that can deepen the tree; a query with fewer of them than the limit
# cannot be too deep, which spares the tokenizer for almost every query.
_DEEPENING = re.compile(r"[{(\[!/|^+\-*&\\]|union|optional|minus", re.IGNORECASE)


class QueryTooDeep(ValueError):
    """The query nests deeper than the limit (a client error: 400)."""

    def __init__(self, depth: int, limit: int) -> None:
        super().__init__(
            f"the query nests deeper than {limit} levels (brackets, UNION/OPTIONAL chains, "
            "operator chains): simplify it"
        )
        self.depth = depth
        self.limit = limit


def keyword(tok: Token) -> str | None:
    """The upper-cased keyword a token spells, or None (prefixed names are not keywords)."""
    if tok.kind == "word" and ":" not in tok.text:
        return tok.text.upper()
    return None


def check_depth(text: str, limit: int = DEFAULT_MAX_DEPTH) -> None:
    """Raise :class:`QueryTooDeep` when ``text`` (a query or an update) nests deeper
    than ``limit`` levels, counted as described in the module docstring."""
    if len(_DEEPENING.findall(text)) <= limit:
        return
    chains: list[int] = [0]  # per open bracket: chained operators and groups in it
    total = 0  # sum of chains
    previous: Token | None = None
    for tok in tokens(unescape(text)):
        t = tok.text
        if tok.kind == "other" and t in _OPEN:
            if t == "{":
                chains[-1] += 1
                total += 1
            chains.append(0)
        elif tok.kind == "other" and t in _CLOSE:
            if len(chains) > 1:
                total -= chains.pop()
        elif (tok.kind == "other" and t in _CHAIN_SYMBOLS) or keyword(tok) in _CHAIN_WORDS:
            doubled = (
                t in "&|"
                and previous is not None
                and previous.text == t
                and previous.start == tok.start - 1
            )
            if not doubled:  # && and || are one operator
                chains[-1] += 1
                total += 1
        depth = len(chains) - 1 + total
        if depth > limit:
            raise QueryTooDeep(depth, limit)
        previous = tok


def has_dataset_clause(text: str) -> bool:
    """Whether a query names its own dataset with ``FROM`` or ``FROM NAMED``.

    Such a query must be evaluated on that dataset, not on the union default
    graph the service otherwise uses."""
    if "from" not in text.lower() and "\\" not in text:
        return False
    depth = 0
    for tok in tokens(unescape(text)):
        if tok.kind == "other" and tok.text in "{}":
            depth += 1 if tok.text == "{" else -1
        elif depth == 0 and keyword(tok) == "FROM":
            return True
    return False


def has_where(text: str) -> bool:
    """Whether an update has a ``WHERE`` clause (``DELETE/INSERT … WHERE``,
    ``DELETE WHERE``): the only operations whose cost the data, not the text, decides."""
    if "where" not in text.lower() and "\\" not in text:
        return False
    return any(keyword(tok) == "WHERE" for tok in tokens(unescape(text)))
