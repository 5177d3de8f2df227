"""Numbers stated in claims, parsed to a number and a unit.

Works on LaTeX-cleaned text (see :mod:`kg.reading.latex`): ``×46`` → (46.0, "×"),
``+5.48%`` → (5.48, "%"), ``+5.1 AP`` → (5.1, "AP"), ``81×`` → (81.0, "×"),
``4-times`` → (4.0, "×"). Asymptotic expressions (``O(n log n)``) are values
without a number; their unit is the complexity class symbol.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from kg.extraction.canonical import word_list
from kg.reading import latex

_NUM = r"[+\-−±]?\d+(?:,\d{3})*(?:\.\d+)?"
BARE_NUMBER = re.compile(r"[+\-−±]?\d+(?:\.\d+)?")
"""A number token on its own ("47.7"), as the result finder reads one."""
# Units that follow the number; metric acronyms are upper-case words of 2-6 letters.
_UNIT_AFTER = (
    r"(?:\s?(?P<pct>%|percent\b|pp\b|percentage points?\b)"
    r"|\s?(?P<times>×|x\b|X\b|-?\s?times\b|-fold\b|\s?fold\b)"
    r"|\s(?P<acr>(?:m|k)?[A-Z][A-Za-z@\-]{1,7}\d*(?:@\d+)?)\b)"
)
_VALUE = re.compile(
    rf"(?P<pre>×\s?)(?P<n1>{_NUM})"
    rf"|(?<![\w.])(?P<n2>{_NUM}){_UNIT_AFTER}"
)
_BIG_O = re.compile(r"(?<![A-Za-z])(?P<sym>O|Ω|Θ|o|ω|Õ)\s?\(")
# Upper-case words after a number that are not units.
_NOT_UNITS = frozenset(
    "The In On For We Our This It A An And Or Of To At By As Is Are With LLM LLMs GPU "  # noqa: SIM905
    "GPUs CPU CPUs".split()
)


@cache
def _model_version() -> re.Pattern[str]:
    """A model family's name just before a number: the number is its version
    ("Gemini 2.5 Pro", "Claude-4 Sonnet", "Qwen 3 8B"), not a value."""
    names = "|".join(sorted(map(re.escape, word_list("model_families")), key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{names})[\s-]?$")


@dataclass(frozen=True, slots=True)
class FoundValue:
    """A value found in a text: its span in that text, the number and the unit."""

    start: int
    end: int
    number: float | None
    unit: str | None


def _number(text: str) -> float:
    return float(text.replace(",", "").replace("−", "-").replace("±", "").lstrip("+"))


def _balanced_end(text: str, open_at: int) -> int | None:
    depth = 0
    for i in range(open_at, min(len(text), open_at + 120)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def find_values(text: str) -> list[FoundValue]:
    """All values in a clean text, in order; overlapping readings keep the first."""
    found: list[FoundValue] = []
    version = _model_version()
    for m in _VALUE.finditer(text):
        if m.group("n2") is not None and version.search(text, max(0, m.start() - 24), m.start()):
            continue
        if m.group("n1") is not None:
            found.append(FoundValue(m.start(), m.end(), _number(m.group("n1")), "×"))
            continue
        number = _number(m.group("n2"))
        if m.group("pct"):
            unit = "%"
        elif m.group("times"):
            unit = "×"
        else:
            unit = m.group("acr")
            if unit in _NOT_UNITS or unit.lower() == unit:
                continue
        found.append(FoundValue(m.start(), m.end(), number, unit))
    for m in _BIG_O.finditer(text):
        end = _balanced_end(text, m.end() - 1)
        if end is not None:
            found.append(FoundValue(m.start(), end, None, m.group("sym")))
    found.sort(key=lambda v: (v.start, -v.end))
    out: list[FoundValue] = []
    for v in found:
        if not out or v.start >= out[-1].end:
            out.append(v)
    return out


def parse_value(text: str) -> tuple[float | None, str | None]:
    """Parse one value as written (LaTeX allowed): ``$\\times$46`` → (46.0, "×")."""
    cleaned = latex.clean(text).text.strip()
    values = find_values(cleaned)
    if values:
        return values[0].number, values[0].unit
    m = re.fullmatch(_NUM, cleaned)
    if m:
        return _number(cleaned), None
    return None, None
