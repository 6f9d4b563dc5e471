"""A KB's generation directories as ingest builds them: the embedding cache that
survives a kill, copying a generation (tantivy segments hard-linked), pruning
old ones, checking that an incremental ingest fits the live one, and salvaging
its vectors on --rebuild."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from kbagent.errors import IncompatibleKBError, KbCorruptError
from kbagent.kb import gen_locks
from kbagent.kb.embedder import resolve_model, vector_space
from kbagent.kb.file_modes import private_dir, private_file
from kbagent.kb.knowledge_base import (
    CHUNKER_VERSION,
    SCHEMA_VERSION,
    current_generation,
    latest_generation,
    read_manifest,
    rebuild_hint,
)
from kbagent.kb.lexical import LexicalIndex
from kbagent.kb.models import IngestReport
from kbagent.kb.store import Store, in_batches
from kbagent.kb.vectors import VectorIndex
from kbagent.settings import Settings


class EmbeddingCache:
    """Embeddings of the current, not yet committed, ingest (resume after a kill)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = sqlite3.connect(private_file(path))
        self.conn.execute("CREATE TABLE IF NOT EXISTS cache(hash TEXT PRIMARY KEY, vec BLOB)")

    def get(self, hashes: list[str]) -> dict[str, np.ndarray]:
        out = {}
        for marks, part in in_batches(hashes):
            for h, blob in self.conn.execute(
                f"SELECT hash, vec FROM cache WHERE hash IN ({marks})", part
            ):
                out[h] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put(self, items: dict[str, np.ndarray]) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO cache VALUES(?,?)",
            [(h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()],
        )
        self.conn.commit()

    def discard(self) -> None:
        self.conn.close()
        self.path.unlink(missing_ok=True)


def base_generation(kb: Path, name: str, rebuild: bool, source: Path) -> str | None:
    """The generation an ingest of ``source`` builds on: ``CURRENT``'s; on --rebuild of
    a KB whose ``CURRENT`` is damaged, the newest folder (salvaged if sound, numbered
    after it). Without --rebuild a damaged ``CURRENT`` is an error naming the command."""
    try:
        return current_generation(kb, name)
    except KbCorruptError as e:
        if not rebuild:
            raise KbCorruptError(str(e).replace(rebuild_hint(name, None),
                                                rebuild_hint(name, {"source": source}))) from e
        return latest_generation(kb)


def read_base_manifest(kb: Path, name: str, gen: str,
                       source: Path | None = None) -> dict[str, Any]:
    """The manifest of generation ``gen`` (KbCorruptError if unreadable: its hint
    names ``source``, the folder being ingested, when given)."""
    try:
        return read_manifest(kb / gen)
    except (OSError, ValueError) as e:
        where = {"source": source} if source else None
        raise KbCorruptError(
            f"KB '{name}' is corrupted (manifest: {e}); {rebuild_hint(name, where)}"
        ) from e

def open_base_store(kb: Path, name: str, gen: str, manifest: dict[str, Any]) -> Store:
    """The database of generation ``gen``, read-only (KbCorruptError if unreadable)."""
    try:
        store = Store(kb / gen / "kb.sqlite", readonly=True)
        store.count()
        return store
    except sqlite3.Error as e:
        raise KbCorruptError(
            f"KB '{name}' is corrupted (database: {e}); "
            f"{rebuild_hint(name, manifest)}"
        ) from e


def note_symbols(report: IngestReport, problems: dict[str, str]) -> None:
    """Put a file's symbol-index problem (a syntax error) in its report line."""
    for f in report.files:
        why = problems.get(f.path)
        if why:
            f.reason = f"{f.reason}; {why}" if f.reason else why


def planned_space(settings: Settings, embedder: Callable[[], Any]) -> str:
    """The vector space an ingest makes, without loading a local model (a remote
    server without a configured model name is asked for it: ``embedder()``)."""
    if settings.embed_url:
        from kbagent.kb.remote_embedder import REMOTE_PREFIX

        model = settings.embed_model
        return REMOTE_PREFIX + model if model else embedder().model_id
    return vector_space(resolve_model(settings.embedding_model)[0],
                        settings.embedding_precision)


def check_compatible(name: str, manifest: dict[str, Any], model_id: str,
                     settings: Settings) -> None:
    """Refuse an incremental ingest into a KB built another way (schema, vector
    space, chunker): each message names the --rebuild that fixes it."""
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise IncompatibleKBError(
            f"KB '{name}' has index schema v{manifest.get('schema_version')}, now "
            f"v{SCHEMA_VERSION} (access groups in the index); add --rebuild to update it "
            "(embeddings are reused)")
    chunker = manifest.get("chunker", {})
    want = {"version": CHUNKER_VERSION, "max_tokens": settings.chunk_tokens,
            "overlap": settings.chunk_overlap}
    if space_of(manifest) != model_id:
        raise IncompatibleKBError(
            f"KB '{name}' was built with embedding model "
            f"{space_of(manifest)!r}, not {model_id!r}; add --rebuild to re-embed"
        )
    if chunker.get("version") != CHUNKER_VERSION:
        raise IncompatibleKBError(
            f"KB '{name}' was built by an older kbagent (extraction/chunking "
            f"v{chunker.get('version')}, now v{CHUNKER_VERSION}); add --rebuild to "
            "update it (embeddings are reused)"
        )
    if chunker != want:
        raise IncompatibleKBError(
            f"KB '{name}' was chunked with {chunker['max_tokens']} tokens and "
            f"{chunker['overlap']} overlap, settings now say {want['max_tokens']} and "
            f"{want['overlap']}; add --rebuild to re-chunk"
        )


def salvage_vectors(kb: Path, base_gen: str | None, model_id: str,
                    wanted: set[str]) -> dict[str, np.ndarray]:
    """On --rebuild, reuse the old generation's vectors of the ``wanted`` text
    hashes when it is consistent and used the same model (a chunker upgrade then
    costs no embedding for unchanged text); a damaged generation is ignored and
    everything is embedded again. Not ``KnowledgeBase``: that refuses a damaged
    generation with an error, and this must not."""
    if not base_gen:
        return {}
    gen_dir = kb / base_gen
    try:
        manifest = read_manifest(gen_dir)
        if space_of(manifest) != model_id:
            return {}
        store = Store(gen_dir / "kb.sqlite", readonly=True)
        try:
            rows = store.conn.execute("SELECT id, text_hash FROM chunks").fetchall()
        finally:
            store.close()
        vectors = VectorIndex(gen_dir / "vectors.usearch", int(manifest["embedding_dim"]))
        if len(vectors) != len(rows) or LexicalIndex(gen_dir / "tantivy").num_docs() != len(
                rows):
            return {}
        keep = [(cid, h) for cid, h in rows if h in wanted]
        vecs = vectors.get([cid for cid, _ in keep])
        return {h: vecs[cid] for cid, h in keep if cid in vecs}
    except Exception:  # unreadable in any way: nothing to salvage
        return {}


def copy_generation(src: Path, dst: Path) -> None:
    """A copy of generation ``src`` to build the next one in."""
    private_dir(dst)
    shutil.copy2(src / "kb.sqlite", dst / "kb.sqlite")
    shutil.copy2(src / "vectors.usearch", dst / "vectors.usearch")
    # tantivy never rewrites a segment file in place, so hard links are a safe copy
    shutil.copytree(src / "tantivy", dst / "tantivy", copy_function=_link_or_copy,
                    ignore=shutil.ignore_patterns("*.lock"))


def prune_generations(kb: Path, keep: str | None) -> list[str]:
    """Remove every generation directory of ``kb`` but ``keep`` that no reader holds
    (kb/gen_locks.py); return the names removed."""
    return gen_locks.collect(kb, keep)


def space_of(manifest: dict[str, Any]) -> str:
    """A manifest's vector space; no precision recorded = fp32 (older KBs)."""
    return vector_space(str(manifest.get("embedding_model")),
                        str(manifest.get("embedding_precision", "fp32")))


def model_of(space: str) -> str:
    from kbagent.kb.embedder import parse_space

    return parse_space(space)[0]


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
