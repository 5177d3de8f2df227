"""The taxonomy derived after each write equals the taxonomy derived whole.

Papers name tasks whose keys end with one another's ("offline-rl", "rl"), the
same key as a task in one paper and a method in another (so consolidation
retypes nodes), and method links one way and the other way round; they are
added, re-ingested with other content and deleted in a random order.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import kg.store.index.taxonomy_rows as taxonomy_rows
from kg.ingest import ingest_items, remove_paper
from kg.model import Entity, EntityType, Hypernym, PaperExtraction, Record
from kg.store.embedded import open_store
from kg.store.index import index_of, rebuild
from kg.store.queries import rows, run
from kg.store.taxonomy import broader_links, derive_taxonomy, stated_links
from tests.test_consolidation import Canned, ent

# Keys that end with one another's, and a generic one ("learning") that is never broader.
TASKS = [
    "rl",
    "offline-rl",
    "multi-agent-rl",
    "offline-multi-agent-rl",
    "safe-offline-rl",
    "learning",
    "deep-learning",
    "graph-learning",
    "unlearning",
    "llm-unlearning",
    "machine-unlearning",
    "generation",
    "image-generation",
    "text-to-image-generation",
]
METHODS = [
    "grpo",
    "ppo",
    "policy-gradient",
    "rl",
    "offline-rl",
    "diffusion-model",
    "image-generation",
]


def _entity(kind: EntityType, key: str) -> Entity:
    return ent(kind, key.replace("-", " "))


def _paper(rng: random.Random, pid: str, version: int) -> PaperExtraction:
    entities = {}
    for key in rng.sample(TASKS, rng.randint(0, 4)):
        entities[key] = _entity(EntityType.TASK, key)
    for key in rng.sample(METHODS, rng.randint(0, 3)):
        # A key some papers call a task and others a method: the corpus decides.
        entities.setdefault(key, _entity(EntityType.METHOD, key))
    methods = [e for e in entities.values() if e.type is EntityType.METHOD]
    hypernyms = []
    if len(methods) >= 2 and rng.random() < 0.6:
        narrower, broader = rng.sample(methods, 2)
        hypernyms.append(Hypernym(narrower, broader, "appositive", 0, 10, 0, 40))
    record = Record(pid, f"Abstract {version} of {pid}: we study things.", title=f"Paper {pid}")
    return PaperExtraction(record, list(entities.values()), [], "test", hypernyms=hypernyms)


def _expected(store) -> set[tuple[str, str]]:  # noqa: ANN001
    """The taxonomy derived whole from what the store holds, read by scans."""
    tasks = [r["task"].value for r in rows(run(store.inner, "store/task-nodes"))]
    stated = stated_links(
        (r["narrower"].value, r["broader"].value)
        for r in rows(run(store.inner, "store/method-broader"))
    )
    return set(broader_links(tasks)) | set(stated)


def _in_graph(store) -> set[tuple[str, str]]:  # noqa: ANN001
    broader = {
        (r["narrower"].value, r["broader"].value) for r in rows(run(store, "store/taxonomy"))
    }
    narrower = {
        (r["narrower"].value, r["broader"].value)
        for r in store.query(
            "SELECT ?narrower ?broader WHERE { GRAPH ?g { ?broader "
            "<http://www.w3.org/2004/02/skos/core#narrower> ?narrower } }"
        )
    }
    assert broader == narrower, "each link is written both ways"
    return broader


def _in_index(store) -> set[tuple[str, str]]:  # noqa: ANN001
    index = index_of(store)
    assert index is not None
    return set(index.reader().execute("SELECT narrower, broader FROM taxonomy").fetchall())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_taxonomy_after_each_write_is_the_taxonomy_derived_whole(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    decided: list[int] = []
    derive_changes = taxonomy_rows.derive_changes

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        change = derive_changes(*args, **kwargs)
        decided.append(change.tasks_decided)
        return change

    monkeypatch.setattr(taxonomy_rows, "derive_changes", counted)
    rng = random.Random(seed)
    store = open_store(tmp_path / "s")
    alive: list[str] = []
    for step in range(36):
        if alive and rng.random() < 0.25:
            assert remove_paper(store, alive.pop(rng.randrange(len(alive))))
        else:
            pid = rng.choice(alive) if alive and rng.random() < 0.3 else f"p{step}"
            extraction = _paper(rng, pid, step)  # a re-ingest when pid is stored: other content
            report = ingest_items([extraction.record], store, extractor=Canned([extraction]))
            assert report.added + report.updated == 1
            alive = [*dict.fromkeys([*alive, pid])]
        expected = _expected(store)
        assert _in_index(store) == expected, f"step {step}"
        assert _in_graph(store) == expected, f"step {step}"
    assert expected, "the papers make some links"
    assert len(decided) >= 30, "after the first, each derivation took the changed tasks only"
    assert min(decided) < len(TASKS), "some write decided only a few tasks again"
    # A derivation with nothing changed decides nothing and changes nothing.
    assert derive_taxonomy(store) == len(expected) and decided[-1] == 0

    # A rebuilt index copies the links from the store and derives whole once more.
    store.close()
    rebuild(open_store(tmp_path / "s", index=False))
    again = open_store(tmp_path / "s")
    index = index_of(again)
    assert index is not None and not taxonomy_rows.tracked(index.reader())
    assert _in_index(again) == expected
    derive_taxonomy(again)
    assert taxonomy_rows.tracked(index.reader()) and _in_index(again) == expected
    again.close()


def test_a_new_task_relinks_the_tasks_that_end_with_its_key(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s")

    def ingest(pid: str, *keys: str) -> None:
        extraction = PaperExtraction(
            Record(pid, f"Abstract of {pid}.", title=pid),
            [_entity(EntityType.TASK, k) for k in keys],
            [],
            "test",
        )
        ingest_items([extraction.record], store, extractor=Canned([extraction]))

    task = "https://w3id.org/mlkg/id/task/"
    ingest("a", "offline-multi-agent-rl", "rl")
    assert _in_graph(store) == {(task + "offline-multi-agent-rl", task + "rl")}
    ingest("b", "multi-agent-rl")  # nearer than "rl": the link moves
    assert _in_graph(store) == {
        (task + "offline-multi-agent-rl", task + "multi-agent-rl"),
        (task + "multi-agent-rl", task + "rl"),
    }
    assert remove_paper(store, "b")  # gone again: back to "rl"
    assert _in_graph(store) == _in_index(store) == {(task + "offline-multi-agent-rl", task + "rl")}
    store.close()


def test_an_index_without_every_papers_statements_reads_them_from_the_store(
    tmp_path: Path,
) -> None:
    # An index file made before the statement rows: its `stated` table is empty
    # for the papers already in it, so the method links come from the store.
    rng = random.Random(5)
    store = open_store(tmp_path / "s")
    for step in range(8):
        extraction = _paper(rng, f"p{step}", step)
        ingest_items([extraction.record], store, extractor=Canned([extraction]))
    index = index_of(store)
    assert index is not None and taxonomy_rows.holds_statements(index.reader())
    with index._writer() as db:  # what an older file looks like
        db.execute("DELETE FROM stated")
        db.execute("DELETE FROM meta WHERE key = 'stated'")
    for step in range(8, 20):
        extraction = _paper(rng, f"p{step}", step)
        ingest_items([extraction.record], store, extractor=Canned([extraction]))
        if step % 3 == 0:
            assert remove_paper(store, f"p{step - 5}")
        assert not taxonomy_rows.holds_statements(index.reader())
        expected = _expected(store)
        assert _in_index(store) == _in_graph(store) == expected, f"step {step}"
    assert any(not n.startswith("https://w3id.org/mlkg/id/task/") for n, _b in expected)
    store.close()


def test_a_link_both_stated_and_by_key_stays_when_one_reason_goes(tmp_path: Path) -> None:
    from kg.store.index.db import Index
    from kg.store.taxonomy import broader_of, task_key

    task = "https://w3id.org/mlkg/id/task/"
    link = (task + "offline-rl", task + "rl")
    index = Index(tmp_path / "i.sqlite")
    with index._writer() as db:
        db.execute("INSERT INTO entities (iri, type) VALUES (?, 'Task')", (link[0],))
        taxonomy_rows.add_stated(db, 1, [link])  # a paper also says offline RL is a kind of RL
        tasks = [("offline-rl", link[0], link[1]), ("rl", link[1], None)]
        taxonomy_rows.reset(db, tasks, [link])
        taxonomy_rows.note_type(db, link[1], "Task", None)  # "rl" is no task any more
        change = taxonomy_rows.derive_changes(db, task, task_key, broader_of, None)
        assert (change.removed, change.added) == ([], [])
        assert db.execute("SELECT narrower, broader FROM taxonomy").fetchall() == [link]
        taxonomy_rows.remove_stated(db, 1)  # and now nobody says it
        change = taxonomy_rows.derive_changes(db, task, task_key, broader_of, None)
        assert (change.removed, change.added) == ([link], [])
    index.close()
