"""The extractor's spaCy components, registered as factories.

Each component is a class plus a factory made with ``Language.factory``; its
patterns are JSONL files under ``kg/extraction/patterns/`` handed in through
registered functions with versioned names (``kg.lexicon.v1`` …), so a config
can swap them. The factories are found through the ``spacy_factories`` entry
point in ``pyproject.toml``. The classes live in ``entities.py``, ``proposals.py``
and ``claims.py``; this module holds the small ones and the registrations.

Components write only to their own slots:

- ``kg_abbreviations`` → ``doc._.kg_abbreviations``: ``(long start, long end, short start,
  short end)`` token offsets of acronym definitions;
- ``kg_lexicon`` → ``doc.spans["kg_lexicon"]``: known datasets, metrics, methods, tasks;
- ``kg_entities`` → ``doc.spans["kg_entities"]``: typed entity mentions merged from
  the statistical NER (``doc.ents``), the lexicon, acronym definitions and head-noun rules;
  also ``doc.spans["kg_typed"]``: every recogniser span re-typed by the same rules,
  unfiltered (the layer scored on SciERC);
- ``kg_proposed`` → ``doc.spans["kg_proposed"]``: what the paper says it introduces;
- ``kg_claims`` → ``doc.spans["kg_claims"]``: claim sentences labelled with their kind.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from spacy.language import Language
from spacy.matcher import PhraseMatcher
from spacy.tokens import Doc, Span
from spacy.util import filter_spans, registry

from kg.extraction.abbreviations import find_abbreviations
from kg.extraction.canonical import is_acronym
from kg.extraction.claims import ClaimDetector
from kg.extraction.entities import EntityCollector
from kg.extraction.learned import CandidateTyper
from kg.extraction.linear_model import CLAIMS_DIR, TYPER_DIR, LinearModel
from kg.extraction.proposals import ProposalDetector

if not Doc.has_extension("kg_abbreviations"):
    Doc.set_extension("kg_abbreviations", default=None)


def read_patterns(name: str) -> list[dict[str, Any]]:
    """The rows of a bundled JSONL pattern file."""
    path = resources.files("kg.extraction") / "patterns" / name
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


@registry.misc("kg.lexicon.v1")
def lexicon_v1() -> list[dict[str, Any]]:
    """Known datasets, metrics, methods and tasks: ``{"label", "type"}`` rows.

    ``lexicon.jsonl`` plus the typed entries of ``acronyms.jsonl`` (both the
    acronym and its long form), so "RKHS" and "MDP" are found as methods.
    """
    rows = read_patterns("lexicon.jsonl")
    for row in read_patterns("acronyms.jsonl"):
        if "type" in row:
            rows.append({"label": row["acronym"], "type": row["type"]})
            rows.append({"label": row["long_form"], "type": row["type"]})
    return rows


@registry.misc("kg.heads.v1")
def heads_v1() -> list[dict[str, Any]]:
    """Head nouns that type a noun phrase: ``{"head", "type"}`` rows."""
    return read_patterns("heads.jsonl")


@registry.misc("kg.generic.v1")
def generic_v1() -> list[str]:
    """Words never annotated alone ("method", "model", "data" …)."""
    return [row["word"] for row in read_patterns("generic.jsonl")]


@registry.misc("kg.proposal_triggers.v1")
def proposal_triggers_v1() -> list[dict[str, Any]]:
    """Matcher patterns of "we propose / introduce / present …" and "called X"."""
    return read_patterns("proposed.jsonl")


@registry.misc("kg.claim_cues.v1")
def claim_cues_v1() -> list[dict[str, Any]]:
    """Matcher patterns that signal a claim of a kind (``{"kind", "pattern"}``)."""
    return read_patterns("claims.jsonl")


# ---------------------------------------------------------------- abbreviations


class AbbreviationDetector:
    """Schwartz–Hearst acronym definitions, stored as span pairs on the doc."""

    def __init__(self, nlp: Language, name: str) -> None:
        self.name = name

    def __call__(self, doc: Doc) -> Doc:
        # Plain token offsets, not Spans: they survive the pickling of n_process > 1.
        doc._.kg_abbreviations = [
            (long.start, long.end, short.start, short.end)
            for long, short in find_abbreviations(doc)
        ]
        return doc


@Language.factory("kg_abbreviations", assigns=["doc._.kg_abbreviations"])
def make_abbreviations(nlp: Language, name: str) -> AbbreviationDetector:
    """Find acronym definitions: "Group Relative Policy Optimization (GRPO)"."""
    return AbbreviationDetector(nlp, name)


# ---------------------------------------------------------------- lexicon


class LexiconRuler:
    """Phrase matching against a lexicon: case-insensitive words, case-sensitive acronyms."""

    def __init__(self, nlp: Language, name: str, *, lexicon: list[dict[str, Any]]) -> None:
        self.name = name
        self.lower = PhraseMatcher(nlp.vocab, attr="LOWER")
        self.exact = PhraseMatcher(nlp.vocab, attr="ORTH")
        self.types: dict[str, str] = {}
        by_key: dict[tuple[str, bool], list[Doc]] = {}
        for row in lexicon:
            label, kind = row["label"], row["type"]
            case_sensitive = any(is_acronym(w) for w in label.split()) or label.isupper()
            key = f"{kind}|{label}"
            self.types[key] = kind
            by_key.setdefault((key, case_sensitive), []).append(nlp.make_doc(label))
        for (key, case_sensitive), docs in sorted(by_key.items()):
            (self.exact if case_sensitive else self.lower).add(key, docs)

    def __call__(self, doc: Doc) -> Doc:
        spans = []
        for matcher in (self.lower, self.exact):
            for match_id, start, end in matcher(doc):
                key = doc.vocab.strings[match_id]
                kind, label = key.split("|", 1)
                spans.append(Span(doc, start, end, label=kind, kb_id=label))
        doc.spans["kg_lexicon"] = filter_spans(spans)
        return doc


@Language.factory(
    "kg_lexicon",
    default_config={"lexicon": {"@misc": "kg.lexicon.v1"}},
    assigns=["doc.spans"],
)
def make_lexicon(nlp: Language, name: str, *, lexicon: list[dict[str, Any]]) -> LexiconRuler:
    """Mark known datasets, metrics, methods and tasks."""
    return LexiconRuler(nlp, name, lexicon=lexicon)


# ---------------------------------------------------------------- entities


@Language.factory(
    "kg_entities",
    default_config={
        "heads": {"@misc": "kg.heads.v1"},
        "generic": {"@misc": "kg.generic.v1"},
        "max_tokens": 8,
        "use_noun_chunks": True,
        "lexicon": {"@misc": "kg.lexicon.v1"},
    },
    assigns=["doc.spans"],
    requires=["doc.ents"],
)
def make_entities(
    nlp: Language,
    name: str,
    *,
    heads: list[dict[str, Any]],
    generic: list[str],
    max_tokens: int,
    use_noun_chunks: bool,
    lexicon: list[dict[str, Any]],
) -> EntityCollector:
    """Merge the NER, lexicon, acronym and head-noun evidence into typed mentions."""
    return EntityCollector(
        nlp,
        name,
        heads=heads,
        generic=generic,
        max_tokens=max_tokens,
        use_noun_chunks=use_noun_chunks,
        lexicon=lexicon,
    )


# ---------------------------------------------------------------- proposed methods


@Language.factory(
    "kg_proposed",
    default_config={
        "triggers": {"@misc": "kg.proposal_triggers.v1"},
        "max_per_doc": 4,
    },
    assigns=["doc.spans"],
    requires=["token.dep", "token.pos"],
)
def make_proposed(
    nlp: Language,
    name: str,
    *,
    triggers: list[dict[str, Any]],
    max_per_doc: int,
) -> ProposalDetector:
    """Find the methods, models or benchmarks the paper itself introduces."""
    return ProposalDetector(nlp, name, triggers=triggers, max_per_doc=max_per_doc)


# ---------------------------------------------------------------- claims


@registry.misc("kg.claim_model.v1")
def claim_model_v1() -> LinearModel | None:
    """The shipped claim model (``kg/extraction/claim_model/``), or None when absent."""
    return LinearModel.load(CLAIMS_DIR) if (CLAIMS_DIR / "weights.npz").exists() else None


@Language.factory(
    "kg_claims",
    default_config={
        "cues": {"@misc": "kg.claim_cues.v1"},
        "model": {"@misc": "kg.claim_model.v1"},
        "threshold": 0.3,
        "max_claims": 5,
    },
    assigns=["doc.spans"],
)
def make_claims(
    nlp: Language,
    name: str,
    *,
    cues: list[dict[str, Any]],
    model: LinearModel | None,
    threshold: float,
    max_claims: int,
) -> ClaimDetector:
    """Label claim sentences with a kind (contribution, performance, …).

    ``threshold`` (on 1 - P(not a claim)) and ``max_claims`` per abstract were
    chosen by cross-validation on ``iclr-train.jsonl`` (benchmarks/quality.md);
    the guidelines keep one to five claims per abstract.
    """
    return ClaimDetector(
        nlp, name, cues=cues, model=model, threshold=threshold, max_claims=max_claims
    )


# ---------------------------------------------------------------- learned typer


@registry.misc("kg.typer_model.v1")
def typer_model_v1() -> LinearModel | None:
    """The shipped typer weights (``kg/extraction/typer/``), or None when absent."""
    return LinearModel.load(TYPER_DIR) if (TYPER_DIR / "weights.npz").exists() else None


@Language.factory(
    "kg_typer",
    default_config={
        "model": {"@misc": "kg.typer_model.v1"},
        "threshold": 0.5,
        "scale": {},
        "proposals": "union",
        "proposed_threshold": 0.85,
        "keep_lexicon": ["Dataset", "Metric", "Method"],
    },
    assigns=["doc.spans"],
    requires=["token.dep", "token.pos"],
)
def make_typer(
    nlp: Language,
    name: str,
    *,
    model: LinearModel | None,
    threshold: float,
    scale: dict[str, float],
    proposals: str,
    proposed_threshold: float,
    keep_lexicon: list[str],
) -> CandidateTyper:
    """Decide which candidate phrases are tasks, methods, datasets, metrics or proposals.

    The defaults were chosen on ``iclr-dev.jsonl`` (see benchmarks/quality.md):
    ``threshold`` on 1 - P(O), ``scale`` multiplies a class's probability (none
    since the typer learns from the silver too: with 120 gold abstracts datasets
    and metrics needed ×1.5 and ×2, now no scale helps dev), ``proposals`` "union"
    adds the model's Proposed decisions above ``proposed_threshold`` to the rules';
    lexicon matches of the ``keep_lexicon`` types are kept whatever the model says.
    """
    return CandidateTyper(
        name,
        model=model,
        threshold=threshold,
        scale=scale,
        proposals=proposals,
        proposed_threshold=proposed_threshold,
        keep_lexicon=tuple(keep_lexicon),
    )
