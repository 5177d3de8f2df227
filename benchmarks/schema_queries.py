"""Named queries that read the schema from the ontology, run as written and as
the registry runs them (``kg.queries.expand_schema``: ``VALUES`` from
``kg.schema``), on a synthetic store (no spaCy: hand-made extractions through the
real mapping into the real embedded store).

    python benchmarks/schema_queries.py --papers 4300

Prints, per query and focus, the median of 5 runs of each form and whether
both gave the same rows.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pyoxigraph import NamedNode, Variable  # noqa: E402

from kg.mapping.papers import map_paper  # noqa: E402
from kg.model import Entity, EntityType, Mention, PaperExtraction, Record  # noqa: E402
from kg.resources import queries_dir  # noqa: E402
from kg.store.embedded import open_store  # noqa: E402
from kg.store.queries import expand_schema  # noqa: E402
from kg.vocab import entity_iri  # noqa: E402

POOLS = {"TASK": (1500, 3), "METHOD": (15000, 8), "DATASET": (2500, 2), "METRIC": (800, 2)}
"""Entity type → (distinct entities, entities per paper), about the ICLR corpus's shape."""


def build(path: Path, papers: int, seed: int = 0) -> None:
    """A store of ``papers`` synthetic papers with Pareto-distributed entity popularity."""
    rnd = random.Random(seed)
    store = open_store(path)
    batch = []
    for i in range(papers):
        entities: list[Entity] = []
        for name, (pool, per) in POOLS.items():
            kind = EntityType[name]
            for _ in range(per):
                key = f"{kind.value.lower()}-{int(rnd.paretovariate(1.2)) % pool}"
                if any(e.key == key and e.type is kind for e in entities):
                    continue
                mention = Mention(key, 0, 5, 0, 10)
                entities.append(
                    Entity(
                        kind,
                        key,
                        key.replace("-", " "),
                        entity_iri(kind.value, key),
                        [mention],
                        proposed=kind is EntityType.METHOD and rnd.random() < 0.15,
                    )
                )
        record = Record(id=f"p{i:05d}", abstract="x" * 800, title=f"Paper {i}")
        batch.append(map_paper(PaperExtraction(record, entities, [], "synthetic")))
        if len(batch) == 500:
            store.write_papers(batch, new=True)
            batch = []
    if batch:
        store.write_papers(batch, new=True)
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=4300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store"
        started = time.perf_counter()
        build(path, args.papers)
        print(f"store: {args.papers} synthetic papers in {time.perf_counter() - started:.1f} s")
        store = open_store(path, read_only=True).native()
        assert store is not None
        cases = [
            ("papers-with-entity", "entity", "method/method-1"),
            ("papers-with-entity", "entity", "task/task-40"),
            ("related-entities", "entity", "method/method-1"),
            ("related-entities", "entity", "task/task-40"),
            ("entities-by-type", "type", None),
            ("count-papers-with-entity", "entity", "task/task-40"),
            ("graph/edges", None, None),
        ]
        for name, var, focus in cases:
            text = (queries_dir() / f"{name}.rq").read_text(encoding="utf-8")
            subs = None
            if var == "entity":
                subs = {Variable(var): NamedNode(f"https://w3id.org/mlkg/id/{focus}")}
            elif var == "type":
                subs = {Variable(var): NamedNode("https://w3id.org/mlkg/ontology#Method")}
            figures = {}
            for form, sparql in (("ontology", text), ("values", expand_schema(text))):
                times, rows = [], []
                for _ in range(3 if name == "graph/edges" else 5):
                    t = time.perf_counter()
                    rows = sorted(
                        str(list(s))
                        for s in store.query(
                            sparql, use_default_graph_as_union=True, substitutions=subs
                        )
                    )
                    times.append(time.perf_counter() - t)
                figures[form] = (statistics.median(times) * 1000, rows)
            same = figures["ontology"][1] == figures["values"][1]
            print(
                f"{name:26s} {focus or '':16s} ontology {figures['ontology'][0]:8.1f} ms"
                f"  values {figures['values'][0]:8.1f} ms  rows {len(figures['values'][1]):6d}"
                f"  same={same}"
            )


if __name__ == "__main__":
    main()
