"""The evaluation harness: scoring functions on hand-made examples, and the real gold."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kg.extraction.values import parse_value
from kg.training.evaluation import (
    PRF,
    claim_match,
    evaluate_gold,
    lenient_match,
    score_forms,
    strict_match,
    value_key,
)
from kg.training.recogniser import non_overlapping, span_scores
from tests.helpers import ICLR, ICLR_DEV, SHARED, iclr_dev_predictions, write_predictions


def test_matching() -> None:
    assert strict_match("Transformers", "transformer")
    assert strict_match("multi-agent RL", "multiagent RL")
    assert not strict_match("LLM unlearning", "unlearning")
    assert lenient_match("LLM unlearning", "unlearning")
    assert lenient_match("$k$-means", "exact k-means")
    assert not lenient_match("image segmentation", "language modeling")
    assert not lenient_match("the", "of the")


def test_score_forms_is_many_to_one() -> None:
    gold = [["LLM unlearning", "unlearning"], ["panoptic segmentation"]]
    pred = [["LLM unlearning"], ["unlearning"], ["object detection"]]
    prf, wrong, missed = score_forms(pred, gold, lenient=False)
    assert (prf.tp_pred, prf.pred, prf.tp_gold, prf.gold) == (2, 3, 1, 2)
    assert wrong == [2] and missed == [1]
    assert prf.precision == pytest.approx(2 / 3) and prf.recall == 0.5
    assert prf.f1 == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))


def test_prf_edge_cases() -> None:
    assert PRF().f1 == 0.0 and PRF().precision == 0.0


def test_claim_span_and_values() -> None:
    assert claim_match((0, 100), (10, 40))
    assert not claim_match((0, 10), (8, 40))
    assert value_key(*parse_value(r"$\times$46"), r"$\times$46") == ("num", 46.0, "×")
    assert value_key(*parse_value("+5.48%"), "+5.48%") == value_key(
        *parse_value(r"+5.48\%"), r"+5.48\%"
    )


def test_scierc_scoring_helpers() -> None:
    flat = non_overlapping(
        [
            (0, 10, "Method"),
            (0, 4, "Method"),
            (8, 15, "OtherScientificTerm"),
            (20, 30, "OtherScientificTerm"),
            (22, 25, "Task"),
        ]
    )
    assert flat == [(0, 10, "Method"), (22, 25, "Task")]
    scores = span_scores(
        [("d", 0, 4, "Task"), ("d", 5, 9, "Method")], [("d", 0, 4, "Task"), ("d", 5, 8, "Method")]
    )
    assert scores["ALL"]["precision"] == 0.5 and scores["Task"]["f1"] == 1.0


def test_tiny_gold_file(tmp_path: Path, extractor) -> None:  # noqa: ANN001
    abstract = (
        "We propose FooNet, a novel network for image classification. "
        "FooNet outperforms ResNet-50 by 3.2% accuracy on CIFAR-10."
    )
    data = tmp_path / "abstracts.jsonl"
    data.write_text(json.dumps({"id": "p1", "abstract": abstract}) + "\n")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps(
            {
                "id": "p1",
                "proposed": [{"name": "FooNet", "long_form": None}],
                "tasks": [["image classification"]],
                "methods": [["ResNet-50"]],
                "datasets": [["CIFAR-10"]],
                "metrics": [["accuracy"]],
                "claims": [
                    {
                        "text": "FooNet outperforms ResNet-50 by 3.2% accuracy on CIFAR-10",
                        "kind": "performance",
                        "subject": "FooNet",
                        "values": ["3.2%"],
                        "metric": "accuracy",
                        "dataset": "CIFAR-10",
                    }
                ],
            }
        )
        + "\n"
    )
    report = evaluate_gold(gold, [data], extractor=extractor, verbose=True)
    assert report.papers == 1 and not report.missing
    for name in ("proposed", "datasets", "metrics", "claims"):
        assert report.fields[name]["lenient"].recall == 1.0, (name, report.errors)
    assert report.claim_values_correct == report.claim_values_total == 1


GOLD = SHARED / "gold" / "seeds-gold.jsonl"


@pytest.mark.shared
@pytest.mark.skipif(not GOLD.exists(), reason="../shared/gold is not beside the checkout")
def test_scores_on_the_shared_gold(extractor) -> None:  # noqa: ANN001
    from kg.resources import sample_corpus

    report = evaluate_gold(GOLD, sample_corpus(), extractor=extractor)
    assert report.papers == 37 and not report.missing
    fields = report.fields
    # Floors a little under the measured figures (benchmarks/quality.md): a regression alarm.
    assert fields["proposed"]["lenient"].f1 >= 0.85
    # Extractor 0.5.0 (the learned typer, chosen on iclr-dev) measures tasks 0.62,
    # methods 0.61, datasets 0.71, metrics 0.77 here (0.3.0, tuned on this sample:
    # 0.755, 0.705, 0.941, 0.802).
    assert fields["tasks"]["lenient"].f1 >= 0.58
    assert fields["methods"]["lenient"].f1 >= 0.57
    assert fields["datasets"]["lenient"].f1 >= 0.65
    assert fields["metrics"]["lenient"].f1 >= 0.7
    assert fields["claims"]["lenient"].f1 >= 0.7
    assert report.claim_values_correct / report.claim_values_total >= 0.9


SCORER = SHARED / "tools" / "score_extraction.py"


def _issue_scores(predictions: Path, gold: Path, texts: list[str]) -> dict:
    """``score_extraction.py --json`` (the issue's own scorer) on our predictions."""
    run = subprocess.run(
        [sys.executable, str(SCORER), str(gold), str(predictions), *texts, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(run.stdout)


@pytest.mark.shared
@pytest.mark.skipif(
    not (ICLR_DEV.exists() and ICLR.exists() and SCORER.exists() and GOLD.exists()),
    reason="../shared (gold, ICLR abstracts, scorer) is not beside the checkout",
)
def test_the_issue_targets_with_the_issue_scorer(extractor, tmp_path: Path) -> None:  # noqa: ANN001
    """Issue 11's targets as its scorer reports them: on iclr-dev macro ≥ 0.75 and
    every field ≥ 0.60, on the 37-abstract sample macro ≥ 0.70. Measured 0.751
    (0.7505 before rounding) and 0.817 (benchmarks/quality.md): the dev target has
    no slack, so any change that costs dev one entity fails here."""
    from kg.reading.readers import read_paths
    from kg.resources import sample_corpus

    dev = iclr_dev_predictions(extractor, tmp_path)
    scores = _issue_scores(dev, ICLR_DEV, ["--texts", str(ICLR)])
    assert scores["papers"] == 40 and scores["missing_predictions"] == 0, scores
    assert scores["macro_f1"] >= 0.75, scores
    fields = ("proposed", "tasks", "methods", "datasets", "metrics")
    assert all(scores[f"{f}.lenient"]["f1"] >= 0.60 for f in fields), scores
    assert scores["claims"]["f1"] >= 0.60, scores

    sample = write_predictions(
        extractor, list(read_paths(sample_corpus())), tmp_path / "sample.pred.jsonl"
    )
    abstracts = ["--abstracts", str(GOLD.with_name("seed_abstracts.jsonl"))]
    scores = _issue_scores(sample, GOLD, abstracts)
    assert scores["papers"] == 37 and scores["missing_predictions"] == 0, scores
    assert scores["macro_f1"] >= 0.70, scores


SCIERC_DEV = SHARED / "data" / "scierc" / "dev.jsonl"


@pytest.mark.shared
@pytest.mark.skipif(
    not SCIERC_DEV.exists(), reason="../shared/data/scierc is not beside the checkout"
)
def test_scierc_dev_scores(extractor) -> None:  # noqa: ANN001
    from kg.training.evaluation import evaluate_scierc

    # The span layers score the shipped recogniser, which extraction leaves out.
    scores = evaluate_scierc(SCIERC_DEV, layer="ner")
    assert set(scores) == {"ALL", "Task", "Method", "Metric", "Material"}
    assert scores["ALL"]["gold"] == 452
    assert scores["ALL"]["f1"] >= 0.4
    with pytest.raises(ValueError, match="recogniser"):
        evaluate_scierc(SCIERC_DEV, extractor=extractor, layer="typed")
    entities = evaluate_scierc(SCIERC_DEV, extractor=extractor, layer="entities")
    assert entities["ALL"]["gold"] == 452 and entities["ALL"]["tp"] > 0
