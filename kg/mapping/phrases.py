"""Phrases that are never nodes, and names that are models: decisions about one
name that need no corpus, used by consolidation (:mod:`kg.mapping.consolidation`).

* :func:`prune` takes out of a paper's extraction the phrases that name nothing
  in particular ("3D data", "significant improvement") and reduces judgements to
  their head ("high computational cost" → "computational cost"): a generic head
  with only uninformative modifiers, or an evaluative modifier in front;
* :func:`is_model_name` tells a trained model's name by its shape (a family
  name, versioned or sized: ``Qwen2.5-7B``, ``GPT-4o``, ``Gemini 2.5``): such a
  node is a method, never a dataset.

The word lists are data: ``patterns/consolidation.json`` and the typer's
``evaluative_modifiers`` and ``model_families`` of ``patterns/wordlists.json``.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import cache
from importlib import resources
from typing import Any

from kg.extraction.canonical import canonical_key, word_list
from kg.model import Entity, PaperExtraction
from kg.vocab import entity_iri


@cache
def _data() -> dict[str, Any]:
    path = resources.files("kg.extraction") / "patterns" / "consolidation.json"
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def words(name: str) -> frozenset[str]:
    """A word list of ``patterns/consolidation.json``, lower-cased."""
    return frozenset(w.lower() for w in _data()[name])


@cache
def model_families() -> frozenset[str]:
    """Model family names, lower-cased (``qwen``, ``llama``, ``gpt``)."""
    return frozenset(w.lower() for w in word_list("model_families")) | words("model_families")


@cache
def activity_heads() -> dict[str, str]:
    """Head words that name an activity or a technique (``learning``, ``attention``,
    ``processing``, ``optimization``) → that type: a phrase with such a head is
    never a dataset."""
    path = resources.files("kg.extraction") / "patterns" / "heads.jsonl"
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    heads = {r["head"]: r["type"] for r in rows if r["type"] in ("Task", "Method")}
    return (
        heads
        | {h: "Task" for h in words("activity_heads")}
        | {h: "Method" for h in words("technique_heads")}
    )


_SIZE = re.compile(r"^\d+(?:\.\d+)?[bBmM]$")  # 7B, 1.5B, 350M (not ImageNet-1K)
_FAMILY_PREFIX = re.compile(r"^[A-Za-z]+(?:-[A-Za-z]+)?")


def is_model_name(label: str) -> bool:
    """Whether a label names a trained model: a known family written alone or
    versioned (``Qwen2.5-7B``, ``GPT-4o``, ``Gemini 2.5``, ``DeepSeek-R1``,
    ``Llama-3-8B``) or any name with a parameter count (``Foo-7B``)."""
    families = model_families()
    text = label.strip()
    if text.lower() in families:
        return True
    parts = [p for p in re.split(r"[\s_/-]+", text) if p]
    if not parts:
        return False
    if any(_SIZE.match(p) for p in parts[1:]) or (len(parts) == 1 and _SIZE.match(parts[0])):
        return True
    first = parts[0]
    candidates = {first.lower(), first.rstrip("0123456789.").lower()}
    prefix = _FAMILY_PREFIX.match(text)
    if prefix:
        candidates.add(prefix.group(0).lower())
    if not candidates & families:
        return False
    # A family name followed by a version, a size or nothing else that is a word
    # ("GPT-4o", "Gemini 2.5", "Qwen2.5-7B-Instruct"), not "CLIP score".
    rest = parts[1:]
    versioned = first.lower() not in families or any(c.isdigit() for c in first)
    return versioned or all(
        any(c.isdigit() for c in p) or p.lower() in words("model_suffixes") or len(p) <= 2
        for p in rest
    )


# ------------------------------------------------------------------ pruning


@cache
def _evaluative_modifiers() -> frozenset[str]:
    return word_list("evaluative_modifiers") | words("evaluative_modifiers")


@cache
def _generic_head_keys() -> frozenset[str]:
    return frozenset(canonical_key(g) for g in words("generic_heads"))


def reduce_phrase(label: str) -> str | None:
    """What a phrase leaves to be a node: the label itself, the label without a
    leading judgement ("high accuracy" → "accuracy"), or None when nothing
    specific is left ("significant improvement", "3D data", "2D image", "3D")."""
    if label.strip().lower() in words("not_entities"):
        return None  # "GPU", "GitHub", "English": mentioned, but not research entities
    tokens = label.split()
    evaluative = _evaluative_modifiers()
    while tokens and tokens[0].lower() in evaluative:
        tokens = tokens[1:]
    if not tokens:
        return None  # a judgement alone
    if all(t.lower() in words("uninformative_modifiers") for t in tokens):
        return None  # "3D", "real-world": a modifier with nothing to modify
    modifiers = [t.lower() for t in tokens[:-1]]
    if canonical_key(tokens[-1]) in _generic_head_keys() and all(
        m in words("uninformative_modifiers") for m in modifiers
    ):
        return None  # "3D data", "2D image", "improvement"
    return " ".join(tokens)


def prune(extraction: PaperExtraction) -> PaperExtraction:
    """The extraction without phrases that are never nodes; judgements reduced to
    their head ("high computational cost" → "computational cost"). Claims and
    results that named a removed entity lose that slot; two entities that become
    one are merged (mentions joined, the higher confidence kept)."""
    renamed: dict[int, Entity | None] = {}

    def new(entity: Entity) -> Entity | None:
        if id(entity) in renamed:
            return renamed[id(entity)]
        label = reduce_phrase(entity.label)
        out: Entity | None
        if label is None:
            out = None
        elif label == entity.label:
            out = entity
        else:
            key = canonical_key(label)
            out = replace(entity, key=key, label=label, iri=entity_iri(entity.type.value, key))
        renamed[id(entity)] = out
        return out

    merged: dict[str, Entity] = {}
    for entity in extraction.entities:
        target = new(entity)
        if target is None:
            continue
        known = merged.get(target.iri)
        if known is None:
            merged[target.iri] = replace(target, mentions=list(target.mentions))
            continue
        spans = {(m.start, m.end) for m in known.mentions}
        known.mentions.extend(m for m in target.mentions if (m.start, m.end) not in spans)
        known.mentions.sort(key=lambda m: (m.start, m.end))
        known.aliases = sorted({*known.aliases, *target.aliases, target.label} - {known.label})
        known.confidence = max(known.confidence, target.confidence)
        known.proposed = known.proposed or target.proposed
    if len(merged) == len(extraction.entities) and all(
        renamed.get(id(e)) is e for e in extraction.entities
    ):
        return extraction  # nothing to prune: the common case, no copies

    def ref(entity: Entity | None) -> Entity | None:
        if entity is None:
            return None
        target = new(entity)
        return merged.get(target.iri, target) if target is not None else None

    claims = [
        replace(
            c,
            subject=ref(c.subject),
            metric=ref(c.metric),
            dataset=ref(c.dataset),
            baseline=ref(c.baseline),
        )
        for c in extraction.claims
    ]
    by_claim = {id(old): fresh for old, fresh in zip(extraction.claims, claims, strict=True)}
    results = [
        replace(
            r,
            claim=by_claim.get(id(r.claim), r.claim),
            metric=ref(r.metric),
            dataset=ref(r.dataset),
            task=ref(r.task),
            method=ref(r.method),
        )
        for r in extraction.results
    ]
    return replace(extraction, entities=list(merged.values()), claims=claims, results=results)
