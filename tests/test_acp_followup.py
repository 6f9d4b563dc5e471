"""A follow-up through ``kbagent acp`` (issue 45, finding 10): the real server in a
subprocess, the scripted model, grounded answers as a user gets them. The session's
earlier turns steer the follow-up's search and never show up in its answer."""

from __future__ import annotations

import asyncio

import pytest
from acp import text_block
from acp.schema import ToolCallStart

import tests.test_server_acp as acp_tests
from kbagent.kb.ingest import Ingestor
from kbagent.settings import Settings
from tests.test_conversation import GLUE, PROJECTS, Q1, Q2, Q3, page


@pytest.fixture
def home(kb_home, make_folder, embedder, monkeypatch):
    folder = make_folder({f"projects/{name.lower()}.md": page(name, *facts)
                          for name, facts in PROJECTS.items()})
    Ingestor(Settings.load(), "docs", embedder=embedder).run(folder)
    plain = acp_tests.server_env
    monkeypatch.setattr(acp_tests, "server_env", lambda *args: {
        **plain(*args), "KBAGENT_GROUNDED": "true", "KBAGENT_SHORT_ANSWER": "harness"})
    return kb_home


def test_acp_follow_ups_search_the_subject_and_answer_only_the_new_question(home):
    async def scenario():
        turns = []
        async with acp_tests.acp_agent(home, "--kb", "docs") as (conn, sid, client):
            for question in (Q1, Q2, Q3):
                client.updates.clear()
                res = await conn.prompt(session_id=sid, prompt=[text_block(question)])
                assert res.stop_reason == "end_turn"
                queries = [u.raw_input["query"] for u in client.updates
                           if isinstance(u, ToolCallStart) and u.title.startswith("kb_search")]
                turns.append((client.text().split("\n\nReferences\n")[0], queries))
        return turns

    (a1, _), (a2, q2), (a3, _) = asyncio.run(scenario())
    assert "Northwind Freight" in a1
    assert "Project Heron" in q2[0] and "2 June 2025" in a2
    for answer in (a2, a3):
        assert GLUE not in answer and Q1 not in answer and "answered:" not in answer
    assert Q2 not in a3 and a2 not in a3  # nothing nests
