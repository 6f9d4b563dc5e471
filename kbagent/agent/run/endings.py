"""How a run ends: the answer's last sentences and the ``Final`` event, after a
model answer (:func:`finish`), when no model answer could be written
(:func:`fallback_answer`: say why, show the best evidence) and when the user
cancelled (:func:`cancelled`: keep what was written, show what was gathered)."""

from __future__ import annotations

from collections.abc import Iterator

from kbagent.agent.events import AnswerDelta, ErrorEvent, Event, Final
from kbagent.agent.kinds import AskMode, ErrorKind, FinishReason, Status
from kbagent.agent.run.state import RunState, evidence_lines, result_of


def _final(s: RunState, status: Status) -> Final:
    return Final(result_of(s, status, list(s.ctx.kbs)))


def finish(s: RunState, status: Status) -> Iterator[Event]:
    """The model's answer is written: flush it (no half sentence when it was cut off);
    the answer policy's closing runs (the harness makes sure something checked is
    left), and an empty answer says so."""
    if s.last_finish in (FinishReason.LENGTH, FinishReason.REPETITION):
        s.processor.drop_unfinished()
    for sent in s.processor.finish():
        yield AnswerDelta(sent.text, sent.supported)
    yield from s.policy.closing(s)
    if not s.processor.answer:
        text = ("I could not find an answer in the knowledge base." if s.mode != AskMode.DIRECT
                else "Hello! Ask me anything about your documents.")
        s.processor.harness_text = True
        for sent in s.processor.feed(text) + s.processor.finish():
            yield AnswerDelta(sent.text, sent.supported)
    yield _final(s, status)


def fallback_answer(s: RunState, status: Status, reason: str) -> Iterator[Event]:
    """No model answer could be written: say so and show the best evidence."""
    s.stop_reason = s.stop_reason or reason
    evidence = evidence_lines(s)
    text = f"I could not write a full answer ({reason})."
    if evidence:
        text += " The most relevant passages found:\n" + evidence
    # a cut-off model answer keeps its whole sentences; the notice starts apart
    s.processor.drop_unfinished()
    if s.processor.sentences or s.processor.seen:
        text = "\n\n" + text
    s.processor.auto_cite = False
    s.processor.harness_text = True
    for sent in s.processor.feed(text) + s.processor.finish():
        yield AnswerDelta(sent.text, sent.supported)
    yield _final(s, status)


def cancelled(s: RunState) -> Iterator[Event]:
    """The user cancelled: keep the answer written so far, list the evidence."""
    s.stop_reason = "cancelled"
    yield ErrorEvent("cancelled by the user", kind=ErrorKind.CANCELLED)
    evidence = evidence_lines(s, limit=5)
    text = "Stopped before an answer was written."
    if evidence:
        text += " Evidence gathered so far:\n" + evidence
    s.processor.auto_cite = False
    sents = s.processor.finish() if s.processor.answer else []
    s.processor.harness_text = True
    sents += s.processor.feed(("\n\n" if s.processor.answer else "") + text)
    sents += s.processor.finish()
    for sent in sents:
        yield AnswerDelta(sent.text, sent.supported)
    yield _final(s, Status.CANCELLED)
