"""The ``kg`` command line: a thin layer over the library.

Every command that touches a store takes ``--store`` (a directory, or an
``http(s)://`` URL of a SPARQL 1.1 server), defaulting to ``KG_STORE``, else
:data:`kg.store.DEFAULT_STORE`. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
from pyoxigraph import QueryBoolean, QueryResultsFormat, QuerySolutions, RdfFormat

from kg import __version__, schema
from kg.cli.common import (
    STORE_OPTION,
    Group,
    fail,
    open_for_reading,
    open_for_writing,
)
from kg.cli.results import leaderboard
from kg.cli.serve import graph, serve
from kg.cli.train import eval_, train
from kg.cpus import available_cpus
from kg.ingest import WRITE_BATCH
from kg.resources import sample_corpus
from kg.settings import Settings
from kg.store.sparql_text import QueryTooDeep, check_depth


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kg")
def main() -> None:
    """Build and serve a knowledge graph of machine-learning research."""


# ---------------------------------------------------------------- ingest


def _progress_printer(mode: str) -> Callable[[Any], None] | None:
    """A progress line on stderr: redrawn in place on a terminal, one line per
    batch with ``--progress lines`` (for logs and for tests that watch it)."""
    tty = sys.stderr.isatty()
    if mode == "none" or (mode == "auto" and not tty):
        return None
    in_place = mode == "auto"

    def show(report: Any) -> None:
        click.echo(
            ("\r" if in_place else "")
            + f"progress: read {report.read:,} added {report.added:,} updated {report.updated:,}"
            f" unchanged {report.unchanged:,} rejected {len(report.rejected):,}",
            err=True,
            nl=not in_place,
        )

    return show


def _ingest_help() -> str:
    """``kg ingest --help``: the formats and the field names the readers accept."""
    from kg.reading.readers import FIELD_NAMES

    fields = "\n".join(
        f"  {field:<9} {', '.join(names)}" + ("   (required)" if field == "abstract" else "")
        for field, names in FIELD_NAMES.items()
    )
    return f"""Extract PATHS (default: the bundled ICLR 2026 sample) into the store.

\b
Formats, by file suffix:
  .jsonl/.ndjson  one JSON object per line
  .json           an array of objects, or an OpenReview export ({{"notes": [...]}})
  .csv/.tsv       a header row, then one record per row
  other (.txt)    a header line, then one abstract per blank-line-separated paragraph

\b
Fields (JSON keys or CSV columns; the first one present wins; authors and
keywords as a list, or one string split on ; or ,):
{fields}

OpenReview notes are read from their "content" (API v1 or v2). A paper's id is
the hash of its abstract, so the same abstract twice is one paper; an id the
record gives is kept as the paper's source id.
"""


@main.command(help=_ingest_help())
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@STORE_OPTION
@click.option(
    "--processes",
    "-j",
    default=None,
    type=click.IntRange(min=1),
    help="Extraction processes (default: the CPUs this process may use).",
)
@click.option(
    "--batch-size", default=WRITE_BATCH, show_default=True, help="Papers per write batch."
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "--progress",
    type=click.Choice(["auto", "lines", "none"]),
    default="auto",
    show_default=True,
    help="auto: a progress bar on a terminal only.",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "pool", "dask"]),
    default=None,
    help="Where extraction runs: spaCy's -j processes (local), "
    "-j whole-pipeline worker processes (pool) or a Dask cluster (dask). "
    "Default: pool with more than one process, else local.",
)
@click.option(
    "--scheduler",
    envvar="KG_DASK_SCHEDULER",
    default=None,
    help="Dask scheduler address (tcp://host:8786) for --engine dask; without it, a "
    "local cluster of -j worker processes. Env: KG_DASK_SCHEDULER.",
)
def ingest(
    paths: tuple[str, ...],
    store: str,
    processes: int | None,
    batch_size: int,
    as_json: bool,
    progress: str,
    engine: str | None,
    scheduler: str | None,
) -> None:
    from kg.extraction.engines import make_extractor
    from kg.ingest import ingest as run_ingest

    targets = list(paths) or [str(p) for p in sample_corpus()]
    graph = open_for_writing(store)
    show = _progress_printer(progress)
    processes = processes or available_cpus()
    # Whole-pipeline workers leave this process only mapping and writing: on 2
    # cores 16 % less CPU per paper than spaCy's own processes, whose docs come
    # back to be assembled here (BENCHMARKS.md). One process needs no workers.
    engine = engine or ("pool" if processes > 1 else "local")
    extractor = make_extractor(engine, processes=processes, scheduler=scheduler)
    try:
        report = run_ingest(
            targets, graph, extractor=extractor, write_batch=batch_size, progress=show
        )
    finally:
        if hasattr(extractor, "close"):
            extractor.close()
    if show and progress == "auto":
        click.echo("", err=True)
    graph.close()
    for rejected in report.rejected:
        click.echo(f"kg: skipped {rejected}", err=True)
    summary = {"engine": engine, "processes": processes, **report.to_json()}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        # Rejected records were read too; a file that could not be read (record 0) was not.
        bad_records = sum(1 for r in report.rejected if r.record > 0)
        bad_files = len(report.rejected) - bad_records
        click.echo(
            f"papers read {report.read + bad_records:,}: added {report.added:,}, "
            f"updated {report.updated:,}, unchanged {report.unchanged:,}, "
            f"duplicates {report.duplicates:,}, rejected {bad_records:,}"
            + (f", files skipped {bad_files:,}" if bad_files else "")
            + "\n"
            f"triples {report.quads_after:,} ({report.quads_after - report.quads_before:+,}) "
            f"in {report.seconds:.1f} s"
        )
    if report.stored == 0 and (report.rejected or report.read == 0):
        sys.exit(1)


# ---------------------------------------------------------------- delete


@main.command()
@click.argument("papers", nargs=-1, required=True)
@STORE_OPTION
def delete(papers: tuple[str, ...], store: str) -> None:
    """Delete PAPERS from the store: each a paper id, its IRI, or the id its source
    gave. Entities stay (with one paper fewer). Exit 1 if any is not found."""
    from kg.ingest import delete_paper

    graph = open_for_writing(store)
    missing = 0
    try:
        for given in papers:
            deleted = delete_paper(graph, given)
            if deleted is None:
                click.echo(f"kg: no paper {given!r} in {store}", err=True)
                missing += 1
            else:
                click.echo(f"deleted paper {deleted}")
    finally:
        graph.close()
    if missing:
        sys.exit(1)


# ---------------------------------------------------------------- extract


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "table"]),
    default="jsonl",
    show_default=True,
    help="jsonl: one JSON object per paper (id, title, abstract, tasks, methods, "
    "proposed_methods, datasets, metrics, claims), what shared/tools/score_extraction.py "
    "reads; table: a summary per paper for people.",
)
@click.option("--processes", "-j", default=1, show_default=True, help="spaCy worker processes.")
def extract(paths: tuple[str, ...], fmt: str, processes: int) -> None:
    """Extract PATHS (default: the bundled sample) without a store, to stdout."""
    from kg.ingest import default_extractor
    from kg.model import Record
    from kg.reading.readers import read_paths, unique

    targets = list(paths) or [str(p) for p in sample_corpus()]
    rejected: list[Any] = []

    def records() -> Iterator[Record]:
        for item in unique(read_paths(targets)):
            if isinstance(item, Record):
                yield item
            else:
                rejected.append(item)
                click.echo(f"kg: skipped {item}", err=True)

    count = 0
    for extraction in default_extractor(n_process=processes).extract(records()):
        count += 1
        if fmt == "jsonl":
            click.echo(json.dumps(extraction.to_json(), ensure_ascii=False))
        else:
            _print_extraction_table(extraction.to_json())
    if count == 0:
        sys.exit(1)


def _print_extraction_table(obj: dict[str, Any]) -> None:
    click.echo(
        click.style(f"paper {obj['id']}", bold=True) + (f"  {obj['title']}" if obj["title"] else "")
    )
    groups = sorted(schema.groups(), key=lambda pair: not pair[1].proposed)
    for field in [relation.key for _, relation in groups]:
        labels = ", ".join(e["label"] for e in obj[field]) or "-"
        click.echo(f"  {field.replace('_', ' '):<17} {labels}")
    for claim in obj["claims"]:
        values = ", ".join(v["text"] for v in claim["values"])
        click.echo(
            f"  claim [{claim['kind']}] {claim['text'][:100]}" + (f"  ({values})" if values else "")
        )
    click.echo("")


# ---------------------------------------------------------------- query


_RESULT_FORMATS = {
    "json": QueryResultsFormat.JSON,
    "csv": QueryResultsFormat.CSV,
    "tsv": QueryResultsFormat.TSV,
    "xml": QueryResultsFormat.XML,
}


@main.command()
@click.argument("sparql", required=False)
@click.option(
    "-f",
    "--file",
    "file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read the query from a .rq file.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv", "tsv", "xml"]),
    default="table",
    show_default=True,
)
@STORE_OPTION
def query(sparql: str | None, file: Path | None, fmt: str, store: str) -> None:
    """Run a SPARQL query against the store (default graph: the union of all graphs)."""
    if file is not None:
        sparql = file.read_text(encoding="utf-8")
    if not sparql:
        fail("give a query, or -f FILE.rq")
        return
    try:  # the engine would crash on a deeper query
        check_depth(sparql, Settings.one("max_query_depth"))
    except QueryTooDeep as exc:
        fail(f"bad query: {exc}")
        return
    graph = open_for_reading(store)
    try:
        result = graph.query(sparql)
    except SyntaxError as exc:
        fail(f"bad query: {exc}")
        return
    out = sys.stdout.buffer
    if isinstance(result, QueryBoolean):
        if fmt == "table":
            click.echo("true" if bool(result) else "false")
        else:
            out.write(result.serialize(format=_RESULT_FORMATS.get(fmt, QueryResultsFormat.JSON)))
        return
    if isinstance(result, QuerySolutions):
        if fmt == "table":
            _print_table(result)
        else:
            out.write(result.serialize(format=_RESULT_FORMATS[fmt]))
        return
    result.serialize(out, RdfFormat.TURTLE)


def _cell(term: Any) -> str:
    if term is None:
        return ""
    return str(getattr(term, "value", term))


CELL_WIDTH = 60
"""Widest table column; longer cells are cut and end in "…" (--format csv/json: whole)."""


def _fit(text: str, width: int) -> str:
    if len(text) > width:
        return text[: width - 1] + "…"
    return text.ljust(width)


def _print_table(solutions: QuerySolutions) -> None:
    names = [v.value for v in solutions.variables]
    # Whitespace folded: a newline inside a cell would break the table.
    rows = [[" ".join(_cell(s[n]).split()) for n in names] for s in solutions]
    widths = [
        min(CELL_WIDTH, max([len(n)] + [len(r[i]) for r in rows])) for i, n in enumerate(names)
    ]
    click.echo("  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)))
    click.echo("  ".join("-" * w for w in widths))
    for row in rows:
        click.echo("  ".join(_fit(c, w) for c, w in zip(row, widths, strict=True)))
    click.echo(f"({len(rows)} rows)")


# ---------------------------------------------------------------- stats


@main.command()
@STORE_OPTION
@click.option("--json", "as_json", is_flag=True)
def stats(store: str, as_json: bool) -> None:
    """Counts per class and the number of triples."""
    from kg.read.entities import class_counts  # the read model REST's /stats uses

    graph = open_for_reading(store)
    counts = class_counts(graph)
    summary = {"triples": len(graph), "papers": len(list(graph.paper_ids())), "classes": counts}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo(f"triples  {summary['triples']:,}")
    for name in ("Paper", *(k.name for k in schema.ENTITY_TYPES), "Claim"):
        click.echo(f"{name.lower() + 's':<9}{counts.get(name, 0):,}")


@main.command()
@STORE_OPTION
def reindex(store: str) -> None:
    """Rebuild the search index and aggregates (kg.store.index) from the store: after a
    SPARQL update or Graph Store Protocol write, or when the index file is lost.
    Stop `kg serve` on this store first; it reads the index file."""
    import time

    from kg.store.index import index_path, rebuild

    graph = open_for_reading(store)
    started = time.perf_counter()
    papers = rebuild(graph)
    click.echo(
        f"kg: indexed {papers:,} papers in {time.perf_counter() - started:.1f} s "
        f"into {index_path(graph.location)}",
        err=True,
    )


# ---------------------------------------------------------------- export


_RDF_FORMATS = {
    "turtle": RdfFormat.TURTLE,
    "ntriples": RdfFormat.N_TRIPLES,
    "nquads": RdfFormat.N_QUADS,
    "trig": RdfFormat.TRIG,
    "jsonld": RdfFormat.JSON_LD,
    "rdfxml": RdfFormat.RDF_XML,
}


@main.command()
@click.option(
    "--format", "fmt", type=click.Choice(sorted(_RDF_FORMATS)), default="nquads", show_default=True
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write to a file.")
@STORE_OPTION
def export(fmt: str, out: Path | None, store: str) -> None:
    """Dump the store as RDF (triple formats get the union of all graphs)."""
    graph = open_for_reading(store)
    if out is None:
        graph.dump(sys.stdout.buffer, _RDF_FORMATS[fmt])
        return
    with out.open("wb") as fh:
        graph.dump(fh, _RDF_FORMATS[fmt])
    click.echo(f"wrote {out}", err=True)


# ---------------------------------------------------------------- validate


@main.command()
@STORE_OPTION
@click.option("--max-report", default=20, show_default=True, help="Violations to print.")
def validate(store: str, max_report: int) -> None:
    """Validate the graph against ontology/shapes.ttl (exit 1 on any violation)."""
    from kg.store.validation import validate_store

    graph = open_for_reading(store)
    result = validate_store(graph)
    for line in result.violations[:max_report]:
        click.echo(line)
    click.echo(f"{len(result.violations)} violations in {result.triples:,} triples")
    if result.violations:
        sys.exit(1)


main.add_command(graph)
main.add_command(serve)
main.add_command(eval_)
main.add_command(train)
main.add_command(leaderboard)


if __name__ == "__main__":  # pragma: no cover
    main()
