"""Results: each number of a claim tied to its metric, dataset, method and role."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kg.mapping.directions import metric_direction
from kg.model import Record
from tests.helpers import ICLR, ICLR_DEV, SHARED, iclr_dev_predictions

ABSTRACT = (
    "Training large detectors is expensive. "
    "We propose FooNet, a sparse detector for object detection. "
    "FooNet reduces GPU memory usage by 72% and reaches 47.7 mAP on COCO. "
    "On ImageNet, our method improves top-1 accuracy from 80.1% to 84.7% with 20 samples per class."
)


def test_metric_direction_is_data() -> None:
    assert metric_direction("accuracy") is True
    assert metric_direction("top-1 accuracy") is True
    assert metric_direction("FID") is False
    assert metric_direction("FID score") is False  # FID decides, not "score"
    assert metric_direction("word error rate") is False
    assert metric_direction("success rate") is True
    assert metric_direction("perplexity") is False
    assert metric_direction("novelty of the idea") is None


def _results(extractor) -> list[dict]:  # noqa: ANN001
    paper = extractor.extract_one(Record("foo", ABSTRACT))
    return [r.to_json() for r in paper.results]


def test_each_number_gets_its_own_metric(extractor) -> None:  # noqa: ANN001
    results = {r["value"]["text"]: r for r in _results(extractor)}
    assert results["72%"]["metric"]["label"] == "GPU memory usage"
    assert results["72%"]["relative"] is True
    assert results["47.7 mAP"]["metric"]["label"] == "mAP"
    assert results["47.7 mAP"]["relative"] is False
    assert results["47.7 mAP"]["dataset"]["label"] == "COCO"
    assert results["47.7 mAP"]["proposed"] is True
    assert results["47.7 mAP"]["method"]["label"] == "FooNet"
    # "from 80.1% to 84.7%": the first is the baseline's number, the second ours
    assert results["80.1%"]["proposed"] is False
    assert results["84.7%"]["proposed"] is True
    assert results["84.7%"]["metric"]["label"] == "top-1 accuracy"
    assert results["84.7%"]["dataset"]["label"] == "ImageNet"
    assert "20" not in results  # a count, not a result


def test_result_offsets_point_into_the_abstract(extractor) -> None:  # noqa: ANN001
    for r in _results(extractor):
        v, c = r["value"], r["claim"]
        assert ABSTRACT[v["start"] : v["end"]] == v["text"]
        assert ABSTRACT[c["start"] : c["end"]] == c["text"]
        assert c["start"] <= v["start"] and v["end"] <= c["end"]
        assert r["metric"]["iri"].startswith("https://w3id.org/mlkg/id/metric/")


def test_what_a_number_measures_is_a_metric_of_its_paper(extractor) -> None:  # noqa: ANN001
    """A result's metric is listed among its paper's metrics, found at its phrase in the
    number's sentence, even when the typer left that phrase out ("18.3% on automated
    metrics"): ``/papers?metric=…`` finds every paper that reports a number of it."""
    from kg.reading.readers import read_paths
    from kg.resources import sample_corpus

    records = [r for r in read_paths(sample_corpus()) if hasattr(r, "abstract")]
    checked = 0
    for paper in extractor.extract(records):
        metrics = {e.iri: e for e in paper.entities if e.type.value == "Metric"}
        for result in paper.results:
            if result.metric is None:
                continue
            checked += 1
            entity = metrics.get(result.metric.iri)
            assert entity is not None, (result.metric.label, result.claim.text)
            sentence = (result.claim.sentence_start, result.claim.sentence_end)
            assert any(
                sentence[0] <= m.start
                and m.end <= sentence[1]
                and paper.record.abstract[m.start : m.end] == m.text
                for m in entity.mentions
            ), (entity.label, result.claim.text)
    assert checked >= 12


def test_numbers_without_a_metric_are_not_tied_to_one(extractor) -> None:  # noqa: ANN001
    paper = extractor.extract_one(
        Record("bar", "We propose BarNet. BarNet outperforms prior methods by 12% on average.")
    )
    assert all(r.metric is None for r in paper.results)


SCORER = SHARED / "tools" / "score_results.py"


@pytest.mark.skipif(
    not (ICLR_DEV.exists() and ICLR.exists() and SCORER.exists()),
    reason="../shared (iclr-dev gold, ICLR abstracts, scorer) is not beside the checkout",
)
def test_results_f1_on_iclr_dev(extractor, tmp_path: Path) -> None:  # noqa: ANN001
    out = iclr_dev_predictions(extractor, tmp_path)
    run = subprocess.run(
        [sys.executable, str(SCORER), str(ICLR_DEV), str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    f1 = float(run.stdout.strip().rsplit("results_f1=", 1)[1])
    # 0.634 with extractor 0.5.0; 0.739 with 0.5.1's attribution rules (tp 17, fp 4,
    # fn 8; iclr-train 0.773, the sample 0.778); 0.727 with 0.6.2 (tp 16, fp 3, fn 9):
    # "2.56x speedup using just 18.9% of the cache" no longer reads 18.9% as a speedup,
    # which the gold, tying every value of a claim to its one metric, counted. The
    # issue's target is 0.65.
    assert f1 >= 0.72, run.stdout


def test_a_value_glued_to_a_full_stop_keeps_its_own_characters(extractor) -> None:  # noqa: ANN001
    # "1.6×." is one token: the value must be "1.6×", not the token (once a crash)
    text = "We propose QuxNet. QuxNet improves throughput by 1.6×. It also reduces latency by 20%."
    paper = extractor.extract_one(Record("qux", text))
    assert paper.entities, "the paper was assembled"
    values = {r.value.text: r for r in paper.results}
    assert values["1.6×"].value.number == 1.6
    assert values["1.6×"].metric is not None and values["1.6×"].metric.label == "throughput"


def test_the_dataset_comes_from_its_place_in_the_sentence(extractor) -> None:  # noqa: ANN001
    text = (
        "We propose ZedFlow, a one-step generator. "
        "On ImageNet-256x256, ZedFlow achieves 1.99 FID with 4 NFEs."
    )
    paper = extractor.extract_one(Record("zed", text))
    [result] = [r for r in paper.results if r.value.number == 1.99]
    assert result.metric is not None and result.metric_text == "FID"
    # the resolution written one way (results.json's dataset_label_rules)
    assert result.dataset is not None and result.dataset.label == "ImageNet-256"
    assert result.dataset.iri.startswith("https://w3id.org/mlkg/id/dataset/")
    assert not any(r.value.number == 4 for r in paper.results)  # "4 NFEs" is a count
