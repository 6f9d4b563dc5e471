"""kbagent as an MCP server, on the official SDK's :class:`MCPServer`.

Tools (each with a JSON schema for its input and its structured output): ``search``,
``ask`` (progress notifications per step; a client's cancel stops the run through
the session's :class:`~kbagent.agent.cancel.CancelToken`), ``read``, ``list_kbs``,
``code_definition``, ``code_references``. Documents are resources at
``kbagent://KB/path``; listing and reading them obey access.

Asks run in worker threads, registered in the server's :class:`Asks`: when the
stdio client goes away, :func:`kbagent.server.stdio.run_stdio` cancels every ask still
running and waits for its thread before the process closes the KBs and frees the model
(a model or a database freed under a running generation or search crashes the process).

Who the caller is: on stdio, the principal the server was started as (``--as`` /
``--groups``, else anonymous); over HTTP, the principal of the request's bearer
token, which :mod:`kbagent.server.http` puts in :data:`CALLER` for the request (the
SDK runs each handler in the context of the request that carried it).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated, Any, Literal

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp_types import Resource as MCPResource
from pydantic import Field

from kbagent import __version__
from kbagent.agent.cancel import CancelToken
from kbagent.errors import KbagentError, NotFoundError
from kbagent.kb.access import Principal
from kbagent.server import models as m
from kbagent.server.service import MAX_K, MAX_QUERY_CHARS, KbService, document_uri

log = logging.getLogger("kbagent.server")

CALLER: ContextVar[Principal | None] = ContextVar("kbagent_caller", default=None)

INSTRUCTIONS = (
    "kbagent searches local knowledge bases (documents and code) and answers questions "
    "with numbered references to file and line ranges. Use `search` to find passages, "
    "`read` to see numbered lines of a document, `ask` for an answer written by the local "
    "model with citations, `code_definition` / `code_references` for code symbols. "
    "Everything you see is limited to the documents your caller may read.")

Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS,
                             description="What to look for, in words")]
KbNames = Annotated[list[str] | None, Field(description="KBs to search (default: all)")]
Symbol = Annotated[str, Field(min_length=1, max_length=200,
                              description="A name, or a qualified name like Class.method")]


class Asks:
    """The asks running in worker threads, so that a server shutting down can stop them
    and wait for them before it closes the model and the KBs they use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[int, tuple[CancelToken, threading.Event]] = {}
        self._stopping = False

    def begin(self, token: CancelToken) -> threading.Event | None:
        """Called by the worker thread before it touches the service: its done event,
        or None once :meth:`stop` has begun (the ask must not start)."""
        with self._lock:
            if self._stopping:
                return None
            done = threading.Event()
            self._running[id(token)] = (token, done)
            return done

    def end(self, token: CancelToken, done: threading.Event) -> None:
        with self._lock:
            self._running.pop(id(token), None)
        done.set()

    def stop(self, timeout: float | None = None) -> bool:
        """Refuse new asks, cancel the running ones, wait for their threads (blocking:
        call it from a thread). True when every one has finished."""
        with self._lock:
            self._stopping = True
            running = list(self._running.values())
        for token, _ in running:
            token.cancel()
        deadline = None if timeout is None else time.monotonic() + timeout
        for _, done in running:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not done.wait(left):
                return False
        return True


class KbMcpServer(MCPServer):
    """The SDK's server with two additions: the resource list is the caller's documents,
    and :attr:`asks` knows the asks running in worker threads."""

    def __init__(self, service: KbService, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.service = service
        self.asks = Asks()

    def caller(self) -> Principal:
        return CALLER.get() or self.service.principal

    async def list_resources(self) -> list[MCPResource]:
        docs = await anyio.to_thread.run_sync(self.service.documents, self.caller())
        return [MCPResource(uri=document_uri(kb, path), name=f"{kb}:{path}",
                            mime_type="text/plain") for kb, path in docs]


@contextmanager
def tool_errors() -> Iterator[None]:
    """A KbagentError is a tool error the client sees, worded as on the CLI (anything
    else is a crash: the SDK keeps its text on the server)."""
    try:
        yield
    except KbagentError as e:
        raise ToolError(str(e)) from None


def build_server(service: KbService) -> KbMcpServer:
    server = KbMcpServer(service, name="kbagent", version=__version__,
                         instructions=INSTRUCTIONS, log_level="WARNING")
    caller = server.caller

    @server.tool(description="Hybrid search (BM25 + vectors) over the knowledge bases: the "
                 "best passages with KB, path, line range, heading, excerpt and scores.")
    def search(query: Query, kbs: KbNames = None,
               k: Annotated[int, Field(ge=1, le=MAX_K, description="hits to return")] = 10,
               mode: Literal["hybrid", "bm25", "vector"] = "hybrid") -> m.SearchResult:
        with tool_errors():
            return service.search(caller(), query, kbs, k, mode)

    @server.tool(description="Read numbered lines of one document (80 lines from `start` "
                 "unless `end` is given, at most 120; `next_line` says where to go on).")
    def read(path: Annotated[str, Field(min_length=1, max_length=1000,
                                        description="KB-relative path, e.g. hr/leave.md")],
             kb: Annotated[str | None, Field(description="KB holding it (default: any)")] = None,
             start: Annotated[int, Field(ge=1)] = 1,
             end: Annotated[int | None, Field(ge=1)] = None) -> m.ReadResult:
        with tool_errors():
            return service.read(caller(), path, kb, start, end)

    @server.tool(description="The knowledge bases, with the documents and chunks the caller "
                 "may read.")
    def list_kbs() -> m.KbList:
        with tool_errors():
            return service.list_kbs(caller())

    @server.tool(description="Where a code symbol is defined (path:line, kind, full name).")
    def code_definition(symbol: Symbol, kbs: KbNames = None) -> m.SymbolResult:
        with tool_errors():
            return service.symbols(caller(), symbol, "def", kbs)

    @server.tool(description="Lines that use or call a code symbol.")
    def code_references(symbol: Symbol, kbs: KbNames = None) -> m.SymbolResult:
        with tool_errors():
            return service.symbols(caller(), symbol, "refs", kbs)

    @server.tool(description="Ask the local model a question: it searches the knowledge "
                 "bases and answers with numbered references [n] that resolve to path:lines. "
                 "Progress notifications report each step; cancelling stops the run.")
    async def ask(question: Query, ctx: Context,
                  mode: Literal["auto", "agent", "rag", "direct"] = "auto") -> m.AskResult:
        with tool_errors():
            return await run_ask(service, caller(), question, mode, ctx, server.asks)

    @server.resource("kbagent://{kb}/{+path}", name="document", mime_type="text/plain",
                     description="A document of a knowledge base, as stored (if the caller "
                     "may read it).")
    def document(kb: str, path: str) -> str:
        try:
            return service.document_text(caller(), document_uri(kb, path))
        except NotFoundError as e:  # a denied document reads exactly like a missing one
            raise ResourceNotFoundError(str(e)) from None
        except KbagentError as e:
            raise ResourceError(str(e)) from None

    return server


async def run_ask(service: KbService, principal: Principal, question: str, mode: str,
                  ctx: Context, asks: Asks | None = None) -> m.AskResult:
    """Run one question in a worker thread; relay its steps as progress notifications.
    A cancel from the client cancels this task: the token stops the run at its next
    check (the LLM backends wake on it), and the lock on the LLM is released. The
    thread registers in ``asks`` so that a shutdown waits for it."""
    token = CancelToken()
    asks = asks or Asks()
    sent = [0]

    async def progress(message: str) -> None:
        sent[0] += 1
        try:
            await ctx.report_progress(sent[0], None, message)
        except Exception:  # the client went away: the answer still finishes or stops
            log.debug("progress notification not sent", exc_info=True)

    def on_event(ev: Any) -> None:
        message = describe(ev)
        if message and not token.cancelled:
            try:
                anyio.from_thread.run(progress, message)
            except RuntimeError:  # the event loop has ended: nobody to tell
                token.cancel()

    def work() -> m.AskResult:
        done = asks.begin(token)
        if done is None:  # the server is shutting down
            token.cancel()
            raise ToolError("the server is shutting down")
        try:
            return service.ask(principal, question, mode=mode, token=token, on_event=on_event)
        finally:
            asks.end(token, done)
            if token.cancelled_at is not None:
                log.warning("ask cancelled; the run stopped %.0f ms after the cancel",
                            (time.perf_counter() - token.cancelled_at) * 1000)

    try:
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        token.cancel()
        raise


def describe(ev: Any) -> str:
    """One line per step for progress notifications (never document text)."""
    from kbagent.agent.events import Action, Final, Observation, StepStarted

    if isinstance(ev, StepStarted):
        return f"step {ev.step}: {ev.kind}"
    if isinstance(ev, Action):
        return f"step {ev.step}: {ev.tool} {json.dumps(ev.args, ensure_ascii=False)[:200]}"
    if isinstance(ev, Observation):
        return f"step {ev.step}: {ev.summary}"
    if isinstance(ev, Final):
        return f"done: {ev.result.status}"
    return ""
