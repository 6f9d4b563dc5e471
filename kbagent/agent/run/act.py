"""The model's Action, carried out: the tool call the model wrote in a loop step
is checked (a known tool, arguments valid against its schema), replaced by the
harness's follow-up search when it only repeats or pastes an earlier query,
answered from the session cache when it repeats an earlier call, skipped once
the run is cancelled, and otherwise run; the Observation goes back to the model
as the next user message."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kbagent.agent.cancel import CancelToken
from kbagent.agent.events import Action, Event, Observation
from kbagent.agent.kinds import ToolName
from kbagent.agent.llm.base import Completion, Message
from kbagent.agent.run import prompts
from kbagent.agent.run.harness_steps import search_call
from kbagent.agent.run.react import ParsedStep
from kbagent.agent.run.search_memory import follow_up_instead, repeated_search
from kbagent.agent.run.state import AgentConfig, RunState, StepDone, record_step
from kbagent.agent.tools.base import ToolCall, ToolOutput
from kbagent.agent.tools.schema import ArgumentError, example_args, validate
from kbagent.agent.tools.toolset import run_tool


def _checked(s: RunState, parsed: ParsedStep) -> tuple[dict[str, Any], ToolOutput | None]:
    """The call's arguments, validated, or the error observation the model is shown."""
    name = parsed.action or ""
    tool = s.tools.get(name)
    args: dict[str, Any] = parsed.args if isinstance(parsed.args, dict) else {}
    if tool is None:
        return args, ToolOutput(f"There is no tool '{name}'. Available tools: "
                                f"{', '.join(s.tools)}.", f"unknown tool {name!r}", ok=False)
    if parsed.args_error:
        return args, ToolOutput(f"{name}: {parsed.args_error}. Action Input must be a JSON "
                                f"object like {example_args(tool.parameters)}.",
                                "invalid arguments", ok=False)
    try:
        return validate(name, tool.parameters, parsed.args), None
    except ArgumentError as e:
        return args, ToolOutput(f"{e}. Example: {example_args(tool.parameters)}",
                                "invalid arguments", ok=False)


def act(s: RunState, cfg: AgentConfig, cancel: CancelToken, step: int, parsed: ParsedStep,
        text: str, completion: Completion, started: float) -> Iterator[Event]:
    """Carry out the Action of loop step ``step`` (``text``: what the model wrote)."""
    thought = parsed.thought
    cached, tool_ms = False, 0.0
    args, out = _checked(s, parsed)
    call = ToolCall(parsed.action or "", args)
    if out is None:
        follow = follow_up_instead(s, call)
        if follow is not None:  # the harness's query, shown as such
            s.followups += 1
            thought = prompts.followup_thought(str(call.args["query"]), follow)
            call = search_call(follow, cfg.rag_top_k)
            text = prompts.action_text(prompts.FOLLOWUP_STEP_THOUGHT, call.name, call.args)
    name, args = call.name, call.args
    yield Action(step, name, args, thought)
    if out is None:
        earlier = s.calls.get(call) or repeated_search(s, call)
        if earlier:
            cached = True
            s.repeats += 1
            out = ToolOutput(
                f"Already done: {name} was called with these arguments at step "
                f"{earlier}; see that observation above. Do not repeat a call: "
                "try different arguments or give the Final Answer.",
                f"repeat of step {earlier} (served from cache)")
        elif cancel.cancelled:  # no new tool call once cancelled
            out = ToolOutput("Cancelled by the user.", "skipped: cancelled", ok=False)
        else:
            out, tool_ms = run_tool(s.tools[name], s.ctx, args)
            s.calls[call] = step
            if name == ToolName.CALCULATE and out.ok:
                s.notes.append(out.text)
    if not cached:
        s.repeats = 0
    s.usage.tool_ms += tool_ms
    s.messages += [Message("assistant", text),
                   Message("user", prompts.observation_message(out.text, step, cfg.max_steps))]
    rec = record_step(s, step, StepDone(thought, name, args, out.text, out.summary,
                                        tool_ms, cached), completion, started)
    yield Observation(step, name, out.summary, out.text, out.ok, out.citations, out.sources,
                      cached, completion.tokens, rec.ms, tool_ms)
