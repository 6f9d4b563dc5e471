"""The BM25 blocks of the PostgreSQL store, written by both ingest paths (issue 47,
item 1; read by :mod:`kbagent.kb.pg.bm25`, whose docstring says how they are used).

``kbagent_blocks`` holds every posting of ``kbagent_postings`` once more, per chain
(term, access-group set): the chain in chunk id order is cut into segments of
:data:`SEGMENT` postings, each segment's postings are ordered by impact (their score
fraction at :data:`IMPACT_AVGDL`) and cut into blocks of :data:`BLOCK`, so a segment's
best postings sit in its first block. A block row holds its chunks' ids, term
frequencies and lengths as arrays, and the Pareto frontier of its (tf, length) pairs.
Any ordering would be exact (the bound of a block is computed from its own frontier);
the impact order makes a few blocks hold the best postings.

Both ingest paths call :func:`add_postings` (through :func:`add_chunks` on the row
path) with the new postings in a temporary table: new chunk ids only grow, so a chain
gains new segments, its last segment cut again when it was not full. A bulk load cuts
once, after its last COPY batch, in segments of :data:`BULK_SEGMENT`. Deleted chunks
are taken out of the blocks that hold them (:func:`remove_docs`, the segments spanning
their ids searched). A KB built before the blocks gets them from its next ingest
(:func:`rebuild`); until then searches use the exhaustive statement.
"""

from __future__ import annotations

from typing import Any

K1, B = 1.2, 0.75  # as kbagent.kb.pg.kb
BLOCK = 128  # postings per block
SEGMENT = 32 * BLOCK  # postings per segment (a chain's id range, its blocks by impact)
# postings per segment cut by a bulk load, once for the whole load: a search reads a
# chain's blocks best bound first, and every segment's first block bounds near the
# chain's best, so a frequent term's blocks read grow with its segments (measured at
# 1M chunks: BENCHMARKS.md, "Issue 47"). A later small update appends segments of
# SEGMENT (a segment this large counts as full); a deletion rewrites only the blocks
# holding a deleted chunk.
BULK_SEGMENT = 256 * BLOCK
IMPACT_AVGDL = 100.0  # the average length a segment's postings are ordered at
VERSION = 2  # 2: the packed postings (a KB cut before them is cut again)
MANIFEST_KEY = "bm25_blocks"
NEWPOST = ("CREATE TEMP TABLE IF NOT EXISTS kbagent_newpost(term text, groups text[], "
           "chunk_id bigint, tf integer, n_tokens integer) ON COMMIT DROP")



def _cut(source: str) -> str:
    """INSERT of the blocks made of ``source``'s rows (term, groups, seg, seg_hi, blk,
    chunk_id, tf, n_tokens; one block per (term, groups, seg, blk)), with their (tf,
    length) frontiers."""
    frontier = "FILTER (WHERE above IS NULL OR tf > above)"
    return f"""INSERT INTO kbagent_blocks(kb, term, groups, seg, seg_hi, blk, ftf, flen, ids,
                           tfs, lens, packed)
SELECT %(kb)s, term, groups, seg, seg_hi, blk,
       array_agg(tf ORDER BY n_tokens) {frontier}, array_agg(n_tokens ORDER BY n_tokens)
       {frontier}, array_agg(chunk_id ORDER BY chunk_id), array_agg(tf ORDER BY chunk_id),
       array_agg(n_tokens ORDER BY chunk_id),
       string_agg(int8send(chunk_id) || int4send(tf) || int4send(n_tokens), ''::bytea
                  ORDER BY chunk_id)
FROM (SELECT *, max(tf) OVER (PARTITION BY term, groups, seg, blk ORDER BY n_tokens, tf DESC
                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS above
      FROM ({source}) s) f
GROUP BY term, groups, seg, seg_hi, blk"""


# a chain's postings in id order, cut into segments of ``segment``; each segment's postings
# by impact (the score fraction at a fixed average length: any order is exact, this
# one puts a segment's best postings in its first block), cut into blocks
def _cut_new(segment: int) -> str:
    return _cut(f"""
SELECT *, min(chunk_id) OVER w AS seg, max(chunk_id) OVER w AS seg_hi,
       (row_number() OVER (w ORDER BY tf::float8 / (tf + {K1} * ({1 - B} + {B} * n_tokens
                                     / {IMPACT_AVGDL})) DESC, chunk_id) - 1) / {BLOCK} AS blk
FROM (SELECT *, (row_number() OVER (PARTITION BY term, groups ORDER BY chunk_id) - 1)
                / {segment} AS sn FROM kbagent_newpost) a
WINDOW w AS (PARTITION BY term, groups, sn)""")


_RECUT = _cut("SELECT * FROM kbagent_keep")


def add_postings(conn: Any, kb: str, segment: int | None = None) -> None:
    """Add the postings in the temporary table ``kbagent_newpost`` to KB ``kb``'s blocks
    (inside the caller's transaction), and empty it. Per chain (term, group set): its
    last segment, when it holds fewer than ``segment`` postings (:data:`SEGMENT`, or
    :data:`BULK_SEGMENT` for a bulk load), is cut again with the new postings into
    segments of ``segment``. Chunk ids only grow; were a new id below a chain's last
    segment's end, every block is cut again."""
    segment = segment or SEGMENT
    tails = ("WITH m AS (SELECT term, groups, min(chunk_id) AS lo FROM kbagent_newpost "
             "GROUP BY term, groups), t AS (SELECT m.term, m.groups, m.lo, (SELECT x.seg "
             "FROM kbagent_blocks x WHERE x.kb = %(kb)s AND x.term = m.term AND x.groups = "
             "m.groups ORDER BY x.seg DESC LIMIT 1) AS seg FROM m) ")
    if conn.execute(tails + "SELECT EXISTS (SELECT 1 FROM t JOIN kbagent_blocks b ON b.kb = "
                    "%(kb)s AND b.term = t.term AND b.groups = t.groups AND b.seg = t.seg "
                    "WHERE b.seg_hi >= t.lo)", {"kb": kb}).fetchone()[0]:
        _recut_all(conn, kb, segment)
        return
    conn.execute(
        tails + ", full_ AS (SELECT b.term, b.groups, b.seg FROM t JOIN kbagent_blocks b ON "
        "b.kb = %(kb)s AND b.term = t.term AND b.groups = t.groups AND b.seg = t.seg "
        "GROUP BY b.term, b.groups, b.seg HAVING sum(cardinality(b.ids)) < %(seg)s), "
        "gone AS (DELETE FROM kbagent_blocks b USING full_ f WHERE b.kb = %(kb)s AND "
        "b.term = f.term AND b.groups = f.groups AND b.seg = f.seg RETURNING b.term, b.groups, "
        "b.ids, b.tfs, b.lens) "
        "INSERT INTO kbagent_newpost SELECT g.term, g.groups, u.id, u.tf, u.len FROM gone g, "
        "unnest(g.ids, g.tfs, g.lens) AS u(id, tf, len)", {"kb": kb, "seg": segment})
    conn.execute(_cut_new(segment), {"kb": kb})
    conn.execute("TRUNCATE kbagent_newpost")


def _recut_all(conn: Any, kb: str, segment: int) -> None:
    conn.execute("INSERT INTO kbagent_newpost SELECT b.term, b.groups, u.id, u.tf, u.len "
                 "FROM kbagent_blocks b, unnest(b.ids, b.tfs, b.lens) AS u(id, tf, len) "
                 "WHERE b.kb = %s", (kb,))
    conn.execute("DELETE FROM kbagent_blocks WHERE kb = %s", (kb,))
    conn.execute(_cut_new(segment), {"kb": kb})
    conn.execute("TRUNCATE kbagent_newpost")


def add_chunks(conn: Any, kb: str, chunk_ids: list[int]) -> None:
    """Blocks for the postings of chunks ``chunk_ids`` (written by the row path)."""
    if not chunk_ids:
        return
    conn.execute(NEWPOST)
    conn.execute("INSERT INTO kbagent_newpost SELECT p.term, c.groups, p.chunk_id, p.tf, "
                 "p.n_tokens FROM kbagent_chunks c JOIN kbagent_postings p ON p.kb = c.kb "
                 "AND p.chunk_id = c.id WHERE c.kb = %s AND c.id = ANY(%s)", (kb, chunk_ids))
    add_postings(conn, kb)


def rebuild(conn: Any, kb: str) -> None:
    """Cut every block of KB ``kb`` again from its postings (a KB built before them), in
    segments of :data:`BULK_SEGMENT`."""
    conn.execute("DELETE FROM kbagent_blocks WHERE kb = %s", (kb,))
    conn.execute(NEWPOST)
    conn.execute("INSERT INTO kbagent_newpost SELECT p.term, c.groups, p.chunk_id, p.tf, "
                 "p.n_tokens FROM kbagent_chunks c JOIN kbagent_postings p ON p.kb = c.kb "
                 "AND p.chunk_id = c.id WHERE c.kb = %s", (kb,))
    add_postings(conn, kb, BULK_SEGMENT)


def remove_docs(conn: Any, kb: str, doc_ids: list[int]) -> None:
    """Take the chunks of documents ``doc_ids`` out of their blocks (before the
    documents are deleted): the blocks of the segments spanning them that hold one are
    rewritten without it, a block left empty goes."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS kbagent_gonepost(term text, groups text[], "
                 "chunk_id bigint) ON COMMIT DROP")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS kbagent_keep(term text, groups text[], "
                 "seg bigint, seg_hi bigint, blk integer, chunk_id bigint, tf integer, "
                 "n_tokens integer) ON COMMIT DROP")
    conn.execute("INSERT INTO kbagent_gonepost SELECT p.term, c.groups, p.chunk_id "
                 "FROM kbagent_chunks c JOIN kbagent_postings p ON p.kb = c.kb "
                 "AND p.chunk_id = c.id WHERE c.kb = %s AND c.doc_id = ANY(%s)", (kb, doc_ids))
    conn.execute(
        "WITH g AS (SELECT term, groups, array_agg(chunk_id) AS ids, min(chunk_id) AS lo, "
        "max(chunk_id) AS hi FROM kbagent_gonepost GROUP BY term, groups), "
        "hit AS (DELETE FROM kbagent_blocks b USING g WHERE b.kb = %(kb)s AND b.term = g.term "
        "AND b.groups = g.groups AND b.seg <= g.hi AND b.seg_hi >= g.lo AND b.ids && g.ids "
        "RETURNING b.term, b.groups, b.seg, b.seg_hi, b.blk, b.ids, b.tfs, b.lens) "
        "INSERT INTO kbagent_keep SELECT h.term, h.groups, h.seg, h.seg_hi, h.blk, u.id, u.tf, "
        "u.len FROM hit h, unnest(h.ids, h.tfs, h.lens) AS u(id, tf, len) WHERE NOT EXISTS "
        "(SELECT 1 FROM kbagent_gonepost g WHERE g.term = h.term AND g.groups = h.groups "
        "AND g.chunk_id = u.id)", {"kb": kb})
    conn.execute(_RECUT, {"kb": kb})
    conn.execute("TRUNCATE kbagent_gonepost, kbagent_keep")


