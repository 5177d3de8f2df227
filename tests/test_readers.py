"""Corpus readers: every format, stable ids, and bad input reported, not raised."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from kg.model import Record, Rejected
from kg.reading.readers import derived_id, read_paths, unique
from kg.resources import sample_corpus

CHINESE = "我们提出了一种新的图学习方法，并证明它在三个基准上优于最强的基线。"

ABSTRACT = (
    "We propose a new method for graph learning and show that it outperforms the "
    "strongest baselines on three benchmarks while using less memory than prior work."
)


def records(items) -> list[Record]:  # noqa: ANN001
    return [i for i in items if isinstance(i, Record)]


def rejections(items) -> list[Rejected]:  # noqa: ANN001
    return [i for i in items if isinstance(i, Rejected)]


def test_sample_corpus_gives_37_distinct_papers() -> None:
    items = list(unique(read_paths(sample_corpus())))
    assert not rejections(items)
    papers = records(items)
    assert len(papers) == 37
    assert len({p.id for p in papers}) == 37
    # The two files share one abstract: 38 records, one repeat.
    assert len(records(read_paths(sample_corpus()))) == 38


def test_derived_id_ignores_whitespace_differences() -> None:
    assert derived_id(ABSTRACT) == derived_id("  " + ABSTRACT.replace(" ", "\n  ", 3) + "\n")
    assert derived_id(ABSTRACT) != derived_id(ABSTRACT + " More.")


def test_jsonl_fields_and_given_id(tmp_path: Path) -> None:
    path = tmp_path / "papers.jsonl"
    path.write_text(
        json.dumps(
            {
                "forum_id": "Abc123",
                "title": "T",
                "abstract": ABSTRACT,
                "year": 2026,
                "venue": "ICLR 2026 Poster",
                "keywords": ["graphs", "memory"],
                "openreview_url": "https://openreview.net/forum?id=Abc123",
            }
        )
        + "\n"
        + json.dumps({"title": "No id", "abstract": ABSTRACT + " Second."})
        + "\n",
        encoding="utf-8",
    )
    first, second = records(read_paths([path]))
    assert first.id == derived_id(ABSTRACT) and first.source_id == "Abc123"
    assert first.external_id == "Abc123" and first.year == 2026
    assert first.keywords == ("graphs", "memory")
    assert (
        first.url == "https://openreview.net/forum?id=Abc123" and first.venue == "ICLR 2026 Poster"
    )
    assert second.id == second.external_id == derived_id(ABSTRACT + " Second.")
    assert second.source_id is None


def test_json_array_and_openreview_notes(tmp_path: Path) -> None:
    v2 = {
        "id": "n1",
        "forum": "F1",
        "content": {
            "title": {"value": "Title one"},
            "abstract": {"value": ABSTRACT},
            "authors": {"value": ["A. B", "C. D"]},
            "keywords": {"value": ["x"]},
            "venue": {"value": "ICLR 2026 Oral"},
        },
    }
    v1 = {"id": "n2", "content": {"title": "Title two", "abstract": ABSTRACT + " Two."}}
    array = tmp_path / "notes.json"
    array.write_text(json.dumps([v2, v1]), encoding="utf-8")
    got = records(read_paths([array]))
    assert [r.source_id for r in got] == ["F1", "n2"]
    assert got[0].title == "Title one" and got[0].authors == ("A. B", "C. D")
    assert got[0].venue == "ICLR 2026 Oral" and got[0].url == "https://openreview.net/forum?id=F1"
    wrapped = tmp_path / "export.json"
    wrapped.write_text(json.dumps({"notes": [v2]}), encoding="utf-8")
    assert [r.source_id for r in records(read_paths([wrapped]))] == ["F1"]


def test_csv(tmp_path: Path) -> None:
    path = tmp_path / "papers.csv"
    path.write_text(
        f'id,title,abstract,authors\np1,"A, title","{ABSTRACT}","X; Y"\n', encoding="utf-8"
    )
    (paper,) = records(read_paths([path]))
    assert paper.source_id == "p1" and paper.title == "A, title" and paper.authors == ("X", "Y")


def test_bad_inputs_are_reported_with_file_and_record(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(
        b"header\n\n" + ABSTRACT.encode() + b"\n\ncaf\xe9 " + ABSTRACT.encode() + b"\n"
    )
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"\x00\x01\x02\xff\xfe binary\n")
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        "\n".join(
            [
                json.dumps({"id": "ok", "abstract": ABSTRACT}),
                json.dumps({"id": "none", "title": "no abstract"}),
                json.dumps({"id": "huge", "abstract": "word " * 1_000_000}),
                json.dumps(
                    {
                        "id": "zh",
                        "abstract": CHINESE * 3,
                    }
                ),
                json.dumps({"id": "nul", "abstract": ABSTRACT + "\u0000"}),
                "{not json",
                json.dumps(["a", "list"]),
            ]
        ),
        encoding="utf-8",
    )
    items = list(read_paths([tmp_path / "missing.txt", tmp_path, empty, latin1, junk, mixed]))
    good = records(items)
    assert [r.source_id for r in good if r.source == "mixed.jsonl"] == ["ok"]
    assert len([r for r in good if r.source == "latin1.txt"]) == 1
    reasons = {(Path(r.source).name, r.record): r.reason for r in rejections(items)}
    assert reasons[("missing.txt", 0)] == "no such file"
    assert "directory" in reasons[(tmp_path.name, 0)]
    assert reasons[("empty.jsonl", 0)] == "empty file"
    assert "UTF-8" in reasons[("latin1.txt", 2)]
    assert "UTF-8" in reasons[("junk.jsonl", 1)]
    assert reasons[("mixed.jsonl", 2)] == "no abstract"
    assert "more than" in reasons[("mixed.jsonl", 3)]
    assert "English" in reasons[("mixed.jsonl", 4)]
    assert "binary" in reasons[("mixed.jsonl", 5)]
    assert "not JSON" in reasons[("mixed.jsonl", 6)]
    assert "JSON object" in reasons[("mixed.jsonl", 7)]


def test_reading_streams_in_bounded_memory(tmp_path: Path) -> None:
    # 20,000 records (~6 MB): the reader must not hold the file or the records.
    path = tmp_path / "big.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for i in range(20_000):
            fh.write(json.dumps({"id": f"p{i}", "abstract": f"{ABSTRACT} Variant {i}."}) + "\n")
    for reader_input in (path,):
        tracemalloc.start()
        count = sum(1 for item in read_paths([reader_input]) if isinstance(item, Record))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert count == 20_000
        assert peak < 2_000_000, f"peak {peak:,} bytes while streaming"


def test_json_array_streams_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    with path.open("w", encoding="utf-8") as fh:
        fh.write("[")
        for i in range(20_000):
            fh.write(("," if i else "") + json.dumps({"id": f"p{i}", "abstract": ABSTRACT}))
        fh.write("]")
    tracemalloc.start()
    count = sum(1 for item in read_paths([path]) if isinstance(item, Record))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 20_000
    assert peak < 2_000_000, f"peak {peak:,} bytes while streaming"
