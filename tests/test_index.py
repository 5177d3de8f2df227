"""The search index and aggregates (kg.store.index) against the scanning named queries.

Papers are made up from a small vocabulary (no spaCy: extraction is not what is
tested), written through the real mapping and the real store, then re-ingested
with other entities and deleted in a random order; after every step the index
must give exactly what the scanning queries give."""

from __future__ import annotations

import random
import sqlite3
import threading
from pathlib import Path

from kg.mapping.papers import map_paper
from kg.model import Claim, ClaimKind, Entity, EntityType, Mention, PaperExtraction, Record, Value
from kg.store.embedded import open_store
from kg.store.index import index_of, rebuild
from kg.store.index import read as index_read
from kg.store.queries import default_registry
from kg.vocab import entity_iri

WORDS = [
    "diffusion",
    "transformer",
    "graph",
    "unlearning",
    "robust",
    "sparse",
    "policy",
    "language",
    "vision",
    "reward",
    "Trajectory",
    "ImageNet",
    "accuracy",
    "BLEU",
]
TYPES = list(EntityType)


def _entity(rng: random.Random, kind: EntityType, n: int) -> Entity:
    key = f"{rng.choice(WORDS).lower()}-{n}"
    label = rng.choice([key.replace("-", " "), key.upper(), key.title()])
    return Entity(
        kind,
        key,
        label,
        entity_iri(kind.value, key),
        mentions=[Mention(label, 0, len(label), 0, 20)],
        aliases=[label, f"{key} alias"] if rng.random() < 0.2 else [],
        proposed=kind is EntityType.METHOD and rng.random() < 0.3,
    )


def paper(rng: random.Random, pid: str) -> PaperExtraction:
    """A made-up paper with a few entities and claims."""
    abstract = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 30)))
    record = Record(pid, abstract, title=f"On {rng.choice(WORDS)} {pid}", year=2026)
    entities = {}
    for _ in range(rng.randint(0, 8)):
        e = _entity(rng, rng.choice(TYPES), rng.randint(0, 12))
        entities[(e.type, e.key)] = e
    listed = list(entities.values())
    claims = []
    for _ in range(rng.randint(0, 3)):
        subject = rng.choice(listed) if listed and rng.random() < 0.7 else None
        metric = _entity(rng, EntityType.METRIC, rng.randint(0, 4)) if rng.random() < 0.5 else None
        values = [Value("1.5", rng.choice([1.5, 20.0, -3.0, None]), None, 0, 3)]
        claims.append(
            Claim(
                "We improve.",
                0,
                10,
                rng.choice(list(ClaimKind)),
                0,
                20,
                subject=subject,
                metric=metric,
                values=values,
            )
        )
    return PaperExtraction(record, listed, claims, "test")


class _Unbound:
    """Runs a named query's text with only the given variables bound: left
    unbound, a parameter ranges over the whole graph (every entity, every type)."""

    def __init__(self, store) -> None:  # noqa: ANN001
        self.store = store

    def run(self, _store, name: str, params: dict[str, object]):  # noqa: ANN001, ANN201
        from pyoxigraph import Literal, NamedNode

        from kg.vocab import XSD

        def term(v: object):  # noqa: ANN202
            if isinstance(v, str) and v.startswith("https://"):
                return NamedNode(v)
            if isinstance(v, (int, float)):
                return Literal(repr(float(v)), datatype=XSD.double)
            return Literal(str(v))

        text = default_registry().get(name).sparql
        return self.store.query(text, substitutions={k: term(v) for k, v in params.items()})


def scanned(store) -> dict[str, object]:  # noqa: ANN001
    """The aggregates, computed by the scanning named queries."""
    reg = _Unbound(store)
    per_entity = {
        (s["entity"].value, s["type"].value.rsplit("#")[-1]): int(s["papers"].value)
        for s in reg.run(store, "entities-by-type", {})
    }
    classes = {
        s["class"].value.rsplit("#")[-1]: int(s["count"].value)
        for s in reg.run(store, "class-counts", {})
    }
    related = {
        (s["entity"].value, s["other"].value, s["type"].value.rsplit("#")[-1]): int(
            s["papers"].value
        )
        for s in reg.run(store, "related-entities", {})
    }
    linked = {
        s["type"].value.rsplit("#")[-1]: int(s["entities"].value)
        for s in reg.run(store, "count-entities-by-type", {})
    }
    claims = {s["claim"].value for s in reg.run(store, "claims-about", {})}
    valued = {
        s["claim"].value
        for s in reg.run(store, "claims-with-value", {"min_value": 0, "max_value": 10})
    }
    # In the query's order: paper counts, then the first name under the prefix.
    prefix = [
        (s["entity"].value, int(s["papers"].value))
        for s in reg.run(
            store,
            "entities-by-type-prefix",
            {"type": "https://w3id.org/mlkg/ontology#Method", "prefix": "TR"},
        )
    ]
    labels = {
        s["e"].value: s["l"].value
        for s in store.query(
            "SELECT ?e ?l WHERE { GRAPH ?g { ?e <http://www.w3.org/2004/02/skos/core#prefLabel> "
            "?l } }"
        )
    }
    return {
        "per_entity": per_entity,
        "classes": classes,
        "related": related,
        "linked": linked,
        "claims_about": claims,
        "valued": valued,
        "prefix": prefix,
        "labels": labels,
    }


def indexed(index) -> dict[str, object]:  # noqa: ANN001
    """The same aggregates, read from the index."""
    db = index.reader()
    per_entity = {
        (iri, t): n
        for iri, t, n in db.execute("SELECT iri, type, papers FROM entities WHERE papers > 0")
    }
    related = {
        (a, b, t): n
        for a, b, t, n in db.execute(
            "SELECT x.iri, y.iri, c.btype, c.n FROM cooc c JOIN entities x ON x.eid = c.a "
            "JOIN entities y ON y.eid = c.b"
        )
    }
    linked = {
        t: index_read.count(index, "linked:" + t) for t in ("Task", "Method", "Dataset", "Metric")
    }
    claims = {iri for (iri,) in db.execute("SELECT iri FROM claims WHERE subject IS NOT NULL")}
    _, valued = index_read.claims(index, {"min_value": 0, "max_value": 10}, 10_000, 0)
    # Pages of two: a page's entities come from the top popularity tiers only.
    total, prefix = index_read.ranked_entities(index, "Method", "TR", 2, 0)
    while len(prefix) < total:
        prefix += index_read.ranked_entities(index, "Method", "TR", 2, len(prefix))[1]
    return {
        "per_entity": per_entity,
        "classes": index_read.class_counts(index),
        "related": related,
        "linked": {t: n for t, n in linked.items() if n},
        "claims_about": claims,
        "valued": set(valued),
        "prefix": [(r[0], r[3]) for r in prefix],
        # what a write reads to merge labels instead of asking the store
        "labels": index_read.preferred_labels(
            index, (iri for (iri,) in db.execute("SELECT iri FROM entities"))
        ),
    }


def assert_counters_hold(index) -> None:  # noqa: ANN001
    """The index's maintained counters equal what its own rows give: claims
    per kind, and every name of a typed entity filed under its type
    and the tier of its paper count (kg.store.index.counters)."""
    from kg.store.index.counters import tier

    db = index.reader()
    counted = {
        k: n for k, n in db.execute("SELECT key, n FROM counts WHERE key LIKE 'claims:%'") if n
    }
    grouped = {
        f"claims:kind:{kind}": n
        for kind, n in db.execute(
            "SELECT kind, count(*) FROM claims WHERE kind IS NOT NULL GROUP BY kind"
        )
    }
    assert counted == grouped
    filed = set(db.execute("SELECT type, tier, lname, eid, iri, prev FROM tier_names"))
    rows = sorted(
        db.execute(
            "SELECT DISTINCT e.type, e.papers, n.lname, n.eid, e.iri FROM names n JOIN entities e "
            "ON e.eid = n.eid WHERE e.type IS NOT NULL AND e.papers > 0"
        ),
        key=lambda r: (r[3], r[2]),
    )
    # Each name with its entity's name before it in order (None for the first).
    named = {
        (t, tier(papers), lname, eid, iri, rows[i - 1][2] if i and rows[i - 1][3] == eid else None)
        for i, (t, papers, lname, eid, iri) in enumerate(rows)
    }
    assert filed == named
    # The name search holds every name, once, and nothing else.
    searchable = sorted(db.execute("SELECT lname, eid, name FROM names_tri"))
    assert searchable == sorted(db.execute("SELECT lname, eid, name FROM names"))


def test_index_equals_scans_after_random_writes(tmp_path: Path) -> None:
    rng = random.Random(14)
    store = open_store(tmp_path / "store")
    assert index_of(store) is not None, "a new store starts with a usable index"
    stored: set[str] = set()
    for step in range(40):
        action = rng.random()
        if action < 0.5 or not stored:
            ids = [f"p{rng.randint(0, 60)}" for _ in range(rng.randint(1, 6))]
            ids = list(dict.fromkeys(ids))
            quads = [map_paper(paper(rng, i)) for i in ids]
            fresh = [q for q in quads if q.paper_id not in stored]
            again = [q for q in quads if q.paper_id in stored]
            if fresh:
                store.write_papers(fresh, new=True)  # the bulk loader
            if again:
                store.write_papers(again)  # re-ingest: replace
            stored.update(ids)
        else:
            victim = rng.choice(sorted(stored))
            assert store.delete_paper(victim)
            stored.discard(victim)
        if step % 5 == 4:
            index = index_of(store)
            assert index is not None
            assert indexed(index) == scanned(store), f"after step {step}"
            assert_counters_hold(index)
    index = index_of(store)
    expected = indexed(index)
    # A rebuild from the store gives the same aggregates.
    store.close()
    rebuilt = tmp_path / "rebuilt.sqlite"
    assert rebuild(open_store(tmp_path / "store", index=False), rebuilt) == len(stored)
    from kg.store.index.db import Index

    assert indexed(Index(rebuilt)) == expected
    assert_counters_hold(Index(rebuilt))


def test_paper_graphs_reads_what_the_store_holds_in_its_order(tmp_path: Path) -> None:
    """The read-ahead graph reader gives each paper's quads exactly, in the order
    quads_for_pattern gives them, also for a graph with a blank node or a literal
    that looks like one."""
    from pyoxigraph import BlankNode, Literal, NamedNode, Quad

    from kg.store.index import READ_AHEAD, paper_graphs, paper_quads
    from kg.vocab import paper_graph

    rng = random.Random(3)
    store = open_store(tmp_path / "store")
    ids = [f"p{i}" for i in range(READ_AHEAD + 9)]
    store.write_papers([map_paper(paper(rng, i)) for i in ids], new=True)
    odd = NamedNode("https://example.org/odd")
    store.raw.add(Quad(odd, odd, BlankNode("b1"), paper_graph("p1")))
    store.raw.add(Quad(odd, odd, Literal('x> _:y .\n_:z "'), paper_graph("p2")))
    wanted = ["p2", "p1", "p0", *ids[3:], "p-none"]
    read = list(paper_graphs(store, wanted))
    assert [pid for pid, _ in read] == wanted
    for pid, quads in read:
        assert quads == list(paper_quads(store, pid)), pid
    assert BlankNode("b1") in {q.object for q in read[1][1]}
    assert read[-1][1] == []
    # A reader closed early cancels what it read ahead and ends its thread.
    reader = paper_graphs(store, ids)
    assert next(reader)[0] == "p0"
    reader.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("kg-read")]


def test_a_write_merges_labels_alike_with_and_without_the_index(tmp_path: Path) -> None:
    # With the index in step, a write takes the stored labels from it; the
    # store must end up with exactly the quads the store's own lookups give.
    rng = random.Random(7)
    indexed = open_store(tmp_path / "indexed")
    bare = open_store(tmp_path / "bare", index=False)
    stored: set[str] = set()
    for _ in range(12):
        ids = list(dict.fromkeys(f"p{rng.randint(0, 30)}" for _ in range(rng.randint(1, 5))))
        quads = [map_paper(paper(rng, i)) for i in ids]
        for store in (indexed, bare):
            fresh = [q for q in quads if q.paper_id not in stored]
            again = [q for q in quads if q.paper_id in stored]
            if fresh:
                store.write_papers(fresh, new=True)
            if again:
                store.write_papers(again)
        stored.update(ids)
    assert index_of(indexed) is not None
    assert set(indexed.raw) == set(bare.raw)


def test_search_ranks_by_bm25_and_follows_deletes(tmp_path: Path) -> None:
    store = open_store(tmp_path / "store")
    texts = {
        "a": "diffusion models for diffusion of diffusion",
        "b": "a diffusion sampler",
        "c": "graph transformers",
    }
    for pid, text in texts.items():
        store.write_papers(
            [map_paper(PaperExtraction(Record(pid, text, title=pid), [], [], "t"))], new=True
        )
    index = index_of(store)
    assert [r[1] for r in index_read.search_papers(index, "Diffusion", 10)] == ["a", "b"]
    assert index_read.search_papers(index, '" OR * NEAR(', 10) == []  # no FTS syntax leaks
    store.delete_paper("a")
    assert [r[1] for r in index_read.search_papers(index, "diffusion", 10)] == ["b"]


def test_a_kept_prefix_count_follows_writes_and_deletes(tmp_path: Path) -> None:
    """A prefix's counts are kept by the read connection (paging asks again);
    a write or a delete makes the next page count afresh."""
    store = open_store(tmp_path / "store")
    index = index_of(store)

    def written(pid: str, key: str) -> None:
        method = Entity(EntityType.METHOD, key, key, entity_iri("method", key))
        store.write_papers(
            [
                map_paper(
                    PaperExtraction(Record(pid, f"We use {key}.", title=pid), [method], [], "t")
                )
            ],
            new=True,
        )

    written("a", "transformer")
    assert index_read.ranked_entities(index, "Method", "tra", 5, 0)[0] == 1
    assert index_read.ranked_entities(index, "Method", "tra", 5, 0)[0] == 1  # kept
    written("b", "transducer")
    total, page = index_read.ranked_entities(index, "Method", "tra", 5, 0)
    assert total == 2 and [r[0].rsplit("/", 1)[-1] for r in page] == ["transducer", "transformer"]
    store.delete_paper("a")
    assert index_read.ranked_entities(index, "Method", "TRA", 5, 0)[0] == 1


def test_sparql_update_marks_the_index_stale(tmp_path: Path) -> None:
    store = open_store(tmp_path / "store")
    store.write_papers([map_paper(paper(random.Random(1), "x"))], new=True)
    assert index_of(store) is not None
    store.update("INSERT DATA { <urn:a> <urn:b> <urn:c> }")
    assert index_of(store) is None, "after an update the index is not trusted"
    store.close()
    rebuild(open_store(tmp_path / "store", index=False))
    assert index_of(open_store(tmp_path / "store")) is not None


def test_an_index_of_another_store_is_not_used(tmp_path: Path) -> None:
    import shutil

    store = open_store(tmp_path / "store")
    store.write_papers([map_paper(paper(random.Random(2), "x"))], new=True)
    store.close()
    shutil.rmtree(tmp_path / "store")  # the store goes, its index file stays
    fresh = open_store(tmp_path / "store")
    assert index_of(fresh) is None, "1 paper in the index, 0 in the store"
    fresh.close()
    assert index_of(open_store(tmp_path / "store", read_only=True)) is None


def test_task_nodes_from_the_index_are_those_the_store_holds(sample_store: Path) -> None:
    # derive_taxonomy reads them after every ingest: from the index, not a scan.
    from kg.store.queries import rows
    from kg.store.taxonomy import task_iris

    store = open_store(sample_store, read_only=True)
    try:
        assert index_of(store) is not None
        scanned = {r["task"].value for r in rows(default_registry().run(store, "store/task-nodes"))}
        assert scanned
        assert sorted(task_iris(store)) == sorted(scanned)
        assert sorted(task_iris(store.inner)) == sorted(scanned)  # no index: the scan
    finally:
        store.close()


def test_closing_the_store_folds_the_index_log_back(tmp_path: Path) -> None:
    # A bulk build left to autocheckpoints kept a 5 GB write-ahead log beside a
    # 100k-paper index, and every later read and start paid for it.
    from kg.store.index.db import Index

    index = Index(tmp_path / "i.sqlite")
    other = sqlite3.connect(tmp_path / "i.sqlite")  # a reader of another thread, still open
    other.execute("SELECT count(*) FROM sqlite_master").fetchone()
    with index._writer() as db:  # noqa: SLF001
        db.execute("CREATE TABLE t (x)")
        db.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(50_000)])
    log = tmp_path / "i.sqlite-wal"
    assert log.exists() and log.stat().st_size > 0
    index.close()
    assert not log.exists() or log.stat().st_size == 0
    other.close()
    assert Index(tmp_path / "i.sqlite").reader().execute("SELECT count(*) FROM t").fetchone() == (
        50_000,
    )


def test_a_focus_resolves_in_the_index_as_in_the_store(sample_store: Path) -> None:
    """`/graph?focus=…` resolves from the index what the store's queries resolve."""
    from kg.read.graph import FocusNotFound, resolve_focus
    from kg.store.index.graph import indexed_focus

    store = open_store(sample_store, read_only=True)
    try:
        index = index_of(store)
        assert index is not None
        db = index.reader()
        entities = [row[0] for row in db.execute("SELECT iri FROM entities ORDER BY eid LIMIT 40")]
        papers = [row[0] for row in db.execute("SELECT id FROM papers ORDER BY pid LIMIT 10")]
        focuses = [
            *entities,
            *(iri.split("/id/", 1)[1] for iri in entities),  # type/key
            *(iri.rsplit("/", 1)[1] for iri in entities),  # the key alone
            *papers,
            *(f"paper/{p}" for p in papers),
            "unlearning",
            "Unlearning",
            "no such thing",
            "https://example.org/elsewhere",
        ]
        found = 0
        for focus in focuses:
            try:
                expected: str | None = resolve_focus(store.inner, focus)
            except FocusNotFound:
                expected = None
            # (a source's own paper id is the store's fallback; the sample has none)
            assert indexed_focus(index, focus) == expected, focus
            found += expected is not None
        assert found >= 3 * len(entities) + 2 * len(papers)
    finally:
        store.close()


def test_an_older_file_gets_the_shared_pairs_rank_index(tmp_path: Path) -> None:
    """An index file made with a rank entry for every pair is given the
    partial one (pairs in two papers or more) when opened for writing."""
    from kg.store.index.db import Index

    path = tmp_path / "old.sqlite"
    index = Index(path)
    db = index._wdb
    assert db is not None
    db.execute("DROP INDEX cooc_shared")
    db.execute("CREATE INDEX cooc_rank ON cooc (a, btype, n DESC, b)")
    index.close()
    reopened = Index(path)
    names = {r[0] for r in reopened.reader().execute("SELECT name FROM sqlite_master")}
    assert "cooc_shared" in names and "cooc_rank" not in names
    reopened.close()
