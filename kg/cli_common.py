"""What the ``kg`` commands share: the ``--store`` option, one-line errors, and
opening a store for reading or writing."""

from __future__ import annotations

import sys
from typing import Any

import click

from kg.store import DEFAULT_STORE, GraphStore, StoreError, open_reader, open_store

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


def open_for_writing(location: str, *, read_only: bool = False) -> GraphStore:
    try:
        return open_store(location, read_only=read_only)
    except StoreError as exc:
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
