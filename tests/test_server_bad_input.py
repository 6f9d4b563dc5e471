"""Bad input to ``kbagent mcp``: malformed JSON-RPC, an unknown tool, wrong argument types,
a 1 MB query, a path outside the KB, a client that goes away mid-question. Each gets a
clear error and the server goes on serving (the HTTP side of a disconnect is in
tests/test_server_http.py)."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from tests.conftest import ROOT
from tests.server_support import command, dump, server_env, stdio_client_for

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}}


@pytest.fixture
def home(sample_settings):
    return sample_settings.home


def test_malformed_json_rpc_gets_an_error_and_the_server_reads_on(home):
    proc = subprocess.Popen(command("mcp"), cwd=ROOT, env=server_env(home), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)

    def send(line: str) -> None:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    def reply() -> dict:
        return json.loads(proc.stdout.readline())

    try:
        send("this is not json")
        assert reply() == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32700, "message": "Parse error: the line is not valid JSON"}}
        send(json.dumps(INIT))
        assert reply()["result"]["serverInfo"]["name"] == "kbagent"
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        for bad in ("[1, 2, 3]", '{"id": 4}', '{"jsonrpc": "1.0", "id": 5, "method": "x"}',
                    '{"jsonrpc": "2.0", "id": 6, "method": 7}', "\x00\x01", "{" * 5000):
            send(bad)
            assert reply()["error"]["code"] in (-32700, -32600), bad
        send(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "no/such/method"}))
        assert reply()["error"]["code"] == -32601
        send(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                         "params": {"name": "list_kbs", "arguments": {}}}))
        got = reply()
        assert got["id"] == 8 and got["result"]["structuredContent"]["kbs"][0]["name"] == "sample"
    finally:
        proc.stdin.close()
        assert proc.wait(30) == 0
        err = proc.stderr.read()
        proc.stderr.close()
        proc.stdout.close()
    assert "refused a malformed message" in err and "Traceback" not in err


def test_unknown_tool_wrong_types_huge_query_and_paths_outside_the_kb(home):
    async def scenario():
        out = {}
        async with stdio_client_for(home, "--kb", "sample") as c:
            calls = {
                "unknown": ("drop_tables", {}),
                "query_type": ("search", {"query": 5}),
                "k_type": ("search", {"query": "retry", "k": "ten"}),
                "k_range": ("search", {"query": "retry", "k": 100000}),
                "mode": ("search", {"query": "retry", "mode": "fuzzy"}),
                "missing": ("search", {}),
                "extra_kb": ("search", {"query": "retry", "kbs": ["nope"]}),
                "huge": ("search", {"query": "a" * 1_000_000}),
                "huge_ask": ("ask", {"question": "why " * 250_000}),
                "blank": ("search", {"query": "   "}),
                "dotdot": ("read", {"path": "../../../etc/passwd"}),
                "absolute": ("read", {"path": "/etc/passwd"}),
                "nul": ("read", {"path": "hr/\x00x.md"}),
                "start": ("read", {"path": "engineering/src/retry.py", "start": 0}),
                "past_end": ("read", {"path": "engineering/src/retry.py", "start": 99999}),
                "symbol": ("code_definition", {"symbol": ["a"]}),
            }
            for name, (tool, args) in calls.items():
                res = await c.call_tool(tool, args)
                out[name] = (res.is_error, dump(res))
            try:
                await c.read_resource("kbagent://sample/../../etc/passwd")
            except Exception as e:
                out["resource_dotdot"] = (True, str(e))
            try:
                await c.read_resource("file:///etc/passwd")
            except Exception as e:
                out["resource_scheme"] = (True, str(e))
            ok = await c.call_tool("search", {"query": "retry policy", "k": 1})
            out["after"] = (ok.is_error, dump(ok))
        return out

    out = asyncio.run(scenario())
    for name, (is_error, text) in out.items():
        if name != "after":
            assert is_error, (name, text)
            assert len(text) < 2000, (name, len(text))  # a clear error, not an echo of 1 MB
    assert "Unknown tool: drop_tables" in out["unknown"][1]
    assert "query" in out["query_type"][1] and "k" in out["k_type"][1]
    assert "at most 2000 characters" in out["huge"][1]
    assert "at most 2000 characters" in out["huge_ask"][1]
    assert "KB 'nope' is not open" in out["extra_kb"][1]
    assert "'..' is not allowed" in out["dotdot"][1]
    assert "absolute paths are not allowed" in out["absolute"][1]
    assert "NUL" in out["nul"][1]
    assert "start_line 99999 is past the end" in out["past_end"][1]
    assert "empty query" in out["blank"][1]
    assert "root:" not in json.dumps(out)
    assert out["after"][0] is False and "retry" in out["after"][1]


def test_a_stdio_client_that_goes_away_mid_question_ends_the_server_cleanly(home, tmp_path):
    errlog = tmp_path / "server.err"

    async def scenario():
        with open(errlog, "w") as err:
            async with stdio_client_for(home, script="slow", delay=0.05, errlog=err) as c:
                started = asyncio.Event()

                async def progress(value, total, message):
                    if message.endswith(": llm"):
                        started.set()

                task = asyncio.create_task(c.call_tool("ask", {"question": "Why?"},
                                                       progress_callback=progress))
                await asyncio.wait_for(started.wait(), 60)
            # leaving the block closes the pipes mid-question
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    assert "Traceback" not in errlog.read_text(), errlog.read_text()
