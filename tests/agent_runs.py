"""Helpers for tests that drive the agent loop and look at its events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kbagent.agent.answer.citations import Citation, clean_text
from kbagent.agent.events import Action, AgentResult, Event, Final
from kbagent.agent.llm.base import LLM
from kbagent.agent.run.loop import Agent, AgentConfig


def run(agent: Agent, question: str) -> tuple[list[Event], AgentResult]:
    """Every event of one run, and its result (the run must end with ``Final``)."""
    events = list(agent.run(question))
    assert isinstance(events[-1], Final)
    return events, events[-1].result


def searched(events: list[Any]) -> list[str]:
    """The queries of the run's kb_search calls, in order."""
    return [a.args["query"] for a in events if isinstance(a, Action) and a.tool == "kb_search"]


def ask_one_file(tmp_path: Path, name: str, text: str, question: str, llm: LLM | None = None,
                 **config: Any) -> Final:
    """``question`` through the real agent (auto mode, the harness's short answers, a
    scripted model that says nothing useful, or ``llm``; ``config`` overrides
    :class:`AgentConfig` fields) over a real KB of one file."""
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.settings import Settings
    from tests.scripted_llm import ScriptedLLM

    src = tmp_path / "docs"
    src.mkdir()
    (src / name).write_text(text, encoding="utf-8")
    settings = Settings.load(home=tmp_path / "home")
    Ingestor(settings, "docs", embedder=load_embedder()).run(src)
    agent = Agent(llm or ScriptedLLM(["It is in the sources."] * 10),
                  [KnowledgeBase(settings, "docs")],
                  AgentConfig(**{"mode": "auto", "tools": "full", "short_answer": "harness",
                                 **config}))
    return next(e for e in agent.run(question) if isinstance(e, Final))


def cite(text: str, path: str, n: int = 1) -> Citation:
    """A citation of ``text`` (its raw lines kept), as a search would return it."""
    return Citation(n, "kb", path, 1, text.count("\n") + 1, clean_text(text), None,
                    "kb_search", raw=text)


def silent_reason(pages: dict[str, str], question: str) -> str | None:
    """Why ``pages`` (path -> text, each a gathered chunk the caller may read) do not
    answer ``question`` (None: they may), as the final turn judges it: the best units,
    the real sentence embedder, a word "mentioned" when some page holds it."""
    from kbagent.agent.answer.citations import CitationLedger
    from kbagent.agent.answer.evidence import SentenceVectors
    from kbagent.agent.harness.grounding import Grounding
    from kbagent.kb.embedder import load_embedder

    ledger = CitationLedger()
    for path, text in pages.items():
        ledger.add(kb="docs", path=path, start_line=1, end_line=text.count("\n") + 1,
                   text=text)
    pool = " ".join(pages.values()).lower()
    g = Grounding(question, ledger, mentioned=lambda w: w.lower() in pool,
                  vectors=SentenceVectors(load_embedder().encode))
    return g.silent_reason(g.evidence())
