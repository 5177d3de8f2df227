"""Method taxonomy where the text says so: the ``kg_hypernyms`` component.

"GRPO, a policy-gradient method", "PPO is a policy gradient algorithm",
"optimizers such as Adam and SGD", "DoRA, a variant of LoRA": the sentence
states that one method is a kind of another. The component reads only these
explicit forms (appositive, copula, "such as" / "including", "a variant of")
and never infers a link from the names alone. :func:`assemble_hypernyms` then
keeps a pair only when both sides are methods the extractor knows: the paper's
own method mentions or the lexicon's methods; a class word with adjectives
("a simple yet effective method") names nothing and gives no link.

The word lists are data (``patterns/hypernyms.json``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from importlib import resources

from spacy.language import Language
from spacy.tokens import Doc, Span, Token
from spacy.util import registry

from kg.extraction.canonical import canonical_key, display_label
from kg.model import Entity, EntityType, Hypernym

if not Doc.has_extension("kg_hypernyms"):
    Doc.set_extension("kg_hypernyms", default=None)


@registry.misc("kg.hypernym_words.v1")
def hypernym_words_v1() -> dict[str, list[str]]:
    """Class words ("method", "algorithm") and variant words ("variant", "extension")."""
    path = resources.files("kg.extraction") / "patterns" / "hypernyms.json"
    return json.loads(path.read_text("utf-8"))


class HypernymFinder:
    """Marks "X is a kind of Y" statements between method mentions.

    Writes ``doc._.kg_hypernyms``: ``(narrower start, narrower end, broader start,
    broader end, evidence start, evidence end, cue)`` token offsets, the cue naming
    the form ("appositive", "copula", "such as", "including"). Plain tuples
    survive multiprocessing.
    """

    def __init__(self, nlp: Language, name: str, *, words: dict[str, list[str]]) -> None:
        self.name = name
        self.class_heads = frozenset(words["class_heads"])
        self.variant_heads = frozenset(words["variant_heads"])

    def _broader(self, doc: Doc, head: Token) -> Span | None:
        """The method a class phrase headed by ``head`` names, if it names one.

        "a variant of LoRA" → LoRA; "a policy-gradient method" → policy-gradient;
        "a policy gradient algorithm" → policy gradient; "PPO" (a name) → PPO.
        """
        low = head.lower_
        if low in self.variant_heads:
            prep = next((c for c in head.children if c.dep_ == "prep" and c.lower_ == "of"), None)
            obj = next((c for c in prep.children if c.dep_ == "pobj"), None) if prep else None
            return self._noun_phrase(doc, obj) if obj is not None else None
        if low in self.class_heads:
            # The words before the class word that modify it inside its phrase
            start = head.i
            while start > 0:
                prev = doc[start - 1]
                glued = prev.text == "-" and not prev.whitespace_
                if not glued and not (prev.i < prev.head.i <= head.i) or prev.dep_ == "det":
                    break
                start -= 1
            return doc[start : head.i] if start < head.i else None
        return self._noun_phrase(doc, head)

    @staticmethod
    def _indefinite(head: Token) -> bool:
        """Whether a phrase opens with "a"/"an": "a policy-gradient method" says
        what kind of thing X is; "the ..." or a bare name after a comma does not."""
        return any(c.dep_ == "det" and c.lower_ in ("a", "an") for c in head.children)

    @staticmethod
    def _noun_phrase(doc: Doc, head: Token) -> Span:
        start = head.i
        while start > 0 and (
            doc[start - 1].dep_ in ("compound", "amod", "nmod", "npadvmod")
            and doc[start - 1].head.i >= start
            or (doc[start - 1].text == "-" and not doc[start - 1].whitespace_)
        ):
            start -= 1
        return doc[start : head.i + 1]

    def __call__(self, doc: Doc) -> Doc:
        found: list[tuple[int, int, int, int, int, int, str]] = []
        methods = [s for s in doc.spans.get("kg_entities", []) if s.label_ == "Method"]
        methods += list(doc.spans.get("kg_proposed", []))
        seen: set[tuple[int, int, int, int]] = set()
        for span in methods:
            root = span.root
            if any(c.dep_ == "neg" for c in root.head.children):
                continue  # "X is not a Y"
            candidates: list[tuple[Token, str]] = []
            # "X, a Y …": Y in apposition to X, right after its comma (not a
            # parenthesis, which defines an acronym, nor an item of a list)
            if span.end < len(doc) and doc[span.end].text == ",":
                candidates += [
                    (c, "appositive")
                    for c in root.children
                    if c.dep_ == "appos" and self._indefinite(c) and c.i > span.end
                ]
            # "X is a Y"
            if root.dep_ in ("nsubj", "nsubjpass") and root.head.lemma_ == "be":
                candidates += [
                    (c, "copula")
                    for c in root.head.children
                    if c.dep_ == "attr" and self._indefinite(c)
                ]
            # "Y such as X (and Z)", "Y including X"
            first = root
            while first.dep_ == "conj" and first.head.i != first.i:
                first = first.head
            prep = first.head
            if first.dep_ == "pobj" and prep.head.i != prep.i:
                if prep.lower_ == "as" and any(c.lower_ == "such" for c in prep.children):
                    candidates.append((prep.head, "such as"))
                elif prep.lower_ == "including":
                    candidates.append((prep.head, "including"))
            for token, cue in candidates:
                if span.start <= token.i < span.end:
                    continue
                broader = self._broader(doc, token)
                if broader is None or broader.start < span.end and span.start < broader.end:
                    continue
                key = (span.start, span.end, broader.start, broader.end)
                if key not in seen:
                    seen.add(key)
                    # The words that state it: from the first name to the class word
                    lo = min(span.start, broader.start, token.i)
                    hi = max(span.end, broader.end, token.i + 1)
                    found.append((*key, lo, hi, cue))
        doc._.kg_hypernyms = found
        return doc


@Language.factory(
    "kg_hypernyms",
    default_config={"words": {"@misc": "kg.hypernym_words.v1"}},
    assigns=["doc._.kg_hypernyms"],
    requires=["doc.spans", "token.dep"],
)
def make_hypernyms(nlp: Language, name: str, *, words: dict[str, list[str]]) -> HypernymFinder:
    """Find explicit "X is a kind of method Y" statements between methods."""
    return HypernymFinder(nlp, name, words=words)


def assemble_hypernyms(
    doc: Doc,
    entities: list[Entity],
    identity: Callable[[Span], tuple[str, str, list[str]]],
    offsets: Callable[[Span], tuple[int, int]],
    sentence_of: Callable[[Span], tuple[int, int]],
    known_methods: Collection[str],
) -> list[Hypernym]:
    """The :class:`Hypernym` links of a paper from the marks of ``kg_hypernyms``.

    Both sides must be methods: the narrower one a method entity of the paper,
    the broader one a method entity of the paper or a method ``known_methods``
    lists (canonical keys, e.g. the lexicon's). Anything else is dropped.
    """
    from kg.vocab import entity_iri

    methods = {e.key: e for e in entities if e.type is EntityType.METHOD}
    out: list[Hypernym] = []
    pairs: set[tuple[str, str]] = set()
    for ns, ne, bs, be, lo, hi, cue in doc._.kg_hypernyms or []:
        narrow_key = identity(doc[ns:ne])[0]
        narrower = methods.get(narrow_key)
        if narrower is None:
            continue
        broader = None
        # "a simple policy-gradient method": the longest word suffix of the phrase
        # that is a method ("policy gradient"); a modifier written with hyphens
        # ("policy-gradient") is also tried as separate words.
        for i in range(bs, be):
            span = doc[i:be]
            if span[0].is_punct:
                continue
            for text in (span.text, span.text.replace("-", " ")):
                key = canonical_key(text)
                broader = methods.get(key) or methods.get(identity(span)[0])
                if broader is None and key in known_methods:
                    broader = Entity(
                        EntityType.METHOD, key, display_label(text),
                        entity_iri(EntityType.METHOD.value, key),
                        component="kg_hypernyms", confidence=0.6,
                    )  # fmt: skip
                if broader is not None:
                    break
            if broader is not None:
                break
        if broader is None or broader.key == narrower.key or (narrower.key, broader.key) in pairs:
            continue
        pairs.add((narrower.key, broader.key))
        start, end = offsets(doc[lo:hi])
        s_start, s_end = sentence_of(doc[lo:hi])
        out.append(Hypernym(narrower, broader, cue, start, end, s_start, s_end))
    return out
