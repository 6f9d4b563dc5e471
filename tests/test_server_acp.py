"""``kbagent acp``: the real agent in a subprocess, driven over its stdio by the ACP SDK's
client side. Steps arrive as tool calls, the answer as text with its citations."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, Client, connect_to_agent, text_block
from acp.schema import (
    AgentMessageChunk,
    ClientCapabilities,
    Implementation,
    ToolCallProgress,
    ToolCallStart,
)

from tests.conftest import ROOT
from tests.server_support import USERS, command, server_env
from tests.test_access_leaks import PLAN, leaked


class Recorder(Client):
    """An ACP client that keeps every session update it is sent."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.tool_started = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        if isinstance(update, ToolCallStart):
            self.tool_started.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def text(self) -> str:
        return "".join(u.content.text for u in self.updates if isinstance(u, AgentMessageChunk))


@contextlib.asynccontextmanager
async def acp_agent(home, *args: str, script: str = "paste", delay: float = 0.0):
    proc = await asyncio.create_subprocess_exec(
        *command("acp", *args), cwd=ROOT, env=server_env(home, script, delay),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    client = Recorder()
    conn = connect_to_agent(client, proc.stdin, proc.stdout)
    try:
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION,
                                     client_capabilities=ClientCapabilities(),
                                     client_info=Implementation(name="test", version="0"))
        assert init.agent_info.name == "kbagent"
        session = await conn.new_session(cwd=str(ROOT), mcp_servers=[])
        yield conn, session.session_id, client
    finally:
        await conn.close()
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 20)
        except TimeoutError:
            proc.kill()
            await proc.wait()


@pytest.fixture
def home(sample_settings):
    (sample_settings.home / "users.toml").write_text(USERS)
    return sample_settings.home


def test_acp_round_trip_steps_as_tool_calls_and_citations_in_the_text(home):
    async def scenario():
        async with acp_agent(home, "--kb", "sample") as (conn, sid, client):
            res = await conn.prompt(session_id=sid,
                                    prompt=[text_block("What is the retry backoff policy?")])
            first = list(client.updates)
            client.updates.clear()
            again = await conn.prompt(session_id=sid, prompt=[text_block("And the cap?")])
            return res, first, again, client.updates

    res, updates, again, follow_up = asyncio.run(scenario())
    assert res.stop_reason == "end_turn" and again.stop_reason == "end_turn"
    starts = [u for u in updates if isinstance(u, ToolCallStart)]
    progress = [u for u in updates if isinstance(u, ToolCallProgress)]
    assert starts and starts[0].title.startswith("kb_search") and starts[0].kind == "search"
    assert starts[0].status == "in_progress" and starts[0].raw_input["query"]
    done = [p for p in progress if p.tool_call_id == starts[0].tool_call_id]
    assert done and done[0].status == "completed" and "hits" in done[0].content[0].content.text
    assert done[0].locations and done[0].locations[0].path.endswith(".md")
    assert done[0].locations[0].path.startswith(str(ROOT / "sample_kb"))
    text = "".join(u.content.text for u in updates if isinstance(u, AgentMessageChunk))
    assert "[1]" in text and "\n\nReferences\n[1] sample:" in text
    ref = text.split("\n\nReferences\n", 1)[1].splitlines()[0]
    assert ref.split(":", 1)[1].split(":")[0].startswith("engineering/")
    # the follow-up is asked as one: its tool calls carry new ids
    new_ids = {u.tool_call_id for u in follow_up if isinstance(u, ToolCallStart)}
    assert new_ids and not new_ids & {s.tool_call_id for s in starts}


def test_acp_cancel_stops_the_turn_and_the_session_goes_on(home):
    async def scenario():
        async with acp_agent(home, "--kb", "sample", script="slow", delay=0.05) as (
                conn, sid, client):
            turn = asyncio.create_task(conn.prompt(session_id=sid,
                                                   prompt=[text_block("Why?")]))
            await asyncio.wait_for(client.tool_started.wait(), 60)
            await asyncio.sleep(0.5)  # the slow model is generating now
            await conn.cancel(session_id=sid)
            res = await asyncio.wait_for(turn, 30)
            client.tool_started.clear()
            second = asyncio.create_task(conn.prompt(session_id=sid,
                                                     prompt=[text_block("Again?")]))
            await asyncio.wait_for(client.tool_started.wait(), 60)
            await conn.cancel(session_id=sid)
            return res, await asyncio.wait_for(second, 30)

    res, second = asyncio.run(scenario())
    assert res.stop_reason == "cancelled" and second.stop_reason == "cancelled"


def test_acp_answers_obey_the_caller(home):
    async def scenario(*who):
        async with acp_agent(home, "--kb", "sample", *who) as (conn, sid, client):
            await conn.prompt(session_id=sid, prompt=[text_block(
                "What is the CEO base salary and the executive severance?")])
            return json.dumps([u.model_dump(mode="json") for u in client.updates])

    typed = "What is the CEO base salary and the executive severance?"
    for who in ([], ["--groups", "engineering"]):
        blob = asyncio.run(scenario(*who))
        assert not leaked(blob, typed), (who, leaked(blob, typed))
    blob = asyncio.run(scenario("--as", "maya"))
    assert "385,000" in blob and PLAN in blob
