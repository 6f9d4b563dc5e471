"""A deterministic stand-in embedder for tests and benchmarks of what is not the
embedding (BM25, access, watch): one pseudo-random unit vector per distinct text, in
the bundled model's name and dimension unless told otherwise."""

from __future__ import annotations

import hashlib

import numpy as np


class HashEmbedder:
    def __init__(self, model_id: str = "sentence-transformers/all-MiniLM-L6-v2",
                 dim: int = 384) -> None:
        self.model_id, self.dim = model_id, dim

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.sha1(t.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).normal(size=self.dim)
            out[i] = v / np.linalg.norm(v)
        return out
