"""The model's judgment of which unit states the answer (issue 22, setting ``answer_judge``).

The harness ranks a question's units by words, the kind of answer and the sentence
embedder (:func:`kbagent.agent.answer.evidence.score_units`). A model reads a unit with
the question: for each of the ``JUDGE_UNITS`` best units it is asked, in one prompt each,
whether the passage states the answer, and its next-token probabilities of "yes" and
"no" are read without generating (:meth:`LLM.option_logprobs`). The units' yes-minus-no
log-odds, normalised over the five (a log-softmax), are added to their scores with
``JUDGE_WEIGHT``; the five are re-ordered, the rest keep their places after them.

Off by default (setting ``answer_judge = true`` turns it on). Measured (BENCHMARKS.md,
"Issue 22, session 15"): on the development sets' captured rankings the gold unit came
first for 105 of the 152 questions whose gold is among the five best units by the
harness alone, and for 112 with the Qwen2.5-Coder-0.5B evaluation model judging (111
with the bundled SmolLM2-135M); but replayed end to end, the fact led the answer no more
often (the short answer is chosen from the spans of the first units, and the small
models' judgment moved as many right answers away as it brought). It stays for a bigger
model (``--model``, ``--llm-url``), with ``bench/replay_harness.py --judge GGUF`` to
measure it on one's own documents.

The judgment only re-orders what the harness found: which units are evidence, and
whether the knowledge base answers at all (abstention), are decided before it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from kbagent.agent.answer.evidence import Scored
from kbagent.agent.cancel import CancelToken
from kbagent.agent.harness.final_turn import Rejudge
from kbagent.agent.llm.base import LLM, Completion, Message
from kbagent.agent.run.state import RunState
from kbagent.errors import BackendError

JUDGE_UNITS = 5  # the best units the model reads
JUDGE_WEIGHT = 0.5  # per unit of log-probability (of the five), in harness score units
PASSAGE_CHARS = 400  # of a unit's text; its heading trail, 80
SYSTEM = "You judge whether a passage answers a question."
YES, NO = ("yes", "Yes"), ("no", "No")


def prompt(question: str, context: str, text: str) -> list[Message]:
    passage = " ".join(text.split())[:PASSAGE_CHARS]
    where = " ".join(context.split())[:80]
    head = f"Passage ({where}): " if where else "Passage: "
    return [Message("system", SYSTEM),
            Message("user", f"{head}{passage}\n\nQuestion: {question}\n\n"
                            "Does the passage state the answer to the question? "
                            "Reply yes or no.")]


def log_odds(llm: LLM, question: str, context: str, text: str, *,
             cancel: CancelToken | None = None, deadline: float | None = None
             ) -> float | None:
    """The model's log-odds that the passage states the answer (None: it cannot tell)."""
    options = [*YES, *NO]
    lp = llm.option_logprobs(prompt(question, context, text), options, cancel=cancel,
                             deadline=deadline)
    if lp is None or len(lp) != len(options) or not all(math.isfinite(x) for x in lp):
        return None
    yes = _logsumexp(lp[:len(YES)])
    no = _logsumexp(lp[len(YES):])
    return yes - no


def _logsumexp(xs: list[float]) -> float:
    top = max(xs)
    return top + math.log(sum(math.exp(x - top) for x in xs))


def judge(llm: LLM, question: str, evidence: list[Scored], *,
          cancel: CancelToken | None = None, deadline: float | None = None,
          counted: Callable[[Completion], None] | None = None) -> tuple[list[Scored], int]:
    """``evidence`` with its first ``JUDGE_UNITS`` re-ordered by score plus the model's
    judgment, and how many units the model read. Unchanged when fewer than two units are
    there or the model cannot tell for any of them (a backend without logits, an
    error, ``cancel`` or the run's ``deadline``): the harness's order stands.
    ``counted`` is given each reading's usage where the backend reports one."""
    head = evidence[:JUDGE_UNITS]
    if len(head) < 2:
        return evidence, 0
    odds: list[float] = []
    try:
        for e in head:
            x = log_odds(llm, question, e.unit.context, e.unit.text, cancel=cancel,
                         deadline=deadline)
            usage = getattr(llm, "judgment_usage", None)
            if counted is not None and isinstance(usage, Completion):
                counted(usage)
            if x is None:
                return evidence, len(odds)
            odds.append(x)
    except BackendError:
        return evidence, len(odds)
    norm = _logsumexp(odds)
    judged = [replace(e, score=e.score + JUDGE_WEIGHT * (x - norm))
              for e, x in zip(head, odds, strict=True)]
    judged.sort(key=lambda e: -e.score)
    return judged + evidence[JUDGE_UNITS:], len(head)


def rejudger(llm: LLM, cancel: CancelToken, on: bool) -> Rejudge | None:
    """The final turn's hook (``grounded_final(rejudge=...)``) when the setting is
    ``on``: a run's best units re-ordered by the model's judgment, each reading counted
    in the run's usage."""
    def rejudge(s: RunState, evidence: list[Scored]) -> list[Scored]:
        judged, _ = judge(llm, s.question, evidence, cancel=cancel, deadline=s.deadline,
                          counted=s.count)
        return judged

    return rejudge if on else None
