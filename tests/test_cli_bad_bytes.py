"""Issue 45: what a person or a script can feed the CLI that is not text, the files
it writes, and the notes under an answer.

* 6c: an argument holding bytes that are not UTF-8 (``$'\\xff'``: Python gets lone
  surrogates) and standard input that is not UTF-8 are one line on stderr and exit 2
  (bad input), never a traceback; free text (a search query) is still searched.
* 7: files named as outputs hold answers and document text: 0600 whatever the umask,
  also when an existing file made wider before is resumed.
* 14b: a looping model that repeats a sentence the grounding check removes gets one
  "✎ removed" line, and is stopped as looping.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kbagent.agent.llm as llm_module
from kbagent.cli import app
from kbagent.errors import ExitCode
from tests.scripted_llm import ScriptedLLM

runner = CliRunner()


def kbagent(home: Path, *args: bytes, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """The real ``kbagent`` command with raw bytes for arguments (undecodable argv bytes
    only exist in a real process)."""
    return subprocess.run([sys.executable.encode(), b"-m", b"kbagent", *args], input=stdin,
                          capture_output=True, timeout=300,
                          env={**os.environ, "KBAGENT_HOME": str(home)})


# ----------------------------------------------------------------- 6c: bad bytes
@pytest.mark.parametrize(("args", "named"), [
    ([b"code", b"def", b"\xff"], b"argument SYMBOL"),
    ([b"code", b"refs", b"x\xffy"], b"argument SYMBOL"),
    ([b"code", b"callers", b"\xff"], b"argument SYMBOL"),
    ([b"code", b"outline", b"src/\xff.py"], b"argument PATH"),
    ([b"code", b"def", b"main", b"--kb", b"sa\xffmple"], b"option --kb"),
    ([b"kbs", b"rm", b"\xfe"], b"argument NAME"),
], ids=["def", "refs", "callers", "outline", "kb-option", "kbs-rm"])
def test_an_argument_that_is_not_utf8_is_one_line_and_exit_2(sample_settings, args, named):
    res = kbagent(sample_settings.home, *args)
    assert res.returncode == ExitCode.BAD_INPUT, res.stderr
    assert res.stdout == b""
    assert b"Traceback" not in res.stderr
    (line,) = res.stderr.decode().splitlines()
    assert line.startswith("kbagent: error: ") and "is not UTF-8 text (byte 0x" in line
    assert named.decode() in line


def test_undecodable_stdin_for_batch_is_one_line_and_exit_2(sample_settings):
    res = kbagent(sample_settings.home, b"batch", b"-", b"--quiet", stdin=b"\xff x\n")
    assert res.returncode == ExitCode.BAD_INPUT, res.stderr
    assert res.stdout == b""
    assert b"Traceback" not in res.stderr
    (line,) = res.stderr.decode().splitlines()
    assert line == "kbagent: error: standard input is not UTF-8 text (line 1: byte 0xff)"


def test_undecodable_stdin_through_cli_runner(sample_settings):
    res = runner.invoke(app, ["batch", "-", "--quiet"], input=b"What is the TTL?\n\xe9t\xe9\n")
    assert res.exit_code == ExitCode.BAD_INPUT
    assert res.stdout == ""
    assert res.stderr.strip() == ("kbagent: error: standard input is not UTF-8 text "
                                  "(line 2: byte 0xe9)")


def test_a_lone_surrogate_escape_in_a_jsonl_question_is_that_line_s_error(sample_settings,
                                                                          monkeypatch):
    monkeypatch.setattr(llm_module, "load_llm", lambda settings: ScriptedLLM(["x"] * 5))
    line = json.dumps({"id": "a", "question": "what is \udcff?"})  # "\\udcff" in the file
    res = runner.invoke(app, ["batch", "-", "--quiet", "--mode", "direct"], input=line + "\n")
    assert res.exit_code == 1  # every question failed: still one line, no traceback
    (rec,) = [json.loads(x) for x in res.stdout.splitlines()]
    assert rec["id"] == "a" and "lone surrogate" in rec["error"]
    assert "every question failed (1)" in res.stderr


def test_a_search_query_that_is_not_utf8_is_still_searched(sample_settings):
    res = runner.invoke(app, ["search", "\udcffcache", "--mode", "bm25", "-k", "1", "--json"])
    assert res.exit_code == 0, res.stderr
    assert len(json.loads(res.stdout)) == 1


# ------------------------------------------------------- 7: private output files
def mode(p: Path) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


@pytest.fixture
def umask000():
    old = os.umask(0)
    yield
    os.umask(old)


@pytest.fixture
def scripted(monkeypatch, sample_settings):
    monkeypatch.setenv("KBAGENT_SHORT_ANSWER", "harness")
    llm = ScriptedLLM(["The default TTL is 1 hour [1]."] * 20)
    monkeypatch.setattr(llm_module, "load_llm", lambda settings: llm)
    return llm


def test_batch_output_is_private_new_and_resumed(scripted, umask000, tmp_path):
    src = tmp_path / "q.txt"
    src.write_text("What is the default TTL for prompt cache entries?\n")
    out = tmp_path / "new.jsonl"
    res = runner.invoke(app, ["batch", str(src), "-o", str(out), "--mode", "rag", "--quiet"])
    assert res.exit_code == 0, res.stderr
    assert res.stdout == ""
    assert mode(out) == 0o600 and "1 hour" in out.read_text()
    old = tmp_path / "old.jsonl"  # a file from before, 0666: resuming tightens it
    old.write_text(json.dumps({"id": "other", "error": None, "answer": "from before"}) + "\n")
    os.chmod(old, 0o666)
    res = runner.invoke(app, ["batch", str(src), "-o", str(old), "--mode", "rag", "--quiet"])
    assert res.exit_code == 0, res.stderr
    assert mode(old) == 0o600 and len(old.read_text().splitlines()) == 2


def test_eval_qa_saved_answers_and_html_are_private(scripted, umask000, tmp_path):
    questions = tmp_path / "qa.jsonl"
    questions.write_text(json.dumps({"id": "ttl", "question": "What is the default TTL for "
                                     "prompt cache entries?", "answer": "1 hour"}) + "\n")
    saved, page = tmp_path / "answers.jsonl", tmp_path / "report.html"
    res = runner.invoke(app, ["eval", "qa", str(questions), "--kb", "sample", "--compare-modes",
                              "rag", "--save-answers", str(saved), "--html", str(page),
                              "--quiet"])
    assert res.exit_code == 0, res.stderr
    assert "correct" in res.stdout
    assert mode(saved) == 0o600 and "1 hour" in saved.read_text()
    assert mode(page) == 0o600 and "1 hour" in page.read_text()
    os.chmod(saved, 0o666)
    os.chmod(page, 0o644)  # written again over a wider file: tightened
    res = runner.invoke(app, ["eval", "qa", str(questions), "--kb", "sample", "--compare-modes",
                              "rag", "--save-answers", str(saved), "--html", str(page),
                              "--quiet"])
    assert res.exit_code == 0, res.stderr
    assert mode(saved) == 0o600 and mode(page) == 0o600


# ------------------------------------------- 14b: one note per repeated repair
@pytest.mark.parametrize(("question", "reply", "note"), [
    ("What is the default TTL for prompt cache entries?",
     "The default TTL for prompt cache entries is 1 hour. "
     + "Zanzibar Quortex approved this in 1999. " * 33, "✎ removed: “Zanzibar Quortex"),
    ("What was Kestrel's gross margin in Q3 2026?",
     "Kestrel's gross margin in Q3 2026 was 68.9% [1]. " * 12, "✎ corrected: “Kestrel's"),
], ids=["removed", "corrected"])
def test_a_looping_model_s_repaired_sentence_is_repaired_and_reported_once(
        monkeypatch, sample_settings, question, reply, note):
    monkeypatch.setenv("KBAGENT_SHORT_ANSWER", "harness")
    monkeypatch.delenv("KBAGENT_GROUNDED", raising=False)  # the default: grounded
    llm = ScriptedLLM([reply] * 3)
    monkeypatch.setattr(llm_module, "load_llm", lambda settings: llm)
    res = runner.invoke(app, ["ask", question, "--kb", "sample", "--mode", "rag"])
    assert res.exit_code == 0, res.stderr
    assert "Zanzibar" not in res.stdout and "68.9%" not in res.stdout
    notes = [x for x in res.stderr.splitlines() if x.startswith("✎")]
    assert len(notes) == 1, notes
    assert notes[0].startswith(note)
    assert res.stdout.count(" says: “") <= 2  # the lead quote and one correction, no more
