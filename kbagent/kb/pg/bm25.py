"""Exact top-k BM25 in PostgreSQL with early termination (issue 47, item 1).

``kbagent_postings`` holds one row per (term, chunk); the exhaustive statement
(:data:`kbagent.kb.pg.kb._BM25`) scores every posting of every query term, which
at a million chunks costs about a second for a frequent term. ``kbagent_blocks``
(:mod:`kbagent.kb.pg.bm25_blocks`) holds the same postings again per (term,
access-group set), in blocks of up to 128 chunks ordered by impact within id
segments, each block with the Pareto frontier of its (tf, length) pairs. A BM25
term score grows with tf and falls with length whatever the caller's idf and
average length, so a block's best score for a caller is the best over its frontier
(a few pairs), computed by the server with the caller's own statistics: the bound is
exact for every caller, and per-caller statistics stay as the exhaustive statement
computes them.

A search (:func:`top_k`) is a threshold algorithm over blocks (score-at-a-time):
1. the caller's N, average length and idf per term, as the exhaustive statement
   computes them (only the group sets the caller may read), and the KB's chunk id range;
2. the bound of every block of the query terms in the group sets the caller may read
   (``groups && allowed``: the access filter inside the statement);
3. blocks in decreasing bound order, a batch per round trip (doubling), fetched as runs
   of each segment's blocks (one index range scan a segment) with their postings packed
   as bytes; every posting scored here with the exhaustive statement's float8 operations
   (:func:`_scores`: the same bits), a chunk's partial score the sum of what was read of
   it (a lower bound: BM25 term scores are positive), kept in rows found through an
   array over the KB's chunk ids (:class:`~kbagent.kb.pg.bm25_seen.Dense`);
4. once the k-th best partial score is above what any chunk no block read so far
   holds can reach (the sum over terms of the best bound left in its group set),
   the candidates are the chunks whose partial score plus the best bounds left for
   their missing terms reach it; their missing postings are looked up in
   ``kbagent_postings``, best bound first, a batch a round trip, until every candidate
   left is exact or bounded below the k-th best (:func:`_complete`), and the exact
   scores are ranked (ties by id). Any other chunk scores below the k-th best: the top
   k are the exhaustive statement's. A score is its terms' contributions summed in
   query-term order (the exhaustive statement sums in the order it meets them: the
   last bit may differ).

At a million chunks (BENCHMARKS.md, "Issue 47"), a query of several frequent terms
reads about 4,000 blocks: the packed postings, the range scans, the array over the ids
and the batched lookups took its search from about 200 to 70-100 ms.

All round trips run in one REPEATABLE READ READ ONLY transaction (one snapshot),
the final search statement (fusion, chunk rows) included. A KB built before the
blocks is read with the exhaustive statement until its next ingest fills them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from kbagent.kb.pg.bm25_blocks import K1, VERSION, B
from kbagent.kb.pg.bm25_seen import Dense, Left, OutsideSpan, Seen

FIRST_BATCH = 16  # blocks fetched by the first scoring round trip; doubled each round
LOOKUP_MAX = 20_000  # postings looked up at most to complete the candidates' scores
LOOKUP_BATCH = 2_048  # postings looked up a round trip, best candidates first
# chunk ids spanning at most this many: the chunks read are found through an array over
# the span (4 bytes an id, its pages touched as read), not by sorting (bm25_seen.Dense)
DENSE_SPAN = 1 << 24
SLACK = 1 + 1e-9  # bounds are summed: rounded up by this much
# a block's postings come as 16-byte big-endian records (bm25_blocks: ``packed``), read
# without a Python object per posting: at a million chunks a frequent-term query reads
# thousands of blocks
_POST = np.dtype([("id", ">i8"), ("tf", ">i4"), ("len", ">i4")])


# ------------------------------------------------------------------ search
_STATS = """
WITH st AS (SELECT coalesce(sum(n_chunks), 0)::float8 AS n,
              greatest(coalesce(sum(total_tokens), 0)::float8
                       / greatest(coalesce(sum(n_chunks), 0), 1), 1e-9) AS avgdl
       FROM kbagent_groupstats g WHERE kb = {kb} AND {gallowed})
SELECT st.avgdl, t.term, ln(1 + (st.n - sum(t.df) + 0.5) / (sum(t.df) + 0.5)) AS idf,
       (SELECT manifest->>'bm25_blocks' FROM kbagent_kbs WHERE kb = {kb}),
       (SELECT min(id) FROM kbagent_chunks WHERE kb = {kb}),
       (SELECT max(id) FROM kbagent_chunks WHERE kb = {kb})
FROM st LEFT JOIN kbagent_terms t ON t.kb = {kb} AND t.term = ANY(%(terms)s) AND {tallowed}
GROUP BY t.term, st.n, st.avgdl
"""
_SCORE = "{idf} * {tf} * {k1p1} / ({tf} + {k1} * (1 - {b} + {b} * {len} / %(avgdl)s::float8))"
_BLOCKS = """
SELECT q.i, b.groups::text, array_agg(b.seg), array_agg(b.blk),
       array_agg((SELECT max({score}) FROM unnest(b.ftf, b.flen) AS u(tf, len)))
FROM unnest(%(terms)s::text[], %(idf)s::float8[]) WITH ORDINALITY AS q(term, idf, i)
JOIN kbagent_blocks b ON b.kb = {kb} AND b.term = q.term AND {ballowed}
GROUP BY q.i, b.groups
"""
# a batch's blocks by segment: a segment's blocks are read best first, so a batch holds
# a run of them (blocks from..to: one index range scan, not a probe per block)
_FETCH = """
SELECT k.n, b.blk, b.packed
FROM unnest(%(terms)s::text[], %(groups)s::text[], %(segs)s::bigint[], %(lo)s::int[],
            %(hi)s::int[]) WITH ORDINALITY AS k(term, g, seg, lo, hi, n)
JOIN kbagent_blocks b ON b.kb = {kb} AND b.term = k.term AND b.groups = k.g::text[]
     AND b.seg = k.seg AND b.blk BETWEEN k.lo AND k.hi AND {ballowed}
"""
# the postings of the candidates that a term's blocks read so far did not hold: one
# probe per (term, chunk) pair, not the cross product of the terms and the chunks
_LOOKUP = """
SELECT k.n, p.tf, p.n_tokens
FROM unnest(%(terms)s::text[], %(ids)s::bigint[]) WITH ORDINALITY AS k(term, id, n)
JOIN kbagent_postings p ON p.kb = {kb} AND p.term = k.term AND p.chunk_id = k.id
"""


def top_k(execute: Callable[..., Any], sqls: dict[str, Any], terms: list[str], depth: int,
          params: dict[str, Any]) -> tuple[list[int], list[float], int] | None:
    """The exact BM25 top ``depth`` (ids, scores, best first, ties by id) and the number
    of blocks read; None when the KB has no blocks (built before them).
    ``execute(statement, params)`` runs one statement in the caller's snapshot;
    ``sqls``: :data:`_STATS`, :data:`_BLOCKS`, :data:`_FETCH`, :data:`_LOOKUP` composed
    for the KB and caller (:func:`statements`); ``params``: the caller's ``allowed``."""
    rows = execute(sqls["stats"], {**params, "terms": terms}).fetchall()
    if not rows or rows[0][3] != str(VERSION):
        return None
    idf = {t: float(w) for _a, t, w, *_v in rows if t is not None}
    if not idf:
        return [], [], 0
    avgdl = float(rows[0][0])
    qterms = [t for t in terms if t in idf]  # query order: the order scores are summed in
    nt = len(qterms)
    w = np.array([idf[t] for t in qterms])
    meta = execute(sqls["blocks"], {**params, "terms": qterms, "avgdl": avgdl,
                                    "idf": list(w)}).fetchall()
    if not meta:
        return [], [], 0
    groups = sorted({g for _i, g, *_r in meta})
    gno = {g: n for n, g in enumerate(groups)}
    # every block: (bound, chain, seg, blk), best bound first; a chain: (group, term)
    chain = np.concatenate([np.full(len(r[2]), n) for n, r in enumerate(meta)])
    seg = np.concatenate([np.asarray(r[2], dtype=np.int64) for r in meta])
    blk = np.concatenate([np.asarray(r[3], dtype=np.int64) for r in meta])
    bound = np.concatenate([np.asarray(r[4], dtype=np.float64) for r in meta]) * SLACK
    order = np.lexsort((blk, seg, chain, -bound))
    c_group = np.array([gno[r[1]] for r in meta])
    c_term = np.array([int(r[0]) - 1 for r in meta])
    left = Left(chain[order], bound[order], c_group, c_term, len(groups), nt)
    lo, hi = int(rows[0][4] or 0), int(rows[0][5] or 0)
    seen: Seen = Dense(nt, lo, hi - lo + 1) if hi - lo < DENSE_SPAN else Seen(nt)
    term_names = np.array(qterms, dtype=object)
    group_names = np.array(groups, dtype=object)
    wide = int(blk.max()) + 1  # a (request, block) pair as one number
    pos, batch = 0, FIRST_BATCH
    while True:
        take = order[pos:pos + batch]
        pos += len(take)
        batch *= 2
        take = take[np.lexsort((blk[take], seg[take], chain[take]))]  # by segment, then block
        first = np.flatnonzero(np.r_[True, (chain[take][1:] != chain[take][:-1])
                                     | (seg[take][1:] != seg[take][:-1])])
        last = np.r_[first[1:], len(take)] - 1
        tc = chain[take[first]]  # one request per segment: its blocks lo..hi
        res = execute(sqls["fetch"], {
            **params, "terms": term_names[c_term[tc]].tolist(),
            "groups": group_names[c_group[tc]].tolist(), "segs": seg[take[first]].tolist(),
            "lo": blk[take[first]].tolist(), "hi": blk[take[last]].tolist()},
            binary=True).fetchall()  # the packed bytes as they are
        # a segment's run may pass over a block read before or left for later: not this
        # batch's, it is dropped
        got = np.array([(int(r[0]) - 1, int(r[1])) for r in res], dtype=np.int64).reshape(-1, 2)
        ask = np.repeat(np.arange(len(first)), last - first + 1) * wide + blk[take]
        keep = np.flatnonzero(np.isin(got[:, 0] * wide + got[:, 1], ask))
        packed = [res[i][2] for i in keep]
        if packed:  # the batch's postings, a block's chain repeated per posting
            cs = tc[got[keep, 0]]
            per = np.array([len(p) // _POST.itemsize for p in packed])
            recs = np.frombuffer(b"".join(packed), dtype=_POST)
            t_of = np.repeat(c_term[cs], per)
            got_ids, got_groups = recs["id"].astype(np.int64), np.repeat(c_group[cs], per)
            got_scores = _scores(w[t_of], recs["tf"].astype(np.float64),
                                 recs["len"].astype(np.float64), avgdl)
            try:
                seen.add(got_ids, t_of, got_groups, got_scores)
            except OutsideSpan:  # the reader moved to another node mid-search (a replica
                # back, a reconnect): in_snapshot runs the search again; finish this one
                seen = cast(Dense, seen).sorted()
                seen.add(got_ids, t_of, got_groups, got_scores)
        rest = left.after(pos)  # best bound left per (group, term)
        ids_s, vals_s, read_s, group_s = seen.view()
        partial = _sum(vals_s)
        if pos == len(order):  # every block read: the sums are the scores
            return (*_best(ids_s, partial, depth), pos)
        if len(partial) < depth:
            continue
        theta = np.partition(partial, len(partial) - depth)[len(partial) - depth]
        if rest.sum(axis=1).max() >= theta:
            continue  # a chunk no block read so far holds could still be in the top
        ub = partial.copy()  # plus the best left of each term not read
        one = len(rest) == 1  # one group set (most callers): a number, not an array
        for t in range(nt):
            ub += np.where(read_s[:, t], 0.0, rest[0, t] if one else rest[group_s, t])
        cand = np.flatnonzero(ub >= theta)
        miss = ~read_s[cand] & (rest[group_s[cand]] > 0)
        if miss.sum() > LOOKUP_MAX:
            continue  # too many postings to look up: read more blocks first
        ids_c, vals_c = ids_s[cand], vals_s[cand]
        low = _complete(execute, sqls["lookup"], term_names, ids_c, vals_c, miss, ub[cand],
                        depth, lambda t, tf, ln: _scores(w[t], tf, ln, avgdl))
        return (*_best(ids_c, low, depth), pos)


def _complete(execute: Callable[..., Any], lookup: Any, term_names: np.ndarray,
              ids: np.ndarray, vals: np.ndarray, miss: np.ndarray, ub: np.ndarray, depth: int,
              score: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
              ) -> np.ndarray:
    """The candidates' scores, exact for every one that can still be in the top
    ``depth``: their missing postings (``miss``: candidate x term) looked up best upper
    bound (``ub``) first, a batch a round trip; after each batch the ``depth``-th best
    score known (exact, or a partial sum: a lower bound) rises, and a candidate whose
    bound falls below it needs no lookup. ``vals`` (candidate x term) is filled in, and
    ``ub`` lowered to the exact score of each candidate completed."""
    low = _sum(vals)
    todo = np.argsort(-ub, kind="stable")
    todo = todo[miss[todo].any(axis=1)]
    while len(todo):
        theta = np.partition(low, len(low) - depth)[len(low) - depth]
        todo = todo[ub[todo] >= theta]
        n = int(np.searchsorted(np.cumsum(miss[todo].sum(axis=1)), LOOKUP_BATCH)) + 1
        now, todo = todo[:n], todo[n:]
        r_miss, t_miss = np.nonzero(miss[now])
        if not len(r_miss):
            break
        found = np.array(execute(lookup, {"terms": term_names[t_miss].tolist(),
                                          "ids": ids[now[r_miss]].tolist()}).fetchall(),
                         dtype=np.int64).reshape(-1, 3)
        at = found[:, 0] - 1  # a chunk may lack a term: then it has no posting of it
        vals[now[r_miss[at]], t_miss[at]] = score(
            t_miss[at], found[:, 1].astype(np.float64), found[:, 2].astype(np.float64))
        low[now] = ub[now] = _sum(vals[now])
    return low



def _sum(vals: np.ndarray) -> np.ndarray:
    """Each row's contributions added in query-term order (equal inputs, equal sums)."""
    out = np.zeros(len(vals))
    for t in range(vals.shape[1]):
        out = out + vals[:, t]
    return out


def _best(ids: np.ndarray, scores: np.ndarray, depth: int) -> tuple[list[int], list[float]]:
    best = np.lexsort((ids, -scores))[:depth]
    return [int(i) for i in ids[best]], [float(s) for s in scores[best]]


def _scores(idf: Any, tf: Any, length: Any, avgdl: float) -> Any:
    """The exhaustive statement's ``idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * len /
    avgdl))``, operation by operation in float8 as the server evaluates it (its numeric
    constants 1 - 0.75 and 0.75 * len are exact): the same bits."""
    return idf * tf * (K1 + 1) / (tf + K1 * ((1 - B) + (B * length) / avgdl))


def statements(kb: str, principal_allowed: Callable[[str], str]) -> dict[str, Any]:
    """:data:`_STATS`, :data:`_BLOCKS`, :data:`_FETCH` for KB ``kb``; ``principal_allowed
    (alias)``: the caller's access condition on ``alias.groups`` ("true" for none)."""
    from psycopg import sql

    lit = sql.Literal(kb)
    # the exhaustive statement's expression, so a score is the same float8
    score = {"k1": sql.Literal(K1), "b": sql.Literal(B), "k1p1": sql.Literal(K1 + 1),
             "tf": sql.SQL("u.tf"), "len": sql.SQL("u.len")}
    common = {"kb": lit, "ballowed": sql.SQL(principal_allowed("b"))}
    return {
        "stats": sql.SQL(_STATS).format(kb=lit, gallowed=sql.SQL(principal_allowed("g")),
                                        tallowed=sql.SQL(principal_allowed("t"))),
        "blocks": sql.SQL(_BLOCKS).format(
            score=sql.SQL(_SCORE).format(idf=sql.SQL("q.idf"), **score), **common),
        "fetch": sql.SQL(_FETCH).format(**common),
        "lookup": sql.SQL(_LOOKUP).format(kb=lit),
    }


GIVEN = """
br AS (SELECT x.id, x.s, row_number() OVER (ORDER BY x.s DESC, x.id) AS r
       FROM unnest(%(bids)s::bigint[], %(bscores)s::float8[]) AS x(id, s)
       WHERE EXISTS (SELECT 1 FROM kbagent_chunks c WHERE c.kb = {kb} AND c.id = x.id
                     AND {allowed}))
"""


def search_rows(kb: Any, args: tuple[Any, ...], terms: list[str],
                allowed: Callable[..., tuple[str, list[str]]], prefix: str) -> list[Any]:
    """Rows of ``kb``'s search statement (a :class:`~kbagent.kb.pg.kb.PgKnowledgeBase`;
    ``args``: its ``_statement``'s query, mode, vector, depth and principal) with the
    BM25 top found first by :func:`top_k`, all in one snapshot; the exhaustive
    statement for a KB without blocks."""
    from psycopg import sql

    principal, depth = args[4], args[3]

    def run(q: Any, p: Any, binary: bool = False) -> Any:
        return kb.conn.execute(q, p, prepare=False, binary=binary)

    def work() -> list[Any]:
        found = top_k(run, statements(kb.name, lambda a: allowed(principal, a)[0]), terms,
                      depth, {"allowed": allowed(principal)[1]})
        kb.blocks_read = found[2] if found else -1
        built = kb._statement(*args, given=found[:2] if found else None)
        return list(run(sql.SQL(prefix) + built[0], built[1]).fetchall())

    with kb.store._lock:
        return list(in_snapshot(kb.conn, work))


def in_snapshot(conn: Any, work: Callable[[], Any]) -> Any:
    """Run ``work`` (several statements on ``conn``) in one REPEATABLE READ READ ONLY
    transaction; again once if the connection changed node or failed in between."""
    import psycopg

    for attempt in (0, 1):
        node = getattr(conn, "_conn", conn)
        try:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            out = work()
            conn.execute("COMMIT")
        except psycopg.Error:
            _rollback(conn)
            if attempt:
                raise
            continue
        except BaseException:  # an interrupt: never leave the reader in the snapshot
            _rollback(conn)
            raise
        if getattr(conn, "_conn", conn) is node:
            return out
    raise psycopg.OperationalError("the read moved to another node twice; try again")


def _rollback(conn: Any) -> None:
    import contextlib

    import psycopg

    with contextlib.suppress(psycopg.Error, AttributeError):
        conn.execute("ROLLBACK")
