"""The UI-neutral session layer: several KBs with a bad one, per-run cancel tokens
(loop, scripted and HTTP backends), KB refresh under concurrent readers."""

from __future__ import annotations

import http.server
import json
import shutil
import threading
import time

import pytest
from typer.testing import CliRunner

from kbagent.agent.cancel import CancelToken
from kbagent.agent.events import Final, ThoughtDelta
from kbagent.agent.llm.base import Message
from kbagent.agent.run.loop import Agent, AgentConfig, run_to_result
from kbagent.cli import app
from kbagent.errors import ExitCode, KbCorruptError, NotFoundError
from kbagent.kb.knowledge_base import KnowledgeBase, current_generation
from kbagent.session import Session, follow_up_context, open_kbs
from tests.scripted_llm import ScriptedLLM


def _corrupt_copy(settings, name: str = "broken") -> None:
    """A second KB, copied from the sample, with a vector index that is junk."""
    src = settings.kbs_dir / "sample"
    dst = settings.kbs_dir / name
    shutil.copytree(src, dst)
    (dst / current_generation(dst) / "vectors.usearch").write_bytes(b"junk")


def test_a_corrupted_kb_is_reported_and_the_others_served(sample_settings):
    _corrupt_copy(sample_settings)
    opened = open_kbs(sample_settings, ["sample", "broken", "nope"])
    assert [kb.name for kb in opened.kbs] == ["sample"]
    assert "corrupted" in opened.failed["broken"] and "--rebuild" in opened.failed["broken"]
    assert "unknown KB 'nope'" in opened.failed["nope"]
    with pytest.raises(KbCorruptError):  # nothing to serve: the first failure, its exit code
        open_kbs(sample_settings, ["broken"])
    with pytest.raises(NotFoundError):
        open_kbs(sample_settings, ["nope"])


def test_cli_search_serves_the_good_kb_beside_a_corrupted_one(sample_settings):
    _corrupt_copy(sample_settings)
    res = CliRunner().invoke(app, ["search", "Kestrel GPU", "--kb", "sample", "--kb", "broken"])
    assert res.exit_code == 0, res.stderr
    assert "KB 'broken' failed" in res.stderr and "corrupted" in res.stderr
    assert ".md:" in res.stdout
    res = CliRunner().invoke(app, ["search", "Kestrel GPU", "--kb", "broken"])
    assert res.exit_code == ExitCode.CORRUPT


def test_session_search_reports_failed_kbs(sample_settings):
    _corrupt_copy(sample_settings)
    session = Session(sample_settings, ["sample", "broken"])
    session.open_kbs()
    result = session.search("Kestrel Edge GPU", k=3)
    assert result.hits and "broken" in result.failed_kbs


def test_cancel_pressed_before_the_run_starts_is_kept(sample_settings):
    llm = ScriptedLLM(["Thought: never read\nFinal Answer: no"])
    session = Session(sample_settings, ["sample"], mode="agent", llm=llm)
    session.open_kbs()
    token = session.prepare_run()
    session.cancel()  # Esc pressed between submit and the worker's first step
    events = list(session.ask("Which GPU does Kestrel Edge use?"))
    assert token.cancelled
    assert events[-1].result.status == "cancelled"
    assert llm.calls == []  # the model was never asked
    # the next run gets a fresh token and is not cancelled by the old cancel
    llm.replies.append("Thought: ok\nFinal Answer: Kestrel Edge uses a GPU [1].")
    result = [e for e in session.ask("Which GPU does Kestrel Edge use?")][-1].result
    assert result.status != "cancelled"


def test_agent_cancel_before_run_is_not_cleared(sample_settings):
    kb = KnowledgeBase(sample_settings, "sample")
    agent = Agent(ScriptedLLM(["Thought: x\nFinal Answer: y"]), [kb], AgentConfig(mode="agent"))
    agent.cancel()
    assert run_to_result(agent, "What is Kestrel?").status == "cancelled"
    # the run consumed that cancel: the next one runs
    agent.llm.replies.append("Thought: x\nFinal Answer: Kestrel is a product.")
    assert run_to_result(agent, "What is Kestrel?").status != "cancelled"


def test_session_cancel_mid_generation_ends_cancelled(sample_settings, capsys):
    llm = ScriptedLLM(["Thought: " + "slow " * 4000], piece_delay=0.01, piece_chars=5)
    session = Session(sample_settings, ["sample"], mode="agent", llm=llm)
    session.open_kbs()
    session.prepare_run()
    seen_after_cancel, cancelled_at, ended_at, result = 0, None, None, None
    for ev in session.ask("Which GPU does Kestrel Edge use?"):
        if isinstance(ev, ThoughtDelta) and cancelled_at is None:
            threading.Thread(target=session.cancel).start()
            cancelled_at = time.perf_counter()
        elif isinstance(ev, ThoughtDelta):
            seen_after_cancel += 1
        if isinstance(ev, Final):
            ended_at, result = time.perf_counter(), ev.result
    assert result is not None and result.status == "cancelled"
    assert "Evidence gathered so far" in result.answer
    with capsys.disabled():
        print(f"\n[session cancel → cancelled result: {(ended_at - cancelled_at) * 1000:.1f} ms,"
              f" {seen_after_cancel} thought pieces after the cancel]")


def test_refresh_does_not_close_a_store_another_thread_reads(sample_settings, embedder):
    from kbagent.kb.ingest import Ingestor
    from tests.conftest import SAMPLE_KB

    kb = KnowledgeBase(sample_settings, "sample")
    old = kb.store
    gen = kb.generation
    Ingestor(sample_settings, "sample", embedder=embedder).run(SAMPLE_KB, rebuild=True)
    assert kb.refresh() and kb.generation != gen
    # a reader that took the old store before the refresh can still use it
    assert old.count() == kb.store.count()
    kb.close()
    with pytest.raises(Exception, match="closed"):
        old.count()


def test_a_follow_up_context_holds_the_previous_turns_not_the_question():
    prev = ("What was the gross margin in Q2?", "71.4% [1].")
    context = follow_up_context(None, prev)
    assert context is not None and [(t.question, t.answer) for t in context.turns] == [prev]
    assert follow_up_context(context, None) is None
    # the turns before the previous one come along when it was the session's last run
    longer = context.then("And in Q3?", "66.2% [2].")
    assert follow_up_context(longer, ("And in Q3?", "66.2% [2].")) is longer
    assert len(follow_up_context(longer, ("Other?", "x")).turns) == 1


# ----------------------------------------------------------------- backends
class _SlowSSE(http.server.BaseHTTPRequestHandler):
    """A stand-in OpenAI-compatible server: one token, then silence for 30 s."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        chunk = {"choices": [{"delta": {"content": "Thought: "}}]}
        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.flush()
        time.sleep(30)

    def log_message(self, *args) -> None:
        pass


def test_http_backend_cancel_closes_the_response():
    from kbagent.agent.llm.openai_compat import OpenAICompatLLM

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowSSE)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        llm = OpenAICompatLLM(f"http://127.0.0.1:{server.server_address[1]}/v1")
        token = CancelToken()
        gen = llm.stream([Message("user", "hi")], cancel=token)
        assert next(gen) == "Thought: "
        threading.Timer(0.2, token.cancel).start()
        started = time.perf_counter()
        with pytest.raises(StopIteration) as stop:
            next(gen)  # blocks in the socket read until the cancel closes it
        waited = time.perf_counter() - started
        assert stop.value.value.finish_reason == "aborted"
        assert waited < 20  # generous: without the cancel it blocks for 30 s
        print(f"[http cancel: read unblocked {(waited - 0.2) * 1000:.0f} ms after the cancel]")
    finally:
        server.shutdown()


@pytest.mark.slow
def test_llama_cancel_stops_generation_and_models_share_one_lock(capsys):
    from kbagent.agent.llm.llama import LlamaCppLLM, bundled_model_path

    a = LlamaCppLLM(bundled_model_path(), n_ctx=2048)
    b = LlamaCppLLM(bundled_model_path(), n_ctx=2048)
    assert a._llm is b._llm and a._lock is b._lock  # one lock per cached model
    token = CancelToken()
    gen = a.stream([Message("user", "Write a very long story about a dragon.")],
                   max_tokens=1500, cancel=token)
    pieces = 0
    ended = None
    try:
        while True:
            next(gen)
            pieces += 1
            if pieces == 5:  # cancelled from another thread, as a UI would
                threading.Thread(target=token.cancel).start()
    except StopIteration as stop:
        ended = time.perf_counter()
        completion = stop.value
    assert completion.finish_reason == "aborted"
    assert completion.completion_tokens < 100
    # the lock was released: the other instance can generate at once
    assert b._lock.acquire(timeout=5)
    b._lock.release()
    with capsys.disabled():
        print(f"\n[llama cancel: stopped {(ended - token.cancelled_at) * 1000:.1f} ms after the"
              f" cancel, {completion.completion_tokens} tokens generated]")


def test_a_view_for_another_caller_shares_kbs_searcher_and_llm(sample_settings):
    """Session.for_principal (the servers' per-call view): same open KBs, searcher and
    LLM, its own principal and cancel token; search can be limited to some KBs."""
    from kbagent.kb.access import Principal

    plan = "hr/executive_compensation_2026.md"
    shutil.copytree(sample_settings.kbs_dir / "sample", sample_settings.kbs_dir / "other")
    llm = ScriptedLLM([])
    base = Session(sample_settings, ["sample", "other"], llm=llm)
    base.open_kbs()
    execs = base.for_principal(Principal("maya", frozenset({"executives"})))
    assert execs.kbs is base.kbs and execs.searcher is base.searcher
    assert execs.load_llm() is llm and base.principal.user is None
    hits = execs.search("CEO base salary", k=10).hits
    assert any(h.path == plan for h in hits)
    assert not any(h.path == plan for h in base.search("CEO base salary", k=10).hits)
    only = execs.search("CEO base salary", k=10, kbs=["other"]).hits
    assert only and {h.kb for h in only} == {"other"}
    assert {h.kb for h in execs.search("retry backoff", k=20).hits} == {"sample", "other"}
    with pytest.raises(NotFoundError, match="KB 'nope' is not open"):
        execs.search("x", kbs=["nope"])
    token = execs.prepare_run()
    base.cancel()  # the base session's cancel does not reach the view's run
    assert not token.cancelled
    execs.cancel()
    assert token.cancelled
    base.close()
