"""The closed sets of words the agent layer speaks in, each defined once.

They are ``StrEnum``s: a member *is* its string (``AskMode.RAG == "rag"``, and
``json.dumps`` writes ``"rag"``), so events, traces and ``--json`` output read
exactly as plain strings did. The CLI's Typer options, the session, batch and
the TUI use these instead of their own lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# a closed set of a setting, defined below the agent (kbagent/defaults.py) so that the
# settings, which the KB layer reads, need not import the agent
from kbagent.defaults import AnswerPolicy as AnswerPolicy
from kbagent.defaults import SearchFirst as SearchFirst
from kbagent.defaults import ShortAnswerMode as ShortAnswerMode


class AskMode(StrEnum):
    """How a question is answered (``--mode``)."""

    AUTO = "auto"  # the router picks one of the three below
    AGENT = "agent"  # the full ReAct loop
    RAG = "rag"  # one search, then one answer
    DIRECT = "direct"  # small talk: no retrieval


class ToolSet(StrEnum):
    """Which tools the model gets (``--tools``)."""

    KNOWLEDGE = "knowledge"
    FULL = "full"  # adds calculate, plan and the code tools


class StepKind(StrEnum):
    """``StepStarted.kind``: who runs the step."""

    LLM = "llm"  # a ReAct step of the model
    RETRIEVAL = "retrieval"  # the harness searches the question
    FORCED_FINAL = "forced-final"  # a limit was hit: one final-answer turn over the evidence
    ANSWER = "answer"  # the answer turn of rag and direct mode


class ErrorKind(StrEnum):
    """``ErrorEvent.kind``. (A hit limit is not an error event: it ends the run with
    status ``limit`` and a ``stop_reason``.)"""

    ERROR = "error"  # the backend failed
    CANCELLED = "cancelled"
    PROTOCOL = "protocol"  # the model does not follow the step format


class Status(StrEnum):
    """``AgentResult.status``: how the question ended."""

    ANSWERED = "answered"
    LIMIT = "limit"  # a step, token, time or context limit forced the final answer
    CANCELLED = "cancelled"
    ERROR = "error"


class FinishReason(StrEnum):
    """``Completion.finish_reason`` values the harness acts on (a server may send
    others; they pass through as plain strings)."""

    STOP = "stop"
    LENGTH = "length"  # max_tokens reached: the text may end mid-sentence
    ABORTED = "aborted"  # the stream was closed or cancelled
    REPETITION = "repetition"  # cut by the loop: the answer started repeating itself


@dataclass(frozen=True)
class TurnEnd:
    """How one LLM turn of the loop ended: go on, the question already ended (a
    backend failure or a cancel, its events already sent), or generation stopped
    early for ``reason``, worded for the user ("time limit reached")."""

    done: bool = False
    reason: str = ""

    @property
    def go_on(self) -> bool:
        return not self.done and not self.reason


GO_ON = TurnEnd()
DONE = TurnEnd(done=True)


class ToolName(StrEnum):
    """The agent's tools, by the name the model calls them (``Action: kb_search``)."""

    KB_SEARCH = "kb_search"
    KB_SEMANTIC_SEARCH = "kb_semantic_search"
    KB_GREP = "kb_grep"
    KB_CAT = "kb_cat"
    KB_LS = "kb_ls"
    KB_GLOB = "kb_glob"
    LIST_KBS = "list_kbs"
    CALCULATE = "calculate"
    PLAN = "plan"
    CODE_DEFINITION = "code_definition"
    CODE_REFERENCES = "code_references"
    CODE_CALLERS = "code_callers"
    CODE_OUTLINE = "code_outline"


# the tools that search (a repeated or pasted query is caught for these)
SEARCH_TOOLS = frozenset({ToolName.KB_SEARCH, ToolName.KB_SEMANTIC_SEARCH})


class RepairAction(StrEnum):
    """``Repair.action``: what the grounding check did to a model sentence."""

    REPLACED = "replaced"  # a fact was not in its source: the source sentence is quoted
    RECITED = "recited"  # right, but cited to the wrong chunk: cited to the one that says it
    REMOVED = "removed"  # no source sentence carries it
