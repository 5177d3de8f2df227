"""``kg graph`` and ``kg serve``: drawing the graph and serving it over HTTP."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from kg import settings as kg_settings
from kg.cli.common import STORE_OPTION, fail, open_for_reading, open_for_writing
from kg.resources import sample_corpus
from kg.store.embedded import is_remote

# ---------------------------------------------------------------- graph


@click.command()
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
    from kg.read.exporters import exporter
    from kg.read.graphview import GraphRequest, GraphViewError, build_graph, parse_types

    try:
        request = GraphRequest(
            focus=focus,
            depth=depth,
            types=parse_types(types),
            min_support=min_support,
            limit=limit,
            projection=projection,
        )  # type: ignore[arg-type]
        drawn = build_graph(open_for_reading(store), request)
    except GraphViewError as exc:
        fail(f"--{exc.param.replace('_', '-')}: {exc}")
        return
    data = exporter(fmt).write(drawn)
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        try:
            out.write_bytes(data)
        except OSError as exc:
            fail(f"cannot write {out}: {exc.strerror}")
    note = f"kg: {drawn.number_of_nodes():,} nodes, {drawn.number_of_edges():,} edges"
    if drawn.graph["truncated"]:
        note += f" (cut from {drawn.graph['total_nodes']:,} nodes by --limit)"
    click.echo(note, err=True)


# ---------------------------------------------------------------- serve


def _setting_options(command: Any) -> Any:
    """One option per setting that declares a flag (:func:`kg.settings.flagged`)."""
    for setting in reversed(kg_settings.flagged()):
        env = kg_settings.env_name(setting)
        help_text = f"{setting.metadata['help']} Env: {env}."
        if isinstance(setting.default, tuple):
            # Lists come from their variable through Settings.from_env (comma-separated).
            option = click.option(
                setting.metadata["flag"], setting.name, multiple=True, help=help_text
            )
        else:
            option = click.option(
                setting.metadata["flag"],
                setting.name,
                envvar=env,
                default=setting.default,
                show_default=setting.default is not None,
                type=type(setting.default) if setting.default is not None else str,
                help=help_text,
            )
        command = option(command)
    return command


@click.command()
@_setting_options
@click.option("--no-sample", is_flag=True, help="Do not ingest the sample into an empty store.")
def serve(no_sample: bool, **given: Any) -> None:
    """Serve SPARQL 1.1 and the REST API over the store (read-only without a token)."""
    import os

    import uvicorn

    overrides: dict[str, Any] = {}
    for setting in kg_settings.flagged():
        value = given[setting.name]
        if isinstance(setting.default, tuple):
            if value:
                overrides[setting.name] = tuple(value)
        else:
            overrides[setting.name] = value
    overrides["update_token"] = overrides.get("update_token") or None
    store, host, port = given["store"], given["host"], given["port"]
    remote = is_remote(store)
    if given["workers"] > 1 and not remote:
        overrides["read_only"] = True  # RocksDB allows one writer: every worker reads only
    try:
        settings = kg_settings.Settings.from_env(**overrides)
    except ValueError as exc:
        fail(str(exc))
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
    from uvicorn.importer import import_from_string

    uvicorn.run(
        "service.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=settings.workers,
        access_log=False,
        log_level="warning",
        # Named by string like the app (kg does not import service): its own
        # 400s (requests that are not HTTP) as problem details too.
        http=import_from_string("service.protocol:PROTOCOL"),
    )


def _build_sample_if_empty(location: str) -> None:
    """First start: an empty (or missing) embedded store gets the bundled sample."""
    from kg.store.embedded import EmbeddedStore, GraphStore

    path = Path(location)
    if (path / "CURRENT").exists():
        graph: GraphStore = EmbeddedStore(path, read_only=True)
        has_papers = next(iter(graph.paper_ids()), None) is not None
        graph.close()
        if has_papers:
            return  # the common case: start at once, no ontology reload or ingest
    from kg.ingest import default_extractor
    from kg.ingest import ingest as run_ingest

    click.echo(f"kg: the store at {path} is empty: ingesting the bundled sample", err=True)
    graph = open_for_writing(location)
    report = run_ingest([str(p) for p in sample_corpus()], graph, extractor=default_extractor())
    graph.close()
    click.echo(f"kg: ingested {report.stored:,} papers", err=True)
