"""The model's part in the short answer (issue 22, :mod:`kbagent.agent.harness.short`).

``AgentConfig.short_answer`` says who states the fact in a few words:

* ``harness``: the best span of the answer sentence by the harness's ranking, no LLM call;
* ``pick``: the model picks one of the candidate spans of that one sentence, its output
  constrained by a GBNF grammar to exactly those spans (a few tokens; the harness's
  ranking decides when the backend takes no grammar or only one span is there);
* ``write``: the model writes the short answer from the best sentences of the sources;
  it is kept only when every fact it states is in them and its words come from them,
  else the harness's span is used;
* ``auto`` (default): ``harness`` with the bundled SmolLM2-135M, ``write`` with any
  other model (``--model``, ``--llm-url``). Measured on the 27 factoid sample questions
  (BENCHMARKS.md, "Answers that state the fact (issue 22): short answers"): the bundled
  model's pick put the fact first for 18, the harness's ranking for 23 (the 135M model
  picks a number of the sentence, not the one asked for), so it does not pick by
  default; ``pick`` keeps the choice for a model that picks better.

Each call is counted in the run's usage; none is a step (it has no action).
"""

from __future__ import annotations

import re

from kbagent.agent.answer.citations import content_tokens
from kbagent.agent.answer.evidence import missing_facts
from kbagent.agent.answer.focus import Focus
from kbagent.agent.cancel import CancelToken
from kbagent.agent.harness.short import MAX_WORDS, span_grammar
from kbagent.agent.kinds import ShortAnswerMode
from kbagent.agent.llm.base import LLM, Message, complete
from kbagent.agent.llm.llama import BUNDLED_FILE
from kbagent.agent.run.state import RunState
from kbagent.errors import BackendError

PICK_SYSTEM = "Copy the exact answer to the question from the sentence."
WRITE_SYSTEM = ("Answer the question in a few words (at most 8), copied from the sources. "
                "Write only the answer: no sentence, no explanation, no citation.")
MAX_CANDIDATES = 8
PICK_TOKENS = 32
WRITE_TOKENS = 24


def effective_mode(mode: ShortAnswerMode, llm: LLM) -> ShortAnswerMode:
    if mode is not ShortAnswerMode.AUTO:
        return mode
    bundled = str(getattr(llm, "name", "")) == BUNDLED_FILE
    return ShortAnswerMode.HARNESS if bundled else ShortAnswerMode.WRITE


class ShortPicker:
    """Asks the run's model for the short answer, as ``mode`` says."""

    def __init__(self, llm: LLM, mode: ShortAnswerMode, cancel: CancelToken) -> None:
        self.llm = llm
        self.mode = effective_mode(mode, llm)
        self.cancel = cancel

    def __call__(self, s: RunState, focus: Focus, sentence: str, candidates: list[str],
                 evidence: str) -> str | None:
        """The short answer the model states (None: use the harness's first candidate)."""
        try:
            if self.mode is ShortAnswerMode.PICK:
                return self._pick(s, focus, sentence, candidates)
            if self.mode is ShortAnswerMode.WRITE:
                return self._write(s, focus, evidence)
        except BackendError:
            return None  # the harness's span stands; the answer turn reports a failure
        return None

    def _pick(self, s: RunState, focus: Focus, sentence: str, candidates: list[str]
              ) -> str | None:
        options = list(dict.fromkeys(candidates))[:MAX_CANDIDATES]
        if len(options) < 2 or not self.llm.supports_grammar:
            return None
        c = complete(self.llm, [Message("system", PICK_SYSTEM),
                                Message("user", f"Sentence: {sentence}\n"
                                                f"Question: {focus.question}\nAnswer:")],
                     grammar=span_grammar(options), max_tokens=PICK_TOKENS,
                     cancel=self.cancel, deadline=s.deadline)
        s.count(c)
        text = c.text.strip()
        return text if text in options else None

    def _write(self, s: RunState, focus: Focus, evidence: str) -> str | None:
        c = complete(self.llm, [Message("system", WRITE_SYSTEM),
                                Message("user", f"Sources:\n{evidence}\n\n"
                                                f"Question: {focus.question}\nShort answer:")],
                     stop=["\n"], max_tokens=WRITE_TOKENS, cancel=self.cancel,
                     deadline=s.deadline)
        s.count(c)
        text = re.sub(r"\[\d+\]", "", c.text).strip().strip(" .\"'“”")
        if not text or len(text.split()) > MAX_WORDS:
            return None
        if missing_facts(text, evidence):
            return None  # a figure or a name the sources do not hold
        words = content_tokens(text)
        if words - content_tokens(evidence) - content_tokens(focus.question):
            return None  # words of its own: not copied from the sources
        return text


def picker(llm: LLM, mode: ShortAnswerMode, cancel: CancelToken) -> ShortPicker | None:
    """The final turn's short-answer picker for ``mode``; None when the harness states
    it (no model call)."""
    pick = ShortPicker(llm, mode, cancel)
    return None if pick.mode is ShortAnswerMode.HARNESS else pick
