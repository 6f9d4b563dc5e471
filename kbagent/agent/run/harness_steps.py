"""Steps the harness takes itself, without an LLM call, each shown as a visible
Action and Observation: the question's own search (rag mode, and step 1 of the
loop when ``search_first`` is "question"), follow-up searches for multi-hop
questions, a search per part or operand of a decomposed question, and the
``calculate`` tool over figures read from the sources. The loop
(:mod:`~kbagent.agent.run.loop`) and the grounded turn
(:mod:`~kbagent.agent.harness.final_turn`) both call these."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from kbagent.agent.events import Action, AnswerDelta, Event, Observation, StepStarted
from kbagent.agent.kinds import StepKind, ToolName, ToolSet
from kbagent.agent.llm.base import Message
from kbagent.agent.run import prompts
from kbagent.agent.run.state import RunState, StepDone, record_step
from kbagent.agent.tools.base import ToolCall, ToolOutput
from kbagent.agent.tools.toolset import registry, run_tool

MAX_QUERY_CHARS = 300


def search_args(query: str, top_k: int) -> dict[str, Any]:
    """``kb_search`` arguments for ``query`` (cut to what a query may hold)."""
    return {"query": query[:MAX_QUERY_CHARS], "top_k": top_k}


def search_call(query: str, top_k: int) -> ToolCall:
    """The ``kb_search`` call for ``query``."""
    return ToolCall(ToolName.KB_SEARCH, search_args(query, top_k))


def tool_step(s: RunState, step: int, call: ToolCall,
              thought: str) -> Generator[Event, None, ToolOutput]:
    """Run one tool call as a step of its own; its output."""
    started = s.clock.perf_counter()
    name, args = call.name, call.args
    yield StepStarted(step, kind=StepKind.RETRIEVAL)
    yield Action(step, name, args, thought)
    tool = s.tools.get(name) or registry(ToolSet.FULL)[name]
    out, tool_ms = run_tool(tool, s.ctx, args)
    s.usage.tool_ms += tool_ms
    rec = record_step(s, step, StepDone(thought, name, args, out.text, out.summary,
                                        tool_ms), None, started)
    yield Observation(step, name, out.summary, out.text, out.ok, out.citations,
                      out.sources, False, 0, rec.ms, tool_ms)
    s.calls[call] = step
    return out


def search_step(s: RunState, step: int, query: str, thought: str, top_k: int
                ) -> Generator[Event, None, ToolOutput]:
    """A search the harness makes (the question, a part of it, an operand)."""
    return (yield from tool_step(s, step, search_call(query, top_k), thought))


def followup_step(s: RunState, step: int, query: str, top_k: int,
                  max_steps: int) -> Generator[Event, None, None]:
    """A follow-up search the harness makes in the loop; the model sees it as a step
    of the conversation."""
    call = search_call(query, top_k)
    out = yield from tool_step(s, step, call, prompts.harness_followup_thought(query))
    s.messages += [
        Message("assistant", prompts.action_text(prompts.FOLLOWUP_STEP_THOUGHT,
                                                 call.name, call.args)),
        Message("user", prompts.observation_message(out.text, step, max_steps)),
    ]


def calculate_step(s: RunState, step: int, expr: str) -> Generator[Event, None, str | None]:
    """Compute ``expr`` with the ``calculate`` tool; its result, or None if the
    calculator refused it. The result joins the notes the final turn is shown."""
    out = yield from tool_step(s, step, ToolCall(ToolName.CALCULATE, {"expression": expr}),
                               "I will compute it from the figures found.")
    if not out.ok:
        return None
    s.notes.append(out.text)
    return out.text.rsplit("=", 1)[-1].strip()


def say(s: RunState, text: str, role: str, cited: list[int] | None = None,
        pieces: bool = False) -> Event:
    """A sentence the harness writes into the answer (a quote, a short answer, a
    calculation, a notice), through the answer processor, as an event; ``pieces``: a
    list of short answers, each checked on its own."""
    sent = s.processor.emit(text, role, cited, pieces)
    return AnswerDelta(sent.text, sent.supported)
