"""Typed events streamed by the agent (see DESIGN.md: Agent, Surfaces).

Every event has a ``type`` used in ``--jsonl`` output: ``step``, ``thought``,
``action``, ``observation``, ``answer``, ``final``, ``error``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from kbagent.agent.kinds import ErrorKind, Status, StepKind
from kbagent.agent.records import ReferenceChunk, References, Repair, SentenceRecord


@dataclass
class Event:
    type: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}


@dataclass
class StepStarted(Event):
    type: ClassVar[str] = "step"
    step: int
    kind: StepKind = StepKind.LLM  # llm | retrieval | forced-final | answer


@dataclass
class ThoughtDelta(Event):
    """A piece of the model's Thought text, as it is generated."""

    type: ClassVar[str] = "thought"
    step: int
    text: str


@dataclass
class Action(Event):
    type: ClassVar[str] = "action"
    step: int
    tool: str
    args: dict[str, Any]
    thought: str = ""


@dataclass(frozen=True)
class Source:
    """Where an observation's hit lies: a file, a line, or a line range. Written as
    ``path``, ``path:line`` or ``path:start-end`` in event JSON and for people."""

    path: str
    start_line: int | None = None
    end_line: int | None = None  # None with a start_line: a single line

    def __str__(self) -> str:
        if self.start_line is None:
            return self.path
        if self.end_line is None:
            return f"{self.path}:{self.start_line}"
        return f"{self.path}:{self.start_line}-{self.end_line}"


@dataclass
class Observation(Event):
    type: ClassVar[str] = "observation"
    step: int
    tool: str
    summary: str  # one line for people: hit count and sources
    text: str  # what the model sees
    ok: bool = True
    citations: list[int] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    cached: bool = False
    tokens: int = 0  # LLM tokens of the step that produced the action
    ms: float = 0.0  # wall time of the step (LLM + tool)
    tool_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "sources": [str(s) for s in self.sources]}


@dataclass
class AnswerDelta(Event):
    """Answer text as it becomes final (citations already checked), sentence by sentence."""

    type: ClassVar[str] = "answer"
    text: str
    supported: bool | None = None  # None: nothing to check (no claim / no citation needed)


@dataclass
class ErrorEvent(Event):
    type: ClassVar[str] = "error"
    message: str
    kind: ErrorKind = ErrorKind.ERROR  # error | cancelled | protocol


@dataclass
class StepRecord:
    """One completed step, as kept in the final result."""

    step: int
    thought: str
    action: str | None
    args: dict[str, Any] | None
    observation: str | None
    summary: str | None
    tokens: int
    prompt_tokens: int
    prompt_evaluated: int
    completion_tokens: int
    ms: float
    llm_ms: float
    tool_ms: float
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Usage:
    prompt_tokens: int = 0  # sum of prompt lengths over LLM calls
    prompt_evaluated: int = 0  # prompt tokens actually evaluated (KV cache misses)
    completion_tokens: int = 0
    llm_calls: int = 0
    llm_ms: float = 0.0
    tool_ms: float = 0.0
    wall_ms: float = 0.0

    @property
    def budget_tokens(self) -> int:
        return self.prompt_evaluated + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "budget_tokens": self.budget_tokens}


@dataclass
class AgentResult:
    question: str
    answer: str
    mode: str
    status: Status  # answered | limit | cancelled | error
    steps: list[StepRecord] = field(default_factory=list)
    references: References = field(default_factory=References)  # the cited ones
    all_references: References = field(default_factory=References)  # every one seen
    unsupported: list[str] = field(default_factory=list)
    # the answer sentence by sentence: text, cited numbers, support score and verdict
    sentences: list[SentenceRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = ""  # which limit ended the loop, if any
    kbs: list[str] = field(default_factory=list)
    abstained: bool = False  # the answer says the knowledge base does not say
    repairs: list[Repair] = field(default_factory=list)  # what the grounding check did
    # the fact asked for in a few words ("128", "/bin/sh"), cited; "" when the answer has
    # none (abstention, an explanation, small talk). The answer begins with it.
    short_answer: str = ""

    def reference(self, n: int) -> ReferenceChunk | None:
        """Reference ``[n]`` among every chunk the run saw (None: no such number)."""
        return (self.all_references or self.references).reference(n)

    def to_dict(self, all_references: bool = False) -> dict[str, Any]:
        """The ``ask --json`` form (``all_references``: every chunk seen, not just
        the cited ones, as ``references``)."""
        return {
            "question": self.question,
            "answer": self.answer,
            "short_answer": self.short_answer,
            "mode": self.mode,
            "status": self.status,
            "stop_reason": self.stop_reason,
            "kbs": self.kbs,
            "steps": [s.to_dict() for s in self.steps],
            "references": (self.all_references if all_references
                           else self.references).to_json(),
            "unsupported": self.unsupported,
            "sentences": [x.to_json() for x in self.sentences],
            "abstained": self.abstained,
            "repairs": [r.to_json() for r in self.repairs],
            "usage": self.usage.to_dict(),
        }

    def to_json(self) -> dict[str, Any]:
        """:meth:`to_dict` with ``all_references`` too: what traces, the history and
        the last-answer file keep, and :meth:`from_json` reads back."""
        return {**self.to_dict(), "all_references": self.all_references.to_json()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> AgentResult:
        """A result from its :meth:`to_json` (or ``to_dict``) form."""
        usage = {k: v for k, v in d.get("usage", {}).items() if k != "budget_tokens"}
        return cls(
            question=d["question"], answer=d["answer"], mode=d["mode"],
            status=Status(d["status"]), steps=[StepRecord(**s) for s in d.get("steps", [])],
            references=References.from_json(d.get("references")),
            all_references=References.from_json(d.get("all_references")
                                                or d.get("references")),
            unsupported=d.get("unsupported", []),
            sentences=[SentenceRecord.from_json(x) for x in d.get("sentences", [])],
            usage=Usage(**usage), stop_reason=d.get("stop_reason", ""), kbs=d.get("kbs", []),
            abstained=bool(d.get("abstained", False)),
            repairs=[Repair.from_json(r) for r in d.get("repairs", [])],
            short_answer=str(d.get("short_answer", "")),
        )


@dataclass
class Final(Event):
    type: ClassVar[str] = "final"
    result: AgentResult

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.result.to_dict()}
