"""kbagent as an Agent Client Protocol agent (``agent-client-protocol``; Zed, JetBrains
and toad speak it), over stdio.

Each prompt is a question to the KBs. The agent's steps arrive as tool calls (a
``tool_call`` when a tool starts, a ``tool_call_update`` with its one-line summary and
the file locations it found), the answer as message chunks with its ``[n]`` badges,
followed by the references they resolve to (``[n] path:start-end``). A session keeps
its last question and answer, so the next prompt is a follow-up. ``session/cancel``
stops the run through the session's cancel token. The caller is the principal the
agent was started as (``--as`` / ``--groups``, else anonymous).

Places in a PDF, a slide deck, a workbook, a notebook or any other extracted
document are given in the source's own terms, as on every other surface
(``kb/locations.py``): a reference reads ``[n] KB:path p.2 l.3-9 (lines 40-46)``, and
a tool-call location carries the file's path with no ``line`` (a line of extracted
text is no line an editor can open), the place in ``_meta.kbagent/location`` and in the
tool call's text. A plain-text file keeps its true ``line``.

A line on stdin that is not a JSON-RPC message object (bad JSON, ``[]``, ``5``,
``"x"``, ``null``...) gets a JSON-RPC error with id null and the agent reads on
(:class:`CheckedTransport`).
"""

from __future__ import annotations

import asyncio
import json
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
from acp.stdio import stdio_streams
from acp.task import MessageSender, TaskSupervisor

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
            tail += "\n\nReferences\n" + "\n".join(reference_line(r)
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
        self.kbs = list(service.session.kbs)
        self.roots = {kb.name: Path(kb.manifest.get("source", "")) for kb in self.kbs}
        self.answered = False

    def updates(self, ev: Any) -> list[Any]:
        from kbagent.agent.events import Action, AnswerDelta, Observation

        if isinstance(ev, Action):
            title = f"{ev.tool} {_args(ev.args)}".strip()
            return [start_tool_call(f"{self.turn}-{ev.step}", title,
                                    kind=KINDS.get(ev.tool, "other"), status="in_progress",
                                    raw_input=ev.args)]
        if isinstance(ev, Observation):
            locations = self._locations(ev.sources)
            places = [f"{loc.path} {loc.field_meta[PLACE]}" for loc in locations
                      if loc.field_meta]
            text = "\n".join([ev.summary, *places])
            return [update_tool_call(
                f"{self.turn}-{ev.step}", status="completed" if ev.ok else "failed",
                content=[tool_content(text_block(text))], locations=locations)]
        if isinstance(ev, AnswerDelta) and ev.text:
            self.answered = True
            return [update_agent_message_text(ev.text)]
        return []

    def _locations(self, sources: list[Any]) -> list[ToolCallLocation]:
        """The files an observation found. A line of a PDF, a deck, a workbook... is a
        line of its extracted text, which no editor can open: such a location has no
        ``line``, and its page, slide or cells go in ``_meta`` (and the tool call's text)."""
        root = next(iter(self.roots.values()), Path()) if len(self.roots) == 1 else None
        out = []
        for s in sources[:20]:
            path = str(root / s.path) if root is not None and str(root) else s.path
            if not extracted(s.path):
                out.append(ToolCallLocation(path=path, line=s.start_line))
                continue
            place = self._place(s)
            out.append(ToolCallLocation(path=path, field_meta={PLACE: place} if place else None))
        return out

    def _place(self, source: Any) -> str:
        """The page, slide or cells of a source's lines ('' when unknown)."""
        if source.start_line is None:
            return ""
        end = source.end_line if source.end_line is not None else source.start_line
        for kb in self.kbs:
            try:
                place = str(kb.store.locate(source.path, source.start_line, end))
            except Exception:  # a label is a courtesy: never fail a step for it
                log.debug("no location for %s", source, exc_info=True)
                continue
            if place:
                return place
        return ""


PLACE = "kbagent/location"  # the _meta key of a location's page, slide or cells


def extracted(path: str) -> bool:
    """Whether a document's stored lines are extracted text (PDF, Office, EPUB, notebook,
    CSV...) rather than the file's own lines."""
    from kbagent.kb.formats import RICH_FORMATS

    return Path(path).suffix.lower() in RICH_FORMATS


def reference_line(r: Any) -> str:
    """``[n] KB:path:start-end``, or ``[n] KB:path p.2 l.3-9 (40-46)`` where the source
    has pages, slides or cells (the CLI's form: the place first, extracted lines after)."""
    if r.location:
        return f"[{r.n}] {r.kb}:{r.path} {r.location} ({r.start_line}-{r.end_line})"
    if extracted(r.path):
        return f"[{r.n}] {r.kb}:{r.path} ({r.start_line}-{r.end_line})"
    return f"[{r.n}] {r.kb}:{r.where}"


def _args(args: dict[str, Any]) -> str:
    for key in ("query", "pattern", "path", "symbol", "expression"):
        if key in args:
            return repr(str(args[key])[:120])
    return ""


class CheckedTransport:
    """Newline-delimited JSON-RPC over stdio, as the SDK's own stdio transport, with one
    difference: a line that is not a JSON-RPC message object gets a JSON-RPC error
    (-32700 for bad JSON, -32600 otherwise; id null unless the message had a usable id)
    and the agent reads on. The SDK stops serving at a line of ``[]``, ``5`` or ``"x"``,
    takes ``null`` for the end of input and drops bad JSON without an answer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._tasks = TaskSupervisor(source="kbagent.acp")
        self._sender = MessageSender(writer, self._tasks)

    async def send(self, message: dict[str, Any]) -> None:
        await self._sender.send(message)

    async def close(self) -> None:
        await self._sender.close()
        await self._tasks.shutdown()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = (await self._line()).strip()
            if not line:
                if self._reader.at_eof():
                    return None
                continue
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                await self._refuse(None, -32700, "Parse error: the line is not valid JSON")
                continue
            problem = malformed(message)
            if problem is None:
                return dict(message)
            await self._refuse(message, -32600, f"Invalid Request: {problem}")

    async def _refuse(self, message: Any, code: int, text: str) -> None:
        log.warning("refused a malformed message: %s", text)
        ident = message.get("id") if isinstance(message, dict) else None
        if isinstance(ident, bool) or not isinstance(ident, str | int):
            ident = None
        await self.send({"jsonrpc": "2.0", "id": ident, "error": {"code": code,
                                                                  "message": text}})

    async def _line(self) -> bytes:
        chunks: list[bytes] = []
        while True:
            try:
                chunks.append(await self._reader.readuntil(b"\n"))
                return b"".join(chunks)
            except asyncio.LimitOverrunError as e:  # a long line: read it in pieces
                chunks.append(await self._reader.readexactly(e.consumed))
            except asyncio.IncompleteReadError as e:  # the last line, or the end of input
                chunks.append(e.partial)
                return b"".join(chunks)


def malformed(message: Any) -> str | None:
    """Why a decoded line is not a JSON-RPC 2.0 request, notification or response."""
    if not isinstance(message, dict):
        return f"a message is a JSON object, not {type(message).__name__}"
    ident = message.get("id")
    if "id" in message and (isinstance(ident, bool) or not isinstance(ident, str | int | None)):
        return "'id' must be a string, a number or null"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "'method' must be a string"
        if not isinstance(message.get("params"), dict | list | None):
            return "'params' must be an object or an array"
        return None
    if "id" not in message:
        return "neither a request ('method') nor a response ('id')"
    return None


async def serve_acp(service: KbService) -> None:
    reader, writer = await stdio_streams(limit=STDIO_LINE_LIMIT)
    # acp's Agent is a Protocol that agents subclass: the methods kbagent does not serve
    # keep its stub bodies (they answer None), which mypy counts as abstract
    agent = KbAcpAgent(service)  # type: ignore[abstract]
    await run_agent(agent, CheckedTransport(reader, writer))


STDIO_LINE_LIMIT = 50 * 1024 * 1024  # the SDK's default buffer for one stdin line
