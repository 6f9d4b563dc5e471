"""``kbagent verify``: re-check every citation of saved answers against the live KBs.

Answers come from a batch output file (one JSON answer per line), an ``ask --json``
file, a trace (its final event), or the history database. Each answer's cited
references are checked by :mod:`kbagent.kb.provenance`; the answer's state is
the worst of them. UI-neutral: the CLI renders the checks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbagent.errors import BadInputError, NotFoundError
from kbagent.jsonl import numbered_jsonl
from kbagent.kb.access import ANONYMOUS, Principal
from kbagent.kb.provenance import AnswerCheck, ReferenceChecker, RefState

if TYPE_CHECKING:
    from kbagent.settings import Settings

STALE = (RefState.CHANGED, RefState.GONE)  # what makes ``verify`` exit non-zero


@dataclass
class SavedAnswer:
    """One answer to check: ``label`` says where it came from (``file:line``, id)."""

    label: str
    data: dict[str, Any]  # AgentResult.to_dict() form


@dataclass
class Verified:
    answer: SavedAnswer
    check: AnswerCheck

    @property
    def state(self) -> RefState:
        return self.check.state

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.answer.label, **self.check.to_dict(),
                "answer": self.answer.data.get("answer", "")}


def answers_from_file(path: Path) -> list[SavedAnswer]:
    """The answers in a batch output / ``ask --json`` file or a trace."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise NotFoundError(f"no such file: {path}")
    text = path.read_text(encoding="utf-8", errors="replace")
    try:  # one (indented) JSON answer: ``ask --json > answer.json``
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and "question" in whole:
        return [SavedAnswer(str(path), whole)]
    rows = numbered_jsonl(path, "a JSON answer or trace record")
    out: list[SavedAnswer] = []
    if rows and isinstance(rows[0][1], dict) and rows[0][1].get("kind") == "header":
        for n, rec in rows:  # a trace: its final event holds the result
            ev = rec.get("event") if isinstance(rec, dict) else None
            if isinstance(ev, dict) and ev.get("type") == "final":
                out.append(SavedAnswer(f"{path}:{n}", ev))
        if not out:
            raise BadInputError(f"{path} is a trace without a final answer (interrupted?)")
        return out
    for n, rec in rows:
        if not isinstance(rec, dict) or "question" not in rec:
            raise BadInputError(f"{path}:{n}: not an answer (no 'question')")
        if rec.get("error"):
            continue  # a failed question has no citations to check
        label = f"{path}:{n}" + (f" ({rec['id']})" if rec.get("id") else "")
        out.append(SavedAnswer(label, rec))
    return out


def answers_from_history(home: Path, principal: Principal = ANONYMOUS,
                         limit: int = 1000) -> list[SavedAnswer]:
    """The principal's history entries, newest first."""
    from kbagent.history import History

    history = History(home, principal.key)
    return [SavedAnswer(f"history #{e.id}", history.get(e.id).result)
            for e in history.list(limit=limit)]


def verify_answers(settings: Settings, answers: list[SavedAnswer],
                   principal: Principal = ANONYMOUS) -> list[Verified]:
    checker = ReferenceChecker(settings, principal)
    try:
        return [Verified(a, checker.check_answer(a.data)) for a in answers]
    finally:
        checker.close()
