"""The model policy's plan stage for a question of two hops (issue 44): before the model
composes, the harness's own follow-up searches gather the second hop's evidence.

A question about a thing it describes rather than names ("the director of the film
that ...") or comparing two (:func:`~kbagent.agent.run.router.multi_hop`) is answered
from two documents, and its own search seldom finds both. The harness's multi-hop path
(:mod:`~kbagent.agent.harness.bridge`) searches what the first hits point to
(:func:`~kbagent.agent.run.search_memory.pending_followups`: the bridge name in the
first-hop document with the question's remaining words, or each compared thing no hit
names yet); the model policy makes the same searches, each a visible step, and shows
the model each follow-up's best chunk whatever its rank. Without them, on HotpotQA the
1.5B model writing read the second hop's document for few questions and held the gold
for 20 of 50 where the harness held it for 34 (BENCHMARKS.md, "Issue 44: declining as
the model's explicit choice").
"""

from __future__ import annotations

from collections.abc import Generator

from kbagent.agent.cancel import CancelToken
from kbagent.agent.events import Event
from kbagent.agent.run import prompts
from kbagent.agent.run.harness_steps import search_step
from kbagent.agent.run.router import multi_hop
from kbagent.agent.run.search_memory import pending_followups
from kbagent.agent.run.state import AgentConfig, RunState

MAX_HOPS = 2  # follow-up searches after the question's own


def gather(s: RunState, step: int, cfg: AgentConfig, cancel: CancelToken, top_k: int
           ) -> Generator[Event, None, tuple[int, list[int]]]:
    """The follow-up searches of a two-hop question, ``top_k`` hits each, from step
    ``step`` on, within the run's time limit and its cancel token, leaving under
    ``max_steps`` a step for the answer and one for the choice to decline
    (:mod:`~kbagent.agent.run.decline`): the next step number, and each follow-up's top
    hit."""
    keep: list[int] = []
    if multi_hop(s.question) is None:
        return step, keep
    for _ in range(MAX_HOPS):
        pending = pending_followups(s)
        if (not pending or cancel.is_set() or step + 1 >= cfg.max_steps
                or s.clock.perf_counter() >= s.deadline):
            break
        out = yield from search_step(s, step, pending[0],
                                     prompts.second_document_thought(pending[0]), top_k)
        step += 1
        keep += out.citations[:1]  # its top hit, though the question's search found it
    return step, keep
