"""The explorer's search box answered from the index (see :func:`search`)."""

from __future__ import annotations

import json
from typing import Any

from kg.read.labels import clean_text, local_name, paper_label
from kg.store.index.db import Index


def search(index: Index, text: str, limit: int = 20) -> list[dict[str, Any]]:
    """The explorer's search from the index: a paper whose id is ``text`` first,
    then entities whose names contain it (exact names first, most papers
    first), then papers by BM25 — the shape of :func:`kg.graphview.search`."""
    from kg.store.index import read as ix

    text = text.strip()
    if not text:
        return []
    out: list[dict[str, Any]] = []
    exact = (
        index.reader()
        .execute(
            "SELECT p.iri, p.id, p.title, substr(f.abstract, 1, 200) FROM papers p "
            "JOIN papers_fts f ON f.rowid = p.pid WHERE p.id = ?",
            (text,),
        )
        .fetchall()
    )
    found = [(iri, pid, title, snippet, 1) for iri, pid, title, snippet in exact]
    for e in ix.search_entities(index, text, limit):
        out.append(
            {
                "iri": e["iri"],
                "type": e["type"],
                "label": clean_text(e["label"] or "") or local_name(e["iri"]),
                "match": clean_text(e["matched"]),
                "papers": e["papers"],
            }
        )
    ranked = [(iri, pid) for iri, pid, _title in ix.search_papers(index, text, limit)]
    ranked = [(iri, pid) for iri, pid in ranked if not exact or pid != text]
    # One read for every paper's snippet, as one row: a row each hands the GIL
    # over per row, and under concurrent requests each hand-back can wait.
    (listed,) = (
        index.reader()
        .execute(
            "SELECT json_group_array(json_array(p.id, p.title, substr(f.abstract, 1, 200))) "
            "FROM papers p JOIN papers_fts f ON f.rowid = p.pid "
            f"WHERE p.id IN ({','.join('?' * len(ranked))})",
            [pid for _iri, pid in ranked],
        )
        .fetchone()
    )
    snippets = {pid: (title, snippet) for pid, title, snippet in json.loads(listed)}
    found += [(iri, pid, *snippets[pid], 0) for iri, pid in ranked if pid in snippets]
    papers = [
        {
            "iri": iri,
            "type": "Paper",
            "label": paper_label(None, title or snippet, pid),
            "match": clean_text(title or snippet or ""),
            "papers": 1,
        }
        for iri, pid, title, snippet, _exact in found
    ]
    return (papers[: len(exact)] + out + papers[len(exact) :])[:limit]
