"""``kbagent tui``: the interactive terminal UI."""

from __future__ import annotations

from typing import Annotated

import typer

from kbagent.cli.app import app
from kbagent.cli.common import AsOpt, GroupsOpt, handles_errors, principal_from, settings_from
from kbagent.errors import BadInputError


@app.command()
@handles_errors
def tui(
    ctx: typer.Context,
    kb: Annotated[list[str] | None, typer.Option("--kb", help="KB to use (repeatable; default: "
                                                 "all).", show_default=False)] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="GGUF file (default: the bundled SmolLM2-135M-Instruct).",
        show_default=False)] = None,
    llm_url: Annotated[str | None, typer.Option("--llm-url", help="OpenAI-compatible server "
                                                "(key from $KBAGENT_LLM_API_KEY).",
                                                show_default=False)] = None,
    as_user: AsOpt = None,
    groups: GroupsOpt = None,
) -> None:
    """Open the interactive explorer: ask, search, browse, history."""
    if model and llm_url:
        raise BadInputError("--model and --llm-url cannot be combined")
    from kbagent.tui.app import KbApp

    settings = settings_from(ctx, llm_model=model, llm_url=llm_url)
    KbApp(settings, kb, principal=principal_from(settings, as_user, groups)).run()
