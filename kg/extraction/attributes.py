"""Token attributes the English model sets, computed the same, faster.

``kg_attribute_ruler``: the English pipeline's ``attribute_ruler`` (179 rules:
the tag map, pronoun morphology, auxiliaries) runs every rule's ``Matcher``
pattern at every token, and was a tenth of the whole extraction's CPU (6 of 61
ms per abstract). Nearly all its rules test one token for equal values (``TAG``,
``LOWER``, ``DEP``, ``IS_SPACE``, or membership in a list), so this subclass
looks those up by the token's tag and lowercase form and tests only the rules
that can match; the few multi-token rules and any other pattern keep a
``Matcher``. It finds exactly the matches spaCy's finds and applies them the same
way (``AttributeRuler.set_annotations``, in rule order).

``kg_lemmatizer``: the English rule lemmatizer, remembering each lemma by what
the rules read (form, part of speech, morphology).

Every token attribute comes out the same: tests compare both with spaCy's on
the sample corpus and on sentences made to hit each kind of rule.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, cast

import numpy
from spacy.attrs import DEP, IS_SPACE, LEMMA, LOWER, MORPH, ORTH, POS, TAG
from spacy.errors import Errors
from spacy.lang.en.lemmatizer import EnglishLemmatizer
from spacy.language import Language
from spacy.matcher import Matcher
from spacy.pipeline import AttributeRuler
from spacy.tokens import Doc
from spacy.vocab import Vocab

_COLUMNS = {"TAG": 0, "LOWER": 1, "DEP": 2, "IS_SPACE": 3}
"""The token attributes an indexed rule may test, as columns of ``Doc.to_array``."""
_ATTRS = [TAG, LOWER, DEP, IS_SPACE]
_LEMMA_ATTRS = [ORTH, POS, MORPH, LEMMA]

Test = tuple[int, str, Any]
"""(column, "==" | "in" | "not in", hash or frozenset of hashes)."""


class IndexedAttributeRuler(AttributeRuler):
    """An ``AttributeRuler`` whose single-token rules are found by lookup."""

    def __init__(self, vocab: Vocab, name: str = "kg_attribute_ruler", **kwargs: Any) -> None:
        super().__init__(vocab, name, **kwargs)
        self._compiled = False
        self._by_lower: dict[int, list[tuple[int, int, list[Test]]]] = {}
        self._by_tag: dict[int, list[tuple[int, int, list[Test]]]] = {}
        self._always: list[tuple[int, int, list[Test]]] = []
        self._rest = Matcher(vocab)

    def add(self, patterns: Iterable[Any], attrs: dict, index: int = 0) -> None:
        """As ``AttributeRuler.add``; the lookup tables are rebuilt on next use."""
        super().add(patterns, attrs, index)
        self._compiled = False

    def match(self, doc: Doc) -> list[tuple[int, int, int, int]]:
        """The same matches as ``AttributeRuler.match``: (rule, match id, start, end),
        sorted so that later rules are applied last."""
        if not self._compiled:
            self._compile()
        found: set[tuple[int, int, int, int]] = set()
        columns = doc.to_array(_ATTRS).tolist() if len(doc) else []
        by_lower, by_tag, always = self._by_lower, self._by_tag, self._always
        for i, row in enumerate(columns):
            for rule, match_id, tests in (
                *by_lower.get(row[1], ()),
                *by_tag.get(row[0], ()),
                *always,
            ):
                if _passes(row, tests):
                    found.add((rule, match_id, i, i + 1))
        for match_id, start, end in self._rest(doc, allow_missing=True):
            found.add((int(self.vocab.strings[match_id]), match_id, start, end))
        return sorted(found)

    def _compile(self) -> None:
        """Split the rules into indexed single-token tests and the rest (a Matcher)."""
        self._by_lower, self._by_tag, self._always = defaultdict(list), defaultdict(list), []
        self._rest = Matcher(self.vocab)
        strings = self.vocab.strings
        for rule, row in enumerate(self.patterns):
            key = strings.add(str(rule))  # the rule's match id, as AttributeRuler.add makes it
            patterns: list[list[dict[str, Any]]] = row["patterns"]  # type: ignore[assignment]
            for pattern in patterns:
                tests = _tests(pattern, strings) if len(pattern) == 1 else None
                if tests is None:
                    self._rest.add(key, [pattern])
                    continue
                entry = (rule, key, tests)
                lower = next((v for c, op, v in tests if c == 1 and op == "=="), None)
                tag = next((v for c, op, v in tests if c == 0 and op == "=="), None)
                tags = next((v for c, op, v in tests if c == 0 and op == "in"), None)
                if lower is not None:
                    self._by_lower[lower].append(entry)
                elif tag is not None:
                    self._by_tag[tag].append(entry)
                elif tags is not None:
                    for t in tags:
                        self._by_tag[t].append(entry)
                else:
                    self._always.append(entry)
        self._by_lower, self._by_tag = dict(self._by_lower), dict(self._by_tag)
        self._compiled = True


def _tests(pattern: list[dict[str, Any]], strings: Any) -> list[Test] | None:
    """One token's pattern as value tests, or None when it needs the Matcher."""
    tests: list[Test] = []
    for attr, want in pattern[0].items():
        column = _COLUMNS.get(attr)
        if column is None:
            return None
        if isinstance(want, bool) and attr == "IS_SPACE":
            tests.append((column, "==", int(want)))
        elif isinstance(want, str) and attr != "IS_SPACE":
            tests.append((column, "==", strings.add(want)))
        elif isinstance(want, dict) and len(want) == 1 and attr != "IS_SPACE":
            ((op, values),) = want.items()
            if op not in ("IN", "NOT_IN") or not all(isinstance(v, str) for v in values):
                return None
            hashes = frozenset(strings.add(v) for v in values)
            tests.append((column, "in" if op == "IN" else "not in", hashes))
        else:
            return None
    return tests


def _passes(row: list[int], tests: list[Test]) -> bool:
    for column, op, want in tests:
        have = row[column]
        if op == "==":
            if have != want:
                return False
        elif (have in want) != (op == "in"):
            return False
    return True


def use_in(nlp: Language) -> None:
    """Put ``kg_attribute_ruler`` and ``kg_lemmatizer`` in the places of the English
    model's ``attribute_ruler`` and ``lemmatizer``, with the same rules and tables."""
    rules = cast(AttributeRuler, nlp.get_pipe("attribute_ruler")).patterns
    cast(AttributeRuler, nlp.replace_pipe("attribute_ruler", "kg_attribute_ruler")).add_patterns(
        rules
    )
    tables = cast(EnglishLemmatizer, nlp.get_pipe("lemmatizer")).lookups
    cast(EnglishLemmatizer, nlp.replace_pipe("lemmatizer", "kg_lemmatizer")).initialize(
        lookups=tables
    )


@Language.factory(
    "kg_attribute_ruler",
    assigns=["token.pos", "token.tag", "token.morph", "token.lemma"],
    default_config={"validate": False, "scorer": {"@scorers": "spacy.attribute_ruler_scorer.v1"}},
)
def make_attribute_ruler(
    nlp: Language, name: str, validate: bool, scorer: Callable | None
) -> IndexedAttributeRuler:
    """The indexed attribute ruler (load its rules with ``add_patterns``)."""
    return IndexedAttributeRuler(nlp.vocab, name, validate=validate, scorer=scorer)


class MemoLemmatizer(EnglishLemmatizer):
    """spaCy's English rule lemmatizer, with every lemma remembered by the token's
    form, part of speech and morphology (all the rules look at). spaCy's own cache
    skips the commonest case (a base form: most nouns) and rebuilds each token's
    morphology as a dict to find it, a twentieth of the extraction's CPU."""

    MEMO_SIZE = 200_000
    """Lemmas remembered before the memo starts again (it is bounded by the vocabulary)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._memo: dict[tuple[int, int, int], int] = {}

    def __call__(self, doc: Doc) -> Doc:
        """Set the lemma of every token that has none (or all, with ``overwrite``)."""
        if not self._validated:
            self._validate_tables(Errors.E1004)
        memo, strings = self._memo, self.vocab.strings
        if len(memo) > self.MEMO_SIZE:
            memo.clear()
        columns = doc.to_array(_LEMMA_ATTRS).tolist() if len(doc) else []
        lemmas = []
        for i, (orth, pos, morph, lemma) in enumerate(columns):
            if lemma and not self.overwrite:
                lemmas.append(lemma)
                continue
            key = (orth, pos, morph)
            found = memo.get(key)
            if found is None:
                found = memo[key] = strings.add(self.lemmatize(doc[i])[0])
            lemmas.append(found)
        if lemmas:
            doc.from_array([LEMMA], cast(Any, numpy.asarray(lemmas, dtype="uint64")))
        return doc


@Language.factory(
    "kg_lemmatizer",
    assigns=["token.lemma"],
    default_config={
        "model": None,
        "mode": "rule",
        "overwrite": False,
        "scorer": {"@scorers": "spacy.lemmatizer_scorer.v1"},
    },
    default_score_weights={"lemma_acc": 1.0},
)
def make_lemmatizer(
    nlp: Language, model: Any, name: str, mode: str, overwrite: bool, scorer: Callable | None
) -> MemoLemmatizer:
    """The memoised English lemmatizer (copy its tables from the English model's)."""
    return MemoLemmatizer(nlp.vocab, model, name, mode=mode, overwrite=overwrite, scorer=scorer)
