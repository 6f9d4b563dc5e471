"""What every tool shares: its output, its failure, the context it runs in, the
:class:`Tool` record the registry holds, and the small schema and formatting
helpers the knowledge tools (:mod:`~kbagent.agent.tools.toolset`) and the code
tools (:mod:`~kbagent.agent.tools.code`) both use."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from kbagent.agent.answer.citations import CitationLedger
from kbagent.agent.events import Source
from kbagent.agent.kinds import ToolName
from kbagent.errors import KbagentError
from kbagent.kb.access import ANONYMOUS, Principal
from kbagent.kb.search import HybridSearcher
from kbagent.kb.store_protocol import KbReader
from kbagent.kb.views import FileViews

OBSERVATION_CHARS = 2400  # cap on what one observation shows the model
MAX_TOP_K = 10


@dataclass
class ToolOutput:
    text: str  # for the model
    summary: str  # one line for people
    ok: bool = True
    citations: list[int] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)


@dataclass
class ToolContext:
    kbs: dict[str, KbReader]
    searcher: HybridSearcher
    ledger: CitationLedger
    # who is asking: set by the harness, never by a tool argument or a document
    principal: Principal = ANONYMOUS
    plan: list[str] = field(default_factory=list)
    max_chars: int = OBSERVATION_CHARS

    def mentions(self, word: str) -> bool:
        """Does a chunk of these KBs that the asker may read hold ``word``?"""
        return any(kb.mentions(word, self.principal) for kb in self.kbs.values())

    def views(self, kb: str) -> FileViews:
        return FileViews(self.kbs[kb], self.principal)

    def pick_kbs(self, args: dict[str, Any]) -> list[str]:
        names = [n for n in ([args["kb"]] if args.get("kb") else []) + list(args.get("kbs") or [])]
        if not names:
            return list(self.kbs)
        unknown = [n for n in names if n not in self.kbs]
        if unknown:
            raise ToolFailure(f"unknown KB {', '.join(unknown)}; available: "
                              f"{', '.join(self.kbs)} (see list_kbs)")
        return list(dict.fromkeys(names))

    def locate(self, kb: str, path: str, start: int, end: int) -> str:
        """Where the lines lie in the source: page, slide, sheet cells ('' if unknown)."""
        try:
            return self.kbs[kb].store.locate(path, start, end)
        except (KeyError, sqlite3.Error):
            return ""

    def resolve_lines(self, kb: str, path: str, start: int, end: int) -> str | None:
        try:
            res = self.views(kb).cat(path, start, end, max_lines=10_000)
        except KbagentError:
            return None
        return "\n".join(ln.text for ln in res.lines)


class ToolFailure(Exception):
    """A tool could not do what was asked; the message is for the model."""


def frozen_json(value: Any) -> Hashable:
    """A JSON value as a hashable key: objects by sorted keys, arrays in order, and a
    scalar by its type and ``repr`` (``1``, ``1.0``, ``true``, ``0.0`` and ``-0.0`` stay
    distinct keys, as they are distinct JSON). Two values have the same key exactly
    when ``json.dumps(..., sort_keys=True)`` writes them alike."""
    if isinstance(value, dict):
        return ("{}", tuple(sorted((str(k), frozen_json(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return ("[]", tuple(frozen_json(v) for v in value))
    return (type(value).__name__, repr(value))


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool: its name and arguments (a JSON object). Two calls with the
    same name and the same arguments (in any key order) are equal and hash alike:
    the run's cache of calls (``RunState.calls``) is keyed by them."""

    name: str
    args: dict[str, Any] = field(default_factory=dict, compare=False)
    key: Hashable = field(init=False, repr=False)  # the arguments, frozen

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", dict(self.args))
        object.__setattr__(self, "key", frozen_json(self.args))


@dataclass
class Tool:
    name: ToolName
    description: str
    parameters: dict[str, Any]
    run: Callable[[ToolContext, dict[str, Any]], ToolOutput]


def obj_schema(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or []}


KB_ARG = {"type": "string", "minLength": 1, "maxLength": 64}
QUERY_ARG = {"type": "string", "minLength": 1, "maxLength": 300}
TOP_K_ARG = {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K, "default": 5}


def where(ctx: ToolContext, kb: str, path: str) -> str:
    return f"{kb}:{path}" if len(ctx.kbs) > 1 else path



def cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > 0 else limit] + "\n… (output truncated)"
