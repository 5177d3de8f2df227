"""Result records from the marks of the ``kg_results`` component.

:func:`assemble_results` turns each ``doc._.kg_results`` mark into a
:class:`~kg.model.Result`: the value as written in the abstract, the metric and
dataset nodes its spans name (the paper's own entity when one covers the span,
else a node of its own), the task named nearest in the sentence, and the method:
the claim's baseline for a baseline's number, else the claim's subject or the
paper's proposed method.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from spacy.tokens import Doc, Span

from kg.extraction.canonical import canonical_key, display_label
from kg.extraction.result_datasets import benchmark_pattern, benchmark_proposal, normal_label
from kg.extraction.results import result_words_v1
from kg.extraction.values import BARE_NUMBER
from kg.model import Claim, Entity, EntityType, Mention, Result, Value
from kg.reading import latex


def assemble_results(
    doc: Doc,
    cleaned: latex.Cleaned,
    abstract: str,
    claims: list[Claim],
    entities: list[Entity],
    identity: Callable[[Span], tuple[str, str, list[str]]],
) -> tuple[list[Result], list[Entity]]:
    """The :class:`Result` records of a paper from the marks of ``kg_results``, and
    the metric nodes they name that are not among ``entities`` (with the mention
    each was found at): what a number measures is a metric the paper names.

    ``identity`` is the assembly's key/label/aliases resolver, so that a metric
    written as a defined acronym ("ASR") meets its long form.
    """
    proposed = [e for e in entities if e.proposed]
    bench = benchmark_proposal(proposed, abstract, _bench_patterns())
    resolve = _Resolver(cleaned, entities, identity, abstract)
    results: list[Result] = []
    for vs_c, ve_c, ms, me, relative, baseline, ds, de, declared in doc._.kg_results or []:
        vs, ve = cleaned.to_original(vs_c, ve_c)
        index = next((i for i, c in enumerate(claims) if c.start <= vs and ve <= c.end), None)
        if index is None:
            continue
        claim = claims[index]
        text = abstract[vs:ve]
        value = next((v for v in claim.values if v.start == vs and v.end == ve), None)
        if value is None:
            bare = BARE_NUMBER.search(latex.clean(text).text)
            if bare is None:
                continue
            value = Value(text, float(bare.group().replace("−", "-").lstrip("+±")), None, vs, ve)
        if value.number is None:
            continue
        metric = resolve(doc[ms:me], EntityType.METRIC) if ms >= 0 else None
        if metric is not None and metric.key.rsplit("-", 1)[-1] in _vague():
            metric = None  # "13–38% average performance": the typer's metric names no measure
        if metric is not None:
            resolve.named(metric, doc[ms:me], claim)
        in_sentence = [
            e
            for e in entities
            if any(
                claim.sentence_start <= m.start and m.end <= claim.sentence_end for m in e.mentions
            )
        ]
        # The nearest dataset only when the sentence names no place: "… on SCUBA" naming
        # the paper's own benchmark must not fall back to another name in the sentence.
        if ds >= 0:
            dataset = resolve(doc[ds:de], EntityType.DATASET, declared)
            names_bench = bench is not None and resolve.covers(doc[ds:de], bench)
        else:
            dataset = _nearest(in_sentence, EntityType.DATASET, vs, abstract)
            names_bench = True
        if dataset is None and metric is not None and bench is not None and names_bench:
            # A benchmark paper's numbers that name no other place ("the best model
            # reaches only 39.3% on our benchmark") are scores on its benchmark, which
            # the text calls one: a dataset node, declared.
            dataset = resolve.same(bench, EntityType.DATASET)
        if dataset is not None:
            normal = normal_label(dataset.label, _label_rules())
            if normal != dataset.label:
                # the paper's own "ImageNet-512x512", taken as the nearest dataset
                dataset = resolve.labelled(EntityType.DATASET, normal)
        if metric is not None and dataset is not None and metric.key == "score":
            # "an overall score of 0.73 on GenEval" is the GenEval score: the board of
            # the benchmark's own score, not of every "score"
            metric = resolve.labelled(EntityType.METRIC, f"{dataset.label} score")
        task = _nearest(in_sentence, EntityType.TASK, vs)
        if baseline:
            method = claim.baseline
            is_proposed = False
        elif bench is not None and dataset is not None and dataset.key == bench.key:
            # On a paper's own benchmark the numbers are the models' it evaluates:
            # the model named last before the number in its clause ("GPT-5 achieves
            # 57.39%", "Qwen2.5-VL-32B: 39.54%"), never the benchmark itself.
            method = _before(in_sentence, EntityType.METHOD, vs, abstract, bench)
            if method is None and claim.subject is not None and claim.subject.key != bench.key:
                method = claim.subject if claim.subject.type is EntityType.METHOD else None
            is_proposed = bool(method is not None and method.proposed)
        else:
            subject = claim.subject
            if subject is not None and subject.type is EntityType.METHOD:
                method = subject
            else:
                method = proposed[0] if proposed else None
            is_proposed = bool(method is not None and method.proposed)
        results.append(
            Result(
                value=value,
                claim=claim,
                claim_index=index,
                metric=metric,
                dataset=dataset,
                task=task,
                method=method,
                proposed=is_proposed,
                relative=relative,
                metric_text=display_label(doc[ms:me].text) if metric is not None else None,
                confidence=0.7 if metric is not None else 0.4,
            )
        )
    _pair_respectively(results, entities, abstract)
    used = {id(r.metric) for r in results if r.metric is not None}
    return results, [e for e in resolve.named_nodes() if id(e) in used]


_RESPECTIVELY = re.compile(r"\brespectively\b")


def _pair_respectively(results: list[Result], entities: list[Entity], abstract: str) -> None:
    """ "A, B and C reach 56.4%, 26.9% and 33.6%, respectively": the i-th number
    is the i-th method's, when the clause names as many methods as numbers."""
    by_claim: dict[int, list[Result]] = {}
    for r in results:
        if not r.relative and r.value.number is not None:
            by_claim.setdefault(r.claim_index, []).append(r)
    for group in by_claim.values():
        claim = group[0].claim
        cue = _RESPECTIVELY.search(abstract, claim.start, claim.end)
        if cue is None or len(group) < 2:
            continue
        values = sorted(
            (r for r in group if r.value.end <= cue.start()), key=lambda r: r.value.start
        )
        if len(values) < 2:
            continue
        first = values[0].value.start
        mentions = sorted(
            (m.start, e)
            for e in entities
            if e.type is EntityType.METHOD
            for m in e.mentions
            if claim.start <= m.start
            and m.end <= first
            and not _CLAUSE_BREAK.search(abstract, m.end, first)
        )
        methods: list[Entity] = []
        for _, e in mentions:
            if e not in methods:
                methods.append(e)
        if len(methods) != len(values):
            continue
        for r, method in zip(values, methods, strict=True):
            r.method = method
            r.proposed = method.proposed


class _Resolver:
    """The entity a span of a result names: the paper's entity of that type that
    covers it, else a node of its own (what the typer missed or mistyped)."""

    def __init__(
        self,
        cleaned: latex.Cleaned,
        entities: list[Entity],
        identity: Callable[[Span], tuple[str, str, list[str]]],
        abstract: str,
    ) -> None:
        self.cleaned = cleaned
        self.entities = entities
        self.identity = identity
        self.abstract = abstract
        self.by_key = {(e.type, e.key): e for e in entities}
        self.listed = {id(e) for e in entities}

    def __call__(self, span: Span, kind: EntityType, declared: bool = False) -> Entity | None:
        start, end = self.cleaned.to_original(span.start_char, span.end_char)
        covering = [
            e for e in self.entities if any(m.start <= start and end <= m.end for m in e.mentions)
        ]
        # The paper's own entity only when it names exactly this span: a longer
        # mention ("state-of-the-art FID", "the MBPP benchmark") would split a
        # leaderboard by its wording.
        found = next(
            (
                e
                for e in covering
                if e.type is kind and any((m.start, m.end) == (start, end) for m in e.mentions)
            ),
            None,
        )
        if found is not None and not (
            kind is EntityType.DATASET and normal_label(found.label, _label_rules()) != found.label
        ):
            return found
        if kind is EntityType.DATASET and not declared and any(e.proposed for e in covering):
            return None  # "on X" naming the paper's own method is no dataset
        key, label, aliases = self.identity(span)
        if not key:
            key, label, aliases = canonical_key(span.text), display_label(span.text), []
        if kind is EntityType.DATASET:
            written = display_label(span.text)
            normal = normal_label(written, _label_rules())
            if normal != written:
                key, label, aliases = canonical_key(normal), normal, [written]
        return self._own(kind, key, label, aliases, declared)

    def named(self, entity: Entity, span: Span, claim: Claim) -> None:
        """Record where the text names a node the resolver made (not the paper's own entity)."""
        if id(entity) in self.listed:
            return
        start, end = self.cleaned.to_original(span.start_char, span.end_char)
        if any((m.start, m.end) == (start, end) for m in entity.mentions):
            return
        entity.mentions.append(
            Mention(self.abstract[start:end], start, end, claim.sentence_start, claim.sentence_end)
        )

    def named_nodes(self) -> list[Entity]:
        """The nodes made here that the text names at a span: they are the paper's too."""
        return [e for e in self.by_key.values() if id(e) not in self.listed and e.mentions]

    def covers(self, span: Span, entity: Entity) -> bool:
        """Whether one of the entity's mentions covers the span."""
        start, end = self.cleaned.to_original(span.start_char, span.end_char)
        return any(m.start <= start and end <= m.end for m in entity.mentions)

    def same(self, entity: Entity, kind: EntityType) -> Entity | None:
        """A node of that type with the entity's key, label and aliases, declared."""
        return self._own(kind, entity.key, entity.label, entity.aliases, True)

    def labelled(self, kind: EntityType, label: str) -> Entity | None:
        """The paper's entity of that type with this label's key, else a node of its own."""
        return self._own(kind, canonical_key(label), label, [], False)

    def _own(
        self, kind: EntityType, key: str, label: str, aliases: list[str], declared: bool
    ) -> Entity | None:
        from kg.vocab import entity_iri

        if not key:
            return None
        entity = self.by_key.get((kind, key))
        if entity is None:
            entity = Entity(
                kind,
                key,
                label,
                entity_iri(kind.value, key),
                aliases=aliases,
                component="kg_results",
                # "the X benchmark" says what X is: that outweighs a typer's guess
                # elsewhere in the paper when the corpus decides the node's type.
                confidence=0.9 if declared else 0.6,
            )
            self.by_key[(kind, key)] = entity
        return entity


@cache
def _vague() -> frozenset[str]:
    """Words that name no measure ("performance"), from ``results.json``."""
    return frozenset(result_words_v1()["vague_measures"])


@cache
def _bench_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The benchmark cues, from the dataset head words of ``results.json``."""
    return benchmark_pattern(frozenset(result_words_v1()["dataset_heads"]))


@cache
def _label_rules() -> list[tuple[re.Pattern[str], str]]:
    """The dataset label rules of ``results.json``, compiled once."""
    return [(re.compile(p), r) for p, r in result_words_v1()["dataset_label_rules"]]


_CLAUSE_BREAK = re.compile(r";|,\s+(?:while|whereas|but|although|yet)\b")


def _nearest(
    entities: list[Entity], kind: EntityType, at: int, text: str | None = None
) -> Entity | None:
    """The entity of that kind mentioned nearest to ``at``; with ``text`` (the
    abstract) only in the same clause: "… on OSWorld … , while others reach 39%"."""
    best: tuple[int, Entity] | None = None
    for e in entities:
        if e.type is not kind:
            continue
        for m in e.mentions:
            lo, hi = sorted((m.end, at))
            if text is not None and _CLAUSE_BREAK.search(text, lo, hi):
                continue
            d = abs(m.start - at)
            if best is None or d < best[0]:
                best = (d, e)
    return best[1] if best is not None else None


def _before(
    entities: list[Entity], kind: EntityType, at: int, text: str, skip: Entity
) -> Entity | None:
    """The entity of that kind whose mention ends last before ``at`` in the same
    clause, other than ``skip``."""
    best: tuple[int, Entity] | None = None
    for e in entities:
        if e.type is not kind or e.key == skip.key:
            continue
        for m in e.mentions:
            if (
                m.end <= at
                and not _CLAUSE_BREAK.search(text, m.end, at)
                and (best is None or m.end > best[0])
            ):
                best = (m.end, e)
    return best[1] if best is not None else None
