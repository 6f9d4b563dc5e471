"""Choosing the answer policy (issue 44, setting ``answer_policy``): whether the model
writes knowledge answers (:mod:`~kbagent.agent.run.authored`) or the harness does, and
the route ``--mode auto`` takes under the model's policy."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from kbagent.agent.events import Event
from kbagent.agent.kinds import AnswerPolicy, AskMode
from kbagent.agent.llm.base import LLM
from kbagent.agent.run import prompts
from kbagent.agent.run.state import AgentConfig, AnswerTurn, NoOwnPath, RunState, final_sources
from kbagent.errors import BadInputError, KbagentError
from kbagent.models.gguf_info import declared_parameters, parse_size_label

# answer policy auto: the model writes from this size on. Measured (BENCHMARKS.md, "Issue
# 44, session 1", first ten sample questions): the 1.5B writing states the fact first for
# 10 (9 under the harness), the 0.5B writing for 6 (it refused two it had the evidence for)
MODEL_POLICY_MIN_PARAMS = 1_000_000_000
# the model policy's searches ask for this many times ``rag_top_k`` hits; the unit ranking
# shows the model the best six chunks of them (run/authored.py), one more than five hits
# could give. Measured (BENCHMARKS.md, "Issue 44: the plan stage in front of the model",
# bench/evidence_depth.py): the gold in the prompt for 350 of the 455 answerable
# development questions at 5 hits, 368 at 10, 365 at 20
DEPTH = 2
FINAL_SOURCE_CHARS, FINAL_SOURCES = 400, 8  # chars a source, sources: the plain final prompt


def declared_size(llm: LLM, llm_size: str = "") -> int | None:
    """The model's size in parameters: ``llm_size`` when set (a server's model), else
    what its GGUF declares (``general.size_label``, or its tensors counted); None when
    nothing declares it. Never read from a file name."""
    if llm_size:
        size = parse_size_label(llm_size)
        if size is None:
            raise BadInputError(f"llm_size {llm_size!r} is no model size (e.g. 1.5B, 7B, 135M)")
        return size
    path = getattr(llm, "path", None)
    return _declared(str(path)) if isinstance(path, Path) else None


@lru_cache(maxsize=16)
def _declared(path: str) -> int | None:
    try:
        return declared_parameters(Path(path))
    except (OSError, ValueError, KbagentError):  # unreadable: it declares nothing
        return None


def model_writes(cfg: AgentConfig, llm: LLM) -> bool:
    """Does the model write knowledge answers (answer policy ``model``)? ``auto``
    decides by the declared size (:data:`MODEL_POLICY_MIN_PARAMS`); unknown: the harness."""
    if cfg.answer_policy != AnswerPolicy.AUTO:
        return cfg.answer_policy == AnswerPolicy.MODEL
    size = declared_size(llm, cfg.llm_size)
    return size is not None and size >= MODEL_POLICY_MIN_PARAMS


def authored_route(routed: AskMode, authored: bool) -> AskMode:
    """``--mode auto`` under the model policy: a question the router gives the ReAct
    loop takes one retrieval instead, and the model plans from there, asking for more
    searches in its own words (``SEARCH:``). On 2 cores each ReAct step of the 1.5B
    model, its prompt the tools' descriptions, cost 20-120 s and ran questions into the
    time limit (BENCHMARKS.md, "Issue 44")."""
    return AskMode.RAG if authored and routed == AskMode.AGENT else routed


def search_depth(cfg: AgentConfig, authored: bool) -> int:
    """How many hits a search of the run asks for: ``rag_top_k``, times :data:`DEPTH`
    when the model writes (the harness's own searches are unchanged)."""
    return cfg.rag_top_k * (DEPTH if authored else 1)


@dataclass
class PlainPolicy(NoOwnPath):
    """No checks of the answer's facts (``grounded = false`` with a model that does not
    write): the model writes from the first hits and the newest finds
    (:class:`~kbagent.agent.run.state.Policy`)."""

    answer_turn: AnswerTurn
    repairs: None = None
    defers_final: bool = False

    def final(self, s: RunState, step: int, rag: bool) -> Generator[Event, None, bool]:
        sources = [(c.n, c.excerpt(FINAL_SOURCE_CHARS))
                   for c in final_sources(s, FINAL_SOURCES)]
        return (yield from self.answer_turn(
            s, step, rag, prompts.sources_message(s.question, sources, s.notes)))
