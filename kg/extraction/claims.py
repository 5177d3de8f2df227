"""The ``kg_claims`` component: claim sentences and their kind."""

from __future__ import annotations

import re
from typing import Any

from spacy.language import Language
from spacy.matcher import Matcher
from spacy.tokens import Doc, Span

from kg.extraction.spans import sentences

CLAIM_PRIORITY = ("contribution", "performance", "efficiency", "theoretical", "empirical-finding")


_BIG_O = re.compile(r"(?<![A-Za-z])[OΩΘ]\s?\(")


_CITATION = re.compile(
    r"\bet al\.|\(\d{4}\)"
    r"|\b(?:prior|previous|recent|existing|earlier) (?:work|works|studies|methods|approaches)\b",
    re.IGNORECASE,
)
# Subjects that, with "our"/"this", name the paper's own artefact or the paper itself.
_OWN_SUBJECTS = frozenset(
    "paper work method approach framework model algorithm policy estimator system analysis "  # noqa: SIM905
    "design technique results result experiments theory".split()
)


class ClaimDetector:
    """Claim sentences and their kind, from cue patterns.

    Strong cues ("we propose", "outperforms", "we prove", "experiments show")
    make a sentence a claim on their own; weak cue words ("faster", "bound")
    only count in a sentence that speaks of this work ("we", "our") or states
    a number.
    """

    def __init__(self, nlp: Language, name: str, *, cues: list[dict[str, Any]]) -> None:
        self.name = name
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

    def __call__(self, doc: Doc) -> Doc:
        claims: list[Span] = []
        hits: dict[int, list[tuple[str, str]]] = {}
        sent_of = {}
        for sent in sentences(doc):
            for tok in sent:
                sent_of[tok.i] = sent
        for match_id, start, _end in self.matcher(doc):
            kind, strength, _ = doc.vocab.strings[match_id].split("|")
            sent = sent_of.get(start)
            if sent is not None:
                hits.setdefault(sent.start, []).append((kind, strength))
        proposed = {p.text for p in doc.spans.get("kg_proposed", [])}
        for sent in sentences(doc):
            found = hits.get(sent.start, [])
            ours = any(t.lower_ in ("we", "our", "ours", "us") for t in sent)
            if not ours and _CITATION.search(sent.text):
                continue  # "Ben Arous et al. (2021) showed …": someone else's result
            # "UniCon provides …", "Our policy grasps …", "This paper provides …": the
            # paper's own artefact as subject makes a claim even without a cue word.
            about_us = any(
                t.dep_ in ("nsubj", "nsubjpass")
                and (
                    t.text in proposed
                    or any(
                        c.lower_ in ("our", "this") for c in t.children if c.dep_ in ("poss", "det")
                    )
                    and t.lower_ in _OWN_SUBJECTS
                )
                for t in sent
            )
            if not found and not about_us:
                continue
            numbers = any(t.like_num and any(c.isdigit() for c in t.text) for t in sent) or any(
                t.text in ("%", "×") for t in sent
            )
            strong = {k for k, s in found if s == "strong"}
            weak = {k for k, s in found if s == "weak"}
            kinds = strong | (weak if (ours or numbers or about_us) else set())
            if not kinds and about_us:
                kinds = {"performance" if numbers else "contribution"}
            if not kinds:
                continue
            kind = self.choose_kind(
                strong, kinds, numbers, asymptotic=bool(_BIG_O.search(sent.text))
            )
            claims.append(Span(doc, sent.start, sent.end, label=kind))
        doc.spans["kg_claims"] = claims
        return doc
