"""``kg leaderboard``: the leaderboards of the REST API on the command line."""

from __future__ import annotations

import json
import textwrap

import click

from kg.cli.common import STORE_OPTION, fail, open_for_reading
from kg.read.results import DATASET, METHOD, METRIC, TASK, ResultsIndex, indexed_results
from kg.store.index import with_index
from kg.store.index.results import IndexedResults


def _reader(location: str) -> ResultsIndex | IndexedResults:
    """The store's indexed results when its index is in step, else a scan of it."""
    store = open_for_reading(location)
    if store.native() is not None:  # an embedded store's index lies beside it
        indexed = indexed_results(with_index(store))
        if indexed is not None:
            return indexed
    return ResultsIndex(store)


def _resolve(index: ResultsIndex | IndexedResults, segment: str, value: str | None) -> str | None:
    """An entity IRI from an IRI, key, label or alias (any case); exits when unknown."""
    if value is None:
        return None
    iri = index.find(segment, value)
    if iri is None:
        fail(f"no {segment} {value!r} (give its key, label or IRI)")
    return iri


@click.command()
@click.argument("board", nargs=-1, metavar="[DATASET METRIC]")
@click.option("--task", help="Only boards with results of papers on this task (or narrower).")
@click.option("--min-results", default=3, show_default=True, help="Fewest results per board.")
@click.option("--limit", default=20, show_default=True, help="Boards or rows to show.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON, as the REST API does.")
@STORE_OPTION
def leaderboard(
    board: tuple[str, ...],
    task: str | None,
    min_results: int,
    limit: int,
    as_json: bool,
    store: str,
) -> None:
    """List leaderboards, or show one: DATASET METRIC (keys, labels or IRIs).

    A leaderboard ranks the absolute results reported on a dataset in a metric,
    best first by the metric's direction, each with the sentence it comes from.
    """
    if len(board) not in (0, 2):
        fail("give both DATASET and METRIC, or neither to list the leaderboards")
    index = _reader(store)
    if not board:
        boards = index.leaderboards(task=_resolve(index, TASK, task), min_results=min_results)
        if as_json:
            click.echo(json.dumps({"total": len(boards), "items": boards[:limit]}, indent=1))
            return
        click.echo(f"{'results':>7}  {DATASET:<32}  {METRIC:<32}  better")
        for b in boards[:limit]:
            higher = b[METRIC]["higher_is_better"]
            arrow = {True: "higher", False: "lower", None: "?"}[higher]
            click.echo(
                f"{b['results']:>7}  {(b[DATASET]['label'] or '')[:32]:<32}  "
                f"{(b[METRIC]['label'] or '')[:32]:<32}  {arrow}"
            )
        click.echo(f"({len(boards)} leaderboards with ≥ {min_results} results)")
        return
    dataset_name, metric_name = board
    found = index.leaderboard(
        _resolve(index, DATASET, dataset_name), _resolve(index, METRIC, metric_name)
    )
    if found is None:
        fail(f"no absolute results on {dataset_name!r} in {metric_name!r}")
        return
    if as_json:
        click.echo(json.dumps({**found, "items": found["items"][:limit]}, indent=1))
        return
    direction = {True: "higher is better", False: "lower is better", None: "direction unknown"}
    click.echo(
        f"{found[DATASET]['label']} · {found[METRIC]['label']} "
        f"({direction[found['higher_is_better']]})"
    )
    for row in found["items"][:limit]:
        who = (row[METHOD] or {}).get("label") or "—"
        who += "" if row["proposed"] else " (baseline)"
        click.echo(f"{row['rank']:>3}. {row['value']['text']:<10} {who}  [{row['paper']['id']}]")
        claim = row["claim"]
        for line in textwrap.wrap(f"“{claim['text']}” @{claim['start']}-{claim['end']}", 96):
            click.echo(f"       {line}")
