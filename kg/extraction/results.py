"""The ``kg_results`` component: each number of a claim tied to the metric it measures.

A claim sentence such as "reduces GPU memory usage by 72% and reaches 47.7 mAP
on Gen1" carries two results; a claim's ``values`` cannot say which number goes
with which metric. The component finds, for every value of a claim sentence,
the metric phrase it measures, from the syntax around it:

* right after the number: "47.7 mAP", "2.56× speedup", "2% higher accuracy",
  "a 4% improvement in the F1 score";
* right before it: "MAE 6.22", "FID: 1.59", "accuracy of 95.42%", "success
  rates up to 20%";
* through the verb: "reduces GPU memory usage by 72%", "increases pass@32
  from 22.58% to 25.81%".

It also marks relative changes ("+5.48%", "×46", "by 30%", "30% fewer") and
numbers of a baseline ("from 55.2% …", "vs. 37%"). The word lists are data
(``patterns/results.json``). :func:`kg.extraction.result_assembly.assemble_results`
turns the marks into :class:`~kg.model.Result` records with the paper's entities.
"""

from __future__ import annotations

import json
import re
from importlib import resources

from spacy.language import Language
from spacy.tokens import Doc, Span, Token
from spacy.util import registry

from kg.extraction.result_datasets import declared, find_dataset, shared_datasets
from kg.extraction.result_roles import Roles
from kg.extraction.spans import LEADING_DROP, has_letter
from kg.extraction.values import BARE_NUMBER, find_values

if not Doc.has_extension("kg_results"):
    Doc.set_extension("kg_results", default=None)

_YEAR = re.compile(r"(?:19|20)\d\d")
_DIMENSION = re.compile(r"\s*\d")
_NAME_PART = re.compile(r"[A-Z][A-Za-z]*")
_DIMENSION_BEFORE = re.compile(r"\d\s*[x×]\s*$")
_AT_K = re.compile(r"(?:pass|recall|hit|acc|precision|ndcg|success)@\d+", re.IGNORECASE)
# Not metric words even when they head a phrase after a number.
_NOT_METRIC = frozenset(["k", "m", "b", "x", "fold", "times", "order", "orders", "%"])


@registry.misc("kg.result_words.v1")
def result_words_v1() -> dict[str, list[str]]:
    """Word lists of the result finder: metric heads, count nouns, relative cues."""
    path = resources.files("kg.extraction") / "patterns" / "results.json"
    return json.loads(path.read_text("utf-8"))


class ResultFinder:
    """Marks every value of a claim sentence with its metric tokens and its role.

    Writes ``doc._.kg_results``: ``(value start char, value end char, metric start
    token, metric end token, relative, baseline, dataset start token, dataset end
    token, dataset declared)`` tuples, -1 for no metric or dataset; "declared" when
    the text calls the dataset one ("the WikiTQ dataset").
    Plain tuples survive the pickling of ``n_process > 1``.
    """

    def __init__(self, nlp: Language, name: str, *, words: dict[str, list[str]]) -> None:
        self.name = name
        self.heads = frozenset(w.lower() for w in words["metric_heads"])
        self.weak = frozenset(words["weak_metric_heads"])
        self.acronyms = frozenset(words["metric_acronyms"])
        self.counts = frozenset(words["count_nouns"])
        self.roles = Roles(words)
        self.bridge_after = frozenset(words["bridge_after"])
        self.bridge_before = frozenset(words["bridge_before"])
        self.improvement = frozenset(words["improvement_words"])
        self.change_verbs = frozenset(words["change_verbs"])
        self.dataset_heads = frozenset(words["dataset_heads"])
        self.vague = frozenset(words["vague_measures"])
        # The head tokens of the recognised tasks of the document being read.
        self.task_tokens: set[int] = set()
        self.metric_drop = frozenset(words["metric_drop"])
        self.metric_tails = frozenset(words["metric_tails"])
        self.dataset_cues = frozenset(words["dataset_cues"])
        self.not_units = frozenset(words["not_units"])

    # ------------------------------------------------------------ metric phrases

    def _metric_token(self, tok: Token, metric_tokens: set[int], *, strict: bool = False) -> bool:
        """Whether a token can head a metric phrase.

        ``strict`` ignores the typer's metric mentions, which are right more
        often next to a number than far from it.
        """
        if tok.text in self.acronyms or _AT_K.fullmatch(tok.text):
            return True
        low = tok.lower_
        if low in self.vague:  # "13–38% average performance" measures nothing named
            return False
        # "scores" alone says nothing; "alignment scores" does
        if low in self.weak and not any(
            c.dep_ in ("compound", "amod") and c.i < tok.i for c in tok.children
        ):
            return False
        if not strict and tok.i in metric_tokens:
            return True
        return (
            tok.pos_ not in ("VERB", "AUX", "ADP")
            and low in self.heads
            and (low not in _NOT_METRIC)
        )

    def _phrase(self, doc: Doc, head: Token) -> Span:
        """The noun phrase headed by a metric word, without determiners and numbers.

        A hyphenated compound is one word, kept or dropped whole: "keyword-based
        ASR", not "based ASR"; "zero-shot returns" loses "zero" and so "zero-shot".
        """
        start = head.i
        while start > 0:
            prev = doc[start - 1]
            glued = start - 2 >= 0 and doc[start - 2].text == "-" and not doc[start - 2].whitespace_
            if (
                prev.dep_ in ("compound", "amod", "nmod")
                and prev.head.i >= start
                or (prev.text == "-" and not prev.whitespace_ and start - 2 >= 0)
                or glued  # "top-1 accuracy": the "1" belongs to "top-"
            ):
                start -= 1
                continue
            break
        start = _compound_start(doc, start)
        # Keep "X of Y" out: metric phrases are short; keep a trailing acronym like "pass@32".
        end = head.i + 1
        while (
            start < end - 1
            and (
                doc[start].lower_ in LEADING_DROP
                or doc[start].like_num
                or doc[start].is_punct
                or doc[start].lower_ in self.bridge_after
                or doc[start].lower_ in self.metric_drop  # "state-of-the-art FID", "50-step FID"
                or doc[start].text[:1].isdigit()
                # "~5x compute", "7.8%-25% training time": no name starts without a letter
                or not has_letter(doc[start].text)
                # "greater stability", "10× smaller index size": a comparison states the result
                or doc[start].tag_ in ("JJR", "RBR")
            )
        ):
            start += 1
            # the hyphen and the next part of a compound go with the part dropped
            while start + 2 < end and doc[start].text == "-" and not doc[start - 1].whitespace_:
                start += 2
        # "state-of-the-art FID": a hyphenated judgement is dropped whole
        glued = start
        while glued + 2 < end and doc[glued + 1].text == "-" and not doc[glued].whitespace_:
            glued += 2
        if glued > start and doc[start : glued + 1].text.lower() in self.metric_drop:
            start = glued + 1
        # "FID score", "F1-score": a generic tail after a named metric names the same
        # metric, so that one leaderboard holds both wordings
        if end - start >= 2 and doc[end - 1].lower_ in self.metric_tails:
            k = end - 2
            if k > start and doc[k].text == "-" and not doc[k - 1].whitespace_:
                k -= 1
            if k == start and (doc[k].text in self.acronyms or _AT_K.fullmatch(doc[k].text)):
                end = k + 1
        return doc[start:end]

    def _right(self, doc: Doc, end: int, sent: Span, metric_tokens: set[int]) -> Span | None:
        i = end
        while (
            i < sent.end
            and i < end + 6
            and (
                doc[i].text in self.bridge_after
                or doc[i].lower_ in self.bridge_after
                # "a 4% improvement in the F1 score", "5.80% in Exact Match"
                or (
                    doc[i].lower_ == "in"
                    and (
                        doc[i - 1].lower_ in self.improvement
                        or i - 1 < end
                        or doc[i - 1].text == "%"
                    )
                )
            )
        ):
            i += 1
        # "a 95% reduction in visual tokens": what a change is "in" is what was measured,
        # whatever its head word
        if i - 2 >= end and doc[i - 1].lower_ == "in" and doc[i - 2].lower_ in self.improvement:
            measured = self._object(doc[i - 1], "pobj")
            if measured is not None and measured.i < sent.end:
                return self._phrase(doc, measured)
        # "18.3% on automated metrics": after "on" only a metric word, not a name the
        # typer guessed (most "on X" after a number name a dataset)
        strict = i < sent.end and doc[i].lower_ == "on"
        if strict:
            i += 1
        # Walk the phrase that starts at i to its head noun.
        j = i
        while j < sent.end and j < i + 5:
            tok = doc[j]
            if self._metric_token(tok, metric_tokens, strict=strict):
                nxt = doc[j + 1] if j + 1 < sent.end else None
                if (
                    nxt is not None
                    and self._metric_token(nxt, metric_tokens)
                    and nxt.pos_
                    in (
                        "NOUN",
                        "PROPN",
                    )
                ):
                    j += 1
                    continue
                return self._phrase(doc, tok)
            # "on automated metrics": a participle modifying the head is part of the phrase
            participle = tok.pos_ == "VERB" and tok.dep_ == "amod"
            if (
                tok.pos_ not in ("NOUN", "PROPN", "ADJ", "PUNCT", "X", "NUM") and not participle
            ) or tok.text in ",;(":
                return None
            j += 1
        return None

    def _object(self, tok: Token, dep: str) -> Token | None:
        """The noun a token governs as ``dep`` ("pobj", "dobj") when it can name what
        was measured: not a pronoun, not a vague word ("performance"), not a task."""
        found = next(
            (c for c in tok.children if c.dep_ == dep and c.pos_ in ("NOUN", "PROPN")),
            None,
        )
        if found is None or found.lower_ in self.vague or found.i in self.task_tokens:
            return None
        return found

    def _left(self, doc: Doc, start: int, sent: Span, metric_tokens: set[int]) -> Span | None:
        i = start - 1
        while (
            i >= sent.start
            and i > start - 5
            and (doc[i].text in self.bridge_before or doc[i].lower_ in self.bridge_before)
        ):
            i -= 1
        if i >= sent.start and self._metric_token(doc[i], metric_tokens):
            return self._phrase(doc, doc[i])
        # "pass@32 on ProofNet-Test increases from 22.58%": a metric before "on <dataset>"
        for k in range(i, max(sent.start, i - 5) - 1, -1):
            if doc[k].lower_ in ("on", "for") and k - 1 >= sent.start:
                if self._metric_token(doc[k - 1], metric_tokens, strict=True):
                    return self._phrase(doc, doc[k - 1])
                break
        return None

    def _through_verb(self, tok: Token, metric_tokens: set[int]) -> Span | None:
        doc = tok.doc
        node = tok
        for _ in range(7):
            head = node.head
            if head.i == node.i:
                return None
            if head.pos_ in ("VERB", "AUX"):
                for child in head.children:
                    if child.dep_ in ("dobj", "nsubj", "nsubjpass", "attr") and self._metric_token(
                        child, metric_tokens
                    ):
                        return self._phrase(doc, child)
                # "improving fluency by +5.48%": a change verb's object is what changed by
                # the amount, whatever its head word
                if node.lower_ == "by" and head.lemma_.lower() in self.change_verbs:
                    changed = self._object(head, "dobj")
                    if changed is not None:
                        return self._phrase(doc, changed)
                # "perplexity ranging from 62.2 to 18.4": the verb qualifies the metric
                if head.dep_ == "acl" and self._metric_token(head.head, metric_tokens):
                    return self._phrase(doc, head.head)
                return None
            if (
                head.pos_ in ("NOUN", "PROPN")
                and self._metric_token(head, metric_tokens, strict=True)
                and (head.lower_ not in self.weak or node.dep_ in ("nummod", "compound"))
            ):
                return self._phrase(doc, head)
            node = head
        return None

    # ------------------------------------------------------------ values

    def _values(self, doc: Doc, sent: Span) -> list[tuple[Span, str | None, bool, int, int]]:
        """The value spans of a sentence, with their unit, whether they are bare and
        their exact characters (a token may hold more: "1.6×." is one token)."""
        out: list[tuple[Span, str | None, bool, int, int]] = []
        taken: set[int] = set()
        for v in find_values(sent.text):
            if v.number is None or (v.unit == "×" and _DIMENSION.match(sent.text, v.end)):
                continue  # "256×256", "6×6 mazes": a size, not a speed-up
            if _DIMENSION_BEFORE.search(sent.text, 0, v.start):
                continue  # the second side of "9×9 Go"
            span = doc.char_span(
                sent.start_char + v.start, sent.start_char + v.end, alignment_mode="expand"
            )
            if span is None:
                continue
            out.append((span, v.unit, False, sent.start_char + v.start, sent.start_char + v.end))
            taken.update(range(span.start, span.end))
        for tok in sent:
            if tok.i in taken or not BARE_NUMBER.fullmatch(tok.text):
                continue
            if _YEAR.fullmatch(tok.text):
                continue
            prev = doc[tok.i - 1] if tok.i > sent.start else None
            if prev is not None and not prev.whitespace_ and prev.text not in "(=:~∼≈":
                continue  # "Qwen2.5", "GPT-4": part of a name
            nxt = doc[tok.i + 1] if tok.i + 1 < sent.end else None
            if nxt is not None and not tok.whitespace_ and nxt.text not in ")%,;:.":
                continue
            if any(t is not None and t.text in ("×", "x") for t in (prev, nxt)):
                continue  # "512 × 512": a size
            if (
                prev is not None
                and _NAME_PART.fullmatch(prev.text)
                and "." not in tok.text
                and prev.text not in self.acronyms
                and prev.lower_ not in self.heads
            ):
                continue  # "MATH 500", "Llama 3": the end of a name, not "FID 2", "Recall 95"
            out.append((doc[tok.i : tok.i + 1], None, True, tok.idx, tok.idx + len(tok.text)))
        out.sort(key=lambda t: t[0].start)
        return out

    def __call__(self, doc: Doc) -> Doc:
        # The head word of each recognised metric mention, unless the mention holds a
        # number ("MAE 6.22 year" is the typer's mistake, not a metric)
        metric_tokens = {
            span.end - 1
            for span in doc.spans.get("kg_entities", [])
            if span.label_ == "Metric" and not any(t.like_num for t in span)
        }
        self.task_tokens = {
            span.end - 1 for span in doc.spans.get("kg_entities", []) if span.label_ == "Task"
        }
        found: list[tuple[int, int, int, int, bool, bool, int, int, bool]] = []
        for claim in doc.spans.get("kg_claims", []):
            sent = claim.sent if claim.start < len(doc) else claim
            marks: list[tuple[Span, Span | None, str | None, bool]] = []
            chars: dict[int, tuple[int, int]] = {}
            for span, unit, bare, c_start, c_end in self._values(doc, claim):
                if unit in self.not_units or (unit and unit.lower() in self.counts):
                    continue  # "9 USD", "4 bits": a price or a size, not a score
                enumerator = (
                    bare
                    and span.start > sent.start
                    and doc[span.start - 1].text == "("
                    and span.end < sent.end
                    and doc[span.end].text == ")"
                )
                if enumerator:
                    continue  # "(1)": an enumerator
                chars[span.start] = (c_start, c_end)
                metric = self._left(doc, span.start, sent, metric_tokens)
                nxt = doc[span.end] if span.end < sent.end else None
                if unit and unit.lower() in self.counts:
                    nxt = doc[span.end - 1]  # "8 NFEs": the unit is what is counted
                if nxt is not None and nxt.lower_ in self.counts and unit != "%" and metric is None:
                    continue  # "20 samples", "4× more tokens": a count, not a score
                # "28 tool calling turns" counts turns, also in "a 29.9% success rate
                # with 28 … turns"; "MAE 6.22 years" is the MAE's
                if (
                    bare
                    and (metric is None or doc[span.start - 1].lower_ == "with")
                    and self.roles.counts_noun(doc, span, sent)
                ):
                    continue
                right = self._right(doc, span.end, sent, metric_tokens)
                # "47.7 mAP on Gen1" reads rightwards; "MAE 6.22 years" leftwards; a unit
                # that names a metric ("30.1 AP") before a metric further left
                if right is None and unit and unit in self.acronyms:
                    right = doc[span.end - 1 : span.end]
                metric = right or metric
                if (
                    metric is None
                    and (not bare or span[0].head.pos_ == "ADP")
                    and not self._share_of(doc, span, sent)
                ):
                    metric = self._through_verb(span[0], metric_tokens)
                marks.append((span, metric, unit, bare))
            self._share(doc, marks)
            # "higher attack success rates ..., improving from 5.18% to 32.05% on
            # AgentDojo": a number tied to no metric takes the one its sentence names
            lone = self._lone_metric(doc, sent, metric_tokens)
            # "18.9% of the cache", "100% of full-KV performance": a share of something
            # else, not a score in the sentence's metric
            marks = [
                (v, m if m or b or self._share_of(doc, v, sent) else lone, u, b)
                for v, m, u, b in marks
            ]
            relative = [self.roles.relative(doc, v, u, sent) for v, _, u, _ in marks]
            for k in range(1, len(marks)):
                # "by **7.34%** and **1.04%**": coordinated numbers share their role
                between = {t.text for t in doc[marks[k - 1][0].end : marks[k][0].start]}
                if relative[k - 1] and between <= {"and", ",", "*", "**", "or"}:
                    relative[k] = True
            datasets = shared_datasets(
                doc, [(v, find_dataset(doc, v, m, sent, self.dataset_cues)) for v, m, _, _ in marks]
            )
            for (span, metric, _unit, bare), rel, dataset in zip(
                marks, relative, datasets, strict=True
            ):
                if bare and metric is None:
                    continue
                found.append(
                    (
                        *chars[span.start],
                        metric.start if metric is not None else -1,
                        metric.end if metric is not None else -1,
                        rel,
                        self.roles.baseline(doc, span, sent),
                        dataset.start if dataset is not None else -1,
                        dataset.end if dataset is not None else -1,
                        declared(doc, dataset, sent, self.dataset_heads),
                    )
                )
        doc._.kg_results = found
        return doc

    @staticmethod
    def _share_of(doc: Doc, value: Span, sent: Span) -> bool:
        """Whether a number is a share of something: "20% of the training data"."""
        return value.end < sent.end and doc[value.end].lower_ == "of"

    def _lone_metric(self, doc: Doc, sent: Span, metric_tokens: set[int]) -> Span | None:
        """The sentence's metric phrase when it names exactly one, else None."""
        phrases = {
            self._phrase(doc, doc[i]).text.lower(): self._phrase(doc, doc[i])
            for i in metric_tokens
            if sent.start <= i < sent.end
        }
        return next(iter(phrases.values())) if len(phrases) == 1 else None

    @staticmethod
    def _share(doc: Doc, marks: list[tuple[Span, Span | None, str | None, bool]]) -> None:
        """Coordinated values share a metric: "3.46% and 5.80% in Exact Match"."""
        for _ in range(2):
            for k in range(len(marks)):
                span, metric, unit, bare = marks[k]
                if metric is not None:
                    continue
                for other in (k + 1, k - 1):
                    if not 0 <= other < len(marks) or marks[other][1] is None:
                        continue
                    o = marks[other][0]
                    lo, hi = (span, o) if other > k else (o, span)
                    # "from 22.58% to **25.81%**": emphasis marks do not separate values
                    between = [t.lower_ for t in doc[lo.end : hi.start] if t.text.strip("*")]
                    if len(between) <= 3 and all(
                        w in ("and", ",", "or", "to", "→", "->", "vs", "vs.", "(", ")", "from")
                        for w in between
                    ):
                        marks[k] = (span, marks[other][1], unit, bare)
                        break


def _compound_start(doc: Doc, i: int) -> int:
    """The first token of the hyphenated compound token ``i`` ends ("keyword-based")."""
    while i >= 2 and doc[i - 1].text == "-" and not doc[i - 1].whitespace_:
        if doc[i - 2].whitespace_:
            break
        i -= 2
    if i >= 1 and doc[i].text == "-" and not doc[i - 1].whitespace_:
        i -= 1
    return i


@Language.factory(
    "kg_results",
    default_config={"words": {"@misc": "kg.result_words.v1"}},
    assigns=["doc._.kg_results"],
    requires=["doc.spans", "token.dep"],
)
def make_results(nlp: Language, name: str, *, words: dict[str, list[str]]) -> ResultFinder:
    """Tie each number of a claim sentence to its metric and mark relative changes."""
    return ResultFinder(nlp, name, words=words)
