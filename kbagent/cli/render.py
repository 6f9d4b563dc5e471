"""Render the agent's event stream for a terminal: steps on stderr, answer on stdout."""

from __future__ import annotations

import json
import re
from typing import Any

from kbagent.agent.events import (
    Action,
    AgentResult,
    AnswerDelta,
    ErrorEvent,
    Event,
    Observation,
    StepStarted,
    ThoughtDelta,
)
from kbagent.agent.kinds import StepKind
from kbagent.agent.records import describe_repairs
from kbagent.cli.common import literal
from kbagent.text import shorten

_BADGE = re.compile(r"\[(\d+)\]")


def badges(text: str, styled: bool) -> str:
    """Text for rich, shown literally (no markup, no control sequences), with ``[n]``
    citation badges styled."""
    if not styled:
        return literal(text)
    parts = _BADGE.split(text)  # text, number, text, number, ...
    return "".join(literal(p) if i % 2 == 0 else f"[bold black on cyan] {p} [/]"
                   for i, p in enumerate(parts))


class EventRenderer:
    """Live rendering of one question: thoughts, actions and observations on stderr,
    the answer (sentence by sentence, badges styled) on stdout."""

    def __init__(self, out: Any, err: Any, *, quiet: bool = False) -> None:
        self.out = out
        self.err = err
        self.quiet = quiet
        self._in_thought = False
        self._answer_started = False
        self._answer_mid_line = False
        self.styled = bool(getattr(out, "is_terminal", False))

    def _end_thought(self) -> None:
        if self._in_thought:
            self.err.print()
            self._in_thought = False

    def _end_answer_line(self) -> None:
        """A step shown after some answer text (a grounded answer's lead quote comes
        before the model's answer step) starts on a line of its own when both streams
        share the terminal; piped output keeps the answer text unbroken."""
        if (self._answer_mid_line and getattr(self.out, "is_terminal", False)
                and getattr(self.err, "is_terminal", False)):
            self.out.print()
        self._answer_mid_line = False

    def __call__(self, ev: Event) -> None:
        if isinstance(ev, AnswerDelta):
            self._end_thought()
            text = badges(ev.text, self.styled)
            if ev.supported is False:
                text = (f"[yellow underline]{text.rstrip()}[/] [yellow]⚠[/] "
                        if self.styled else text)
            self.out.print(text, end="")
            self._answer_started = True
            self._answer_mid_line = not text.endswith("\n")
            return
        if self.quiet:
            return
        self._end_answer_line()
        if isinstance(ev, StepStarted):
            self._end_thought()
            label = {StepKind.LLM: "", StepKind.FORCED_FINAL: " (final answer)",
                     StepKind.RETRIEVAL: " (retrieval)",
                     StepKind.ANSWER: " (answer)"}.get(ev.kind, "")
            self.err.print(f"[bold magenta]▸ step {ev.step}{label}[/]")
        elif isinstance(ev, ThoughtDelta):
            if not self._in_thought:
                self.err.print("  [dim]thought:[/] ", end="")
                self._in_thought = True
            self.err.print(f"[dim]{literal(ev.text)}[/]", end="")
        elif isinstance(ev, Action):
            self._end_thought()
            args = json.dumps(ev.args, ensure_ascii=False)
            self.err.print(f"  [cyan]→ {literal(ev.tool)}[/] {literal(args)}")
        elif isinstance(ev, Observation):
            colour = "green" if ev.ok else "red"
            cached = " [dim](cached)[/]" if ev.cached else ""
            self.err.print(f"  [{colour}]← {literal(ev.summary)}[/]{cached} "
                           f"[dim]({ev.tokens} tokens, {ev.ms:.0f} ms)[/]")
        elif isinstance(ev, ErrorEvent):
            self._end_thought()
            colour = "yellow" if ev.kind in ("protocol", "cancelled") else "red"
            self.err.print(f"  [{colour}]! {literal(ev.message)}[/]")

    def finish(self, result: AgentResult, *, all_references: bool = False) -> None:
        self._end_thought()
        if self._answer_started:
            self.out.print()
        if self.quiet:
            return
        refs = result.all_references if all_references else result.references
        if refs:
            self.out.print()
            self.out.print("[bold]References[/]" if self.styled else "References")
            for c in refs.chunks():
                self.out.print(reference_line(
                    c.to_json(), self.styled, self.out.width if self.out.is_terminal else None))
        for sentence in result.unsupported:
            self.err.print(f"[yellow]⚠ not supported by its cited sources:[/] "
                           f"{literal(sentence)}")
        for line in describe_repairs(result.repairs):
            self.err.print(f"[yellow]✎[/] {literal(line)}")
        u = result.usage
        stop = f"; stopped: {result.stop_reason}" if result.stop_reason else ""
        self.err.print(
            f"[dim]{result.mode} mode, {len(result.steps)} steps, {u.llm_calls} LLM calls, "
            f"{u.prompt_evaluated}+{u.completion_tokens} tokens, "
            f"{u.wall_ms / 1000:.1f}s{literal(stop)}[/]")


def reference_line(c: dict[str, Any], styled: bool, width: int | None = None) -> str:
    """``[n] path:start-end  (score)  first words of the excerpt``: one line. On a
    terminal the excerpt is cut to fit ``width``; otherwise to 100 characters."""
    score = f"({c['score']:.3f})" if c.get("score") is not None else "(read)"
    mark = "" if c.get("supported") is not False else "  ⚠ unsupported"
    where = f"{c['path']}:{c['start_line']}-{c['end_line']}"
    if c.get("location"):  # the place a person checks in the original: p.2, slide 3, cells
        where = f"{c['path']} {c['location']} ({c['start_line']}-{c['end_line']})"
    room = 100
    if width:
        room = max(20, width - len(f"[{c['n']}] {where}  {score}  {mark}") - 1)
    first = shorten(c["excerpt"], room, strip=True)
    if styled:
        return (f"[bold black on cyan] {c['n']} [/] [cyan]{literal(where)}[/]  "
                f"[green]{score}[/]  {literal(first)}{mark}")
    return literal(f"[{c['n']}] {where}  {score}  {first}{mark}")


