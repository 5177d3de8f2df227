"""The ``kg_enumerations`` component: names listed as datasets are typed datasets."""

from __future__ import annotations

import spacy
from spacy.tokens import Doc, Span

from kg.model import EntityType, Record


def _types(extractor, text: str) -> dict[str, set[EntityType]]:  # noqa: ANN001
    paper = extractor.extract_one(Record("lists", text))
    found: dict[str, set[EntityType]] = {}
    for e in paper.entities:
        for m in e.mentions:
            found.setdefault(text[m.start : m.end], set()).add(e.type)
    return found


def test_names_in_parentheses_after_benchmarks_are_datasets(extractor) -> None:  # noqa: ANN001
    types = _types(
        extractor,
        "We propose FooSearch, a method for adaptive test-time compute. Experiments on "
        "reasoning benchmarks (AIME24, GSM8K, MATH500, GPQA) show that FooSearch cuts "
        "tokens while keeping accuracy.",
    )
    assert types["AIME24"] == {EntityType.DATASET}
    assert types["MATH500"] == {EntityType.DATASET}


def test_names_before_a_dataset_head_are_datasets(extractor) -> None:  # noqa: ANN001
    types = _types(
        extractor,
        "We propose FooDraft, a speculative decoding scheme. Across experiments on the "
        "MATH, AMC23, AIME24, and AIME25 datasets, FooDraft is 2 times faster.",
    )
    assert types["AMC23"] == {EntityType.DATASET}
    assert types["AIME25"] == {EntityType.DATASET}


def test_a_model_in_a_dataset_list_stays_a_method(extractor) -> None:  # noqa: ANN001
    types = _types(
        extractor,
        "We propose FooTune. Experiments on benchmarks such as GSM8K, MATH500 and "
        "Qwen2.5-7B show gains.",
    )
    assert EntityType.DATASET not in types.get("Qwen2.5-7B", set())


def test_a_list_of_models_is_not_a_dataset_list(extractor) -> None:  # noqa: ANN001
    types = _types(
        extractor,
        "We propose FooTune. We fine-tune Qwen3-8B, Llama-3-8B and Mistral-7B on GSM8K.",
    )
    for name in ("Qwen3-8B", "Llama-3-8B", "Mistral-7B"):
        assert EntityType.DATASET not in types.get(name, set())


def test_a_result_on_a_listed_benchmark_keeps_its_dataset(extractor) -> None:  # noqa: ANN001
    text = (
        "We propose FooSearch. We evaluate on the GSM8K and MATH500 benchmarks. "
        "FooSearch reaches 84.2% accuracy on MATH500."
    )
    paper = extractor.extract_one(Record("lists", text))
    (result,) = [r for r in paper.results if r.value.text == "84.2%"]
    assert result.dataset is not None and result.dataset.label == "MATH500"
    by_key = {(e.type, e.key) for e in paper.entities}
    assert (EntityType.METHOD, result.dataset.key) not in by_key


def _typed(words: list[str], methods: list[tuple[int, int]]) -> dict[str, str]:
    """The types kg_enumerations gives spans a typer called methods, on a blank pipeline."""
    nlp = spacy.blank("en")
    component = nlp.add_pipe("kg_enumerations")
    doc = Doc(nlp.vocab, words=words, sent_starts=[True] + [False] * (len(words) - 1))
    doc.spans["kg_entities"] = [Span(doc, s, e, label="Method", kb_id="typer") for s, e in methods]
    doc = component(doc)
    return {s.text: s.label_ for s in doc.spans["kg_entities"]}


def test_a_name_shaped_like_a_benchmark_is_a_dataset() -> None:
    words = [
        "FooAgent",
        "reaches",
        "42.1",
        "%",
        "on",
        "BarWorld-Verified",
        "and",
        "QuxSpotQA",
        "with",
        "Qwen2.5-7B-QA",
    ]
    typed = _typed(words, [(0, 1), (5, 6), (7, 8), (9, 10)])
    assert typed["BarWorld-Verified"] == "Dataset"
    assert typed["QuxSpotQA"] == "Dataset"
    assert typed["FooAgent"] == "Method"
    assert typed["Qwen2.5-7B-QA"] == "Method"  # a model name stays a model
