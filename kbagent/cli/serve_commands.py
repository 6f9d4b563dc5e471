"""``kbagent mcp`` (MCP over stdio), ``kbagent serve`` (MCP over streamable HTTP, with
``serve token add|rm|list``) and ``kbagent acp`` (an Agent Client Protocol agent)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from kbagent.cli.app import app
from kbagent.cli.common import (
    AsOpt,
    GroupsOpt,
    handles_errors,
    principal_from,
    settings_from,
    stderr_console,
)

KbOpt = Annotated[list[str] | None, typer.Option("--kb", help="KB to serve (repeatable; "
                                                 "default: all).", show_default=False)]
ModelOpt = Annotated[str | None, typer.Option("--model", help="GGUF file (default: the bundled "
                                              "SmolLM2-135M-Instruct).", show_default=False)]
LlmUrlOpt = Annotated[str | None, typer.Option("--llm-url", help="OpenAI-compatible server for "
                                               "answers, e.g. http://127.0.0.1:8080/v1.",
                                               show_default=False)]
TokensOpt = Annotated[Path | None, typer.Option(
    "--tokens", help="Tokens file (default: $KBAGENT_HOME/tokens.toml when it exists).",
    show_default=False)]


def _service(ctx: typer.Context, kb: list[str] | None, principal: Any = None,
             model: str | None = None, llm_url: str | None = None) -> Any:
    from kbagent.kb.access import ANONYMOUS
    from kbagent.server.service import KbService

    settings = settings_from(ctx, llm_model=model, llm_url=llm_url)
    return KbService(settings, kb, principal=principal or ANONYMOUS)


class SafeFormatter(logging.Formatter):
    """Log lines carry client input (an HTTP ``Host`` or ``Origin`` header, a request
    the SDK or uvicorn could not parse): each record is written as one line of plain
    text, without terminal control sequences (:func:`kbagent.safe_text.clean`) and with
    newlines shown as ``\\n``; a traceback keeps its lines, cleaned the same way."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        from kbagent.safe_text import clean

        return clean(super().formatMessage(record)).replace("\n", "\\n")

    def formatException(self, ei: Any) -> str:
        from kbagent.safe_text import clean

        return clean(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        from kbagent.safe_text import clean

        return clean(super().formatStack(stack_info))


def _quiet_logging() -> None:
    """Diagnostics on stderr as plain lines (stdout is the protocol on stdio), every
    logger's (the SDK's, uvicorn's) through :class:`SafeFormatter`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(SafeFormatter("kbagent: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)


@app.command()
@handles_errors
def mcp(ctx: typer.Context, kb: KbOpt = None, as_user: AsOpt = None, groups: GroupsOpt = None,
        model: ModelOpt = None, llm_url: LlmUrlOpt = None) -> None:
    """Serve the KBs to an MCP client over stdio (Claude Desktop, Claude Code, oterm...).
    The caller is the principal given here (--as / --groups), else anonymous."""
    import anyio

    from kbagent.server.mcp_server import build_server
    from kbagent.server.stdio import run_stdio

    settings = settings_from(ctx)
    service = _service(ctx, kb, principal_from(settings, as_user, groups), model, llm_url)
    server = build_server(service)
    _quiet_logging()
    try:
        anyio.run(run_stdio, server)
    finally:
        service.close()


serve_app = typer.Typer(help="Serve the KBs over MCP streamable HTTP at /mcp (and GET "
                        "/health). A request's caller is its bearer token's principal; no "
                        "token: anonymous; an unknown token: HTTP 401. 'serve token' manages "
                        "the tokens.", invoke_without_command=True)
app.add_typer(serve_app, name="serve")
token_app = typer.Typer(help="Bearer tokens of the HTTP server (stored hashed).",
                        no_args_is_help=True)
serve_app.add_typer(token_app, name="token")


def _tokens_path(settings: Any, tokens: Path | None) -> Path:
    from kbagent.server.auth import TOKENS_FILE

    return tokens.expanduser() if tokens else settings.home / TOKENS_FILE


@serve_app.callback()
@handles_errors
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option("--host", help="Address to bind; anything but loopback "
                                      "needs tokens.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="TCP port.")] = 8765,
    kb: KbOpt = None,
    tokens: TokensOpt = None,
    model: ModelOpt = None,
    llm_url: LlmUrlOpt = None,
) -> None:
    """Serve the KBs over MCP streamable HTTP at /mcp (and /health). A request's caller is
    its bearer token's principal; no token: anonymous; an unknown token: HTTP 401."""
    if ctx.invoked_subcommand is not None:
        return
    from kbagent.server.auth import TokenStore
    from kbagent.server.http import check_bind, listen_socket
    from kbagent.server.http import serve as run_http
    from kbagent.server.mcp_server import build_server

    settings = settings_from(ctx)
    path = _tokens_path(settings, tokens)
    store = TokenStore.load(path, settings.users_path) if tokens or path.exists() else None
    check_bind(host, store)  # before loading anything
    sock = listen_socket(host, port)  # a port in use: one line, exit 4, nothing printed
    try:
        service = _service(ctx, kb, None, model, llm_url)
    except BaseException:
        sock.close()
        raise
    server = build_server(service)
    _quiet_logging()
    who = f"{len(store)} token(s) from {path}" if store else "no tokens: every caller anonymous"
    stderr_console().print(f"kbagent: MCP at http://{host}:{port}/mcp ({who})", markup=False)
    try:
        run_http(server, host, sock, store)
    finally:
        sock.close()
        service.close()


@token_app.command("add")
@handles_errors
def token_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A name for the token (who or what uses it).",
                                        show_default=False)],
    as_user: AsOpt = None,
    groups: GroupsOpt = None,
    tokens: TokensOpt = None,
) -> None:
    """Make a token for a caller; print it once (only its SHA-256 is stored)."""
    from kbagent.kb.access import parse_group_list, resolve_principal
    from kbagent.server.auth import add_token

    settings = settings_from(ctx)
    if as_user is not None and groups is None:
        resolve_principal(settings.users_path, as_user, None)  # an unknown user fails now
    group_set = parse_group_list(groups, "--groups") if groups is not None else None
    path = _tokens_path(settings, tokens)
    token = add_token(path, name, user=as_user, groups=group_set)
    typer.echo(token)
    stderr_console().print(f"token {name!r} added to {path}; it is shown only now",
                           markup=False)


@token_app.command("rm")
@handles_errors
def token_rm(ctx: typer.Context,
             name: Annotated[str, typer.Argument(help="The token's name.", show_default=False)],
             tokens: TokensOpt = None) -> None:
    """Remove a token: its caller is refused from the next server start."""
    from kbagent.server.auth import remove_token

    remove_token(_tokens_path(settings_from(ctx), tokens), name)


@token_app.command("list")
@handles_errors
def token_list(ctx: typer.Context, tokens: TokensOpt = None) -> None:
    """Names of the tokens and whom each stands for (never the tokens)."""
    from kbagent.server.auth import read_entries

    for e in read_entries(_tokens_path(settings_from(ctx), tokens)):
        who = f"user {e.user}" if e.user else "groups " + ",".join(e.groups)
        typer.echo(f"{e.name}\t{who}")


@app.command()
@handles_errors
def acp(ctx: typer.Context, kb: KbOpt = None, as_user: AsOpt = None, groups: GroupsOpt = None,
        model: ModelOpt = None, llm_url: LlmUrlOpt = None) -> None:
    """Talk to the KBs from an Agent Client Protocol editor (Zed, JetBrains, toad) over
    stdio. The caller is the principal given here (--as / --groups), else anonymous."""
    import asyncio

    from kbagent.server.acp_agent import serve_acp

    settings = settings_from(ctx)
    service = _service(ctx, kb, principal_from(settings, as_user, groups), model, llm_url)
    _quiet_logging()
    try:
        asyncio.run(serve_acp(service))
    finally:
        service.close()
