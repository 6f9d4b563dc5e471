"""The Typer application every command module registers on, and its root options."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kbagent import __version__

app = typer.Typer(
    name="kbagent",
    help="Local knowledge-base explorer: ingest folders, search them, ask a local LLM that "
    "cites file and line ranges.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kbagent {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    home: Annotated[
        Path | None,
        typer.Option("--home", help="Data folder holding the KBs (default: $KBAGENT_HOME or "
                     "the platform's user data dir).", show_default=False),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    ctx.obj = {"home": home}


def main() -> None:
    """Console-script entry point."""
    app()
