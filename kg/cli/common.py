"""What the ``kg`` commands share: the ``--store`` option, one-line errors, and
opening a store for reading or writing."""

from __future__ import annotations

import sys
from typing import Any

import click

from kg.store.embedded import DEFAULT_STORE, GraphStore, StoreError, open_reader, open_store

STORE_OPTION = click.option(
    "--store",
    envvar="KG_STORE",
    default=str(DEFAULT_STORE),
    show_default=True,
    help="Store directory, or http(s):// URL of a SPARQL 1.1 store. Env: KG_STORE.",
)


def fail(message: str) -> None:
    click.echo(f"kg: error: {message}", err=True)
    sys.exit(2)


def open_for_reading(location: str) -> GraphStore:
    try:
        return open_reader(location)
    except StoreError as exc:
        fail(str(exc))
        raise  # unreachable; keeps type checkers calm


BUSY_ADVICE = """the store is in use by another process, most likely `kg serve` (an
embedded store has one writer at a time). Either
  - stop the server, run this again, then start the server again; or
  - send the papers to the running server (it needs KG_UPDATE_TOKEN):
      curl -X POST -H "Authorization: Bearer $KG_UPDATE_TOKEN" \\
           -H "Content-Type: application/json" --data @papers.json http://127.0.0.1:8000/papers
  - or keep the data in a SPARQL server both can write to, e.g. `oxigraph serve`,
    and give both `--store http://…` (docs/scaling.md)."""


def open_for_writing(location: str, *, read_only: bool = False) -> GraphStore:
    try:
        return open_store(location, read_only=read_only)
    except StoreError as exc:
        # RocksDB's words for a lock held by another process.
        if "LOCK" in str(exc) or "Resource temporarily unavailable" in str(exc):
            fail(f"{exc}\n{BUSY_ADVICE}")
        fail(str(exc))
        raise  # unreachable; keeps type checkers calm


class Group(click.Group):
    """Turns the library's expected failures into one line on stderr."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except StoreError as exc:
            fail(str(exc))
        except BrokenPipeError:
            # `kg export | head` closes the pipe early; that is not an error.
            sys.stderr.close()
            sys.exit(0)
        except OSError as exc:  # e.g. the disk filled while the store was opened
            fail(str(exc))
