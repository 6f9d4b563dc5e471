"""``kbagent serve`` under abuse (issue 45): bounded asks with a "busy" error, abandoned
asks cancelled, searches answered while the ask slots are full, log lines without
terminal control sequences, a tokens file others can write refused, a port in use
reported in one line. The real server process on a loopback port, the scripted LLM
(tests/scripted_kbagent.py: a question containing SLOW streams a long answer slowly)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from typer.testing import CliRunner

from kbagent.cli import app
from kbagent.errors import ExitCode
from tests.conftest import ROOT
from tests.server_support import (
    USERS,
    add_token,
    command,
    free_port,
    http_client,
    http_server,
    server_env,
)

runner = CliRunner()
MCP_HEADERS = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
VERSION = "2025-06-18"


@pytest.fixture
def home(sample_settings):
    (sample_settings.home / "users.toml").write_text(USERS)
    return sample_settings.home


# --- a raw MCP client that can walk away mid-call ----------------------------------
def mcp_session(url: str, token: str | None = None) -> dict[str, str]:
    """Initialize an MCP session over plain HTTP; the headers of its later requests."""
    headers = dict(MCP_HEADERS, **({"Authorization": f"Bearer {token}"} if token else {}))
    res = httpx2.post(url + "/mcp", headers=headers, timeout=30, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": VERSION, "capabilities": {},
                   "clientInfo": {"name": "abandoner", "version": "0"}}})
    assert res.status_code == 200, res.text
    headers |= {"mcp-session-id": res.headers["mcp-session-id"],
                "mcp-protocol-version": VERSION}
    res = httpx2.post(url + "/mcp", headers=headers, timeout=30,
                      json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert res.status_code == 202, res.text
    return headers


@contextlib.contextmanager
def hung_ask(url: str, headers: dict[str, str], n: int,
             question: str = "Why? SLOW") -> Iterator[Any]:
    """An ask whose client never reads the answer; leaving the block closes its
    connection without a word (no MCP cancel): the client is gone."""
    with httpx2.Client(timeout=60) as client, client.stream(
            "POST", url + "/mcp", headers=headers,
            json={"jsonrpc": "2.0", "id": n, "method": "tools/call",
                  "params": {"name": "ask", "arguments": {"question": question,
                                                          "mode": "agent"}}}) as res:
        assert res.status_code == 200
        yield res


def health(url: str) -> dict[str, Any]:
    return dict(httpx2.get(url + "/health", timeout=30).json())


def wait_for(check: Any, what: str, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def sdk_call(url: str, tool: str, args: dict[str, Any], token: str | None = None) -> Any:
    async def call() -> Any:
        async with http_client(url, token) as c:
            return await asyncio.wait_for(c.call_tool(tool, args), 90)

    return asyncio.run(call())


def text(result: Any) -> str:
    return " ".join(c.text for c in result.content if hasattr(c, "text"))


def test_asks_are_bounded_searches_answer_and_abandoned_asks_free_their_slots(home,
                                                                             tmp_path):
    (home / "config.toml").write_text("serve_max_asks = 3\nserve_max_asks_per_caller = 2\n")
    bot = add_token("build-bot", "--groups", "engineering")
    log = tmp_path / "serve.err"
    with http_server(home, log=log) as url, contextlib.ExitStack() as hung:
        anon, bots = mcp_session(url), mcp_session(url, bot)
        hung.enter_context(hung_ask(url, anon, 1))
        hung.enter_context(hung_ask(url, anon, 2))
        wait_for(lambda: health(url).get("asks") == 2, "two asks admitted")
        # the caller's third ask: refused at once, not queued
        res = sdk_call(url, "ask", {"question": "What is the retry backoff?"})
        assert res.is_error and "server busy" in text(res), text(res)
        assert "serve_max_asks_per_caller = 2" in text(res) and "retry" in text(res)
        hung.enter_context(hung_ask(url, bots, 1))
        wait_for(lambda: health(url).get("asks") == 3, "three asks admitted")
        # every slot taken: another caller is refused too
        res = sdk_call(url, "ask", {"question": "What is the retry backoff?"}, bot)
        assert res.is_error and "serve_max_asks = 3" in text(res), text(res)
        # while the ask slots are full, searches are served
        for token in (None, bot):
            res = sdk_call(url, "search", {"query": "retry backoff", "k": 3}, token)
            assert not res.is_error and res.structured_content["hits"], text(res)
        assert health(url)["asks"] == 3  # the refused asks took no slot
        hung.close()  # the three clients go away without a word
        wait_for(lambda: log.read_text().count("ask cancelled; the run stopped") == 3,
                 "abandoned asks cancelled")
        wait_for(lambda: health(url)["asks"] == 0, "slots freed")
        res = sdk_call(url, "ask", {"question": "What is the retry backoff?",
                                    "mode": "agent"})
        assert not res.is_error and res.structured_content["status"] == "answered", text(res)
    assert "Traceback" not in log.read_text()


def test_a_limit_below_one_is_a_one_line_error(home):
    (home / "config.toml").write_text("serve_max_asks_per_caller = 0\n")
    res = runner.invoke(app, ["serve", "--port", str(free_port())])
    assert res.exit_code == ExitCode.BAD_INPUT
    assert "setting 'serve_max_asks_per_caller' must be 1 or more, got 0" in res.stderr


# Host, Origin (None: no Origin; b"": this server's own address)
ESCAPES = [(b"evil\x1b]0;PWNED-TITLE\x07", None),
           (b"", b"http://x\x1b]52;c;SGVsbG8=\x07\x1b[2J"),
           (b"c1\x9d0;PWNED-TITLE\x9c", b"http://y\x9b2J\x1bc")]


def test_client_headers_reach_the_log_without_control_sequences(home, tmp_path):
    log = tmp_path / "serve.err"
    with http_server(home, log=log) as url:
        port = int(url.rsplit(":", 1)[1])
        for host, origin in ESCAPES:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                host = host or f"127.0.0.1:{port}".encode()
                s.sendall(b"POST /mcp HTTP/1.1\r\nHost: " + host + b"\r\n"
                          + (b"Origin: " + origin + b"\r\n" if origin else b"")
                          + b"Content-Type: application/json\r\nAccept: application/json, "
                          b"text/event-stream\r\nContent-Length: 2\r\nConnection: close"
                          b"\r\n\r\n{}")
                assert s.recv(100).split(b" ")[1] in (b"421", b"403")
        wait_for(lambda: log.read_bytes().count(b"Invalid") == 3, "the three lines logged")
    logged = log.read_bytes()
    assert b"Invalid Host header: evil" in logged and b"Invalid Origin header: http://x" in logged
    assert b"\x1b" not in logged and b"PWNED" not in logged, logged
    assert not any("\x80" <= ch <= "\x9f" for ch in logged.decode("utf-8", "replace")), logged


@pytest.mark.parametrize(("target", "mode"), [("tokens.toml", 0o666), ("tokens.toml", 0o620),
                                              ("users.toml", 0o646)])
def test_a_tokens_or_users_file_others_can_write_is_refused(home, target, mode):
    add_token("maya-laptop", "--as", "maya")
    (home / target).chmod(mode)
    with socket.socket() as busy:  # refused before the port is even tried
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        res = subprocess.run(command("serve", "--port", str(busy.getsockname()[1])), cwd=ROOT,
                             env=server_env(home), capture_output=True, text=True,
                             timeout=120)
    assert res.returncode == ExitCode.BAD_INPUT, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert str(home / target) in res.stderr and f"mode {mode:04o}" in res.stderr, res.stderr
    assert "MCP at" not in res.stderr
    (home / target).chmod(0o600)
    assert runner.invoke(app, ["serve", "token", "list"]).exit_code == 0  # still readable


def test_a_port_in_use_is_one_line_and_exit_busy(home):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = subprocess.run(command("serve", "--port", str(port)), cwd=ROOT,
                             env=server_env(home), capture_output=True, text=True,
                             timeout=120)
    assert res.returncode == ExitCode.BUSY, res.stderr
    assert res.stderr.strip().splitlines() == [
        f"kbagent: error: port {port} on 127.0.0.1 is in use (another kbagent serve?); stop "
        "that server or choose another with --port"], res.stderr
