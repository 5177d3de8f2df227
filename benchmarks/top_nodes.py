"""The most-linked nodes of each type in a store, for the graph audit of
``benchmarks/quality.md`` (before and after corpus-level consolidation).

    python benchmarks/top_nodes.py --store /tmp/cons-iclr -k 40

Prints, per type, ``label (papers)`` of the ``k`` nodes with the most papers,
and flags the ones the consolidation rules call a model name (``[model]``) or a
phrase that is never a node (``[phrase]``), so the audit's judgement starts
from the rules' own verdict.
"""

from __future__ import annotations

import argparse
from collections import defaultdict

from kg import schema
from kg.mapping.phrases import is_model_name, reduce_phrase
from kg.store.embedded import open_reader
from kg.store.queries import rows, run
from kg.vocab import KG


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", required=True)
    ap.add_argument("-k", type=int, default=40)
    args = ap.parse_args()
    store = open_reader(args.store)
    labels = {r["entity"].value: r["label"].value for r in rows(run(store, "store/entity-labels"))}
    counts: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for kind in schema.ENTITY_TYPES:
        for r in rows(run(store, "entities-by-type", {"type": KG[kind.name]})):
            if r["type"].value == KG[kind.name].value:
                iri = r["entity"].value
                counts[kind.name].append((int(r["papers"].value), labels.get(iri, iri)))
    for kind in schema.ENTITY_TYPES:
        ranked = sorted(counts[kind.name], key=lambda x: (-x[0], x[1]))
        print(f"## {kind.name}: {len(ranked)} linked nodes")
        out = []
        for n, label in ranked[: args.k]:
            flag = " [model]" if kind.name != "Method" and is_model_name(label) else ""
            flag += " [phrase]" if reduce_phrase(label) != label else ""
            out.append(f"{label} ({n}){flag}")
        print("; ".join(out))
        print()


if __name__ == "__main__":
    main()
