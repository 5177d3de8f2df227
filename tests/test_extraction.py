"""The real extractor on the bundled sample: entities, offsets, canonical IRIs, claims."""

from __future__ import annotations

import pickle
from collections import defaultdict

import pytest

from kg.extraction import EXTRACTOR_VERSION, extract_batch
from kg.model import EntityType, PaperExtraction, Record
from kg.reading.readers import read_paths, unique
from kg.resources import sample_corpus
from kg.vocab import entity_iri


@pytest.fixture(scope="module")
def records() -> list[Record]:
    return [r for r in unique(read_paths(sample_corpus())) if isinstance(r, Record)]


@pytest.fixture(scope="module")
def papers(extractor, records: list[Record]) -> list[PaperExtraction]:  # noqa: ANN001
    return list(extractor.extract(records))


def _by_text(papers: list[PaperExtraction], needle: str) -> PaperExtraction:
    return next(p for p in papers if needle in p.record.abstract)


def test_one_extraction_per_record_in_order(papers, records) -> None:  # noqa: ANN001
    assert [p.record.id for p in papers] == [r.id for r in records]
    assert all(p.extractor_version == EXTRACTOR_VERSION for p in papers)


def test_offsets_point_into_the_original_abstract(papers) -> None:  # noqa: ANN001
    for paper in papers:
        text = paper.record.abstract
        for entity in paper.entities:
            assert entity.iri == entity_iri(entity.type.value, entity.key)
            assert 0.0 <= entity.confidence <= 1.0 and entity.component
            for m in entity.mentions:
                assert text[m.start : m.end] == m.text
                assert m.sentence_start <= m.start < m.end <= m.sentence_end
        for claim in paper.claims:
            assert text[claim.start : claim.end] == claim.text
            assert claim.sentence_start <= claim.start <= claim.end <= claim.sentence_end
            for v in claim.values:
                assert text[v.start : v.end] == v.text
            for slot in (claim.subject, claim.metric, claim.dataset, claim.baseline):
                assert slot is None or slot in paper.entities


def test_proposed_method_with_long_form(papers) -> None:  # noqa: ANN001
    paper = _by_text(papers, "PURGE")
    proposed = paper.of_type(EntityType.METHOD, proposed=True)
    purge = next(e for e in proposed if e.label == "PURGE")
    assert "Policy Unlearning through Relative Group Erasure" in purge.aliases
    assert {m.text for m in purge.mentions} >= {
        "PURGE",
        "Policy Unlearning through Relative Group Erasure",
    }


def test_latex_values_and_labels(papers) -> None:  # noqa: ANN001
    paper = _by_text(papers, "PURGE")
    values = {(v.text, v.number, v.unit) for c in paper.claims for v in c.values}
    assert (r"$\times$46", 46.0, "×") in values
    assert (r"+5.48\%", 5.48, "%") in values
    labels = {e.label for p in papers for e in p.entities}
    assert not any("$" in label or "\\" in label for label in labels)


def test_shared_concepts_link_three_papers(papers) -> None:  # noqa: ANN001
    # Per paper the type follows the role (as in the gold); one key meets across
    # papers, and corpus consolidation gives the node a single type. (0.3.0 also
    # linked UniCon's paper to contrastive learning through a rule-typed phrase.)
    papers_of: dict[str, set[str]] = defaultdict(set)
    for paper in papers:
        for entity in paper.entities:
            papers_of[entity.key].add(paper.record.id)
    assert len(papers_of["contrastive-learning"]) >= 2
    assert len(papers_of["unlearning"]) >= 3


def test_a_broader_task_named_only_inside_a_phrase_links_but_is_not_listed(extractor) -> None:  # noqa: ANN001
    from kg.model import Record

    paper = extractor.extract_one(
        Record(
            "derived", "We study machine unlearning and propose PurgeNet for machine unlearning."
        )
    )
    unlearning = [e for e in paper.entities if e.key == "unlearning"]
    assert unlearning and unlearning[0].derived  # the graph links the paper to it
    listed = {t["label"] for t in paper.to_json()["tasks"]}
    assert "unlearning" not in listed and "machine unlearning" in listed
    named = extractor.extract_one(Record("named", "We study unlearning, and machine unlearning."))
    assert "unlearning" in {t["label"] for t in named.to_json()["tasks"]}


def test_no_generic_words_alone(papers) -> None:  # noqa: ANN001
    generic = {"method", "model", "approach", "framework", "data", "performance"}
    assert not [e.label for p in papers for e in p.entities if e.label.lower() in generic]


def test_deterministic(extractor, records) -> None:  # noqa: ANN001
    first = [p.to_json() for p in extractor.extract(records[:5])]
    again = [p.to_json() for p in extractor.extract(records[:5])]
    assert first == again


def test_extract_batch_is_picklable_and_matches(extractor, records) -> None:  # noqa: ANN001
    assert pickle.loads(pickle.dumps(extract_batch)) is extract_batch
    batch = extract_batch(records[:3])
    assert [p.to_json() for p in batch] == [p.to_json() for p in extractor.extract(records[:3])]


def test_to_json_keys(papers) -> None:  # noqa: ANN001
    obj = papers[0].to_json()
    assert set(obj) == {
        "id",
        "title",
        "abstract",
        "tasks",
        "methods",
        "proposed_methods",
        "datasets",
        "metrics",
        "claims",
        "results",
        "broader",
    }


def test_one_label_per_concept(extractor) -> None:  # noqa: ANN001
    assert extractor.canonical_label("transformer", "Transformers") == "transformer"
    assert extractor.canonical_label("scorebased-denoiser", "score-based denoisers") == (
        "score-based denoiser"
    )
    assert extractor.canonical_label("foonet", "FooNets") == "FooNets"  # names keep their form
    assert extractor.canonical_label("llm", "LLMs") == "LLM"  # the lexicon form


def test_hostile_latex_keeps_offsets_valid(extractor) -> None:  # noqa: ANN001
    abstract = (
        r"We propose \textbf{FooNet} with cost $5 and $\mathcal{O}(n^{2}$ time, "
        r"improving accuracy by 3\% on CIFAR-10 \\ and \\"
    )
    paper = extractor.extract_one(Record(id="x", abstract=abstract))
    for entity in paper.entities:
        for m in entity.mentions:
            assert abstract[m.start : m.end] == m.text
    for claim in paper.claims:
        assert abstract[claim.start : claim.end] == claim.text


def test_proposals_from_triggers_and_appositions(extractor) -> None:  # noqa: ANN001
    abstract = (
        "Graph learning is hard. We propose FooNet (Fast Object-Oriented Network), a novel "
        "architecture for graphs. Experiments show that BarFormer, a new simple transformer, "
        "also helps. Prior work has proposed GNNs."
    )
    paper = extractor.extract_one(Record(id="x", abstract=abstract))
    proposed = {e.label: e for e in paper.of_type(EntityType.METHOD, proposed=True)}
    assert set(proposed) == {"FooNet", "BarFormer"}
    assert "Fast Object-Oriented Network" in proposed["FooNet"].aliases
    assert [c.kind.value for c in paper.claims][0] == "contribution"
    assert not any("Prior work" in c.text for c in paper.claims)
