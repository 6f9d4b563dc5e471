"""``kbagent ask`` / ``kbagent ref`` through the CLI, with the scripted LLM standing in
for the model's decisions (the real model has its own smoke test)."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kbagent.agent.llm as llm_module
from kbagent.cli import app
from kbagent.errors import ExitCode
from tests.scripted_llm import ScriptedLLM

runner = CliRunner()


@pytest.fixture
def script(monkeypatch, sample_settings):
    """Make ``kbagent ask`` use a scripted LLM with the given replies."""
    monkeypatch.setenv("KBAGENT_SHORT_ANSWER", "harness")  # the script plays no short-answer call
    holder: dict = {}
    monkeypatch.setenv("KBAGENT_SEARCH_FIRST", "model")  # the script plays step 1 too

    def use(*replies: str) -> ScriptedLLM:
        holder["llm"] = ScriptedLLM(list(replies))
        return holder["llm"]

    monkeypatch.setattr(llm_module, "load_llm", lambda settings: holder["llm"])
    return use


SEARCH = 'Thought: Search.\nAction: kb_search\nAction Input: {"query": "default TTL prompt cache"}'
ANSWER = ("Thought: Found it.\nFinal Answer: The default TTL for prompt cache entries is 1 hour. "
          "The moon is made of cheese [1].")


def test_ask_streams_steps_on_stderr_and_answer_with_references_on_stdout(script):
    script(SEARCH, ANSWER)
    res = runner.invoke(app, ["ask", "What is the default cache TTL?", "--kb", "sample",
                              "--mode", "agent"])
    assert res.exit_code == 0, res.stderr
    out, err = res.stdout, res.stderr
    assert out.startswith("The default TTL for prompt cache entries is 1 hour [")
    assert "\nReferences\n[" in out and "engineering/design/prompt_caching.md:" in out
    assert "▸ step 1" in err and "thought: Search." in err and "→ kb_search" in err
    assert "← 5 hits" in err
    assert "⚠ not supported by its cited sources: The moon is made of cheese" in err
    assert "Search." not in out  # thoughts never reach stdout


def test_ask_json_has_the_documented_shape(script):
    script(SEARCH, ANSWER)
    res = runner.invoke(app, ["ask", "What is the default cache TTL?", "--mode", "agent",
                              "--json"])
    data = json.loads(res.stdout)
    for key in ("question", "answer", "steps", "references", "usage", "mode", "unsupported"):
        assert key in data
    s = data["steps"][0]
    for key in ("thought", "action", "args", "observation", "tokens", "ms"):
        assert key in s
    assert s["action"] == "kb_search" and s["args"] == {"query": "default TTL prompt cache",
                                                        "top_k": 5}
    assert data["unsupported"] == ["The moon is made of cheese [1]."]
    ref = data["references"][0]
    assert set(ref) == {"kb", "path", "chunks"}
    assert res.stderr == ""


def test_ask_jsonl_streams_typed_events(script):
    script(SEARCH, ANSWER)
    res = runner.invoke(app, ["ask", "What is the default cache TTL?", "--mode", "agent",
                              "--jsonl"])
    types = [json.loads(line)["type"] for line in res.stdout.splitlines()]
    assert types[0] == "step" and types[-1] == "final"
    for t in ("thought", "action", "observation", "answer"):
        assert t in types
    assert types.index("action") < types.index("observation") < types.index("answer")


def test_quiet_prints_only_the_answer(script):
    script(SEARCH, ANSWER)
    res = runner.invoke(app, ["ask", "TTL?", "--mode", "agent", "--quiet"])
    assert res.stdout.strip().startswith("The default TTL") and "References" not in res.stdout
    assert res.stderr == ""


def test_all_references_lists_every_chunk_seen(script):
    script(SEARCH, ANSWER)
    res = runner.invoke(app, ["ask", "TTL?", "--mode", "agent", "--json", "--all-references"])
    data = json.loads(res.stdout)
    shown = set(re.findall(r"^\[(\d+)\]", data["steps"][0]["observation"], re.M))
    listed = {str(c["n"]) for d in data["references"] for c in d["chunks"]}
    assert listed == shown and len(listed) > 1


def test_ref_prints_the_cited_lines_of_the_last_answer(script, sample_settings):
    script(SEARCH, ANSWER)
    res = runner.invoke(app, ["ask", "TTL?", "--mode", "agent", "--json"])
    ref1 = json.loads(res.stdout)["references"][0]["chunks"][0]
    res = runner.invoke(app, ["ref", str(ref1["n"])])
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith(f"[{ref1['n']}] ") and ref1["path"] in lines[0]
    source = json.loads(runner.invoke(app, ["kbs", "--json"]).stdout)[0]["source"]
    file_lines = Path(source, ref1["path"]).read_text(encoding="utf-8").split("\n")
    first_num = int(lines[1].split("│")[0])
    assert first_num == ref1["start_line"]
    assert lines[1].split("│", 1)[1].strip() == file_lines[first_num - 1].strip()
    res = runner.invoke(app, ["ref", "99"])
    assert res.exit_code == ExitCode.NOT_FOUND and "no reference [99]" in res.stderr


def test_ask_open_and_editor(script, tmp_path, monkeypatch):
    script(SEARCH, ANSWER)
    res = runner.invoke(app, ["ask", "TTL?", "--mode", "agent", "--open", "1"])
    assert res.exit_code == 0
    assert "\n[1] " in res.stdout and "│" in res.stdout
    log = tmp_path / "editor.log"
    editor = tmp_path / "fake-editor"
    editor.write_text(f"#!/bin/sh\necho \"$@\" > {log}\n")
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("EDITOR", str(editor))
    res = runner.invoke(app, ["ref", "1", "--editor"])
    assert res.exit_code == 0, res.stderr
    args = log.read_text().split()
    assert args[0].startswith("+") and args[1].endswith(".md")


def test_ref_without_an_answer(kb_home):
    res = runner.invoke(app, ["ref", "1"])
    assert res.exit_code == ExitCode.NOT_FOUND and "no answer yet" in res.stderr


def test_ask_bad_inputs(script, tmp_path):
    script()
    res = runner.invoke(app, ["ask", "   ", "--mode", "agent"])
    assert res.exit_code == ExitCode.BAD_INPUT and "empty question" in res.stderr
    res = runner.invoke(app, ["ask", "x", "--json", "--jsonl"])
    assert res.exit_code == ExitCode.BAD_INPUT


def test_missing_model_file_is_a_clear_error(sample_settings, tmp_path):
    res = runner.invoke(app, ["ask", "x", "--model", str(tmp_path / "nope.gguf")])
    assert res.exit_code == ExitCode.NOT_FOUND and "model file not found" in res.stderr
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a model")
    res = runner.invoke(app, ["ask", "x", "--model", str(bogus)])
    assert res.exit_code == ExitCode.BAD_INPUT and "is not a GGUF model file" in res.stderr


def test_unreachable_server_is_a_backend_error(sample_settings):
    res = runner.invoke(app, ["ask", "What is the TTL?", "--mode", "agent", "--llm-url",
                              "http://127.0.0.1:9/v1"])
    assert res.exit_code == ExitCode.BACKEND
    assert "cannot reach LLM server at http://127.0.0.1:9/v1" in res.stdout + res.stderr
