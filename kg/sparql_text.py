"""The one SPARQL tokenizer: what is code in a query and what is not (strings,
comments, IRIs, variables). The service's safety checks (``SERVICE``/``LOAD``
targets) and the remote store's ``VALUES`` placement both read queries with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")

_TOKEN = re.compile(
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
    """A lexical token: its kind (a group name of ``_TOKEN``), text and offset."""

    kind: str
    text: str
    start: int


def unescape(text: str) -> str:
    """Apply SPARQL's codepoint escapes (``\\uXXXX``, ``\\UXXXXXXXX``) as the parser does."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), text)


def tokens(text: str) -> Iterator[Token]:
    """The significant tokens of SPARQL ``text`` (whitespace and comments dropped)."""
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "other"
        if kind in ("ws", "comment"):
            continue
        yield Token(kind, match.group(), match.start())
