"""Corpus-level consolidation: one node per concept, decided from every paper's evidence.

Extraction works one abstract at a time, so one concept can come out as several
nodes (``RL`` and ``reinforcement learning``; ``GLUE`` and ``GLUE benchmark``;
``Qwen2.5-7B`` a dataset in one paper, a method in another). This module holds
the pure part of the remedy, applied on every ingest and delete by
:mod:`kg.store.consolidation`:

* each paper records its raw evidence in its own graph: one ``kg:SurfaceForm``
  per entity as the paper named and typed it (key, type, label, aliases,
  confidence, and ``kg:resolvedTo`` the node it now stands for), and one
  ``kg:AcronymDefinition`` per ``long form (SF)`` pair it defines;
* :func:`resolve` maps every surface form to a canonical node, deterministically
  from the whole corpus's evidence (so ingest order never matters): acronyms a
  paper uses bare take the long form the corpus defines them as; ``X benchmark``
  / ``X dataset`` / ``X games`` / ``X suite`` join ``X``; a node takes the type
  most of its papers give it (weighted by confidence), and a model name is never
  a dataset;
* :func:`rewrite_graph` rewrites one paper graph to the nodes the corpus chose.

Phrases that can never be a node (``high computational cost``, ``3D data``) are
removed or reduced to their head before a paper is mapped
(:func:`kg.mapping.phrases.prune`): that decision needs no corpus.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from pyoxigraph import Literal, NamedNode, Quad

from kg import schema
from kg.extraction.canonical import canonical_key, is_acronym
from kg.mapping.phrases import activity_heads, is_model_name
from kg.mapping.phrases import words as word_set
from kg.model import Entity, EntityType, PaperExtraction
from kg.vocab import KG, RDF, XSD, entity_iri

_TYPES = tuple(k.name for k in schema.ENTITY_TYPES)
_RELATIONS = {KG[r.name].value: (k.name, r.proposed) for k, r in schema.relations()}
"""Paper → entity property → (its entity type, whether it is the "proposed" one)."""
_TASK, _METHOD, _DATASET, _METRIC = (
    EntityType.TASK.value,
    EntityType.METHOD.value,
    EntityType.DATASET.value,
    EntityType.METRIC.value,
)
_ROLE_TYPES = {
    KG.claimMetric.value: _METRIC,
    KG.claimDataset.value: _DATASET,
    KG.resultMetric.value: _METRIC,
    KG.resultDataset.value: _DATASET,
    KG.resultTask.value: _TASK,
    KG.resultMethod.value: _METHOD,
}
"""Claim and result slots whose node must be of one type (``ontology/shapes.ttl``)."""
BARE_PER_DEFINITION = 5
"""An acronym used bare by more than this many papers per paper defining it keeps its own node."""
_TYPE_ORDER = {t: i for i, t in enumerate((_METHOD, _TASK, _METRIC, _DATASET))}
"""Ties between types go to the first: a name is more often a method than a dataset."""


# ------------------------------------------------------------------ evidence


def surface_iri(paper: NamedNode, entity_iri_value: str) -> NamedNode:
    """The IRI of a paper's surface form of an entity: its type segment and key
    tail, as the paper's statement and mention IRIs end."""
    return NamedNode(f"{paper.value}/surface/{_raw_tail(entity_iri_value)}")


def _raw_tail(iri: str) -> str:
    """``dataset/glue-benchmark`` of an entity IRI (type segment and encoded key)."""
    return "/".join(iri.rsplit("/", 2)[-2:])


def evidence_quads(
    extraction: PaperExtraction, paper: NamedNode, graph: NamedNode, described: Iterable[Entity]
) -> list[Quad]:
    """The paper's raw evidence: a surface form for every entity it names (the
    described ones: its entities and its claims' and results' slots), and its
    acronym definitions."""
    quads: list[Quad] = []
    best: dict[str, Entity] = {}
    aliases: dict[str, set[str]] = defaultdict(set)
    for entity in described:
        aliases[entity.iri].update(entity.aliases)
        if entity.iri not in best or entity.confidence > best[entity.iri].confidence:
            best[entity.iri] = entity
    for iri, entity in sorted(best.items()):
        s = surface_iri(paper, iri)
        quads += [
            Quad(s, RDF.type, KG.SurfaceForm, graph),
            Quad(s, KG.surfaceType, KG[entity.type.value], graph),
            Quad(s, KG.surfaceKey, Literal(entity.key), graph),
            Quad(s, KG.text, Literal(entity.label), graph),
            Quad(s, KG.confidence, _double(min(1.0, max(0.0, entity.confidence))), graph),
            Quad(s, KG.resolvedTo, NamedNode(iri), graph),
        ]
        quads += [
            Quad(s, KG.surfaceAlias, Literal(a), graph)
            for a in sorted(aliases[iri])
            if a != entity.label and a.strip()
        ]
    for short, long in sorted(set(extraction.acronyms)):
        key = canonical_key(short)
        if not key or not canonical_key(long):
            continue
        d = NamedNode(f"{paper.value}/acronym/{quote(key, safe='-._~')}")
        quads += [
            Quad(d, RDF.type, KG.AcronymDefinition, graph),
            Quad(d, KG.shortForm, Literal(short), graph),
            Quad(d, KG.longForm, Literal(long), graph),
        ]
    return quads


def _double(value: float) -> Literal:
    return Literal(repr(round(float(value), 3)), datatype=XSD.double)


@dataclass(frozen=True, slots=True)
class Surface:
    """One surface form of one paper, as read back from the store."""

    paper: str
    """The paper's IRI."""
    iri: str
    type: str
    key: str
    label: str
    confidence: float
    aliases: tuple[str, ...] = ()
    resolved: str | None = None


@dataclass(frozen=True, slots=True)
class Target:
    """The node a surface form stands for."""

    iri: str
    type: str
    key: str


@dataclass(slots=True)
class Node:
    """One canonical node and the evidence that decided it."""

    key: str
    type: str = ""
    label: str = ""
    names: set[str] = field(default_factory=set)
    votes: dict[str, float] = field(default_factory=dict)
    """Type → summed confidence (each paper's best surface of that type)."""
    papers: dict[str, int] = field(default_factory=dict)
    """Type → how many papers typed it so."""

    @property
    def iri(self) -> str:
        return entity_iri(self.type, self.key)


@dataclass(slots=True)
class Resolution:
    """The corpus's decision: every surface form's node, and every node."""

    targets: dict[str, Target]
    """Surface IRI → its node."""
    nodes: dict[str, Node]
    """Node IRI → the node."""


def _acronym_shaped(label: str) -> bool:
    return " " not in label.strip() and is_acronym(label)


def _short(text: str) -> str:
    """An acronym as written, without a plural ``s`` ("LLMs" is "LLM")."""
    text = text.strip()
    return text[:-1] if len(text) > 2 and text.endswith("s") and text[:-1].isupper() else text


def acronym_short(text: str, *, shaped: bool = True) -> str | None:
    """The acronym a label is written as ("LLMs" → "LLM"), or None when the label
    is not one; ``shaped=False`` for a definition's short form, taken as given."""
    if shaped and not _acronym_shaped(text):
        return None
    return _short(text) or None


def strip_chain(key: str, label: str) -> list[tuple[str, str]]:
    """Every ``(key, label)`` that removing container words from the end gives
    (``glue-benchmark-suite`` → ``glue-benchmark`` → ``glue``), whether or not
    :func:`resolve` would take the step: what a node may be joined to."""
    out = []
    stripped = _strip_container(key, label)
    while stripped is not None and stripped[0] and stripped not in out:
        out.append(stripped)
        stripped = _strip_container(*stripped)
    return out


def corpus_acronyms(
    definitions: Iterable[tuple[str, str, str]], bare: dict[str, set[str]] | None = None
) -> dict[str, tuple[str, str]]:
    """Short form as written → (long key, long label): for each acronym, the long
    form most papers define it as (ties: the smaller key). ``definitions`` are
    ``(paper, short, long)``; ``bare``: short form → papers that write it without
    defining it. An acronym far more papers use bare than define is a name in its
    own right (``COCO``, defined once as something else) and is left alone."""
    papers: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    labels: dict[tuple[str, str], set[str]] = defaultdict(set)
    for paper, short, long in definitions:
        s, lk = _short(short), canonical_key(long)
        if s and lk and canonical_key(s) != lk:
            papers[s][lk].add(paper)
            labels[(s, lk)].add(long)
    out = {}
    for short, longs in papers.items():
        long_key = min(longs, key=lambda k: (-len(longs[k]), k))
        definers = {p for ps in longs.values() for p in ps}
        if len((bare or {}).get(short, set()) - definers) > BARE_PER_DEFINITION * len(definers):
            continue
        out[short] = (long_key, min(labels[(short, long_key)]))
    return out


def _strip_container(key: str, label: str) -> tuple[str, str] | None:
    """``glue-benchmark`` / "GLUE benchmark" → ``glue`` / "GLUE"; None when the
    key does not end in a container word or nothing is left."""
    words = key.split("-")
    tokens = label.split()
    for size in (2, 1):
        suffix = "-".join(words[-size:])
        if len(words) > size and suffix in word_set("container_suffixes"):
            rest = tokens[:-size] if len(tokens) > size else tokens[:1]
            return "-".join(words[:-size]), " ".join(rest)
    return None


def _named(label: str) -> bool:
    return any(c.isupper() or c.isdigit() for c in label)


def resolve(surfaces: Iterable[Surface], definitions: Iterable[tuple[str, str, str]]) -> Resolution:
    """Map every surface form to its canonical node (see the module docstring)."""
    surfaces = sorted(surfaces, key=lambda s: s.iri)
    surfaces = list(surfaces)
    bare: dict[str, set[str]] = defaultdict(set)
    for s in surfaces:
        if _acronym_shaped(s.label):
            bare[_short(s.label)].add(s.paper)
    definitions = list(definitions)
    acronyms = corpus_acronyms(definitions, bare)
    defined: dict[str, set[str]] = defaultdict(set)  # short form → long forms as written
    for _paper, short, written in definitions:
        defined[_short(short)].add(written)
    keys = {s.key for s in surfaces}
    votes_by_key: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for s in surfaces:
        votes_by_key[s.key][s.type] += s.confidence

    def dataset_like(key: str) -> bool:
        votes = votes_by_key.get(key) or {}
        return bool(votes) and max(votes, key=lambda t: (votes[t], -_TYPE_ORDER[t])) == _DATASET

    def canonical(s: Surface) -> tuple[str, str]:
        key, label = s.key, s.label
        if _acronym_shaped(label) and _short(label) in acronyms:
            key, label = acronyms[_short(label)]
        stripped = _strip_container(key, label)
        while stripped is not None:
            short_key, short_label = stripped
            if not short_key or short_key in word_set("container_suffixes"):
                break
            # "GLUE benchmark" joins "GLUE"; "reasoning benchmark" joins nothing
            # unless the corpus has a dataset "reasoning".
            if not (_named(short_label) or (short_key in keys and dataset_like(short_key))):
                break
            key, label = short_key, short_label
            if _acronym_shaped(label) and _short(label) in acronyms:
                key, label = acronyms[_short(label)]
            stripped = _strip_container(key, label)
        return key, label

    by_key: dict[str, Node] = {}
    members: dict[str, list[Surface]] = defaultdict(list)
    derived: dict[str, set[str]] = defaultdict(set)
    for s in surfaces:
        key, label = canonical(s)
        members[key].append(s)
        if label != s.label:
            derived[key].add(label)
    for key, group in members.items():
        node = Node(key)
        best: dict[tuple[str, str], float] = {}
        for s in group:
            slot = (s.paper, s.type)
            best[slot] = max(best.get(slot, 0.0), s.confidence)
        for (_, type_name), conf in best.items():
            node.votes[type_name] = node.votes.get(type_name, 0.0) + conf
            node.papers[type_name] = node.papers.get(type_name, 0) + 1
        node.label = _label(key, group, derived[key])
        votes = dict(node.votes)  # the evidence stays as the papers gave it
        if _DATASET in votes:
            # A model is a method, and a phrase headed by an activity ("natural
            # language processing") is its head's type, whatever a sentence made of it.
            instead = _METHOD if any(is_model_name(s.label) for s in group) else None
            instead = instead or activity_heads().get(key.rsplit("-", 1)[-1])
            instead = instead or _not_a_resource(group, defined, votes)
            if instead is not None:
                votes[instead] = votes.get(instead, 0.0) + votes.pop(_DATASET)
        node.type = min(
            votes, key=lambda t: (-round(votes[t], 6), -node.papers.get(t, 0), _TYPE_ORDER[t])
        )
        node.names = {s.label for s in group} | {a for s in group for a in s.aliases} | derived[key]
        by_key[key] = node
    targets: dict[str, Target] = {}
    for key, group in members.items():
        node = by_key[key]
        for s in group:
            targets[s.iri] = Target(node.iri, node.type, key)
    # The short forms the corpus defines for a node are its aliases too.
    for s in surfaces:
        long = acronyms.get(_short(s.label)) if _acronym_shaped(s.label) else None
        if long is not None and long[0] in by_key:
            by_key[long[0]].names.add(s.label)
    for node in by_key.values():
        node.names.discard(node.label)
    return Resolution(targets, {n.iri: n for n in by_key.values()})


def _common_phrase(text: str) -> bool:
    """Whether a phrase is written as a common noun phrase ("graphical user
    interfaces", "AI-generated content"): two lower-case words at least, the
    head among them, no other word but acronyms, and no container head ("GPQA
    benchmark" names a resource)."""
    words = [w for w in re.split(r"[\s\-]+", text.strip()) if w]
    return (
        sum(w.islower() for w in words) >= 2
        and words[-1].isalpha()
        and words[-1].islower()
        and words[-1] not in word_set("container_suffixes")
        and all(w.islower() or is_acronym(w) for w in words)
    )


def _not_a_resource(
    group: list[Surface], defined: dict[str, set[str]], votes: dict[str, float]
) -> str | None:
    """The type a node some papers type as a dataset has instead, when its own
    names say it is no named resource: a paper writes it, or defines its
    acronym, as a common noun phrase ("GUIs (graphical user interfaces)"), or
    defines its acronym as an activity ("DAPO (Dynamic sAmpling Policy
    Optimization)"). A dataset's name is a proper name. The type is the best
    of the others the papers gave, else the phrase's head's, else Task."""
    longs = {
        long for s in group if _acronym_shaped(s.label) for long in defined.get(_short(s.label), ())
    }
    heads = {canonical_key(long).rsplit("-", 1)[-1] for long in longs}
    kinds = [activity_heads().get(h) for h in sorted(heads)]
    common = any(_common_phrase(t) for t in longs | {s.label for s in group})
    if not common and not any(kinds):
        return None
    others = {t: v for t, v in votes.items() if t != _DATASET}
    if others:
        return min(others, key=lambda t: (-round(others[t], 6), _TYPE_ORDER[t]))
    return next((k for k in kinds if k), _TASK)


def _label(key: str, group: list[Surface], derived: set[str]) -> str:
    """The preferred label: the one most papers write among surfaces of this very
    key (ties: the smaller label); else a label derived from a long form."""
    counts: dict[str, set[str]] = defaultdict(set)
    for s in group:
        if s.key == key:
            counts[s.label].add(s.paper)
    if counts:
        return min(counts, key=lambda lab: (-len(counts[lab]), lab))
    return min(derived) if derived else min(s.label for s in group)


# ------------------------------------------------------------------ rewriting


def text(term: Any) -> str:
    """A term's lexical value (our graphs hold no RDF-star triple terms)."""
    return str(term.value)


def _surface_of(paper: str, node_iri: str) -> str:
    """The surface form behind a statement or mention of a paper: those IRIs end
    in the raw entity's type segment and key, as surface IRIs do."""
    return f"{paper}/surface/" + "/".join(node_iri.rsplit("/", 2)[-2:])


def rewrite_graph(
    quads: Iterable[Quad], paper: NamedNode, targets: dict[str, Target]
) -> list[Quad]:
    """One paper graph with every entity reference on the node the corpus chose.

    Statements, mentions and surface forms carry their raw identity in their
    IRIs, so they are rewritten exactly; the paper's links are rebuilt from its
    statements (with the relation of the node's type); a claim or result slot
    follows the surface forms that named its node, and is left out when the
    node's type no longer fits the slot (a dataset slot holding a model). A
    graph without surface forms (stored before consolidation) is returned as is.
    """
    quads = list(quads)
    p = paper.value
    resolved = {text(q.subject): text(q.object) for q in quads if q.predicate == KG.resolvedTo}
    if not resolved:
        return quads
    by_current: dict[str, list[str]] = defaultdict(list)
    for surface, current in sorted(resolved.items()):
        by_current[current].append(surface)
    statement_prefix, mention_prefix = p + "/statement/", p + "/mention/"
    proposed = {
        text(q.subject): _RELATIONS.get(text(q.object), ("", False))[1]
        for q in quads
        if q.predicate == RDF.predicate
    }

    def slot_target(current: str) -> Target | None:
        candidates = by_current.get(current, [])
        found = {targets[c] for c in candidates if c in targets}
        if len(found) <= 1:
            return found.pop() if found else None
        exact = f"{p}/surface/{_raw_tail(current)}"
        return targets.get(exact) or targets.get(candidates[0])

    out: dict[Quad, None] = {}
    for q in quads:
        s, pred, g = text(q.subject), q.predicate, q.graph_name
        if s == p and text(pred) in _RELATIONS:
            continue  # rebuilt from the statements below
        o = q.object
        if s.startswith((statement_prefix, mention_prefix)) and pred in (
            RDF.predicate,
            RDF.object,
            KG.denotes,
        ):
            t = targets.get(_surface_of(p, s))
            if t is None:
                out[q] = None
                continue
            if pred == KG.denotes:
                out[Quad(q.subject, pred, NamedNode(t.iri), g)] = None
                continue
            relation = KG[schema.kind(t.type).relation(proposed=proposed.get(s, False)).name]
            if pred == RDF.predicate:
                out[Quad(q.subject, pred, relation, g)] = None
            else:
                out[Quad(q.subject, pred, NamedNode(t.iri), g)] = None
                out[Quad(paper, relation, NamedNode(t.iri), g)] = None
            continue
        if pred == KG.resolvedTo:
            t = targets.get(s)
            out[Quad(q.subject, pred, NamedNode(t.iri), g) if t else q] = None
            continue
        if isinstance(o, NamedNode) and o.value in by_current:
            t = slot_target(o.value)
            if t is None:
                out[q] = None
            elif _ROLE_TYPES.get(pred.value, t.type) == t.type:
                out[Quad(q.subject, pred, NamedNode(t.iri), g)] = None
            continue
        out[q] = None
    return list(out)


def type_evidence_iri(node_iri: str, type_name: str) -> str:
    """The IRI of a node's evidence for one type."""
    return f"{node_iri}/typeEvidence/{type_name}"
