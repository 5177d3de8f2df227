"""The graph views' reads: the ``queries/graph/*.rq`` rows as plain values, the
focus resolver, and the explorer's side panel and search box. :mod:`kg.read.graphview`
builds drawings on top of these and re-exports them."""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from pyoxigraph import Literal, NamedNode, QuerySolutions

from kg.read.labels import clean_text, local_name, paper_label
from kg.read.resolve import focus_candidates
from kg.store.embedded import GraphStore
from kg.store.queries import NamedQuery, default_registry
from kg.vocab import ID_PREFIX, paper_iri


class GraphViewError(ValueError):
    """A graph request that cannot be answered; ``param`` names the culprit."""

    def __init__(self, message: str, *, param: str, status: int = 422) -> None:
        super().__init__(message)
        self.param = param
        self.status = status


class FocusNotFound(GraphViewError):
    """The focus names no paper or entity in the store."""

    def __init__(self, focus: str) -> None:
        super().__init__(f"no paper or entity {focus!r} in the graph", param="focus", status=404)


# ------------------------------------------------------------------ queries


def named_query(name: str) -> NamedQuery:
    """``queries/graph/{name}.rq`` from the project's query registry (parsed at start-up)."""
    return default_registry().get(f"graph/{name}")


def run(store: GraphStore, name: str, **bindings: NamedNode | Literal) -> list[dict[str, str]]:
    """Run a named graph query; each row as ``{variable: value}`` (unbound ones left out).

    Bindings go in as pyoxigraph substitutions. They are the internal
    callers' own terms, so optional ones (``node`` on ``entities``) need no
    declaration in the query header."""
    query = named_query(name)
    solutions = store.query(query.sparql, substitutions=dict(bindings) or None)
    assert isinstance(solutions, QuerySolutions), name
    names = [v.value for v in solutions.variables]
    return [
        {n: term.value for n, term in zip(names, row, strict=True) if term is not None}
        for row in solutions
    ]


def resolve_focus(store: GraphStore, focus: str, known: Container[str] | None = None) -> str:
    """The IRI a focus names (see :func:`kg.read.resolve.focus_candidates`).

    ``known`` holds the IRIs of the drawable nodes; without it, each candidate
    is looked up in the store.
    """
    focus = focus.strip()
    for iri in focus_candidates(focus):
        if known is not None:
            if iri in known:
                return iri
        else:
            try:
                node = NamedNode(iri)
            except ValueError:
                continue  # not even an IRI (spaces, quotes…): it names nothing here
            if run(store, "papers", node=node) or run(store, "entities", node=node):
                return iri
    # The id a paper's source gave it (a forum id) names the paper too.
    from kg.read.papers import resolve_paper_id

    paper_id = resolve_paper_id(store, focus)
    if paper_id != focus and (known is None or paper_iri(paper_id).value in known):
        return paper_iri(paper_id).value
    raise FocusNotFound(focus)


# ------------------------------------------------------------------ the side panel


def node_details(store: GraphStore, focus: str) -> dict[str, Any]:
    """What the explorer's side panel shows for one paper or entity."""
    iri = resolve_focus(store, focus)
    node = NamedNode(iri)
    details: dict[str, Any] = {"iri": iri}
    papers = run(store, "papers", node=node)
    if papers:
        row = papers[0]
        pid = row.get("id") or local_name(iri)
        details.update(
            type="Paper",
            id=pid,
            label=paper_label(row.get("title"), row.get("snippet"), pid),
            title=clean_text(row["title"]) if row.get("title") else None,
            aliases=[],
            papers=[],
            entities=[
                {
                    "iri": r["entity"],
                    "label": clean_text(r.get("label") or local_name(r["entity"])),
                    "type": local_name(r["type"]),
                    "predicate": local_name(r["predicate"]),
                }
                for r in run(store, "paper-entities", node=node)
            ],
        )
        whole = run(store, "paper-abstract", node=node)
        details["abstract"] = clean_text(whole[0]["abstract"]) if whole else ""
    else:
        entity = run(store, "entities", node=node)
        label = clean_text(entity[0].get("label") or "") if entity else ""
        details.update(
            type=local_name(entity[0]["type"]) if entity else "Entity",
            id=iri[len(ID_PREFIX) :] if iri.startswith(ID_PREFIX) else iri,
            label=label or local_name(iri),
            aliases=sorted(
                {clean_text(r["alias"]) for r in run(store, "aliases", node=node)} - {label}
            ),
            papers=[
                {
                    "iri": r["paper"],
                    "id": r.get("id") or local_name(r["paper"]),
                    "title": clean_text(r["title"]) if r.get("title") else None,
                    "label": paper_label(
                        r.get("title"), r.get("snippet"), r.get("id") or local_name(r["paper"])
                    ),
                    "snippet": _snippet(r.get("snippet") or ""),
                    "predicate": local_name(r["predicate"]),
                }
                for r in run(store, "entity-papers", node=node)
            ],
            entities=[],
        )
    details["claims"] = [_claim(r) for r in run(store, "node-claims", node=node)]
    return details


def _snippet(text: str, width: int = 220) -> str:
    clean = clean_text(text)
    return clean if len(clean) <= width else clean[:width].rsplit(" ", 1)[0] + "…"


def _claim(row: dict[str, str]) -> dict[str, Any]:
    """A claim with its sentence split around it, LaTeX cleaned, for highlighting."""
    sentence = row.get("sentence") or row["text"]
    offset = max(0, int(row.get("offset", 0)))
    length = max(0, int(row.get("length", len(row["text"]))))
    end = offset + length
    before, claim, after = sentence[:offset], sentence[offset:end], sentence[end:]
    if not claim:
        before, claim, after = "", row["text"], ""
    return {
        "iri": row["claim"],
        "paper": row["paper"],
        "kind": local_name(row["kind"]) if row.get("kind") else None,
        "text": clean_text(row["text"]),
        "before": clean_text(before) + (" " if before.endswith((" ", "\n")) else ""),
        "claim": clean_text(claim),
        "after": (" " if after.startswith((" ", "\n")) else "") + clean_text(after),
    }


def search(store: GraphStore, text: str, limit: int = 20) -> list[dict[str, Any]]:
    """Entities and papers matching a text, best first (the explorer's search box)."""
    from kg.store.index import index_of

    index = index_of(store)
    if index is not None:
        from kg.store.index.search import search as index_search

        return index_search(index, text, limit)
    text = text.strip()
    if not text:
        return []
    out = []
    for row in run(store, "search", q=Literal(text))[:limit]:
        kind = local_name(row["type"])
        label = (
            paper_label(None, row.get("label"), local_name(row["node"]))
            if kind == "Paper"
            else clean_text(row.get("label") or local_name(row["node"]))
        )
        out.append(
            {
                "iri": row["node"],
                "type": kind,
                "label": label,
                "match": clean_text(row.get("match", "")),
                "papers": int(row.get("papers", 0)),
            }
        )
    return out
