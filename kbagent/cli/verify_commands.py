"""``kbagent verify``: have the sources of saved answers changed since?"""

from __future__ import annotations

import json
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
    stdout_console,
)
from kbagent.errors import BadInputError, ExitCode

COLOURS = {"unchanged": "green", "unchecked": "dim", "moved": "yellow", "changed": "red",
           "gone": "red"}


@app.command()
@handles_errors
def verify(
    ctx: typer.Context,
    file: Annotated[Path | None, typer.Argument(
        metavar="FILE", help="Batch output (JSONL), an 'ask --json' file or a trace.",
        show_default=False)] = None,
    history: Annotated[bool, typer.Option("--history", help="Check the answers in the "
                                          "history database instead of a file.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per answer.")] = (
        False),
    reask: Annotated[bool, typer.Option("--reask", help="Ask the changed and gone answers "
                                        "again; show old and new side by side.")] = False,
    as_user: AsOpt = None,
    groups: GroupsOpt = None,
) -> None:
    """Re-check every citation of saved answers against the KBs as they are now.

    Each answer is unchanged, moved, changed or gone (its stalest citation); exit
    status 1 when any changed or is gone."""
    from kbagent.verify import STALE, answers_from_file, answers_from_history, verify_answers

    if (file is None) == (not history):
        raise BadInputError("give a FILE to verify, or --history (not both)")
    settings = settings_from(ctx)
    principal = principal_from(settings, as_user, groups)
    answers = (answers_from_history(settings.home, principal) if history
               else answers_from_file(file))  # type: ignore[arg-type]
    results = verify_answers(settings, answers, principal)
    stale = [v for v in results if v.state in STALE]
    reasked = _reask(settings, principal, stale) if reask and stale else {}
    if as_json:
        for v in results:
            rec = v.to_dict()
            if id(v) in reasked:
                rec["reasked"] = reasked[id(v)]
            typer.echo(json.dumps(rec, ensure_ascii=False))
    else:
        _render(results, reasked)
    if stale:
        raise typer.Exit(ExitCode.ERROR)


def _render(results: list[Any], reasked: dict[int, dict[str, Any]]) -> None:
    from rich.markup import escape

    from kbagent.kb.provenance import printable

    out = stdout_console()
    counts: dict[str, int] = {}
    for v in results:
        state = str(v.state)
        counts[state] = counts.get(state, 0) + 1
        out.print(f"[{COLOURS[state]}]{state:<9}[/] {escape(v.answer.label)}  "
                  f"{escape(printable(v.check.question))}")
        for r in v.check.refs:
            if str(r.state) == "unchanged":
                continue
            out.print(f"    [{r.n}] {escape(r.path)}:{r.start_line}-{r.end_line}: "
                      f"{escape(r.detail)}")
            for d in r.diff:
                out.print(f"        [{'red' if d.startswith('-') else 'green'}]{escape(d)}[/]")
        if id(v) in reasked:
            _side_by_side(out, v.answer.data.get("answer", ""), reasked[id(v)])
    summary = ", ".join(f"{n} {s}" for s, n in counts.items()) or "no answers"
    stderr_console().print(f"{len(results)} answers checked: {summary}")


def _side_by_side(out: Any, old: str, new: dict[str, Any]) -> None:
    from rich.table import Table

    from kbagent.kb.provenance import printable

    table = Table(show_header=True, expand=True, box=None, padding=(0, 2))
    table.add_column("then", ratio=1)
    table.add_column("now", ratio=1)
    table.add_row(printable(old), printable(new.get("answer") or new.get("error", "")))
    out.print(table)


def _reask(settings: Any, principal: Any, stale: list[Any]) -> dict[int, dict[str, Any]]:
    """Ask each stale answer's question again (same KBs and mode); id(Verified) ->
    the new ``ask --json`` dict, or ``{"error": ...}``."""
    from kbagent.agent.events import Final
    from kbagent.agent.kinds import AskMode
    from kbagent.errors import KbagentError
    from kbagent.session import MODES, Session

    out: dict[int, dict[str, Any]] = {}
    llm: Any = None
    for v in stale:
        data = v.answer.data
        mode = data.get("requested_mode") or data.get("mode") or "auto"
        try:
            session = Session(settings, list(data.get("kbs") or []) or None,
                              mode=AskMode(mode) if mode in MODES else AskMode.AUTO, llm=llm,
                              principal=principal)
            try:
                session.open_kbs()
                llm = session.load_llm()
                result = None
                for ev in session.ask(str(data.get("question", ""))):
                    if isinstance(ev, Final):
                        result = ev.result
                out[id(v)] = result.to_dict() if result is not None else {"error": "no answer"}
            finally:
                session.close()
        except KbagentError as e:
            out[id(v)] = {"error": str(e)}
    return out
