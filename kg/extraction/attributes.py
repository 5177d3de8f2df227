"""Token attributes the English model sets, computed the same, faster.

``kg_attribute_ruler``: the English pipeline's ``attribute_ruler`` (179 rules:
the tag map, pronoun morphology, auxiliaries) runs every rule's ``Matcher``
pattern at every token, and was a tenth of the whole extraction's CPU (6 of 61
ms per abstract). Nearly all its rules test one token for equal values (``TAG``,
``LOWER``, ``DEP``, ``IS_SPACE``, or membership in a list), so this subclass
looks those up by the token's tag and lowercase form and tests only the rules
that can match, remembering what each combination of those values matched; the
few multi-token rules and any other pattern keep a ``Matcher``, run only on a
doc with a token where one of them can start. It finds exactly the matches
spaCy's finds and applies them the same way (``AttributeRuler.set_annotations``,
in rule order).

``kg_lemmatizer``: the English rule lemmatizer, remembering each lemma by what
the rules read (form, part of speech, morphology), and looking words up in its
tables' word index as a set, not a list.

Every token attribute comes out the same: tests compare both with spaCy's on
the sample corpus and on sentences made to hit each kind of rule.
"""

from __future__ import annotations

import re
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, cast

import numpy
from spacy.attrs import DEP, IS_SPACE, LEMMA, LOWER, MORPH, ORTH, POS, TAG
from spacy.errors import Errors, Warnings
from spacy.lang.en.lemmatizer import EnglishLemmatizer
from spacy.language import Language
from spacy.matcher import Matcher
from spacy.pipeline import AttributeRuler
from spacy.tokens import Doc, Token
from spacy.vocab import Vocab

_COLUMNS = {"TAG": 0, "LOWER": 1, "DEP": 2, "IS_SPACE": 3}
"""The token attributes an indexed rule may test, as columns of ``Doc.to_array``."""
_ATTRS = [TAG, LOWER, DEP, IS_SPACE]
_LEMMA_ATTRS = [ORTH, POS, MORPH, LEMMA]

Test = tuple[int, str, Any]
"""(column, "==" | "in" | "not in" | "regex", a hash, a frozenset of hashes or a
compiled pattern)."""
Rule = tuple[int, int, list[Test]]
"""(rule, match id, the tests of its one token)."""


class IndexedAttributeRuler(AttributeRuler):
    """An ``AttributeRuler`` whose single-token rules are found by lookup."""

    MEMO_SIZE = 200_000
    """Tokens' matches remembered (by the attributes the rules test) before the
    memo starts again."""

    def __init__(self, vocab: Vocab, name: str = "kg_attribute_ruler", **kwargs: Any) -> None:
        super().__init__(vocab, name, **kwargs)
        self._compiled = False
        self._by_lower: dict[int, list[Rule]] = {}
        self._by_tag: dict[int, list[Rule]] = {}
        self._always: list[Rule] = []
        self._rest = Matcher(vocab)
        self._starts: list[list[Test]] = []
        self._rest_always = False
        self._hits: dict[tuple[int, ...], tuple[tuple[tuple[int, int], ...], bool]] = {}

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
        hits, single = self._hits, self._single
        if len(hits) > self.MEMO_SIZE:
            hits.clear()
        started = self._rest_always
        for i, row in enumerate(columns):
            key = tuple(row)
            memo = hits.get(key)
            if memo is None:
                memo = hits[key] = single(row, doc.vocab.strings)
            found.update((rule, match_id, i, i + 1) for rule, match_id in memo[0])
            started = started or memo[1]
        # The Matcher walks every token; it can only match where a pattern starts.
        if started:
            for match_id, start, end in self._rest(doc, allow_missing=True):
                found.add((int(self.vocab.strings[match_id]), match_id, start, end))
        return sorted(found)

    def _single(self, row: list[int], strings: Any) -> tuple[tuple[tuple[int, int], ...], bool]:
        """What a token with these attributes matches: its single-token rules as
        (rule, match id), and whether a rule the Matcher keeps may start there
        (``strings``: the doc's, which a pattern's regular expression reads)."""
        rules = tuple(
            (rule, match_id)
            for rule, match_id, tests in (
                *self._by_lower.get(row[1], ()),
                *self._by_tag.get(row[0], ()),
                *self._always,
            )
            if _passes(row, tests, strings)
        )
        return rules, any(_passes(row, tests, strings) for tests in self._starts)

    def _compile(self) -> None:
        """Split the rules into indexed single-token tests and the rest (a Matcher),
        with the tests a token must pass for one of the rest to start there."""
        self._by_lower, self._by_tag, self._always = defaultdict(list), defaultdict(list), []
        self._rest, self._starts, self._rest_always = Matcher(self.vocab), [], False
        strings = self.vocab.strings
        for rule, row in enumerate(self.patterns):
            key = strings.add(str(rule))  # the rule's match id, as AttributeRuler.add makes it
            patterns: list[list[dict[str, Any]]] = row["patterns"]  # type: ignore[assignment]
            for pattern in patterns:
                tests = _tests(pattern[0], strings) if pattern else None
                if tests is None or len(pattern) > 1:
                    self._rest.add(key, [pattern])
                    # A first token that may be skipped ("OP") leaves no test to start on.
                    if tests is None or "OP" in pattern[0]:
                        self._rest_always = True
                    else:
                        self._starts.append(tests)
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
        self._hits = {}
        self._compiled = True


def _tests(spec: dict[str, Any], strings: Any) -> list[Test] | None:
    """One token's pattern as value tests, or None when it needs the Matcher."""
    tests: list[Test] = []
    for attr, want in spec.items():
        column = _COLUMNS.get(attr)
        if column is None:
            return None
        if isinstance(want, bool) and attr == "IS_SPACE":
            tests.append((column, "==", int(want)))
        elif isinstance(want, str) and attr != "IS_SPACE":
            tests.append((column, "==", strings.add(want)))
        elif isinstance(want, dict) and len(want) == 1 and attr != "IS_SPACE":
            ((op, values),) = want.items()
            if op == "REGEX" and isinstance(values, str):
                # The Matcher's own test: re.search on the attribute's string.
                tests.append((column, "regex", re.compile(values)))
                continue
            if op not in ("IN", "NOT_IN") or not all(isinstance(v, str) for v in values):
                return None
            hashes = frozenset(strings.add(v) for v in values)
            tests.append((column, "in" if op == "IN" else "not in", hashes))
        else:
            return None
    return tests


def _passes(row: list[int], tests: list[Test], strings: Any) -> bool:
    for column, op, want in tests:
        have = row[column]
        if op == "==":
            if have != want:
                return False
        elif op == "regex":
            if not want.search(strings[have]):
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
        self._index: dict[str, frozenset[str]] = {}

    def initialize(self, *args: Any, **kwargs: Any) -> None:
        """As the English lemmatizer's; what was remembered from other tables is forgotten."""
        super().initialize(*args, **kwargs)
        self._memo.clear()
        self._index.clear()
        self.cache.clear()

    def rule_lemmatize(self, token: Token) -> list[str]:
        """spaCy's rule lemmatization, with each part of speech's word index as a set.

        The tables hold the index as lists (57,528 nouns): spaCy's ``form in index``
        scanned one for every rule whose suffix a word ends in, which made a word
        the memo had not seen cost about 0.1 ms. The logic is spaCy 3.8's
        ``Lemmatizer.rule_lemmatize`` line for line otherwise, so the lemmas are
        the same (``tests/test_attributes.py`` compares them with spaCy's)."""
        cache_key = (token.orth, token.pos, token.morph.key)  # type: ignore[attr-defined]
        if cache_key in self.cache:
            return self.cache[cache_key]
        string = token.text
        univ_pos = token.pos_.lower()
        if univ_pos in ("", "eol", "space"):
            if univ_pos == "":
                warnings.warn(Warnings.W108, stacklevel=2)
            return [string.lower()]
        if self.is_base_form(token):
            return [string.lower()]
        exc_table = self.lookups.get_table("lemma_exc", {})
        rules_table = self.lookups.get_table("lemma_rules", {})
        index = self._index.get(univ_pos)
        if index is None:
            index_table = self.lookups.get_table("lemma_index", {})
            index = self._index[univ_pos] = frozenset(index_table.get(univ_pos, ()))
        if not (index or exc_table.get(univ_pos) or rules_table.get(univ_pos)):
            return [string] if univ_pos == "propn" else [string.lower()]
        exceptions = exc_table.get(univ_pos, {})
        orig = string
        string = string.lower()
        forms: list[str] = []
        oov_forms = []
        for old, new in rules_table.get(univ_pos, {}):
            if string.endswith(old):
                form = string[: len(string) - len(old)] + new
                if not form:
                    pass
                elif form in index:
                    forms.insert(0, form)
                elif not form.isalpha():
                    forms.append(form)
                else:
                    oov_forms.append(form)
        forms = list(dict.fromkeys(forms))
        for form in exceptions.get(string, []):
            if form not in forms:
                forms.insert(0, form)
        if not forms:
            forms.extend(oov_forms)
        if not forms:
            forms.append(orig)
        self.cache[cache_key] = forms
        return forms

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
