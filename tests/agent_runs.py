"""Helpers for tests that drive the agent loop and look at its events."""

from __future__ import annotations

from typing import Any

from kbagent.agent.events import Action, AgentResult, Event, Final
from kbagent.agent.run.loop import Agent


def run(agent: Agent, question: str) -> tuple[list[Event], AgentResult]:
    """Every event of one run, and its result (the run must end with ``Final``)."""
    events = list(agent.run(question))
    assert isinstance(events[-1], Final)
    return events, events[-1].result


def searched(events: list[Any]) -> list[str]:
    """The queries of the run's kb_search calls, in order."""
    return [a.args["query"] for a in events if isinstance(a, Action) and a.tool == "kb_search"]
