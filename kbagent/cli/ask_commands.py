"""``kbagent ask`` (the agent, streamed) and ``kbagent ref`` (show a cited passage)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from kbagent.cli import app
from kbagent.cli.common import fail, handles_errors, settings_from, stderr_console, stdout_console
from kbagent.errors import BadInputError, ExitCode, KbagentError, NotFoundError

LAST_ANSWER = "last_answer.json"


class Mode(StrEnum):
    auto = "auto"
    agent = "agent"
    rag = "rag"
    direct = "direct"


class ToolSet(StrEnum):
    knowledge = "knowledge"
    full = "full"


@app.command()
@handles_errors
def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question.", show_default=False)],
    kb: Annotated[list[str] | None, typer.Option("--kb", help="KB to use (repeatable; default: "
                                                 "all).", show_default=False)] = None,
    mode: Annotated[Mode, typer.Option("--mode", help="auto: pick per question; agent: the "
                                       "ReAct loop; rag: one search then answer; direct: no "
                                       "retrieval.")] = Mode.auto,
    tools: Annotated[ToolSet, typer.Option("--tools", help="full adds calculate and plan.")] = (
        ToolSet.knowledge),
    model: Annotated[str | None, typer.Option(
        "--model", help="GGUF file (default: the bundled SmolLM2-135M-Instruct).",
        show_default=False)] = None,
    llm_url: Annotated[str | None, typer.Option("--llm-url", help="OpenAI-compatible server, "
                                                "e.g. http://127.0.0.1:8080/v1 (key from "
                                                "$KBAGENT_LLM_API_KEY).",
                                                show_default=False)] = None,
    llm_model: Annotated[str | None, typer.Option("--llm-model", help="Model name to send to "
                                                  "the server.", show_default=False)] = None,
    max_steps: Annotated[int | None, typer.Option("--max-steps", min=1, max=50,
                                                  help="Step limit (default 5).",
                                                  show_default=False)] = None,
    token_budget: Annotated[int | None, typer.Option("--token-budget", min=100,
                                                     help="Tokens per question (default 24000).",
                                                     show_default=False)] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=1.0,
                                                     help="Seconds per question (default 180).",
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
) -> None:
    """Ask a question; a local LLM searches the KBs and answers with cited sources."""
    if as_json and as_jsonl:
        raise BadInputError("--json and --jsonl cannot be combined")
    from kbagent.agent.llm import load_llm
    from kbagent.agent.loop import Agent, AgentConfig
    from kbagent.cli.kb_commands import open_kbs
    from kbagent.cli.render import EventRenderer

    settings = settings_from(ctx, llm_model=model, llm_url=llm_url, llm_server_model=llm_model)
    kbs = [] if mode is Mode.direct and not kb else open_kbs(settings, kb)
    config = AgentConfig.from_settings(settings, mode=mode.value, tools=tools.value,
                                       max_steps=max_steps, token_budget=token_budget,
                                       time_limit=time_limit)
    llm = load_llm(settings)
    from kbagent.kb.rerank import reranker_from
    from kbagent.kb.search import HybridSearcher

    reranker = reranker_from(settings.rerank_url, settings.rerank_model, settings.rerank_top_n,
                             settings.rerank_timeout)  # None unless configured
    agent = Agent(llm, kbs, config,
                  searcher=HybridSearcher(kbs, reranker=reranker) if reranker else None)
    out, err = stdout_console(), stderr_console()
    renderer = EventRenderer(out, err, quiet=quiet)
    result = None
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGINT, previous)  # a second Ctrl-C quits at once
        agent.cancel()
        err.print("[yellow]stopping… (Ctrl-C again to quit now)[/]")

    if threading_main():
        signal.signal(signal.SIGINT, on_sigint)
    try:
        from kbagent.agent.events import Final

        for ev in agent.run(question):
            if as_jsonl:
                typer.echo(json.dumps(ev.to_dict(), ensure_ascii=False))
            elif not as_json:
                renderer(ev)
            if isinstance(ev, Final):
                result = ev.result
    finally:
        if threading_main():
            signal.signal(signal.SIGINT, previous)
    assert result is not None
    save_last_answer(settings, result)
    if as_json:
        typer.echo(json.dumps(result.to_dict(all_references), indent=2, ensure_ascii=False))
    elif not as_jsonl:
        renderer.finish(result, all_references=all_references)
    if open_ref is not None:
        show_reference(settings, {"all_references": result.all_references}, open_ref, editor)
    if result.status == "cancelled":
        raise typer.Exit(ExitCode.INTERRUPTED)
    if result.status == "error":
        raise typer.Exit(ExitCode.BACKEND)


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def save_last_answer(settings: Any, result: Any) -> None:
    from kbagent.kb.knowledge_base import write_atomic

    settings.home.mkdir(parents=True, exist_ok=True)
    data = {**result.to_dict(), "all_references": result.all_references}
    write_atomic(settings.home / LAST_ANSWER, json.dumps(data, ensure_ascii=False))


def _find_reference(answer: dict[str, Any], n: int) -> dict[str, Any]:
    docs = answer.get("all_references") or answer.get("references", [])
    for doc in docs:
        for c in doc["chunks"]:
            if c["n"] == n:
                return c
    known = sorted(c["n"] for d in docs for c in d["chunks"])
    raise NotFoundError(f"no reference [{n}] in the last answer"
                        + (f" (known: {', '.join(map(str, known))})" if known else ""))


def show_reference(settings: Any, answer: dict[str, Any], n: int, editor: bool) -> None:
    """Print reference ``n``'s lines with their numbers, or open ``$EDITOR`` there."""
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.kb.views import FileViews

    ref = _find_reference(answer, n)
    kb = KnowledgeBase(settings, ref["kb"])
    source = Path(kb.manifest.get("source", ""))
    on_disk = source / ref["path"]
    if editor:
        cmd = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not cmd:
            raise BadInputError("set $EDITOR (or $VISUAL) to open references in an editor")
        if not on_disk.is_file():
            raise NotFoundError(f"{on_disk} is no longer on disk")
        code = subprocess.call([*shlex.split(cmd), f"+{ref['start_line']}", str(on_disk)])
        if code:
            raise KbagentError(f"editor exited with status {code}")
        return
    res = FileViews(kb).cat(ref["path"], ref["start_line"], ref["end_line"], max_lines=400)
    out = stdout_console()
    from rich.markup import escape

    out.print(f"[bold][{n}][/] [cyan]{escape(str(on_disk))}[/]:{ref['start_line']}-"
              f"{ref['end_line']}  [dim](KB {escape(ref['kb'])})[/]")
    width = len(str(ref["end_line"]))
    for ln in res.lines:
        out.print(f"[dim]{ln.number:>{width}}│[/] {escape(ln.text)}")


@app.command()
@handles_errors
def ref(
    ctx: typer.Context,
    n: Annotated[int | None, typer.Argument(help="Reference number from the last answer "
                                            "(default: its first reference).",
                                            show_default=False)] = None,
    editor: Annotated[bool, typer.Option("--editor", help="Open $EDITOR at the cited line.")] = (
        False),
) -> None:
    """Show the lines behind citation [N] of the last answer."""
    settings = settings_from(ctx)
    path = settings.home / LAST_ANSWER
    if not path.is_file():
        fail("no answer yet; run 'kbagent ask QUESTION' first", ExitCode.NOT_FOUND)
    try:
        answer = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BadInputError(f"cannot read the last answer ({e}); ask again") from e
    if n is None:
        cited = [c["n"] for d in answer.get("references", []) for c in d["chunks"]]
        if not cited:
            fail("the last answer has no references", ExitCode.NOT_FOUND)
        n = cited[0]
    show_reference(settings, answer, n, editor)
