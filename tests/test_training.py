"""``kg train`` end to end on a tiny SciERC-shaped corpus, and the recogniser's warm start."""

from __future__ import annotations

import json
from pathlib import Path

import numpy
import spacy
from thinc.api import Model

from kg.extraction.pipeline import BASE_PIPELINE, NER_NAME, build_pipeline
from kg.training.recogniser import (
    SYNTAX_ATTRS,
    _example,
    annotate,
    read_scierc,
    recogniser,
    train,
    warm_start,
)

ABSTRACTS = [
    (
        "We propose a graph neural network for molecule property prediction . "
        "It improves accuracy on the QM9 dataset .",
        [
            ("graph neural network", "Method"),
            ("molecule property prediction", "Task"),
            ("accuracy", "Metric"),
            ("QM9 dataset", "Material"),
        ],
    ),
    (
        "This paper presents a parser for machine translation . "
        "The parser is evaluated with BLEU on the WMT corpus .",
        [
            ("parser", "Method"),
            ("machine translation", "Task"),
            ("BLEU", "Metric"),
            ("WMT corpus", "Material"),
        ],
    ),
]


def _write_split(path: Path, split: str) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i, (text, ents) in enumerate(ABSTRACTS):
            entities = []
            for phrase, label in ents:
                start = text.index(phrase)
                entities.append({"start": start, "end": start + len(phrase), "type": label})
            fh.write(
                json.dumps(
                    {"doc_key": f"{split}{i}", "split": split, "text": text, "entities": entities}
                )
                + "\n"
            )


def test_warm_start_keeps_the_pretrained_tok2vec(tmp_path: Path) -> None:
    _write_split(tmp_path / "train.text.jsonl", "train")
    sdocs = read_scierc(tmp_path / "train.jsonl")
    examples = [_example(doc, sd) for doc, sd in zip(annotate(sdocs), sdocs, strict=True)]
    nlp = recogniser("syntax", ("Task", "Method", "Metric", "Material"))
    nlp.initialize(lambda: examples)
    target = nlp.get_pipe("ner").model
    source = spacy.load(BASE_PIPELINE).get_pipe("ner").model

    def tables(model: Model) -> list[numpy.ndarray]:
        return [n.get_param("E") for n in model.walk() if n.name == "hashembed"]

    before = tables(target)
    assert len(before) == 4 + len(SYNTAX_ATTRS)
    assert not numpy.allclose(before[0][:10], tables(source)[0][:10])
    warm_start(target, source)
    for new, old in zip(tables(target), tables(source), strict=False):
        assert numpy.array_equal(new, old)
    mixers = [
        [n for n in m.get_ref("tok2vec").walk() if n.name == "maxout"][0] for m in (target, source)
    ]
    new_w, old_w = (m.get_param("W") for m in mixers)
    assert new_w.shape[-1] > old_w.shape[-1]
    assert numpy.array_equal(new_w[..., : old_w.shape[-1]], old_w)


def test_train_writes_a_model_the_extractor_loads(tmp_path: Path) -> None:
    _write_split(tmp_path / "train.text.jsonl", "train")
    _write_split(tmp_path / "dev.text.jsonl", "dev")
    lines: list[str] = []
    scores = train(
        tmp_path / "train.jsonl",
        tmp_path / "dev.jsonl",
        tmp_path / "model",
        epochs=2,
        learn_rate=0.001,
        log=lines.append,
    )
    assert set(scores) >= {"precision", "recall", "f1"}
    assert any(line.startswith("epoch  1") for line in lines)
    nlp = build_pipeline(model_dir=tmp_path / "model")
    assert NER_NAME in nlp.pipe_names
    # The recogniser comes after the parser: its tag and dependency features are set.
    assert nlp.pipe_names.index(NER_NAME) > nlp.pipe_names.index("parser")
    attrs = nlp.get_pipe_config(NER_NAME)["model"]["tok2vec"]["embed"]["attrs"]
    assert attrs[-len(SYNTAX_ATTRS) :] == list(SYNTAX_ATTRS)
    nlp(ABSTRACTS[0][0])  # runs end to end
