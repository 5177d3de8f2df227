"""Synthetic corpora for the scaling benchmarks: N papers drawn from the real
4,302-paper ICLR 2026 graph's distributions, written through the real mapping
(``kg.mapping.papers.map_paper``), the store's bulk loader and the index's
write, without spaCy — so a 100,000-paper store builds in minutes.

    python benchmarks/synth.py --papers 100000 --store /tmp/kg-scale/100k [--seed 14]
    python benchmarks/synth.py --papers 1000 --store DIR --start 100000   # add more
    python benchmarks/synth.py --derive-stats /tmp/iclr-store   # rewrite synth-stats.json

What is drawn from the real graph (``benchmarks/synth-stats.json``, derived by
``--derive-stats`` from a store and its index; it holds entity labels and
counts, never abstract text):

* **entity popularity and co-occurrence**: each synthetic paper starts from the
  entity set of a real paper (a skeleton, as entity numbers), and each entity is
  kept, swapped for one of the same type drawn by popularity (papers per
  entity), or, with the Good–Turing probability of an unseen entity (share of
  entities seen once), replaced by a fresh synthetic one: the long tail keeps
  growing with N, as a real corpus's does;
* **claims and results per paper**: the number of claims, their kinds, whether
  they name a subject (one of the paper's entities), a metric and a dataset,
  and the numbers they state;
* **abstract lengths** and mentions per entity.

Abstracts and titles are word salad from a vocabulary made of the words of the
entity labels (weighted by popularity) and a fixed list of common words; the
entity labels appear in them at their mentions' offsets. Deterministic: paper
``i`` depends only on ``--seed`` and ``i`` (``--start`` adds papers after an
existing run).

How it is fast (``benchmarks/synth_fast.py``): worker processes generate and map the papers
and hand them over as N-Quads bytes (a pickled pyoxigraph term costs 20× its
N-Quads line), with their index rows; the writer bulk-loads 2,000 papers at a
time in a thread (pyoxigraph releases the GIL) while it writes the same
papers' index rows in one SQLite transaction. ``--serial`` writes through the
indexed store's ``write_papers(new=True)`` instead, as ingest does; both give
the same store and index (``tests/test_synth.py``).
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import re
import sys
import time
from collections import Counter
from itertools import accumulate
from pathlib import Path
from typing import Any
from urllib.parse import unquote

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

STATS = HERE / "synth-stats.json"
COMMON = [
    "we",
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "for",
    "is",
    "on",
    "with",
    "that",
    "this",
    "by",
    "our",
    "as",
    "are",
    "from",
    "an",
    "be",
    "which",
    "it",
    "can",
    "model",
    "models",
    "method",
    "approach",
    "results",
    "show",
    "propose",
    "learning",
    "data",
    "training",
    "performance",
    "using",
    "based",
    "new",
    "task",
    "tasks",
    "however",
    "while",
    "these",
    "both",
    "than",
    "more",
    "such",
    "each",
    "via",
    "into",
    "over",
    "under",
    "across",
    "between",
    "large",
    "small",
    "efficient",
    "robust",
    "simple",
    "novel",
    "existing",
    "prior",
    "work",
    "further",
    "improve",
    "improves",
    "improved",
    "demonstrate",
    "experiments",
    "benchmark",
    "across",
    "settings",
]
TYPES = ("Task", "Method", "Dataset", "Metric")
REL = {"Task": "addressesTask", "Dataset": "evaluatesOn", "Metric": "reportsMetric"}


# ------------------------------------------------------------------ deriving


def derive_stats(store_dir: Path) -> dict[str, Any]:
    """The distributions synth.py draws from, read from a real store's index."""
    import sqlite3

    from kg.store.index import index_path

    db = sqlite3.connect(f"file:{index_path(str(store_dir))}?mode=ro", uri=True)
    ents = db.execute(
        "SELECT eid, iri, type, label, papers FROM entities WHERE papers > 0 ORDER BY eid"
    ).fetchall()
    number = {eid: n for n, (eid, *_rest) in enumerate(ents)}
    skeletons: dict[int, list[list[int]]] = {}
    for pid, eid, rel in db.execute("SELECT pid, eid, rel FROM links ORDER BY pid, eid, rel"):
        proposed = 1 if rel.endswith("#proposesMethod") else 0
        skeletons.setdefault(pid, []).append([number[eid], proposed])
    papers = [pid for (pid,) in db.execute("SELECT pid FROM papers ORDER BY pid")]
    lengths = [n for (n,) in db.execute("SELECT length(abstract) FROM papers_fts ORDER BY rowid")]
    claims_per_paper = Counter(
        dict(
            db.execute(
                "SELECT n, count(*) FROM (SELECT p.pid, count(c.cid) AS n FROM papers p "
                "LEFT JOIN claims c ON c.pid = p.pid GROUP BY p.pid) GROUP BY n"
            ).fetchall()
        )
    )
    kinds = Counter(dict(db.execute("SELECT kind, count(*) FROM claims GROUP BY kind")))
    total_claims = sum(kinds.values()) or 1
    with_subject = db.execute("SELECT count(*) FROM claims WHERE subject IS NOT NULL").fetchone()
    metrics = Counter(
        dict(
            db.execute(
                "SELECT metric, count(*) FROM claims WHERE metric IS NOT NULL GROUP BY metric"
            )
        )
    )
    datasets = Counter(
        dict(
            db.execute(
                "SELECT dataset, count(*) FROM claims WHERE dataset IS NOT NULL GROUP BY dataset"
            )
        )
    )
    values_per_claim = Counter(
        dict(
            db.execute(
                "SELECT n, count(*) FROM (SELECT c.cid, count(v.cid) AS n FROM claims c "
                "LEFT JOIN claim_values v ON v.cid = c.cid GROUP BY c.cid) GROUP BY n"
            )
        )
    )
    numbers = [
        round(n, 4)
        for (n,) in db.execute("SELECT number FROM claim_values ORDER BY cid, number LIMIT 3000")
    ]
    singletons = sum(1 for e in ents if e[4] == 1)
    links = sum(e[4] for e in ents)
    return {
        "source": "derived by benchmarks/synth.py --derive-stats from the ICLR 2026 store "
        "(entity labels and counts only; no abstract text)",
        "papers": len(papers),
        "entities": [
            [t, unquote(iri.rsplit("/", 1)[-1]), label or "", n] for _eid, iri, t, label, n in ents
        ],
        "skeletons": [skeletons.get(pid, []) for pid in papers],
        "abstract_lengths": lengths,
        "claims_per_paper": sorted(claims_per_paper.items()),
        "claim_kinds": sorted(
            (k.rsplit("#", 1)[-1].rsplit("/", 1)[-1], n) for k, n in kinds.items() if k
        ),
        "claim_subject_share": with_subject[0] / total_claims,
        "claim_metric_share": sum(metrics.values()) / total_claims,
        "claim_dataset_share": sum(datasets.values()) / total_claims,
        "claim_metrics": sorted((unquote(k.rsplit("/", 1)[-1]), n) for k, n in metrics.items()),
        "claim_datasets": sorted((unquote(k.rsplit("/", 1)[-1]), n) for k, n in datasets.items()),
        "values_per_claim": sorted(values_per_claim.items()),
        "numbers": numbers,
        "singleton_share": singletons / max(links, 1),
        "mentions_per_entity": [[1, 70], [2, 20], [3, 7], [4, 3]],
    }


# ------------------------------------------------------------------ generating


class Sampler:
    """Weighted choices with precomputed cumulative weights (bisect: O(log n))."""

    def __init__(self, items: list[Any], weights: list[float]) -> None:
        self.items = items
        self.cum = list(accumulate(weights))

    def __call__(self, rng: random.Random) -> Any:
        return self.items[bisect.bisect(self.cum, rng.random() * self.cum[-1])]


class Generator:
    """Makes synthetic ``PaperExtraction`` objects, one per index ``i``."""

    def __init__(self, stats: dict[str, Any], seed: int) -> None:
        from kg.model import ClaimKind, EntityType
        from kg.vocab import CLAIM_KINDS

        self.seed = seed
        self.stats = stats
        self.entities = stats["entities"]
        self.by_type = {
            t: Sampler(
                [n for n, e in enumerate(self.entities) if e[0] == t and e[3] > 1],
                [e[3] for e in self.entities if e[0] == t and e[3] > 1],
            )
            for t in TYPES
        }
        words = Counter(COMMON * 50)
        for _t, _key, label, n in self.entities:
            for w in re.findall(r"[A-Za-z][A-Za-z0-9-]{2,}", label):
                words[w.lower()] += n
        self.words = Sampler(list(words), list(words.values()))
        self.skeletons = stats["skeletons"]
        self.lengths = stats["abstract_lengths"]
        self.claims_n = Sampler(*zip(*stats["claims_per_paper"], strict=True))
        kinds = {CLAIM_KINDS[k.value].value.rsplit("#", 1)[-1]: k for k in ClaimKind}
        self.kinds = Sampler(
            *zip(
                *[(kinds.get(k, ClaimKind.CONTRIBUTION), n) for k, n in stats["claim_kinds"]],
                strict=True,
            )
        )
        self.metrics = Sampler(*zip(*stats["claim_metrics"], strict=True))
        self.datasets = Sampler(*zip(*stats["claim_datasets"], strict=True))
        self.values_n = Sampler(*zip(*stats["values_per_claim"], strict=True))
        self.mentions_n = Sampler(*zip(*stats["mentions_per_entity"], strict=True))
        self.types = {t: EntityType(t) for t in TYPES}

    def _salad(self, rng: random.Random, chars: int) -> str:
        out: list[str] = []
        size = 0
        while size < chars:
            sentence = " ".join(self.words(rng) for _ in range(rng.randint(8, 24)))
            sentence = sentence[0].upper() + sentence[1:] + "."
            out.append(sentence)
            size += len(sentence) + 1
        return " ".join(out)

    def paper(self, i: int) -> Any:
        """The ``i``-th synthetic paper of this seed."""
        from kg.model import Claim, Entity, Mention, PaperExtraction, Record, Value
        from kg.vocab import entity_iri

        rng = random.Random(f"{self.seed}:{i}")
        pid = f"synth-{self.seed}-{i:07d}"
        skeleton = rng.choice(self.skeletons)
        chosen: dict[tuple[str, str], tuple[str, bool]] = {}
        for n, proposed in skeleton:
            t, key, label, _papers = self.entities[n]
            if _papers == 1:
                # A real entity named by one paper only stands for the long tail:
                # each synthetic paper gets a fresh one there (Good–Turing).
                label = f"{self.words(rng)} {self.words(rng)} {i}-{len(chosen)}"
                key = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
            elif rng.random() < 0.5:
                t, key, label, _papers = self.entities[self.by_type[t](rng)]
            chosen.setdefault((t, key), (label, bool(proposed)))
        text = self._salad(rng, rng.choice(self.lengths))
        pieces: list[str] = []
        entities: list[Entity] = []
        for (t, key), (label, proposed) in chosen.items():
            mentions = []
            for _ in range(self.mentions_n(rng)):
                start = len(text) + len(" ".join(pieces)) + 1
                pieces.append(label + ".")
                mentions.append(
                    Mention(label, start, start + len(label), start, start + len(label) + 1)
                )
            entities.append(
                Entity(
                    self.types[t],
                    key,
                    label or key,
                    entity_iri(t, key),
                    mentions=mentions,
                    proposed=proposed and t == "Method",
                    component="synth",
                    confidence=0.9,
                )
            )
        abstract = text + (" " + " ".join(pieces) if pieces else "")
        claims = []
        for _ in range(self.claims_n(rng)):
            start = rng.randrange(0, max(1, len(text) - 40))
            end = min(len(text), start + 40)
            subject = (
                rng.choice(entities)
                if entities and rng.random() < self.stats["claim_subject_share"]
                else None
            )
            metric = (
                self._named("Metric", self.metrics(rng))
                if rng.random() < self.stats["claim_metric_share"]
                else None
            )
            dataset = (
                self._named("Dataset", self.datasets(rng))
                if rng.random() < self.stats["claim_dataset_share"]
                else None
            )
            values = [
                Value(str(v), v, None, start, start + 1)
                for v in (rng.choice(self.stats["numbers"]) for _ in range(self.values_n(rng)))
            ]
            claims.append(
                Claim(
                    abstract[start:end],
                    start,
                    end,
                    self.kinds(rng),
                    start,
                    end,
                    subject=subject,
                    metric=metric,
                    dataset=dataset,
                    values=values,
                    component="synth",
                    confidence=0.8,
                )
            )
        title = self._salad(rng, rng.randint(40, 110)).split(".")[0]
        record = Record(pid, abstract, title=title, year=2026, venue="SYNTH")
        return PaperExtraction(record, entities, claims, "synth-1")

    def _named(self, t: str, key: str) -> Any:
        from kg.model import Entity
        from kg.vocab import entity_iri

        return Entity(self.types[t], key, key, entity_iri(t, key), component="synth")


def derive_taxonomy_once(store: Any) -> float:
    """Derive the task taxonomy once, as ``kg ingest`` does after writing; its seconds."""
    from kg.store.taxonomy import derive_taxonomy

    started = time.perf_counter()
    derive_taxonomy(store)
    return time.perf_counter() - started


def build(
    store_dir: Path,
    papers: int,
    *,
    seed: int = 14,
    start: int = 0,
    batch: int = 1000,
    stats: Path = STATS,
) -> dict[str, float]:
    """Write ``papers`` synthetic papers (numbers ``start``…) into the store at
    ``store_dir`` the way ingest writes: ``write_papers(new=True)`` of the
    indexed store (bulk loader, then the index rows), one batch at a time, all
    in this process. The write benchmarks use it; ``synth_fast.build_fast`` makes
    stores."""
    from kg.mapping.papers import map_paper
    from kg.store.embedded import open_store

    gen = Generator(json.loads(stats.read_text()), seed)
    store = open_store(store_dir)
    started = time.perf_counter()
    timings = {"generate": 0.0, "map": 0.0, "write": 0.0}
    for first in range(start, start + papers, batch):
        t0 = time.perf_counter()
        extractions = [gen.paper(i) for i in range(first, min(first + batch, start + papers))]
        t1 = time.perf_counter()
        quads = [map_paper(e) for e in extractions]
        t2 = time.perf_counter()
        store.write_papers(quads, new=True)
        t3 = time.perf_counter()
        timings["generate"] += t1 - t0
        timings["map"] += t2 - t1
        timings["write"] += t3 - t2
    timings["taxonomy"] = derive_taxonomy_once(store)
    store.close()
    timings["seconds"] = time.perf_counter() - started
    timings["papers"] = papers
    return timings


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--papers", type=int, help="How many papers to write")
    ap.add_argument("--store", type=Path, help="Store directory (created or added to)")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--start", type=int, default=0, help="Number of the first paper")
    ap.add_argument("--batch", type=int, default=2000, help="Papers per write")
    ap.add_argument("--chunk", type=int, default=250, help="Papers per worker task")
    ap.add_argument(
        "--workers", type=int, default=2, help="Processes making the papers (0: this one)"
    )
    ap.add_argument(
        "--serial",
        action="store_true",
        help="Write through the indexed store's write_papers in this process (as ingest does)",
    )
    ap.add_argument("--stats", type=Path, default=STATS, help="The distributions (JSON)")
    ap.add_argument(
        "--derive-stats",
        type=Path,
        metavar="STORE",
        help="Derive the distributions from a real store (and its index) into --stats",
    )
    args = ap.parse_args()
    if args.derive_stats:
        args.stats.write_text(json.dumps(derive_stats(args.derive_stats), separators=(",", ":")))
        print(f"wrote {args.stats}", file=sys.stderr)
        return 0
    if not args.papers or not args.store:
        ap.error("--papers and --store are required")
    common = {"seed": args.seed, "start": args.start, "batch": args.batch, "stats": args.stats}
    if args.serial:
        timings = build(args.store, args.papers, **common)
    else:
        from benchmarks.synth_fast import build_fast

        timings = build_fast(
            args.store, args.papers, chunk=args.chunk, workers=args.workers, **common
        )
    print(json.dumps(timings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
