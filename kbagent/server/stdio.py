"""MCP over stdio, with one addition to the SDK's transport: a line that is not a
JSON-RPC message gets a JSON-RPC error back (the SDK drops it without a word), and
the server goes on reading."""

from __future__ import annotations

import logging
from typing import Any

import anyio
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


async def run_stdio(server: KbMcpServer) -> None:
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
