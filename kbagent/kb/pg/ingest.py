"""Ingest a folder into a KB held in PostgreSQL.

The scan (extraction, access rules, chunking) and the embedding are the local
ingest's (:class:`kbagent.kb.ingest.Ingestor`); what differs is the write:
everything one run changes (documents, chunks with their vectors, postings,
document frequencies, code symbols, the KB's totals and manifest) is written in ONE
transaction, so a kill at any moment leaves the previous state, and readers
(autocommit, MVCC) see either the old KB or the new one and never wait.
Writers hold a session advisory lock per KB: two ingests of one KB refuse each
other, ingests of different KBs run at once. Embeddings computed before a kill
sit in a local resume cache (``$KBAGENT_HOME/pg-cache/<kb>.sqlite``).
A first load, a ``--rebuild`` or a large addition is a bulk load
(:mod:`kbagent.kb.pg.bulk`: binary COPY, the HNSW index built after the rows, in
the same transaction); small updates go row by row into the existing index.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from psycopg import sql

from kbagent.errors import BadInputError, KbBusyError
from kbagent.kb import symbol_index
from kbagent.kb.access import index_tokens, load_access_rules, parse_access_rules
from kbagent.kb.file_modes import private_dir
from kbagent.kb.generations import (
    EmbeddingCache,
    check_compatible,
    model_of,
    note_symbols,
    planned_space,
)
from kbagent.kb.ingest import Ingestor
from kbagent.kb.ingest_plan import Pending
from kbagent.kb.knowledge_base import new_manifest
from kbagent.kb.lexical import _analyzer
from kbagent.kb.locations import dumps
from kbagent.kb.models import FileReport, IngestReport
from kbagent.kb.pg import bm25_blocks, bulk
from kbagent.kb.pg.conn import connect
from kbagent.kb.pg.kb import PgStore
from kbagent.kb.pg.schema import (
    BULK_LOCK,
    create_schema,
    drop_hnsw_indexes,
    ensure_hnsw_index,
    hnsw_index_name,
    kb_lock_key,
)
from kbagent.kb.pg.symbols import CodeDoc, backfill, write_symbols
from kbagent.kb.registry import check_dsn, redact, register
from kbagent.kb.store import _line_map


class PgIngestor(Ingestor):
    """Build or update KB ``name`` in the PostgreSQL database ``dsn``. ``bulk``: None
    chooses (:func:`kbagent.kb.pg.bulk.use_bulk`), True or False forces the bulk or
    the row-by-row path; :attr:`loaded_in_bulk` says which the last run took."""

    def __init__(self, settings: Any, name: str, dsn: str, bulk: bool | None = None,
                 **kw: Any) -> None:
        super().__init__(settings, name, **kw)
        self.dsn = check_dsn(dsn)
        self.analyzer = _analyzer()
        self.bulk = bulk
        self.loaded_in_bulk = False

    def run(self, source: Path, rebuild: bool = False) -> IngestReport:
        started = time.perf_counter()
        source = self._check_source(source)
        conn = connect(self.dsn)
        try:
            create_schema(conn)
            conn.close()
            conn = connect(self.dsn)  # pgvector's types, now that the extension exists
            if not conn.execute("SELECT pg_try_advisory_lock(%s)",
                                (kb_lock_key(self.name),)).fetchone()[0]:
                raise KbBusyError(f"KB '{self.name}' is being updated by another ingest "
                                  f"(in {redact(self.dsn)}); try again when it is done")
            report = self._run_pg(conn, source, rebuild)
            register(self.settings, self.name, self.dsn)  # after the commit: never empty
        finally:
            conn.close()  # also releases the advisory lock
        report.seconds = time.perf_counter() - started
        return report

    def _run_pg(self, conn: Any, source: Path, rebuild: bool) -> IngestReport:
        report = IngestReport(self.name, str(source))
        model_id = planned_space(self.settings, lambda: self.embedder)
        self._rules = self._old_rules = load_access_rules(source)
        row = conn.execute("SELECT manifest FROM kbagent_kbs WHERE kb=%s",
                           (self.name,)).fetchone()
        base = dict(row[0]) if row else None
        base_docs: dict[str, Any] = {}
        if base is not None and not rebuild:
            check_compatible(self.name, base, model_id, self.settings)
            base_docs = PgStore(conn, self.name).documents()
            self._old_rules = parse_access_rules(base.get("kbaccess", ""))
        pending, keep = self._scan(source, report, base_docs, model_id)
        removed = [p for p in base_docs if p not in keep]
        for path in removed:
            report.files.append(FileReport(path, "removed", "no longer in the source folder"))
        if not any(f.status in ("unchanged", "added", "updated") for f in report.files):
            bad = report.count("skipped") + report.count("failed")
            detail = f" ({bad} files skipped or failed)" if bad else ""
            raise BadInputError(f"no ingestible files in {source}{detail}; nothing changed")
        indexed = base is not None and symbol_index.has_index(base)
        blocks = base is not None and base.get(bm25_blocks.MANIFEST_KEY) == bm25_blocks.VERSION
        if (base is not None and not rebuild and not pending and not removed and indexed
                and blocks):
            report.chunks_total = sum(d.n_chunks for d in base_docs.values())
            # an index a failed bulk load had dropped is built again
            ensure_hnsw_index(conn, self.name, int(base["embedding_dim"]))
            drop_hnsw_indexes(conn, self.name, keep=hnsw_index_name(
                self.name, int(base["embedding_dim"])))  # an older version's index
            report.files.sort(key=lambda f: f.path)
            return report
        gone = [base_docs[p].id for p in removed] + [
            base_docs[p.doc.path].id for p in pending if p.doc.path in base_docs]
        self._partial = None
        self._expect_dim = (int(base["embedding_dim"]) if base is not None and not rebuild
                            else self.embedder.dim)
        reuse = self._old_vectors(conn, gone if not rebuild else None,
                                  {h for p in pending for h in p.hashes}, base, model_id)
        cache_dir = private_dir(self.settings.home / "pg-cache")  # vectors of documents
        cache = EmbeddingCache(cache_dir / f"{self.name}.sqlite")
        vectors = self._embed(pending, reuse, cache, report)
        self._checkpoint("embedded")
        manifest = new_manifest(self.name, str(source), model_of(model_id), self._expect_dim,
                                self.settings)
        manifest.update(self._runtime_fields(base))
        if base is not None and not rebuild:
            manifest["created_at"] = base.get("created_at", manifest["created_at"])
        manifest["kbaccess"] = self._rules.text
        manifest[symbol_index.MANIFEST_KEY] = symbol_index.VERSION
        manifest[bm25_blocks.MANIFEST_KEY] = bm25_blocks.VERSION
        index = hnsw_index_name(self.name, self._expect_dim)
        kept = sum(d.n_chunks for d in base_docs.values()) - sum(
            base_docs[p].n_chunks for p in removed) - sum(
            base_docs[p.doc.path].n_chunks for p in pending if p.doc.path in base_docs)
        fresh = rebuild or base is None
        self.loaded_in_bulk = bulk.use_bulk(self.bulk, fresh, sum(len(p.chunks) for p in pending),
                                            0 if fresh else kept)
        if self.loaded_in_bulk:
            conn.execute("SELECT pg_advisory_lock(%s)", (BULK_LOCK,))  # until the commit
            drop_hnsw_indexes(conn, self.name)  # the old generation: exact scans till then
        else:
            ensure_hnsw_index(conn, self.name, self._expect_dim)
        chunks = self._write(conn, report, pending, vectors, manifest, gone, fresh,
                             indexed, blocks)
        if self.loaded_in_bulk:  # on an error, closing the connection releases it
            conn.execute("SELECT pg_advisory_unlock(%s)", (BULK_LOCK,))
        # fresh statistics for the planner (row counts per KB, vector dimensions)
        # and the visibility map, so BM25 reads the postings index alone
        conn.execute("VACUUM (ANALYZE) kbagent_chunks, kbagent_postings, kbagent_terms, "
                     "kbagent_blocks")
        # a rebuild changed the dimension, or an older version's index is still there
        drop_hnsw_indexes(conn, self.name, keep=index)
        cache.discard()
        report.committed = True
        report.chunks_total = chunks
        report.files.sort(key=lambda f: f.path)
        return report

    def _write(self, conn: Any, report: IngestReport, pending: list[Pending],
               vectors: dict[str, np.ndarray], manifest: dict[str, Any], gone: list[int],
               fresh: bool, indexed: bool, blocks: bool = True) -> int:
        """Everything this run changes, in one transaction; the chunks committed."""
        with conn.transaction():
            if fresh:
                self._clear(conn)
            else:
                if gone:
                    self._delete(conn, gone)
                if not indexed:  # a KB built before the symbol index: its code documents
                    note_symbols(report, backfill(conn, self.name))
            self._insert(conn, pending, vectors)
            if not fresh and not blocks:  # a KB built before the BM25 blocks
                bm25_blocks.rebuild(conn, self.name)
            _docs, chunks = self._finish(conn, manifest)
            if self.loaded_in_bulk:
                bulk.build_hnsw_index(conn, self.name, self._expect_dim, chunks)
            self._checkpoint("pg-written")  # a kill here: the transaction never commits
        return chunks

    # ------------------------------------------------------------ vectors
    def _old_vectors(self, conn: Any, gone: list[int] | None, wanted: set[str],
                     base: dict[str, Any] | None, model_id: str) -> dict[str, np.ndarray]:
        """Stored vectors worth reusing: those of changed documents' chunks (``gone``),
        or on a rebuild with the same model, any chunk's with a wanted text hash."""
        if base is None or not wanted:
            return {}
        if gone is None:
            from kbagent.kb.generations import space_of

            if space_of(base) != model_id or int(base["embedding_dim"]) != self._expect_dim:
                return {}
            rows = conn.execute("SELECT text_hash, embedding FROM kbagent_chunks WHERE kb=%s "
                                "AND text_hash = ANY(%s)", (self.name, list(wanted)))
        elif gone:
            rows = conn.execute("SELECT text_hash, embedding FROM kbagent_chunks WHERE kb=%s "
                                "AND doc_id = ANY(%s)", (self.name, gone))
        else:
            return {}
        # pgvector >= 0.4 loads a Vector object, older versions a numpy array
        return {h: np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=np.float32)
                for h, v in rows if h in wanted and v is not None}

    # ------------------------------------------------------------ writes
    def _clear(self, conn: Any) -> None:
        for table in ("kbagent_documents", "kbagent_terms", "kbagent_groupstats",
                      "kbagent_blocks"):
            conn.execute(sql.SQL("DELETE FROM {} WHERE kb=%s").format(sql.Identifier(table)),
                         (self.name,))

    def _delete(self, conn: Any, gone: list[int]) -> None:
        bm25_blocks.remove_docs(conn, self.name, gone)
        conn.execute(
            "WITH x AS (SELECT p.term, c.groups, count(*) AS n FROM kbagent_postings p "
            "JOIN kbagent_chunks c ON c.kb=p.kb AND c.id=p.chunk_id WHERE c.kb=%(kb)s AND "
            "c.doc_id = ANY(%(ids)s) GROUP BY p.term, c.groups) UPDATE kbagent_terms t "
            "SET df = t.df - x.n FROM x WHERE t.kb=%(kb)s AND t.term=x.term "
            "AND t.groups=x.groups", {"kb": self.name, "ids": gone})
        conn.execute("DELETE FROM kbagent_terms WHERE kb=%s AND df <= 0", (self.name,))
        conn.execute("DELETE FROM kbagent_documents WHERE kb=%s AND id = ANY(%s)",
                     (self.name, gone))

    def _ids(self, conn: Any, seq: str, n: int) -> list[int]:
        if n == 0:
            return []
        return [r[0] for r in conn.execute(
            "SELECT nextval(%s) FROM generate_series(1, %s)", (seq, n))]

    def _insert(self, conn: Any, pending: list[Pending], vectors: dict[str, np.ndarray]
                ) -> None:
        doc_ids = self._ids(conn, "kbagent_documents_id_seq", len(pending))
        chunk_ids = self._ids(conn, "kbagent_chunks_id_seq", sum(len(p.chunks) for p in pending))
        now = time.time()
        df: Counter[tuple[str, tuple[str, ...]]] = Counter()  # (term, groups) -> chunks
        with conn.cursor().copy(
                "COPY kbagent_documents(kb,id,path,title,format,language,content_hash,size,"
                "access,text,line_map,n_chunks,ingested_at,locations) FROM STDIN") as cp:
            for p, did in zip(pending, doc_ids, strict=True):
                cp.write_row((self.name, did, p.doc.path, p.doc.title, p.doc.format,
                              p.doc.language, p.content_hash, p.size, list(p.doc.access),
                              "\n".join(ln.text for ln in p.doc.lines), _line_map(p.doc.lines),
                              len(p.chunks), now, dumps(p.doc.locations)))
        code = {p.doc.path: p for p in pending if p.doc.format == "code"}
        problems = write_symbols(conn, self.name, [
            CodeDoc(did, p.doc.path, p.doc.language, [ln.text for ln in p.doc.lines],
                    [ln.number for ln in p.doc.lines])
            for p, did in zip(pending, doc_ids, strict=True) if p.doc.path in code])
        for path, why in problems.items():  # a syntax error: what parses is indexed
            code[path].report.reason = why
        if self.loaded_in_bulk:
            bulk.write_chunks(conn, self.name, pending, doc_ids, chunk_ids, vectors,
                              self.analyzer, self._checkpoint)
            return
        postings: list[tuple[str, int, int, int]] = []
        with conn.cursor().copy(
                "COPY kbagent_chunks(kb,id,doc_id,ordinal,start_line,end_line,heading,text,"
                "text_hash,groups,n_tokens,embedding,location) FROM STDIN") as cp:
            it = iter(chunk_ids)
            for p, did in zip(pending, doc_ids, strict=True):
                groups = index_tokens(p.doc.access)
                for ch, h in zip(p.chunks, p.hashes, strict=True):
                    cid = next(it)
                    tokens = self.analyzer.analyze(ch.index_text(p.doc.title))
                    tf = Counter(tokens)
                    df.update((t, tuple(groups)) for t in tf)
                    postings += [(t, cid, n, len(tokens)) for t, n in tf.items()]
                    cp.write_row((self.name, cid, did, ch.ordinal, ch.start_line, ch.end_line,
                                  ch.heading, ch.text, h, groups, len(tokens),
                                  _vec_text(vectors[h]), ch.location))
        with conn.cursor().copy(
                "COPY kbagent_postings(kb,term,chunk_id,tf,n_tokens) FROM STDIN") as cp:
            for t, cid, n, length in postings:
                cp.write_row((self.name, t, cid, n, length))
        bm25_blocks.add_chunks(conn, self.name, chunk_ids)
        conn.execute("CREATE TEMP TABLE kbagent_df(term text, groups text[], df integer) "
                     "ON COMMIT DROP")
        with conn.cursor().copy("COPY kbagent_df(term, groups, df) FROM STDIN") as cp:
            for (t, g), n in df.items():
                cp.write_row((t, list(g), n))
        conn.execute("INSERT INTO kbagent_terms(kb, term, groups, df) SELECT %s, term, groups, "
                     "df FROM kbagent_df ON CONFLICT (kb, term, groups) DO UPDATE "
                     "SET df = kbagent_terms.df + EXCLUDED.df", (self.name,))

    def _finish(self, conn: Any, manifest: dict[str, Any]) -> tuple[int, int]:
        docs, chunks, tokens = conn.execute(
            "SELECT (SELECT count(*) FROM kbagent_documents WHERE kb=%(kb)s), count(*), "
            "coalesce(sum(n_tokens), 0) FROM kbagent_chunks WHERE kb=%(kb)s",
            {"kb": self.name}).fetchone()
        manifest.update(documents=int(docs), chunks=int(chunks), store="postgresql")
        conn.execute("DELETE FROM kbagent_groupstats WHERE kb=%s", (self.name,))
        conn.execute("INSERT INTO kbagent_groupstats(kb, groups, n_chunks, total_tokens) "
                     "SELECT kb, groups, count(*), sum(n_tokens) FROM kbagent_chunks "
                     "WHERE kb=%s GROUP BY kb, groups", (self.name,))
        from psycopg.types.json import Jsonb

        conn.execute(
            "INSERT INTO kbagent_kbs(kb, manifest, n_chunks, total_tokens, updated_at) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (kb) DO UPDATE SET manifest=EXCLUDED.manifest,"
            " n_chunks=EXCLUDED.n_chunks, total_tokens=EXCLUDED.total_tokens, "
            "updated_at=EXCLUDED.updated_at",
            (self.name, Jsonb(manifest), chunks, tokens, manifest["updated_at"]))
        return int(docs), int(chunks)


def _vec_text(v: np.ndarray) -> str:
    return "[" + ",".join(map(repr, np.asarray(v, dtype=np.float32).tolist())) + "]"


def remove_pg_kb(name: str, dsn: str) -> None:
    """Delete KB ``name``'s rows and index in one transaction, under its writer lock."""
    conn = connect(dsn)
    try:
        if not conn.execute("SELECT pg_try_advisory_lock(%s)", (kb_lock_key(name),)).fetchone()[0]:
            raise KbBusyError(f"KB '{name}' is being updated by an ingest; try again later")
        with conn.transaction():
            conn.execute("DELETE FROM kbagent_kbs WHERE kb=%s", (name,))
            conn.execute("DELETE FROM kbagent_documents WHERE kb=%s", (name,))
            conn.execute("DELETE FROM kbagent_terms WHERE kb=%s", (name,))
            conn.execute("DELETE FROM kbagent_groupstats WHERE kb=%s", (name,))
            conn.execute("DELETE FROM kbagent_blocks WHERE kb=%s", (name,))
        drop_hnsw_indexes(conn, name)
    finally:
        conn.close()
