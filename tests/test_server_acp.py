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


ACP_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}}


def test_a_line_that_is_not_a_json_rpc_object_gets_an_error_and_the_agent_reads_on(home):
    """Issue 45 (6b): one line of ``[]``, ``5``, ``"str"`` or ``null`` stopped the agent.
    Each gets an Invalid Request error (id null) and the next initialize is answered."""
    import subprocess

    proc = subprocess.Popen(command("acp", "--kb", "sample"), cwd=ROOT, env=server_env(home),
                            text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)

    def send(line: str) -> None:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    def reply() -> dict:
        line = proc.stdout.readline()
        assert line, "the agent closed its output"
        return json.loads(line)

    try:
        for n, bad in enumerate(["[]", "5", '"str"', "null", "[1, 2]", "true", "{}",
                                 '{"jsonrpc": "2.0", "id": 9, "method": 7}', "not json"]):
            send(bad)
            got = reply()
            want = -32700 if bad == "not json" else -32600
            assert got["error"]["code"] == want, (bad, got)
            assert got["id"] == (9 if '"id": 9' in bad else None), (bad, got)
            send(json.dumps({**ACP_INIT, "id": 100 + n}))
            got = reply()
            assert got["id"] == 100 + n and got["result"]["agentInfo"]["name"] == "kbagent", got
    finally:
        proc.stdin.close()
        rc = proc.wait(30)
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    assert rc == 0, err
    assert "refused a malformed message" in err and "Traceback" not in err, err


def test_pdf_and_slide_places_are_pages_and_slides_not_extracted_lines(home):
    """Issue 45 (13b): a PDF's or a deck's location was a line of its extracted text, which
    no editor can open. A tool-call location of such a file has no line and carries its
    page or slide (``_meta`` and the tool call's text); a reference names the page or slide
    as the CLI does; a Markdown file keeps its true line."""
    import re

    async def scenario():
        async with acp_agent(home, "--kb", "sample") as (conn, sid, client):
            await conn.prompt(session_id=sid, prompt=[text_block(
                "What do the Q3 board deck and the Q4 roadmap review slides say about "
                "gross margin and risks?")])
            return list(client.updates), client.text()

    updates, text = asyncio.run(scenario())
    done = [u for u in updates if isinstance(u, ToolCallProgress) and u.locations]
    locations = [loc for u in done for loc in u.locations]
    rich = [loc for loc in locations if loc.path.endswith((".pdf", ".pptx"))]
    assert {loc.path.rsplit(".", 1)[1] for loc in rich} == {"pdf", "pptx"}, locations
    place = re.compile(r"^(p\.\d+ l\.\d+(-\d+)?|pp\.\d+-\d+|slides? \d+(-\d+)?)$")
    for loc in rich:
        assert loc.line is None, loc
        assert place.match(loc.field_meta["kbagent/location"]), loc
        assert loc.path.endswith(".pdf") == loc.field_meta["kbagent/location"].startswith("p")
    plain = [loc for loc in locations if loc.path.endswith((".md", ".html"))]
    assert plain and all(isinstance(loc.line, int) and loc.line >= 1 for loc in plain)
    assert all(loc.field_meta is None for loc in plain)
    said = "\n".join(c.content.text for u in done for c in u.content)
    for loc in rich:
        assert f"{loc.path} {loc.field_meta['kbagent/location']}" in said, said
    refs = text.split("\n\nReferences\n", 1)[1].splitlines()
    deck = [r for r in refs if ".pdf" in r or ".pptx" in r]
    assert deck, refs
    for r in deck:
        assert re.search(r"\.(pdf|pptx) (p\.\d+|pp\.\d+|slides? \d+)", r), r
        assert not re.search(r"\.(pdf|pptx):\d", r), r
    for r in refs:
        if r not in deck:
            assert re.search(r"\.(md|html):\d+-\d+$", r), r
