"""The ``kbagent`` command (Typer).

Answers and results go to stdout, progress and diagnostics to stderr. Every
:class:`~kbagent.errors.KbagentError` becomes one red line on stderr and its
exit code (see :mod:`kbagent.cli.common`). Heavy modules are imported inside
the commands so ``kbagent --help`` stays fast.
"""

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


# importing the command modules registers their commands on ``app``
from kbagent.cli import (  # noqa: E402,F401
    ask_commands,
    batch_commands,
    code_commands,
    eval_commands,
    kb_commands,
    serve_commands,
    tui_commands,
    verify_commands,
)
