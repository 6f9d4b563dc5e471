"""The OpenAI-compatible backend against misbehaving servers (real HTTP servers on
loopback, ``http.server`` in a thread): malformed stream output is a one-line
backend error (exit 6), never a traceback; a server that stops sending cannot hold
a run past its time limit (the read is bounded by the remaining run time and by
the cancel token) and the run still ends with an answer from what was gathered."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from typer.testing import CliRunner

from kbagent.agent.cancel import CancelToken
from kbagent.agent.llm.base import Message, complete
from kbagent.agent.llm.openai_compat import OpenAICompatLLM
from kbagent.cli import app
from kbagent.errors import BackendError, ExitCode

runner = CliRunner()
SEARCH_STEP = ('Thought: Search.\nAction: kb_search\nAction Input: {"query": "default cache '
               'TTL"}')


@contextmanager
def server(reply) -> Iterator[tuple[str, threading.Event]]:
    """A loopback server whose POST handler is ``reply(handler, release)``; ``release``
    is set when the test ends so a stalled handler lets go."""
    release = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            reply(self, release)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1", release
    finally:
        release.set()
        srv.shutdown()
        srv.server_close()


def sse(handler, *events: object, done: bool = True) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.end_headers()
    for ev in events:
        data = ev if isinstance(ev, str) else json.dumps(ev)
        handler.wfile.write(f"data: {data}\n\n".encode())
    if done:
        handler.wfile.write(b"data: [DONE]\n\n")
    handler.wfile.flush()


def piece(text: str) -> dict:
    return {"choices": [{"delta": {"content": text}}]}


# ------------------------------------------------------------ malformed output
@pytest.mark.parametrize("event", [
    {"choices": "oops"},
    {"choices": ["oops"]},
    {"choices": [{"delta": "oops"}]},
    {"choices": [{"delta": {"content": 5}}]},
    {"choices": [], "usage": "lots"},
    [1, 2, 3],
    '"a JSON string"',
])
def test_a_malformed_stream_event_is_a_backend_error(event):
    with (server(lambda h, _: sse(h, piece("Thought: "), event)) as (url, _),
          pytest.raises(BackendError, match="malformed stream event") as err):
        complete(OpenAICompatLLM(url), [Message("user", "hi")], max_tokens=8)
    assert "\n" not in str(err.value)


def test_junk_usage_numbers_fall_back_to_estimates():
    usage = {"choices": [], "usage": {"prompt_tokens": "many", "completion_tokens": -3}}
    with server(lambda h, _: sse(h, piece("Hello there."), usage)) as (url, _):
        c = complete(OpenAICompatLLM(url), [Message("user", "hi")], max_tokens=8)
    assert c.text == "Hello there." and c.prompt_tokens >= 0 and c.completion_tokens >= 1


def test_an_error_event_in_the_stream_is_a_backend_error():
    with (server(lambda h, _: sse(h, {"error": {"message": "model crashed"}})) as (url, _),
          pytest.raises(BackendError, match="model crashed")):
        complete(OpenAICompatLLM(url), [Message("user", "hi")], max_tokens=8)


@pytest.mark.timeout(120)
def test_cli_ask_on_a_malformed_stream_exits_6_with_one_line(sample_settings):
    with server(lambda h, _: sse(h, {"choices": "oops"})) as (url, _):
        res = runner.invoke(app, ["ask", "What is the default cache TTL?", "--kb", "sample",
                                  "--mode", "agent", "--llm-url", url])
    assert res.exit_code == ExitCode.BACKEND, res.output
    assert isinstance(res.exception, SystemExit)  # an exit code, not an exception
    assert "Traceback" not in res.stderr
    error = [ln for ln in res.stderr.splitlines() if ln.startswith("  ! LLM server")]
    assert len(error) == 1 and "malformed stream event ('choices' is not a list)" in error[0]


# ------------------------------------------------------------- stalled servers
def stall_after_headers(handler, release):
    """Headers and nothing more (a server that accepts, then stops sending)."""
    sse(handler, done=False)
    release.wait(120)


def stall_before_headers(handler, release):
    release.wait(120)


def stall_after_a_token(handler, release):
    sse(handler, piece("Thought: I will "), done=False)
    release.wait(120)


@pytest.mark.timeout(60)  # a hang guard: unbounded, the read waits for the 300 s timeout
@pytest.mark.parametrize("stall", [stall_after_headers, stall_before_headers,
                                   stall_after_a_token])
def test_a_deadline_unblocks_a_stalled_read(stall):
    import time

    with server(stall) as (url, _):
        gen = OpenAICompatLLM(url).stream([Message("user", "hi")], max_tokens=8,
                                          deadline=time.perf_counter() + 1.0)
        pieces = []
        while True:
            try:
                pieces.append(next(gen))
            except StopIteration as stop:
                completion = stop.value
                break
    assert completion.finish_reason == "aborted"
    assert "".join(pieces) == completion.text


@pytest.mark.timeout(60)
def test_a_cancel_unblocks_a_read_waiting_for_the_headers():
    token = CancelToken()
    with server(stall_before_headers) as (url, _):
        threading.Timer(0.5, token.cancel).start()
        c = complete(OpenAICompatLLM(url), [Message("user", "hi")], max_tokens=8,
                     cancel=token)
    assert c.finish_reason == "aborted" and c.text == ""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stall", [stall_after_headers, stall_before_headers])
def test_cli_ask_time_limit_bounds_a_run_against_a_stalled_server(sample_settings, stall):
    """`--time-limit 5`: the harness's first search runs, the model's step stalls, the
    run ends at the limit with the evidence gathered as its answer (exit 0)."""
    with server(stall) as (url, _):
        res = runner.invoke(app, ["ask", "What is the default cache TTL?", "--kb", "sample",
                                  "--mode", "agent", "--llm-url", url, "--time-limit", "5",
                                  "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["status"] == "limit"
    assert "time limit" in data["stop_reason"]
    assert "could not write a full answer" in data["answer"]
    assert data["steps"][0]["action"] == "kb_search"  # the evidence gathered before the stall
    assert data["usage"]["llm_calls"] == 1  # the stalled server is not asked again


@pytest.mark.timeout(60)
def test_rag_time_limit_bounds_the_answer_turn_too(sample_settings):
    """The answer turn may run past the limit by a grace period no longer than the
    limit itself (a minute at most), then the run ends with what was gathered."""
    with server(stall_after_a_token) as (url, _):
        res = runner.invoke(app, ["ask", "What is the default cache TTL?", "--kb", "sample",
                                  "--mode", "rag", "--llm-url", url, "--time-limit", "3",
                                  "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["status"] == "limit" and "time limit" in data["stop_reason"]


# ------------------------------------------------------------ undecodable input
@pytest.mark.parametrize("mode", ["bm25", "vector", "hybrid"])
def test_search_for_bytes_that_are_not_utf8_finds_the_rest(sample_settings, mode):
    """``kbagent search $'\\xffcache'``: the shell passes the byte 0xff, which Python
    decodes as a lone surrogate (surrogateescape); it is searched as U+FFFD."""
    res = runner.invoke(app, ["search", "\udcffcache", "--mode", mode, "-k", "3"])
    assert res.exit_code == 0, res.output
    assert isinstance(res.exception, SystemExit) or res.exception is None
    assert "cache" in res.stdout.lower() and " 1. " in res.stdout


def test_search_as_a_subprocess_with_an_undecodable_argument(sample_settings):
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable.encode(), b"-m", b"kbagent", b"search", b"\xffcache",
                          b"--mode", b"hybrid", b"-k", b"2", b"--json"],
                         capture_output=True, timeout=300,
                         env={**os.environ, "KBAGENT_HOME": str(sample_settings.home)})
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    assert b"Traceback" not in out.stderr
    assert len(json.loads(out.stdout)) == 2
