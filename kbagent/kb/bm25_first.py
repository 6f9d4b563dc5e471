"""Searchable sooner: publish a BM25-only generation before a long first embedding.

A first ingest of a large folder spends nearly all its time embedding (minutes
for ~10k chunks on a laptop). Before that starts, the ingest publishes a
generation holding every document and chunk in SQLite and tantivy and an empty
vector index, its manifest marked ``vectors_pending``: ``kbagent search``
works at once (BM25 only, and says so). The ingest then builds the full
generation as usual and publishes it over the BM25-only one.

Meanwhile the vectors become searchable as they are made: every
``vectors_publish_s`` seconds of embedding, :class:`PartialVectors` rewrites the
BM25-only generation's vector index with every vector made so far (written to a
temporary file, fsynced, renamed over the old one) and records the count in its
manifest. A search then fuses BM25 over every chunk with vectors over the
embedded ones, and says how many those are.

Crash safety is the ingest's: the BM25-only generation is committed and
fsynced before ``CURRENT`` names it, so a kill or Ctrl-C at any later point
leaves a searchable KB; a re-run treats a pending generation as no base at all
(every file is ingested again, which costs little next to embedding) while the
embeddings finished before the interruption come from the embedding cache.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from kbagent.kb.file_modes import fsync_path, private_dir, tighten_tree, write_atomic
from kbagent.kb.knowledge_base import new_manifest
from kbagent.kb.lexical import LexicalIndex
from kbagent.kb.store import Store
from kbagent.kb.vectors import VectorIndex

PENDING_KEY = "vectors_pending"


def is_pending(manifest: dict[str, Any] | None) -> bool:
    """True for a BM25-only generation whose vectors are still being built."""
    return bool((manifest or {}).get(PENDING_KEY))


def publish_bm25_first(ingestor: Any, source: Path, base_gen: str | None, pending: list[Any],
                       model_id: str, dim: int) -> PartialVectors:
    """Write and publish a BM25-only generation of ``pending`` documents; return the
    publisher of its vectors (its ``gen`` is the generation's name)."""
    n = int(base_gen.split("-")[1]) + 1 if base_gen else 1
    gen = f"gen-{n:06d}"
    gen_dir: Path = ingestor.dir / gen
    if gen_dir.exists():  # left by a killed run
        shutil.rmtree(gen_dir)
    private_dir(gen_dir)
    published = False
    store = lexical = None
    ids_by_hash: dict[str, list[int]] = {}
    try:
        store = Store(gen_dir / "kb.sqlite")
        lexical = LexicalIndex(gen_dir / "tantivy", create=True)
        for p in pending:
            doc_id = store.add_document(p.doc, p.content_hash, p.size)
            ids = store.add_chunks(doc_id, p.chunks, p.hashes)
            for cid, h in zip(ids, p.hashes, strict=True):
                ids_by_hash.setdefault(h, []).append(cid)
            for cid, ch in zip(ids, p.chunks, strict=True):
                # the document's effective groups, as in a full generation: the
                # BM25-only one must not open restricted text to everyone
                lexical.add(cid, doc_id, ch.index_text(p.doc.title), p.doc.access)
        docs, chunks = store.count()
        store.commit()
        store.close()
        lexical.commit()
        VectorIndex(gen_dir / "vectors.usearch", dim, create=True, view=False).save()
        manifest = new_manifest(ingestor.name, str(source), model_id, dim, ingestor.settings)
        manifest.update(ingestor._runtime_fields(None))
        manifest.update(documents=docs, chunks=chunks, generation=gen, vectors=0,
                        kbaccess=ingestor._rules.text)
        manifest[PENDING_KEY] = True
        write_atomic(gen_dir / "manifest.json", json.dumps(manifest, indent=2))
        tighten_tree(gen_dir)  # tantivy's files: 0600 before anyone can open them
        fsync_path(gen_dir)
        ingestor._checkpoint("bm25-written")
        write_atomic(ingestor.dir / "CURRENT", gen + "\n")
        published = True
    finally:
        if not published:
            if lexical is not None:
                with contextlib.suppress(Exception):
                    lexical.abort()
            if store is not None:
                store.close()
            shutil.rmtree(gen_dir, ignore_errors=True)
    ingestor._checkpoint("bm25-published")
    return PartialVectors(gen_dir, dim, ids_by_hash, ingestor.settings.vectors_publish_s)


class PartialVectors:
    """Publishes a BM25-only generation's vectors while the ingest embeds.

    ``offer(have)`` takes every vector made so far (text hash -> vector) and, at most
    every ``every_s`` seconds (0 = never), adds the new ones to the generation's index
    and publishes it: the index is saved to a temporary file, fsynced and renamed over
    ``vectors.usearch`` (a reader sees the old index or the new one, never half of
    one), then the manifest's ``vectors`` count is rewritten atomically. A crash at
    any point leaves a consistent, searchable generation."""

    def __init__(self, gen_dir: Path, dim: int, ids_by_hash: dict[str, list[int]],
                 every_s: float) -> None:
        self.gen_dir, self.dim, self.every_s = gen_dir, dim, every_s
        self.gen = gen_dir.name
        self.ids_by_hash = ids_by_hash
        self.published: set[str] = set()
        self._index: VectorIndex | None = None
        self._last = time.monotonic()

    def offer(self, have: dict[str, np.ndarray], *, now: bool = False) -> bool:
        """Publish the vectors in ``have`` not published yet, if it is time (or ``now``);
        True when it published."""
        if self.every_s <= 0 or (not now and time.monotonic() - self._last < self.every_s):
            return False
        new = [h for h in have if h in self.ids_by_hash and h not in self.published]
        if not new:
            return False
        keys: list[int] = []
        rows: list[np.ndarray] = []
        for h in new:
            for cid in self.ids_by_hash[h]:
                keys.append(cid)
                rows.append(have[h])
        if self._index is None:
            self._index = VectorIndex(self.gen_dir / "vectors.usearch", self.dim, create=True,
                                      view=False)
        self._index.add(keys, np.stack(rows))
        self._index.save()
        manifest = json.loads((self.gen_dir / "manifest.json").read_text(encoding="utf-8"))
        manifest["vectors"] = len(self._index)
        write_atomic(self.gen_dir / "manifest.json", json.dumps(manifest, indent=2))
        self.published.update(new)
        self._last = time.monotonic()
        return True
