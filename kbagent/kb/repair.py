"""Ingest checks the live generation's indexes and repairs them from the store.

A plain ``kbagent ingest`` with nothing changed must not call a KB fine that
search cannot read. Before it scans the folder it checks the live generation,
reading each index file once (as the scan reads each source file once):

- BM25 (tantivy): every file of the index's segments matches the CRC-32 in its
  own footer, the index opens, holds one entry per stored chunk, and a few chunks
  (first, middle, last) are found by their own words under their own id;
- vectors (usearch): the file matches the CRC-32 the manifest recorded when it was
  written (KBs made before have none), opens, holds one vector per chunk, those
  chunks' vectors are there and finite, and a search with one of them finds it.

A broken part is rebuilt into a new generation and published like any ingest:
the SQLite store keeps every chunk's text, heading, document title and access
groups, so the BM25 index is rebuilt exactly (no embedding). Vectors live only
in the usearch file, so a broken vector index is re-embedded from the stored
texts (the report says so and how many). A broken store or manifest cannot be
repaired from within the KB: the error names the ``--rebuild`` that fixes it.
"""

from __future__ import annotations

import json
import shutil
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kbagent.kb.file_modes import private_dir, tighten_tree
from kbagent.kb.lexical import LexicalIndex
from kbagent.kb.models import Chunk, IngestReport
from kbagent.kb.store import Store
from kbagent.kb.vectors import VectorIndex

PROBES = 3  # chunks whose presence each index must prove
EMBED_GROUP = 256
CRC_KEY = "vectors_crc32"  # the manifest's record of vectors.usearch
TANTIVY_MAGIC = 1337  # tantivy's file footer: JSON {"version", "crc"}, its length, this


def file_crc32(path: Path, end: int | None = None) -> int:
    """CRC-32 of ``path``'s first ``end`` bytes (all of it by default)."""
    crc = 0
    left = path.stat().st_size if end is None else end
    with open(path, "rb") as f:
        while left > 0:
            block = f.read(min(left, 1 << 20))
            if not block:
                break
            crc = zlib.crc32(block, crc)
            left -= len(block)
    return crc


def _tantivy_file_problem(path: Path) -> str:
    size = path.stat().st_size
    with open(path, "rb") as f:
        f.seek(max(0, size - 8))
        tail = f.read(8)
        if len(tail) < 8:
            return f"{path.name} is truncated"
        n, magic = struct.unpack("<II", tail)
        if magic != TANTIVY_MAGIC or n + 8 > size:
            return f"{path.name} has no valid footer"
        f.seek(size - 8 - n)
        footer = json.loads(f.read(n))
    if file_crc32(path, size - 8 - n) != footer.get("crc"):
        return f"{path.name} fails its checksum"
    return ""


def _tantivy_checksums(path: Path) -> str:
    """The first problem of the files of the segments ``meta.json`` lists ('' if none)."""
    meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    ids = {s["segment_id"].replace("-", "") for s in meta.get("segments", [])}
    for f in sorted(path.iterdir()):
        if f.name.split(".")[0] in ids:
            why = _tantivy_file_problem(f)
            if why:
                return why
    return ""


@dataclass
class StoredChunk:
    """One chunk as the store keeps it, with the text its indexes were built from."""

    id: int
    doc_id: int
    index_text: str
    access: list[str]
    text_hash: str


def stored_chunks(store: Store, ids: list[int] | None = None) -> Iterator[StoredChunk]:
    """Every chunk (or those of ``ids``) with the text BM25 and the embedder saw:
    ``Chunk.index_text(title)``, as ingest made it."""
    sql = ("SELECT c.id, c.doc_id, c.ordinal, c.start_line, c.end_line, c.heading, c.text, "
           "c.text_hash, d.path, d.title, d.access FROM chunks c JOIN documents d "
           "ON d.id = c.doc_id")
    params: list[int] = []
    if ids is not None:
        sql += f" WHERE c.id IN ({','.join('?' * len(ids))})"
        params = ids
    for (cid, doc_id, ordinal, start, end, heading, text, h, path, title,
         access) in store.conn.execute(sql + " ORDER BY c.id", params):
        chunk = Chunk(path, ordinal, start, end, heading, text)
        yield StoredChunk(cid, doc_id, chunk.index_text(title), json.loads(access), h)


def _probe_ids(store: Store) -> list[int]:
    ids = [r[0] for r in store.conn.execute(
        "SELECT MIN(id) FROM chunks UNION SELECT MAX(id) FROM chunks") if r[0] is not None]
    if ids:
        mid = store.conn.execute("SELECT id FROM chunks WHERE id >= ? ORDER BY id LIMIT 1",
                                 ((ids[0] + ids[-1]) // 2,)).fetchone()
        ids += [mid[0]] if mid else []
    return sorted(set(ids))[:PROBES]


def check_indexes(gen_dir: Path, manifest: dict[str, Any], store: Store) -> dict[str, str]:
    """What is wrong with the BM25 and vector indexes of one generation:
    ``{"bm25": why, "vectors": why}``, empty when both are sound."""
    chunks = store.count()[1]
    probes = list(stored_chunks(store, _probe_ids(store)))
    problems: dict[str, str] = {}
    why = _check_bm25(gen_dir / "tantivy", chunks, probes)
    if why:
        problems["bm25"] = why
    why = _check_vectors(gen_dir / "vectors.usearch", int(manifest["embedding_dim"]), chunks,
                         probes, manifest.get(CRC_KEY))
    if why:
        problems["vectors"] = why
    return problems


def _first_line(e: BaseException) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0][:200]


def _check_bm25(path: Path, chunks: int, probes: list[StoredChunk]) -> str:
    try:
        why = _tantivy_checksums(path)
        if why:
            return why
        lexical = LexicalIndex(path)
        n = lexical.num_docs()
        if n != chunks:
            return f"{n} entries for {chunks} chunks"
        t = lexical._t
        searcher = lexical.index.searcher()
        for p in probes:
            terms = lexical.terms(p.index_text)[:8]
            if not terms:
                continue
            words = t.Query.boolean_query([(t.Occur.Should, t.Query.term_query(
                lexical.schema, "body", w)) for w in terms])
            q = t.Query.boolean_query([(t.Occur.Must, words), (t.Occur.Must, t.Query.term_query(
                lexical.schema, "chunk_id", p.id))])
            hits = searcher.search(q, 1).hits
            ids = searcher.fast_field_values("chunk_id", [a for _, a in hits]) if hits else []
            if list(ids) != [p.id]:
                return f"chunk {p.id} is not found by its own words"
    except Exception as e:  # tantivy raises ValueError, OSError, RuntimeError...
        return _first_line(e)
    return ""


def _check_vectors(path: Path, dim: int, chunks: int, probes: list[StoredChunk],
                   crc: int | None) -> str:
    try:
        if crc is not None and file_crc32(path) != crc:
            return "vectors.usearch fails its checksum"
        vectors = VectorIndex(path, dim)
        if len(vectors) != chunks:
            return f"{len(vectors)} vectors for {chunks} chunks"
        got = vectors.get([p.id for p in probes])
        for p in probes:
            v = got.get(p.id)
            if v is None or v.shape != (dim,) or not np.all(np.isfinite(v)) or not v.any():
                return f"no usable vector for chunk {p.id}"
        if probes:
            hits = vectors.search(got[probes[0].id], 1)
            if not hits or hits[0][1] < 0.99:
                return f"a search with chunk {probes[0].id}'s vector does not find it"
    except Exception as e:  # usearch raises RuntimeError, ValueError...
        return _first_line(e)
    return ""


def checked_base(ingestor: Any, gen: str, manifest: dict[str, Any], report: IngestReport
                 ) -> tuple[str, dict[str, Any], Store]:
    """The generation an incremental ingest builds on, its manifest and its store
    (read-only), its indexes checked first: a broken one is repaired into a new
    generation (published), which is returned instead."""
    from kbagent.kb.generations import open_base_store, read_base_manifest

    store = open_base_store(ingestor.dir, ingestor.name, gen, manifest)
    problems = check_indexes(ingestor.dir / gen, manifest, store)
    if not problems:
        return gen, manifest, store
    store.close()
    gen = repair_generation(ingestor, gen, manifest, problems, report)
    manifest = read_base_manifest(ingestor.dir, ingestor.name, gen)
    return gen, manifest, open_base_store(ingestor.dir, ingestor.name, gen, manifest)


def repair_generation(ingestor: Any, base_gen: str, manifest: dict[str, Any],
                      problems: dict[str, str], report: IngestReport) -> str:
    """Build the next generation from ``base_gen``: its store and manifest copied, the
    sound index kept, each broken one rebuilt from the store; publish it; return its
    name. ``ingestor`` is the running :class:`kbagent.kb.ingest.Ingestor` (its KB
    folder, embedder, progress and writer lock)."""
    from kbagent.kb.file_modes import fsync_path, write_atomic
    from kbagent.kb.generations import EmbeddingCache, _link_or_copy, prune_generations

    kb: Path = ingestor.dir
    gen = f"gen-{int(base_gen.split('-')[1]) + 1:06d}"
    src, dst = kb / base_gen, kb / gen
    if dst.exists():  # left by a killed run
        shutil.rmtree(dst)
    published = False
    try:
        private_dir(dst)
        shutil.copy2(src / "kb.sqlite", dst / "kb.sqlite")
        store = Store(dst / "kb.sqlite", readonly=True)
        try:
            rows = list(stored_chunks(store))
        finally:
            store.close()
        if "bm25" in problems:
            _rebuild_bm25(dst / "tantivy", rows, ingestor)
            report.repaired.append(f"BM25 index ({problems['bm25']}): rebuilt from the "
                                   f"store, {len(rows)} chunks, nothing re-embedded")
        else:
            shutil.copytree(src / "tantivy", dst / "tantivy", copy_function=_link_or_copy,
                            ignore=shutil.ignore_patterns("*.lock"))
        if "vectors" in problems:
            cache = EmbeddingCache(kb / "embed_cache.sqlite")
            done = _rebuild_vectors(dst / "vectors.usearch", int(manifest["embedding_dim"]),
                                    rows, ingestor, cache)
            report.chunks_embedded += done
            report.repaired.append(f"vector index ({problems['vectors']}): the store keeps no "
                                   f"vectors, so {done} chunks were re-embedded")
        else:
            shutil.copy2(src / "vectors.usearch", dst / "vectors.usearch")
        fixed = {**manifest, "generation": gen, "updated_at": time.time(),
                 CRC_KEY: file_crc32(dst / "vectors.usearch")}
        write_atomic(dst / "manifest.json", json.dumps(fixed, indent=2))
        tighten_tree(dst)
        fsync_path(dst)
        ingestor._checkpoint("repaired")
        write_atomic(kb / "CURRENT", gen + "\n")
        published = True
        report.committed = True
    finally:
        if not published:
            shutil.rmtree(dst, ignore_errors=True)
    if "vectors" in problems:
        cache.discard()
    prune_generations(kb, gen)
    return gen


def _rebuild_bm25(path: Path, rows: list[StoredChunk], ingestor: Any) -> None:
    lexical = LexicalIndex(path, create=True)
    try:
        for i, r in enumerate(rows):
            lexical.add(r.id, r.doc_id, r.index_text, r.access)
            if i % 1000 == 0:
                ingestor._progress("write", i, len(rows))
        lexical.commit()
    except BaseException:
        lexical.abort()
        raise
    ingestor._progress("write", len(rows), len(rows))


def _rebuild_vectors(path: Path, dim: int, rows: list[StoredChunk], ingestor: Any,
                     cache: Any) -> int:
    """Embed every stored chunk again (the resume cache first: a killed repair
    re-run pays once) into a new index at ``path``; return how many were embedded."""
    texts: dict[str, str] = {}
    for r in rows:
        texts.setdefault(r.text_hash, r.index_text)
    have = cache.get(list(texts))
    todo = [h for h in texts if h not in have]
    for i in range(0, len(todo), EMBED_GROUP):
        group = todo[i:i + EMBED_GROUP]
        vecs = ingestor.embedder.encode([texts[h] for h in group])
        if vecs.shape[1] != dim:
            from kbagent.errors import BadInputError

            raise BadInputError(f"the embedder makes {vecs.shape[1]}-dimensional vectors, the "
                                f"KB holds {dim}-dimensional ones; add --rebuild to re-embed")
        fresh = dict(zip(group, vecs, strict=True))
        cache.put(fresh)
        have.update(fresh)
        ingestor._progress("embed", min(i + EMBED_GROUP, len(todo)), len(todo))
    index = VectorIndex(path, dim, create=True, view=False)
    if rows:
        index.add([r.id for r in rows], np.stack([have[r.text_hash] for r in rows]))
    index.save()
    return len(todo)
