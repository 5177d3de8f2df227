"""The unit layer: fast tests with no spaCy model and no server process. Its
store is written from hand-made extractions (the real mapping and the real
embedded Oxigraph store), in a few milliseconds.

Run it alone with ``python -m pytest -q -m unit``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kg.mapping.papers import map_paper
from kg.model import Claim, ClaimKind, Entity, EntityType, Mention, PaperExtraction, Record, Value
from kg.store.embedded import open_store
from kg.vocab import entity_iri

ABSTRACTS = {
    "p1": "We propose FastForget for machine unlearning and evaluate it on CIFAR-10 by accuracy.",
    "p2": "Machine unlearning with gradient ascent on CIFAR-10 improves accuracy by 3%.",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/unit/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.unit)


def _entity(text: str, kind: EntityType, key: str, label: str, *, proposed: bool = False) -> Entity:
    start = text.index(label)
    mention = Mention(label, start, start + len(label), 0, len(text))
    return Entity(kind, key, label, entity_iri(kind.value, key), [mention], proposed=proposed)


def extraction(paper_id: str) -> PaperExtraction:
    """A hand-made extraction of one of :data:`ABSTRACTS`."""
    text = ABSTRACTS[paper_id]
    label = "machine unlearning" if paper_id == "p1" else "Machine unlearning"
    task = _entity(text, EntityType.TASK, "machine-unlearning", label)
    dataset = _entity(text, EntityType.DATASET, "cifar-10", "CIFAR-10")
    metric = _entity(text, EntityType.METRIC, "accuracy", "accuracy")
    entities = [task, dataset, metric]
    claims: list[Claim] = []
    if paper_id == "p1":
        entities.append(_entity(text, EntityType.METHOD, "fastforget", "FastForget", proposed=True))
    else:
        method = _entity(text, EntityType.METHOD, "gradient-ascent", "gradient ascent")
        entities.append(method)
        start = text.index("3%")
        claims.append(
            Claim(
                text,
                0,
                len(text),
                ClaimKind.PERFORMANCE,
                0,
                len(text),
                subject=method,
                values=[Value("3%", 3.0, "%", start, start + 2)],
                metric=metric,
                dataset=dataset,
            )
        )
    record = Record(id=paper_id, abstract=text, title=f"Paper {paper_id}")
    return PaperExtraction(record, entities, claims, "unit")


@pytest.fixture(scope="session")
def tiny_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store directory holding the two papers of :data:`ABSTRACTS`. Read only."""
    path = tmp_path_factory.mktemp("tiny") / "store"
    store = open_store(path)
    store.write_papers([map_paper(extraction(pid)) for pid in ABSTRACTS], new=True)
    store.close()
    return path
