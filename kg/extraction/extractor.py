"""The extractor: records in, :class:`~kg.model.PaperExtraction` out, streaming.

spaCy runs on the LaTeX-cleaned abstract (:func:`kg.latex.clean`); every span
is mapped back to offsets in the abstract exactly as given. The pipeline is the
English model without its NER, plus the project's registered components, whose
learned typer (``kg/extraction/typer/``) decides what each candidate phrase is.

The pipeline itself is built by :mod:`kg.extraction.pipeline`.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from spacy.tokens import Doc, Span

from kg.extraction.canonical import (
    canonical_key,
    display_label,
    expand_acronym,
    is_acronym,
    singular,
)
from kg.extraction.components import lexicon_v1, read_patterns
from kg.extraction.hypernyms import assemble_hypernyms
from kg.extraction.linear_model import LinearModel
from kg.extraction.pipeline import NER_NAME, build_pipeline
from kg.extraction.result_assembly import assemble_results
from kg.extraction.spans import doc_text
from kg.extraction.values import find_values
from kg.model import Claim, ClaimKind, Entity, EntityType, Mention, PaperExtraction, Record, Value
from kg.reading import latex
from kg.vocab import entity_iri

log = logging.getLogger(__name__)

EXTRACTOR_VERSION = "0.10.0"

_SOURCE_COMPONENT = {
    "lexicon": "kg_lexicon",
    "ner": NER_NAME,
    "acronym": "kg_abbreviations",
    "head": "kg_entities",
    "typer": "kg_typer",
    "enumeration": "kg_enumerations",
}
# A name listed as a dataset ("benchmarks (GSM8K, MATH500)") is typed by what the
# sentence says it is: that outweighs the typer's guess from its context.
_SOURCE_CONFIDENCE = {
    "lexicon": 0.9,
    "acronym": 0.85,
    "enumeration": 0.75,
    "typer": 0.7,
    "ner": 0.6,
    "head": 0.5,
}
_CLAIM_LEAD = re.compile(
    r"^(?:(?:in|through|with|to this end|specifically|moreover|furthermore|additionally|"
    r"finally|overall|importantly|concretely|in particular|in addition|in this (?:paper|work)|"
    r"as a result|consequently|hence|thus|therefore|notably|first|second|third|next|"
    r"empirically|theoretically)[^,]{0,60},\s+)",
    re.IGNORECASE,
)


# "To address this, we propose …": the clause that carries the claim starts at "we".
_WE_LEAD = re.compile(r"^[^,;]{3,80},\s+(?=we\b)")


@dataclass(slots=True)
class _Group:
    """Mentions of one entity of a paper while the paper is being assembled."""

    type: EntityType
    key: str
    label: str
    source: str
    mentions: list[Mention] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    proposed: bool = False
    broader: bool = False


def _log_component_error(proc_name: str, proc: object, docs: list[Doc], error: Exception) -> None:
    log.error("pipeline component %s failed on a batch of %d docs: %s", proc_name, len(docs), error)


class Extractor:
    """Loads the pipeline once and turns records into extractions, in order."""

    def __init__(
        self,
        *,
        n_process: int = 1,
        batch_size: int = 32,
        model_dir: Path | None = None,
        typer: LinearModel | None | str = "shipped",
    ) -> None:
        self.n_process = n_process
        self.batch_size = batch_size
        self.nlp = build_pipeline(model_dir=model_dir, typer=typer)
        # A component that fails on a doc logs it instead of ending the whole
        # stream. (Language.set_error_handler would also reach the Cython parser,
        # which cannot take one.)
        self.nlp.default_error_handler = _log_component_error
        lexicon = lexicon_v1()
        self._task_lexicon = {canonical_key(r["label"]) for r in lexicon if r["type"] == "Task"}
        # A concept the lexicon knows keeps the lexicon's type in every paper, so that
        # "RL" typed Method by the NER still meets "reinforcement learning" (a Task).
        self._lexicon_type: dict[str, EntityType] = {}
        self._lexicon_label: dict[str, str] = {}
        for row in lexicon:
            self._lexicon_type.setdefault(canonical_key(row["label"]), EntityType(row["type"]))
            self._lexicon_label.setdefault(canonical_key(row["label"]), row["label"])
        self._methods = frozenset(
            k for k, t in self._lexicon_type.items() if t is EntityType.METHOD
        )
        # Never an entity on its own, whatever component proposed it ("Framework").
        self._generic_keys = {canonical_key(row["word"]) for row in read_patterns("generic.jsonl")}
        self._paradigms = {
            row["modifier"]: row["concept"] for row in read_patterns("paradigms.jsonl")
        }

    def canonical_label(self, key: str, label: str) -> str:
        """One label per concept across papers: the lexicon's, else the singular form.

        "Transformers" in one paper and "transformer" in another get the same IRI;
        they should also show the same label.
        """
        if key in self._lexicon_label:
            return self._lexicon_label[key]
        words = label.split(" ")
        if not is_acronym(words[-1]) and words[-1].islower():
            words[-1] = singular(words[-1])
        return " ".join(words)

    def extract(self, records: Iterable[Record]) -> Iterator[PaperExtraction]:
        """Extract every record, streaming, in input order."""

        in_flight: deque[Record] = deque()

        def tuples() -> Iterator[tuple[str, tuple[Record, latex.Cleaned]]]:
            for record in records:
                cleaned = latex.clean(record.abstract)
                in_flight.append(record)
                yield cleaned.text, (record, cleaned)

        for doc, (record, cleaned) in self.nlp.pipe(
            tuples(), as_tuples=True, batch_size=self.batch_size, n_process=self.n_process
        ):
            # spaCy drops a doc whose component failed (after the error handler
            # logged it); the records before this one that never came back are those.
            while in_flight and in_flight[0] is not record and in_flight[0].id != record.id:
                yield self._unextracted(in_flight.popleft(), "a pipeline component failed")
            if in_flight:
                in_flight.popleft()
            try:
                yield self.assemble(record, cleaned, doc)
            except Exception as exc:  # noqa: BLE001 - one paper's bug must not stop a corpus
                log.exception("assembly failed")
                yield self._unextracted(record, f"assembly failed: {exc}")
        while in_flight:
            yield self._unextracted(in_flight.popleft(), "a pipeline component failed")

    @staticmethod
    def _unextracted(record: Record, why: str) -> PaperExtraction:
        # The paper is still stored (text, metadata) with nothing extracted; the
        # log names it so the fault can be found and the paper re-ingested.
        log.error(
            "extraction failed for %s record %d (id %s): %s; stored without entities",
            record.source or "input",
            record.record,
            record.id,
            why,
        )
        return PaperExtraction(record, [], [], EXTRACTOR_VERSION)

    def extract_one(self, record: Record) -> PaperExtraction:
        """Extract a single record."""
        return next(iter(self.extract([record])))

    # ------------------------------------------------------------ assembly

    def assemble(self, record: Record, cleaned: latex.Cleaned, doc: Doc) -> PaperExtraction:
        """Turn an annotated doc into the paper's entities and claims."""
        return _Assembly(self, record, cleaned, doc).build()


class _Assembly:
    """One paper's assembly: group mentions into canonical entities, fill claims."""

    def __init__(self, ex: Extractor, record: Record, cleaned: latex.Cleaned, doc: Doc) -> None:
        self.ex = ex
        self.record = record
        self.cleaned = cleaned
        self.doc = doc
        self.groups: dict[tuple[EntityType, str], _Group] = {}
        self.alias_key: dict[str, tuple[str, str]] = {}  # acronym key → long key, label
        self.acronyms: list[tuple[str, str]] = []  # (short, long) as written, for the corpus
        self._sent_starts: list[int] | None = None
        self._sent_offsets: list[tuple[int, int]] = []

    def offsets(self, span: Span) -> tuple[int, int]:
        return self.cleaned.to_original(span.start_char, span.end_char)

    def sentence_of(self, span: Span) -> tuple[int, int]:
        """Original offsets of the sentence holding a span (looked up, not recomputed)."""
        if self._sent_starts is None:
            sents = list(self.doc.sents) if self.doc.has_annotation("SENT_START") else [self.doc[:]]
            self._sent_starts = [s.start for s in sents]
            self._sent_offsets = [self.offsets(s) for s in sents]
        i = bisect_right(self._sent_starts, span.start) - 1
        return self._sent_offsets[max(i, 0)]

    def mention(self, span: Span) -> Mention:
        start, end = self.offsets(span)
        s_start, s_end = self.sentence_of(span)
        return Mention(self.record.abstract[start:end], start, end, s_start, s_end)

    def _add(
        self,
        kind: EntityType,
        key: str,
        label: str,
        source: str,
        span: Span,
        *,
        aliases: Iterable[str] = (),
        proposed: bool = False,
        broader: bool = False,
    ) -> _Group | None:
        group = self.groups.get((kind, key))
        if group is None and key in self.ex._generic_keys:
            return None
        if group is None:
            group = _Group(kind, key, label, source, proposed=proposed, broader=broader)
            self.groups[(kind, key)] = group
        mention = self.mention(span)
        if all((m.start, m.end) != (mention.start, mention.end) for m in group.mentions):
            group.mentions.append(mention)
        for alias in aliases:
            if alias != group.label and alias not in group.aliases:
                group.aliases.append(alias)
        group.proposed = group.proposed or proposed
        group.broader = group.broader and broader
        return group

    def _label(self, span: Span) -> str:
        return display_label(span.text, sentence_initial=span[0].is_sent_start)

    def _identity(self, span: Span) -> tuple[str, str, list[str]]:
        """Key, label and aliases of a mention, with acronyms resolved."""
        label = self._label(span)
        key = canonical_key(label)
        if key in self.alias_key:
            long_key, long_label = self.alias_key[key]
            return long_key, long_label, [label]
        if is_acronym(label) and " " not in label:
            long_form = expand_acronym(label)
            if long_form is not None:
                return canonical_key(long_form), long_form, [label]
        return key, self.ex.canonical_label(key, label), []

    def build(self) -> PaperExtraction:
        doc = self.doc
        # Acronyms defined in this paper: the long form is the key and the label.
        for ls, le, ss, se in doc._.kg_abbreviations or []:
            long_label = display_label(doc[ls:le].text, sentence_initial=doc[ls].is_sent_start)
            short_label = display_label(doc[ss:se].text)
            if canonical_key(long_label):
                self.alias_key[canonical_key(short_label)] = (canonical_key(long_label), long_label)
                self.acronyms.append((short_label, long_label))
        proposed_keys: list[tuple[EntityType, str]] = []
        for span in doc.spans.get("kg_proposed", []):
            key, label, aliases = self._identity(span)
            if not key:
                continue
            short = self._label(span)
            # A proposed method is named by its short name; the long form is an alias.
            if aliases and short in aliases:
                aliases = [label]
                label = short
            group = self._add(
                EntityType.METHOD, key, label, "proposed", span, aliases=aliases, proposed=True
            )
            if group is not None:
                proposed_keys.append((group.type, group.key))
        proposed_by_key = {k for _, k in proposed_keys}
        for span in doc.spans.get("kg_entities", []):
            key, label, aliases = self._identity(span)
            if not key:
                continue
            kind = EntityType(span.label_)
            if span.kb_id_ != "typer":
                # The typer decides by role, as the gold does; the rules' mentions
                # take the lexicon's concept type.
                kind = self.ex._lexicon_type.get(key, kind)
            if key in proposed_by_key:
                kind = EntityType.METHOD  # mentions of the proposed method join it
            self._add(kind, key, label, span.kb_id_, span, aliases=aliases)
            if kind is EntityType.TASK:
                self._add_broader(span, key)
            self._add_paradigm(span, key)
        entities = self._entities()
        by_key = {(e.type, e.key): e for e in entities}
        claims = self._claims(entities, [by_key[k] for k in proposed_keys if k in by_key])
        results, named = assemble_results(
            doc, self.cleaned, self.record.abstract, claims, entities, self._identity
        )
        # A phrase a stated number measures is a metric the paper names, whatever
        # the typer thought of it ("18.3% on automated metrics", "pass@32 … 25.81%"),
        # unless it is a word never an entity alone ("metrics" of "high-level metrics").
        entities = entities + [e for e in named if e.key not in self.ex._generic_keys]
        hypernyms = assemble_hypernyms(
            doc, entities, self._identity, self.offsets, self.sentence_of, self.ex._methods
        )
        return PaperExtraction(
            self.record,
            entities,
            claims,
            EXTRACTOR_VERSION,
            results,
            hypernyms,
            acronyms=self.acronyms,
        )

    def _add_broader(self, span: Span, key: str) -> None:
        # "LLM unlearning" also names the broader task "unlearning": emit the longest
        # proper suffix that is a known task, so papers meet at the general concept.
        words = [t for t in span if not t.is_punct]
        for i in range(1, len(words)):
            sub = self.doc[words[i].i : span.end]
            sub_key = canonical_key(sub.text)
            if sub_key and sub_key != key and sub_key in self.ex._task_lexicon:
                self._add(
                    EntityType.TASK, sub_key, display_label(sub.text), "lexicon", sub, broader=True
                )
                return

    def _add_paradigm(self, span: Span, key: str) -> None:
        # "contrastive training", "efficient contrastive alignment" are instances of the
        # paradigm "contrastive learning": link the paper to the paradigm as a task.
        doc = self.doc
        for tok in span[:-1]:
            word = tok.lower_
            if tok.i + 2 < span.end and doc[tok.i + 1].text == "-" and not tok.whitespace_:
                word = word + "-" + doc[tok.i + 2].lower_
            concept = self.ex._paradigms.get(word)
            if concept is None:
                continue
            concept_key = canonical_key(concept)
            if concept_key != key:
                self._add(EntityType.TASK, concept_key, concept, "lexicon", span, broader=True)
            return

    def _entities(self) -> list[Entity]:
        out = []
        for group in self.groups.values():
            if not group.mentions:
                continue
            group.mentions.sort(key=lambda m: (m.start, m.end))
            source = group.source
            component = (
                "kg_proposed"
                if source == "proposed"
                else _SOURCE_COMPONENT.get(source, "kg_entities")
            )
            confidence = 0.8 if source == "proposed" else _SOURCE_CONFIDENCE.get(source, 0.5)
            if len(group.mentions) > 1:
                confidence = min(1.0, confidence + 0.05)
            out.append(
                Entity(
                    type=group.type,
                    key=group.key,
                    label=group.label,
                    iri=entity_iri(group.type.value, group.key),
                    mentions=group.mentions,
                    aliases=sorted(group.aliases),
                    proposed=group.proposed,
                    derived=group.broader,
                    component=component,
                    confidence=round(confidence, 3),
                )
            )
        out.sort(key=lambda e: (e.mentions[0].start, e.mentions[0].end, e.type.value, e.key))
        return out

    def _claims(self, entities: list[Entity], proposed: list[Entity]) -> list[Claim]:
        doc, abstract = self.doc, self.record.abstract
        text = doc_text(doc)
        claims = []
        for span in doc.spans.get("kg_claims", []):
            s_start, s_end = self.offsets(span)
            text_clean = span.text
            lead = _CLAIM_LEAD.match(text_clean) or _WE_LEAD.match(text_clean)
            c_start_clean = span.start_char + (lead.end() if lead else 0)
            c_end_clean = span.end_char
            while c_end_clean > c_start_clean and text[c_end_clean - 1] in " .;":
                c_end_clean -= 1
            start, end = self.cleaned.to_original(c_start_clean, c_end_clean)
            values = []
            for v in find_values(text[c_start_clean:c_end_clean]):
                vs, ve = self.cleaned.to_original(c_start_clean + v.start, c_start_clean + v.end)
                values.append(Value(abstract[vs:ve], v.number, v.unit, vs, ve))
            inside = [
                e for e in entities if any(start <= m.start and m.end <= end for m in e.mentions)
            ]

            def first(kind: EntityType, pool: list[Entity] = inside) -> Entity | None:
                return next((e for e in pool if e.type is kind), None)

            subject = next((e for e in proposed if e in inside), None)
            if subject is None and proposed and re.search(r"\b(?:we|our|ours)\b", span.text, re.I):
                subject = proposed[0]
            if subject is None:
                subject = first(EntityType.METHOD) or first(EntityType.TASK)
            baseline = None
            m = re.search(r"\b(?:outperform\w*|surpass\w*|than|over|beat\w*)\b", span.text)
            if m:
                cut = self.cleaned.to_original(span.start_char + m.end(), span.end_char)[0]
                after = [
                    e
                    for e in inside
                    if e.type is EntityType.METHOD
                    and not e.proposed
                    and any(mm.start >= cut and mm.end <= end for mm in e.mentions)
                ]
                baseline = after[0] if after else None
            kind = ClaimKind(span.label_)
            claims.append(
                Claim(
                    text=abstract[start:end],
                    start=start,
                    end=end,
                    kind=kind,
                    sentence_start=s_start,
                    sentence_end=s_end,
                    subject=subject,
                    values=values,
                    metric=first(EntityType.METRIC),
                    dataset=first(EntityType.DATASET),
                    baseline=baseline,
                    component="kg_claims",
                    confidence=0.75 if kind is ClaimKind.CONTRIBUTION or values else 0.6,
                )
            )
        return claims


_WORKER: Extractor | None = None


def extract_batch(records: list[Record]) -> list[PaperExtraction]:
    """Extract a batch in this process, building one Extractor per process lazily.

    Module-level and picklable by reference, so a distributed engine (dask,
    multiprocessing) can map it over batches of records.
    """
    global _WORKER
    if _WORKER is None:
        _WORKER = Extractor()
    return list(_WORKER.extract(records))
