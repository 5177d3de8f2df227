"""The indexed attribute ruler and the memoised lemmatizer set exactly what spaCy's set."""

from __future__ import annotations

import pytest
import spacy

from kg.extraction.attributes import IndexedAttributeRuler, MemoLemmatizer
from kg.extraction.pipeline import BASE_PIPELINE
from kg.reading.readers import read_paths
from kg.resources import sample_corpus

# Sentences that reach each kind of rule: the two-token ones ("gonna", "let's",
# "y'all", "ain't", "there is"), pronoun case by dependency, auxiliaries,
# "do/have" as main verbs, determiners as pronouns, "but" as an adverb, whitespace.
TRICKY = [
    "I'm gonna go; let's see, y'all ain't got ta do it. There is a cat and there are dogs.",
    "You did it, and it did me. But I gave it to you. He has done it; do you have it?",
    "Which one is that, that one? I know that it is.\n\nDo   it, but only once.",
    "We propose X.  It was shown that all of these were theirs, wasn't it?",
    "C'mon, it's nothin' and nuthin' else; ya'll see. Y all ai n't done.",
]


@pytest.fixture(scope="module")
def parsed() -> tuple[spacy.language.Language, list]:  # type: ignore[name-defined]
    nlp = spacy.load(BASE_PIPELINE, exclude=["ner", "senter"])
    texts = TRICKY + [r.abstract for r in read_paths(sample_corpus()) if hasattr(r, "abstract")]
    docs = list(nlp.pipe(texts, disable=["attribute_ruler", "lemmatizer"]))
    return nlp, docs


def test_same_matches_as_spacy(parsed) -> None:  # noqa: ANN001
    nlp, docs = parsed
    spacy_ruler = nlp.get_pipe("attribute_ruler")
    ours = IndexedAttributeRuler(nlp.vocab)
    ours.add_patterns(spacy_ruler.patterns)
    assert len(docs) > 30
    for doc in docs:
        assert ours.match(doc) == spacy_ruler.match(doc), doc.text[:60]
    # The tricky sentences do reach the rules the index cannot serve.
    assert any(m[0] != 0 and m[3] - m[2] == 2 for doc in docs[:4] for m in ours.match(doc))


def test_a_rule_added_later_is_found(parsed) -> None:  # noqa: ANN001
    nlp, docs = parsed
    ours = IndexedAttributeRuler(nlp.vocab)
    ours.add_patterns(nlp.get_pipe("attribute_ruler").patterns)
    before = ours.match(docs[0])
    ours.add([[{"LOWER": "cat", "TAG": {"IN": ["NN", "NNS"]}}]], {"LEMMA": "feline"})
    after = ours.match(docs[0])
    assert len(after) == len(before) + 1
    doc = nlp("There is a cat.")
    assert [t.lemma_ for t in ours(doc)][3] == "feline"


def test_rules_the_index_cannot_start_on_are_still_found(parsed) -> None:  # noqa: ANN001
    """A pattern whose first token may be skipped makes the Matcher run on every
    doc; a regular expression on one token is tested as the Matcher would."""
    nlp, docs = parsed
    ours = IndexedAttributeRuler(nlp.vocab)
    ours.add_patterns(nlp.get_pipe("attribute_ruler").patterns)
    ours.add([[{"LOWER": "a", "OP": "?"}, {"LOWER": "cat"}]], {"LEMMA": "feline"}, index=-1)
    ours.add([[{"LOWER": {"REGEX": "^do+gs?$"}}]], {"LEMMA": "canine"})
    doc = ours(nlp("There is a cat and there are dogs.", disable=["attribute_ruler", "lemmatizer"]))
    assert (doc[3].text, doc[3].lemma_) == ("cat", "feline")
    assert (doc[-2].text, doc[-2].lemma_) == ("dogs", "canine")
    spacy_ruler = spacy.pipeline.AttributeRuler(nlp.vocab, "spacy_ruler")
    spacy_ruler.add_patterns(ours.patterns)
    for doc in docs:
        assert ours.match(doc) == spacy_ruler.match(doc), doc.text[:60]


def test_the_pipeline_tags_as_before(parsed) -> None:  # noqa: ANN001
    from kg.extraction import build_pipeline

    nlp, _ = parsed
    ours = build_pipeline(model_dir=None, typer=None)
    assert isinstance(ours.get_pipe("attribute_ruler"), IndexedAttributeRuler)
    assert isinstance(ours.get_pipe("lemmatizer"), MemoLemmatizer)
    for text in TRICKY:
        want = [(t.tag_, t.pos_, str(t.morph), t.lemma_) for t in nlp(text)]
        assert [(t.tag_, t.pos_, str(t.morph), t.lemma_) for t in ours(text)] == want


def test_same_lemmas_as_spacy(parsed) -> None:  # noqa: ANN001
    nlp, docs = parsed
    spacy_ruler, spacy_lemmatizer = nlp.get_pipe("attribute_ruler"), nlp.get_pipe("lemmatizer")
    ours = MemoLemmatizer(nlp.vocab, None, "lemmatizer", mode="rule")
    ours.initialize(lookups=spacy_lemmatizer.lookups)
    for _ in range(2):  # the second pass reads every lemma from the memo
        for doc in docs:
            want, got = spacy_ruler(doc.copy()), spacy_ruler(doc.copy())
            want, got = spacy_lemmatizer(want), ours(got)
            assert [t.lemma_ for t in got] == [t.lemma_ for t in want], doc.text[:60]
    assert ours._memo  # noqa: SLF001


def test_rule_lemmas_are_spacys(parsed) -> None:  # noqa: ANN001
    """Every candidate lemma, in spaCy's order, for words in and out of the tables."""
    nlp, docs = parsed
    spacy_ruler, spacy_lemmatizer = nlp.get_pipe("attribute_ruler"), nlp.get_pipe("lemmatizer")
    ours = MemoLemmatizer(nlp.vocab, None, "lemmatizer", mode="rule")
    ours.initialize(lookups=spacy_lemmatizer.lookups)
    made_up = nlp(
        "The florbles were glimmering; she zorked quicker frobnications of the 4x4s. "
        "Their axes, leaves, ties and buses saw bases."
    )
    compared = 0
    for doc in [spacy_ruler(made_up), *(spacy_ruler(d.copy()) for d in docs)]:
        for token in doc:
            spacy_lemmatizer.cache.clear()
            assert ours.rule_lemmatize(token) == spacy_lemmatizer.rule_lemmatize(token), token.text
            compared += 1
    assert compared > 5000
