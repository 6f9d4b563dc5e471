"""Searchable sooner: publish a BM25-only generation before a long first embedding.

A first ingest of a large folder spends nearly all its time embedding (minutes
for ~10k chunks on a laptop). Before that starts, the ingest publishes a
generation holding every document and chunk in SQLite and tantivy and an empty
vector index, its manifest marked ``vectors_pending``: ``kbagent search``
works at once (BM25 only, and says so). The ingest then builds the full
generation as usual and publishes it over the BM25-only one.

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
from pathlib import Path
from typing import Any

from kbagent.kb.knowledge_base import fsync_dir, new_manifest, write_atomic
from kbagent.kb.lexical import LexicalIndex
from kbagent.kb.store import Store
from kbagent.kb.vectors import VectorIndex

PENDING_KEY = "vectors_pending"


def is_pending(manifest: dict[str, Any] | None) -> bool:
    """True for a BM25-only generation whose vectors are still being built."""
    return bool((manifest or {}).get(PENDING_KEY))


def publish_bm25_first(ingestor: Any, source: Path, base_gen: str | None, pending: list,
                       model_id: str, dim: int) -> str:
    """Write and publish a BM25-only generation of ``pending`` documents; return its name."""
    n = int(base_gen.split("-")[1]) + 1 if base_gen else 1
    gen = f"gen-{n:06d}"
    gen_dir: Path = ingestor.dir / gen
    if gen_dir.exists():  # left by a killed run
        shutil.rmtree(gen_dir)
    gen_dir.mkdir(parents=True)
    published = False
    store = lexical = None
    try:
        store = Store(gen_dir / "kb.sqlite")
        lexical = LexicalIndex(gen_dir / "tantivy", create=True)
        for p in pending:
            doc_id = store.add_document(p.doc, p.content_hash, p.size)
            ids = store.add_chunks(doc_id, p.chunks, p.hashes)
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
        fsync_dir(gen_dir)
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
    return gen
