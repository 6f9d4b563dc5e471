"""A pool of sessions sharing one model, for the surfaces that ask many questions
(``kbagent batch``, ``kbagent eval qa``): one :class:`~kbagent.session.Session` per
(KBs, mode, tools) asked for, the model loaded once and each set of KBs opened
once. UI-neutral, like :mod:`kbagent.session`."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbagent.agent.events import Final
from kbagent.agent.kinds import AskMode, ToolSet
from kbagent.kb.access import ANONYMOUS, Principal
from kbagent.session import Session

if TYPE_CHECKING:
    from kbagent.agent.cancel import CancelToken
    from kbagent.agent.llm.base import LLM
    from kbagent.batch import BatchQuestion
    from kbagent.settings import Settings


@dataclass(frozen=True)
class RunLimits:
    """Per-question limits for every session of a pool (``None``: the settings')."""

    max_steps: int | None = None
    token_budget: int | None = None
    time_limit: float | None = None


class SessionPool:
    """Sessions for one caller, all sharing one LLM. ``mode``, ``tools`` and
    ``kb_names`` are the defaults a question may override; the principal is the
    pool's for every session (a question cannot change it)."""

    def __init__(self, settings: Settings, kb_names: list[str] | None, mode: str, tools: str,
                 *, limits: RunLimits | None = None, trace_dir: Path | None = None,
                 principal: Principal = ANONYMOUS) -> None:
        self.settings, self.kb_names, self.mode, self.tools = settings, kb_names, mode, tools
        self.principal = principal
        self.limits, self.trace_dir = limits or RunLimits(), trace_dir
        self._sessions: dict[tuple[tuple[str, ...], str, str], Session] = {}
        self._llm: LLM | None = None
        self._lock = threading.Lock()

    def session(self, names: list[str] | None, mode: str, tools: str) -> Session:
        """The pool's session for these KBs (``None``: all), mode and tools: made,
        its KBs opened and the model loaded on first use, then reused."""
        key = (tuple(names or ()), mode, tools)
        with self._lock:
            if key not in self._sessions:
                lim = self.limits
                session = Session(self.settings, names, mode=AskMode(mode), tools=ToolSet(tools),
                                  llm=self._llm, principal=self.principal,
                                  max_steps=lim.max_steps, token_budget=lim.token_budget,
                                  time_limit=lim.time_limit)
                session.open_kbs(required=mode != AskMode.DIRECT or bool(names))
                self._llm = session.load_llm()
                self._sessions[key] = session
            return self._sessions[key]

    def answer(self, item: BatchQuestion, token: CancelToken | None) -> dict[str, Any]:
        """Ask ``item`` (its own KBs, mode and tools, else the pool's) and return the
        ``ask --json`` record plus the mode asked for (auto routes) and every path the
        tools showed the model, so ``kbagent eval qa --answers`` can score it."""
        mode, tools = item.mode or self.mode, item.tools or self.tools
        session = self.session(item.kb or self.kb_names, mode, tools)
        trace = self.trace_dir / f"{_safe(item.id)}.jsonl" if self.trace_dir else None
        result = None
        for ev in session.ask(item.question, token=token, trace_to=trace):
            if isinstance(ev, Final):
                result = ev.result
        assert result is not None
        return {**result.to_dict(), "requested_mode": mode, "retrieved": sorted(
            {c.path for c in result.all_references.chunks()})}

    def close(self) -> None:
        """Close every session (the one that loaded the model frees it)."""
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.close()


def _safe(ident: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", ident)[:100] or "question"
