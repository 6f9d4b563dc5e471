"""MCP over stdio, with two additions to the SDK's transport: a line that is not a
JSON-RPC message gets a JSON-RPC error back (the SDK drops it without a word), and
the server goes on reading; and a client that goes away mid-question (stdin closed,
stdout closed, or both) ends the server quietly: the asks still running are cancelled
and their worker threads waited for, so that the caller closes the KBs and frees the
model only once nothing uses them, and the process exits 0 without a traceback."""

from __future__ import annotations

import logging
import os
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.stdio import stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

from kbagent.server.mcp_server import KbMcpServer

log = logging.getLogger("kbagent.server")


def protocol_error(exc: Exception) -> JSONRPCError:
    """The reply to an unreadable line: -32700 when it is not JSON, else -32600."""
    if "json_invalid" in str(exc) or "Invalid JSON" in str(exc):
        error = ErrorData(code=PARSE_ERROR, message="Parse error: the line is not valid JSON")
    else:
        error = ErrorData(code=INVALID_REQUEST, message="Invalid Request: the line is not a "
                          "JSON-RPC 2.0 request, notification or response")
    return JSONRPCError(jsonrpc="2.0", id=None, error=error)


# what writing to or reading from a client that has gone away raises
GONE = (BrokenPipeError, ConnectionResetError, anyio.BrokenResourceError,
        anyio.ClosedResourceError)
STOP_NOTE_AFTER = 5.0  # seconds: then say why the process has not exited yet


def client_gone(exc: BaseException) -> bool:
    """Whether an error (or every error of a group) says the client's pipes closed."""
    if isinstance(exc, BaseExceptionGroup):
        return all(client_gone(e) for e in exc.exceptions)
    return isinstance(exc, GONE)


async def run_stdio(server: KbMcpServer) -> None:
    """Serve until the client closes stdin or its pipes break; then stop the asks still
    running and wait for their threads (see the module's docstring)."""
    try:
        await _serve(server)
    except Exception as e:
        if not client_gone(e):
            raise
        log.debug("the client went away", exc_info=True)
        _mute_stdout()
    finally:
        with anyio.CancelScope(shield=True):
            await stop_asks(server)


async def stop_asks(server: KbMcpServer) -> None:
    """Cancel the running asks and wait for their threads (off the event loop: a
    thread may be waiting on it to send a progress notification)."""
    if await anyio.to_thread.run_sync(server.asks.stop, STOP_NOTE_AFTER):
        return
    log.warning("waiting for the running question to stop before closing the model")
    await anyio.to_thread.run_sync(server.asks.stop, None)


def _mute_stdout() -> None:
    """The client's end of stdout is closed: send what is left (the interpreter flushes
    stdout at exit) to the null device, not into a broken pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        log.debug("stdout left as it is", exc_info=True)


async def _serve(server: KbMcpServer) -> None:
    lowlevel: Any = server._lowlevel_server  # the SDK's own run loop, fed checked messages
    async with stdio_server() as (read_stream, write_stream):
        send, receive = create_context_streams[SessionMessage | Exception](0)

        async def pump() -> None:
            async with send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        reply = protocol_error(item)
                        log.warning("refused a malformed message: %s", reply.error.message)
                        await write_stream.send(SessionMessage(reply))
                        continue
                    await send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())
