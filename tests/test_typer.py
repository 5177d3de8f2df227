"""The learned candidate typer (``kg_typer``): gold alignment, fitting, ``kg train``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import spacy
from click.testing import CliRunner

from kg.cli.main import main
from kg.extraction.extractor import Extractor
from kg.extraction.learned import (
    CLASSES,
    candidates,
    context,
    evaluative,
    is_model_name,
    span_text,
)
from kg.extraction.linear_model import LinearModel
from kg.extraction.pipeline import build_pipeline
from kg.extraction.spans import is_name_token, name_run
from kg.model import EntityType, Record
from kg.reading.readers import read_paths
from kg.resources import sample_corpus
from kg.training.logistic import fit
from kg.training.typer import (
    SILVER,
    featurise,
    featurise_each,
    gold_classes,
    read_gold,
    train_typer,
)
from tests.helpers import SHARED, assert_same_model

ABSTRACTS = {
    "a1": "We propose FooNet, a network for image classification. FooNet beats ResNet-50 "
    "by 3.2% accuracy on CIFAR-10 and on SVHN.",
    "a2": "We introduce BarGAN for image generation. BarGAN improves FID on CelebA over "
    "StyleGAN and reaches higher precision.",
}
GOLD = [
    {
        "id": "a1",
        "proposed": [{"name": "FooNet", "long_form": None}],
        "tasks": [["image classification"]],
        "methods": [["ResNet-50"]],
        "datasets": [["CIFAR-10"], ["SVHN"]],
        "metrics": [["accuracy"]],
        "claims": [],
    },
    {
        "id": "a2",
        "proposed": [{"name": "BarGAN", "long_form": None}],
        "tasks": [["image generation"]],
        "methods": [["StyleGAN"]],
        "datasets": [["CelebA"]],
        "metrics": [["FID"], ["precision"]],
        "claims": [],
    },
]


def _write(tmp_path: Path) -> tuple[Path, Path]:
    texts = tmp_path / "texts.jsonl"
    texts.write_text(
        "".join(json.dumps({"id": k, "abstract": v}) + "\n" for k, v in ABSTRACTS.items())
    )
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(g) + "\n" for g in GOLD))
    return gold, texts


def test_gold_classes_fold_case_and_plural() -> None:
    classes = gold_classes(
        {
            "proposed": [{"name": "PURGE", "long_form": "Policy Unlearning"}],
            "tasks": [["LLM unlearning", "unlearning"]],
            "metrics": [["success rates"]],
        }
    )
    assert classes["purge"] == classes["policy-unlearning"] == "Proposed"
    assert classes["unlearning"] == "Task"
    assert classes["success-rate"] == "Metric"


def test_read_gold_names_a_missing_abstract(tmp_path: Path) -> None:
    gold, texts = _write(tmp_path)
    texts.write_text(json.dumps({"id": "a1", "abstract": ABSTRACTS["a1"]}) + "\n")
    with pytest.raises(KeyError, match="a2"):
        read_gold(gold, [texts])


def test_fit_learns_the_gold_and_round_trips(tmp_path: Path) -> None:
    gold, texts = _write(tmp_path)
    rows = read_gold(gold, [texts])
    nlp = Extractor(typer=None).nlp
    feats, labels = featurise(nlp, rows)
    assert CLASSES.index("Dataset") in labels and CLASSES.index("Proposed") in labels
    model = fit(feats, labels, len(CLASSES), steps=200, min_count=1, log=lambda _: None)
    model.save(tmp_path / "typer")
    loaded = LinearModel.load(tmp_path / "typer")
    probs = loaded.probabilities(feats)
    # The training examples are fitted: every gold entity is its class's best guess.
    for row, label in zip(probs, labels, strict=True):
        if label:
            assert row.argmax() == label
    # The component reads the model and writes typed spans.
    ex = Extractor(typer=loaded)
    assert "kg_typer" in ex.nlp.pipe_names
    paper = ex.extract_one(next(r for r in _records(texts) if r.source_id == "a1"))
    assert "CIFAR-10" in {e.label for e in paper.of_type(EntityType.DATASET)}


def test_what_annotators_disagreed_on_is_not_taught(tmp_path: Path) -> None:
    gold, texts = _write(tmp_path)
    rows = read_gold(gold, [texts])
    nlp = Extractor(typer=None).nlp
    (plain, _), _ = featurise_each(nlp, rows)
    rows[0]["uncertain"] = ["ResNet-50", "network"]
    (feats, labels), _ = featurise_each(nlp, rows)
    # "network" was a candidate labelled O and is left out; "ResNet-50" stays,
    # since the gold of the paper itself says it is a method.
    assert len(feats) == len(plain) - 1
    assert labels.count(CLASSES.index("Method")) == 1


def test_silver_weighs_its_examples(tmp_path: Path) -> None:
    gold, texts = _write(tmp_path)
    rows = read_gold(gold, [texts])
    feats, labels = featurise(Extractor(typer=None).nlp, rows)
    quiet = {"n_classes": len(CLASSES), "steps": 100, "min_count": 1, "log": lambda _: None}
    # Two examples with the same features and opposite labels: the heavier one wins.
    doubled = [*feats, feats[0]]
    other = CLASSES.index("Task") if labels[0] != CLASSES.index("Task") else 0
    tilted = fit(doubled, [*labels, other], weights=[1.0] * len(feats) + [0.1], **quiet)
    assert tilted.probabilities([feats[0]])[0].argmax() == labels[0]
    tilted = fit(doubled, [*labels, other], weights=[0.1] + [1.0] * len(feats), **quiet)
    assert tilted.probabilities([feats[0]])[0].argmax() == other


def test_train_typer_takes_a_gold_paper_from_the_gold(tmp_path: Path) -> None:
    gold, texts = _write(tmp_path)
    silver = tmp_path / "silver.jsonl"
    # The silver's a1 disagrees with the gold's and is dropped; its a3 has no text.
    silver.write_text(json.dumps({**GOLD[0], "datasets": []}) + "\n")
    lines: list[str] = []
    train_typer(gold, [texts], tmp_path / "typer", silver_paths=[silver], log=lines.append)
    assert "2 gold and 0 silver abstracts" in lines[0]
    (tmp_path / "s2.jsonl").write_text(json.dumps({**GOLD[0], "id": "a3"}) + "\n")
    with pytest.raises(KeyError, match="a3"):
        train_typer(gold, [texts], tmp_path / "t2", silver_paths=[tmp_path / "s2.jsonl"])


def test_the_shipped_silver_is_ids_and_forms_only() -> None:
    """The ICLR texts must not be committed: the silver holds ids and short forms."""
    rows = [json.loads(line) for line in SILVER.read_text("utf-8").splitlines()]
    assert len(rows) >= 2000
    fields = {"id", "proposed", "tasks", "methods", "datasets", "metrics", "uncertain"}
    for row in rows:
        assert set(row) <= fields, row["id"]
        forms = [f for k in ("tasks", "methods", "datasets", "metrics") for e in row[k] for f in e]
        assert all(len(f) < 200 for f in forms + row.get("uncertain", [])), row["id"]


def _records(texts: Path):  # noqa: ANN202
    from kg.model import Record
    from kg.reading.readers import read_paths

    return [r for r in read_paths([texts]) if isinstance(r, Record)]


def test_without_a_model_the_typer_is_left_out() -> None:
    assert "kg_typer" not in build_pipeline(typer=None).pipe_names


def test_extraction_runs_the_typer_without_the_recogniser(tmp_path: Path) -> None:
    # The shipped SciERC recogniser is for kg eval --scierc (and whoever asks for
    # it): with the typer deciding it added nothing measurable, at 29 % of the CPU.
    from kg.extraction.pipeline import MODEL_DIR, NER_NAME
    from kg.ingest import default_extractor

    names = default_extractor().nlp.pipe_names  # type: ignore[attr-defined]
    assert "kg_typer" in names and NER_NAME not in names
    assert NER_NAME in build_pipeline(model_dir=MODEL_DIR, typer=None).pipe_names
    with pytest.raises(FileNotFoundError, match="no trained recogniser"):
        build_pipeline(model_dir=tmp_path)


def test_kg_train_typer_needs_shared(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["train", "--only", "typer", "--scierc-dir", str(tmp_path)])
    assert result.exit_code != 0 and "--shared" in result.output


def test_kg_train_without_data_is_a_clear_error() -> None:
    result = CliRunner().invoke(main, ["train"])
    assert result.exit_code != 0 and "--shared" in result.output


@pytest.mark.parametrize(
    ("text", "model"),
    [
        ("Qwen2.5-7B", True),
        ("DeepSeek-R1", True),
        ("Gemini 2.5", True),
        ("GPT-4.1", True),
        ("CIFAR-10", False),
        ("ImageNet", False),
        ("SWE-bench", False),
    ],
)
def test_model_names_are_never_datasets(text: str, model: bool) -> None:
    assert is_model_name(spacy.blank("en")(text)[:]) is model


def test_judgements_are_not_measures() -> None:
    nlp = spacy.blank("en")
    assert evaluative(nlp("high computational cost")[:])
    assert not evaluative(nlp("high-resolution images")[:])
    assert not evaluative(nlp("accuracy")[:])


def test_no_candidate_spans_an_em_dash() -> None:
    nlp = build_pipeline(typer=None)
    doc = nlp(
        "We study reasoning—reinforcement learning (RL) for LLMs. "
        "We distil Large Language Models (LLMs)—behavioral cloning from rationales. "
        "We solve the Navier–Stokes equations."
    )
    # The English rules leave "LLMs)—behavioral" one token; ours split it.
    assert [t.text for t in doc[18:22]] == ["LLMs", ")", "—", "behavioral"]
    texts = {span.text for span in candidates(doc, context(doc))}
    assert {"reinforcement learning", "behavioral cloning"} <= texts
    assert not any("—" in text for text in texts)
    # An en dash joins a name and stays inside it.
    assert any("Navier–Stokes" in text for text in texts)


@pytest.fixture(scope="module")
def sample_docs() -> list:
    """The sample corpus parsed, and texts made to hit the edges: names joined by
    hyphens and sizes, tabs, runs of spaces and a trailing space."""
    texts = [r.abstract for r in read_paths(sample_corpus()) if isinstance(r, Record)]
    texts.append("The Prior-Free Class Prior Estimating module of PFT3A beats Qwen2.5-7B-Instruct.")
    texts.append("Tabs\tand  double  spaces, (brackets) and a trailing space ")
    return list(build_pipeline(typer=None).pipe(texts))


def test_name_runs_from_the_context_are_the_tokens_own(sample_docs: list) -> None:
    """The typer finds name runs from the flags its context computed per token;
    they must be what :func:`name_run` finds from the tokens themselves."""
    runs = 0
    for doc in sample_docs:
        ctx = context(doc)
        assert ctx.named == [is_name_token(t) for t in doc]
        for sent in doc.sents:
            for i in range(sent.start, sent.end):
                found = name_run(doc[i : sent.end], ctx.named)
                assert found == name_run(doc[i : sent.end])
                runs += found is not None
    assert runs > 500


def test_candidate_texts_from_the_context_are_the_spans_own(sample_docs: list) -> None:
    seen = 0
    for doc in sample_docs:
        ctx = context(doc)
        for span in candidates(doc, ctx):
            assert span_text(span.start, span.end, ctx) == span.text
            seen += 1
    assert seen > 1000


TRAIN_GOLD = SHARED / "gold" / "iclr-train.jsonl"


@pytest.mark.skipif(
    not TRAIN_GOLD.exists(), reason="needs ../shared beside the checkout (the ICLR train gold)"
)
def test_kg_train_reproduces_the_shipped_typer(tmp_path: Path) -> None:
    """`kg train` gives the shipped model: a change upstream of the typer (its features
    are the other components' spans) must come with a retrained typer. Here the
    weights are bit-identical run after run; the tolerance is for another CPU's
    floating point (a stale typer differed by up to 0.41)."""
    from kg.extraction.linear_model import TYPER_DIR

    out = tmp_path / "typer"
    result = CliRunner().invoke(
        main,
        ["train", "--shared", str(SHARED), "--only", "typer", "--typer-output", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert_same_model(out, TYPER_DIR)
