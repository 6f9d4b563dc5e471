"""Embeddings from an OpenAI-compatible server (``POST {url}/embeddings``).

For people who outgrow one machine: llama.cpp's server with ``--embedding``,
text-embeddings-inference, vLLM or Ollama embed on another host. Texts go in
batches; a failed request is retried with exponential backoff; every failure
ends as one clear :class:`~kbagent.errors.BackendError` line (server down,
too slow, bad answer, another dimension than the KB holds).

The KB records the model id ``remote:<model>`` (the ``embed_model`` setting,
else the name the server reports), so a KB never mixes vectors of another
space: a remote KB is queried only through a server of the same model.
Vectors are L2-normalised here whatever the server does.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from typing import Any

import numpy as np

from kbagent.errors import BackendError
from kbagent.settings import default

REMOTE_PREFIX = "remote:"


class RemoteEmbedder:
    """Batches texts to ``{url}/embeddings`` and returns normalised float32 rows."""

    runtime = "remote"
    precision = "fp32"

    def __init__(self, url: str, model: str = "", *, batch_size: int = 64,
                 timeout: float = default("embed_timeout"), retries: int = 3,
                 backoff: float = 0.5,
                 api_key: str = "", expect_dim: int | None = None) -> None:
        self.url = url.rstrip("/") + "/embeddings"
        self.model = model
        self.batch_size = max(1, batch_size)
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.api_key = api_key
        probe, name = self._request(["dimension probe"])
        self.model = self.model or name or "default"
        self.model_id = REMOTE_PREFIX + self.model
        self.dim = int(probe.shape[1])
        if expect_dim is not None and self.dim != expect_dim:
            raise BackendError(f"embedding server {url} returns {self.dim}-dimensional vectors, "
                               f"the KB holds {expect_dim}-dimensional ones")

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        for i in range(0, len(texts), self.batch_size):
            vecs, _ = self._request(texts[i : i + self.batch_size])
            if vecs.shape[1] != self.dim:
                raise BackendError(f"embedding server {self.url} changed dimension "
                                   f"({vecs.shape[1]}, was {self.dim})")
            parts.append(vecs)
        out = np.concatenate(parts)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.ascontiguousarray(out / np.clip(norms, 1e-12, None), dtype=np.float32)

    # ------------------------------------------------------------ transport
    def _request(self, texts: list[str]) -> tuple[np.ndarray, str]:
        body = {"input": texts, "encoding_format": "float"}
        if self.model:
            body["model"] = self.model
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers,
                                     method="POST")
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    data = json.loads(resp.read())
                return self._parse(data, len(texts))
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code} {e.reason}"
                if e.code < 500 and e.code != 429:  # a client error does not heal by retrying
                    break
            except TimeoutError:
                last = f"no answer within {self.timeout:g} s"
            except urllib.error.URLError as e:
                reason = e.reason
                if isinstance(reason, TimeoutError | socket.timeout):
                    last = f"no answer within {self.timeout:g} s"
                else:
                    last = f"cannot connect ({reason}); is the server running?"
            except (OSError, ValueError) as e:  # reset connections, bad JSON
                last = f"bad answer ({type(e).__name__}: {e})"
        raise BackendError(f"embedding server {self.url} failed after {attempt + 1} "
                           f"tries: {last}")

    def _parse(self, data: Any, n: int) -> tuple[np.ndarray, str]:
        """``data``: the decoded JSON, of any shape; a wrong one raises ValueError."""
        try:
            rows = sorted(data["data"], key=lambda r: r.get("index", 0))
            vecs = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
            name = str(data.get("model") or "")
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"not an OpenAI embeddings response: {e}") from e
        if vecs.ndim != 2 or len(vecs) != n:
            raise ValueError(f"{len(vecs)} vectors for {n} texts")
        return vecs, name
