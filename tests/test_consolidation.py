"""Corpus-level consolidation (kg.mapping.consolidation, kg.store.consolidation).

Papers are made up (no spaCy: what is tested is what the corpus makes of each
paper's entities) and go through the real ingest, mapping and store: a
:class:`Canned` extractor hands ingest the extraction of each record."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from pyoxigraph import NamedNode, RdfFormat

from kg.extraction.canonical import canonical_key
from kg.ingest import ingest_items, remove_paper
from kg.mapping.consolidation import Surface, resolve
from kg.mapping.phrases import is_model_name, reduce_phrase
from kg.model import Claim, ClaimKind, Entity, EntityType, Mention, PaperExtraction, Record
from kg.read.resolve import resolve_entity
from kg.store.embedded import open_store
from kg.store.index import index_of, rebuild
from kg.vocab import KG, SKOS, entity_iri, paper_graph, paper_iri
from tests.test_index import assert_counters_hold, indexed, scanned

T, M, D, X = EntityType.TASK, EntityType.METHOD, EntityType.DATASET, EntityType.METRIC


def ent(kind: EntityType, label: str, conf: float = 0.6, aliases: Iterable[str] = ()) -> Entity:
    """An entity of a made-up paper, keyed as the extractor keys it."""
    key = canonical_key(label)
    return Entity(
        kind,
        key,
        label,
        entity_iri(kind.value, key),
        mentions=[Mention(label, 0, len(label), 0, 40)],
        aliases=list(aliases),
        confidence=conf,
    )


def paper(pid: str, *entities: Entity, acronyms=(), claim_dataset=None) -> PaperExtraction:  # noqa: ANN001
    """A made-up paper; ``claim_dataset``: an entity its one claim is about as a dataset."""
    record = Record(pid, f"Abstract of {pid}: we study things at length.", title=f"Paper {pid}")
    claims = []
    if claim_dataset is not None:
        claims.append(
            Claim("We do well.", 0, 10, ClaimKind.PERFORMANCE, 0, 40, dataset=claim_dataset)
        )
    return PaperExtraction(record, list(entities), claims, "test", acronyms=list(acronyms))


class Canned:
    """An extractor that answers each record with a made-up extraction."""

    version = "test"

    def __init__(self, papers: Iterable[PaperExtraction]) -> None:
        self.papers = {p.record.id: p for p in papers}

    def extract(self, records: Iterable[Record]) -> Iterator[PaperExtraction]:
        for record in records:
            yield self.papers[record.id]


def ingest(store, *papers: PaperExtraction) -> None:  # noqa: ANN001
    ingest_items([p.record for p in papers], store, extractor=Canned(papers))


def dump(store) -> set[bytes]:  # noqa: ANN001
    out = io.BytesIO()
    store.dump(out, RdfFormat.N_QUADS)
    return set(out.getvalue().splitlines())


def links(store, pid: str) -> set[tuple[str, str]]:  # noqa: ANN001
    """(relation, entity IRI) of a paper."""
    p = paper_iri(pid)
    return {
        (q.predicate.value.rsplit("#")[-1], q.object.value)
        for q in store.raw.quads_for_pattern(p, None, None, paper_graph(pid))
        if q.object.value.startswith("https://w3id.org/mlkg/id/")
    }


def typed(store, iri: str) -> str | None:  # noqa: ANN001
    for q in store.raw.quads_for_pattern(NamedNode(iri), None, None, None):
        if q.predicate.value.endswith("#type"):
            return q.object.value.rsplit("#")[-1]
    return None


def check_index(store) -> None:  # noqa: ANN001
    index = index_of(store)
    assert index is not None
    assert indexed(index) == scanned(store)


# A defines RL; B uses it bare (its extractor typed it a method); C names GLUE by
# its long form, D by its short one; E and F make a model a dataset and a method.
A = paper(
    "a",
    ent(T, "reinforcement learning", 0.8, aliases=["RL"]),
    ent(D, "GLUE benchmark", 0.7),
    acronyms=[("RL", "reinforcement learning")],
)
B = paper("b", ent(M, "RL", 0.5), ent(D, "Qwen2.5-7B", 0.6))
C = paper("c", ent(D, "GLUE", 0.7), ent(M, "Qwen2.5-7B", 0.5), ent(X, "high accuracy", 0.6))
D_ = paper("d", ent(D, "3D data", 0.6), ent(T, "RL", 0.6), claim_dataset=ent(D, "Qwen2.5-7B"))


def test_model_names_and_phrases() -> None:
    for name in ("DeepSeek-R1", "Qwen2.5-7B", "Gemini 2.5", "GPT-4o", "Llama-3-8B", "Foo-7B"):
        assert is_model_name(name), name
    for name in ("ImageNet", "GSM8K", "MATH-500", "CLIP score", "COCO", "BERTScore"):
        assert not is_model_name(name), name
    assert reduce_phrase("high accuracy") == "accuracy"
    assert reduce_phrase("high computational cost") == "computational cost"
    for junk in ("3D data", "2D image", "significant improvement", "high", "3D", "real-world"):
        assert reduce_phrase(junk) is None, junk
    assert reduce_phrase("image quality") == "image quality"
    assert reduce_phrase("3D Gaussian splatting") == "3D Gaussian splatting"
    assert reduce_phrase("3D reconstruction") == "3D reconstruction"


def test_resolution_is_a_function_of_the_evidence() -> None:
    def s(paper: str, type_name: str, label: str, conf: float) -> Surface:
        key = canonical_key(label)
        return Surface(
            paper, f"{paper}/surface/{type_name.lower()}/{key}", type_name, key, label, conf
        )

    surfaces = [
        s("p1", "Task", "reinforcement learning", 0.8),
        s("p2", "Method", "RL", 0.5),
        s("p3", "Dataset", "GLUE benchmark", 0.7),
        s("p4", "Dataset", "Gemini 2.5", 0.9),
        s("p5", "Dataset", "reasoning benchmark", 0.6),
    ]
    r = resolve(surfaces, [("p1", "RL", "reinforcement learning")])
    assert r.targets["p2/surface/method/rl"].iri == entity_iri("Task", "reinforcement-learning")
    glue = r.nodes[entity_iri("Dataset", "glue")]
    assert glue.label == "GLUE" and "GLUE benchmark" in glue.names
    assert r.targets["p4/surface/dataset/gemini-2.5"].type == "Method"
    assert r.targets["p5/surface/dataset/reasoning-benchmark"].key == "reasoning-benchmark"
    assert "RL" in r.nodes[entity_iri("Task", "reinforcement-learning")].names
    assert resolve(list(reversed(surfaces)), [("p1", "RL", "reinforcement learning")]) == r


def test_a_dataset_is_a_proper_name() -> None:
    """A node most papers type as a dataset is none when its own names say it
    names no resource: an acronym defined as a common noun phrase, or as a
    technique; named resources (``GPQA benchmark``, ``SWE-bench``) stay."""

    def s(paper: str, type_name: str, label: str, conf: float = 0.7) -> Surface:
        key = canonical_key(label)
        return Surface(
            paper, f"{paper}/surface/{type_name.lower()}/{key}", type_name, key, label, conf
        )

    # Bare uses outnumber the definitions, so each acronym keeps its own node.
    surfaces = [s(f"g{i}", "Dataset", "GUI") for i in range(8)] + [s("g8", "Method", "GUI", 0.5)]
    surfaces += [s(f"d{i}", "Dataset", "DAPO") for i in range(8)] + [s("d8", "Method", "DAPO")]
    surfaces += [s(f"q{i}", "Dataset", "GPQA") for i in range(3)] + [s("q3", "Method", "GPQA")]
    surfaces += [s("q4", "Dataset", "GPQA benchmark"), s("w1", "Dataset", "SWE-bench")]
    surfaces += [s("c1", "Dataset", "whole slide image")]
    definitions = [
        ("g0", "GUI", "graphical user interface"),
        ("d0", "DAPO", "Dynamic sAmpling Policy Optimization"),
        ("q0", "GPQA", "Graduate-level Google-Proof Q&A"),
    ]
    r = resolve(surfaces, definitions)
    assert r.targets["g1/surface/dataset/gui"].type == "Method"  # the other type the papers gave
    assert r.targets["d1/surface/dataset/dapo"].type == "Method"
    assert r.targets["c1/surface/dataset/whole-slide-image"].type == "Task"  # no other: a concept
    assert r.targets["q1/surface/dataset/gpqa"].type == "Dataset"
    assert r.targets["q4/surface/dataset/gpqa-benchmark"].type == "Dataset"
    assert r.targets["w1/surface/dataset/swebench"].type == "Dataset"
    # Without the definitions the votes decide, as before.
    assert resolve(surfaces, []).targets["g1/surface/dataset/gui"].type == "Dataset"


def test_rl_merges_across_papers_and_glue_resolves(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s")
    ingest(store, A, B, C, D_)
    rl = entity_iri("Task", "reinforcement-learning")
    assert ("addressesTask", rl) in links(store, "b"), "B's bare RL is A's reinforcement learning"
    assert ("addressesTask", rl) in links(store, "d")
    assert typed(store, entity_iri("Method", "rl")) is None
    assert typed(store, entity_iri("Task", "rl")) is None
    names = {
        q.object.value for q in store.raw.quads_for_pattern(NamedNode(rl), SKOS.altLabel, None)
    }
    assert "RL" in names
    glue = entity_iri("Dataset", "glue")
    assert ("evaluatesOn", glue) in links(store, "a") and ("evaluatesOn", glue) in links(store, "c")
    assert resolve_entity(store, "GLUE", type_name="dataset", parameter="dataset") == glue
    assert resolve_entity(store, "GLUE benchmark", type_name=None, parameter="q") == glue
    # Qwen2.5-7B: two papers say dataset, one method; a model is never a dataset.
    qwen = entity_iri("Method", canonical_key("Qwen2.5-7B"))
    assert ("usesMethod", qwen) in links(store, "b")
    assert typed(store, entity_iri("Dataset", canonical_key("Qwen2.5-7B"))) is None
    # D's claim named it as its dataset: a method cannot fill that slot.
    claim = store.raw.quads_for_pattern(None, KG.claimDataset, None, paper_graph("d"))
    assert list(claim) == []
    # Generic phrases are never nodes; judgements are reduced to their head.
    assert typed(store, entity_iri("Dataset", "3d-data")) is None
    assert ("reportsMetric", entity_iri("Metric", "accuracy")) in links(store, "c")
    # The evidence is on the node.
    evidence = list(store.raw.quads_for_pattern(NamedNode(qwen), KG.typeEvidence, None, None))
    assert len(evidence) == 2  # Dataset and Method
    check_index(store)


def test_ingest_order_does_not_matter(tmp_path: Path) -> None:
    graphs = []
    for n, order in enumerate([(A, B, C, D_), (D_, C, B, A), (A,), (B, A, C)]):
        store = open_store(tmp_path / f"s{n}")
        for p in order:
            ingest(store, p)
        if n == 2:
            ingest(store, B, C, D_)
            ingest(store, A)  # again: unchanged, skipped
        if n == 3:
            ingest(store, D_)
        check_index(store)
        graphs.append(dump(store))
        store.close()
    assert graphs[0] == graphs[1] == graphs[2] == graphs[3]


def test_a_paper_flips_a_type_and_deleting_it_flips_it_back(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s")
    first = paper("p1", ent(D, "Widget", 0.6))
    ingest(store, first)
    assert links(store, "p1") == {("evaluatesOn", entity_iri("Dataset", "widget"))}
    ingest(store, paper("p2", ent(M, "Widget", 0.7)), paper("p3", ent(M, "Widget", 0.7)))
    method = entity_iri("Method", "widget")
    assert links(store, "p1") == {("usesMethod", method)}, "p1's link follows the corpus"
    assert typed(store, entity_iri("Dataset", "widget")) is None
    check_index(store)
    assert remove_paper(store, "p2") and remove_paper(store, "p3")
    assert links(store, "p1") == {("evaluatesOn", entity_iri("Dataset", "widget"))}
    assert typed(store, method) is None, "a node no paper names is gone"
    check_index(store)
    fresh = open_store(tmp_path / "fresh")
    ingest(fresh, first)
    assert dump(store) - dump(fresh) == set() or _only_components(dump(store) - dump(fresh))


def _only_components(extra: set[bytes]) -> bool:
    return all(b"/id/component/" in line for line in extra)


def test_reindex_rebuilds_the_same_index(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s")
    ingest(store, A, B, C, D_)
    expected = indexed(index_of(store))
    store.close()
    target = tmp_path / "rebuilt.sqlite"
    rebuild(open_store(tmp_path / "s", index=False), target)
    from kg.store.index.db import Index

    assert indexed(Index(target)) == expected


@pytest.mark.parametrize("name", ["GLUE", "glue"])
def test_rest_finds_glue(tmp_path: Path, name: str) -> None:
    store = open_store(tmp_path / "s")
    ingest(store, paper("x", ent(D, "GLUE benchmark", 0.7)))
    got = resolve_entity(store, name, type_name="dataset", parameter="dataset")
    assert got == entity_iri("Dataset", "glue")


def test_a_remote_store_consolidates_the_same(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from tests.test_remote_store import OXIGRAPH, start_oxigraph
    from tests.test_remote_store import stop as stop_server

    if not Path(OXIGRAPH).exists():
        pytest.skip("the `oxigraph` server (PyPI package oxigraph) is missing")
    monkeypatch.setenv("KG_INDEX", str(tmp_path / "remote.sqlite"))
    proc, base = start_oxigraph(tmp_path / "server")
    try:
        remote = open_store(base)
        ingest(remote, A, B)
        ingest(remote, C, D_)
        assert remove_paper(remote, "c")
        check_index(remote)
        monkeypatch.delenv("KG_INDEX")
        local = open_store(tmp_path / "local")
        ingest(local, D_, B, A)
        assert dump(remote) == dump(local) or _only_components(dump(remote) ^ dump(local))
    finally:
        stop_server(proc)


_VOCAB = [
    ("reinforcement learning", (T,)),
    ("RL", (T, M)),
    ("GLUE", (D,)),
    ("GLUE benchmark", (D, X)),
    ("Widget", (D, M)),
    ("Widget dataset", (D,)),
    ("Qwen2.5-7B", (D, M)),
    ("LLM", (M, T)),
    ("LLMs", (M,)),
    ("large language model", (M,)),
    ("MT", (T, D)),
    ("machine translation", (T,)),
    ("multi-task", (T, M)),
    ("ABC", (D,)),
    ("ABC suite", (D,)),
    ("alpha beta corpus", (D,)),
    ("accuracy", (X,)),
]
_DEFINITIONS = [
    ("RL", "reinforcement learning"),
    ("LLM", "large language model"),
    ("LLMs", "large language models"),
    ("MT", "machine translation"),
    ("MT", "multi-task"),
    ("ABC", "alpha beta corpus"),
]


def _random_paper(rng, n: int) -> PaperExtraction:  # noqa: ANN001
    entities = {}
    for label, kinds in rng.sample(_VOCAB, rng.randint(1, 4)):
        entities[label] = ent(rng.choice(kinds), label, rng.choice([0.5, 0.6, 0.7, 0.8]))
    acronyms = rng.sample(_DEFINITIONS, rng.choice([0, 0, 1, 2]))
    return paper(f"r{n}", *entities.values(), acronyms=acronyms)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_write_reads_only_what_it_can_change_and_decides_as_the_whole_corpus(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After every add or delete the scoped consolidation leaves nothing for a
    consolidation of the whole corpus to change."""
    import random

    from kg.store.consolidation import consolidate
    from kg.store.index import db as index_db

    rng = random.Random(seed)
    store = open_store(tmp_path / "s")
    alive: list[str] = []
    made: dict[str, PaperExtraction] = {}
    unsearched: list[int] = []
    unsearch = index_db._unsearch  # noqa: SLF001

    def counted(db, dropped, before) -> None:  # noqa: ANN001
        unsearched.append(len(dropped))
        unsearch(db, dropped, before)

    monkeypatch.setattr(index_db, "_unsearch", counted)
    for step in range(30):
        # A merge drops names from the name search: by one scan, or a query each.
        monkeypatch.setattr(index_db, "SCAN_SHARE", rng.choice([0.0, 1e9]))
        if alive and rng.random() < 0.3:
            victim = alive.pop(rng.randrange(len(alive)))
            assert remove_paper(store, victim)
        else:
            extraction = _random_paper(rng, step)
            report = ingest_items([extraction.record], store, extractor=Canned([extraction]))
            # One paper of three or more: only what it can change is read; a write
            # of half the corpus or more reads all of it.
            assert report.consolidation is not None
            assert report.consolidation.scoped == (len(alive) >= 2)
            alive.append(extraction.record.id)
            made[extraction.record.id] = extraction
        full = consolidate(store)
        assert not full.scoped
        assert (full.quads_removed, full.quads_added) == (0, 0), f"step {step}"
        assert_counters_hold(index_of(store))
    check_index(store)
    assert sum(n > 0 for n in unsearched) >= 3, "merges dropped names"
    # Nothing a deleted paper alone named is left: the same as the survivors in one go.
    fresh = open_store(tmp_path / "fresh")
    ingest(fresh, *(made[pid] for pid in alive))
    assert dump(store) == dump(fresh) or _only_components(dump(store) ^ dump(fresh))


def index_content(path: Path) -> dict[str, list[str]]:
    """Every index table's rows, with row ids (papers, claims, entities) replaced by
    what they stand for: equal for two indexes that say the same, whatever order
    their rows were added in."""
    import sqlite3

    db = sqlite3.connect(path)
    ids = {
        "pid": dict(db.execute("SELECT pid, id FROM papers")),
        "cid": dict(db.execute("SELECT cid, iri FROM claims")),
        "eid": dict(db.execute("SELECT eid, iri FROM entities")),
    }
    ids["a"] = ids["b"] = ids["eid"]  # the co-occurrence table's two entities
    tables = [
        t
        for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        if t != "meta" and not t.startswith(("names_tri_", "papers_fts_"))
    ]
    out: dict[str, list[str]] = {}
    for table in tables:
        columns = [c[1] for c in db.execute(f"PRAGMA table_info({table})")]
        named = [ids.get(c if table != "papers_fts" else "", {}) for c in columns]
        rows = db.execute(f"SELECT {'rowid, ' if table == 'papers_fts' else ''}* FROM {table}")
        if table == "papers_fts":
            named = [ids["pid"], *named]
        out[table] = sorted(
            repr([m.get(v, v) for m, v in zip(named, row, strict=True)]) for row in rows
        )
    db.close()
    return out


@pytest.mark.parametrize("helper", ["works", "dies", "is-overtaken"])
def test_a_large_rewrite_in_helper_processes_writes_what_one_process_writes(
    tmp_path: Path, helper: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first ingest's consolidation hands the paper graphs it rewrites to helper
    processes: the store and the index come out as when this process rewrites
    them all, the same when a helper dies halfway (the rest is done here), and
    the same when this process, out of papers to read, takes back the tasks no
    helper has started (one paper a task: a helper still starting has many)."""
    import multiprocessing
    import os
    import random
    import signal
    from concurrent.futures import Future

    from kg.store import rewriting
    from kg.store.index import index_path

    rng = random.Random(7)
    papers = [_random_paper(rng, n) for n in range(120)]
    made_by_helpers: list[str] = []
    in_helpers = rewriting._in_helpers  # noqa: SLF001

    def watched(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        for done in in_helpers(*args, **kwargs):
            if done.row is not None:
                made_by_helpers.append(done.paper_id)
                if helper == "dies" and len(made_by_helpers) == 1:
                    for child in multiprocessing.active_children():
                        os.kill(child.pid, signal.SIGKILL)  # type: ignore[arg-type]
            yield done

    monkeypatch.setattr(rewriting, "_in_helpers", watched)
    taken_back: list[Future] = []
    if helper == "is-overtaken":
        monkeypatch.setattr(rewriting, "CHUNK", 1)
        cancel = Future.cancel

        def counted(self: Future) -> bool:
            if done := cancel(self):
                taken_back.append(self)
            return done

        monkeypatch.setattr(Future, "cancel", counted)
    stores, rewritten = {}, {}
    for name, least in (("helpers", 0), ("here", 10**9)):
        monkeypatch.setattr(rewriting, "PARALLEL_MIN", least)
        stores[name] = open_store(tmp_path / name)
        records = [p.record for p in papers]
        report = ingest_items(records, stores[name], extractor=Canned(papers))
        assert report.consolidation is not None
        rewritten[name] = report.consolidation.papers_rewritten
    assert rewritten["helpers"] == rewritten["here"] > 50
    if helper == "works":
        assert len(made_by_helpers) > 10, "the helpers rewrote papers"
    elif helper == "is-overtaken":
        assert made_by_helpers and taken_back, (len(made_by_helpers), len(taken_back))
    else:
        assert len(made_by_helpers) < rewritten["here"], "this process rewrote the rest"
    assert dump(stores["helpers"]) == dump(stores["here"])
    assert index_content(index_path(str(tmp_path / "helpers"))) == index_content(
        index_path(str(tmp_path / "here"))
    )
    assert_counters_hold(index_of(stores["helpers"]))
