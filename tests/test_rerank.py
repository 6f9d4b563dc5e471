"""The rerank stage against a real HTTP server on 127.0.0.1 started by the test.

No cross-encoder model ships offline here, so the server scores with a
deterministic scorer: the share of the query's words found in the document.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kbagent.errors import BadInputError
from kbagent.kb.models import Hit
from kbagent.kb.rerank import (
    CrossEncoderReranker,
    HttpReranker,
    RerankError,
    parse_scores,
    rerank_hits,
    reranker_from,
)


def word_overlap(query: str, doc: str) -> float:
    q = set(query.lower().split())
    return len(q & set(doc.lower().split())) / max(1, len(q))


class RerankServer:
    """A /v1/rerank endpoint whose behaviour a test can switch."""

    def __init__(self) -> None:
        self.mode = "ok"  # ok | slow | garbage | bad_index | no_results | http500 | tei
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, **body})
                if server.mode == "slow":
                    time.sleep(1.5)
                scores = [word_overlap(body["query"], d) for d in body["documents"]]
                results = [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]
                results.sort(key=lambda r: -r["relevance_score"])
                reply: object = {"model": body.get("model"), "results": results}
                if server.mode == "garbage":
                    reply = "<html>oops"
                elif server.mode == "bad_index":
                    reply = {"results": [{"index": 99, "relevance_score": 1.0}]}
                elif server.mode == "no_results":
                    reply = {"error": "model not loaded"}
                elif server.mode == "tei":  # text-embeddings-inference: a bare list, "score"
                    reply = [{"index": r["index"], "score": r["relevance_score"]}
                             for r in results]
                status = 500 if server.mode == "http500" else 200
                data = (reply if isinstance(reply, str) else json.dumps(reply)).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1/rerank"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> RerankServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[RerankServer]:
    with RerankServer() as s:
        yield s


def hits(*texts: str) -> list[Hit]:
    return [Hit(kb="k", chunk_id=i, path=f"doc{i}.md", start_line=1, end_line=2, heading="",
                text=t, score=1.0 / (60 + i + 1), bm25_rank=i + 1) for i, t in enumerate(texts)]


FUSED = hits("the cafeteria opens at eight", "retry with exponential backoff and jitter",
             "parking is free", "backoff cap of five seconds for retry")


def test_rerank_reorders_the_top_hits_by_the_servers_scores(server):
    r = HttpReranker(server.url, model="bge-reranker", top_n=4)
    out, notice = rerank_hits(r, "retry backoff jitter", [*FUSED])
    assert notice == ""
    assert [h.chunk_id for h in out] == [1, 3, 0, 2]
    assert out[0].rerank_score == pytest.approx(1.0)
    assert out[1].rerank_score == pytest.approx(2 / 3)
    sent = server.requests[-1]
    assert sent["path"] == "/v1/rerank" and sent["model"] == "bge-reranker"
    assert sent["query"] == "retry backoff jitter" and sent["top_n"] == 4
    assert sent["documents"][1] == "retry with exponential backoff and jitter"


def test_only_the_top_n_are_reranked_the_rest_keep_their_place(server):
    r = HttpReranker(server.url, top_n=2)
    out, _ = rerank_hits(r, "parking backoff", hits(*[h.text for h in FUSED]))
    assert [h.chunk_id for h in out] == [1, 0, 2, 3]  # 0 and 1 swapped; 2, 3 untouched
    assert out[2].rerank_score is None and len(server.requests[-1]["documents"]) == 2


def test_a_base_url_gets_the_rerank_path(server):
    base = server.url.removesuffix("/v1/rerank")
    r = HttpReranker(base, top_n=4)
    assert r.url == server.url
    out, notice = rerank_hits(r, "parking", hits(*[h.text for h in FUSED]))
    assert notice == "" and out[0].chunk_id == 2


def test_tei_style_replies_are_understood(server):
    server.mode = "tei"
    out, notice = rerank_hits(HttpReranker(server.url, top_n=4), "parking",
                              hits(*[h.text for h in FUSED]))
    assert notice == "" and out[0].chunk_id == 2


@pytest.mark.parametrize(("mode", "why"), [
    ("garbage", "reply is not JSON"),
    ("bad_index", "result index 99 is not one of the 4 documents"),
    ("no_results", "reply has no 'results' list"),
    ("http500", "HTTP 500"),
])
def test_a_malformed_or_failing_reply_keeps_the_fused_order(server, mode, why):
    server.mode = mode
    fused = hits(*[h.text for h in FUSED])
    out, notice = rerank_hits(HttpReranker(server.url, top_n=4), "retry backoff", fused)
    assert [h.chunk_id for h in out] == [0, 1, 2, 3]
    assert why in notice and notice.endswith("showing the fused order")
    assert "\n" not in notice and all(h.rerank_score is None for h in out)


def test_a_slow_server_times_out_and_the_fused_order_stays(server):
    server.mode = "slow"
    fused = hits(*[h.text for h in FUSED])
    out, notice = rerank_hits(HttpReranker(server.url, top_n=4, timeout=0.3), "retry", fused)
    assert [h.chunk_id for h in out] == [0, 1, 2, 3]
    assert notice.startswith("reranker failed (cannot reach") and "timed out" in notice


def test_a_server_that_is_down_keeps_the_fused_order():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    fused = hits(*[h.text for h in FUSED])
    out, notice = rerank_hits(HttpReranker(f"http://127.0.0.1:{port}/v1/rerank", top_n=4),
                              "retry", fused)
    assert [h.chunk_id for h in out] == [0, 1, 2, 3]
    assert "cannot reach" in notice


@pytest.mark.parametrize("raw", [b'{"results": [{"index": 0, "relevance_score": "high"}]}',
                                 b'{"results": [{"index": true, "relevance_score": 1}]}',
                                 b'{"results": [{"index": 0, "relevance_score": NaN}]}',
                                 b'{"results": []}', b"[1, 2]"])
def test_parse_scores_rejects_malformed_results(raw):
    with pytest.raises(RerankError):
        parse_scores(raw, 2)


def test_missing_scores_go_after_the_scored_hits():
    assert parse_scores(b'{"results": [{"index": 1, "relevance_score": 0.5}]}', 3) == [
        None, 0.5, None]


def test_configuration_errors_are_one_line_bad_input(tmp_path):
    assert reranker_from() is None  # off by default
    with pytest.raises(BadInputError, match="must start with http"):
        reranker_from(url="localhost:8080")
    with pytest.raises(BadInputError, match="is not a folder"):
        reranker_from(model=str(tmp_path / "nope"))
    assert isinstance(reranker_from(model=str(tmp_path)), CrossEncoderReranker)


def test_a_broken_local_cross_encoder_falls_back_with_a_notice(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    fused = hits(*[h.text for h in FUSED])
    out, notice = rerank_hits(CrossEncoderReranker(str(tmp_path), top_n=4), "retry", fused)
    assert [h.chunk_id for h in out] == [0, 1, 2, 3] and notice.startswith("reranker failed")


# ------------------------------------------------------------ through search and the CLI
def test_hybrid_search_reranks_the_fused_top_n(server, sample_settings):
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.kb.search import HybridSearcher

    kb = KnowledgeBase(sample_settings, "sample")
    query = "circuit breaker half-open probes"
    fused = HybridSearcher([kb]).search(query, k=20)
    reranked = HybridSearcher([kb], reranker=HttpReranker(server.url, top_n=20)).search(
        query, k=5)
    assert reranked.notices == [] and len(reranked.hits) == 5
    expected = sorted(fused.hits, key=lambda h: -word_overlap(query, _sent(h)))[:5]
    assert [h.chunk_id for h in reranked.hits] == [h.chunk_id for h in expected]
    assert all(h.rerank_score is not None for h in reranked.hits)
    assert [h.rerank_score for h in reranked.hits] == sorted(
        (h.rerank_score for h in reranked.hits), reverse=True)
    assert len(server.requests[-1]["documents"]) == 20


def _sent(hit: Hit) -> str:
    """What rerank.py sends for a hit (title > heading, then the text)."""
    from kbagent.kb.rerank import _doc_text

    return _doc_text(hit)


def test_cli_search_json_shows_the_rerank_score_beside_the_ranks(server, sample_settings):
    from typer.testing import CliRunner

    from kbagent.cli import app

    res = CliRunner().invoke(app, ["search", "retry budget ratio", "--json", "-k", "3",
                                   "--rerank-url", server.url, "--rerank-top-n", "10"])
    assert res.exit_code == 0, res.stderr
    hits = json.loads(res.stdout)
    assert len(hits) == 3
    for h in hits:
        assert {"bm25_rank", "vector_rank", "rerank_score"} <= set(h)
        assert isinstance(h["rerank_score"], float)
    server.mode = "garbage"
    res = CliRunner().invoke(app, ["search", "retry budget ratio", "-k", "3",
                                   "--rerank-url", server.url])
    assert res.exit_code == 0 and res.stdout.count("\n    ") >= 3  # hits still shown
    assert "warning: reranker failed (reply is not JSON); showing the fused order" in res.stderr
    res = CliRunner().invoke(app, ["search", "retry", "--rerank-url", "localhost:1"])
    assert res.exit_code == 2 and "rerank URL must start with http" in res.stderr


def test_ask_uses_the_configured_reranker(server, sample_settings, monkeypatch):
    from typer.testing import CliRunner

    import kbagent.agent.llm as llm_module
    from kbagent.cli import app
    from tests.scripted_llm import ScriptedLLM

    llm = ScriptedLLM([
        'Thought: s\nAction: kb_search\nAction Input: {"query": "retry budget ratio"}',
        "Thought: f\nFinal Answer: Retries may be at most 20% of requests [1].",
    ])
    monkeypatch.setattr(llm_module, "load_llm", lambda settings: llm)
    monkeypatch.setenv("KBAGENT_SEARCH_FIRST", "model")
    monkeypatch.setenv("KBAGENT_RERANK_URL", server.url)
    res = CliRunner().invoke(app, ["ask", "What is the retry budget?", "--mode", "agent",
                                   "--json"])
    assert res.exit_code == 0, res.stderr
    assert [r["query"] for r in server.requests] == ["retry budget ratio"]


def test_agent_search_with_a_failing_reranker_keeps_hits_and_says_so(sample_settings):
    from kbagent.agent.events import Observation
    from kbagent.agent.run.loop import Agent, AgentConfig
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.kb.search import HybridSearcher
    from tests.scripted_llm import ScriptedLLM

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}/v1/rerank"
    kb = KnowledgeBase(sample_settings, "sample")
    llm = ScriptedLLM([
        'Thought: s\nAction: kb_search\nAction Input: {"query": "retry budget", "kb": "sample"}',
        "Thought: f\nFinal Answer: Retries may be at most 20% of requests [1].",
    ])
    searcher = HybridSearcher([kb], reranker=HttpReranker(down, top_n=5))
    agent = Agent(llm, [kb], AgentConfig(mode="agent", search_first="off"), searcher=searcher)
    [obs] = [e for e in agent.run("What is the retry budget?") if isinstance(e, Observation)]
    assert obs.ok and obs.citations
    assert "reranker failed (cannot reach" in obs.summary
