"""The vector side of a KB: a usearch index (cosine) keyed by chunk id.

Readers memory-map the file (``view``); writers load it fully. Small indexes
are searched exactly (brute force is cheap and has perfect recall), large
ones through the HNSW graph.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np

from kbagent.kb.file_modes import fsync_path

EXACT_BELOW = 20_000


class VectorIndex:
    def __init__(self, path: Path, dim: int, *, create: bool = False, view: bool = True) -> None:
        from usearch.index import Index

        self.path = path
        self.dim = dim
        if create:
            self.index = Index(ndim=dim, metric="cos", dtype="f32", expansion_search=128)
        else:
            if not path.is_file():
                raise FileNotFoundError(f"no vector index at {path}")
            restored = Index.restore(str(path), view=view)
            if restored is None:
                raise ValueError(f"unreadable vector index at {path}")
            self.index = restored
            if self.index.ndim != dim:
                raise ValueError(f"vector index has dimension {self.index.ndim}, expected {dim}")
            # usearch defines this property's setter apart from its getter, which
            # mypy reads as read-only; it is settable at run time
            self.index.expansion_search = 128  # type: ignore[misc]

    def __len__(self) -> int:
        return len(self.index)

    def add(self, keys: list[int], vectors: np.ndarray) -> None:
        if keys:
            self.index.add(np.asarray(keys, dtype=np.uint64), vectors)

    def remove(self, keys: list[int]) -> None:
        if keys:
            self.index.remove(np.asarray(keys, dtype=np.uint64))

    def get(self, keys: list[int]) -> dict[int, np.ndarray]:
        out: dict[int, np.ndarray] = {}
        if not keys:
            return out
        vecs = self.index.get(np.asarray(keys, dtype=np.uint64))
        assert isinstance(vecs, tuple)  # many keys: one optional vector each
        for k, v in zip(keys, vecs, strict=True):
            if v is not None:
                out[k] = np.asarray(v, dtype=np.float32)
        return out

    def save(self) -> None:
        """Write the index durably: to a temporary file, fsynced, renamed over the
        old one (a reader sees the old index or the new one, never half of one)."""
        from kbagent.kb.file_modes import FILE_MODE, tighten

        tmp = self.path.with_suffix(".tmp")
        self.index.save(str(tmp))
        fsync_path(tmp)
        tmp.replace(self.path)
        tighten(self.path, FILE_MODE)  # usearch creates it with the umask's mode
        fsync_path(self.path.parent)

    def search(self, vector: np.ndarray, limit: int,
               denied: Collection[int] | None = None) -> list[tuple[int, float]]:
        """Return (chunk_id, cosine similarity) best first, skipping ``denied`` keys.

        usearch's Python binding has no filtered search, so a filter over-fetches:
        it asks for 4x, then 16x, ... the wanted count and drops denied keys, and
        its last round (count = every vector) is an exact scan. Guarantee: the
        result holds ``min(limit, allowed vectors)`` allowed hits, never a denied one.
        """
        n = len(self.index)
        if n == 0 or limit <= 0:
            return []
        exact = n < EXACT_BELOW
        if not denied:
            m = self.index.search(vector, min(limit, n), exact=exact)
            return [(int(k), float(1.0 - d)) for k, d in zip(m.keys, m.distances, strict=True)]
        want = min(limit, n - len(denied)) if len(denied) <= n else limit
        count = min(n, limit + len(denied) if exact else max(4 * limit, 64))
        banned = np.fromiter(denied, dtype=np.uint64, count=len(denied))
        while True:
            last = count >= n
            m = self.index.search(vector, count, exact=exact or last)
            keys = np.asarray(m.keys, dtype=np.uint64)
            keep = ~np.isin(keys, banned)
            keys, dists = keys[keep][:limit], np.asarray(m.distances)[keep][:limit]
            if len(keys) >= want or last:
                return [(int(k), float(1.0 - d)) for k, d in zip(keys, dists, strict=True)]
            count = min(n, count * 4)
