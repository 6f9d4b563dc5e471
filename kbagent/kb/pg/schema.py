"""Tables of the PostgreSQL store, shared by every KB of one database.

Every table carries ``kb`` first and every key starts with it, so the tables
can be distributed on Citus by ``kb`` with their rows co-located (see
``docs/scaling.md``). Chunk vectors are a ``vector`` column of any dimension;
each KB gets its own partial HNSW index over ``embedding::vector(dim)``.

BM25 is computed exactly from ``kbagent_postings`` (term frequency and chunk
length per chunk, the sparse term vector), ``kbagent_terms`` (document
frequency per term and access-group set) and ``kbagent_groupstats`` (chunks and
tokens per access-group set): the statistics of the chunks the caller may read,
as the local store computes them; the terms come from the same analyzer as the
local tantivy index.
"""

from __future__ import annotations

import hashlib
from typing import Any

SCHEMA_LOCK = 0x6B62_6167  # advisory lock taken while creating the tables
# session advisory lock a bulk load holds from dropping its KB's HNSW index to its commit
# (kbagent.kb.pg.bulk): its CREATE INDEX takes a SHARE lock on kbagent_chunks inside the
# data transaction, and two transactions doing so at once would deadlock
BULK_LOCK = 0x6B62_6275

DDL = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS kbagent_kbs(
    kb text PRIMARY KEY,
    manifest jsonb NOT NULL,
    n_chunks bigint NOT NULL DEFAULT 0,
    total_tokens bigint NOT NULL DEFAULT 0,
    updated_at double precision NOT NULL
);
CREATE TABLE IF NOT EXISTS kbagent_documents(
    kb text NOT NULL,
    id bigserial,
    path text NOT NULL,
    title text NOT NULL DEFAULT '',
    format text NOT NULL,
    language text NOT NULL DEFAULT '',
    content_hash text NOT NULL,
    size bigint NOT NULL,
    access text[] NOT NULL DEFAULT '{}',
    text text NOT NULL,
    line_map text,
    locations text,  -- page/slide/sheet segments (kbagent.kb.locations.dumps)
    n_chunks integer NOT NULL DEFAULT 0,
    ingested_at double precision NOT NULL,
    PRIMARY KEY (kb, id),
    UNIQUE (kb, path)
);
CREATE TABLE IF NOT EXISTS kbagent_chunks(
    kb text NOT NULL,
    id bigserial,
    doc_id bigint NOT NULL,
    ordinal integer NOT NULL,
    start_line integer NOT NULL,
    end_line integer NOT NULL,
    heading text NOT NULL DEFAULT '',
    text text NOT NULL,
    text_hash text NOT NULL,
    groups text[] NOT NULL,
    n_tokens integer NOT NULL,
    location text NOT NULL DEFAULT '',
    embedding vector,
    PRIMARY KEY (kb, id),
    FOREIGN KEY (kb, doc_id) REFERENCES kbagent_documents(kb, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS kbagent_chunks_doc ON kbagent_chunks(kb, doc_id);
CREATE INDEX IF NOT EXISTS kbagent_chunks_groups ON kbagent_chunks USING gin(groups);
-- the planner's row estimate for the HNSW indexes' predicate (else a fixed 0.5%)
CREATE STATISTICS IF NOT EXISTS kbagent_chunks_dims ON (vector_dims(embedding)), kb
    FROM kbagent_chunks;
CREATE TABLE IF NOT EXISTS kbagent_postings(
    kb text NOT NULL,
    term text NOT NULL,
    chunk_id bigint NOT NULL,
    tf integer NOT NULL,
    n_tokens integer NOT NULL,  -- the chunk's length, copied: scoring reads this index only
    PRIMARY KEY (kb, term, chunk_id) INCLUDE (tf, n_tokens),
    FOREIGN KEY (kb, chunk_id) REFERENCES kbagent_chunks(kb, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS kbagent_postings_chunk ON kbagent_postings(kb, chunk_id);
-- document frequency per term AND per access-group set, so a caller's BM25 counts only
-- the chunks it may read (as the local store does): df = sum over its group sets
CREATE TABLE IF NOT EXISTS kbagent_terms(
    kb text NOT NULL,
    term text NOT NULL,
    groups text[] NOT NULL,
    df integer NOT NULL,
    PRIMARY KEY (kb, term, groups)
);
-- the postings again, per (term, access-group set) in segments of 4,096 chunks in id
-- order, each cut into blocks of 128 by impact, with what bounds their BM25 scores
-- (kbagent.kb.pg.bm25): exact top-k BM25 reads the few blocks that can hold it; the
-- bounds are read from the index alone
CREATE TABLE IF NOT EXISTS kbagent_blocks(
    kb text NOT NULL,
    term text NOT NULL,
    groups text[] NOT NULL,
    seg bigint NOT NULL,  -- the segment's first and last chunk id
    seg_hi bigint NOT NULL,
    blk integer NOT NULL,  -- the block's place in its segment, best first
    ftf integer[] NOT NULL,  -- the (tf, length) pairs no other posting of the block
    flen integer[] NOT NULL,  -- beats with both a larger tf and a smaller length
    ids bigint[] NOT NULL,
    tfs integer[] NOT NULL,
    lens integer[] NOT NULL,
    -- the same postings as 16-byte records (id int8, tf int4, length int4, big-endian),
    -- what a search reads: bytes the client takes as they are (array elements are sent
    -- one by one: three times the server's time at a million chunks)
    packed bytea,
    PRIMARY KEY (kb, term, groups, seg, blk) INCLUDE (seg_hi, ftf, flen)
);
-- a database made before the packed postings (their KBs read exhaustively until their
-- next ingest cuts their blocks again: kbagent.kb.pg.bm25_blocks.VERSION); only then,
-- since an ALTER TABLE locks out the searches even when the column is there
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'kbagent_blocks'::regclass
                   AND attname = 'packed' AND NOT attisdropped) THEN
        ALTER TABLE kbagent_blocks ADD COLUMN packed bytea;
    END IF;
END $$;
-- chunk count and total length per access-group set (a caller's N and average length)
CREATE TABLE IF NOT EXISTS kbagent_groupstats(
    kb text NOT NULL,
    groups text[] NOT NULL,
    n_chunks bigint NOT NULL,
    total_tokens bigint NOT NULL,
    PRIMARY KEY (kb, groups)
);
-- the symbol index of code documents (kbagent.kb.pg.symbols; the local store's
-- symbol_files / symbols / symbol_refs): deleting a document drops its symbols
CREATE TABLE IF NOT EXISTS kbagent_symbol_files(
    kb text NOT NULL,
    doc_id bigint NOT NULL,
    language text NOT NULL,
    error text NOT NULL DEFAULT '',
    PRIMARY KEY (kb, doc_id),
    FOREIGN KEY (kb, doc_id) REFERENCES kbagent_documents(kb, id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS kbagent_symbols(
    kb text NOT NULL,
    id bigserial,
    doc_id bigint NOT NULL,
    name text NOT NULL,
    qualname text NOT NULL,
    kind text NOT NULL,
    start_line integer NOT NULL,
    end_line integer NOT NULL,
    parent text NOT NULL DEFAULT '',
    PRIMARY KEY (kb, id),
    FOREIGN KEY (kb, doc_id) REFERENCES kbagent_documents(kb, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS kbagent_symbols_name ON kbagent_symbols(kb, name);
CREATE INDEX IF NOT EXISTS kbagent_symbols_doc ON kbagent_symbols(kb, doc_id);
CREATE TABLE IF NOT EXISTS kbagent_symbol_refs(
    kb text NOT NULL,
    doc_id bigint NOT NULL,
    name text NOT NULL,
    line integer NOT NULL,
    is_call boolean NOT NULL,
    scope_id bigint,  -- the enclosing definition (kbagent_symbols.id), NULL at top level
    PRIMARY KEY (kb, name, is_call, doc_id, line),
    FOREIGN KEY (kb, doc_id) REFERENCES kbagent_documents(kb, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS kbagent_symbol_refs_doc ON kbagent_symbol_refs(kb, doc_id);
"""


# the DDL that last ran, noted on kbagent_kbs: any change to DDL runs it again
SCHEMA_MARK = "kbagent schema " + hashlib.sha256(DDL.encode()).hexdigest()[:16]


def create_schema(conn: Any) -> None:
    """Create the tables once per database (two first ingesters may race: a lock).
    Skipped when the DDL already ran: its CREATE INDEX IF NOT EXISTS takes a SHARE
    lock on each table before it finds the index there, so it would wait for every
    open ingest transaction of every KB."""
    mark = "SELECT obj_description(to_regclass('kbagent_kbs'), 'pg_class')"
    if conn.execute(mark).fetchone()[0] == SCHEMA_MARK:
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        if conn.execute(mark).fetchone()[0] != SCHEMA_MARK:
            conn.execute(DDL)
            conn.execute(f"COMMENT ON TABLE kbagent_kbs IS '{SCHEMA_MARK}'")


def kb_lock_key(name: str) -> int:
    """The advisory lock key of KB ``name`` (a signed 64-bit integer)."""
    digest = hashlib.sha256(f"kbagent:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def hnsw_index_prefix(name: str) -> str:
    return "kbagent_hnsw_" + hashlib.sha256(name.encode()).hexdigest()[:16]


def hnsw_index_name(name: str, dim: int) -> str:
    """KB ``name``'s HNSW index over its ``dim``-dimensional vectors, stored as halfvec
    (half the size of float32; the search re-ranks its candidates with the stored float32
    vectors). An index of an older version (float32, no ``h``) is replaced by the next
    ingest."""
    return f"{hnsw_index_prefix(name)}_{dim}h"


def hnsw_index_sql(name: str, dim: int) -> Any:
    """The CREATE INDEX statement of KB ``name``'s HNSW index (one definition for the
    row-by-row path and the bulk build)."""
    from psycopg import sql

    return sql.SQL(
        "CREATE INDEX {index} ON kbagent_chunks USING hnsw "
        "((embedding::halfvec({dim})) halfvec_cosine_ops) "
        "WHERE kb = {kb} AND vector_dims(embedding) = {dim}").format(
            index=sql.Identifier(hnsw_index_name(name, dim)), dim=sql.Literal(dim),
            kb=sql.Literal(name))


def hnsw_index_state(conn: Any, name: str, dim: int) -> str:
    """``"valid"``, ``"invalid"`` (a CONCURRENTLY statement interrupted) or ``"missing"``."""
    row = conn.execute("SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = "
                       "to_regclass(%s)", (hnsw_index_name(name, dim),)).fetchone()
    return "missing" if row is None else "valid" if row[0] else "invalid"


def drop_index_concurrently(conn: Any, index: str) -> None:
    """Drop ``index`` without blocking readers or other writers (autocommit ``conn``)."""
    from psycopg import sql

    conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(index)))


def ensure_hnsw_index(conn: Any, name: str, dim: int) -> None:
    """Create KB ``name``'s partial HNSW index (before its data transaction: CREATE
    INDEX takes a SHARE lock on the table, and two ingesters taking it inside their
    data transactions would deadlock; one at a time under the schema lock). An index
    left invalid is dropped first; a KB whose index a failed bulk load had dropped
    gets it back here."""
    state = hnsw_index_state(conn, name, dim)
    if state == "valid":
        return
    if state == "invalid":
        drop_index_concurrently(conn, hnsw_index_name(name, dim))
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        if hnsw_index_state(conn, name, dim) == "missing":
            conn.execute(hnsw_index_sql(name, dim))


def drop_hnsw_indexes(conn: Any, name: str, keep: str = "") -> None:
    """Drop KB ``name``'s HNSW indexes except ``keep`` (vectors of another dimension, or
    an older version's float32 index), concurrently (autocommit ``conn``)."""
    for (index,) in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = "
                                 "'kbagent_chunks' AND indexname LIKE %s",
                                 (hnsw_index_prefix(name) + "%",)).fetchall():
        if index != keep:
            drop_index_concurrently(conn, index)
