"""The value → metric/dataset rules of ``kg_results``, each on a constructed sentence."""

from __future__ import annotations

from kg.model import Record, Result


def _results(extractor, text: str) -> dict[str, Result]:  # noqa: ANN001
    paper = extractor.extract_one(Record("rules", text))
    return {r.value.text: r for r in paper.results}


def _metric(result: Result) -> str | None:
    return result.metric_text if result.metric is not None else None


def test_emphasis_marks_do_not_part_coordinated_values(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooProver. Experiments show that FooProver's pass@32 on MiniF2F increases "
        "from 22.58% to **25.81%**.",
    )
    assert _metric(found["22.58%"]) == "pass@32"
    assert _metric(found["25.81%"]) == "pass@32"


def test_a_participle_belongs_to_the_metric_phrase(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooAgent. FooAgent outperforms the base model by an average of 18.3% "
        "on automated metrics.",
    )
    assert _metric(found["18.3%"]) == "automated metrics"


def test_what_a_change_is_in_is_what_was_measured(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooVid. FooVid yields a 95% reduction in visual tokens. "
        "FooVid improves fluency by +5.48%. FooVid improves performance by 13%.",
    )
    assert _metric(found["95%"]) == "visual tokens"
    assert _metric(found["+5.48%"]) == "fluency"
    # "performance" names no measure: the number keeps no metric
    assert found["13%"].metric is None


def test_a_change_in_a_task_is_not_a_metric(extractor) -> None:  # noqa: ANN001
    found = _results(extractor, "We propose FooNote. FooNote improves note detection by 14%.")
    assert found["14%"].metric is None


def test_a_named_benchmark_is_a_dataset_even_when_the_paper_introduces_it(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We introduce QuxBench, a benchmark for table reasoning, and QuxAgent. "
        "On the QuxBench benchmark, QuxAgent achieves 77.2% accuracy.",
    )
    result = found["77.2%"]
    assert _metric(result) == "accuracy"
    assert result.dataset is not None and result.dataset.label == "QuxBench"


def test_the_dataset_named_after_such_as_in_the_opening_phrase(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooThink. On challenging benchmarks such as AIME 2025, FooThink "
        "achieves up to 99.9% accuracy.",
    )
    result = found["99.9%"]
    assert _metric(result) == "accuracy"
    assert result.dataset is not None and result.dataset.label == "AIME"


def test_a_number_takes_the_only_metric_its_sentence_names(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooInject. Experiments show that FooInject achieves higher attack success "
        "rates, improving from 5.18% to 32.05% on AgentDojo.",
    )
    assert _metric(found["32.05%"]) == "attack success rates"
    assert found["32.05%"].dataset is not None and found["32.05%"].dataset.label == "AgentDojo"


def test_gains_of_and_coordinated_gains_are_relative(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooPrompt. FooPrompt achieves accuracy gains of up to 3.41% on CUB-200. "
        "FooPrompt surpasses fine-tuned baselines in accuracy by **7.34%** and **1.04%**.",
    )
    assert found["3.41%"].relative
    assert found["7.34%"].relative and found["1.04%"].relative


def test_a_hyphenated_judgement_is_not_part_of_the_metric(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooGen. On ImageNet 256x256, FooGen achieves a state-of-the-art FID of 1.35.",
    )
    assert _metric(found["1.35"]) == "FID"


def test_a_share_of_something_takes_no_metric_of_its_sentence(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooKV. FooKV achieves 2.56x speedup using just 18.9% of the cache "
        "on BarBench. On BazBench, FooKV reaches nearly 100% of full-KV performance "
        "with a 3x speedup.",
    )
    assert found["18.9%"].metric is None
    assert found["100%"].metric is None


def test_a_generic_tail_after_a_named_metric_is_dropped(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooGen. FooGen achieves an FID score of 1.59 on ImageNet and a "
        "92.1 F1-score on CoNLL.",
    )
    assert _metric(found["1.59"]) == "FID"
    assert _metric(found["92.1"]) == "F1"


def test_task_before_a_metric_is_dropped(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor, "We propose FooAgent. FooAgent reaches a task success rate of 42.1% on OSWorld."
    )
    assert _metric(found["42.1%"]) == "success rate"


def test_a_resolution_belongs_to_the_dataset_and_is_written_one_way(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooGen. On ImageNet $256\\times256$, FooGen achieves an FID of 1.48. "
        "FooGen reaches an FID of 1.58 on ImageNet-256 and 2.35 FID on ImageNet 512 × 512.",
    )
    assert {r.dataset.label for r in found.values() if r.dataset} == {
        "ImageNet-256",
        "ImageNet-512",
    }
    assert found["1.48"].dataset.key == found["1.58"].dataset.key
    # "256\times256" is a size, not a 256× speed-up
    assert not any(text.startswith("$256") for text in found)


def test_a_benchmarks_own_score_names_the_benchmark(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooGen. FooGen attains a $0.86$ BarEval score in 2 steps. FooGen attains a "
        "0.31 CLIP score. FooGen reaches an overall score of 0.73 on the BarEval benchmark.",
    )
    assert found["$0.86$ BarEval"].dataset.label == "BarEval"
    assert found["0.31 CLIP"].dataset is None  # a model's score, of any data
    # "an overall score on BarEval" is the BarEval score: one leaderboard for both
    assert found["0.73"].metric.key == found["$0.86$ BarEval"].metric.key


def test_the_opening_on_x_after_a_connective_names_the_dataset(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooGen. Notably, on BarNet 256x256, FooGen reaches a new state-of-the-art "
        "FID of 1.02 with two steps.",
    )
    assert found["1.02"].dataset.label == "BarNet-256"


def test_both_sides_of_a_size_are_no_values(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooGo. On a 9×9 Go board, FooGo improves the win rate from 69.3% to 78.2%.",
    )
    assert set(found) == {"69.3%", "78.2%"}


def test_coordinated_numbers_share_the_dataset_named_after_them(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooFlow. FooFlow achieves 4.32 1-NFE FID and 2.94 4-NFE FID on "
        "BarNet-512x512, a new state of the art.",
    )
    assert found["4.32"].dataset.label == found["2.94"].dataset.label == "BarNet-512"


def test_a_unit_that_names_a_metric_is_the_metric(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor, "We propose FooDet. FooDet reaches 47.7 mAP on BarCOCO and 30.1 AP on BarLVIS."
    )
    assert _metric(found["30.1 AP"]) == "AP"
    assert found["30.1 AP"].dataset.label == "BarLVIS"


def test_a_full_stop_inside_a_token_ends_the_dataset_name(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooNet. FooNet reaches 71.2% accuracy on BarNet-C. On Raspberry Pi it "
        "runs at 30 FPS.",
    )
    assert found["71.2%"].dataset.label == "BarNet-C"


def test_numbers_from_to_before_a_dataset_share_it(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooTTS. FooTTS increases the accuracy of BazCoder-Flash from 51.6% to "
        "62.0%, and BazCoder-Max from 67.0% to 74.6% on BarBench Verified.",
    )
    assert {found[v].dataset.label for v in ("51.6%", "62.0%", "67.0%", "74.6%")} == {
        "BarBench Verified"
    }


def test_a_parenthesised_number_is_measured_on_the_name_before_it(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooRL. FooRL reaches high accuracy on mathematical benchmarks such as "
        "BarMath (90.8%) and QUX 500 (77.4%) in the 7B model.",
    )
    assert found["90.8%"].dataset.label == "BarMath"
    assert found["77.4%"].dataset.label == "QUX 500"
    assert "500" not in found  # the end of a name, not a value


def test_no_other_dataset_for_a_number_on_the_papers_own_benchmark(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We introduce QuxBench, a benchmark for computer-use agents. Agents strong on related "
        "benchmarks like BarWorld only have less than 5% success rate on QuxBench, while "
        "agents built on closed models can still have up to 39% task success rate.",
    )
    # measured on the paper's own QuxBench, which its text calls a benchmark: a
    # dataset node of its own; never BarWorld, which another clause names
    assert found["5%"].dataset is not None and found["5%"].dataset.label == "QuxBench"
    assert found["39%"].dataset is not None and found["39%"].dataset.label == "QuxBench"


def _on(result: Result) -> str | None:
    return result.dataset.label if result.dataset is not None else None


def _by(result: Result) -> str | None:
    return result.method.label if result.method is not None else None


def test_a_benchmark_papers_numbers_are_on_its_benchmark_by_the_models_named(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We present ZorpVQA, a benchmark that asks models to read several X-ray images. "
        "Models such as GPT-4o, Llama-3-70B and Qwen2.5-72B reach average accuracies of "
        "56.4%, 26.9% and 33.6%, respectively. "
        "Gemini 2.5 Pro achieves only 41.2% accuracy.",
    )
    assert "2.5 Pro" not in found  # a model's version is no value
    assert {v: _on(found[v]) for v in ("56.4%", "26.9%", "33.6%", "41.2%")} == dict.fromkeys(
        ("56.4%", "26.9%", "33.6%", "41.2%"), "ZorpVQA"
    )
    assert [_by(found[v]) for v in ("56.4%", "26.9%", "33.6%")] == [
        "GPT-4o",
        "Llama-3-70B",
        "Qwen2.5-72B",
    ]
    assert all(not found[v].proposed for v in found)  # the models', not the paper's method's
    assert _metric(found["41.2%"]) == "accuracy"


def test_a_count_is_no_score_even_beside_a_metric(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We introduce BlipBench, a benchmark of tool use. The best model achieves only a 29.9% "
        "success rate with 28 tool calling turns on average. FooAge reaches an MAE 6.22 years.",
    )
    assert "28" not in found
    assert _metric(found["29.9%"]) == "success rate"
    assert _metric(found["6.22"]) == "MAE"


def test_a_method_papers_numbers_get_no_benchmark(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FlumFlow, a trainable agentic framework. Across ten benchmarks, FlumFlow "
        "with a 7B backbone reaches 64.5% accuracy.",
    )
    assert found["64.5%"].dataset is None  # "ten benchmarks, FlumFlow" calls no name one


def test_a_vague_or_judged_metric_phrase_is_cut_to_the_measure(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We introduce QuuxBench, a benchmark of long tasks. Our evaluation shows that agents "
        "achieve only 13–38% average performance. Frontier models achieve modest baseline "
        "scores of 31.1 and 23.4, a decline of 16.8% from the easy split, 15 percentage "
        "points below humans.",
    )
    assert found["38%"].metric is None  # "average performance" names no measure
    assert _metric(found["31.1"]) == "scores"
    assert found["31.1"].metric is not None and found["31.1"].metric.label == "QuuxBench score"
    assert found["16.8%"].relative  # "a decline of"
    assert found["15 percentage points"].relative


def test_a_hyphenated_compound_is_kept_or_dropped_whole(extractor) -> None:  # noqa: ANN001
    found = _results(
        extractor,
        "We propose FooGuard. FooGuard reaches 100% keyword-based ASR on FooSet. "
        "FooGuard achieves up to a 2x higher zero-shot return than the baselines. "
        "FooGuard yields 10× smaller index size.",
    )
    assert _metric(found["100%"]) == "keyword-based ASR"  # not "based ASR"
    assert _metric(found["2x"]) == "return"  # not "shot return"
    # a comparison states the result, the rest of the phrase names the measure
    assert _metric(found["10×"]) == "index size"
