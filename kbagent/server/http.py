"""The MCP server over streamable HTTP (``/mcp``) with a health endpoint (``/health``).

Every request to ``/mcp`` is authenticated by :class:`BearerAuth`: no
``Authorization`` header means the anonymous principal, a known bearer token its
principal (:mod:`kbagent.server.auth`), anything else HTTP 401. The principal is
put in :data:`~kbagent.server.mcp_server.CALLER` for the request, and the SDK runs
the tool or resource handler in that request's context. The server binds to
loopback unless tokens are configured.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from kbagent import __version__
from kbagent.errors import BadInputError
from kbagent.kb.access import ANONYMOUS
from kbagent.server.auth import TokenStore
from kbagent.server.mcp_server import CALLER, KbMcpServer

LOOPBACK_NAMES = ("localhost",)


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


class BearerAuth:
    """ASGI middleware: the caller of each ``/mcp`` request, from its bearer token."""

    def __init__(self, app: Any, tokens: TokenStore | None) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
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
        reset = CALLER.set(principal or ANONYMOUS)
        try:
            await self.app(scope, receive, send)
        finally:
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
                             "asks_waiting": service.asks_waiting})

    app = server.streamable_http_app(streamable_http_path="/mcp", host=host)
    return BearerAuth(app, tokens)


def serve(server: KbMcpServer, host: str, port: int, tokens: TokenStore | None) -> None:
    """Run until interrupted."""
    import uvicorn

    check_bind(host, tokens)
    config = uvicorn.Config(build_app(server, host, tokens), host=host, port=port,
                            log_level="warning", lifespan="on")
    uvicorn.Server(config).run()
