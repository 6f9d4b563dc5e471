"""The OpenAI-compatible backend against a real llama.cpp server
(llama-cpp-python's, the ``server`` extra, started as ``python -m
kbagent.agent.llm.llama_server``: ``python -m llama_cpp.server`` with the model loaded as
kbagent loads it on this CPU) on 127.0.0.1 serving the bundled GGUF."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from kbagent.agent.llm.base import Message, complete
from kbagent.agent.llm.openai_compat import OpenAICompatLLM
from kbagent.agent.run.loop import Agent, AgentConfig
from kbagent.agent.run.react import parse_step, step_grammar
from kbagent.agent.tools.toolset import registry
from kbagent.errors import BackendError, BadInputError

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server_url():
    from kbagent.agent.llm.llama import bundled_model_path

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbagent.agent.llm.llama_server",
         "--model", str(bundled_model_path()), "--host", "127.0.0.1", "--port", str(port),
         "--n_ctx", "4096", "--verbose", "False"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {proc.stderr.read()[-2000:]}")
            try:
                urllib.request.urlopen(f"{url}/models", timeout=2).read()
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("llama_cpp.server did not start in 120 s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_streams_a_grammar_constrained_step_from_the_server(server_url):
    llm = OpenAICompatLLM(server_url, "smollm2")
    grammar = step_grammar(registry(), kb_names=["sample"])
    messages = [Message("system", "Answer by searching."),
                Message("user", "Question: What is the default cache TTL?")]
    gen = llm.stream(messages, grammar=grammar, max_tokens=160)
    pieces = []
    while True:
        try:
            pieces.append(next(gen))
        except StopIteration as stop:
            completion = stop.value
            break
    assert len(pieces) > 1  # really streamed
    assert completion.text == "".join(pieces)
    step = parse_step(completion.text)
    assert step.final is not None or step.action in registry()
    assert completion.completion_tokens > 0 and completion.prompt_tokens > 0
    assert llm.supports_grammar


def test_agent_answers_through_the_server(server_url, sample_settings):
    """Mechanics only: what the model decides (answer at once, search again, repeat a
    call until a limit) differs between CPUs, since llama.cpp compiles for the host."""
    from kbagent.agent.events import Action, Final, Observation, StepStarted
    from kbagent.kb.knowledge_base import KnowledgeBase

    llm = OpenAICompatLLM(server_url, "smollm2")
    agent = Agent(llm, [KnowledgeBase(sample_settings, "sample")], AgentConfig(mode="agent"))
    events = list(agent.run("Who is the CEO of Kestrel Systems?"))
    # the events are well formed: steps numbered from 1, every action observed in its
    # step, one Final at the end, all of it serialisable
    assert isinstance(events[0], StepStarted) and events[0].step == 1
    finals = [ev for ev in events if isinstance(ev, Final)]
    assert len(finals) == 1 and events[-1] is finals[0]
    actions = [(ev.step, ev.tool) for ev in events if isinstance(ev, Action)]
    observed = [(ev.step, ev.tool) for ev in events if isinstance(ev, Observation)]
    assert actions == observed
    steps = [ev.step for ev in events if isinstance(ev, StepStarted)]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    json.dumps([ev.to_dict() for ev in events])
    result = finals[0].result
    # the harness searched first; the model's calls went through the server; an answer
    # came back, the model's own or one the harness forced at a limit
    assert result.steps[0].action == "kb_search"
    assert result.usage.llm_calls >= 1
    assert any(s.llm_ms > 0 for s in result.steps)
    assert result.status in ("answered", "limit") and result.answer.strip()
    if result.status == "limit":
        assert result.stop_reason


def test_unreachable_server_is_a_clear_backend_error():
    llm = OpenAICompatLLM(f"http://127.0.0.1:{_free_port()}/v1")
    with pytest.raises(BackendError, match=r"cannot reach LLM server at http://127\.0\.0\.1"):
        complete(llm, [Message("user", "hi")])


def test_bad_url_is_bad_input():
    with pytest.raises(BadInputError, match="must start with http"):
        OpenAICompatLLM("localhost:8080")


def test_a_request_over_the_server_context_is_a_clear_error(server_url):
    llm = OpenAICompatLLM(server_url)
    with pytest.raises(BackendError, match="closed the stream without an answer"):
        complete(llm, [Message("user", "Say hello. " * 1500)], max_tokens=16)


@pytest.mark.parametrize("message", [
    "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens",
    "the request exceeds the available context size, try increasing it",
])
def test_a_context_error_from_a_server_is_a_full_context(message):
    """vLLM and llama-server answer HTTP 400 with these words (they cannot run here,
    so a local HTTP server gives the same answer)."""
    import http.server
    import json
    import threading

    from kbagent.agent.llm.base import ContextFull

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"error": {"message": message}}).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        llm = OpenAICompatLLM(f"http://127.0.0.1:{srv.server_port}/v1")
        with pytest.raises(ContextFull, match="context"):
            complete(llm, [Message("user", "hi")], max_tokens=16)
    finally:
        srv.shutdown()


def test_reads_a_judgment_from_the_servers_top_logprobs(server_url):
    """answer_judge over --llm-url: a one-token completion's top_logprobs give the
    options' log-probabilities; the judge re-orders with them like with a local model."""
    from kbagent.agent.answer.evidence import Scored
    from kbagent.agent.answer.units import Unit
    from kbagent.agent.harness.judge import judge, prompt

    llm = OpenAICompatLLM(server_url, "smollm2")
    messages = prompt("How big can the cache grow?", "cache.md", "The cache holds at most 2 GB.")
    lp = llm.option_logprobs(messages, ["yes", "Yes", "no", "No"])
    assert lp is not None and len(lp) == 4
    assert all(x <= 0 for x in lp) and max(lp) > -20
    assert llm.judgment_usage is not None and llm.judgment_usage.prompt_tokens > 20
    assert llm.supports_logprobs
    ev = [Scored(Unit(1, t, "cache.md", i), 1.0 - i / 10, 0.5)
          for i, t in enumerate(["The cache is written in C.", "The cache holds at most 2 GB."])]
    judged, read = judge(llm, "How big can the cache grow?", ev)
    assert read == 2 and sorted(e.unit.text for e in judged) == sorted(e.unit.text for e in ev)
