"""The claim detector (``kg_claims``): the cues' reading, the learned model, ``kg train``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kg.cli.main import main
from kg.extraction.claims import CLAIM_CLASSES, ClaimDetector
from kg.model import ClaimKind, Record
from kg.training.claims import sentence_classes, train_claims
from tests.helpers import SHARED, assert_same_model

RESULTS = " ".join(
    f"FooNet improves accuracy by {n}.{n}% over ResNet-50 on benchmark {n}." for n in range(1, 9)
)


def _claims(extractor, abstract: str) -> list:  # noqa: ANN001
    return extractor.extract_one(Record(id="x", abstract=abstract)).claims


def test_a_gold_claim_labels_the_sentence_it_lies_in() -> None:
    abstract = "Graphs are hard. We propose FooNet. It is 3% better and 2x faster."
    sentences = [(0, 16), (17, 35), (36, 67)]
    claims = [
        {"text": "We propose FooNet", "kind": "contribution"},
        {"text": "3% better", "kind": "performance"},
        # Two claims in one sentence: the one covering more of it decides.
        {"text": "It is 3% better and 2x faster", "kind": "efficiency"},
        {"text": "not in the abstract", "kind": "theoretical"},
    ]
    classes = sentence_classes(abstract, sentences, claims)
    assert [CLAIM_CLASSES[c] for c in classes] == ["O", "contribution", "efficiency"]


def test_a_claim_across_sentences_labels_the_one_holding_most_of_it() -> None:
    abstract = "We propose FooNet. It wins."
    classes = sentence_classes(
        abstract, [(0, 18), (19, 27)], [{"text": "FooNet. It wins", "kind": "performance"}]
    )
    assert classes == [0, 0]  # no sentence holds half of it
    classes = sentence_classes(
        abstract, [(0, 18), (19, 27)], [{"text": "We propose FooNet. It", "kind": "contribution"}]
    )
    assert [CLAIM_CLASSES[c] for c in classes] == ["contribution", "O"]


def test_the_shipped_model_decides(extractor) -> None:  # noqa: ANN001
    detector = extractor.nlp.get_pipe("kg_claims")
    assert isinstance(detector, ClaimDetector) and detector.model is not None
    claims = _claims(
        extractor,
        "Graph learning is hard. We propose FooNet, a network for graphs. FooNet "
        "outperforms existing methods by 3.2% accuracy on Cora.",
    )
    assert [c.kind for c in claims] == [ClaimKind.CONTRIBUTION, ClaimKind.PERFORMANCE]


@pytest.mark.parametrize(
    "sentence",
    [
        "Prior work has proposed GNNs for this task.",
        "Smith et al. showed that GNNs oversmooth.",
        "Kipf and Welling (2017) improved accuracy by 5%.",
    ],
)
def test_others_work_is_never_a_claim(extractor, sentence: str) -> None:  # noqa: ANN001
    claims = _claims(extractor, f"We propose FooNet for graphs. {sentence}")
    assert not any(sentence[:12] in c.text for c in claims)


def test_at_most_max_claims_and_none_below_the_threshold(extractor) -> None:  # noqa: ANN001
    detector = extractor.nlp.get_pipe("kg_claims")
    assert len(_claims(extractor, RESULTS)) == detector.max_claims == 5
    old = detector.threshold
    try:
        detector.threshold = 1.01
        assert _claims(extractor, RESULTS) == []
    finally:
        detector.threshold = old


def test_without_a_model_the_cues_decide(extractor) -> None:  # noqa: ANN001
    detector = extractor.nlp.get_pipe("kg_claims")
    model = detector.model
    try:
        detector.model = None
        claims = _claims(extractor, RESULTS)
    finally:
        detector.model = model
    assert len(claims) == 8  # every sentence has a cue ("improves") and a number


def test_train_claims_fits_the_gold_and_the_component_reads_it(
    extractor,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    abstracts = {
        "a": "Graphs are everywhere. We propose FooNet for graphs. FooNet is 3% better.",
        "b": "Images are big. We introduce BarNet for images. BarNet is 2x faster.",
    }
    gold = [
        {"id": "a", "claims": [{"text": "FooNet is 3% better", "kind": "performance"}]},
        {"id": "b", "claims": [{"text": "BarNet is 2x faster", "kind": "efficiency"}]},
    ]
    texts = tmp_path / "texts.jsonl"
    texts.write_text(
        "".join(json.dumps({"id": k, "abstract": v}) + "\n" for k, v in abstracts.items())
    )
    gold_path = tmp_path / "gold.jsonl"
    gold_path.write_text("".join(json.dumps(g) + "\n" for g in gold))
    model = train_claims(gold_path, [texts], tmp_path / "claims", log=lambda _: None)
    assert (tmp_path / "claims" / "weights.npz").exists()
    detector = extractor.nlp.get_pipe("kg_claims")
    shipped = detector.model
    try:
        detector.model = model
        claims = _claims(extractor, abstracts["a"])
    finally:
        detector.model = shipped
    # Only the result sentence is a claim, as in the gold it learned from.
    assert [c.text for c in claims] == ["FooNet is 3% better"]


def test_kg_train_claims_needs_shared(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["train", "--only", "claims", "--scierc-dir", str(tmp_path)])
    assert result.exit_code != 0 and "--shared" in result.output


TRAIN_GOLD = SHARED / "gold" / "iclr-train.jsonl"


@pytest.mark.skipif(
    not TRAIN_GOLD.exists(), reason="needs ../shared beside the checkout (the ICLR train gold)"
)
def test_kg_train_reproduces_the_shipped_claim_model(tmp_path: Path) -> None:
    """`kg train` gives the shipped model: a change to the cues, the features or the
    components before them must come with a retrained claim model."""
    from kg.extraction.linear_model import CLAIMS_DIR

    out = tmp_path / "claims"
    result = CliRunner().invoke(
        main, ["train", "--shared", str(SHARED), "--only", "claims", "--claims-output", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert_same_model(out, CLAIMS_DIR)
