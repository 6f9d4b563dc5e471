"""kbagent as an Agent Client Protocol agent (``agent-client-protocol``; Zed, JetBrains
and toad speak it), over stdio.

Each prompt is a question to the KBs. The agent's steps arrive as tool calls (a
``tool_call`` when a tool starts, a ``tool_call_update`` with its one-line summary and
the file locations it found), the answer as message chunks with its ``[n]`` badges,
followed by the references they resolve to (``[n] path:start-end``). A session keeps
its last question and answer, so the next prompt is a follow-up. ``session/cancel``
stops the run through the session's cancel token. The caller is the principal the
agent was started as (``--as`` / ``--groups``, else anonymous).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_tool_call,
)
from acp.schema import AgentCapabilities, Implementation, ToolCallLocation, ToolKind

from kbagent import __version__
from kbagent.agent.cancel import CancelToken
from kbagent.agent.kinds import ToolName
from kbagent.errors import KbagentError
from kbagent.server.models import AskResult
from kbagent.server.service import KbService

log = logging.getLogger("kbagent.server")

KINDS: dict[str, ToolKind] = {
    ToolName.KB_SEARCH: "search", ToolName.KB_SEMANTIC_SEARCH: "search",
    ToolName.KB_GREP: "search", ToolName.KB_GLOB: "search", ToolName.KB_LS: "read",
    ToolName.KB_CAT: "read", ToolName.LIST_KBS: "read", ToolName.CODE_DEFINITION: "search",
    ToolName.CODE_REFERENCES: "search", ToolName.CODE_CALLERS: "search",
    ToolName.CODE_OUTLINE: "read", ToolName.CALCULATE: "think", ToolName.PLAN: "think"}


@dataclass
class AcpSession:
    token: CancelToken | None = None
    previous: tuple[str, str] | None = None


class KbAcpAgent(Agent):
    """The ACP side of a :class:`~kbagent.server.service.KbService`."""

    def __init__(self, service: KbService) -> None:
        self.service = service
        self.sessions: dict[str, AcpSession] = {}
        self._conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="kbagent", title="kbagent", version=__version__))

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        session_id = uuid.uuid4().hex
        self.sessions[session_id] = AcpSession()
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        state = self.sessions.get(session_id)
        if state is not None and state.token is not None:
            state.token.cancel()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        state = self.sessions.get(session_id)
        if state is None:
            raise RequestError.invalid_params({"session_id": f"unknown session {session_id!r}"})
        question = " ".join(str(getattr(b, "text", "") or "") for b in prompt).strip()
        if not question:
            raise RequestError.invalid_params({"prompt": "the prompt has no text"})
        token = state.token = CancelToken()
        loop = asyncio.get_running_loop()
        relay = StepRelay(self.service)

        def on_event(ev: Any) -> None:
            for update in relay.updates(ev):
                if token.cancelled:
                    return
                asyncio.run_coroutine_threadsafe(
                    self._conn.session_update(session_id=session_id, update=update), loop
                ).result()

        def work() -> AskResult:
            return self.service.ask(self.service.principal, question, token=token,
                                    on_event=on_event, previous=state.previous)

        try:
            result = await asyncio.to_thread(work)
        except KbagentError as e:
            raise RequestError.invalid_params({"prompt": str(e)}) from None
        except asyncio.CancelledError:
            token.cancel()
            raise
        if token.cancelled or result.status == "cancelled":
            return PromptResponse(stop_reason="cancelled")
        tail = "" if relay.answered else result.answer
        if result.references:
            tail += "\n\nReferences\n" + "\n".join(f"[{r.n}] {r.kb}:{r.where}"
                                                   for r in result.references)
        if tail:
            await self._conn.session_update(session_id=session_id,
                                            update=update_agent_message_text(tail))
        state.previous = (question, result.answer)
        return PromptResponse(stop_reason="end_turn")


class StepRelay:
    """Agent events -> ACP session updates: steps as tool calls, the answer as text."""

    def __init__(self, service: KbService) -> None:
        self.turn = uuid.uuid4().hex[:8]  # tool-call ids stay unique across prompts
        self.roots = {kb.name: Path(kb.manifest.get("source", "")) for kb in service.session.kbs}
        self.answered = False

    def updates(self, ev: Any) -> list[Any]:
        from kbagent.agent.events import Action, AnswerDelta, Observation

        if isinstance(ev, Action):
            title = f"{ev.tool} {_args(ev.args)}".strip()
            return [start_tool_call(f"{self.turn}-{ev.step}", title,
                                    kind=KINDS.get(ev.tool, "other"), status="in_progress",
                                    raw_input=ev.args)]
        if isinstance(ev, Observation):
            return [update_tool_call(
                f"{self.turn}-{ev.step}", status="completed" if ev.ok else "failed",
                content=[tool_content(text_block(ev.summary))],
                locations=self._locations(ev.sources))]
        if isinstance(ev, AnswerDelta) and ev.text:
            self.answered = True
            return [update_agent_message_text(ev.text)]
        return []

    def _locations(self, sources: list[Any]) -> list[ToolCallLocation]:
        root = next(iter(self.roots.values()), Path()) if len(self.roots) == 1 else None
        out = []
        for s in sources[:20]:
            path = str(root / s.path) if root is not None and str(root) else s.path
            out.append(ToolCallLocation(path=path, line=s.start_line))
        return out


def _args(args: dict[str, Any]) -> str:
    for key in ("query", "pattern", "path", "symbol", "expression"):
        if key in args:
            return repr(str(args[key])[:120])
    return ""


async def serve_acp(service: KbService) -> None:
    # acp's Agent is a Protocol that agents subclass: the methods kbagent does not serve
    # keep its stub bodies (they answer None), which mypy counts as abstract
    await run_agent(KbAcpAgent(service))  # type: ignore[abstract]
