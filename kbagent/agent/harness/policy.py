"""The small-model policy as the loop sees it (the seam,
:class:`~kbagent.agent.run.state.Policy`): ``answer_policy = harness``, or ``auto`` with a
model too small to write, with grounded answers on. The loop builds it; nothing else
outside this room imports the room."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass

from kbagent.agent.cancel import CancelToken
from kbagent.agent.events import Event
from kbagent.agent.harness.bridge import hop_run
from kbagent.agent.harness.final_turn import decomposable, ensure_answer, grounded_final
from kbagent.agent.harness.grounding import Grounding
from kbagent.agent.harness.judge import rejudger
from kbagent.agent.harness.short_turn import picker
from kbagent.agent.kinds import AskMode, Status
from kbagent.agent.llm.base import LLM
from kbagent.agent.run.endings import finish
from kbagent.agent.run.router import HopKind, multi_hop
from kbagent.agent.run.state import AgentConfig, AnswerTurn, RunState


@dataclass
class HarnessPolicy:
    """The harness writes the answer's lead and checks and repairs what the model adds
    (``repairs``: the run's grounding); a question of parts, arithmetic or two hops takes
    the harness's own path."""

    repairs: Grounding
    llm: LLM
    cfg: AgentConfig
    cancel: CancelToken
    answer_turn: AnswerTurn

    @property
    def defers_final(self) -> bool:
        """In ``--mode auto`` a grounded answer is the grounded final turn's."""
        return self.cfg.mode == AskMode.AUTO

    def own_run(self, s: RunState, rag: Callable[[RunState], Iterator[Event]]
                ) -> Iterator[Event] | None:
        if decomposable(s.question):
            # comparisons, multi-part and arithmetic questions: the harness takes them
            # apart (a search per part or operand, the calculation) and answers part by
            # part; the model's ReAct loop would only repeat those searches (BENCHMARKS)
            return rag(s)
        if self.cfg.mode == AskMode.AUTO and (kind := multi_hop(s.question)):
            # bridge and comparison questions: the harness's own follow-up searches, each
            # a visible step, then the second hop's fact (harness/bridge.py); no ReAct step
            return self._hops(s, kind)
        return None

    def _hops(self, s: RunState, kind: HopKind) -> Iterator[Event]:
        self.repairs.one_source = False
        ended = yield from hop_run(s, self.cfg, self.cancel, kind, self.answer_turn, self.llm)
        if not ended:
            yield from finish(s, Status.ANSWERED)

    def final(self, s: RunState, step: int, rag: bool) -> Generator[Event, None, bool]:
        return (yield from grounded_final(
            s, step, rag, top_k=self.cfg.rag_top_k, answer_turn=self.answer_turn,
            pick=picker(self.llm, self.cfg.short_answer, self.cancel),
            rejudge=rejudger(self.llm, self.cancel, self.cfg.answer_judge)))

    def closing(self, s: RunState) -> Iterator[Event]:
        return ensure_answer(s)
