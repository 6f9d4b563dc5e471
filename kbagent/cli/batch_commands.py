"""``kbagent batch`` (many questions, one JSON line each) and ``kbagent replay``
(a recorded trace rendered as ``ask`` showed it, or re-run to reproduce it)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from kbagent.agent.kinds import AskMode, ToolSet
from kbagent.cli.app import app
from kbagent.cli.common import (
    AS_HELP,
    BYTES_OK,
    GROUPS_HELP,
    AsOpt,
    GroupsOpt,
    handles_errors,
    literal,
    principal_from,
    settings_from,
    stderr_console,
    stdout_console,
    warn,
)
from kbagent.cli.shared import threading_main
from kbagent.errors import BadInputError, ExitCode, Interrupted, KbagentError
from kbagent.safe_text import json_text


@app.command()
@handles_errors
def batch(
    ctx: typer.Context,
    input_file: Annotated[str, typer.Argument(
        metavar="INPUT", help="Questions: a text file (one a line), JSONL (id, question, "
        "optional kb, mode, tools), or - for standard input.", show_default=False), BYTES_OK],
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="JSONL file to write (and to resume: ids already answered "
        "there are skipped). Default: standard output.", show_default=False)] = None,
    kb: Annotated[list[str] | None, typer.Option("--kb", help="KB to use (repeatable; default: "
                                                 "all); a line's own 'kb' wins.",
                                                 show_default=False)] = None,
    mode: Annotated[AskMode, typer.Option("--mode", help="Default mode; a line's own wins.")] = (
        AskMode.AUTO),
    tools: Annotated[ToolSet, typer.Option("--tools", help="Default tool set.")] = (
        ToolSet.KNOWLEDGE),
    model: Annotated[str | None, typer.Option("--model", help="GGUF file.",
                                              show_default=False), BYTES_OK] = None,
    llm_url: Annotated[str | None, typer.Option("--llm-url", help="OpenAI-compatible server.",
                                                show_default=False)] = None,
    llm_model: Annotated[str | None, typer.Option("--llm-model", help="Model name to send to "
                                                  "the server.", show_default=False)] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, max=64, help="Questions at once "
                                         "(with --llm-url; the in-process model answers one "
                                         "at a time).")] = 1,
    max_steps: Annotated[int | None, typer.Option("--max-steps", min=1, max=50,
                                                  show_default=False)] = None,
    token_budget: Annotated[int | None, typer.Option("--token-budget", min=100,
                                                     show_default=False)] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=1.0,
                                                     show_default=False)] = None,
    trace: Annotated[Path | None, typer.Option(
        "--trace", help="Write one trace per question into this folder (see kbagent replay).",
        show_default=False)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")] = (
        False),
    as_user: AsOpt = None,
    groups: GroupsOpt = None,
) -> None:
    """Answer many questions; one JSON line per question (the `ask --json` shape plus
    `id` and `error`), written as each finishes. Resumable with -o."""
    from kbagent.batch import BatchRunner, answered_ids, read_questions
    from kbagent.session_pool import RunLimits, SessionPool

    settings = settings_from(ctx, llm_model=model, llm_url=llm_url, llm_server_model=llm_model)
    items = read_questions(input_file, sys.stdin)
    if workers > 1 and not settings.llm_url:
        warn("--workers needs --llm-url; the in-process model answers one question at a time")
        workers = 1
    skip = answered_ids(output) if output is not None else set()
    pool = SessionPool(settings, kb, mode.value, tools.value,
                       limits=RunLimits(max_steps, token_budget, time_limit), trace_dir=trace,
                       principal=principal_from(settings, as_user, groups))
    ctx.call_on_close(pool.close)
    err = stderr_console()
    from kbagent.kb.file_modes import open_private

    # answers quote documents: 0600, also when resuming a file made wider before
    out_file = open_private(output, append=True) if output else sys.stdout
    progress = None if quiet or not err.is_terminal else _progress(err)
    task = progress.add_task("questions", total=len(items)) if progress else None

    def on_record(rec: dict[str, Any], tally: Any) -> None:
        if progress is not None:
            progress.update(task, completed=tally.done + tally.skipped,
                            description=f"{tally.answered} answered, {tally.failed} failed, "
                            f"median {tally.median_s:.1f} s")
        elif not quiet and rec.get("error") is not None:
            warn(f"{rec['id']}: {rec['error']}")

    from kbagent.agent.cancel import CancelToken

    runner = BatchRunner(pool.answer, out_file, workers=workers, on_record=on_record,
                         make_token=CancelToken)
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGINT, previous)  # a second Ctrl-C quits at once
        runner.cancel()

    if threading_main():
        signal.signal(signal.SIGINT, on_sigint)
    interrupted = False
    try:
        if progress is not None:
            progress.start()
        runner.run(items, skip)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if progress is not None:
            progress.stop()
        if threading_main():
            signal.signal(signal.SIGINT, previous)
        if output is not None:
            out_file.close()
    tally = runner.tally
    where = f" in {output}" if output else ""
    if interrupted:
        raise Interrupted(f"interrupted: {tally.answered} answers written{where}; run the "
                           "same command again to finish") from None
    if not quiet:
        _summary(err, tally, output)
    if tally.total - tally.skipped > 0 and tally.answered == 0:
        raise KbagentError(f"every question failed ({tally.failed}); see the 'error' field "
                           "of each line")


def _progress(console: Any) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    console=console, transient=True)


def _summary(console: Any, tally: Any, output: Path | None) -> None:
    from rich.table import Table

    table = Table(title="batch", title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    for what, value in (("questions", tally.total), ("answered", tally.answered),
                        ("failed", tally.failed), ("skipped (answered before)", tally.skipped),
                        ("median latency", f"{tally.median_s:.1f} s"),
                        ("questions per minute", f"{tally.per_minute:.1f}")):
        table.add_row(what, str(value))
    if output is not None:
        table.add_row("output", literal(output))
    console.print(table)


@app.command()
@handles_errors
def replay(
    ctx: typer.Context,
    trace_file: Annotated[Path, typer.Argument(metavar="TRACE", help="A trace file written by "
                                               "--trace.", show_default=False)],
    rerun: Annotated[bool, typer.Option(
        "--rerun", help="Ask again with the recorded settings and model, and compare the new "
        "answer with the recorded one (exit 1 if they differ).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the answer.")] = False,
    as_user: Annotated[str | None, typer.Option("--as", help=AS_HELP + " (with --rerun)",
                                                show_default=False)] = None,
    groups: Annotated[str | None, typer.Option("--groups", help=GROUPS_HELP + " (with --rerun)",
                                               show_default=False)] = None,
) -> None:
    """Show a recorded run as `kbagent ask` showed it, or reproduce it offline (as the
    caller named by --as/--groups, never as the one written in the trace)."""
    from kbagent.agent.events import Final
    from kbagent.agent.llm.trace import read_trace, trace_events
    from kbagent.cli.render import EventRenderer

    records = read_trace(trace_file)
    header = records[0]
    if rerun:
        _rerun(ctx, header, records, quiet, as_user, groups)
        return
    renderer = EventRenderer(stdout_console(), stderr_console(), quiet=quiet)
    final = None
    for ev in trace_events(records):
        renderer(ev)
        if isinstance(ev, Final):
            final = ev.result
    if final is None:
        raise BadInputError(f"{trace_file} ends before the answer (the run was interrupted)")
    renderer.finish(final)


def _rerun(ctx: typer.Context, header: dict[str, Any], records: list[dict[str, Any]],
           quiet: bool, as_user: str | None, groups: str | None) -> None:
    from kbagent.agent.events import Final
    from kbagent.session import Session

    recorded = next((r["event"] for r in records if r.get("kind") == "event"
                     and r["event"].get("type") == Final.type), None)
    if recorded is None:
        raise BadInputError("the trace ends before the answer; nothing to compare")
    keep = {k: v for k, v in header["settings"].items() if k != "home"}
    settings = settings_from(ctx, **keep)
    names = [k["name"] for k in header["kbs"]]
    principal = principal_from(settings, as_user, groups)
    if header.get("principal", "anonymous") != principal.label:
        warn(f"the trace was recorded as {header.get('principal')}; asking again as "
             f"{principal.label}")
    try:
        mode, tools = AskMode(header["mode"]), ToolSet(header["tools"])
    except ValueError as e:
        raise BadInputError(f"the trace names an unknown mode or tool set: {e}") from e
    session = Session(settings, names, mode=mode, tools=tools, principal=principal)
    ctx.call_on_close(session.close)
    session.open_kbs(required=bool(names))
    llm = session.load_llm()
    size = header.get("llm", {}).get("model_bytes")
    path = getattr(llm, "path", None)
    if size and path and Path(path).stat().st_size != size:
        warn(f"the model file {path} differs from the recorded one ({size} bytes)")
    for kb, rec in zip(session.kbs, header["kbs"], strict=False):
        if rec.get("generation") and kb.generation != rec["generation"]:
            warn(f"KB '{kb.name}' changed since the trace ({rec['generation']} -> "
                 f"{kb.generation}); the answer may differ")
    result = None
    for ev in session.ask(header["question"]):
        if isinstance(ev, Final):
            result = ev.result
    assert result is not None
    same = result.answer == recorded["answer"]
    if not quiet:  # JSON printed as is: markup in an answer is text
        typer.echo(json_text({"reproduced": same, "recorded": recorded["answer"],
                              "new": result.answer}, indent=2))
    else:
        stdout_console().print("reproduced" if same else "differs")
    if not same:
        raise typer.Exit(ExitCode.ERROR)
