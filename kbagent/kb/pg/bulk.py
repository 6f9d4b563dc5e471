"""Bulk loads into the PostgreSQL store: binary COPY, postings unnested and sorted by
the server, and the KB's HNSW index built once after the rows are in.

Inserting a row into an HNSW index costs a graph search and neighbour updates; at a
million chunks that was most of an ingest's CPU (BENCHMARKS.md, "PostgreSQL to
1,000,000 chunks"). A bulk load writes its chunks with no HNSW index for the KB and
builds it at the end, inside the same transaction: a kill or Ctrl-C at any moment
rolls back rows and index together, and readers (who never wait for the SHARE lock
CREATE INDEX takes) see the previous state until the commit. A KB that already has
an index (``--rebuild``, or a load at least as large as what it keeps) has it dropped
CONCURRENTLY first: until the commit its vector searches are exact scans, and a
load that fails leaves the KB without the index until its next ingest rebuilds it.
Small incremental updates stay on the row-by-row path and keep the index.

A bulk load holds :data:`~kbagent.kb.pg.schema.BULK_LOCK` (a session advisory lock)
from that drop to its commit: bulk loads of different KBs write one at a time (their
scans and embeddings still run at once), so two index builds never deadlock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from kbagent.kb.access import index_tokens
from kbagent.kb.ingest_plan import Pending
from kbagent.kb.pg import bm25_blocks
from kbagent.kb.pg.schema import hnsw_index_sql

BULK_MIN_CHUNKS = 2_000  # an incremental load this large (and >= half what it keeps) is bulk
BATCH_CHUNKS = 20_000  # chunks per COPY batch (the postings of a batch are sorted)
# pgvector's in-memory graph per tuple: ~715 bytes of links and headers plus the
# vector (measured: 2,253 bytes at 384 float32 dimensions; the index now holds halfvec,
# 2 bytes a dimension). A graph that does not fit maintenance_work_mem is finished by
# slow on-disk inserts, so a build raises it to what the KB needs, up to this cap (a
# server set higher keeps its own setting).
GRAPH_OVERHEAD_BYTES = 800
BUILD_MEMORY_CAP_MB = 4096

CHUNK_COLUMNS = ("kb", "id", "doc_id", "ordinal", "start_line", "end_line", "heading", "text",
                 "text_hash", "groups", "n_tokens", "embedding", "location")
CHUNK_TYPES = ["text", "int8", "int8", "int4", "int4", "int4", "text", "text", "text",
               "text[]", "int4", "vector", "text"]
TF_TYPES = ["int8", "int4", "text[]", "text[]", "int4[]"]


def use_bulk(forced: bool | None, fresh: bool, new_chunks: int, kept_chunks: int) -> bool:
    """Whether this ingest loads in bulk: a first load or ``--rebuild`` (``fresh``),
    or at least :data:`BULK_MIN_CHUNKS` new chunks and at least half as many as the
    KB keeps: building the whole index then costs less than inserting the new rows
    into it (an insert into the graph costs 3-4 times a build's share per vector at 10k
    chunks, and more as the graph grows)."""
    if forced is not None:
        return forced
    return fresh or (new_chunks >= BULK_MIN_CHUNKS and 2 * new_chunks >= kept_chunks)


def _batches(pending: list[Pending], doc_ids: list[int], chunk_ids: list[int]
             ) -> Iterator[list[tuple[Pending, int, int, int]]]:
    """(document, its id, chunk index, chunk id), about BATCH_CHUNKS at a time."""
    batch: list[tuple[Pending, int, int, int]] = []
    ids = iter(chunk_ids)
    for p, did in zip(pending, doc_ids, strict=True):
        batch += [(p, did, i, next(ids)) for i in range(len(p.chunks))]
        if len(batch) >= BATCH_CHUNKS:
            yield batch
            batch = []
    if batch:
        yield batch


def write_chunks(conn: Any, kb: str, pending: list[Pending], doc_ids: list[int],
                 chunk_ids: list[int], vectors: dict[str, np.ndarray], analyzer: Any,
                 checkpoint: Callable[[str], None]) -> None:
    """Chunks (binary COPY, vectors as pgvector's binary form), their postings and the
    document frequencies, the same rows the row-by-row path writes."""
    conn.execute("CREATE TEMP TABLE kbagent_bulk_tf(chunk_id bigint, n_tokens integer, "
                 "groups text[], terms text[], tfs integer[]) ON COMMIT DROP")
    conn.execute("CREATE TEMP TABLE kbagent_bulk_df(term text, groups text[], df bigint) "
                 "ON COMMIT DROP")
    conn.execute(bm25_blocks.NEWPOST)
    first = True
    for batch in _batches(pending, doc_ids, chunk_ids):
        tfs: list[tuple[int, int, list[str], list[str], list[int]]] = []
        groups: dict[int, list[str]] = {}
        with conn.cursor().copy(f"COPY kbagent_chunks({','.join(CHUNK_COLUMNS)}) FROM STDIN "
                                "(FORMAT BINARY)") as cp:
            cp.set_types(CHUNK_TYPES)
            for p, did, i, cid in batch:
                ch, h = p.chunks[i], p.hashes[i]
                g = groups.setdefault(did, index_tokens(p.doc.access))
                tokens = analyzer.analyze(ch.index_text(p.doc.title))
                tf = Counter(tokens)
                tfs.append((cid, len(tokens), g, list(tf), list(tf.values())))
                cp.write_row((kb, cid, did, ch.ordinal, ch.start_line, ch.end_line, ch.heading,
                              ch.text, h, g, len(tokens), vectors[h], ch.location))
                if first:  # a kill or Ctrl-C from here on aborts the COPY mid-stream
                    checkpoint("pg-copying")
                    first = False
        with conn.cursor().copy("COPY kbagent_bulk_tf FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(TF_TYPES)
            for row in tfs:
                cp.write_row(row)
        # in key order: the inserts walk the postings index page by page
        conn.execute("INSERT INTO kbagent_postings(kb, term, chunk_id, tf, n_tokens) "
                     "SELECT %s, u.term, t.chunk_id, u.tf, t.n_tokens FROM kbagent_bulk_tf t "
                     "CROSS JOIN LATERAL unnest(t.terms, t.tfs) AS u(term, tf) "
                     "ORDER BY u.term, t.chunk_id", (kb,))
        conn.execute("INSERT INTO kbagent_bulk_df SELECT u.term, t.groups, count(*) "
                     "FROM kbagent_bulk_tf t CROSS JOIN LATERAL unnest(t.terms) AS u(term) "
                     "GROUP BY u.term, t.groups")
        conn.execute("INSERT INTO kbagent_newpost SELECT u.term, t.groups, t.chunk_id, u.tf, "
                     "t.n_tokens FROM kbagent_bulk_tf t CROSS JOIN LATERAL "
                     "unnest(t.terms, t.tfs) AS u(term, tf)")
        conn.execute("TRUNCATE kbagent_bulk_tf")
    # the BM25 blocks, cut once for the whole load (chains' last segments cut again)
    bm25_blocks.add_postings(conn, kb, bm25_blocks.BULK_SEGMENT)
    conn.execute("INSERT INTO kbagent_terms(kb, term, groups, df) SELECT %s, term, groups, "
                 "sum(df) FROM kbagent_bulk_df GROUP BY term, groups "
                 "ON CONFLICT (kb, term, groups) DO UPDATE "
                 "SET df = kbagent_terms.df + EXCLUDED.df", (kb,))


def build_memory_mb(rows: int, dim: int) -> int:
    """maintenance_work_mem (MB) for an in-memory HNSW build of ``rows`` vectors."""
    need = rows * (dim * 2 + GRAPH_OVERHEAD_BYTES) * 1.15 / 2**20  # halfvec: 2 bytes each
    return int(min(max(need, 64), BUILD_MEMORY_CAP_MB))


def build_hnsw_index(conn: Any, name: str, dim: int, rows: int) -> None:
    """Build KB ``name``'s HNSW index over its rows, inside the caller's transaction.
    A parallel build keeps its graph in shared memory; where that cannot be had (a
    small /dev/shm), the build is retried by this backend alone."""
    import psycopg

    have = int(conn.execute("SELECT pg_size_bytes(current_setting('maintenance_work_mem'))"
                            ).fetchone()[0]) // 2**20
    want = build_memory_mb(rows, dim)
    if want > have:
        conn.execute(f"SET LOCAL maintenance_work_mem = '{want}MB'")
    try:
        with conn.transaction():  # a savepoint
            conn.execute(hnsw_index_sql(name, dim))
    except psycopg.errors.QueryCanceled:
        raise
    except psycopg.Error:
        conn.execute("SET LOCAL max_parallel_maintenance_workers = 0")
        conn.execute(hnsw_index_sql(name, dim))
