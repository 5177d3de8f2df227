"""The taxonomy: ``skos:broader`` / ``skos:narrower`` between tasks and between methods.

Derived at ingest from the head of the task phrase: a task's broader task is
the longest proper word-suffix of its canonical key that is itself a task node
("offline reinforcement learning" → "reinforcement learning", "LLM unlearning"
→ "unlearning"), never a generic word on its own ("learning" is in
``patterns/generic.jsonl``). Only the nearest broader node is linked, so chains
("offline multi-agent RL" → "multi-agent RL" → "RL") stay a tree; queries walk
them with ``skos:narrower*``. Methods are linked only where a paper's text
says so ("GRPO, a policy-gradient method": a ``kg:TaxonomyStatement`` of that
paper, see :mod:`kg.extraction.hypernyms`); their names alone do not say what
they specialise, and guessing would be wrong more often than right.

The links live in their own graph (:data:`TAXONOMY_GRAPH`), derived from what
is stored, so ingesting in any order gives the same taxonomy; after each write
only what the write changed is derived again (:func:`derive_taxonomy`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from functools import cache
from importlib import resources
from urllib.parse import unquote

from pyoxigraph import NamedNode, Quad

from kg.store.embedded import GraphStore
from kg.store.index import DERIVED_UPDATE, Index, index_of, taxonomy_rows
from kg.store.index.result_rows import replace_taxonomy
from kg.store.queries import rows, run
from kg.vocab import BASE, ID_PREFIX, SKOS

TAXONOMY_GRAPH = NamedNode(BASE + "graph/taxonomy")
_TASK_PREFIX = ID_PREFIX + "task/"


@cache
def _generic_keys() -> frozenset[str]:
    path = resources.files("kg.extraction") / "patterns" / "generic.jsonl"
    words = [json.loads(line)["word"] for line in path.read_text("utf-8").splitlines() if line]
    return frozenset(w.lower().replace(" ", "-") for w in words) | {"learning", "task", "problem"}


def task_key(iri: str) -> str:
    """The canonical key of a task node's IRI."""
    return unquote(iri[len(_TASK_PREFIX) :])


def broader_of(key: str, task: Callable[[str], str | None]) -> str | None:
    """The IRI of a task key's broader task: its longest proper word-suffix that
    ``task`` (key → IRI, or None) says is a task and that is not generic."""
    generic = _generic_keys()
    at = key.find("-")
    while at != -1:
        suffix = key[at + 1 :]
        if suffix not in generic and (iri := task(suffix)) is not None:
            return iri
        at = key.find("-", at + 1)
    return None


def _decided(task_iris: Iterable[str]) -> list[tuple[str, str, str | None]]:
    """Each task as (key, IRI, its broader task's IRI or None), among these IRIs."""
    keys = {task_key(iri): iri for iri in task_iris if iri.startswith(_TASK_PREFIX)}
    return [(key, iri, broader_of(key, keys.get)) for key, iri in sorted(keys.items())]


def broader_links(task_iris: Iterable[str]) -> list[tuple[str, str]]:
    """``(narrower, broader)`` IRI pairs among these task IRIs, by key suffix."""
    return [(iri, broader) for _key, iri, broader in _decided(task_iris) if broader is not None]


def taxonomy_quads(links: Iterable[tuple[str, str]]) -> list[Quad]:
    """Both directions of each link, in the taxonomy graph."""
    quads = []
    for narrower, broader in links:
        n, b = NamedNode(narrower), NamedNode(broader)
        quads.append(Quad(n, SKOS.broader, b, TAXONOMY_GRAPH))
        quads.append(Quad(b, SKOS.narrower, n, TAXONOMY_GRAPH))
    return quads


def stated_links(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The method links papers state, without the contradicted ones: when one
    paper says X is a kind of Y and another the reverse, neither is kept."""
    found = set(pairs)
    return sorted((n, b) for n, b in found if n != b and (b, n) not in found)


def task_iris(store: GraphStore) -> list[str]:
    """Every task node: from the index when it follows the store (a range of one
    B-tree: 0.05 s at 100,000 papers), else by scanning every graph (seconds)."""
    index = index_of(store)
    if index is not None:
        return taxonomy_rows.task_iris(index.reader())
    return [r["task"].value for r in rows(run(store, "store/task-nodes"))]


def _method_links(store: GraphStore) -> list[tuple[str, str]]:
    pairs = rows(run(store, "store/method-broader"))
    return stated_links((r["narrower"].value, r["broader"].value) for r in pairs)


def _triples(links: Iterable[tuple[str, str]]) -> str:
    # IRIs below are pyoxigraph terms printed as escaped N-Triples, built from
    # stored task IRIs by kg.vocab: no raw input reaches the update text.
    return " ".join(f"{q.subject} {q.predicate} {q.object} ." for q in taxonomy_quads(links))


def _graph_update(removed: Iterable[tuple[str, str]], added: Iterable[tuple[str, str]]) -> str:
    parts = (
        [f"DELETE DATA {{ GRAPH {TAXONOMY_GRAPH} {{ {_triples(removed)} }} }}"] if removed else []
    )
    parts += [f"INSERT DATA {{ GRAPH {TAXONOMY_GRAPH} {{ {_triples(added)} }} }}"] if added else []
    return DERIVED_UPDATE + " ;\n".join(parts)


def derive_taxonomy(store: GraphStore) -> int:
    """Bring the taxonomy graph in line with the task nodes and the method
    taxonomy statements now stored; the number of links.

    With the index in step and its bookkeeping kept (:mod:`kg.store.index.taxonomy_rows`),
    only the tasks changed since the last derivation, and those whose keys end
    with theirs, are decided again, and only the links that changed are written:
    the cost follows the write, not the store. Otherwise the graph is derived
    whole and replaced, and a usable index starts its bookkeeping from it."""
    index = index_of(store)
    if index is not None and not index.read_only:

        def change(db: sqlite3.Connection) -> int:
            # The method links: from the index's statement rows when it holds
            # every paper's, else read from the store.
            held = taxonomy_rows.holds_statements(db)
            if taxonomy_rows.tracked(db):
                methods = None if held else _method_links(store)
                found = taxonomy_rows.derive_changes(
                    db, _TASK_PREFIX, task_key, broader_of, methods
                )
                if found.removed or found.added:
                    store.update(_graph_update(found.removed, found.added))
                return taxonomy_rows.link_count(db)
            # Read inside the write so that no task another write adds is missed.
            tasks = _decided(taxonomy_rows.task_iris(db))
            methods = stated_links(taxonomy_rows.stated_pairs(db)) if held else _method_links(store)
            links = [(iri, b) for _key, iri, b in tasks if b is not None] + methods
            _replace_graph(store, links)
            taxonomy_rows.reset(db, tasks, methods)
            return len(set(links))

        return int(index.write_taxonomy(change))
    links = broader_links(task_iris(store)) + _method_links(store)
    _replace_graph(store, links)
    written = store.search_index()
    if isinstance(written, Index) and not written.read_only:
        # The results read model answers task filters and trees from the index.
        written.write_taxonomy(lambda db: replace_taxonomy(db, links))
    return len(set(links))


def _replace_graph(store: GraphStore, links: list[tuple[str, str]]) -> None:
    body = _triples(links)
    store.update(
        DERIVED_UPDATE
        + f"DROP SILENT GRAPH {TAXONOMY_GRAPH} ;\n"
        + (f"INSERT DATA {{ GRAPH {TAXONOMY_GRAPH} {{ {body} }} }}" if body else "")
    )
