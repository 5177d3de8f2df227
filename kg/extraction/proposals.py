"""The ``kg_proposed`` component: what a paper says it introduces."""

from __future__ import annotations

from typing import Any

from spacy.language import Language
from spacy.matcher import Matcher
from spacy.tokens import Doc, Span, Token

from kg.extraction.canonical import expand_acronym, is_acronym
from kg.extraction.spans import (
    ARTIFACT_HEADS,
    GENERIC_HEADS,
    MATH,
    NON_PROPOSALS,
    STOP_AT,
    name_run,
    sentences,
    trim_span,
)


class ProposalDetector:
    """The methods a paper introduces: "we propose X", "X, a novel …", "called X"."""

    def __init__(
        self, nlp: Language, name: str, *, triggers: list[dict[str, Any]], max_per_doc: int
    ) -> None:
        self.name = name
        self.max_per_doc = max_per_doc
        self.matcher = Matcher(nlp.vocab)
        self.verbs: set[str] = set()
        for row in triggers:
            self.matcher.add(row["id"], [row["pattern"]])
            for tok in row["pattern"]:
                if isinstance(tok.get("LEMMA"), dict):
                    self.verbs |= set(tok["LEMMA"].get("IN", []))

    def _object_region(self, trigger: Token) -> Span | None:
        doc = trigger.doc
        sent = trigger.sent
        objects = [c for c in trigger.children if c.dep_ in ("dobj", "obj", "attr", "oprd")]
        if objects:
            obj = objects[0]
            start = obj.left_edge.i
            end = obj.i + 1
            # The object's own phrase plus an apposition or bracket ("X, a …", "X (long)");
            # "for"/"of"-phrases serve the unnamed fallback ("a framework for …", "a variant of …").
            for child in obj.rights:
                if (
                    child.dep_ in ("appos", "compound", "amod", "nmod", "npadvmod")
                    or (child.dep_ == "punct" and child.text in "()")
                    or (child.dep_ == "prep" and child.lower_ in ("for", "of") and child.i == end)
                ):
                    end = max(end, child.right_edge.i + 1)
            # "we propose a novel method, Prior-Free … Adaptation": a misparsed apposition.
            for child in trigger.rights:
                if (
                    child.i >= end
                    and child.dep_ in ("npadvmod", "appos", "dep")
                    and (doc[end].text == "," or doc[end].text == "(")
                ):
                    end = max(end, child.right_edge.i + 1)
            return doc[start : min(end, start + 24, sent.end)]
        start = trigger.i + 1
        if start < sent.end and doc[start].lower_ == "to":
            return None
        end = start
        while end < sent.end and doc[end].lower_ not in STOP_AT and end - start < 12:
            end += 1
        return doc[start:end] if end > start else None

    def proposal(self, trigger: Token, called: bool) -> Span | None:
        """The name (or shortest description) that a trigger introduces."""
        doc = trigger.doc
        if called:
            region = doc[trigger.i + 1 : min(trigger.i + 6, trigger.sent.end)]
            return name_run(region)
        region = self._object_region(trigger)
        if region is None:
            return None
        objects = [c for c in trigger.children if c.dep_ in ("dobj", "obj", "attr", "oprd")]
        if objects and objects[0].lower_ in NON_PROPOSALS:
            return None  # "we present a systematic study of …": findings, not an artefact
        # An acronym defined inside the object names it: "ADMM plug-and-play (ADMM-PnP)",
        # unless it is a well-known one ("… in Large Language Models (LLMs)").
        for ls, le, ss, se in doc._.kg_abbreviations or []:
            inside = region.start <= min(ls, ss) and max(le, se) <= region.end + 1
            if inside and expand_acronym(doc[ss:se].text) is None:
                return doc[ss:se]
        name = name_run(region)
        head = next((t for t in region if t.dep_ in ("dobj", "obj", "attr", "oprd")), None)
        if name is not None and head is not None:
            prep = next((t for t in region if t.i > head.i and t.lower_ in ("of", "for")), None)
            if prep is not None and name.start > prep.i:
                name = None  # "maps of five LLMs": the name belongs to what is mapped
        if name is not None and expand_acronym(name.text):
            name = None  # a well-known acronym is not the paper's own
        if (
            name is not None
            and head is not None
            and name.end <= head.i
            and (head.lower_ in ARTIFACT_HEADS or head.lower_ in GENERIC_HEADS)
            and all(t.i < head.i or t.i == head.i for t in name)
        ):
            # The name only modifies a generic head: "a tensor-output BO method".
            span = trim_span(doc[region.start : head.i + 1])
            if span is not None:
                return span
        if name is not None:
            nxt = doc[name.end] if name.end < len(doc) else None
            # "AC-DC denoiser": a name followed by its kind of thing.
            if (
                nxt is not None
                and nxt.pos_ == "NOUN"
                and nxt.lower_ not in GENERIC_HEADS
                and nxt.i < region.end
                and nxt.lower_ not in ("method", "framework")
            ):
                return doc[name.start : nxt.i + 1] if nxt.dep_ != "compound" else name
            return name
        # Unnamed: the noun phrase itself, without determiners and praise.
        chunk_end = region.start
        for tok in region:
            if tok.lower_ in STOP_AT or tok.text == "(":
                break
            chunk_end = tok.i + 1
            outside = not region.start <= tok.head.i < region.end
            if tok.pos_ == "NOUN" and (outside or tok.dep_ == "appos") and tok.dep_ != "compound":
                if tok.lower_ in GENERIC_HEADS or tok.lower_ in ARTIFACT_HEADS:
                    # "a framework for unbiased gradient estimation": keep the for-phrase,
                    # up to a nested preposition ("… systems under adversarial noise").
                    preps = [
                        c for c in tok.rights if c.dep_ == "prep" and c.lower_ in ("for", "of")
                    ]
                    if preps:
                        end = min(preps[0].right_edge.i + 1, region.end, tok.i + 8)
                        for inner in doc[preps[0].i + 1 : end]:
                            if inner.pos_ == "ADP" or inner.lower_ in STOP_AT:
                                end = inner.i
                                break
                        chunk_end = end
                break
        span = trim_span(doc[region.start : chunk_end])
        if span is None or len(span) > 10 or all(t.lower_ in GENERIC_HEADS for t in span):
            return None
        heads = [t for t in span if t.pos_ == "NOUN" and t.lower_ in ARTIFACT_HEADS]
        if not heads:
            return None
        if all(t.pos_ == "ADJ" or t.lower_ in ARTIFACT_HEADS for t in span):
            return None  # "a theoretical framework": a kind of work, not a named artefact
        return span

    def __call__(self, doc: Doc) -> Doc:
        found: list[Span] = []
        if not doc.has_annotation("DEP"):
            doc.spans["kg_proposed"] = found
            return doc
        triggers: list[tuple[str, Token]] = []
        for match_id, start, end in self.matcher(doc):
            rule = doc.vocab.strings[match_id]
            # "X, a novel …": the name is the match's first token, not its last.
            triggers.append((rule, doc[start] if rule == "apposition" else doc[end - 1]))
            # "we propose X … and design Y": conjoined verbs share the subject.
            if rule == "we-verb":
                triggers += [
                    (rule, c)
                    for c in doc[end - 1].children
                    if c.dep_ == "conj" and c.pos_ == "VERB" and c.lemma_ in self.verbs
                ]
        for rule, trigger in triggers:
            if rule == "apposition":
                span = name_run(doc[trigger.sent.start : trigger.i + 1])
                while span is not None and span.end <= trigger.i:
                    span = name_run(doc[span.end : trigger.i + 1])
                if span is not None and not is_acronym(span.text):
                    span = None  # "Transformers, a new class …" is not a coined name
            elif rule == "passive":
                subjects = [c for c in trigger.children if c.dep_ in ("nsubjpass", "nsubj")]
                span = (
                    name_run(doc[subjects[0].left_edge.i : subjects[0].i + 1]) if subjects else None
                )
            else:
                span = self.proposal(trigger, called=(rule == "named"))
            if span is not None and MATH.search(span.text):
                continue
            if span is not None and all(span.end <= f.start or span.start >= f.end for f in found):
                found.append(Span(doc, span.start, span.end, label="Method", kb_id=rule))
        found.sort(key=lambda s: s.start)
        found = found[: self.max_per_doc]
        found += self.named_parts(doc, found)
        doc.spans["kg_proposed"] = sorted(found, key=lambda s: s.start)
        return doc

    def named_parts(self, doc: Doc, proposals: list[Span]) -> list[Span]:
        """Named parts of a proposal: "PFT3A contains the Class Prior Estimating module".

        In a sentence that introduces or names a proposal, a name followed by an
        artefact head ("module", "denoiser", "criterion") is also the paper's own.
        """
        names = {p.text for p in proposals}
        sents = {p.sent.start: p.sent for p in proposals}
        for sent in sentences(doc):
            if any(t.text in names and t.dep_ in ("nsubj", "nsubjpass") for t in sent):
                sents.setdefault(sent.start, sent)
        parts: list[Span] = []
        taken = list(proposals)
        for start in sorted(sents):
            sent = sents[start]
            i = sent.start
            while i < sent.end:
                run = name_run(doc[i : sent.end])
                if run is None:
                    break
                i = run.end
                if run.end >= sent.end or doc[run.end].lower_ not in ARTIFACT_HEADS:
                    continue
                if doc[run.end].dep_ in ("compound", "amod", "nmod"):
                    continue  # "a T2I model evaluation framework": a description, not a part
                span = doc[run.start : run.end + 1]
                if span.text in names or MATH.search(span.text) or expand_acronym(run.text):
                    continue
                if any(
                    lex.start < run.end and run.start < lex.end
                    for lex in doc.spans.get("kg_lexicon", [])
                ):
                    continue  # a known method ("the GRPO framework") is not the paper's own
                if all(span.end <= t.start or span.start >= t.end for t in taken):
                    part = Span(doc, span.start, span.end, label="Method", kb_id="part")
                    parts.append(part)
                    taken.append(part)
        return parts[: self.max_per_doc]
