"""One paper that breaks the pipeline does not stop an ingest (fault injection
into the real extractor)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from spacy.language import Language
from spacy.tokens import Doc

from kg.extraction import Extractor
from kg.ingest import ingest_items
from kg.model import Record
from kg.store.embedded import open_store
from kg.vocab import paper_iri

TEXT = (
    "We propose PURGE, a method for LLM unlearning, and show that it outperforms "
    "gradient ascent on the RWKU benchmark while using 46 times fewer tokens."
)


@Language.component("kg_test_explode")
def _explode(doc: Doc) -> Doc:
    if "EXPLODE" in doc.text:
        raise RuntimeError("injected component fault")
    return doc


class AssemblyFault(Extractor):
    """The real extractor whose assembly step fails on a marked abstract."""

    def assemble(self, record, cleaned, doc):  # noqa: ANN001, ANN201
        if "BOOM" in record.abstract:
            raise RuntimeError("injected assembly fault")
        return super().assemble(record, cleaned, doc)


@pytest.mark.parametrize("marker", ["EXPLODE", "BOOM"])
def test_a_failing_paper_is_stored_and_logged(
    marker: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    extractor = AssemblyFault()
    extractor.nlp.add_pipe("kg_test_explode", first=True)
    records = [
        Record(id="poison", abstract=f"{TEXT} {marker}.", source="in.jsonl", record=1),
        Record(id="good", abstract=TEXT, source="in.jsonl", record=2),
    ]
    store = open_store(tmp_path / "store")
    with caplog.at_level(logging.ERROR):
        report = ingest_items(records, store, extractor=extractor)
    assert report.added == 2
    assert sorted(store.paper_ids()) == ["good", "poison"]
    assert "injected" in caplog.text
    assert "in.jsonl record 1 (id poison)" in caplog.text

    def proposed(paper: str) -> list:
        return list(
            store.query(
                "SELECT ?p ?e WHERE { ?p <https://w3id.org/mlkg/ontology#proposesMethod> ?e }",
                substitutions={"p": paper_iri(paper)},
            )
        )

    assert proposed("good"), "the good paper kept its extraction"
    assert not proposed("poison")
