"""A trace is enough to reproduce an answer offline with the same model: the
real bundled GGUF answers through ``batch --trace`` in one process, and
``replay --rerun`` in a fresh process gets the same answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_replay_rerun_reproduces_a_real_model_answer(sample_settings, tmp_path):
    env = {**os.environ, "KBAGENT_HOME": str(sample_settings.home)}
    src = tmp_path / "q.jsonl"
    src.write_text(json.dumps({"id": "ttl", "question": "What is the default TTL for prompt "
                                                         "cache entries?"}) + "\n")
    out, traces = tmp_path / "a.jsonl", tmp_path / "traces"
    cmd = [sys.executable, "-m", "kbagent"]
    run = subprocess.run([*cmd, "batch", str(src), "-o", str(out), "--kb", "sample", "--mode",
                          "rag", "--trace", str(traces), "--quiet"], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    answer = json.loads(out.read_text())["answer"]
    assert answer.strip()
    trace = traces / "ttl.jsonl"
    header = json.loads(trace.read_text().splitlines()[0])
    assert header["llm"]["model_path"].endswith(".gguf") and header["llm"]["model_bytes"] > 0
    rerun = subprocess.run([*cmd, "replay", str(trace), "--rerun"], env=env,
                           capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["reproduced"] is True and report["new"] == answer
