"""Scoring the extractor (``kg eval``): against the project's gold, and on SciERC.

Gold (``--gold``, format of ``shared/gold/GUIDELINES.md``): per field
(proposed methods, tasks, methods, datasets, metrics, claims) precision, recall
and F1, two ways:

- **strict**: a predicted entity matches a gold entry when one of its forms
  (label, aliases, mention texts) has the same canonical key
  (:func:`kg.extraction.canonical.canonical_key`: case, LaTeX, hyphens and the
  head's plural folded) as one of the entry's listed forms;
- **lenient**: token overlap: the two forms share at least half of the content
  tokens of the shorter one.

Scoring is many-to-one: precision is the share of predictions that match some
gold entry, recall the share of gold entries matched by some prediction (so
"LLM unlearning" and the broader "unlearning" both count as right for the gold
entry ``["LLM unlearning", "unlearning"]``). Claims match by span: lenient when
the predicted span covers at least half of the shorter of the two spans,
strict when the texts are equal after whitespace folding. On leniently matched
claims the values are checked: the multiset of (number, unit) must be equal (a
gold number copied without its unit, "+5.1" for "+5.1 AP", takes the unit read
by the prediction).

SciERC (``--scierc``): exact character-span micro P/R/F1 over Task, Method,
Metric and Material (our Dataset), overall and per type.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg import schema
from kg.extraction.canonical import canonical_key, singular
from kg.extraction.values import parse_value
from kg.model import EntityType, PaperExtraction, Record
from kg.reading import latex
from kg.reading.readers import read_paths, unique

FIELDS = ("proposed", *(r.key for _, r in schema.groups() if not r.proposed))
"""The gold annotation's entity fields: ``proposed`` and one per kind (:mod:`kg.schema`)."""
_STOP = frozenset(
    "a an the of for in on and or to with by via from as at its their our this that is "  # noqa: SIM905
    "are be using based".split()
)


# ------------------------------------------------------------------ matching


def tokens(text: str) -> list[str]:
    """Content tokens of a form: LaTeX removed, lower-cased, singular, stopwords dropped."""
    words = re.findall(r"[^\W_]+", latex.clean_label(text).lower().replace("-", " "))
    return [singular(w) for w in words if w not in _STOP]


def lenient_match(a: str, b: str) -> bool:
    """Token overlap: at least half of the shorter form's content tokens are shared."""
    ta, tb = set(tokens(a)), set(tokens(b))
    if not ta or not tb:
        return False
    shared = len(ta & tb)
    return shared >= 1 and shared >= 0.5 * min(len(ta), len(tb))


def strict_match(a: str, b: str) -> bool:
    """Normalised exact match (canonical keys equal)."""
    ka = canonical_key(a)
    return bool(ka) and ka == canonical_key(b)


@dataclass(slots=True)
class PRF:
    """Counts for precision / recall / F1."""

    tp_pred: int = 0
    pred: int = 0
    tp_gold: int = 0
    gold: int = 0

    def add(self, other: PRF) -> None:
        self.tp_pred += other.tp_pred
        self.pred += other.pred
        self.tp_gold += other.tp_gold
        self.gold += other.gold

    @property
    def precision(self) -> float:
        return self.tp_pred / self.pred if self.pred else 0.0

    @property
    def recall(self) -> float:
        return self.tp_gold / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def to_json(self) -> dict[str, float]:
        return {
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "f1": round(self.f1, 4),
            "predicted": self.pred,
            "gold": self.gold,
        }


def score_forms(
    predicted: Sequence[Sequence[str]], gold: Sequence[Sequence[str]], *, lenient: bool
) -> tuple[PRF, list[int], list[int]]:
    """Score predicted entities against gold entries; each is a list of surface forms.

    Returns the counts plus the indices of unmatched predictions and gold entries.
    """
    match = lenient_match if lenient else strict_match

    def hit(p: Sequence[str], g: Sequence[str]) -> bool:
        return any(match(a, b) for a in p for b in g)

    wrong = [i for i, p in enumerate(predicted) if not any(hit(p, g) for g in gold)]
    missed = [j for j, g in enumerate(gold) if not any(hit(p, g) for p in predicted)]
    prf = PRF(len(predicted) - len(wrong), len(predicted), len(gold) - len(missed), len(gold))
    return prf, wrong, missed


def overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    """Characters two spans share."""
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def claim_match(pred: tuple[int, int], gold: tuple[int, int]) -> bool:
    """Lenient claim match: the overlap covers half of the shorter span."""
    shorter = min(pred[1] - pred[0], gold[1] - gold[0])
    return shorter > 0 and overlap(pred, gold) >= 0.5 * shorter


def value_key(number: float | None, unit: str | None, text: str) -> tuple[Any, ...]:
    """What must agree for a value to count as right: number and unit (text if no number)."""
    if number is None:
        return ("text", unit, re.sub(r"\s+", "", latex.clean(text).text))
    return ("num", round(number, 6), unit)


# ------------------------------------------------------------------ gold


def read_gold(path: str | Path) -> dict[str, dict[str, Any]]:
    """Gold annotations by paper id."""
    gold = {}
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                obj = json.loads(line)
                gold[obj["id"]] = obj
    return gold


def gold_forms(entry: dict[str, Any], name: str) -> list[list[str]]:
    """The gold entries of a field as lists of acceptable forms."""
    if name == "proposed":
        out = []
        for item in entry.get("proposed", []):
            forms = [item["name"]]
            if item.get("long_form"):
                forms.append(item["long_form"])
            forms += item.get("alt_forms", [])
            out.append(forms)
        return out
    return [list(forms) for forms in entry.get(name, [])]


def predicted_forms(paper: PaperExtraction, name: str) -> list[list[str]]:
    """A paper's predicted entities of a field, each as its label, aliases and mention texts."""
    if name == "proposed":
        ents = [e for e in paper.entities if e.proposed]
    else:
        kind = schema.kind(name)
        split = any(r.proposed for r in kind.relations)
        ents = paper.of_type(EntityType(kind.name), proposed=False if split else None)
    out = []
    for e in ents:
        if e.derived:
            continue  # scored as `kg extract` lists them: what the text names
        forms = [e.label, *e.aliases]
        forms += [m.text for m in e.mentions if m.text not in forms]
        out.append(forms)
    return out


@dataclass(slots=True)
class GoldReport:
    """The result of scoring against gold."""

    papers: int
    missing: list[str]
    fields: dict[str, dict[str, PRF]]
    claim_values_correct: int = 0
    claim_values_total: int = 0
    claim_values_with_numbers_correct: int = 0
    claim_values_with_numbers_total: int = 0
    claim_kind_correct: int = 0
    errors: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "papers": self.papers,
            "missing": self.missing,
            "fields": {
                f: {mode: prf.to_json() for mode, prf in modes.items()}
                for f, modes in self.fields.items()
            },
            "claim_values": {
                "matched_claims": self.claim_values_total,
                "correct": self.claim_values_correct,
                "accuracy": _ratio(self.claim_values_correct, self.claim_values_total),
                "matched_claims_with_values": self.claim_values_with_numbers_total,
                "accuracy_with_values": _ratio(
                    self.claim_values_with_numbers_correct, self.claim_values_with_numbers_total
                ),
                "kind_accuracy": _ratio(self.claim_kind_correct, self.claim_values_total),
            },
            "errors": self.errors,
        }

    def table(self) -> str:
        """A plain-text table for people."""
        lines = [
            f"papers scored: {self.papers}"
            + (f" (missing: {len(self.missing)})" if self.missing else ""),
            f"{'field':10} {'mode':8} {'P':>6} {'R':>6} {'F1':>6} {'pred':>5} {'gold':>5}",
        ]
        for name, modes in self.fields.items():
            for mode, prf in modes.items():
                lines.append(
                    f"{name:10} {mode:8} {prf.precision:6.3f} {prf.recall:6.3f} {prf.f1:6.3f} "
                    f"{prf.pred:5d} {prf.gold:5d}"
                )
        ok, total = self.claim_values_correct, self.claim_values_total
        ok_v, total_v = self.claim_values_with_numbers_correct, self.claim_values_with_numbers_total
        lines.append(
            f"claim values correct (number+unit) on matched claims: {ok}/{total} = "
            f"{_ratio(ok, total):.3f}; on matched claims with values: {ok_v}/{total_v} = "
            f"{_ratio(ok_v, total_v):.3f}"
        )
        lines.append(f"claim kind correct on matched claims: {self.claim_kind_correct}/{total}")
        return "\n".join(lines)


def _ratio(a: int, b: int) -> float:
    return round(a / b, 4) if b else 0.0


def score_paper(
    paper: PaperExtraction, gold: dict[str, Any], report: GoldReport, *, verbose: bool = False
) -> None:
    """Add one paper's scores (and, with ``verbose``, its errors) to a report."""
    errors: dict[str, Any] = {}
    for name in FIELDS:
        pred = predicted_forms(paper, name)
        gold_entries = gold_forms(gold, name)
        for mode in ("lenient", "strict"):
            prf, wrong, missed = score_forms(pred, gold_entries, lenient=mode == "lenient")
            report.fields[name][mode].add(prf)
            if verbose and mode == "lenient" and (wrong or missed):
                errors[name] = {
                    "false_positives": [pred[i][0] for i in wrong],
                    "missed": [gold_entries[j][0] for j in missed],
                }
    abstract = paper.record.abstract
    gold_claims = []
    for claim in gold.get("claims", []):
        start = abstract.find(claim["text"])
        if start < 0:
            start = latex.clean(abstract).text.find(claim["text"])
        if start >= 0:
            gold_claims.append((claim, (start, start + len(claim["text"]))))
    pred_spans = [(c.start, c.end) for c in paper.claims]
    for mode in ("lenient", "strict"):
        if mode == "lenient":
            hit = claim_match
        else:

            def hit(p: tuple[int, int], g: tuple[int, int]) -> bool:
                fold = re.compile(r"\s+")
                return fold.sub(" ", abstract[p[0] : p[1]]) == fold.sub(" ", abstract[g[0] : g[1]])

        wrong = [p for p in pred_spans if not any(hit(p, g) for _, g in gold_claims)]
        missed = [c for c, g in gold_claims if not any(hit(p, g) for p in pred_spans)]
        report.fields["claims"][mode].add(
            PRF(
                len(pred_spans) - len(wrong),
                len(pred_spans),
                len(gold_claims) - len(missed),
                len(gold_claims),
            )
        )
        if verbose and mode == "lenient" and (wrong or missed):
            errors["claims"] = {
                "false_positives": [abstract[s:e] for s, e in wrong],
                "missed": [c["text"] for c in missed],
            }
    value_errors = []
    for claim, span in gold_claims:
        best = max(paper.claims, key=lambda c: overlap((c.start, c.end), span), default=None)
        if best is None or not claim_match((best.start, best.end), span):
            continue
        # Only the values inside the gold clause count: the predicted claim may be longer.
        pred_values = Counter(
            value_key(v.number, v.unit, v.text)
            for v in best.values
            if overlap((v.start, v.end), span) > 0
        )
        gold_parsed = [(parse_value(v), v) for v in claim.get("values", [])]
        # A gold number copied without its unit ("+5.1" of "+5.1 AP") takes the unit
        # the prediction read from the next word: the annotators kept numbers minimal.
        gold_values = Counter(
            value_key(number, unit or _unit_for(number, pred_values), text)
            for (number, unit), text in gold_parsed
        )
        right = pred_values == gold_values
        report.claim_values_total += 1
        report.claim_values_correct += right
        report.claim_kind_correct += str(best.kind) == claim["kind"]
        if gold_values or pred_values:
            report.claim_values_with_numbers_total += 1
            report.claim_values_with_numbers_correct += right
        if not right:
            value_errors.append(
                {
                    "claim": claim["text"],
                    "gold": claim.get("values", []),
                    "predicted": [v.text for v in best.values],
                }
            )
    if verbose and value_errors:
        errors["claim_values"] = value_errors
    if errors:
        report.errors[paper.record.external_id] = errors


def _unit_for(number: float | None, predicted: Counter[tuple[Any, ...]]) -> str | None:
    if number is None:
        return None
    units = [k[2] for k in predicted if k[0] == "num" and k[1] == round(number, 6)]
    return units[0] if len(units) == 1 else None


def records_by_id(paths: Iterable[str | Path]) -> dict[str, Record]:
    """Records of the input files by id, also by the id derived from the abstract."""
    out: dict[str, Record] = {}
    for item in unique(read_paths(paths)):
        if isinstance(item, Record):
            out.setdefault(item.external_id, item)
            out.setdefault(item.id, item)
    return out


def evaluate_gold(
    gold_path: str | Path,
    inputs: Iterable[str | Path],
    *,
    extractor: Any | None = None,
    verbose: bool = False,
) -> GoldReport:
    """Run the extractor over the gold papers found in ``inputs`` and score it."""
    from kg.extraction import Extractor

    gold = read_gold(gold_path)
    records = records_by_id(inputs)
    wanted = [(gid, records[gid]) for gid in gold if gid in records]
    missing = [gid for gid in gold if gid not in records]
    report = GoldReport(
        papers=len(wanted),
        missing=missing,
        fields={f: {"lenient": PRF(), "strict": PRF()} for f in (*FIELDS, "claims")},
    )
    extractor = extractor or Extractor()
    for (gid, _), paper in zip(wanted, extractor.extract(r for _, r in wanted), strict=True):
        score_paper(paper, gold[gid], report, verbose=verbose)
    return report


# ------------------------------------------------------------------ SciERC

SCIERC_TYPES = ("Task", "Method", "Metric", "Material")
# SciERC calls datasets "Material"; its other labels are our type names.
_TO_SCIERC = {t.value: t.value for t in EntityType} | {EntityType.DATASET.value: "Material"}


def evaluate_scierc(
    path: str | Path, *, extractor: Any | None = None, layer: str = "typed"
) -> dict[str, dict[str, float]]:
    """Exact-span micro P/R/F1 on a SciERC split, overall (``ALL``) and per type.

    Layers: ``typed`` (default) scores every span of the shipped SciERC
    recogniser with the type our rules give it (``doc.spans["kg_typed"]``:
    lexicon, then head noun, then the recogniser's label); ``ner`` the
    recogniser's own labels; ``entities`` every mention of every entity the
    extractor finally outputs, as ingest runs it, without the recogniser (after
    its precision filters, so recall on SciERC's broad notion of "Material" and
    "Method" is low by design). A given ``extractor`` must have a recogniser for
    the first two.
    """
    from kg.extraction import Extractor
    from kg.extraction.pipeline import MODEL_DIR, NER_NAME
    from kg.training.recogniser import read_scierc, span_scores

    docs = read_scierc(path)
    extractor = extractor or Extractor(model_dir=None if layer == "entities" else MODEL_DIR)
    if layer in ("typed", "ner") and NER_NAME not in extractor.nlp.pipe_names:
        raise ValueError(f"layer {layer!r} scores a recogniser's spans: the pipeline has none")
    gold = [(d.doc_key, s, e, t) for d in docs for s, e, t in set(d.entities) if t in SCIERC_TYPES]
    pred: set[tuple[str, int, int, str]] = set()
    if layer == "ner":
        # The recogniser reads the English pipeline's tags and parse, not our rules.
        rules = [n for n in extractor.nlp.pipe_names if n.startswith("kg_") and n != NER_NAME]
        with extractor.nlp.select_pipes(disable=rules):
            for d, doc in zip(docs, extractor.nlp.pipe(d.text for d in docs), strict=True):
                pred |= {
                    (d.doc_key, ent.start_char, ent.end_char, ent.label_)
                    for ent in doc.ents
                    if ent.label_ in SCIERC_TYPES
                }
    elif layer == "typed":
        for d, doc in zip(docs, extractor.nlp.pipe(d.text for d in docs), strict=True):
            pred |= {
                (d.doc_key, s.start_char, s.end_char, _TO_SCIERC[s.label_])
                for s in doc.spans["kg_typed"]
            }
    elif layer == "entities":
        records = [Record(id=d.doc_key, abstract=d.text) for d in docs]
        for paper in extractor.extract(records):
            for ent in paper.entities:
                for m in ent.mentions:
                    pred.add((paper.record.id, m.start, m.end, _TO_SCIERC[ent.type.value]))
    else:
        raise ValueError(f"unknown layer {layer!r}: typed, ner or entities")
    return span_scores(gold, pred)


def scierc_table(scores: dict[str, dict[str, float]]) -> str:
    """A plain-text table of SciERC scores."""
    lines = [f"{'type':10} {'P':>6} {'R':>6} {'F1':>6} {'pred':>5} {'gold':>5}"]
    for label, s in scores.items():
        lines.append(
            f"{label:10} {s['precision']:6.3f} {s['recall']:6.3f} {s['f1']:6.3f} "
            f"{int(s['predicted']):5d} {int(s['gold']):5d}"
        )
    return "\n".join(lines)
