"""``kg eval`` and ``kg train``: scoring and training the extractor."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kg.cli.common import fail
from kg.cpus import available_cpus
from kg.resources import sample_corpus


@click.command(name="eval")
@click.option(
    "--gold",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Gold annotations (JSONL, shared/gold/GUIDELINES.md format).",
)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    type=click.Path(path_type=str),
    help="Abstract files holding the gold papers (default: the bundled sample).",
)
@click.option(
    "--scierc",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A SciERC split (train/dev/test .jsonl) to score entity spans on.",
)
@click.option(
    "--layer",
    type=click.Choice(["typed", "ner", "entities"]),
    default="typed",
    show_default=True,
    help="SciERC: the shipped recogniser's spans typed by our rules, the recogniser "
    "alone, or the extractor's final entities (which it does not use).",
)
@click.option("--verbose", "-v", is_flag=True, help="List errors per paper.")
@click.option("--json", "as_json", is_flag=True, help="Print the scores as JSON.")
def eval_(
    gold: Path | None,
    inputs: tuple[str, ...],
    scierc: Path | None,
    layer: str,
    verbose: bool,
    as_json: bool,
) -> None:
    """Score extraction against gold annotations or SciERC."""
    from kg.training.evaluation import evaluate_gold, evaluate_scierc, scierc_table

    if gold is None and scierc is None:
        fail("give --gold FILE or --scierc FILE")
    if gold is not None:
        report = evaluate_gold(gold, list(inputs) or sample_corpus(), verbose=verbose)
        if as_json:
            data = report.to_json()
            if not verbose:
                data.pop("errors")
            click.echo(json.dumps(data, indent=2))
        else:
            click.echo(report.table())
            if verbose:
                click.echo(json.dumps(report.errors, indent=2, ensure_ascii=False))
    if scierc is not None:
        scores = evaluate_scierc(scierc, layer=layer)
        click.echo(json.dumps(scores, indent=2) if as_json else scierc_table(scores))


SCIERC_IN_SHARED = Path("data/scierc")
TYPER_GOLD_IN_SHARED = Path("gold/iclr-train.jsonl")
ICLR_TEXTS_IN_SHARED = Path("data/iclr2026_abstracts/iclr2026_accepted_abstracts.jsonl")


@click.command()
@click.option(
    "--shared",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The shared data directory (../shared): train every shipped model as shipped "
    "(the SciERC recogniser on train + dev, the typer and the claim model on the ICLR "
    "train gold).",
)
@click.option(
    "--scierc-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Directory with SciERC train.jsonl and dev.jsonl (default: in --shared).",
)
@click.option(
    "--only",
    type=click.Choice(["recogniser", "typer", "claims"]),
    default=None,
    help="Train one model only (default: all three with --shared, the recogniser without).",
)
@click.option(
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("kg-recogniser"),
    show_default=True,
    help="Directory to write the recogniser to (relative to the current directory). The "
    "installed model is replaced only when asked: --output kg/extraction/model.",
)
@click.option(
    "--typer-output",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("kg-typer"),
    show_default=True,
    help="Directory to write the typer to; the installed one is replaced only when "
    "asked: --typer-output kg/extraction/typer.",
)
@click.option(
    "--claims-output",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("kg-claims"),
    show_default=True,
    help="Directory to write the claim model to; the installed one is replaced only "
    "when asked: --claims-output kg/extraction/claim_model.",
)
@click.option(
    "--silver/--no-silver",
    default=True,
    show_default=True,
    help="Train the typer on the shipped silver annotations of further ICLR "
    "abstracts (kg/training/silver) beside the gold, as the shipped typer is.",
)
@click.option(
    "--processes",
    "-j",
    default=None,
    type=click.IntRange(min=1),
    help="Processes that parse the typer's training abstracts (default: the CPUs this "
    "process may use; the features, and so the typer, are the same for any number).",
)
@click.option("--epochs", default=70, show_default=True)
@click.option("--seed", default=0, show_default=True)
@click.option(
    "--include-dev",
    is_flag=True,
    help="Train on train + dev for exactly --epochs epochs instead of keeping "
    "the best epoch on dev.",
)
@click.option(
    "--architecture",
    type=click.Choice(["syntax", "sm", "scratch"]),
    default="syntax",
    show_default=True,
    help="The English NER's tok2vec plus tag and dependency features (syntax), "
    "the English NER fine-tuned as it is (sm), or a wider one from scratch.",
)
@click.option("--width", default=128, show_default=True, help="Scratch tok2vec width.")
@click.option("--learn-rate", default=0.0005, show_default=True)
@click.option("--dropout", default=0.25, show_default=True)
@click.option("--patience", default=15, show_default=True)
def train(
    shared: Path | None,
    scierc_dir: Path | None,
    only: str | None,
    output: Path,
    typer_output: Path,
    claims_output: Path,
    silver: bool,
    processes: int | None,
    epochs: int,
    seed: int,
    include_dev: bool,
    architecture: str,
    width: int,
    learn_rate: float,
    dropout: float,
    patience: int,
) -> None:
    """Train the extractor's models (see docs/extraction.md).

    ``kg train --shared ../shared`` reproduces every shipped model: the SciERC
    recogniser (train + dev, 70 epochs), which ``kg eval --scierc`` scores; the
    typer (ICLR train gold and the shipped silver), which extraction runs without
    the recogniser; and the claim model (ICLR train gold), trained on what the
    pipeline reads with that typer.
    """
    if shared is None and scierc_dir is None:
        fail("give --shared DIR (every shipped model) or --scierc-dir DIR")
    steps = [only] if only else (["recogniser", "typer", "claims"] if shared else ["recogniser"])
    log = lambda line: click.echo(line, err=True)  # noqa: E731
    if "recogniser" in steps:
        from kg.training.recogniser import train as run_train

        scierc_dir = scierc_dir or shared / SCIERC_IN_SHARED  # type: ignore[operator]
        best = run_train(
            scierc_dir / "train.jsonl",
            scierc_dir / "dev.jsonl",
            output,
            epochs=epochs,
            seed=seed,
            include_dev=include_dev or shared is not None,
            architecture=architecture,
            width=width,
            learn_rate=learn_rate,
            dropout=dropout,
            patience=patience,
            log=log,
        )
        click.echo(json.dumps({k: round(v, 4) for k, v in best.items()}))
        click.echo(f"kg: model written to {output}", err=True)
    if {"typer", "claims"} & set(steps) and shared is None:
        fail("the typer and the claim model train on the ICLR gold: give --shared DIR")
    gold = (shared / TYPER_GOLD_IN_SHARED, [shared / ICLR_TEXTS_IN_SHARED]) if shared else None
    if "typer" in steps and gold:
        from kg.training.typer import SILVER, train_typer

        # Extraction runs the typer without the recogniser (it added nothing
        # measurable at 29 % of the CPU): the typer learns without its spans too.
        train_typer(
            *gold,
            typer_output,
            silver_paths=[SILVER] if silver else [],
            n_process=processes or available_cpus(),
            log=log,
        )
    if "claims" in steps and gold:
        from kg.extraction.linear_model import LinearModel
        from kg.training.claims import train_claims

        # The claim model reads what the pipeline reads, proposals included: with
        # the typer trained just now, else with the installed one.
        typer = LinearModel.load(typer_output) if "typer" in steps else "shipped"
        train_claims(*gold, claims_output, typer=typer, log=log)
