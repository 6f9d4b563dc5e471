"""The agent's code_* tools (scripted LLM, real sample KB): results cite path:line and
every citation resolves to those lines on disk."""

from __future__ import annotations

import json

import pytest

from bench.disk_check import resolves
from kbagent.agent.events import Observation
from kbagent.agent.run.loop import Agent, AgentConfig
from kbagent.agent.run.state import AgentConfig as StateConfig
from kbagent.agent.tools.toolset import registry
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.settings import Settings
from tests.conftest import SAMPLE_KB
from tests.scripted_llm import ScriptedLLM

CODE_TOOLS = {"code_definition", "code_references", "code_callers", "code_outline"}


def step(tool: str, args: dict) -> str:
    return f"Thought: look it up\nAction: {tool}\nAction Input: {json.dumps(args)}"


@pytest.fixture
def kb(sample_settings):
    return KnowledgeBase(sample_settings, "sample")


def test_code_tools_are_in_full_mode_and_behind_a_setting_in_knowledge_mode(
        kb_home, monkeypatch):
    assert set(registry("full")) >= CODE_TOOLS
    assert not CODE_TOOLS & set(registry("knowledge"))
    assert set(registry("knowledge", code_tools=True)) >= CODE_TOOLS
    (kb_home).mkdir(parents=True, exist_ok=True)
    (kb_home / "config.toml").write_text("code_tools = true\n")
    assert StateConfig.from_settings(Settings.load()).code_tools is True
    monkeypatch.setenv("KBAGENT_CODE_TOOLS", "no")
    assert StateConfig.from_settings(Settings.load()).code_tools is False


def test_agent_code_tools_cite_lines_that_resolve_on_disk(kb):
    llm = ScriptedLLM([
        step("code_definition", {"symbol": "effective_delay"}),
        step("code_callers", {"symbol": "effective_delay"}),
        step("code_references", {"symbol": "MAX_RETRY_AFTER_S"}),
        step("code_outline", {"path": "engineering/src/cache_key.go"}),
        "Thought: done\nFinal Answer: It is defined in retry.py [1] and called at [2].",
    ])
    # grounding off: the ReAct loop's code tools (grounded, a two-clause question is
    # taken apart by the harness's searches)
    agent = Agent(llm, [kb], AgentConfig(mode="agent", search_first="off", tools="knowledge",
                                         code_tools=True, grounded=False))
    events = list(agent.run("Where is effective_delay defined and who calls it?"))
    obs = [e for e in events if isinstance(e, Observation)]
    assert [o.ok for o in obs] == [True] * 4, [o.text for o in obs]
    definition, callers, refs, outline = (o.text for o in obs)
    assert "[1] engineering/src/retry.py:116 (function effective_delay): def effective_delay(" \
        in definition
    assert "engineering/src/retry.py:269 (in call_with_retries):" in callers
    assert "delay = effective_delay(attempt_number, err.retry_after_s)" in callers
    assert "engineering/src/retry.py:262" in refs
    assert "engineering/src/cache_key.go:140 (function Key): func Key(" in outline
    result = events[-1].result
    refs_all = result.all_references.to_json()
    refs_all = [c for doc in refs_all for c in doc["chunks"]]
    assert {c["tool"] for c in refs_all} == CODE_TOOLS
    first = refs_all[0]
    assert (first["path"], first["start_line"], first["end_line"]) == (
        "engineering/src/retry.py", 116, 125)  # the definition's head, cited as a span
    assert all(resolves(str(SAMPLE_KB), c) for c in refs_all), [
        c for c in refs_all if not resolves(str(SAMPLE_KB), c)]
    assert [c.n for c in result.references.chunks()] == [1, 2]


def test_code_tool_failures_are_observations(kb):
    llm = ScriptedLLM([
        step("code_definition", {"symbol": "no_such_function"}),
        step("code_outline", {"path": "engineering/architecture_overview.md"}),
        "Thought: done\nFinal Answer: Not found.",
    ])
    agent = Agent(llm, [kb], AgentConfig(mode="agent", search_first="off", tools="full"))
    obs = [e for e in agent.run("Where is no_such_function?") if isinstance(e, Observation)]
    assert "No definitions of 'no_such_function'" in obs[0].text
    assert not obs[1].ok and "not a source file" in obs[1].text
