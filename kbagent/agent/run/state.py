"""What configures the agent (:class:`AgentConfig`) and what one question's run
carries from step to step (:class:`RunState`): messages, steps, usage, the
citation ledger, the session cache of calls, why the run stopped, and the
:class:`Clock` its time limit and step timings are read from."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from kbagent.agent.answer.citations import CitationLedger
from kbagent.agent.answer.evidence import is_number, missing_facts
from kbagent.agent.answer.processor import AnswerProcessor, SentenceRepair
from kbagent.agent.events import AgentResult, Event, StepRecord, Usage
from kbagent.agent.kinds import (
    AnswerPolicy,
    AskMode,
    SearchFirst,
    ShortAnswerMode,
    Status,
    ToolSet,
)
from kbagent.agent.llm.base import Completion, Message
from kbagent.agent.records import SentenceRecord
from kbagent.agent.run.conversation import Conversation, follow_up_query
from kbagent.agent.tools.base import Tool, ToolCall, ToolContext
from kbagent.settings import Settings, default


class Clock(Protocol):
    """Where a run reads the time: its deadline, the time-limit checks while a call
    streams, and step and wall timings. The deadline is handed to the LLM backend,
    which compares it with ``time.perf_counter()``, so a run with a real backend uses
    :data:`SYSTEM_CLOCK`; tests pass a clock that moves only when they say."""

    def perf_counter(self) -> float: ...


class SystemClock:
    """The process's own clock: ``time.perf_counter()``."""

    def perf_counter(self) -> float:
        return time.perf_counter()


SYSTEM_CLOCK: Clock = SystemClock()


@dataclass
class AgentConfig:
    mode: AskMode = AskMode.AUTO
    tools: ToolSet = ToolSet.KNOWLEDGE
    # code_* tools in knowledge mode too (full always has them)
    code_tools: bool = default("code_tools")
    # the limits default to the settings' defaults (kbagent/defaults.py owns them)
    max_steps: int = default("max_steps")
    token_budget: int = default("token_budget")
    time_limit: float = default("time_limit")
    max_tokens_per_step: int = default("max_tokens_per_step")
    final_max_tokens: int = 512
    # How a knowledge question starts: "question" = the harness searches the question
    # itself as step 1 (robust with small models), "model" = the model's first step is
    # grammar-forced to be a kb_search, "off" = the model decides freely.
    search_first: SearchFirst = default("search_first")  # noqa: RUF009 (a member: immutable)
    rag_top_k: int = 5
    citation_cap: int = 100
    grounded: bool = default("grounded")
    # who states the short answer (kbagent/agent/harness/short_turn.py); the setting's
    # default (auto) comes through from_settings, a bare config takes no LLM call
    short_answer: ShortAnswerMode = ShortAnswerMode.HARNESS
    # the model judges which best unit answers (kbagent/agent/harness/judge.py)
    answer_judge: bool = default("answer_judge")
    # who writes a knowledge answer (kbagent/agent/run/authored.py); like short_answer,
    # the setting's default (auto) comes through from_settings, a bare config is harness
    answer_policy: AnswerPolicy = AnswerPolicy.HARNESS
    llm_size: str = default("llm_size")  # the model's size, over what its file says

    def __post_init__(self) -> None:
        # the closed sets are checked where a flag or setting is parsed (Typer, the
        # settings, a batch line, a server request); a plain string from Python code
        # becomes its member here, and a wrong one is a ValueError naming it
        self.mode, self.tools = AskMode(self.mode), ToolSet(self.tools)
        self.search_first = SearchFirst(self.search_first)
        self.short_answer = ShortAnswerMode(self.short_answer)
        self.answer_policy = AnswerPolicy(self.answer_policy)

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> AgentConfig:
        fields: dict[str, Any] = dict(
            max_steps=settings.max_steps, token_budget=settings.token_budget,
            time_limit=settings.time_limit, max_tokens_per_step=settings.max_tokens_per_step,
            search_first=settings.search_first, grounded=settings.grounded,
            short_answer=settings.short_answer,
            answer_judge=settings.answer_judge, answer_policy=settings.answer_policy,
            llm_size=settings.llm_size,
            code_tools=settings.code_tools)
        fields.update((k, v) for k, v in overrides.items() if v is not None)
        return cls(**fields)


@dataclass
class RunState:
    question: str
    mode: str
    ledger: CitationLedger
    ctx: ToolContext
    processor: AnswerProcessor
    tools: dict[str, Tool]
    started: float
    deadline: float
    policy: Policy  # who writes the answer (the loop's choice for this run)
    messages: list[Message] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    calls: dict[ToolCall, int] = field(default_factory=dict)  # each call: its first step
    protocol_failures: int = 0
    repeats: int = 0  # consecutive calls answered from the cache
    followups: int = 0  # searches the harness made in place of a repeated query
    injected: int = 0  # follow-up searches the harness added after a model's own search
    notes: list[str] = field(default_factory=list)  # calculator results for the final turn
    stop_reason: str = ""
    last_finish: str = ""  # finish reason of the newest LLM call
    abstained: bool = False  # the answer says the knowledge base does not say
    short_answer: str = ""  # the fact in a few words, with its marker ("128 [1]")
    stalled: bool = False  # the backend sent nothing before the time limit ended a call
    clock: Clock = SYSTEM_CLOCK  # ``started`` and ``deadline`` are in its seconds
    # the turns before a follow-up (kbagent/agent/run/conversation.py): they shape the
    # question's search (``query``) and the model's prompts, never the answer's question
    context: Conversation | None = None
    query: str = ""  # what the harness searches for the question (set from it)
    authored: bool = False  # the model writes the answer (answer policy "model")

    def __post_init__(self) -> None:
        self.query = self.query or follow_up_query(self.question, self.context)

    def count(self, c: Completion) -> None:
        self.last_finish = c.finish_reason
        self.usage.prompt_tokens += c.prompt_tokens
        self.usage.prompt_evaluated += c.prompt_evaluated
        self.usage.completion_tokens += c.completion_tokens
        self.usage.llm_calls += 1


# The model writes the answer from a message of sources and question (the loop's
# ``Agent.answer_turn``, passed in): True when the run already ended.
AnswerTurn = Callable[[RunState, int, bool, str], Generator[Event, None, bool]]


class Policy(Protocol):
    """How a run's knowledge answer is written (issue 44's seam): the small-model harness
    (:mod:`kbagent.agent.harness.policy`), the model (:mod:`~kbagent.agent.run.authored`)
    or plain (:mod:`~kbagent.agent.run.policy`). The shared stages come first (the
    question read into a ``Focus``, routed, searched); the loop builds one policy per run
    and hands it the rest."""

    @property
    def repairs(self) -> SentenceRepair | None:
        """What the answer processor checks the model's sentences with (None: no repairs)."""

    @property
    def defers_final(self) -> bool:
        """A ReAct step's "Final Answer:" is not streamed: the policy's final turn writes."""

    def own_run(self, s: RunState, rag: Callable[[RunState], Iterator[Event]]
                ) -> Iterator[Event] | None:
        """The policy's own path for the question, ending the run (``rag``: the loop's one
        retrieval and final turn); None: the loop's route."""

    def final(self, s: RunState, step: int, rag: bool) -> Generator[Event, None, bool]:
        """The final turn over what was gathered, from step ``step``; True when it ended
        the run (its ``Final`` sent), else the loop finishes it."""

    def closing(self, s: RunState) -> Iterator[Event]:
        """What the policy says once the answer is written, before the ``Final``."""


class NoOwnPath:
    """What a :class:`Policy` has that only the harness fills: no path of its own, nothing
    said before the ``Final``."""

    def own_run(self, s: RunState, rag: Callable[[RunState], Iterator[Event]]
                ) -> Iterator[Event] | None:
        return None

    def closing(self, s: RunState) -> Iterator[Event]:
        return iter(())


@dataclass
class StepDone:
    """What one step did, as :func:`record_step` keeps it (``tool_ms`` and ``cached``
    for a tool call)."""

    thought: str = ""
    action: str | None = None
    args: dict[str, Any] | None = None
    observation: str | None = None
    summary: str | None = None
    tool_ms: float = 0.0
    cached: bool = False


def limit_reason(s: RunState, cfg: AgentConfig, step: int) -> str:
    """Why the run stops after ``step`` (a step, token or time limit), or ""."""
    if step >= cfg.max_steps:
        return f"step limit of {cfg.max_steps} reached"
    if s.usage.budget_tokens >= cfg.token_budget:
        return f"token budget of {cfg.token_budget} used"
    if s.clock.perf_counter() > s.deadline:
        return f"time limit of {cfg.time_limit:g}s reached"
    return ""


def record_step(s: RunState, step: int, done: StepDone, c: Completion | None,
                started: float) -> StepRecord:
    """Append the record of a finished step (its LLM call ``c``, if any) to the run."""
    rec = StepRecord(
        step=step, thought=done.thought, action=done.action, args=done.args,
        observation=done.observation, summary=done.summary, tokens=c.tokens if c else 0,
        prompt_tokens=c.prompt_tokens if c else 0,
        prompt_evaluated=c.prompt_evaluated if c else 0,
        completion_tokens=c.completion_tokens if c else 0,
        ms=round((s.clock.perf_counter() - started) * 1000, 1),
        llm_ms=round(c.ms, 1) if c else 0.0, tool_ms=round(done.tool_ms, 1), cached=done.cached)
    s.steps.append(rec)
    return rec


def result_of(s: RunState, status: Status, kbs: list[str]) -> AgentResult:
    """The run's final result (``kbs``: the names of the KBs it could search)."""
    support = s.processor.support_by_number()
    s.usage.wall_ms = round((s.clock.perf_counter() - s.started) * 1000, 1)
    return AgentResult(
        question=s.question, answer=s.processor.answer, mode=s.mode, status=status,
        steps=s.steps, references=s.ledger.references(s.processor.cited(), support),
        all_references=s.ledger.references(None, support),
        unsupported=[x.text.strip() for x in s.processor.sentences if x.supported is False],
        sentences=[SentenceRecord(x.text.strip(), x.cited, x.auto,
                                  None if x.support is None else round(x.support, 3),
                                  x.supported, x.role, _numbers_missing(s, x))
                   for x in s.processor.sentences if x.text.strip()],
        usage=s.usage, stop_reason=s.stop_reason, kbs=kbs, abstained=s.abstained,
        repairs=list(g.repairs) if (g := s.processor.grounding) else [],
        short_answer=s.short_answer)


def _numbers_missing(s: RunState, sent: Any) -> list[str]:
    """The numbers of a sentence that its cited chunks (and the run's calculator
    results) do not contain: what a grounded answer must never show."""
    if not sent.cited or sent.role == "notice":
        return []
    g = s.processor.grounding
    text = (g.cited_text(sent.cited) if g else
            " ".join(f"{c.text} {c.path}" for n in sent.cited if (c := s.ledger.get(n))))
    missing = missing_facts(sent.text, text, g.extra_numbers if g else set())
    return [f for f in missing if is_number(f)]


def final_sources(s: RunState, limit: int) -> list[Any]:
    """The first hits (the question's own search) and the newest finds (a targeted
    read late in the loop), at most ``limit``, in ledger order."""
    cites = list(s.ledger)
    if len(cites) <= limit:
        return cites
    first = limit // 2
    return cites[:first] + cites[len(cites) - (limit - first):]


def evidence_lines(s: RunState, limit: int = 3) -> str:
    """The first sources gathered, one cited line each (for a stopped answer)."""
    return "\n".join(f"- {c.excerpt(110)} [{c.n}]" for c in list(s.ledger)[:limit])
