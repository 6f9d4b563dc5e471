"""The model-authored policy's explicit choice to decline (issue 44): when the harness's
calibrated test says the evidence may not answer the question, the model is told why and
must choose, in one constrained word, whether to answer or to say that the knowledge
base does not say.

The test is the small-model policy's
(:func:`~kbagent.agent.harness.grounding.abstention_reason`, an :class:`EvidenceTest`
passed in by the loop: this module never imports the harness), the one it abstains by
(a thing asked about that no readable chunk mentions, a year nothing gathered holds, or
no unit of the best that covers what is asked). Under
the harness it decides; here it only informs: the model reads the sources and the reason
and replies ``ANSWER`` or ``NOT_IN_KB`` (a GBNF grammar allows nothing else). ``ANSWER``
goes on to the usual compose and check; ``NOT_IN_KB`` is the answer "The knowledge base
does not say." Told the same thing inside the compose prompt, as a note among the
sources, the 1.5B model wrote an answer anyway on most unanswerable questions
(BENCHMARKS.md, "Issue 44: names the knowledge base never mentions"): a reply that must
begin with the choice cannot read past it.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Protocol

from kbagent.agent.answer.evidence import SentenceVectors
from kbagent.agent.cancel import CancelToken
from kbagent.agent.events import Event, StepStarted, ThoughtDelta
from kbagent.agent.kinds import StepKind
from kbagent.agent.llm.base import LLM, Message
from kbagent.agent.run.generation import generate
from kbagent.agent.run.router import multi_hop
from kbagent.agent.run.state import RunState, StepDone, record_step

ANSWER, DECLINE = "ANSWER", "NOT_IN_KB"
GRAMMAR = f'root ::= "{ANSWER}" | "{DECLINE}"'
CHOICE_TOKENS = 8  # room for either word (a backend without grammars may add a little)
ASKED = "The sources may not answer this:"  # how the choice's step begins its thought


class EvidenceTest(Protocol):
    """Why the evidence ``s`` gathered may not answer its question (None: it may), by the
    harness's calibrated test; ``one_source``: one chunk must hold every name asked."""

    def __call__(self, s: RunState, vectors: SentenceVectors, one_source: bool
                 ) -> str | None: ...


def doubt(s: RunState, test: EvidenceTest, vectors: SentenceVectors, searched: int
          ) -> str | None:
    """Why the gathered evidence may not answer the question, worded for the model, or
    None when the harness's test finds it may (or must not judge yet).

    A question about a thing it describes rather than names ("the woman who portrayed
    Corliss Archer in ...") or comparing two (:func:`~kbagent.agent.run.router.multi_hop`)
    is answered from two documents, and one retrieval seldom finds both: the test waits
    for a second search (``searched``: the harness's follow-up, :mod:`~kbagent.agent.run.gather`,
    or the model's own), then judges each hop's documents
    as the harness's multi-hop path does (no one chunk need hold every name). Judged on
    the first retrieval, the 1.5B declined 8 of the first 50 HotpotQA questions, all
    answerable ("nothing found is about 1988": the year is the second hop's)."""
    hop = multi_hop(s.question) is not None
    if hop and not searched:
        return None
    reason = test(s, vectors, not hop)
    if reason is None:
        return None
    if reason.startswith("it "):  # "it never mentions “X”": the knowledge base does not
        return f"the knowledge base {reason[3:]}"
    return reason or "no passage found covers what the question asks"


def prompt(evidence: str, reason: str) -> str:
    """The user message that asks for the choice: the sources and question as the
    compose prompt shows them (so the backend's cached prefix serves both), then why."""
    return (f"{evidence}\n\nBefore you answer: a check of the knowledge base found that "
            f"{reason}. Do the sources above state the answer to the question? Reply with "
            f"one word: {ANSWER} if they state it, or {DECLINE} if they do not.")


def choose(llm: LLM, cancel: CancelToken, s: RunState, step: int, system: str,
           evidence: str, reason: str) -> Generator[Event, None, bool | None]:
    """Ask the model to choose (one step, its reply streamed as the step's thought):
    whether it declined; None when the run was cancelled or ran out of time."""
    started = s.clock.perf_counter()
    yield StepStarted(step, kind=StepKind.ANSWER)
    said = f"{ASKED} {reason}. Answer, or say the KB does not say? "
    yield ThoughtDelta(step, said)
    s.messages = [Message("system", system), Message("user", prompt(evidence, reason))]
    completion, text, _ = yield from generate(llm, cancel, s, step, GRAMMAR, CHOICE_TOKENS,
                                              final_turn=True, as_thought=True)
    if completion is None:
        return None
    declined = DECLINE in text.upper().replace(" ", "_")
    record_step(s, step, StepDone(thought=said + text.strip()), completion, started)
    return declined
