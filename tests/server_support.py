"""Helpers for the server tests: start the real ``kbagent mcp`` / ``kbagent serve`` in a
subprocess (the scripted LLM standing in for the model, see tests/scripted_kbagent.py)
and talk to it with the MCP SDK's own client."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import ROOT

USERS = '[users]\nmaya = ["executives"]\nsam = ["engineering"]\n'


def add_token(name: str, *who: str) -> str:
    """``kbagent serve token add NAME ...`` in-process; the token it prints once."""
    from typer.testing import CliRunner

    from kbagent.cli import app

    res = CliRunner().invoke(app, ["serve", "token", "add", name, *who])
    assert res.exit_code == 0, res.stderr
    return res.stdout.strip()


def server_env(home: Path, script: str = "paste", delay: float = 0.0) -> dict[str, str]:
    return {"KBAGENT_HOME": str(home), "PYTHONPATH": str(ROOT), "KBAGENT_GROUNDED": "false",
            "KBAGENT_TEST_SCRIPT": script, "KBAGENT_TEST_PIECE_DELAY": str(delay),
            "PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "")}


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tests.scripted_kbagent", *args]


@contextlib.asynccontextmanager
async def stdio_client_for(home: Path, *args: str, script: str = "paste", delay: float = 0.0,
                           errlog: Any = None) -> AsyncIterator[Client]:
    """An SDK client connected to ``kbagent mcp ARGS`` over the subprocess's stdio."""
    cmd = command("mcp", *args)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], cwd=str(ROOT),
                                   env=server_env(home, script, delay))
    transport = stdio_client(params, errlog=errlog) if errlog is not None else stdio_client(
        params)
    async with Client(transport) as client:
        yield client


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def http_server(home: Path, *args: str, script: str = "paste", delay: float = 0.0,
                log: Path | None = None, procs: list[Any] | None = None) -> Iterator[str]:
    """``kbagent serve`` on a free loopback port; yields its base URL once /health answers
    (``procs``, when given, receives the server's Popen)."""
    import httpx2

    port = free_port()
    err = open(log or os.devnull, "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(command("serve", "--port", str(port), *args), cwd=ROOT,
                            env=server_env(home, script, delay), stdout=subprocess.DEVNULL,
                            stderr=err)
    if procs is not None:
        procs.append(proc)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"kbagent serve exited with {proc.returncode}"
                                   + (f": {log.read_text()}" if log else ""))
            try:
                if httpx2.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("kbagent serve did not start")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        err.close()


def http_client(url: str, token: str | None = None) -> Client:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120))
    return Client(streamable_http_client(url + "/mcp", http_client=http))


def dump(result: Any) -> str:
    """Everything a tool result carries, as text (for leak checks)."""
    parts = [c.text for c in result.content if hasattr(c, "text")]
    return "\n".join(parts) + json.dumps(result.structured_content or {}, ensure_ascii=False)
