"""LaTeX cleaning: clean labels, offsets that still point into the original."""

from __future__ import annotations

import pytest

from kg.reading.latex import clean, clean_label


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (r"$k$-means", "k-means"),
        (r"PFT$_3$A", "PFT3A"),
        (r"up to $\times$46 lower", "up to ×46 lower"),
        (r"by +5.48\% over", "by +5.48% over"),
        (r"$\varepsilon$-$N$ framework", "ε-N framework"),
        (r"\underline{P}rior-\underline{F}ree", "Prior-Free"),
        (r"\textit{linear} transfer", "linear transfer"),
        ("no latex at all", "no latex at all"),
    ],
)
def test_clean_text(raw: str, expected: str) -> None:
    assert clean(raw).text == expected


def test_spans_map_back_to_the_whole_markup() -> None:
    raw = r"We use $k$-means and PFT$_3$A with $\times$46 gains."
    cleaned = clean(raw)
    for word, original in [
        ("k-means", r"$k$-means"),
        ("PFT3A", r"PFT$_3$A"),
        ("×46", r"$\times$46"),
    ]:
        start = cleaned.text.index(word)
        a, b = cleaned.to_original(start, start + len(word))
        assert raw[a:b] == original


def test_identity_map_without_latex() -> None:
    text = "Plain text."
    cleaned = clean(text)
    assert cleaned.to_original(0, 5) == (0, 5)
    assert cleaned.to_original(6, 11) == (6, 11)


def test_clean_label_folds_whitespace() -> None:
    assert clean_label("  Angle  $k$-means ") == "Angle k-means"


def test_map_invariants_on_hostile_text() -> None:
    import random

    rng = random.Random(0)
    alphabet = "ab $\\{}_^%~xX1 (" + "\\times\\alpha\\textbf"
    for _ in range(300):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        cleaned = clean(raw)
        assert len(cleaned.starts) == len(cleaned.ends) == len(cleaned.text)
        for a, b in zip(cleaned.starts, cleaned.ends, strict=True):
            assert 0 <= a < b <= len(raw)
        assert list(cleaned.starts) == sorted(cleaned.starts)
        if cleaned.text:
            a, b = cleaned.to_original(0, len(cleaned.text))
            assert 0 <= a <= b <= len(raw)
