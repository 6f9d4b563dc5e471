"""Choosing the answer policy (issue 44): ``answer_policy = auto`` follows the size the
model declares (its GGUF's ``general.size_label``, else its tensors counted, or the
``llm_size`` setting for a server's model), never its file name; and the model-authored
policy's mechanics on the real bundled GGUF."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbagent.agent.events import Final
from kbagent.agent.run.policy import MODEL_POLICY_MIN_PARAMS, declared_size, model_writes
from kbagent.agent.run.state import AgentConfig
from kbagent.errors import BadInputError
from kbagent.settings import Settings
from tests.models_support import write_gguf


class _FileModel:
    """A model that is a GGUF file on disk, as llama.cpp's backend is to the policy."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.name


@pytest.mark.parametrize("label, writes", [("1.5B", True), ("7B", True), ("8x7B", True),
                                           ("500M", False), ("135M", False)])
def test_auto_follows_the_size_the_gguf_declares(tmp_path: Path, label: str,
                                                 writes: bool) -> None:
    # the file name says the opposite of the label: only the label counts
    path = tmp_path / ("qwen-7b-instruct.gguf" if not writes else "tiny-135m.gguf")
    write_gguf(path, size_label=label)
    assert model_writes(AgentConfig(answer_policy="auto"), _FileModel(path)) is writes


def test_without_a_label_the_tensors_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    write_gguf(path, size_label=None, rows=4, cols=256)
    assert declared_size(_FileModel(path)) == 4 * 256
    assert not model_writes(AgentConfig(answer_policy="auto"), _FileModel(path))


def test_a_servers_model_is_sized_by_the_setting(tmp_path: Path) -> None:
    class Server:
        name = "remote"

    assert not model_writes(AgentConfig(answer_policy="auto"), Server())  # unknown: harness
    assert model_writes(AgentConfig(answer_policy="auto", llm_size="7B"), Server())
    assert not model_writes(AgentConfig(answer_policy="auto", llm_size="360M"), Server())
    with pytest.raises(BadInputError, match="llm_size 'big' is no model size"):
        model_writes(AgentConfig(answer_policy="auto", llm_size="big"), Server())
    assert MODEL_POLICY_MIN_PARAMS == 1_000_000_000


def test_an_explicit_policy_is_kept_whatever_the_size(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    write_gguf(path, size_label="7B")
    assert not model_writes(AgentConfig(answer_policy="harness"), _FileModel(path))
    assert model_writes(AgentConfig(answer_policy="model", llm_size="135M"), _FileModel(path))


def test_the_setting_is_read_and_a_bad_value_is_named(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBAGENT_ANSWER_POLICY", "model")
    settings = Settings.load(home=tmp_path)
    assert AgentConfig.from_settings(settings).answer_policy == "model"
    assert AgentConfig().answer_policy == "harness"  # a bare config takes no model turn
    monkeypatch.setenv("KBAGENT_ANSWER_POLICY", "maybe")
    with pytest.raises(BadInputError, match="answer_policy"):
        Settings.load(home=tmp_path)


@pytest.mark.slow
def test_the_bundled_gguf_declares_135m_so_auto_keeps_the_harness() -> None:
    from kbagent.agent.llm.llama import LlamaCppLLM, bundled_model_path

    llm = LlamaCppLLM(bundled_model_path(), n_ctx=512)
    try:
        assert declared_size(llm) == 135_000_000
        assert not model_writes(AgentConfig(answer_policy="auto"), llm)
    finally:
        llm.close()


@pytest.mark.slow
def test_the_model_policy_runs_on_the_real_bundled_gguf(tmp_path: Path) -> None:
    """Mechanics only (the 135M model's words differ between machines): the draft
    streams, every sentence shown has a verdict, a failed check asks once more at most,
    and the run ends answered with its usage counted."""
    from kbagent.agent.events import StepStarted, ThoughtDelta
    from kbagent.agent.kinds import StepKind
    from kbagent.agent.llm.llama import LlamaCppLLM, bundled_model_path
    from kbagent.agent.run.loop import Agent
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor
    from kbagent.kb.knowledge_base import KnowledgeBase

    src = tmp_path / "docs"
    src.mkdir()
    (src / "cache.md").write_text("# Prompt cache\n\nEntries in the prompt cache expire "
                                  "after a TTL of 3600 seconds unless the client sets one.\n",
                                  encoding="utf-8")
    settings = Settings.load(home=tmp_path / "home")
    Ingestor(settings, "docs", embedder=load_embedder()).run(src)
    llm = LlamaCppLLM(bundled_model_path(), n_ctx=4096)
    try:
        agent = Agent(llm, [KnowledgeBase(settings, "docs")],
                      AgentConfig(mode="rag", answer_policy="model", final_max_tokens=64))
        events: list[Any] = list(agent.run("What is the default TTL of prompt cache entries?"))
    finally:
        llm.close()
    final = events[-1]
    assert isinstance(final, Final)
    result = final.result
    assert result.status == "answered" and result.answer.strip()
    answer_steps = [e for e in events if isinstance(e, StepStarted)
                    and e.kind == StepKind.ANSWER]
    assert 1 <= len(answer_steps) <= 2 + 2  # a draft, one more after a failed check
    assert any(isinstance(e, ThoughtDelta) and e.text for e in events)
    assert all(s.supported is not None or not s.cited for s in result.sentences)
    assert result.unsupported == [s.text for s in result.sentences if s.supported is False]
    assert result.usage.llm_calls == len(answer_steps)
    assert result.usage.completion_tokens > 0
