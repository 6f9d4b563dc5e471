"""Optional rerank stage after fusion: a cross-encoder reorders the top-N fused hits.

Two backends, both off by default (no reranker model ships offline here):

* :class:`HttpReranker`: an OpenAI/Jina/Cohere-style ``/v1/rerank`` endpoint
  (llama.cpp's server with ``--reranking``, text-embeddings-inference, vLLM):
  ``POST {model, query, documents, top_n}`` -> ``{results: [{index, relevance_score}]}``
  (a bare list and ``score`` instead of ``relevance_score`` are accepted too, as
  text-embeddings-inference answers).
* :class:`CrossEncoderReranker`: a sentence-transformers ``CrossEncoder`` loaded
  in-process from a local folder.

A reranker that is down, slow or answers nonsense never costs the search its
results: :func:`rerank_hits` then keeps the fused order and returns a one-line
notice saying why.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Protocol

from kbagent.errors import BadInputError
from kbagent.kb.models import Hit
from kbagent.settings import default

MAX_DOC_CHARS = 2000  # text per hit sent to the cross-encoder (they read ~512 tokens)


class RerankError(Exception):
    """The reranker did not give a usable answer; the message says why."""


class Reranker(Protocol):
    top_n: int
    label: str

    def score(self, query: str, documents: list[str]) -> list[float | None]:
        """One relevance score per document (None = the reranker gave it none)."""


class HttpReranker:
    """Scores from a ``/v1/rerank`` HTTP endpoint."""

    def __init__(self, url: str, model: str = "", top_n: int = default("rerank_top_n"),
                 timeout: float = default("rerank_timeout"),
                 api_key: str = "") -> None:
        if not url.startswith(("http://", "https://")):
            raise BadInputError(f"rerank URL must start with http:// or https://, got {url!r}")
        self.url = url if url.rstrip("/").endswith("rerank") else url.rstrip("/") + "/v1/rerank"
        self.model = model
        self.top_n = top_n
        self.timeout = timeout
        self.api_key = api_key
        self.label = f"rerank {self.url}"

    def score(self, query: str, documents: list[str]) -> list[float | None]:
        body = json.dumps({"model": self.model, "query": query, "documents": documents,
                           "top_n": len(documents)}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        import urllib.error  # here: not on the path of a search without a reranker
        import urllib.request

        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raise RerankError(f"HTTP {e.code} from {self.url}") from e
        except (urllib.error.URLError, OSError) as e:  # refused, DNS, timeout
            reason = getattr(e, "reason", e)
            raise RerankError(f"cannot reach {self.url} ({reason})") from e
        return parse_scores(raw, len(documents))


def parse_scores(raw: bytes, n: int) -> list[float | None]:
    """Scores by document index from a rerank reply; RerankError if malformed."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise RerankError("reply is not JSON") from e
    results = data.get("results", data.get("data")) if isinstance(data, dict) else data
    if not isinstance(results, list):
        raise RerankError("reply has no 'results' list")
    scores: list[float | None] = [None] * n
    for item in results:
        if not isinstance(item, dict):
            raise RerankError("a result is not an object")
        index = item.get("index")
        value = item.get("relevance_score", item.get("score"))
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n:
            raise RerankError(f"result index {index!r} is not one of the {n} documents")
        if not isinstance(value, int | float) or isinstance(value, bool) or \
                not math.isfinite(value):
            raise RerankError(f"result {index} has no numeric relevance_score")
        scores[index] = float(value)
    if all(s is None for s in scores):
        raise RerankError("reply scored none of the documents")
    return scores


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder from a local folder (loaded on first use)."""

    def __init__(self, path: str, top_n: int = default("rerank_top_n")) -> None:
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise BadInputError(f"rerank model {path!r} is not a folder (give a local "
                                "CrossEncoder directory, or --rerank-url)")
        self.path = folder
        self.top_n = top_n
        self.label = f"cross-encoder {folder.name}"
        self._model: Any = None

    def score(self, query: str, documents: list[str]) -> list[float | None]:
        try:
            if self._model is None:
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(str(self.path), local_files_only=True)
            out = self._model.predict([(query, d) for d in documents])
        except Exception as e:  # a broken model folder must not sink the search
            raise RerankError(f"{type(e).__name__}: {e}") from e
        return [float(s) for s in out]


def rerank_hits(reranker: Reranker, query: str, hits: list[Hit]) -> tuple[list[Hit], str]:
    """Reorder the first ``reranker.top_n`` hits by rerank score (ties and unscored hits
    keep their fused order). Returns (hits, notice); on any reranker failure the hits
    come back in fused order with a one-line notice."""
    top, rest = hits[: reranker.top_n], hits[reranker.top_n :]
    if not top:
        return hits, ""
    try:
        scores = reranker.score(query, [_doc_text(h) for h in top])
        if len(scores) != len(top):
            raise RerankError(f"{len(scores)} scores for {len(top)} documents")
    except RerankError as e:
        return hits, f"reranker failed ({e}); showing the fused order"
    for h, s in zip(top, scores, strict=True):
        h.rerank_score = s
    order = sorted(range(len(top)), key=lambda i: (scores[i] is None, -(scores[i] or 0.0), i))
    return [top[i] for i in order] + rest, ""


def _doc_text(hit: Hit) -> str:
    head = " > ".join(x for x in (hit.title, hit.heading) if x)
    text = f"{head}\n{hit.text}" if head else hit.text
    return text[:MAX_DOC_CHARS]


def reranker_from(url: str = "", model: str = "", top_n: int = default("rerank_top_n"),
                  timeout: float = default("rerank_timeout"),
                  api_key: str = "") -> Reranker | None:
    """The configured reranker: a URL wins; else ``model`` as a local CrossEncoder
    folder; None when neither is set (the default)."""
    if top_n < 1:
        raise BadInputError("rerank top-n must be at least 1")
    if url:
        return HttpReranker(url, model, top_n, timeout, api_key)
    if model:
        return CrossEncoderReranker(model, top_n)
    return None
