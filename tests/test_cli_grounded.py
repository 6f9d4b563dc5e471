"""Grounded answers through ``kbagent ask`` (the product default), with the scripted
LLM standing in for the model: what a person sees when the harness abstains, repairs
a sentence, or answers about itself."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import kbagent.agent.llm as llm_module
from kbagent.cli import app
from tests.scripted_llm import ScriptedLLM

runner = CliRunner()


@pytest.fixture
def script(monkeypatch, sample_settings):
    monkeypatch.setenv("KBAGENT_SHORT_ANSWER", "harness")  # the script plays no short-answer call
    monkeypatch.delenv("KBAGENT_GROUNDED", raising=False)  # the default: grounded
    holder: dict = {}

    def use(*replies: str) -> ScriptedLLM:
        holder["llm"] = ScriptedLLM(list(replies))
        return holder["llm"]

    monkeypatch.setattr(llm_module, "load_llm", lambda settings: holder["llm"])
    return use


def test_unanswerable_question_says_the_knowledge_base_does_not_say(script):
    llm = script("The Wi-Fi password is hunter2 [1].")
    res = runner.invoke(app, ["ask", "What is the Wi-Fi password at the Portland office?",
                              "--json"])
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["abstained"] is True and "hunter2" not in data["answer"]
    # "password" is an ordinary word, not a named thing: no "never mentions" reason (issue 22)
    assert data["answer"].startswith("The knowledge base does not say")
    assert "never mentions" not in data["answer"]
    assert llm.calls == []


def test_a_corrected_sentence_is_reported_under_the_answer(script):
    script("Kestrel's gross margin in Q3 2026 was 68.9% [1].")
    res = runner.invoke(app, ["ask", "What was Kestrel's gross margin in Q3 2026?",
                              "--mode", "rag"])
    assert res.exit_code == 0, res.stderr
    assert "68.9%" not in res.stdout and "66.2%" in res.stdout
    assert "✎ corrected:" in res.stderr and "68.9%" in res.stderr


def test_who_are_you_is_answered_from_facts(script):
    llm = script("I'm a kabalist.")
    res = runner.invoke(app, ["ask", "who are you?"])
    assert res.exit_code == 0, res.stderr
    assert "I'm kbagent" in res.stdout and "kabalist" not in res.stdout
    assert llm.calls == []
