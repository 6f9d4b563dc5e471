"""``kbagent batch``: input formats, resume, bad lines, failures, Ctrl-C, traces and
replay. The scripted LLM stands in for the model's answers (rag mode: the
harness searches the real sample KB, the script writes the answer)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kbagent.agent.llm as llm_module
from kbagent.agent.llm.base import Message
from kbagent.batch import parse_questions, question_id
from kbagent.cli import app
from kbagent.errors import BackendError, BadInputError
from tests.scripted_llm import ScriptedLLM

runner = CliRunner()
QUESTIONS = ["What is the default TTL for prompt cache entries?",
             "Who is the CEO of Kestrel Systems?",
             "Which port does the gateway listen on?"]


def answer_to(messages: list[Message]) -> str:
    """A reply naming the question it answers, so lines can be matched up."""
    q = messages[-1].content.rsplit("Question:", 1)[-1].strip().splitlines()[0]
    if "FAIL" in q:
        raise BackendError("the scripted model broke down")
    return f"Answer for: {q}"


@pytest.fixture
def scripted(monkeypatch, sample_settings):
    monkeypatch.setenv("KBAGENT_SHORT_ANSWER", "harness")  # the script plays no short-answer call
    llm = ScriptedLLM([answer_to] * 50)
    monkeypatch.setattr(llm_module, "load_llm", lambda settings: llm)
    return llm


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_text_file_answers_every_question_in_the_ask_json_shape(scripted, tmp_path):
    src = tmp_path / "q.txt"
    src.write_text("# sample questions\n\n" + "\n".join(QUESTIONS) + "\n")
    out = tmp_path / "a.jsonl"
    res = runner.invoke(app, ["batch", str(src), "-o", str(out), "--mode", "rag"])
    assert res.exit_code == 0, res.stderr
    recs = records(out)
    assert [r["id"] for r in recs] == [question_id(q) for q in QUESTIONS]
    for r, q in zip(recs, QUESTIONS, strict=True):
        assert r["error"] is None and r["question"] == q and r["mode"] == "rag"
        assert r["answer"].startswith("Answer for:") and q.rstrip("?") in r["answer"]
        assert {"steps", "references", "usage", "status"} <= set(r)
    assert len(scripted.calls) == 3  # the model was loaded once and asked three times
    assert "answered" in res.stderr and "3" in res.stderr  # the summary table


def test_resume_skips_answered_ids_and_retries_failed_ones(scripted, tmp_path):
    src = tmp_path / "q.jsonl"
    src.write_text("".join(json.dumps({"id": f"x{i}", "question": q}) + "\n"
                           for i, q in enumerate(QUESTIONS)))
    out = tmp_path / "a.jsonl"
    done = {"id": "x0", "error": None, "answer": "from before"}
    failed = {"id": "x1", "error": "boom", "question": QUESTIONS[1]}
    out.write_text(json.dumps(done) + "\n" + json.dumps(failed) + "\n" + '{"id": "x2", "err')
    res = runner.invoke(app, ["batch", str(src), "-o", str(out), "--mode", "rag"])
    assert res.exit_code == 0, res.stderr
    recs = records(out)  # a torn last line and the failed line were dropped
    assert [r["id"] for r in recs] == ["x0", "x1", "x2"]
    assert recs[0]["answer"] == "from before"
    assert all(r["error"] is None for r in recs)
    assert len(scripted.calls) == 2


def test_bad_lines_and_unknown_kb_are_recorded_and_the_run_goes_on(scripted, tmp_path):
    src = tmp_path / "q.jsonl"
    lines = [json.dumps({"id": "ok", "question": QUESTIONS[0]}), "{not json",
             json.dumps({"id": "nokb", "question": QUESTIONS[1], "kb": "nope"}),
             json.dumps({"id": "empty", "question": "  "}),
             json.dumps({"id": "sneaky", "question": QUESTIONS[2], "groups": ["executives"]}),
             json.dumps({"id": "badmode", "question": QUESTIONS[2], "mode": "fast"}),
             json.dumps({"id": "ok", "question": "again"})]
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "a.jsonl"
    res = runner.invoke(app, ["batch", str(src), "-o", str(out), "--mode", "rag"])
    assert res.exit_code == 0, res.stderr
    recs = {r["id"]: r for r in records(out)}
    assert recs["ok"]["error"] is None
    assert "line 2: not a JSON object" in recs["line-2"]["error"]
    assert "unknown KB 'nope'" in recs["nokb"]["error"]
    assert "non-empty string" in recs["empty"]["error"]
    assert "cannot set who is asking" in recs["sneaky"]["error"]
    assert "unknown mode 'fast'" in recs["badmode"]["error"]
    assert "duplicate id 'ok'" in recs["line-7"]["error"]
    assert len(scripted.calls) == 1


def test_stdin_and_stdout(scripted):
    res = runner.invoke(app, ["batch", "-", "--mode", "rag", "--quiet"],
                        input=QUESTIONS[0] + "\n")
    assert res.exit_code == 0, res.stderr
    (rec,) = [json.loads(x) for x in res.stdout.splitlines()]
    assert rec["id"] == question_id(QUESTIONS[0]) and rec["error"] is None


def test_a_failing_question_is_recorded_and_only_all_failing_is_an_error(scripted, tmp_path):
    src = tmp_path / "q.txt"
    src.write_text(f"{QUESTIONS[0]}\nplease FAIL now\n{QUESTIONS[1]}\n")
    out = tmp_path / "a.jsonl"
    res = runner.invoke(app, ["batch", str(src), "-o", str(out), "--mode", "rag"])
    assert res.exit_code == 0, res.stderr
    recs = records(out)
    assert [r["error"] is None for r in recs] == [True, False, True]
    assert "scripted model broke down" in recs[1]["error"]
    src.write_text("FAIL one\nFAIL two\n")
    res = runner.invoke(app, ["batch", str(src), "-o", str(tmp_path / "b.jsonl"),
                              "--mode", "rag"])
    assert res.exit_code == 1
    assert "every question failed (2)" in res.stderr


@pytest.mark.parametrize(("content", "message"), [("", "no questions in"),
                                                  ("\n# only a comment\n", "no questions in")])
def test_unusable_input_is_a_one_line_error(tmp_path, content, message):
    src = tmp_path / "q.txt"
    src.write_text(content)
    res = runner.invoke(app, ["batch", str(src)])
    assert res.exit_code == 2 and message in res.stderr
    res = runner.invoke(app, ["batch", str(tmp_path / "missing.txt")])
    assert res.exit_code == 3 and "no such question file" in res.stderr


def test_parse_questions_formats():
    items = parse_questions(["What?\n", "  \n", "Why   not?\n"], "x")
    assert [i.question for i in items] == ["What?", "Why not?"]
    assert items[0].id == question_id("what?")
    items = parse_questions(['{"question": "a", "kb": "k", "mode": "rag", "tools": "full"}'], "x")
    assert (items[0].kb, items[0].mode, items[0].tools) == (["k"], "rag", "full")
    with pytest.raises(BadInputError):
        parse_questions(["", "# nothing"], "x")


def test_trace_records_prompts_and_replay_renders_the_same_answer(scripted, tmp_path):
    src = tmp_path / "q.jsonl"
    src.write_text(json.dumps({"id": "t1", "question": QUESTIONS[0]}) + "\n")
    out, traces = tmp_path / "a.jsonl", tmp_path / "traces"
    res = runner.invoke(app, ["batch", str(src), "-o", str(out), "--mode", "rag",
                              "--trace", str(traces)])
    assert res.exit_code == 0, res.stderr
    trace = traces / "t1.jsonl"
    recs = [json.loads(x) for x in trace.read_text().splitlines()]
    kinds = [r["kind"] for r in recs]
    assert kinds[0] == "header" and kinds[-1] == "end" and "llm_call" in kinds
    header = recs[0]
    assert header["question"] == QUESTIONS[0] and header["mode"] == "rag"
    assert header["kbs"][0]["name"] == "sample" and header["kbs"][0]["generation"]
    assert header["settings"]["max_steps"] >= 1 and header["llm"]["name"] == "scripted"
    call = next(r for r in recs if r["kind"] == "llm_call")
    assert call["messages"] == [m.to_dict() for m in scripted.calls[0]["messages"]]
    assert call["output"].startswith("Answer for:")
    assert call["completion"]["completion_tokens"] > 0
    events = [r["event"]["type"] for r in recs if r["kind"] == "event"]
    assert events[0] == "step" and "action" in events and "observation" in events
    answer = records(out)[0]["answer"]
    res = runner.invoke(app, ["replay", str(trace)])
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith(answer.split("[")[0].strip())
    assert "→ kb_search" in res.stderr and "References" in res.stdout


def test_replay_refuses_what_is_not_a_trace(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"kind": "event"}\n')
    res = runner.invoke(app, ["replay", str(bad)])
    assert res.exit_code == 2 and "not a kbagent trace" in res.stderr
    res = runner.invoke(app, ["replay", str(tmp_path / "none.jsonl")])
    assert res.exit_code == 3


_SLOW_BATCH = """
import sys
import kbagent.agent.llm as m
from tests.scripted_llm import ScriptedLLM
llm = ScriptedLLM(["A slow answer that takes its time to stream out. " * 6] * 20,
                  piece_delay=0.02)
m.load_llm = lambda settings: llm
from kbagent.cli import app
app(["batch", sys.argv[1], "-o", sys.argv[2], "--mode", "rag", "--quiet"])
"""


def test_ctrl_c_in_a_real_process_leaves_valid_jsonl(sample_settings, tmp_path):
    src = tmp_path / "q.txt"
    src.write_text("".join(f"question number {i} about prompt caching\n" for i in range(20)))
    out = tmp_path / "a.jsonl"
    env = {**os.environ, "KBAGENT_HOME": str(sample_settings.home)}
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_BATCH, str(src), str(out)], env=env,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not out.exists() or not out.read_text().strip()):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "run the same command again" in err
    recs = records(out)
    assert 1 <= len(recs) < 20 and all(r["error"] is None for r in recs)


def test_ask_trace_then_replay_quiet(scripted, tmp_path):
    traces = tmp_path / "t"
    res = runner.invoke(app, ["ask", QUESTIONS[1], "--kb", "sample", "--mode", "rag",
                              "--quiet", "--trace", str(traces)])
    assert res.exit_code == 0, res.stderr
    (trace,) = traces.glob("*.jsonl")
    assert trace.name.endswith(question_id(QUESTIONS[1]) + ".jsonl")
    assert f"trace: {trace}" in res.stderr.replace("\n", "")
    replayed = runner.invoke(app, ["replay", str(trace), "--quiet"])
    assert replayed.exit_code == 0, replayed.stderr
    assert replayed.stdout.strip() == res.stdout.strip()
