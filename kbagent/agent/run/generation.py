"""One LLM call streamed into events: Thought and Answer deltas as they come, the
answer checked sentence by sentence, stopped on a cancel, the time limit, an
answer that repeats itself or one that runs past the answer's token budget."""

from __future__ import annotations

from collections.abc import Generator

from kbagent.agent.cancel import CancelToken
from kbagent.agent.events import AnswerDelta, Event, ThoughtDelta
from kbagent.agent.kinds import FinishReason
from kbagent.agent.llm.base import LLM, Completion, ContextFull, ContextTooSmall
from kbagent.agent.run.react import ANSWER_STOP, STOP, StepStreamer
from kbagent.agent.run.state import RunState

READY = "ready"  # why generate stopped: the model began its Final Answer (``defer_final``)
# ... and how the loop says it: the grounded final turn writes the answer (the harness's
# fact first, then the model over the evidence)
MODEL_READY = "the model is ready to answer"


def generate(llm: LLM, cancel: CancelToken, s: RunState, step: int, grammar: str | None,
             max_tokens: int, final_turn: bool = False, answer_max_tokens: int = 0,
             defer_final: bool = False, as_thought: bool = False
             ) -> Generator[Event, None, tuple[Completion | None, str, str]]:
    """Stream one LLM call; yield Thought/Answer deltas. Returns
    (completion or None if stopped early, text, why it stopped early).

    ``answer_max_tokens`` bounds a ``Final Answer`` written inside a step: the
    step's ``max_tokens`` must cover the grammar's longest tool call (thousands of
    tokens), which a model that keeps talking after ``Final Answer:`` would
    otherwise spend on one answer (SmolLM2 once wrote 70 sentences in 187 s, every
    one removed by the fact check). Past the budget the answer is cut and kept as
    finished, like one that repeats itself.

    ``defer_final``: a step whose model begins ``Final Answer:`` stops there (nothing of
    the answer is streamed; returns ``READY``): in a grounded run the answer is written
    by the grounded final turn, which leads with the fact the harness found, then asks
    the model over the best evidence.

    ``as_thought``: the whole reply streams as the step's thought and nothing reaches the
    answer (a draft the model-authored policy checks before it is shown)."""
    streamer = StepStreamer(answer_only=final_turn)
    # a final answer may run past the time limit by a grace period, at most the limit
    # itself; a backend blocked on a read gives up at this deadline (agent/llm/base.py)
    hard_deadline = s.deadline + (final_grace(s) if final_turn else 0.0)
    gen = llm.stream(s.messages, grammar=grammar if llm.supports_grammar else None,
                     stop=ANSWER_STOP if final_turn else STOP, max_tokens=max_tokens,
                     cancel=cancel, deadline=hard_deadline)
    completion: Completion | None = None
    aborted = ""
    llm_s = 0.0  # time spent inside the backend only: the loop's own work is separate
    answer_pieces = 0  # streamed pieces (a token each from llama.cpp) since the answer began
    cut = ""  # why a finished answer was cut: it repeats itself, or it is too long
    try:
        while True:
            if cancel.is_set():
                aborted = "cancelled"
                break
            if s.clock.perf_counter() > hard_deadline:
                aborted = "time limit"
                break
            t0 = s.clock.perf_counter()
            try:
                piece = next(gen)
            except StopIteration as stop:
                completion = stop.value
                break
            except ContextFull as e:
                if s.usage.llm_calls or e.needed is None or e.context is None:
                    raise  # a run that filled its context ends as a limit
                raise too_small(llm, e) from e
            finally:
                llm_s += s.clock.perf_counter() - t0
            thought, answer = streamer.feed(piece)
            if as_thought:
                if piece:
                    yield ThoughtDelta(step, piece)
                continue
            if thought:
                yield ThoughtDelta(step, thought)
            if answer and defer_final and not final_turn:
                aborted = READY
                break
            if answer or answer_pieces:
                answer_pieces += 1
            if answer:
                for sent in s.processor.feed(answer):
                    yield AnswerDelta(sent.text, sent.supported)
                if (s.processor.drop_repeat() or s.processor.cut_restart()
                        or s.processor.trim_repetition()):
                    cut = FinishReason.REPETITION
                    break
            if answer_max_tokens and answer_pieces >= answer_max_tokens:
                cut = FinishReason.LENGTH
                break
        if cancel.cancelled and not cut:
            aborted, completion = "cancelled", None  # a backend that stopped on the token
        elif (completion is not None and completion.finish_reason == FinishReason.ABORTED
              and s.clock.perf_counter() >= hard_deadline):
            # a backend that gave up at the deadline (a read blocked on a stalled server):
            # what it cost is counted, the step ends as a time limit
            s.count(completion)
            if not streamer.text.strip():
                s.stalled = True  # nothing came: the harness will not wait on it again
            aborted, completion = "time limit", None
    finally:
        if completion is None:
            t0 = s.clock.perf_counter()
            gen.close()
            llm_s += s.clock.perf_counter() - t0
        s.usage.llm_ms += llm_s * 1000
    if completion is None:
        partial = getattr(llm, "last_usage", None)  # what the stopped call cost
        if not cut:
            if partial is not None:
                s.count(partial)
            return None, streamer.text, aborted
        # a looping or overlong answer is cut, then treated as finished
        completion = partial or Completion(streamer.text, 0, 0, 0, cut, 0)
        completion.finish_reason = cut
    s.count(completion)
    completion.ms = llm_s * 1000
    return completion, streamer.text, aborted


def too_small(llm: LLM, e: ContextFull) -> ContextTooSmall:
    """The refusal of a model whose window cannot hold a run's first prompt, with the
    tokens that prompt needs and what to change."""
    assert e.needed is not None and e.context is not None
    trained = getattr(llm, "trained_context", None)
    grow = (f"raise n_ctx (this model was trained on {trained:,})"
            if trained and e.context and trained > e.context else "raise n_ctx")
    return ContextTooSmall(
        f"model {llm.name}: its context of {e.context:,} tokens is too small; this "
        f"question's first prompt needs {e.needed:,} ({grow}, or choose a model with a "
        "longer context)")


FINAL_GRACE_S = 60.0


def final_grace(s: RunState) -> float:
    """How long past the time limit a final answer may still stream: a minute, or
    the limit itself when that is shorter (``--time-limit 5`` ends near 10 s at worst)."""
    return min(FINAL_GRACE_S, max(0.0, s.deadline - s.started))
