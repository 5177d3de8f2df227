"""Pure helpers and components of the extractor, on spacy.blank (no trained model)."""

from __future__ import annotations

import pytest
import spacy

from kg.extraction.abbreviations import best_long_form, find_abbreviations, is_short_form
from kg.extraction.values import find_values, parse_value


@pytest.fixture(scope="module")
def blank():  # noqa: ANN201
    return spacy.blank("en")


def test_schwartz_hearst_both_directions(blank) -> None:  # noqa: ANN001
    doc = blank(
        "We introduce PURGE (Policy Unlearning through Relative Group Erasure), grounded in "
        "Group Relative Policy Optimization (GRPO)."
    )
    pairs = [(long.text, short.text) for long, short in find_abbreviations(doc)]
    assert pairs == [
        ("Policy Unlearning through Relative Group Erasure", "PURGE"),
        ("Group Relative Policy Optimization", "GRPO"),
    ]


def test_abbreviation_helpers(blank) -> None:  # noqa: ANN001
    assert is_short_form("TOGP") and is_short_form("ADMM-PnP")
    assert not is_short_form("see") and not is_short_form("a")
    assert best_long_form("PFT3A", "Prior-Free Tabular Test-Time Adaptation") == 0
    assert best_long_form("XYZ", "completely unrelated words") is None
    assert find_abbreviations(blank("We evaluate (see Fig. 2) things.")) == []


def test_a_long_form_starts_after_an_em_dash(blank) -> None:  # noqa: ANN001
    # An em dash sets off a clause, so the word before it is not part of the name.
    assert best_long_form("TPC", "attacks—Task Performance Check") == len("attacks—")
    doc = blank("We stop attacks—Task Performance Check (TPC) flags them.")
    pairs = [(long.text, short.text) for long, short in find_abbreviations(doc)]
    assert pairs == [("Task Performance Check", "TPC")]


@pytest.mark.parametrize(
    ("text", "number", "unit"),
    [
        (r"$\times$46", 46.0, "×"),
        (r"+5.48\%", 5.48, "%"),
        ("+5.1 AP", 5.1, "AP"),
        ("81×", 81.0, "×"),
        ("95%", 95.0, "%"),
        (r"1.57$\times$", 1.57, "×"),
        ("4-times", 4.0, "×"),
        (r"$O(n \log n)$", None, "O"),
    ],
)
def test_parse_value(text: str, number: float | None, unit: str) -> None:
    assert parse_value(text) == (number, unit)


def test_find_values_skips_plain_counts_and_words() -> None:
    found = find_values("We train 2 Transformer layers and gain +5.1 AP and 3.2% on COCO.")
    assert [(v.number, v.unit) for v in found] == [(5.1, "AP"), (3.2, "%")]


def test_factories_are_registered_by_entry_point(blank) -> None:  # noqa: ANN001
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    for name in ("kg_abbreviations", "kg_lexicon", "kg_entities"):
        nlp.add_pipe(name)
    # The cues alone: the claim model reads lemmas and a parse this pipeline lacks.
    nlp.add_pipe("kg_claims", config={"model": None})
    doc = nlp(
        "Data is scarce. We train on CIFAR-10 and report accuracy. "
        "Our method is state-of-the-art with ResNet-50 by 3.2% on ImageNet."
    )
    lexicon = {(s.text, s.label_) for s in doc.spans["kg_lexicon"]}
    assert {
        ("CIFAR-10", "Dataset"),
        ("accuracy", "Metric"),
        ("ImageNet", "Dataset"),
        ("ResNet-50", "Method"),
    } <= lexicon
    assert {(s.text, s.label_) for s in doc.spans["kg_entities"]} >= {("CIFAR-10", "Dataset")}
    kinds = [s.label_ for s in doc.spans["kg_claims"]]
    assert kinds == ["performance"]


def test_lexicon_patterns_are_data(blank) -> None:  # noqa: ANN001
    nlp = spacy.blank("en")
    nlp.add_pipe("kg_lexicon", config={"lexicon": [{"label": "FooBench", "type": "Dataset"}]})
    doc = nlp("Results on FooBench and foobench.")
    assert [(s.text, s.label_) for s in doc.spans["kg_lexicon"]] == [("FooBench", "Dataset")]
