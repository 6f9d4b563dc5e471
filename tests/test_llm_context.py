"""A model whose context cannot hold a run's first prompt is refused with the number
of tokens that prompt needs (issue 46), on the real bundled GGUF; and a larger
``n_ctx`` than the model was trained on is no larger window. Marked ``slow``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _kbagent(home: Path, *args: str, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
    import os

    full = {**os.environ, "KBAGENT_HOME": str(home), **(env or {})}
    return subprocess.run([sys.executable, "-m", "kbagent", *args], capture_output=True,
                          text=True, env=full, timeout=600)


def test_a_context_too_small_for_the_first_prompt_is_refused_with_the_tokens_needed(
        sample_home: Path, kb_home: Path) -> None:
    shutil.copytree(sample_home, kb_home, dirs_exist_ok=True)
    res = _kbagent(kb_home, "ask", "--kb", "sample", "--model", "bundled", "--mode", "rag",
                   "What is the retry budget of Kestrel Gateway?",
                   env={"KBAGENT_N_CTX": "256"})
    assert res.returncode != 0, res.stdout
    said = res.stdout + res.stderr
    assert "context of 256 tokens is too small" in said, said
    needed = int(said.split("first prompt needs ")[1].split(" ")[0].replace(",", ""))
    assert needed > 256  # the number is the prompt's, not the window's
    assert "Traceback" not in said


def test_the_same_question_is_answered_when_the_context_holds_it(
        sample_home: Path, kb_home: Path) -> None:
    """The refusal comes from the size alone: with the default n_ctx the same call runs."""
    shutil.copytree(sample_home, kb_home, dirs_exist_ok=True)
    res = _kbagent(kb_home, "ask", "--kb", "sample", "--model", "bundled", "--mode", "rag",
                   "What is the retry budget of Kestrel Gateway?")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "too small" not in res.stdout + res.stderr


def test_the_window_is_at_most_the_trained_context(tmp_path: Path) -> None:
    """A GGUF that says it was trained on 512 tokens gets a 512-token window even when
    n_ctx asks for 8192 (positions past 512 are garbage to it)."""
    import gguf

    from kbagent.agent.llm.llama import LlamaCppLLM, bundled_model_path

    copy = tmp_path / "short.gguf"
    shutil.copyfile(bundled_model_path(), copy)
    reader = gguf.GGUFReader(copy, "r+")
    arch = reader.fields["general.architecture"]
    name = bytes(arch.parts[arch.data[0]]).decode()
    field = reader.fields[f"{name}.context_length"]
    field.parts[field.data[0]][0] = 512
    del reader  # flushes the memory map
    llm = LlamaCppLLM(copy, n_ctx=8192)
    try:
        assert llm.trained_context == 512
        assert llm.context_length == 512
    finally:
        llm.close()
    default = LlamaCppLLM(bundled_model_path(), n_ctx=8192)
    try:
        assert default.context_length == 8192  # trained on 8192: nothing changes
    finally:
        default.close()

