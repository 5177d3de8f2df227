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

The links live in their own graph (:data:`TAXONOMY_GRAPH`), replaced whole
each time, so ingesting in any order gives the same taxonomy.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources
from urllib.parse import unquote

from pyoxigraph import NamedNode, Quad

from kg.store.embedded import GraphStore
from kg.store.index import DERIVED_UPDATE, Index, index_of
from kg.store.queries import rows, run
from kg.vocab import BASE, ID_PREFIX, SKOS

TAXONOMY_GRAPH = NamedNode(BASE + "graph/taxonomy")
_TASK_PREFIX = ID_PREFIX + "task/"


def _generic_keys() -> frozenset[str]:
    path = resources.files("kg.extraction") / "patterns" / "generic.jsonl"
    words = [json.loads(line)["word"] for line in path.read_text("utf-8").splitlines() if line]
    return frozenset(w.lower().replace(" ", "-") for w in words) | {"learning", "task", "problem"}


def broader_links(task_iris: Iterable[str]) -> list[tuple[str, str]]:
    """``(narrower, broader)`` IRI pairs among these task IRIs, by key suffix."""
    keys = {
        unquote(iri[len(_TASK_PREFIX) :]): iri for iri in task_iris if iri.startswith(_TASK_PREFIX)
    }
    generic = _generic_keys()
    links = []
    for key, iri in sorted(keys.items()):
        words = key.split("-")
        for i in range(1, len(words)):
            suffix = "-".join(words[i:])
            if suffix in keys and suffix not in generic:
                links.append((iri, keys[suffix]))
                break
    return links


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
        found = index.reader().execute("SELECT iri FROM entities WHERE type = 'Task'")
        return [iri for (iri,) in found]
    return [r["task"].value for r in rows(run(store, "store/task-nodes"))]


def derive_taxonomy(store: GraphStore) -> int:
    """Replace the taxonomy graph from the task nodes and the method taxonomy
    statements now stored; the number of links."""
    tasks = task_iris(store)
    methods = stated_links(
        (r["narrower"].value, r["broader"].value) for r in rows(run(store, "store/method-broader"))
    )
    links = broader_links(tasks) + methods
    quads = taxonomy_quads(links)
    # IRIs below are pyoxigraph terms printed as escaped N-Triples, built from
    # stored task IRIs by kg.vocab: no raw input reaches the update text.
    body = " ".join(f"{q.subject} {q.predicate} {q.object} ." for q in quads)
    store.update(
        DERIVED_UPDATE
        + f"DROP SILENT GRAPH {TAXONOMY_GRAPH} ;\n"
        + (f"INSERT DATA {{ GRAPH {TAXONOMY_GRAPH} {{ {body} }} }}" if body else "")
    )
    index = store.search_index()
    if isinstance(index, Index) and not index.read_only:
        # The results read model answers task filters and trees from the index.
        index.write_taxonomy(links)
    return len(quads) // 2
