"""Incremental, crash-safe ingest of a folder into one KB.

The next generation is built beside the live one (a copy of it, then
deletions and additions), committed, and published by atomically replacing
``CURRENT``. A kill at any point leaves the previous generation live; the
embeddings computed before the kill sit in ``embed_cache.sqlite`` so a re-run
does not pay for them again. Unchanged files (same content hash) cost one
read and one hash; when nothing changed no generation is written at all.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from kbagent.errors import BadInputError
from kbagent.kb import symbol_index
from kbagent.kb.access import (
    HIDDEN_GROUP,
    AccessRules,
    effective_groups,
    load_access_rules,
    parse_access_rules,
)
from kbagent.kb.bm25_first import PartialVectors, is_pending, publish_bm25_first
from kbagent.kb.chunker import chunk_document
from kbagent.kb.embedder import Embedder, load_embedder, remote_embedder
from kbagent.kb.extract import extract
from kbagent.kb.file_modes import fsync_path, private_dir, tighten_tree, write_atomic
from kbagent.kb.formats.builder import ExtractLimits
from kbagent.kb.generations import (
    EmbeddingCache,
    base_generation,
    check_compatible,
    copy_generation,
    model_of,
    note_symbols,
    planned_space,
    prune_generations,
    read_base_manifest,
    salvage_vectors,
)
from kbagent.kb.ingest_plan import (
    BuildPlan,
    Pending,
    check_source,
    hide_malformed,
    runtime_fields,
)
from kbagent.kb.knowledge_base import kb_dir, new_manifest, validate_name
from kbagent.kb.lexical import LexicalIndex
from kbagent.kb.lock import WriterLock
from kbagent.kb.models import FileReport, IngestReport
from kbagent.kb.repair import CRC_KEY, checked_base, file_crc32
from kbagent.kb.source_text import ExtractError, Skip
from kbagent.kb.store import Store, text_hash
from kbagent.kb.vectors import VectorIndex
from kbagent.kb.walker import is_named, read_source, walk, walk_named
from kbagent.settings import Settings

ProgressFn = Callable[[str, int, int], None]  # (phase, done, total)
EMBED_GROUP = 256  # chunks per encode call: big enough to batch well, small for progress
VECTOR_GROUP = 4096  # vectors per usearch add: one call per document costs ~30% more


class Ingestor:
    """Build or update the KB ``name`` from a source folder."""

    def __init__(
        self,
        settings: Settings,
        name: str,
        *,
        embedder: Embedder | None = None,
        progress: ProgressFn | None = None,
        checkpoint: Callable[[str], None] | None = None,
    ) -> None:
        self.settings = settings
        self.name = validate_name(name)
        self.dir = kb_dir(settings, name)
        self._embedder = embedder
        self._rules = self._old_rules = AccessRules()  # this run's and the base's .kbaccess
        self._partial: PartialVectors | None = None  # a BM25-only generation's vectors
        self._progress = progress or (lambda phase, done, total: None)
        # Test hook: called between steps with the step's name (a raise = a crash there).
        self._checkpoint = checkpoint or (lambda step: None)
        # watch mode (kb/watch.py): the paths file events named; no other file is
        # visited or read, a known one is kept as it is (None: walk and read every file)
        self.only_paths: set[str] | None = None

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None and self.settings.embed_url:
            self._embedder = remote_embedder(self.settings)
        if self._embedder is None:
            self._embedder = load_embedder(
                self.settings.embedding_model, self.settings.embed_batch,
                runtime=self.settings.embedding_runtime,
                precision=self.settings.embedding_precision)
        return self._embedder

    # ------------------------------------------------------------------ run
    def run(self, source: Path, rebuild: bool = False) -> IngestReport:
        started = time.perf_counter()
        source = self._check_source(source)
        for folder in (self.settings.home, self.settings.kbs_dir, self.dir):
            private_dir(folder)  # 0700: the KB holds the documents' text
        with WriterLock(self.dir, self.name):
            report = self._run_locked(source, rebuild)
        report.seconds = time.perf_counter() - started
        return report

    def _check_source(self, source: Path) -> Path:
        return check_source(source)

    def _run_locked(self, source: Path, rebuild: bool) -> IngestReport:
        report = IngestReport(self.name, str(source))
        base_gen = base_generation(self.dir, self.name, rebuild, source)
        base_manifest = None
        # the vector space (model id, plus "#int8" for int8) keys text hashes and checks
        model_id = planned_space(self.settings, lambda: self.embedder)
        base_docs = {}
        self._rules = load_access_rules(source)  # a malformed .kbaccess stops here
        self._old_rules = self._rules
        base_pending = False
        if base_gen and not rebuild:
            base_manifest = read_base_manifest(self.dir, self.name, base_gen, source)
            check_compatible(self.name, base_manifest, model_id, self.settings)
            base_pending = is_pending(base_manifest)
            if base_pending:  # BM25-only (see bm25_first.py): build it whole again
                base_manifest = None
            else:
                # a broken index is rebuilt from the store first (a new generation)
                base_gen, base_manifest, store = checked_base(self, base_gen, base_manifest,
                                                              report)
                base_docs = store.documents()
                store.close()
                self._old_rules = parse_access_rules(base_manifest.get("kbaccess", ""))

        pending, keep_paths = self._scan(source, report, base_docs, model_id)
        removed = [p for p in base_docs if p not in keep_paths]
        for path in removed:
            report.files.append(FileReport(path, "removed", "no longer in the source folder"))
        ok_files = sum(1 for f in report.files if f.status in ("unchanged", "added", "updated"))
        if ok_files == 0:
            skipped = report.count("skipped") + report.count("failed")
            detail = f" ({skipped} files skipped or failed)" if skipped else ""
            raise BadInputError(f"no ingestible files in {source}{detail}; nothing changed")
        if (base_gen and not rebuild and not pending and not removed
                and symbol_index.has_index(base_manifest)):
            report.chunks_total = sum(d.n_chunks for d in base_docs.values())
            report.files.sort(key=lambda f: f.path)
            prune_generations(self.dir, base_gen)  # what readers held at the last ingest
            return report

        n_chunks = sum(len(p.chunks) for p in pending)
        self._partial = None
        if (not base_gen or base_pending) and 0 < self.settings.bm25_first_chunks <= n_chunks:
            self._partial = publish_bm25_first(self, source, base_gen, pending,
                                               model_of(model_id), self.embedder.dim)
            base_gen = self._partial.gen
        self._build(BuildPlan(source, report, base_gen, base_manifest, base_docs, pending,
                               removed, model_id))
        report.files.sort(key=lambda f: f.path)
        return report

    # ------------------------------------------------------------------ scan
    def _scan(self, source: Path, report: IngestReport, base_docs: dict[str, Any],
              model_id: str) -> tuple[list[Pending], set[str]]:
        limit = int(self.settings.max_file_mb * 1024 * 1024)
        links: list[tuple[str, str]] = []  # never followed (walker.py): reported skipped
        files = list(walk(source, links)) if self.only_paths is None else walk_named(
            source, self.only_paths, base_docs, links)
        report.files += [FileReport(path, "skipped", why) for path, why in dict(links).items()]
        pending: list[Pending] = []
        keep: set[str] = set()
        for i, sf in enumerate(files):
            self._progress("scan", i, len(files))
            if sf.size > limit:
                report.files.append(FileReport(sf.path, "skipped", f"too large ("
                    f"{sf.size / 1e6:.1f} MB > {self.settings.max_file_mb:g} MB limit)"))
                continue
            old = base_docs.get(sf.path)
            if (self.only_paths is not None and old is not None and not is_named(
                    sf.path, self.only_paths) and self._rules.text == self._old_rules.text):
                report.files.append(FileReport(sf.path, "unchanged", chunks=old.n_chunks))
                keep.add(sf.path)
                continue
            try:
                data = read_source(sf.abspath)  # a link put there since the walk: ELOOP
            except OSError as e:
                report.files.append(FileReport(sf.path, "failed", f"cannot read: {e.strerror}"))
                keep.add(sf.path)  # keep the stored version of a file we cannot read now
                continue
            digest = hashlib.sha256(data).hexdigest()
            rule_changed = (self._rules.text != self._old_rules.text and
                            self._rules.groups_for(sf.path) != self._old_rules.groups_for(sf.path))
            if (old is not None and old.content_hash == digest and not rule_changed
                    and old.located):
                fr = FileReport(sf.path, "unchanged", chunks=old.n_chunks)
                if HIDDEN_GROUP in old.access:
                    hide_malformed(fr, "unchanged since the last ingest")
                report.files.append(fr)
                keep.add(sf.path)
                continue
            status = "updated" if old is not None else "added"
            try:
                doc = extract(sf.path, data, ExtractLimits(  # a big file's pages/rows: progress
                    self.settings.max_pdf_pages, self.settings.max_sheet_rows,
                    lambda done, total: self._progress("extract", done, total)))
                doc.access = effective_groups(doc.access if doc.access_declared else None,
                                              self._rules, sf.path)
            except Skip as e:
                report.files.append(FileReport(sf.path, "skipped", str(e)))
                continue
            except (ExtractError, RecursionError) as e:
                report.files.append(FileReport(sf.path, "failed", str(e)))
                keep.add(sf.path)
                continue
            if (old is not None and old.content_hash == digest and doc.access == old.access
                    and old.located):
                fr = FileReport(sf.path, "unchanged", chunks=old.n_chunks)
                if doc.access_error:
                    hide_malformed(fr, doc.access_error)
                report.files.append(fr)
                keep.add(sf.path)  # a .kbaccess change that front-matter overrides
                continue
            chunks = chunk_document(doc, self.settings.chunk_tokens, self.settings.chunk_overlap)
            if not chunks:
                report.files.append(FileReport(sf.path, "skipped", "no text content"))
                continue
            hashes = [text_hash(model_id, c.index_text(doc.title)) for c in chunks]
            fr = FileReport(sf.path, status, chunks=len(chunks), reason="; ".join(doc.notes))
            if old is not None and old.content_hash == digest:
                fr.reason = ("access changed (.kbaccess)" if old.located
                             else "re-extracted to cite by page/slide/sheet")
            if doc.access_error:
                hide_malformed(fr, doc.access_error)
            report.files.append(fr)
            pending.append(Pending(fr, doc, chunks, digest, sf.size, hashes))
            keep.add(sf.path)
        self._progress("scan", len(files), len(files))
        return pending, keep

    # ----------------------------------------------------------------- build
    def _build(self, plan: BuildPlan) -> None:
        source, report, base_gen, base_manifest = (plan.source, plan.report, plan.base_gen,
                                                   plan.base_manifest)
        base_docs, pending, removed, model_id = (plan.base_docs, plan.pending, plan.removed,
                                                 plan.model_id)
        n = int(base_gen.split("-")[1]) + 1 if base_gen else 1
        gen = f"gen-{n:06d}"
        gen_dir = self.dir / gen
        if gen_dir.exists():  # left by a killed run
            shutil.rmtree(gen_dir)
        cache = EmbeddingCache(self.dir / "embed_cache.sqlite")
        published = False
        lexical: LexicalIndex | None = None
        store: Store | None = None
        try:
            incremental = bool(base_gen) and base_manifest is not None
            if incremental:
                assert base_gen is not None  # incremental: a base generation and its manifest
                copy_generation(self.dir / base_gen, gen_dir)
            else:
                private_dir(gen_dir)
            self._checkpoint("copied")
            dim = (int(base_manifest["embedding_dim"]) if incremental and base_manifest is not None
                   else self.embedder.dim)
            self._expect_dim = dim
            store = Store(gen_dir / "kb.sqlite")
            symbol_index.create_tables(store.conn)
            lexical = LexicalIndex(gen_dir / "tantivy", create=not incremental)
            vectors = VectorIndex(gen_dir / "vectors.usearch", dim, create=not incremental,
                                  view=False)

            # 1. remove what changed or disappeared, keeping vectors for reuse
            gone = [base_docs[p].id for p in removed] + [
                base_docs[p.doc.path].id for p in pending if p.doc.path in base_docs
            ]
            reuse: dict[str, np.ndarray] = {} if incremental else salvage_vectors(
                self.dir, base_gen, model_id, {h for p in pending for h in p.hashes})
            if gone:
                by_hash = store.chunk_ids_by_hash(gone)
                vecs = vectors.get(list(by_hash.values()))
                reuse = {h: vecs[c] for h, c in by_hash.items() if c in vecs}
                chunk_ids = store.delete_documents(gone)
                lexical.delete_docs(gone)
                vectors.remove(chunk_ids)
            if incremental and not symbol_index.has_index(base_manifest):
                note_symbols(report, symbol_index.backfill(store.conn))
            self._checkpoint("deleted")

            # 2. embed what is new (reusing old vectors and the resume cache)
            vectors_by_hash = self._embed(pending, reuse, cache, report)
            self._checkpoint("embedded")

            # 3. write documents and chunks into all three stores
            total = sum(len(p.chunks) for p in pending)
            done = 0
            keys: list[int] = []
            rows: list[np.ndarray] = []
            for p in pending:
                doc_id = store.add_document(p.doc, p.content_hash, p.size)
                why = symbol_index.index_extracted(store.conn, doc_id, p.doc)
                if why:  # a syntax error: what parses is indexed, the report says where
                    p.report.reason = why
                ids = store.add_chunks(doc_id, p.chunks, p.hashes)
                for cid, ch in zip(ids, p.chunks, strict=True):
                    lexical.add(cid, doc_id, ch.index_text(p.doc.title), p.doc.access)
                keys += ids
                rows += [vectors_by_hash[h] for h in p.hashes]
                if len(keys) >= VECTOR_GROUP:
                    vectors.add(keys, np.stack(rows))
                    keys, rows = [], []
                done += len(ids)
                self._progress("write", done, total)
            if keys:
                vectors.add(keys, np.stack(rows))
            self._checkpoint("written")

            # 4. commit each store, then the manifest, then publish
            docs, chunks = store.count()
            store.commit()
            store.close()
            self._checkpoint("sqlite-committed")
            lexical.commit()
            self._checkpoint("tantivy-committed")
            vectors.save()  # durable: fsynced before and after the rename
            self._checkpoint("vectors-saved")
            manifest = new_manifest(self.name, str(source), model_of(model_id), dim,
                                    self.settings)
            manifest.update(self._runtime_fields(base_manifest))
            if incremental and base_manifest is not None:
                manifest["created_at"] = base_manifest.get("created_at", manifest["created_at"])
            manifest.update(documents=docs, chunks=chunks, generation=gen,
                            kbaccess=self._rules.text)
            manifest[CRC_KEY] = file_crc32(gen_dir / "vectors.usearch")  # kb/repair.py
            manifest[symbol_index.MANIFEST_KEY] = symbol_index.VERSION
            write_atomic(gen_dir / "manifest.json", json.dumps(manifest, indent=2))
            tighten_tree(gen_dir)  # tantivy's and usearch's files 0600 before publishing
            fsync_path(gen_dir)
            self._checkpoint("manifest-written")
            write_atomic(self.dir / "CURRENT", gen + "\n")
            published = True
            report.committed = True
            report.chunks_total = chunks
        finally:
            if not published:
                if lexical is not None:
                    lexical.abort()
                if store is not None:
                    store.close()
                shutil.rmtree(gen_dir, ignore_errors=True)
        cache.discard()
        prune_generations(self.dir, gen)  # the older ones no reader holds

    def _embed(self, pending: list[Pending], reuse: dict[str, np.ndarray],
               cache: EmbeddingCache, report: IngestReport) -> dict[str, np.ndarray]:
        texts: dict[str, str] = {}
        for p in pending:
            for h, ch in zip(p.hashes, p.chunks, strict=True):
                texts.setdefault(h, ch.index_text(p.doc.title))
        have = {h: v for h, v in reuse.items() if h in texts}
        missing = [h for h in texts if h not in have]
        have.update(cache.get(missing))
        todo = [h for h in texts if h not in have]
        total = len(todo)
        partial = self._partial  # a BM25-only generation is published (bm25_first.py)
        if partial is not None:  # vectors a Ctrl-C'd run made are searchable at once
            partial.offer(have, now=True)
        self._progress("embed", 0, total)
        for i in range(0, total, EMBED_GROUP):
            group = todo[i : i + EMBED_GROUP]
            vecs = self.embedder.encode([texts[h] for h in group])
            if vecs.shape[1] != self._expect_dim:
                raise BadInputError(
                    f"the embedder makes {vecs.shape[1]}-dimensional vectors, KB '{self.name}' "
                    f"holds {self._expect_dim}-dimensional ones; add --rebuild to re-embed")
            fresh = dict(zip(group, vecs, strict=True))
            cache.put(fresh)
            have.update(fresh)
            if partial is not None:
                partial.offer(have)
            self._progress("embed", min(i + EMBED_GROUP, total), total)
        report.chunks_embedded = total
        return have

    def _runtime_fields(self, base_manifest: dict[str, Any] | None) -> dict[str, Any]:
        return runtime_fields(self.settings, self._embedder, base_manifest)
