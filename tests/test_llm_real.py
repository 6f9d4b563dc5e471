"""The real bundled GGUF (SmolLM2-135M-Instruct) through llama.cpp: grammar compilation,
0 parse failures over varied and adversarial prompts, KV-cache reuse, and a CLI smoke test.
Marked ``slow``; still part of ``make test``."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from kbagent.agent.llm.base import Message, complete
from kbagent.agent.run import prompts
from kbagent.agent.run.react import ProtocolError, action_token_bound, parse_step, step_grammar
from kbagent.agent.tools.base import ToolContext
from kbagent.agent.tools.schema import ArgumentError, validate
from kbagent.agent.tools.toolset import registry, run_tool
from tests.conftest import ROOT

pytestmark = pytest.mark.slow
PROMPTS = [line for line in (ROOT / "tests/data/grammar_prompts.txt").read_text().splitlines()
           if line.strip() and not line.startswith("#")]


@pytest.fixture(scope="module")
def llm():
    from kbagent.agent.llm.llama import LlamaCppLLM, bundled_model_path

    model = LlamaCppLLM(bundled_model_path(), n_ctx=8192)
    yield model
    model.close()


def test_every_generated_grammar_compiles_in_llama_cpp():
    """An invalid GBNF crashes llama.cpp, so each variant runs in a child process."""
    code = textwrap.dedent("""
        from kbagent.agent.llm.llama import LlamaCppLLM, bundled_model_path
        from kbagent.agent.llm.base import Message, complete
        from kbagent.agent.run.react import step_grammar
        from kbagent.agent.tools.toolset import registry
        llm = LlamaCppLLM(bundled_model_path(), n_ctx=1024)
        msgs = [Message("user", "Search the knowledge base.")]
        for mode in ("knowledge", "full"):
            tools = registry(mode)
            variants = {
                "any": step_grammar(tools),
                "search-first": step_grammar({"kb_search": tools["kb_search"]},
                                             allow_final=False),
                "with-kb-enum": step_grammar(tools, kb_names=["eng", "hr"]),
            }
            for name, g in variants.items():
                c = complete(llm, msgs, grammar=g, max_tokens=24)
                assert c.text.startswith("Thought: "), (name, c.text)
                print(mode, name, "OK", flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count(" OK") == 6


def _check_step(text: str, tools) -> str:
    """'' if the step is valid, else what is wrong."""
    try:
        step = parse_step(text)
    except ProtocolError as e:
        return f"protocol: {e}"
    if step.final is not None:
        return "" if step.final.strip() else "empty final answer"
    if step.action not in tools:
        return f"unknown tool {step.action!r}"
    if step.args_error:
        return step.args_error
    try:
        validate(step.action, tools[step.action].parameters, step.args)
    except ArgumentError as e:
        return str(e)
    return ""


# 42 grammar-constrained steps of the real model over the full tool list (13 tools with
# the code tools): minutes on an idle 2-core machine, many more when it is shared
@pytest.mark.timeout(2400)
def test_real_model_steps_always_parse(llm, sample_settings, capsys):
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.kb.search import HybridSearcher

    tools = registry("full")
    kb = KnowledgeBase(sample_settings, "sample")
    grammar = step_grammar(tools, kb_names=["sample"])
    bound = action_token_bound(tools, ["sample"])
    system = prompts.system_prompt(["sample"], tools)
    failures, steps = [], 0
    for i, question in enumerate(PROMPTS):
        messages = [Message("system", system), Message("user", prompts.question_message(question))]
        for depth in range(2 if i < 10 else 1):
            c = complete(llm, messages, grammar=grammar, max_tokens=bound)
            steps += 1
            problem = _check_step(c.text, tools)
            if problem:
                failures.append((question, c.text, problem))
                break
            step = parse_step(c.text)
            if step.final is not None or depth == 1:
                break
            ctx = ToolContext({"sample": kb}, HybridSearcher([kb]),
                              __import__("kbagent.agent.answer.citations",
                                         fromlist=["CitationLedger"]).CitationLedger())
            args = validate(step.action, tools[step.action].parameters, step.args)
            out, _ = run_tool(tools[step.action], ctx, args)
            messages += [Message("assistant", c.text),
                         Message("user", prompts.observation_message(out.text, 1, 5))]
    with capsys.disabled():
        print(f"\n[grammar] {steps} steps over {len(PROMPTS)} prompts, "
              f"{len(failures)} parse failures")
    assert len(PROMPTS) >= 30
    assert failures == [], "\n".join(f"{q!r}: {p}\n{t}" for q, t, p in failures)


def test_consecutive_steps_reuse_the_kv_cache(llm):
    base = [Message("system", "You are terse."), Message("user", "Say hello.")]
    first = complete(llm, base, max_tokens=8)
    follow = [*base, Message("assistant", first.text), Message("user", "Now say goodbye.")]
    second = complete(llm, follow, max_tokens=8)
    assert second.prompt_tokens > first.prompt_tokens
    assert second.prompt_evaluated < second.prompt_tokens / 2  # only the new turn is evaluated


def test_cli_ask_smoke_with_the_bundled_model(sample_settings):
    from kbagent.cli import app

    res = CliRunner().invoke(app, ["ask", "What is the default TTL for prompt cache entries?",
                                   "--kb", "sample", "--mode", "agent", "--json"])
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["answer"].strip()
    assert any(s["action"] == "kb_search" for s in data["steps"])
    # mechanics only: whether the model answers at its first step is its own choice
    assert data["mode"] == "agent" and data["usage"]["llm_calls"] >= 1
    assert data["status"] in ("answered", "limit")


def test_the_cli_frees_the_model_before_the_interpreter_exits(sample_settings):
    """A model left to ``Llama.__del__`` at exit prints ``Exception ignored in:
    Llama.__del__ ... 'NoneType' object is not callable`` on some machines."""
    import os

    for args in (["ask", "What is the default TTL?", "--kb", "sample", "--mode", "rag",
                  "--quiet"],
                 ["ask", "hello", "--mode", "direct", "--quiet"]):
        out = subprocess.run([sys.executable, "-m", "kbagent", *args], capture_output=True,
                             text=True, timeout=600,
                             env={**os.environ, "KBAGENT_HOME": str(sample_settings.home)})
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip()
        assert "Exception ignored" not in out.stderr and "Traceback" not in out.stderr


def test_close_frees_a_shared_model_with_its_last_user():
    from kbagent.agent.llm import llama

    a = llama.LlamaCppLLM(llama.bundled_model_path(), n_ctx=512)
    b = llama.LlamaCppLLM(llama.bundled_model_path(), n_ctx=512)
    key = a._key
    a.close()
    a.close()  # idempotent: b still holds the model
    assert key in llama._MODELS
    assert complete(b, [Message("user", "hi")], max_tokens=2).completion_tokens >= 1
    b.close()
    assert key not in llama._MODELS


def test_a_generation_limit_is_clamped_to_the_room_left_in_the_context():
    from kbagent.agent.llm.base import ContextFull, Message, complete
    from kbagent.agent.llm.llama import LlamaCppLLM, bundled_model_path

    small = LlamaCppLLM(bundled_model_path(), n_ctx=256)
    c = complete(small, [Message("user", "Say hello. " * 30)], max_tokens=2000)
    assert c.prompt_tokens + c.completion_tokens <= 256
    with pytest.raises(ContextFull, match="256-token context"):
        complete(small, [Message("user", "Say hello. " * 90)], max_tokens=50)


def test_the_real_model_picks_a_short_answer_among_the_spans_it_is_given(llm, sample_settings):
    """Mechanics only (a real model's choice differs between CPUs): with ``pick`` the
    bundled model's output, under the span grammar, is one of the sentence's spans."""
    from kbagent.agent.answer.focus import focus_of
    from kbagent.agent.harness.short import spans
    from kbagent.agent.kinds import ShortAnswerMode
    from kbagent.agent.run.loop import Agent, AgentConfig, run_to_result
    from kbagent.kb.knowledge_base import KnowledgeBase

    question = "What was Kestrel's headcount at the end of Q2 2026?"
    kb = KnowledgeBase(sample_settings, "sample")
    result = run_to_result(Agent(llm, [kb], AgentConfig(
        mode="rag", short_answer=ShortAnswerMode.PICK)), question)
    short, marker = result.short_answer.rsplit(" [", 1)
    quoted = next(x.text for x in result.sentences if "says:" in x.text
                  and x.cited == [int(marker.rstrip("]"))])
    sentence = quoted.split("\u201c", 1)[1].rsplit("\u201d", 1)[0]
    assert short in [x.text for x in spans(focus_of(question), sentence)]
    assert result.usage.llm_calls == 2  # the pick and the answer turn


def test_a_long_prompt_is_evaluated_without_crashing_the_process():
    """A prompt evaluated in batches (any real question) through the bundled model. On a
    CPU with AMX, llama.cpp's extra buffer types crashed here (SIGSEGV in decode) before
    the model was loaded without them: run in a child so a crash is a failure, not the
    end of the test run."""
    code = textwrap.dedent("""
        from kbagent.agent.llm.base import Message, complete
        from kbagent.agent.llm.llama import LlamaCppLLM, bundled_model_path
        llm = LlamaCppLLM(bundled_model_path(), n_ctx=4096)
        prompt = "The retry policy backs off exponentially. " * 250
        out = complete(llm, [Message("user", prompt)], max_tokens=8)
        print("OK", out.prompt_tokens > 1000)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["OK", "True"]


def test_option_logprobs_reads_the_next_token_and_keeps_generation_intact(llm):
    """The judgment's reading (answer_judge): log-probabilities of the options' first
    tokens, without generating; a generation after it is the one a fresh model makes
    (the KV cache it left is trimmed, not reused wrongly)."""
    ask = [Message("system", "You judge whether a passage answers a question."),
           Message("user", "Passage: The cache holds at most 2 GB.\n\nQuestion: How big can "
                           "the cache grow?\n\nDoes the passage state the answer to the "
                           "question? Reply yes or no.")]
    other = [Message("system", "You are terse."), Message("user", "Name a colour.")]
    llm.reset_cache()
    fresh = complete(llm, other, max_tokens=8).text
    lp = llm.option_logprobs(ask, ["yes", "Yes", "no", "No"])
    assert lp is not None and len(lp) == 4
    assert all(x < 0 for x in lp) and sum(math.exp(x) for x in lp) <= 1.0 + 1e-6
    assert llm.judgment_usage.prompt_evaluated > 0 and llm.judgment_usage.completion_tokens == 0
    again = llm.option_logprobs(ask, ["yes", "Yes", "no", "No"])
    assert again == pytest.approx(lp, abs=0.05)  # the same reading from the KV cache
    assert llm.judgment_usage.prompt_evaluated == 1  # only the last token evaluated again
    assert complete(llm, other, max_tokens=8).text == fresh
