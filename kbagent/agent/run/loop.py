"""The ReAct loop: a generator of typed events, bounded by steps, tokens and time.

``Agent.run(question)`` yields :mod:`~kbagent.agent.events` as they happen (Thought text,
each Action and Observation, the answer sentence by sentence with its citations checked,
one ``Final``). Every step parses (GBNF, or a lenient parser and a RAG fallback), a
repeated call is answered from the cache, and a limit ends in one final-answer turn over
what was gathered. The loop is the one module outside :mod:`kbagent.agent.harness` that
imports it: it hands the answer to a policy (the harness, ``authored`` or plain).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from functools import partial

from kbagent.agent.answer.citations import CitationLedger
from kbagent.agent.answer.evidence import SentenceVectors
from kbagent.agent.answer.processor import AnswerProcessor
from kbagent.agent.cancel import CancelToken
from kbagent.agent.events import (
    AgentResult,
    AnswerDelta,
    ErrorEvent,
    Event,
    Final,
    StepStarted,
)
from kbagent.agent.harness.grounding import Grounding, abstention_reason
from kbagent.agent.harness.policy import HarnessPolicy
from kbagent.agent.kinds import (
    DONE,
    GO_ON,
    SEARCH_TOOLS,
    AskMode,
    ErrorKind,
    SearchFirst,
    Status,
    StepKind,
    ToolName,
    TurnEnd,
)
from kbagent.agent.llm.base import LLM, Completion, ContextFull, Message
from kbagent.agent.run import prompts
from kbagent.agent.run.about import SelfFacts, about_reply
from kbagent.agent.run.act import act
from kbagent.agent.run.authored import ModelPolicy
from kbagent.agent.run.conversation import Conversation, in_conversation
from kbagent.agent.run.endings import cancelled, fallback_answer, finish
from kbagent.agent.run.generation import MODEL_READY, READY, generate
from kbagent.agent.run.harness_steps import followup_step, search_call, search_step
from kbagent.agent.run.policy import PlainPolicy, authored_route, model_writes, search_depth
from kbagent.agent.run.react import (
    ProtocolError,
    action_token_bound,
    parse_step,
    step_grammar,
)
from kbagent.agent.run.router import route
from kbagent.agent.run.search_memory import (
    MAX_FOLLOWUPS,
    only_harness_searched,
    pending_followups,
)
from kbagent.agent.run.state import (
    SYSTEM_CLOCK,
    AgentConfig,
    Clock,
    Policy,
    RunState,
    StepDone,
    limit_reason,
    record_step,
    result_of,
)
from kbagent.agent.tools.base import ToolContext
from kbagent.agent.tools.toolset import registry
from kbagent.errors import BackendError, BadInputError
from kbagent.kb.access import ANONYMOUS, Principal
from kbagent.kb.provenance import stamp_references
from kbagent.kb.search import HybridSearcher
from kbagent.kb.store_protocol import KbReader
from kbagent.safe_text import valid_unicode

MAX_REPEATS = 2  # consecutive cached calls before the loop stops searching


class Agent:
    """Answer questions over a fixed set of KBs with one LLM backend."""

    def __init__(self, llm: LLM, kbs: list[KbReader], config: AgentConfig | None = None,
                 *, searcher: HybridSearcher | None = None,
                 principal: Principal = ANONYMOUS, clock: Clock = SYSTEM_CLOCK) -> None:
        self.llm = llm
        self.clock = clock  # every run's deadline and timings (tests pass their own)
        self.kbs = {kb.name: kb for kb in kbs}
        self.config = config or AgentConfig()  # its mode, tools, search_first: enums
        self.searcher = searcher or HybridSearcher(kbs)
        self.principal = principal  # fixed for this agent: no text can change it
        self._cancel = CancelToken()

    def cancel(self) -> None:
        """Stop the running (or the next) question; it ends with what it gathered."""
        self._cancel.cancel()

    # ------------------------------------------------------------------ run
    def run(self, question: str, cancel: CancelToken | None = None, *,
            context: Conversation | None = None) -> Iterator[Event]:
        """Answer ``question``. ``cancel`` is this run's token (a UI makes it before
        starting the run, so an early cancel is kept); without one the agent's own
        token is used, and a fresh one is made when the run ends. ``context``: the
        conversation's earlier turns, for a follow-up (its search and prompts only)."""
        question = " ".join(valid_unicode(question).split())  # undecodable bytes: U+FFFD
        if not question:
            raise BadInputError("empty question")
        if cancel is not None:
            self._cancel = cancel
        run = self._run(question, context)
        try:
            for ev in run:
                if isinstance(ev, Final):  # references record what they cited (hashes)
                    stamp_references(self.kbs, ev.result.references.chunks())
                    stamp_references(self.kbs, ev.result.all_references.chunks())
                yield ev
        finally:
            run.close()
            if cancel is None or self._cancel is cancel:
                self._cancel = CancelToken()  # the next run starts uncancelled

    def _run(self, question: str, context: Conversation | None
             ) -> Generator[Event, None, None]:
        cfg = self.config
        authored = model_writes(cfg, self.llm)  # the answer policy (run/policy.py)
        mode = authored_route(route(question), authored) if cfg.mode == AskMode.AUTO else cfg.mode
        if mode != AskMode.DIRECT and not self.kbs:
            raise BadInputError("no knowledge base to search; run 'kbagent ingest PATH' first")
        ctx = ToolContext(self.kbs, self.searcher, CitationLedger(cfg.citation_cap),
                          principal=self.principal)
        ctx.ledger.resolver, ctx.ledger.locator = ctx.resolve_lines, ctx.locate
        now = self.clock.perf_counter()
        policy = self._policy(question, ctx, authored, mode)
        s = RunState(question, mode, ctx.ledger, ctx,
                     AnswerProcessor(ctx.ledger, grounding=policy.repairs),
                     registry(cfg.tools, cfg.code_tools), now, now + cfg.time_limit, policy,
                     clock=self.clock, context=context, authored=authored)
        if self._cancel.cancelled:  # cancelled before the first step: keep it
            yield from cancelled(s)
        elif mode == AskMode.DIRECT:
            yield from self._direct(s)
        elif mode == AskMode.RAG:
            yield from self._rag(s)
        elif (own := policy.own_run(s, partial(self._rag, fallback=True))):
            yield from own  # the harness's parts, arithmetic and two hops
        else:
            yield from self._agent(s)

    def _policy(self, question: str, ctx: ToolContext, authored: bool, mode: AskMode
                ) -> Policy:
        """The run's answer policy (the seam): the model writes, the harness does (with
        grounded answers on, a knowledge question), or plain."""
        if authored:
            return ModelPolicy(self.llm, self.config, self._cancel, abstention_reason)
        if self.config.grounded and mode != AskMode.DIRECT:
            grounding = Grounding(question, ctx.ledger, mentioned=ctx.mentions,
                                  is_word=getattr(self.searcher, "is_word", None),
                                  vectors=SentenceVectors(getattr(self.searcher,
                                                                  "embed_texts", None)))
            return HarnessPolicy(grounding, self.llm, self.config, self._cancel,
                                 self.answer_turn)
        return PlainPolicy(self.answer_turn)

    # ------------------------------------------------------------ generation
    def _turn(self, s: RunState, step: int, grammar: str | None, max_tokens: int,
              final_turn: bool = False, answer_max_tokens: int = 0, defer_final: bool = False
              ) -> Generator[Event, None, tuple[Completion | None, str, TurnEnd]]:
        """:func:`~kbagent.agent.run.generation.generate` plus the endings every caller
        treats alike: the :class:`TurnEnd` says go on, done (a backend failure or a
        cancel already ended the question), or why generation stopped early, worded
        for the user ("the context window is full", "time limit reached")."""
        try:
            completion, text, aborted = yield from generate(
                self.llm, self._cancel, s, step, grammar, max_tokens, final_turn,
                answer_max_tokens, defer_final)
        except ContextFull:
            return None, "", TurnEnd(reason="the context window is full")
        except BackendError as e:
            yield ErrorEvent(str(e), kind=ErrorKind.ERROR)
            yield from fallback_answer(s, Status.ERROR, f"the model failed: {e}")
            return None, "", DONE
        if aborted == "cancelled":
            yield from cancelled(s)
            return None, "", DONE
        if aborted == READY:
            return None, text, TurnEnd(reason=MODEL_READY)
        if aborted:
            return completion, text, TurnEnd(reason=f"{aborted} reached")
        return completion, text, GO_ON

    # ----------------------------------------------------------------- agent
    def _agent(self, s: RunState) -> Iterator[Event]:
        cfg = self.config
        s.messages = [Message("system", prompts.system_prompt(list(self.kbs), s.tools)),
                      Message("user", in_conversation(prompts.question_message(s.question),
                                                      s.context))]
        step = 0
        if cfg.search_first == SearchFirst.QUESTION and ToolName.KB_SEARCH in s.tools:
            step = 1
            out = yield from search_step(s, step, s.query, prompts.RAG_THOUGHT, cfg.rag_top_k)
            # the results join the question: no step written for the model to copy
            s.messages[-1] = Message("user", in_conversation(prompts.question_with_results(
                s.question, out.text, step, cfg.max_steps), s.context))
        while True:
            if self._cancel.is_set():
                yield from cancelled(s)
                return
            reason = limit_reason(s, cfg, step)
            if not reason and s.repeats >= MAX_REPEATS:
                reason = "the model repeated the same call"
            if not reason and s.followups:
                # a model the harness had to lead is not asked again: the harness
                # searches the other follow-ups itself, then the answer is written
                pending = pending_followups(s)
                if pending and s.followups < MAX_FOLLOWUPS:
                    step += 1
                    s.followups += 1
                    yield from followup_step(s, step, pending[0], cfg.rag_top_k, cfg.max_steps)
                    continue
                reason = "the follow-up searches are done"
            if reason:
                yield from self._final_turn(s, step + 1, reason)
                return
            step += 1
            started = s.clock.perf_counter()
            yield StepStarted(step, kind=StepKind.LLM)
            first_search = (cfg.search_first == SearchFirst.MODEL and step == 1
                            and ToolName.KB_SEARCH in s.tools)
            # a multi-hop question gets one search beyond the harness's before an answer
            follow_first = (only_harness_searched(s, self.config.search_first)
                            and bool(pending_followups(s)))
            allowed_tools = s.tools
            if first_search:
                allowed_tools = {ToolName.KB_SEARCH: s.tools[ToolName.KB_SEARCH]}
            elif follow_first:
                allowed_tools = {n: t for n, t in s.tools.items() if n in SEARCH_TOOLS}
            grammar = step_grammar(allowed_tools, allow_final=not (first_search or follow_first),
                                   kb_names=list(self.kbs))
            # never cut a tool call short: the limit covers the grammar's worst case
            max_tokens = max(cfg.max_tokens_per_step,
                             action_token_bound(allowed_tools, list(self.kbs)))
            # auto: a grounded answer is the grounded final turn's (generation.READY)
            completion, text, ended = yield from self._turn(
                s, step, grammar, max_tokens, answer_max_tokens=cfg.final_max_tokens,
                defer_final=s.policy.defers_final)
            if ended.done:
                return
            if ended.reason:  # MODEL_READY: the model chose to answer (no limit stopped it)
                yield from self._final_turn(s, step, ended.reason,
                                            rag=ended.reason == MODEL_READY)
                return
            assert completion is not None
            try:
                parsed = parse_step(text)
            except ProtocolError as e:
                s.protocol_failures += 1
                record_step(s, step, StepDone(text, observation=f"format error: {e}"),
                            completion, started)
                if s.protocol_failures >= 2:
                    yield ErrorEvent("the model does not follow the step format; falling back "
                                     "to a single search", kind=ErrorKind.PROTOCOL)
                    yield from self._rag(s, fallback=True)
                    return
                s.messages += [Message("assistant", text), Message("user", (
                    f"Format error: {e}. Reply with 'Thought:' then either 'Action:' and "
                    "'Action Input:' or 'Final Answer:'."))]
                continue
            if parsed.final is not None:
                record_step(s, step, StepDone(parsed.thought, tool_ms=0), completion, started)
                s.messages.append(Message("assistant", text))
                yield from finish(s, Status.ANSWERED)
                return
            yield from act(s, cfg, self._cancel, step, parsed, text, completion, started)
            if (not s.followups and s.injected < MAX_FOLLOWUPS
                    and parsed.action in SEARCH_TOOLS and s.steps[-1].action in SEARCH_TOOLS
                    and not s.steps[-1].cached and not limit_reason(s, cfg, step)):
                # the model searched on its own but not what the first hits point to:
                # the harness adds that search (no LLM call) before the model goes on
                pending = pending_followups(s)
                if pending:
                    step += 1
                    s.injected += 1
                    yield from followup_step(s, step, pending[0], cfg.rag_top_k, cfg.max_steps)

    # ---------------------------------------------------------- final turns
    def _final_turn(self, s: RunState, step: int, reason: str, *,
                    rag: bool = False) -> Iterator[Event]:
        """One final-answer turn over the gathered evidence, the policy's: the harness's
        grounded turn, the model-authored one, or the model over the numbered sources."""
        if reason != MODEL_READY:  # (the model chose to answer: no limit stopped it)
            s.stop_reason = s.stop_reason or reason
        ended = yield from s.policy.final(s, step, rag)
        if not ended:
            yield from finish(s, Status.ANSWERED if rag else Status.LIMIT)

    def answer_turn(self, s: RunState, step: int, rag: bool, message: str
                    ) -> Generator[Event, None, bool]:
        """The model writes the answer from ``message`` (sources and question). True
        when the run already ended (a failure or a cancel). A backend that sent nothing
        until the time limit cut its last call is not asked again: the answer is what
        was gathered, so a stalled server cannot hold the run past its limit."""
        if s.stalled:
            yield from fallback_answer(s, Status.LIMIT, s.stop_reason or "time limit reached")
            return True
        started = s.clock.perf_counter()
        yield StepStarted(step, kind=StepKind.ANSWER if rag else StepKind.FORCED_FINAL)
        s.messages = [Message("system", prompts.FINAL_SYSTEM),
                      Message("user", in_conversation(message, s.context))]
        completion, _, ended = yield from self._turn(s, step, None,
                                                     self.config.final_max_tokens, True)
        if ended.done:
            return True
        if completion is None:
            yield from fallback_answer(s, Status.LIMIT, ended.reason)
            return True
        record_step(s, step, StepDone(), completion, started)
        return False

    # ------------------------------------------------------------ rag/direct
    def _rag(self, s: RunState, fallback: bool = False) -> Iterator[Event]:
        """Single retrieval + answer (also the fallback when a model breaks the protocol)."""
        if not fallback:
            s.mode = AskMode.RAG
        step = len(s.steps)
        top_k = search_depth(self.config, s.authored)
        asked = (search_call(s.query, self.config.rag_top_k), search_call(s.query, top_k))
        if not any(c in s.calls for c in asked):  # a fallback after the first search skips it
            step += 1
            yield from search_step(s, step, s.query, prompts.RAG_THOUGHT, top_k)
        if self._cancel.is_set():
            yield from cancelled(s)
            return
        yield from self._final_turn(s, step + 1, "", rag=True)

    def _direct(self, s: RunState) -> Iterator[Event]:
        """Small talk: answer with no retrieval and no tools. A grounded run answers
        small talk and questions about kbagent itself from facts (kbagent/agent/run/about.py)
        rather than the model's guess."""
        started = s.clock.perf_counter()
        yield StepStarted(1, kind=StepKind.ANSWER)
        facts = SelfFacts(list(self.kbs), str(getattr(self.llm, "name", "unknown")),
                          bool(getattr(self.llm, "local", False)))
        reply = about_reply(s.question, facts) if self.config.grounded else None
        if reply is not None:
            record_step(s, 1, StepDone(), None, started)
            sent = s.processor.emit(reply, "notice")
            yield AnswerDelta(sent.text, None)
            yield Final(result_of(s, Status.ANSWERED, list(self.kbs)))
            return
        s.messages = [Message("system", prompts.DIRECT.format(kbs=", ".join(self.kbs) or
                                                              "none yet")),
                      Message("user", in_conversation(s.question, s.context))]
        s.processor.auto_cite = False
        completion, _, ended = yield from self._turn(s, 1, None, 160, final_turn=True)
        if ended.done:
            return
        if completion is None:
            yield from fallback_answer(s, Status.LIMIT, ended.reason)
            return
        record_step(s, 1, StepDone(), completion, started)
        yield from finish(s, Status.ANSWERED)


def run_to_result(agent: Agent, question: str) -> AgentResult:
    """Drain the event stream and return the final result (batch mode, tests)."""
    final = [ev.result for ev in agent.run(question) if isinstance(ev, Final)]
    assert final, "the agent loop always ends with a Final event"
    return final[-1]
