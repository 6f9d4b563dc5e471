"""``--embed-url``: an OpenAI-compatible embeddings server (issue 8), tested against a
small HTTP server in this process that serves the real ONNX model's vectors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from kbagent.errors import BackendError, BadInputError
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase, current_generation, kb_dir
from kbagent.kb.search import HybridSearcher
from kbagent.settings import Settings
from tests.conftest import ROOT, SMALL_DOCS


class EmbeddingServer:
    """``POST /v1/embeddings``; ``mode``: ok | slow | short (another dimension)."""

    def __init__(self, embedder) -> None:
        self.embedder = embedder
        self.mode = "ok"
        self.requests: list[int] = []  # texts per request
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                texts = body["input"]
                outer.requests.append(len(texts))
                if outer.mode == "slow":
                    time.sleep(1.5)
                vecs = outer.embedder.encode(texts)
                if outer.mode == "short":
                    vecs = vecs[:, :100]
                data = {"object": "list", "model": body.get("model") or "minilm-onnx",
                        "data": [{"object": "embedding", "index": i, "embedding": v.tolist()}
                                 for i, v in enumerate(vecs)]}
                raw = json.dumps(data).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:  # the client gave up (timeout test)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(embedder):
    s = EmbeddingServer(embedder)
    yield s
    s.close()


def _down_url() -> str:
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    return f"http://127.0.0.1:{port}/v1"


def test_ingest_and_search_through_a_server(server, make_folder, kb_home, embedder):
    s = Settings.load(embed_url=server.url, embed_batch=2)
    Ingestor(s, "r").run(make_folder(SMALL_DOCS))
    assert max(server.requests) <= 2 and len(server.requests) > 2  # batched
    kb = KnowledgeBase(s, "r")
    assert kb.manifest["embedding_model"] == "remote:minilm-onnx"
    assert kb.manifest["embedding_runtime"] == "remote"
    hits = HybridSearcher([kb]).search("exponential backoff", k=2, mode="vector").hits
    assert hits[0].path == "guide/retry.md"
    # the vectors are the model's: a local query vector finds the same chunk
    local = HybridSearcher([kb], embedder_for=lambda _s: embedder)
    with pytest.raises(BadInputError, match="holds fp32 vectors of remote:minilm-onnx"):
        local.search("exponential backoff", k=2, mode="vector")
    # without the server setting the KB cannot be queried by vector, and says how
    with pytest.raises(BadInputError, match="--embed-url"):
        HybridSearcher([KnowledgeBase(Settings.load(), "r")]).search("backoff", k=2)


def test_a_server_that_is_down_is_one_error_and_nothing_is_stored(make_folder, kb_home):
    s = Settings.load(embed_url=_down_url())
    with pytest.raises(BackendError, match=r"cannot connect.*is the server running"):
        Ingestor(s, "r").run(make_folder(SMALL_DOCS))
    assert current_generation(kb_dir(s, "r")) is None


def test_a_slow_server_times_out_and_the_kb_is_unchanged(server, make_folder, kb_home):
    src = make_folder(SMALL_DOCS)
    Ingestor(Settings.load(embed_url=server.url), "r").run(src)
    before = current_generation(kb_home / "kbs" / "r")
    (src / "new.md").write_text("# New\n\nA brand new page about holidays.\n")
    server.mode = "slow"
    s = Settings.load(embed_url=server.url, embed_timeout=0.3)
    with pytest.raises(BackendError, match=r"no answer within 0.3 s"):
        Ingestor(s, "r").run(src)
    assert current_generation(kb_home / "kbs" / "r") == before
    assert KnowledgeBase(s, "r").chunks == KnowledgeBase(Settings.load(), "r").chunks


def test_another_dimension_is_refused_for_ingest_and_queries(server, make_folder, kb_home):
    src = make_folder(SMALL_DOCS)
    s = Settings.load(embed_url=server.url)
    Ingestor(s, "r").run(src)
    before = current_generation(kb_home / "kbs" / "r")
    server.mode = "short"
    (src / "new.md").write_text("# New\n\nA brand new page about holidays.\n")
    with pytest.raises(BadInputError, match=r"100-dimensional.*384-dimensional"):
        Ingestor(Settings.load(embed_url=server.url), "r").run(src)
    assert current_generation(kb_home / "kbs" / "r") == before
    from kbagent.kb import embedder as embedder_module

    embedder_module._CACHE.clear()  # a fresh process: the server is asked again
    with pytest.raises(BadInputError, match=r"384-dimensional.*100-dimensional"):
        HybridSearcher([KnowledgeBase(s, "r")]).search("backoff", k=2)


def test_the_cli_reports_a_down_server_in_one_line(make_folder, kb_home):
    env = dict(os.environ, PYTHONPATH=str(ROOT), KBAGENT_HOME=str(kb_home))
    proc = subprocess.run([sys.executable, "-m", "kbagent", "ingest", str(make_folder(SMALL_DOCS)),
                           "--kb", "r", "--embed-url", _down_url()], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "is the server running" in lines[0], proc.stderr
    assert not (kb_home / "kbs" / "r" / "CURRENT").exists()


def test_vectors_from_the_server_are_normalised(server):
    from kbagent.kb.remote_embedder import RemoteEmbedder

    emb = RemoteEmbedder(server.url, batch_size=3)
    v = emb.encode([f"text {i}" for i in range(7)])
    assert v.shape == (7, 384) and server.requests[-3:] == [3, 3, 1]
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
