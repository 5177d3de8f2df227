"""The ``kg_enumerations`` component: names listed as datasets are datasets.

The typer decides a name's type from the words around each mention, and names
of benchmarks that look like model names ("MATH500", "AIME24", "InfoSeek") are
often called methods even where the sentence says what they are: "benchmarks
(AIME25, GSM8K, MATH500)", "on the MATH, AMC23, AIME24 and AIME25 datasets",
"benchmarks such as HybridQA and OTT-QA". A list introduced by, or ending in, a
dataset head noun is a list of datasets; so is a list most of whose members the
earlier components already call datasets. The component retypes the members
of such a list that the typer called a method or a task, and adds the named
members nobody recognised, unless a member names a model ("Qwen2.5-7B") or
what the paper itself proposes. The corpus then sees the name voted a dataset
where it is listed as one, and a result measured "on MATH500" keeps its
dataset when consolidation types the node.

The words are data (``patterns/enumerations.json``).
"""

from __future__ import annotations

import json
import re
from importlib import resources

from spacy.language import Language
from spacy.tokens import Doc, Span, Token
from spacy.util import registry

from kg.extraction.canonical import canonical_key
from kg.extraction.learned import is_model_name
from kg.extraction.values import BARE_NUMBER

SOURCE = "enumeration"
"""The ``kb_id_`` of the spans this component types (their provenance)."""
_MAX_NAME = 6


@registry.misc("kg.enumeration_words.v1")
def enumeration_words_v1() -> dict[str, list[str]]:
    """Word lists of the enumeration typer: dataset heads, introducers, separators."""
    path = resources.files("kg.extraction") / "patterns" / "enumerations.json"
    words = json.loads(path.read_text("utf-8"))
    return {k: v for k, v in words.items() if not k.startswith("_")}


def _named(tok: Token) -> bool:
    """Whether a token can be part of a benchmark name: a capital after its first
    letter ("GSM8K", "HumanEval"), letters with digits ("AIME24"), or a proper noun
    that is not a sentence's first word (so "The" or "We" is none)."""
    text = tok.text
    return (
        any(c.isupper() for c in text[1:])
        or (any(c.isdigit() for c in text) and any(c.isalpha() for c in text))
        or (text[:1].isupper() and tok.pos_ == "PROPN" and not tok.is_sent_start)
    )


class EnumerationTyper:
    """Retypes the members of dataset lists in ``doc.spans["kg_entities"]``."""

    def __init__(self, nlp: Language, name: str, *, words: dict[str, list[str]]) -> None:
        self.name = name
        self.heads = frozenset(words["dataset_heads"])
        self.introducers = frozenset(words["introducers"])
        self.separators = frozenset(words["separators"])
        self.retype = frozenset(words["retype"])
        # "LiveCodeBench", "SWE-bench Verified", "HybridQA": the ending after a
        # separator or a lower-case letter or digit (a name, not "QA" alone)
        endings = "|".join(re.escape(w) for w in words["benchmark_suffixes"])
        self.benchmark = re.compile(rf"(?<=[a-z0-9\-_ ])(?:{endings})(?:[-_ ]?[vV]?\d+)?$")

    def __call__(self, doc: Doc) -> Doc:
        marks = _Marks(doc)
        changed: dict[int, Span] = {}
        for sent in doc.sents:
            i = sent.start
            while i < sent.end:
                items = self._list(marks, i, sent)
                if not items:
                    i += 1
                    continue
                evidence = self._dataset_list(marks, items, sent)
                for start, end in items if evidence is not None else []:
                    span = self._retyped(
                        marks, start, end, new=evidence == "head", single=len(items) == 1
                    )
                    if span is not None:
                        changed[start] = span
                i = items[-1][1]
        # A name shaped like a benchmark is one, as a model name is a model (a task
        # keeps its type: "VideoQA" also names the task)
        for start, span in marks.entities.items():
            if (
                start not in changed
                and span.label_ == "Method"
                and self.benchmark.search(span.text)
                and not is_model_name(span)
            ):
                changed[start] = _dataset(span)
        # The typer decides a name once per abstract: a name listed as a dataset is one
        # in its other sentences too ("… on MATH500" after "benchmarks (GSM8K, MATH500)").
        listed = {canonical_key(s.text) for s in changed.values()}
        for start, span in marks.entities.items():
            if (
                start not in changed
                and span.label_ in self.retype
                and canonical_key(span.text) in listed
            ):
                changed[start] = _dataset(span)
        if changed:
            kept = [s for s in doc.spans.get("kg_entities", []) if s.start not in changed]
            doc.spans["kg_entities"] = sorted([*kept, *changed.values()], key=lambda s: s.start)
        return doc

    # ------------------------------------------------------------ lists

    def _item(self, marks: _Marks, i: int, sent: Span) -> tuple[int, int] | None:
        """The list member starting at token i: a recognised span, else a name run."""
        doc = marks.doc
        known = marks.entities.get(i) or marks.proposed.get(i)
        if known is not None and known.end <= sent.end:
            return known.start, known.end
        j = i
        while j < sent.end and j < i + _MAX_NAME:
            tok = doc[j]
            glue = tok.text in "-/." and j > i and not doc[j - 1].whitespace_
            if _named(tok) or (glue and j + 1 < sent.end and _named(doc[j + 1])):
                j += 1
                continue
            break
        if j == i or BARE_NUMBER.fullmatch(doc[i:j].text):
            return None
        return i, j

    def _list(self, marks: _Marks, i: int, sent: Span) -> list[tuple[int, int]]:
        """The members of the list that starts at token i (one member or more)."""
        starts_known = (marks.entities.get(i) or marks.proposed.get(i)) is not None
        if i > sent.start and (i - 1) in marks.covered and not starts_known:
            return []  # inside a recognised span
        first = self._item(marks, i, sent)
        if first is None:
            return []
        items = [first]
        while True:
            k = items[-1][1]
            # ", and": at most two separator tokens between members
            seps = 0
            while k < sent.end and marks.doc[k].lower_ in self.separators and seps < 2:
                k += 1
                seps += 1
            nxt = self._item(marks, k, sent) if seps else None
            if nxt is None:
                return items
            items.append(nxt)

    def _dataset_list(self, marks: _Marks, items: list[tuple[int, int]], sent: Span) -> str | None:
        """What says the members are datasets: "head" for a dataset head right after
        the list ("the A and B benchmarks") or before it ("benchmarks such as A, B"),
        "members" when most members are already called datasets, else None."""
        doc = marks.doc
        end = items[-1][1]
        if end < sent.end and doc[end].lower_ in self.heads:
            # "a CT dataset" describes a dataset by its domain; "the MATH500 dataset" names one
            start = items[0][0]
            if len(items) > 1 or start == sent.start or doc[start - 1].lower_ not in ("a", "an"):
                return "head"
        k, steps = items[0][0] - 1, 0
        while k >= sent.start and steps < 4 and doc[k].lower_ in self.introducers:
            k, steps = k - 1, steps + 1
        if steps and k >= sent.start and doc[k].lower_ in self.heads:
            return "head"
        datasets = sum(
            1
            for start, end in items
            if (s := marks.entities.get(start)) is not None
            and s.end == end
            and s.label_ == "Dataset"
        )
        # Two named datasets at least, and more than half: one mistyped member of a
        # pair ("NVS and 3D") must not pull the other along.
        return "members" if datasets >= 2 and datasets * 2 > len(items) else None

    def _retyped(
        self, marks: _Marks, start: int, end: int, *, new: bool, single: bool
    ) -> Span | None:
        """A member as a dataset span, or None when it keeps what it is; ``new``:
        whether a member nobody recognised may become one; ``single``: whether it is
        the list's only member."""
        if start in marks.proposed:
            return None  # the paper's own benchmark is typed by the proposal rules
        span = marks.doc[start:end]
        if is_model_name(span) or not any(_named(t) for t in span):
            return None
        if any(c in span.text for c in "([~"):
            return None  # "benchmarks~(AIME25": a tokenisation slip, not a name
        known = marks.entities.get(start)
        if known is not None:
            if known.label_ not in self.retype or known.end != end:
                return None
            if single and known.label_ == "Task":
                return None  # "a high-resolution CT dataset": a dataset of a task's data
            return _dataset(known)
        if not new or any(i in marks.covered for i in range(start, end)):
            return None
        return _dataset(span)


class _Marks:
    """What the earlier components marked in a document, by start token."""

    def __init__(self, doc: Doc) -> None:
        self.doc = doc
        self.entities = {s.start: s for s in doc.spans.get("kg_entities", [])}
        self.proposed = {s.start: s for s in doc.spans.get("kg_proposed", [])}
        self.covered = {
            i
            for s in [*self.entities.values(), *self.proposed.values()]
            for i in range(s.start, s.end)
        }


def _dataset(span: Span) -> Span:
    """The span typed a dataset by this component."""
    return Span(span.doc, span.start, span.end, label="Dataset", kb_id=SOURCE)


@Language.factory(
    "kg_enumerations",
    default_config={"words": {"@misc": "kg.enumeration_words.v1"}},
    assigns=["doc.spans"],
    requires=["doc.spans"],
)
def make_enumerations(nlp: Language, name: str, *, words: dict[str, list[str]]) -> EnumerationTyper:
    """Type the members of dataset lists ("benchmarks (GSM8K, MATH500)") as datasets."""
    return EnumerationTyper(nlp, name, words=words)
