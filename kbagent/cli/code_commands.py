"""``kbagent code def|refs|callers|outline``: the symbol index from the terminal.

Every command answers as the caller (``--as`` / ``--groups``; neither: anonymous):
results from files the caller may not read are left out, and ``outline`` of such a
file fails exactly like ``outline`` of a missing one."""

from __future__ import annotations

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
    stdout_console,
)
from kbagent.safe_text import json_text

code_app = typer.Typer(help="Look up code symbols: definitions, references, callers, outlines.",
                       no_args_is_help=True)
app.add_typer(code_app, name="code")

KbOpt = Annotated[list[str] | None, typer.Option("--kb", help="KB to look in (repeatable; "
                                                 "default: all).", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the results as JSON.")]
SymbolArg = Annotated[str, typer.Argument(help="A name, or a qualified name like Class.method.",
                                          show_default=False)]


def _indexes(ctx: typer.Context, kb: list[str] | None, as_user: str | None,
             groups: str | None) -> list[Any]:
    from kbagent.cli.common import warn
    from kbagent.cli.shared import open_kbs
    from kbagent.kb.symbol_index import NoSymbolIndex, SymbolIndex

    settings = settings_from(ctx)
    principal = principal_from(settings, as_user, groups)
    out, missing = [], []
    for base in open_kbs(settings, kb):
        try:
            out.append(SymbolIndex(base, principal))
        except NoSymbolIndex as e:
            missing.append(e)
    if not out and missing:
        raise missing[0]
    for err in missing:
        warn(str(err))
    return out


def _print(hits: list[Any], as_json: bool, empty: str, multi: bool) -> None:
    if as_json:
        typer.echo(json_text([h.to_dict() for h in hits], indent=2))
        return
    if not hits:
        stderr_console().print(empty)
        return
    from kbagent.cli.common import literal as escape

    out = stdout_console()
    for h in hits:
        where = f"{h.kb}:{h.where}" if multi else h.where
        if h.kind in ("call", "ref"):
            what = f"in {h.qualname}" if h.qualname else "top level"
        else:
            what = f"{h.kind} {h.qualname}"
        out.print(f"[cyan]{escape(where)}[/]  [dim]{escape(what)}[/]  {escape(h.text.strip())}")


def _lookup(ctx: typer.Context, kb: list[str] | None, as_json: bool, what: str,
            symbol: str, who: tuple[str | None, str | None]) -> None:
    indexes = _indexes(ctx, kb, *who)
    hits = []
    for idx in indexes:
        if what == "def":
            hits += idx.definitions(symbol)
        else:
            hits += idx.references(symbol, calls_only=what == "callers")
    label = {"def": "definition", "refs": "reference", "callers": "call site"}[what]
    _print(hits, as_json, f"no {label} of {symbol!r} found", len(indexes) > 1)


@code_app.command("def")
@handles_errors
def code_def(ctx: typer.Context, symbol: SymbolArg, kb: KbOpt = None,
             as_json: JsonOpt = False, as_user: AsOpt = None,
             groups: GroupsOpt = None) -> None:
    """Where SYMBOL is defined (path:line, kind, full name)."""
    _lookup(ctx, kb, as_json, "def", symbol, (as_user, groups))


@code_app.command("refs")
@handles_errors
def code_refs(ctx: typer.Context, symbol: SymbolArg, kb: KbOpt = None,
              as_json: JsonOpt = False, as_user: AsOpt = None,
              groups: GroupsOpt = None) -> None:
    """Every line that uses SYMBOL (calls and other references)."""
    _lookup(ctx, kb, as_json, "refs", symbol, (as_user, groups))


@code_app.command("callers")
@handles_errors
def code_callers(ctx: typer.Context, symbol: SymbolArg, kb: KbOpt = None,
                 as_json: JsonOpt = False, as_user: AsOpt = None,
                 groups: GroupsOpt = None) -> None:
    """Where SYMBOL is called, and from which function."""
    _lookup(ctx, kb, as_json, "callers", symbol, (as_user, groups))


@code_app.command("outline")
@handles_errors
def code_outline(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(help="KB-relative path of a source file.",
                                        show_default=False)],
    kb: KbOpt = None,
    as_json: JsonOpt = False,
    as_user: AsOpt = None,
    groups: GroupsOpt = None,
) -> None:
    """The definitions of one source file, nested, with their line spans."""
    from kbagent.errors import KbagentError, NotFoundError

    last: KbagentError | None = None
    for idx in _indexes(ctx, kb, as_user, groups):
        try:
            hits, error = idx.outline(path)
        except NotFoundError as e:
            last = e
            continue
        if as_json:
            typer.echo(json_text({"kb": idx.kb.name, "path": path, "error": error,
                                  "definitions": [h.to_dict() for h in hits]}, indent=2))
            return
        from kbagent.cli.common import literal as escape

        out = stdout_console()
        for h in hits:
            indent = "  " * h.qualname.count(".")
            out.print(f"{indent}[cyan]{h.line}-{h.end_line}[/] [dim]{h.kind}[/] "
                      f"[bold]{escape(h.name)}[/]")
        if error:
            stderr_console().print(f"[yellow]note:[/] {escape(error)}")
        return
    raise last or NotFoundError(f"no file '{path}'")
