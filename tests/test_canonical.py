"""Canonical keys and labels: one entity across papers, one IRI."""

from __future__ import annotations

import pytest

from kg.extraction.canonical import (
    canonical_key,
    display_label,
    expand_acronym,
    is_acronym,
    singular,
)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("multi-agent reinforcement learning", "multiagent reinforcement learning"),
        ("Contrastive learning", "contrastive learning"),
        ("transformers", "Transformer"),
        ("diffusion models", "diffusion model"),
        ("LLMs", "LLM"),
        ("$k$-means", "k-means"),
        ("the COCO dataset", "COCO dataset"),
    ],
)
def test_same_key(a: str, b: str) -> None:
    assert canonical_key(a) == canonical_key(b)


@pytest.mark.parametrize(
    ("a", "b"), [("LLM unlearning", "machine unlearning"), ("CIFAR-10", "CIFAR-100")]
)
def test_different_key(a: str, b: str) -> None:
    assert canonical_key(a) != canonical_key(b)


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("processes", "process"),
        ("analysis", "analysis"),
        ("policies", "policy"),
        ("dynamics", "dynamics"),
        ("GANs", "GAN"),
        ("loss", "loss"),
        ("bias", "bias"),
    ],
)
def test_singular(word: str, expected: str) -> None:
    assert singular(word) == expected


def test_display_label_lowers_only_a_sentence_initial_titlecase_word() -> None:
    assert display_label("Contrastive learning", sentence_initial=True) == "contrastive learning"
    assert display_label("InfoNCE", sentence_initial=True) == "InfoNCE"
    assert display_label("CIFAR-10", sentence_initial=True) == "CIFAR-10"
    assert display_label("Bayesian optimization") == "Bayesian optimization"
    assert display_label("PFT$_3$A") == "PFT3A"


def test_acronyms() -> None:
    assert is_acronym("GRPO") and is_acronym("InfoNCE") and is_acronym("CIFAR-10")
    assert not is_acronym("Transformer")
    assert expand_acronym("GRPO") == "Group Relative Policy Optimization"
    assert expand_acronym("LLMs") == "large language model"
    assert expand_acronym("XYZW") is None
