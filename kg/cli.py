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
from kg.resources import queries_dir, sample_corpus
from kg.store import DEFAULT_STORE, GraphStore, StoreError, is_remote, open_reader, open_store

STORE_OPTION = click.option(
    "--store",
    envvar="KG_STORE",
    default=str(DEFAULT_STORE),
    show_default=True,
    help="Store directory, or http(s):// URL of a SPARQL 1.1 store. Env: KG_STORE.",
)


def _fail(message: str) -> None:
    click.echo(f"kg: error: {message}", err=True)
    sys.exit(2)


def _open_reader(location: str) -> GraphStore:
    try:
        return open_reader(location)
    except StoreError as exc:
        _fail(str(exc))
        raise  # unreachable; keeps type checkers calm


def _open(location: str, *, read_only: bool = False) -> GraphStore:
    try:
        return open_store(location, read_only=read_only)
    except StoreError as exc:
        _fail(str(exc))
        raise  # unreachable; keeps type checkers calm


class _Group(click.Group):
    """Turns the library's expected failures into one line on stderr."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except StoreError as exc:
            _fail(str(exc))
        except BrokenPipeError:
            # `kg export | head` closes the pipe early; that is not an error.
            sys.stderr.close()
            sys.exit(0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
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


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@STORE_OPTION
@click.option("--processes", "-j", default=1, show_default=True, help="spaCy worker processes.")
@click.option("--batch-size", default=256, show_default=True, help="Papers per write batch.")
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
    default="local",
    show_default=True,
    help="Where extraction runs: spaCy's -j processes (local), "
    "-j whole-pipeline worker processes (pool) or a Dask cluster (dask).",
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
    processes: int,
    batch_size: int,
    as_json: bool,
    progress: str,
    engine: str,
    scheduler: str | None,
) -> None:
    """Extract PATHS (default: the bundled ICLR 2026 sample) into the store."""
    from kg.engines import make_extractor
    from kg.ingest import ingest as run_ingest

    targets = list(paths) or [str(p) for p in sample_corpus()]
    graph = _open(store)
    show = _progress_printer(progress)
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
    summary = report.to_json()
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(
            f"papers read {report.read:,}: added {report.added:,}, updated {report.updated:,}, "
            f"unchanged {report.unchanged:,}, duplicates {report.duplicates:,}, "
            f"rejected {len(report.rejected):,}\n"
            f"triples {report.quads_after:,} ({report.quads_after - report.quads_before:+,}) "
            f"in {report.seconds:.1f} s"
        )
    if report.stored == 0 and (report.rejected or report.read == 0):
        sys.exit(1)


# ---------------------------------------------------------------- extract


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "table"]), default="jsonl", show_default=True
)
@click.option("--processes", "-j", default=1, show_default=True, help="spaCy worker processes.")
def extract(paths: tuple[str, ...], fmt: str, processes: int) -> None:
    """Extract PATHS (default: the bundled sample) without a store, to stdout."""
    from kg.ingest import default_extractor
    from kg.model import Record
    from kg.readers import read_paths, unique

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
        _fail("give a query, or -f FILE.rq")
    graph = _open_reader(store)
    try:
        result = graph.query(sparql)
    except SyntaxError as exc:
        _fail(f"bad query: {exc}")
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


def _print_table(solutions: QuerySolutions) -> None:
    names = [v.value for v in solutions.variables]
    rows = [[_cell(s[n]) for n in names] for s in solutions]
    widths = [min(60, max([len(n)] + [len(r[i]) for r in rows])) for i, n in enumerate(names)]
    click.echo("  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)))
    click.echo("  ".join("-" * w for w in widths))
    for row in rows:
        click.echo("  ".join(c[:w].ljust(w) for c, w in zip(row, widths, strict=True)))
    click.echo(f"({len(rows)} rows)")


# ---------------------------------------------------------------- stats


@main.command()
@STORE_OPTION
@click.option("--json", "as_json", is_flag=True)
def stats(store: str, as_json: bool) -> None:
    """Counts per class and the number of triples."""
    graph = _open_reader(store)
    sparql = (queries_dir() / "class-counts.rq").read_text(encoding="utf-8")
    counts = {
        s["class"].value.rsplit("#", 1)[-1]: int(s["count"].value) for s in graph.query(sparql)
    }
    summary = {"triples": len(graph), "papers": len(list(graph.paper_ids())), "classes": counts}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo(f"triples  {summary['triples']:,}")
    for name in ("Paper", *(k.name for k in schema.ENTITY_TYPES), "Claim"):
        click.echo(f"{name.lower() + 's':<9}{counts.get(name, 0):,}")


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
    graph = _open_reader(store)
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
    from kg.validation import validate_store

    graph = _open_reader(store)
    result = validate_store(graph)
    for line in result.violations[:max_report]:
        click.echo(line)
    click.echo(f"{len(result.violations)} violations in {result.triples:,} triples")
    if result.violations:
        sys.exit(1)


# ---------------------------------------------------------------- graph


@main.command()
@click.option(
    "--format",
    "fmt",
    default="graphml",
    show_default=True,
    type=click.Choice(["graphml", "gexf", "cytoscape", "d3", "dot", "csv"]),
    help="Export format (see docs/visualisation.md).",
)
@click.option(
    "--out",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to this file (default: standard output).",
)
@click.option("--focus", default=None, help="Paper or entity (IRI, task/KEY, paper id, or key).")
@click.option("--depth", default=1, show_default=True, type=int, help="Hops around --focus (1-3).")
@click.option("--types", default=None, help="Node types, e.g. Task,Method,Paper (default: all).")
@click.option(
    "--min-support",
    default=1,
    show_default=True,
    type=int,
    help="Least number of papers behind an edge.",
)
@click.option("--limit", default=None, type=int, help="Most nodes; the most supported are kept.")
@click.option(
    "--projection",
    default="bipartite",
    show_default=True,
    type=click.Choice(["bipartite", "entity"]),
    help="bipartite: papers and entities; entity: entity co-occurrence.",
)
@STORE_OPTION
def graph(
    fmt: str,
    out: Path | None,
    focus: str | None,
    depth: int,
    types: str | None,
    min_support: int,
    limit: int | None,
    projection: str,
    store: str,
) -> None:
    """Export the graph (or a neighbourhood) for Gephi, Cytoscape, yEd, Graphviz or D3."""
    from kg.exporters import exporter
    from kg.graphview import GraphRequest, GraphViewError, build_graph, parse_types

    try:
        request = GraphRequest(
            focus=focus,
            depth=depth,
            types=parse_types(types),
            min_support=min_support,
            limit=limit,
            projection=projection,
        )  # type: ignore[arg-type]
        drawn = build_graph(_open_reader(store), request)
    except GraphViewError as exc:
        _fail(f"--{exc.param.replace('_', '-')}: {exc}")
        return
    data = exporter(fmt).write(drawn)
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        try:
            out.write_bytes(data)
        except OSError as exc:
            _fail(f"cannot write {out}: {exc.strerror}")
    note = f"kg: {drawn.number_of_nodes():,} nodes, {drawn.number_of_edges():,} edges"
    if drawn.graph["truncated"]:
        note += f" (cut from {drawn.graph['total_nodes']:,} nodes by --limit)"
    click.echo(note, err=True)


# ---------------------------------------------------------------- serve


@main.command()
@STORE_OPTION
@click.option(
    "--host",
    envvar="KG_HOST",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on. Env: KG_HOST.",
)
@click.option(
    "--port",
    envvar="KG_PORT",
    default=8000,
    show_default=True,
    type=int,
    help="TCP port. Env: KG_PORT.",
)
@click.option(
    "--workers",
    envvar="KG_WORKERS",
    default=1,
    show_default=True,
    type=int,
    help="uvicorn processes; >1 opens an embedded store read-only. Env: KG_WORKERS.",
)
@click.option(
    "--update-token",
    envvar="KG_UPDATE_TOKEN",
    default=None,
    help="Bearer token enabling writes; unset = read-only. Env: KG_UPDATE_TOKEN.",
)
@click.option(
    "--query-timeout",
    envvar="KG_QUERY_TIMEOUT",
    default=10.0,
    show_default=True,
    type=float,
    help="Seconds before a SPARQL query is stopped. Env: KG_QUERY_TIMEOUT.",
)
@click.option(
    "--result-limit",
    envvar="KG_RESULT_LIMIT",
    default=100_000,
    show_default=True,
    type=int,
    help="Most rows/triples one query may return. Env: KG_RESULT_LIMIT.",
)
@click.option(
    "--query-workers",
    envvar="KG_QUERY_WORKERS",
    default=2,
    show_default=True,
    type=int,
    help="Query processes per uvicorn worker. Env: KG_QUERY_WORKERS.",
)
@click.option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    help="Origin allowed by CORS (repeatable; default any). Env: KG_CORS_ORIGINS.",
)
@click.option(
    "--allow-service",
    "service_allowlist",
    multiple=True,
    help="IRI SPARQL SERVICE/LOAD may name (repeatable). Env: KG_SERVICE_ALLOWLIST.",
)
@click.option("--no-sample", is_flag=True, help="Do not ingest the sample into an empty store.")
def serve(
    store: str,
    host: str,
    port: int,
    workers: int,
    update_token: str | None,
    query_timeout: float,
    result_limit: int,
    query_workers: int,
    cors_origins: tuple[str, ...],
    service_allowlist: tuple[str, ...],
    no_sample: bool,
) -> None:
    """Serve SPARQL 1.1 and the REST API over the store (read-only without a token)."""
    import os

    import uvicorn

    from service.settings import Settings

    overrides: dict[str, Any] = {
        "store": store,
        "host": host,
        "port": port,
        "workers": workers,
        "update_token": update_token or None,
        "query_timeout": query_timeout,
        "result_limit": result_limit,
        "query_workers": query_workers,
    }
    if cors_origins:
        overrides["cors_origins"] = cors_origins
    if service_allowlist:
        overrides["service_allowlist"] = service_allowlist
    remote = is_remote(store)
    if workers > 1 and not remote:
        overrides["read_only"] = True  # RocksDB allows one writer: every worker reads only
    try:
        settings = Settings.from_env(**overrides)
    except ValueError as exc:
        _fail(str(exc))
        return
    if not remote and not no_sample:
        _build_sample_if_empty(store)
    # uvicorn workers are separate processes: they rebuild the settings from these variables.
    os.environ.update(settings.to_env())
    click.echo(
        f"kg: serving {store} on http://{host}:{port} "
        f"({'read-write' if settings.writable else 'read-only'})",
        err=True,
    )
    uvicorn.run(
        "service.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        access_log=False,
        log_level="warning",
    )


@main.command(name="eval")
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
    help="SciERC: recogniser spans typed by our rules, the recogniser alone, or "
    "the extractor's final entities.",
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
    from kg.evaluation import evaluate_gold, evaluate_scierc, scierc_table

    if gold is None and scierc is None:
        _fail("give --gold FILE or --scierc FILE")
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


@main.command()
@click.option(
    "--scierc-dir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Directory with SciERC train.jsonl and dev.jsonl.",
)
@click.option(
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to write the model (default: the package's kg/extraction/model).",
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
    scierc_dir: Path,
    output: Path | None,
    epochs: int,
    seed: int,
    include_dev: bool,
    architecture: str,
    width: int,
    learn_rate: float,
    dropout: float,
    patience: int,
) -> None:
    """Train the entity recogniser on SciERC (see docs/extraction.md)."""
    from kg.extraction.extractor import MODEL_DIR
    from kg.training import train as run_train

    best = run_train(
        scierc_dir / "train.jsonl",
        scierc_dir / "dev.jsonl",
        output or MODEL_DIR,
        epochs=epochs,
        seed=seed,
        include_dev=include_dev,
        architecture=architecture,
        width=width,
        learn_rate=learn_rate,
        dropout=dropout,
        patience=patience,
        log=lambda line: click.echo(line, err=True),
    )
    click.echo(json.dumps({k: round(v, 4) for k, v in best.items()}))


def _build_sample_if_empty(location: str) -> None:
    """First start: an empty (or missing) embedded store gets the bundled sample."""
    from kg.store import EmbeddedStore

    path = Path(location)
    if (path / "CURRENT").exists():
        graph = EmbeddedStore(path, read_only=True)
        has_papers = next(iter(graph.paper_ids()), None) is not None
        graph.close()
        if has_papers:
            return  # the common case: start at once, no ontology reload or ingest
    from kg.ingest import default_extractor
    from kg.ingest import ingest as run_ingest

    click.echo(f"kg: the store at {path} is empty: ingesting the bundled sample", err=True)
    graph = _open(location)
    report = run_ingest([str(p) for p in sample_corpus()], graph, extractor=default_extractor())
    graph.close()
    click.echo(f"kg: ingested {report.stored:,} papers", err=True)


if __name__ == "__main__":  # pragma: no cover
    main()
