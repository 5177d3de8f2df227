"""The ``kg_claims`` component: claim sentences and their kind.

Cue patterns ("we propose", "outperforms", "we prove") read each sentence and
give it a kind; a learned model (:data:`~kg.extraction.linear_model.CLAIMS_DIR`,
trained by ``kg train`` on the ICLR gold's claims) decides from that reading,
the sentence's words and its place in the abstract which sentences are claims.
Without the model the cues decide alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
from spacy.language import Language
from spacy.matcher import Matcher
from spacy.tokens import Doc, Span

from kg import schema
from kg.extraction.linear_model import LinearModel
from kg.extraction.spans import doc_text, sentences

CLAIM_PRIORITY = ("contribution", "performance", "efficiency", "theoretical", "empirical-finding")
CLAIM_CLASSES = ("O", *(k.name for k in schema.CLAIM_KIND_SPECS))
"""The claim model's classes: not a claim, then each kind."""


_BIG_O = re.compile(r"(?<![A-Za-z])[OΩΘ]\s?\(")


_CITATION = re.compile(r"\bet al\.|\(\d{4}\)")
_PRIOR = frozenset(["prior", "previous", "recent", "existing", "earlier"])
_WORKS = frozenset(
    ["work", "works", "study", "studies", "method", "methods", "approach", "approaches"]
)
# Subjects that, with "our"/"this", name the paper's own artefact or the paper itself.
_OWN_SUBJECTS = frozenset(
    "paper work method approach framework model algorithm policy estimator system analysis "  # noqa: SIM905
    "design technique results result experiments theory".split()
)
_WORD = re.compile(r"^[a-z]")


@dataclass
class SentenceReading:
    """What the cues see in one sentence: the kind they give it (None: no claim),
    whether it reports someone else's work, and the features the claim model reads."""

    sent: Span
    kind: str | None
    cited: bool
    features: list[str]


class ClaimDetector:
    """Claim sentences and their kind.

    Strong cues ("we propose", "outperforms", "we prove", "experiments show")
    make a sentence a claim on their own; weak cue words ("faster", "bound")
    only count in a sentence that speaks of this work ("we", "our") or states
    a number. With a model, the cues are evidence: the model keeps the
    sentences it scores at least ``threshold`` (1 - P(not a claim)), the
    ``max_claims`` best at most, never one that reports cited work; a kept
    sentence no cue gave a kind takes the model's likeliest kind.
    """

    def __init__(
        self,
        nlp: Language,
        name: str,
        *,
        cues: list[dict[str, Any]],
        model: LinearModel | None = None,
        threshold: float = 0.3,
        max_claims: int = 5,
    ) -> None:
        self.name = name
        self.model = model
        self.threshold = threshold
        self.max_claims = max_claims
        self.matcher = Matcher(nlp.vocab)
        for i, row in enumerate(cues):
            strength = "strong" if len(row["pattern"]) > 1 or row.get("strong") else "weak"
            self.matcher.add(f"{row['kind']}|{strength}|{i}", [row["pattern"]])

    @staticmethod
    def choose_kind(strong: set[str], kinds: set[str], numbers: bool, *, asymptotic: bool) -> str:
        """One kind for a claim sentence from the cue kinds it matched.

        Proofs and rates first (a proposal that "achieves an error rate of O(…)" is
        a theoretical claim), then contributions, then measured efficiency or
        performance (with a number, or "outperforms"), then findings.
        """
        if asymptotic or "theoretical" in strong:
            return "theoretical"
        if "contribution" in strong:
            return "contribution"
        if numbers and "efficiency" in kinds:
            return "efficiency"
        if "performance" in strong or (numbers and "performance" in kinds):
            return "performance"
        if "empirical-finding" in strong:
            return "empirical-finding"
        return next(k for k in CLAIM_PRIORITY if k in kinds)

    def read(self, doc: Doc, *, features: bool = True) -> list[SentenceReading]:
        """Every sentence of the doc with the cues' kind for it and its features
        (none unless ``features``)."""
        toks = _Tokens(doc)
        hits: dict[int, list[tuple[str, str, str]]] = {}
        sents = list(sentences(doc))
        sent_of = [0] * len(doc)
        for n, sent in enumerate(sents):
            sent_of[sent.start : sent.end] = [n] * len(sent)
        for match_id, start, end in self.matcher(doc):
            cue, strength, _ = doc.vocab.strings[match_id].split("|")
            hits.setdefault(sent_of[start], []).append((cue, strength, toks.lemma[end - 1]))
        proposed = doc.spans.get("kg_proposed", [])
        names = {p.text for p in proposed}
        readings = []
        for n, sent in enumerate(sents):
            found = hits.get(n, [])
            span = range(sent.start, sent.end)
            ours = any(toks.lower[i] in ("we", "our", "ours", "us") for i in span)
            numbers = any(toks.number[i] for i in span)
            text = doc_text(doc)[sent.start_char : sent.end_char]
            cited = not ours and _reports_others(sent, text, toks)
            kind = (
                None
                if cited
                else self._kind(sent, text, toks, found, names, ours=ours, numbers=numbers)
            )
            feats = (
                sentence_features(
                    sent,
                    toks,
                    n,
                    len(sents),
                    kind=kind,
                    cues=found,
                    ours=ours,
                    numbers=numbers,
                    proposed=any(sent.start <= p.start < sent.end for p in proposed),
                )
                if features
                else []
            )
            readings.append(SentenceReading(sent, kind, cited, feats))
        return readings

    def _kind(
        self,
        sent: Span,
        text: str,
        toks: _Tokens,
        found: list[tuple[str, str, str]],
        proposed: set[str],
        *,
        ours: bool,
        numbers: bool,
    ) -> str | None:
        """The cues' kind for a sentence, or None when they see no claim in it."""
        # "UniCon provides …", "Our policy grasps …", "This paper provides …": the
        # paper's own artefact as subject makes a claim even without a cue word.
        about_us = any(
            toks.dep[i] in ("nsubj", "nsubjpass")
            and (
                toks.text[i] in proposed
                or toks.lower[i] in _OWN_SUBJECTS
                and any(
                    toks.lower[c] in ("our", "this") and toks.dep[c] in ("poss", "det")
                    for c in toks.children(i, sent)
                )
            )
            for i in range(sent.start, sent.end)
        )
        if not found and not about_us:
            return None
        strong = {k for k, s, _ in found if s == "strong"}
        weak = {k for k, s, _ in found if s == "weak"}
        kinds = strong | (weak if (ours or numbers or about_us) else set())
        if not kinds and about_us:
            kinds = {"performance" if numbers else "contribution"}
        if not kinds:
            return None
        return self.choose_kind(strong, kinds, numbers, asymptotic=bool(_BIG_O.search(text)))

    def __call__(self, doc: Doc) -> Doc:
        readings = self.read(doc, features=self.model is not None)
        if self.model is None or not readings:
            claims = [Span(doc, r.sent.start, r.sent.end, label=r.kind) for r in readings if r.kind]
        else:
            probs = self.model.probabilities([r.features for r in readings])
            claimness = 1.0 - probs[:, 0]
            order = sorted(range(len(readings)), key=lambda i: -claimness[i])
            kept = [i for i in order if claimness[i] >= self.threshold and not readings[i].cited][
                : self.max_claims
            ]
            claims = []
            for i in sorted(kept):
                kind = readings[i].kind or CLAIM_CLASSES[1 + int(np.argmax(probs[i, 1:]))]
                claims.append(Span(doc, readings[i].sent.start, readings[i].sent.end, label=kind))
        doc.spans["kg_claims"] = claims
        return doc


def _reports_others(sent: Span, text: str, toks: _Tokens) -> bool:
    """Whether a sentence reports others' work: "Ben Arous et al. (2021) showed …",
    "Prior work has proposed …" (but not "FooNet outperforms existing methods")."""
    if _CITATION.search(text):
        return True
    root = sent.root.i
    return any(
        toks.dep[i] in ("nsubj", "nsubjpass")
        and toks.head[i] == root
        and toks.lower[i] in _WORKS
        and any(toks.lower[c] in _PRIOR for c in toks.children(i, sent))
        for i in range(sent.start, sent.end)
    )


class _Tokens:
    """The attributes the claim detector reads, for every token of a doc, read once:
    a spaCy Token object made on each access cost 2 ms an abstract."""

    def __init__(self, doc: Doc) -> None:
        tokens = list(doc)
        self.text = [t.text for t in tokens]
        self.lower = [t.lower_ for t in tokens]
        self.lemma = [t.lemma_.lower() for t in tokens]
        self.pos = [t.pos_ for t in tokens]
        self.tag = [t.tag_ for t in tokens]
        self.dep = [t.dep_ for t in tokens]
        # Heads from the array: ``t.head`` would make a second Token per token.
        self.head = (doc.to_array("HEAD").astype(np.int64) + np.arange(len(doc))).tolist()
        # A number with a digit ("3.2", not "three"), or a percent or times sign
        self.number = [
            (t.like_num and any(c.isdigit() for c in t.text)) or t.text in ("%", "×")
            for t in tokens
        ]

    def children(self, i: int, sent: Span) -> list[int]:
        """The tokens of ``sent`` whose head is token ``i``, in order."""
        return [c for c in range(sent.start, sent.end) if self.head[c] == i and c != i]


def sentence_features(
    sent: Span,
    toks: _Tokens,
    index: int,
    count: int,
    *,
    kind: str | None,
    cues: list[tuple[str, str, str]],
    ours: bool,
    numbers: bool,
    proposed: bool,
) -> list[str]:
    """The claim model's features of one sentence (the ``index``-th of ``count``).

    The cues' reading (their kind, each cue's kind, strength and word), where the
    sentence stands (the first sentences motivate, the last report), its words
    (lemmas, lemma pairs, verbs, subject–verb pairs) and its numbers.
    """
    feats = ["bias", f"rule={kind}"]
    feats += [f"cue={k}|{s}" for k, s, _ in cues] + [f"cueword={w}" for _, _, w in cues]
    from_end = count - 1 - index
    feats += [
        f"pos={index}" if index < 3 else "pos=mid",
        f"end={from_end}" if from_end < 3 else "end=mid",
        f"rel={5 * index // count}",
        f"len={min(len(sent) // 10, 5)}",
    ]
    span = range(sent.start, sent.end)
    lemmas = toks.lemma[sent.start : sent.end]
    words = [lemma for lemma in lemmas if _WORD.match(lemma)]
    feats += [f"l={w}" for w in set(words)]
    feats += [f"b={a} {b}" for a, b in pairwise(lemmas) if _WORD.match(a) and _WORD.match(b)]
    feats += [f"first={lemmas[0]}", f"first2={' '.join(lemmas[:2])}"]
    feats += [f"v={toks.lemma[i]}" for i in span if toks.pos[i] == "VERB"]
    feats += [
        f"vsubj={toks.lemma[toks.head[i]]}|{toks.lemma[i]}" for i in span if toks.dep[i] == "nsubj"
    ]
    root = sent.root.i
    feats.append(f"root={toks.lemma[root]}")
    for i in toks.children(root, sent):
        if toks.dep[i] in ("nsubj", "nsubjpass"):
            feats += [f"subj={toks.lemma[i]}", f"rootsubj={toks.lemma[root]}|{toks.lemma[i]}"]
            break
    tags = {toks.tag[i] for i in span}
    feats += [
        name
        for name, on in (
            ("ours", ours),
            ("num", numbers),
            ("pct", any(toks.text[i].endswith(("%", "×")) for i in span)),
            ("comparative", bool(tags & {"JJR", "RBR"})),
            ("superlative", bool(tags & {"JJS", "RBS"})),
            ("proposed", proposed),
        )
        if on
    ]
    return feats
