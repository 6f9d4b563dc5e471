"""The MCP server over streamable HTTP (``/mcp``) with a health endpoint (``/health``).

Every request to ``/mcp`` is authenticated by :class:`BearerAuth`: no
``Authorization`` header means the anonymous principal, a known bearer token its
principal (:mod:`kbagent.server.auth`), anything else HTTP 401. The principal is
put in :data:`~kbagent.server.mcp_server.CALLER` for the request, and the SDK runs
the tool or resource handler in that request's context. The server binds to
loopback unless tokens are configured.

A client that goes away is noticed: each ``/mcp`` request carries a
:data:`~kbagent.server.service.CLIENT_GONE` token, cancelled when its connection
closes (the ASGI ``http.disconnect``), so an ask nobody will read is cancelled and
frees its place. (The MCP spec lets a client resume a dropped stream, but only from
a server with an event store; this one keeps none, so an answer on a closed stream
could never be delivered.) Worker threads: the SDK runs every tool in anyio's default pool,
sized here to :data:`CALL_THREADS` plus the most asks admitted at once, so asks
waiting for the model can never take the threads that searches and reads need.
The port is bound before anything is loaded or printed: a port in use is a
one-line error (exit 4, busy).
"""

from __future__ import annotations

import errno
import ipaddress
import json
import socket
from typing import Any

from kbagent import __version__
from kbagent.agent.cancel import CancelToken
from kbagent.errors import BadInputError, ExitCode, KbagentError
from kbagent.kb.access import ANONYMOUS
from kbagent.server.auth import TokenStore
from kbagent.server.mcp_server import CALLER, KbMcpServer
from kbagent.server.service import CLIENT_GONE

LOOPBACK_NAMES = ("localhost",)
CALL_THREADS = 40  # worker threads for searches, reads, lists (anyio's default pool size)


class PortInUseError(KbagentError):
    """Another program listens on the port ``serve`` was asked to use."""

    exit_code = ExitCode.BUSY


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, tokens: TokenStore | None) -> None:
    """Refuse a non-loopback address unless callers can be told apart by token."""
    if not is_loopback(host) and not tokens:
        raise BadInputError(f"refusing to listen on {host} without tokens: every caller on the "
                            "network would be anonymous; add one with 'kbagent serve token add "
                            "NAME --groups ...' and pass --tokens, or use --host 127.0.0.1")


def listen_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (as uvicorn binds it); a port in use or an
    address that cannot be bound is a one-line error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise PortInUseError(f"port {port} on {host} is in use (another kbagent serve?); "
                                 "stop that server or choose another with --port") from None
        raise BadInputError(f"cannot listen on {host}:{port}: "
                            f"{e.strerror or e}") from None
    sock.set_inheritable(True)
    return sock


def size_thread_pool(max_asks: int) -> None:
    """anyio's default worker pool (where the SDK runs every tool): room for the
    cheap calls plus every ask that can be admitted (call in the event loop)."""
    import anyio.to_thread

    anyio.to_thread.current_default_thread_limiter().total_tokens = CALL_THREADS + max_asks


class BearerAuth:
    """ASGI middleware: the caller of each ``/mcp`` request, from its bearer token, and
    a :data:`CLIENT_GONE` token cancelled when the request's connection closes."""

    def __init__(self, app: Any, tokens: TokenStore | None, max_asks: int) -> None:
        self.app = app
        self.tokens = tokens
        self.max_asks = max_asks

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            size_thread_pool(self.max_asks)
        if scope["type"] != "http" or scope.get("path") == "/health":
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization")
        principal = None
        if header is not None:
            scheme, _, token = header.decode("latin-1").partition(" ")
            token = token.strip()
            if scheme.lower() == "bearer" and token and self.tokens is not None:
                principal = self.tokens.principal(token)
            if principal is None:
                await _unauthorized(send)
                return
        gone = CancelToken()

        async def watched() -> Any:
            message = await receive()
            if message.get("type") == "http.disconnect":
                gone.cancel()
            return message

        reset, reset_gone = CALLER.set(principal or ANONYMOUS), CLIENT_GONE.set(gone)
        try:
            await self.app(scope, watched, send)
        finally:
            CLIENT_GONE.reset(reset_gone)
            CALLER.reset(reset)


async def _unauthorized(send: Any) -> None:
    body = json.dumps({"error": "invalid bearer token"}).encode()
    await send({"type": "http.response.start", "status": 401,
                "headers": [(b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="kbagent"'),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def build_app(server: KbMcpServer, host: str, tokens: TokenStore | None) -> Any:
    """The ASGI app: ``/mcp`` (MCP streamable HTTP) and ``/health``."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    service = server.service

    # mcp: custom_route has no return annotation, so mypy sees the decorator as untyped
    @server.custom_route("/health", methods=["GET"])  # type: ignore[untyped-decorator]
    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__,
                             "kbs": [kb.name for kb in service.session.kbs],
                             "asks": service.asks, "asks_waiting": service.asks_waiting,
                             "max_asks": service.max_asks,
                             "max_asks_per_caller": service.max_asks_per_caller})

    app = server.streamable_http_app(streamable_http_path="/mcp", host=host)
    return BearerAuth(app, tokens, service.max_asks)


def serve(server: KbMcpServer, host: str, sock: socket.socket,
          tokens: TokenStore | None) -> None:
    """Run on ``sock`` (from :func:`listen_socket`) until interrupted. uvicorn's
    loggers are left to the root logger's handler (``kbagent serve`` installs one that
    writes client input without control sequences)."""
    import uvicorn

    check_bind(host, tokens)
    config = uvicorn.Config(build_app(server, host, tokens), log_level="warning",
                            lifespan="on", log_config=None)
    uvicorn.Server(config).run(sockets=[sock])
