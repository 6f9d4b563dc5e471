"""The agent loop's follow-up bookkeeping over a run's state (kept apart from
:mod:`kbagent.agent.run.loop`): which queries were searched, which follow-ups
:mod:`kbagent.agent.run.hops` proposes from the hits so far, and when a model's
search repeats, nearly repeats or pastes what it already has."""

from __future__ import annotations

from kbagent.agent.kinds import SEARCH_TOOLS, SearchFirst, ToolName
from kbagent.agent.run.hops import Hit, copied, followups, near_duplicate, title_of
from kbagent.agent.run.state import RunState
from kbagent.agent.tools.base import ToolCall

MAX_FOLLOWUPS = 2  # follow-up searches the harness makes for a model that repeats itself


def searched(s: RunState) -> list[str]:
    """The queries searched so far, in order."""
    return [str(c.args.get("query", "")) for c in s.calls if c.name in SEARCH_TOOLS]

def pending_followups(s: RunState) -> list[str]:
    """Follow-up queries :mod:`~kbagent.agent.run.hops` proposes from the hits so
    far (none searched yet)."""
    hits = [Hit(title_of(c.path, c.heading), c.text) for c in s.ledger]
    return followups(s.question, hits, searched(s))

def only_harness_searched(s: RunState, search_first: str) -> bool:
    """The harness's question search is the only step so far."""
    return (search_first == SearchFirst.QUESTION and len(s.steps) == 1
            and s.steps[0].action == ToolName.KB_SEARCH)

def repeated_search(s: RunState, call: ToolCall) -> int | None:
    """The step of an earlier search that ``call`` nearly repeats (its words, no
    more results), when no follow-up could replace it."""
    if call.name not in SEARCH_TOOLS:
        return None
    args = call.args
    for earlier, step in s.calls.items():
        done = earlier.args
        if (earlier.name == call.name and int(args.get("top_k", 0)) <= int(done.get("top_k", 0))
                and near_duplicate(str(args.get("query", "")), [str(done.get("query"))])):
            return step
    return None

def follow_up_instead(s: RunState, call: ToolCall) -> str | None:
    """A follow-up query to search instead of the model's, when the model's query
    repeats the question or an earlier search (nearly), or pastes a passage of the
    results, and a follow-up is left. A query of the model's own that adds words is
    never replaced."""
    if call.name not in SEARCH_TOOLS or ToolName.KB_SEARCH not in s.tools:
        return None
    query = str(call.args.get("query", ""))
    if not (near_duplicate(query, [s.question, *searched(s)])
            or copied(query, [c.text for c in s.ledger])):
        return None
    pending = pending_followups(s)
    return pending[0] if pending else None
