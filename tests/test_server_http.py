"""``kbagent serve``: the real server on a free loopback port, driven by the MCP SDK's
streamable HTTP client. Callers are told apart by bearer token (stored hashed); no
token is anonymous, a bad token gets 401."""

from __future__ import annotations

import asyncio
import time

import httpx2
import pytest
from typer.testing import CliRunner

from kbagent.cli import app
from kbagent.errors import ExitCode
from kbagent.server.auth import token_hash
from tests.server_support import USERS, add_token, dump, http_client, http_server
from tests.test_access_leaks import PLAN
from tests.test_server_mcp import PLAN_URIS, TOOLS, probe_everything

runner = CliRunner()


@pytest.fixture
def home(sample_settings):
    (sample_settings.home / "users.toml").write_text(USERS)
    return sample_settings.home


def test_tokens_are_stored_hashed_and_shown_once(home):
    token = add_token("maya-laptop", "--as", "maya")
    text = (home / "tokens.toml").read_text()
    assert token.startswith("kba_") and token not in text and token_hash(token) in text
    assert (home / "tokens.toml").stat().st_mode & 0o777 == 0o600
    listed = runner.invoke(app, ["serve", "token", "list"]).stdout
    assert "maya-laptop\tuser maya" in listed and token not in listed
    res = runner.invoke(app, ["serve", "token", "add", "maya-laptop", "--groups", "hr"])
    assert res.exit_code == ExitCode.BAD_INPUT and "already exists" in res.stderr
    res = runner.invoke(app, ["serve", "token", "add", "x", "--as", "zoe"])
    assert res.exit_code == ExitCode.NOT_FOUND and "unknown user 'zoe'" in res.stderr
    res = runner.invoke(app, ["serve", "token", "add", "y"])
    assert res.exit_code == ExitCode.BAD_INPUT and "--as USER or --groups" in res.stderr
    assert runner.invoke(app, ["serve", "token", "rm", "maya-laptop"]).exit_code == 0
    assert token_hash(token) not in (home / "tokens.toml").read_text()


def test_a_non_loopback_host_is_refused_without_tokens(home):
    for host in ("0.0.0.0", "192.168.1.20", "::"):
        res = runner.invoke(app, ["serve", "--host", host, "--port", "1"])
        assert res.exit_code == ExitCode.BAD_INPUT, res.stderr
        assert f"refusing to listen on {host} without tokens" in res.stderr
    (home / "tokens.toml").write_text("[tokens.x]\nsha256 = 'nothex'\n")
    res = runner.invoke(app, ["serve", "--host", "0.0.0.0"])
    assert res.exit_code == ExitCode.BAD_INPUT and "sha256" in res.stderr


def test_http_tools_results_and_access_per_token(home, tmp_path):
    eng = add_token("build-bot", "--groups", "engineering")
    execs = add_token("maya-laptop", "--as", "maya")

    async def tools_and_results(url):
        async with http_client(url) as c:
            assert {t.name for t in (await c.list_tools()).tools} == TOOLS
            res = await c.call_tool("search", {"query": "retry backoff", "k": 3})
            assert len(res.structured_content["hits"]) == 3
            res = await c.call_tool("read", {"path": "engineering/design/retry_policy.md",
                                             "start": 1, "end": 3})
            assert [ln["number"] for ln in res.structured_content["lines"]] == [1, 2, 3]
            steps = []

            async def progress(value, total, message):
                steps.append(message)

            res = await c.call_tool("ask", {"question": "What is the retry backoff?",
                                            "mode": "agent"}, progress_callback=progress)
            assert res.structured_content["status"] == "answered"
            assert res.structured_content["references"] and steps[-1] == "done: answered"

    async def probe(url, token):
        async with http_client(url, token) as c:
            return await probe_everything(c)

    async def executive(url):
        async with http_client(url, execs) as c:
            read = dump(await c.call_tool("read", {"path": PLAN, "start": 1, "end": 120}))
            text = (await c.read_resource(PLAN_URIS[0])).contents[0].text
            return read, text

    async def bad_token(url):
        async with http_client(url, "kba_not-a-token") as c:
            await c.list_tools()

    with http_server(home, log=tmp_path / "serve.err") as url:
        health = httpx2.get(url + "/health").json()
        assert health["status"] == "ok" and health["kbs"] == ["sample"]
        asyncio.run(tools_and_results(url))
        for token in (None, eng):
            assert asyncio.run(probe(url, token)) == [], token
        read, text = asyncio.run(executive(url))
        assert "385,000" in read and "385,000" in text
        for header in ("Bearer kba_not-a-token", "Bearer " + token_hash(execs), "Basic abc",
                       "Bearer"):
            res = httpx2.post(url + "/mcp", headers={"Authorization": header,
                                                     "Accept": "application/json"},
                              json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert res.status_code == 401 and res.json() == {"error": "invalid bearer token"}
        with pytest.raises(Exception) as e:
            asyncio.run(bad_token(url))
        # the SDK's client reports the 401 as an error response
        assert "401" in repr(e.value) or "error response" in repr(e.value), repr(e.value)
        # the server is still up for good callers
        assert asyncio.run(probe(url, eng)) == []


def test_http_cancel_and_a_client_that_disconnects_mid_ask(home, tmp_path):
    log = tmp_path / "serve.err"

    async def cancel_one(url):
        async with http_client(url) as c:
            generating = asyncio.Event()

            async def progress(value, total, message):
                if message.endswith(": llm"):
                    generating.set()

            task = asyncio.create_task(c.call_tool(
                "ask", {"question": "Why?", "mode": "agent"}, progress_callback=progress))
            await asyncio.wait_for(generating.wait(), 60)
            task.cancel()
            cancelled_at = time.perf_counter()
            with pytest.raises(asyncio.CancelledError):
                await task
            return cancelled_at

    async def disconnect_mid_ask(url):
        c = http_client(url)
        await c.__aenter__()
        generating = asyncio.Event()

        async def progress(value, total, message):
            if message.endswith(": llm"):
                generating.set()

        task = asyncio.create_task(c.call_tool("ask", {"question": "Why?", "mode": "agent"},
                                               progress_callback=progress))
        await asyncio.wait_for(generating.wait(), 60)
        task.cancel()  # the client goes away without a word: its connection closes
        await asyncio.gather(task, return_exceptions=True)
        await c.__aexit__(None, None, None)

    async def still_serving(url):
        async with http_client(url) as c:
            res = await c.call_tool("search", {"query": "retry", "k": 1})
            return not res.is_error

    with http_server(home, script="slow", delay=0.05, log=log) as url:
        asyncio.run(cancel_one(url))
        deadline = time.monotonic() + 30
        while "ask cancelled; the run stopped" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.02)
        asyncio.run(disconnect_mid_ask(url))
        while log.read_text().count("ask cancelled; the run stopped") < 2:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.02)
        assert asyncio.run(still_serving(url))
        assert httpx2.get(url + "/health").json()["asks_waiting"] == 0
    assert "Traceback" not in log.read_text()
