"""``kbagent ask`` (the agent, streamed) and ``kbagent ref`` (show a cited passage)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Annotated, Any

import typer

from kbagent.agent.kinds import AskMode, ToolSet
from kbagent.agent.records import References
from kbagent.cli.app import app
from kbagent.cli.common import (
    BYTES_OK,
    AsOpt,
    GroupsOpt,
    fail,
    handles_errors,
    literal,
    principal_from,
    settings_from,
    stderr_console,
    stdout_console,
    warn,
)
from kbagent.cli.shared import threading_main
from kbagent.defaults import default  # not kbagent.settings: --help imports no pydantic
from kbagent.errors import BadInputError, ExitCode, KbagentError
from kbagent.safe_text import json_text


@app.command()
@handles_errors
def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question.", show_default=False),
                        BYTES_OK],
    kb: Annotated[list[str] | None, typer.Option("--kb", help="KB to use (repeatable; default: "
                                                 "all).", show_default=False)] = None,
    mode: Annotated[AskMode, typer.Option("--mode", help="auto: pick per question; agent: the "
                                       "ReAct loop; rag: one search then answer; direct: no "
                                       "retrieval.")] = AskMode.AUTO,
    tools: Annotated[ToolSet, typer.Option("--tools", help="full adds calculate and plan.")] = (
        ToolSet.KNOWLEDGE),
    model: Annotated[str | None, typer.Option(
        "--model", help="GGUF file (default: the bundled SmolLM2-135M-Instruct).",
        show_default=False), BYTES_OK] = None,
    llm_url: Annotated[str | None, typer.Option("--llm-url", help="OpenAI-compatible server, "
                                                "e.g. http://127.0.0.1:8080/v1 (key from "
                                                "$KBAGENT_LLM_API_KEY).",
                                                show_default=False)] = None,
    llm_model: Annotated[str | None, typer.Option("--llm-model", help="Model name to send to "
                                                  "the server.", show_default=False)] = None,
    max_steps: Annotated[int | None, typer.Option("--max-steps", min=1, max=50,
                                                  help="Step limit "
                                                  f"(default {default('max_steps')}).",
                                                  show_default=False)] = None,
    token_budget: Annotated[int | None, typer.Option("--token-budget", min=100,
                                                     help="Tokens per question "
                                                     f"(default {default('token_budget')}).",
                                                     show_default=False)] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=1.0,
                                                     help="Seconds per question "
                                                     f"(default {default('time_limit'):g}).",
                                                     show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON result.")] = False,
    as_jsonl: Annotated[bool, typer.Option("--jsonl", help="Stream events as JSON lines.")] = (
        False),
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the answer.")] = False,
    all_references: Annotated[bool, typer.Option("--all-references", help="List every chunk "
                                                 "seen, not only the cited ones.")] = False,
    open_ref: Annotated[int | None, typer.Option("--open", help="Then show reference N's lines.",
                                                 show_default=False)] = None,
    editor: Annotated[bool, typer.Option("--editor", help="With --open: open $EDITOR at the "
                                         "cited line instead.")] = False,
    trace: Annotated[Path | None, typer.Option(
        "--trace", help="Write a trace of this run (prompts, raw output, events) into this "
        "folder; see kbagent replay.", show_default=False)] = None,
    as_user: AsOpt = None,
    groups: GroupsOpt = None,
) -> None:
    """Ask a question; a local LLM searches the KBs and answers with cited sources."""
    if as_json and as_jsonl:
        raise BadInputError("--json and --jsonl cannot be combined")
    from kbagent.cli.render import EventRenderer
    from kbagent.session import Session, save_last_answer

    settings = settings_from(ctx, llm_model=model, llm_url=llm_url, llm_server_model=llm_model)
    principal = principal_from(settings, as_user, groups)
    session = Session(settings, kb, mode=mode, tools=tools, max_steps=max_steps,
                      token_budget=token_budget, time_limit=time_limit, principal=principal)
    ctx.call_on_close(session.close)  # the model is freed before the interpreter exits
    if not (mode is AskMode.DIRECT and not kb):
        opened = session.open_kbs()
        for name, reason in opened.failed.items():
            warn(f"KB '{name}' failed: {reason}")
    session.load_llm()
    token = session.prepare_run()
    out, err = stdout_console(), stderr_console()
    renderer = EventRenderer(out, err, quiet=quiet)
    result = None
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGINT, previous)  # a second Ctrl-C quits at once
        session.cancel()
        err.print("[yellow]stopping… (Ctrl-C again to quit now)[/]")

    if threading_main():
        signal.signal(signal.SIGINT, on_sigint)
    try:
        from kbagent.agent.events import Final

        trace_to = None
        if trace is not None:
            import time

            from kbagent.batch import question_id

            trace_to = trace / f"{time.strftime('%Y%m%d-%H%M%S')}-{question_id(question)}.jsonl"
        for ev in session.ask(question, token=token, trace_to=trace_to):
            if as_jsonl:
                typer.echo(json_text(ev.to_dict()))
            elif not as_json:
                renderer(ev)
            if isinstance(ev, Final):
                result = ev.result
    finally:
        if threading_main():
            signal.signal(signal.SIGINT, previous)
    assert result is not None
    save_last_answer(settings, result, principal)
    if trace_to is not None:
        err.print(f"[dim]trace: {literal(trace_to)}[/]")
    if as_json:
        typer.echo(json_text(result.to_dict(all_references), indent=2))
    elif not as_jsonl:
        renderer.finish(result, all_references=all_references)
        if not quiet:
            _hint_better_model(settings, err)
    if open_ref is not None:
        show_reference(settings, result.to_json(), open_ref, editor, principal)
    if result.status == "cancelled":
        raise typer.Exit(ExitCode.INTERRUPTED)
    if result.status == "error":
        raise typer.Exit(ExitCode.BACKEND)


def _hint_better_model(settings: Any, err: Any) -> None:
    """The default (``llm_model = auto``) runs the bundled 135M model until the
    recommended one is pulled: say so once under each answer it wrote."""
    from kbagent.models.catalogue import AUTO, BUNDLED_NAME, RECOMMENDED
    from kbagent.models.store import ModelStore

    if settings.llm_url or settings.llm_model != AUTO:
        return
    if ModelStore(settings.home).auto_choice() == BUNDLED_NAME:
        err.print(f"[dim]answered by the bundled 135M model; 'kbagent models pull "
                  f"{RECOMMENDED}' gets the default model, which answers better (README, "
                  "Models)[/]")


def show_reference(settings: Any, answer: dict[str, Any], n: int, editor: bool,
                   principal: Any) -> None:
    """Print reference ``n``'s lines with their numbers, or open ``$EDITOR`` there
    (finding and reading it is :mod:`kbagent.session`'s job; ``principal`` must be
    allowed to read the document, checked again now)."""
    from kbagent.kb.provenance import ReferenceChecker, RefState
    from kbagent.session import editor_command, find_reference, reference_view

    ref = find_reference(answer, n)
    checker = ReferenceChecker(settings, principal)
    try:
        check = checker.check(ref)
    finally:
        checker.close()
    if check.state is RefState.MOVED:  # show the text where it is now
        ref = {**ref, "path": check.now_path, "start_line": check.now_start,
               "end_line": check.now_end}
    if check.state is RefState.GONE:
        from kbagent.errors import NotFoundError

        raise NotFoundError(f"[{n}] {ref['path']}:{ref['start_line']}-{ref['end_line']}: "
                            f"{check.detail}")
    view = reference_view(settings, ref, principal=principal)
    if editor:
        code = subprocess.call(editor_command(view.on_disk, view.start_line))
        if code:
            raise KbagentError(f"editor exited with status {code}")
        return
    out = stdout_console()
    place = f" [magenta]{literal(view.location)}[/]" if view.location else ""
    out.print(f"[bold][{n}][/] [cyan]{literal(view.on_disk)}[/]{place}:{view.start_line}-"
              f"{view.end_line}  [dim](KB {literal(view.kb)})[/]")
    width = len(str(view.end_line))
    for ln in view.lines:
        out.print(f"[dim]{ln.number:>{width}}│[/] {literal(ln.text)}")
    print_check(check)


def print_check(check: Any) -> None:
    """Say whether the cited text changed since the answer (and how)."""
    from rich.markup import escape

    from kbagent.kb.provenance import RefState

    colour = {RefState.UNCHANGED: "green", RefState.UNCHECKED: "dim",
              RefState.MOVED: "yellow"}.get(check.state, "red")
    out = stdout_console()
    out.print(f"[{colour}]{escape(check.detail)}[/]")
    for d in check.diff:
        out.print(f"  [{'red' if d.startswith('-') else 'green'}]{escape(d)}[/]")


@app.command()
@handles_errors
def ref(
    ctx: typer.Context,
    n: Annotated[int | None, typer.Argument(help="Reference number from the last answer "
                                            "(default: its first reference).",
                                            show_default=False)] = None,
    editor: Annotated[bool, typer.Option("--editor", help="Open $EDITOR at the cited line.")] = (
        False),
    as_user: AsOpt = None,
    groups: GroupsOpt = None,
) -> None:
    """Show the lines behind citation [N] of your last answer (same --as/--groups)."""
    from kbagent.session import load_last_answer

    settings = settings_from(ctx)
    principal = principal_from(settings, as_user, groups)
    answer = load_last_answer(settings, principal)
    if n is None:
        cited = References.from_json(answer.get("references")).chunks()
        if not cited:
            fail("the last answer has no references", ExitCode.NOT_FOUND)
        n = cited[0].n
    show_reference(settings, answer, n, editor, principal)
