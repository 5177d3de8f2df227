"""Labels for drawings and panels: local names, text without LaTeX, paper labels."""

from __future__ import annotations

import re
from functools import lru_cache

from kg.reading.latex import clean_label


def local_name(iri: str) -> str:
    """``https://w3id.org/mlkg/ontology#Task`` → ``Task``."""
    return re.split(r"[#/]", iri)[-1]


@lru_cache(maxsize=1 << 13)
def clean_text(text: str) -> str:
    """Text without LaTeX markup and with folded whitespace, for labels.

    Remembered: a graph star shows the same few hundred titles and labels on
    every request (about a millisecond of a star at 100k papers to clean again).
    """
    return clean_label(text)


def paper_label(title: str | None, snippet: str | None, paper_id: str, width: int = 60) -> str:
    """A paper's title, or the start of its abstract cut at a word, or its id."""
    if title:
        return clean_text(title)
    if snippet:
        text = clean_text(snippet)
        if len(text) <= width:
            return text
        cut = text[:width].rsplit(" ", 1)[0].rstrip(",;:.")
        return cut + "…"
    return paper_id
