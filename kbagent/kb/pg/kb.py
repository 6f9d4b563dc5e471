"""The read side of a KB held in PostgreSQL + pgvector.

A search is one SQL statement (after bm25.py's top-k over BM25 blocks, one snapshot):
exact BM25 from the term tables, the vector search through the KB's halfvec HNSW index
with iterative scans (it keeps scanning until it has ``depth`` allowed rows; the
candidates' distances are the stored float32 vectors'), the access filter (``groups &&
allowed``) inside both, and RRF fusion. Readers run in autocommit: every statement sees
the last committed ingest, never blocked by a writer (MVCC); with read replicas recorded
for the KB, reads go to one of them (kbagent/kb/pg/replicas.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection
from typing import Any

import numpy as np
from psycopg import sql

from kbagent.errors import NotFoundError
from kbagent.kb.access import ANONYMOUS, Principal, allowed_tokens, may_read
from kbagent.kb.lexical import _analyzer
from kbagent.kb.locations import describe, loads
from kbagent.kb.models import Line
from kbagent.kb.pg import bm25
from kbagent.kb.pg.replicas import ReadConnection
from kbagent.kb.store import ChunkRow, DocRow, like_pattern, spellings
from kbagent.settings import Settings

K1, B = 1.2, 0.75  # tantivy's BM25 parameters
RRF_K = 60  # as kbagent.kb.search.RRF_K
EF_SEARCH = 128  # as the local usearch index's expansion_search

# (chunk id, bm25 rank, bm25 score, vector rank, vector similarity)
Evidence = tuple[int, int | None, float | None, int | None, float | None]

_BM25 = """
st AS (SELECT coalesce(sum(n_chunks), 0)::float8 AS n,
              greatest(coalesce(sum(total_tokens), 0)::float8
                       / greatest(coalesce(sum(n_chunks), 0), 1), 1e-9) AS avgdl
       FROM kbagent_groupstats g WHERE kb = {kb} AND {gallowed}),
w AS (SELECT t.term, ln(1 + (st.n - sum(t.df) + 0.5) / (sum(t.df) + 0.5)) AS idf
      FROM kbagent_terms t, st WHERE t.kb = {kb} AND t.term = ANY(%(terms)s) AND {tallowed}
      GROUP BY t.term, st.n),
a AS (SELECT p.chunk_id AS id,
             sum(w.idf * p.tf * {k1p1} / (p.tf + {k1} * (1 - {b} + {b} * p.n_tokens / st.avgdl)))
               AS s
      FROM w JOIN kbagent_postings p ON p.kb = {kb} AND p.term = w.term, st
      GROUP BY p.chunk_id),
b AS (SELECT o.id, o.s FROM (SELECT id, s FROM a ORDER BY s DESC, id) o
      WHERE EXISTS (SELECT 1 FROM kbagent_chunks c WHERE c.kb = {kb} AND c.id = o.id
                    AND {allowed})
      ORDER BY o.s DESC, o.id LIMIT %(depth)s),
br AS (SELECT id, s, row_number() OVER (ORDER BY s DESC, id) AS r FROM b)
"""
_VECTOR = """
v AS MATERIALIZED (SELECT id, embedding::vector({dim}) <=> %(vec)s::vector({dim}) AS d
      FROM (SELECT id, embedding FROM kbagent_chunks c WHERE kb = {kb} AND {allowed} AND
            vector_dims(embedding) = {dim} ORDER BY embedding::halfvec({dim}) <=>
            %(vec)s::halfvec({dim}) LIMIT %(depth)s) h),
vr AS (SELECT id, d, row_number() OVER (ORDER BY d, id) AS r FROM v)
"""
_EMPTY = {"br": "br AS (SELECT NULL::bigint AS id, NULL::float8 AS s, NULL::bigint AS r "
                "WHERE false)",
          "vr": "vr AS (SELECT NULL::bigint AS id, NULL::float8 AS d, NULL::bigint AS r "
                "WHERE false)"}
_FUSE = """
f AS (SELECT coalesce(br.id, vr.id) AS id, br.r AS br, br.s AS bs, vr.r AS vr, 1 - vr.d AS vs,
             coalesce(1.0 / ({rrf} + br.r), 0) + coalesce(1.0 / ({rrf} + vr.r), 0) AS rrf,
             vr.d AS vd
      FROM br FULL OUTER JOIN vr ON br.id = vr.id
      ORDER BY {inner} LIMIT %(depth)s)
SELECT f.id, f.br, f.bs, f.vr, f.vs, c.doc_id, d.path, d.title, c.start_line, c.end_line,
       c.heading, c.text, d.access, (SELECT updated_at FROM kbagent_kbs WHERE kb = {kb}),
       c.location
FROM f JOIN kbagent_chunks c ON c.kb = {kb} AND c.id = f.id
JOIN kbagent_documents d ON d.kb = {kb} AND d.id = c.doc_id
ORDER BY {order}
"""
# the chunk rows come back with the ranking: one round trip per search
_ORDER = {"hybrid": "rrf DESC, id", "bm25": "bs DESC, id", "vector": "vd, id"}
SESSION = f"SET hnsw.iterative_scan = relaxed_order; SET hnsw.ef_search = {EF_SEARCH}"


def _allowed(principal: Principal | None, alias: str = "c") -> tuple[str, list[str]]:
    if principal is None:
        return "true", []
    return f"{alias}.groups && %(allowed)s::text[]", allowed_tokens(principal)


class PgStore:
    """Documents and chunks of KB ``name`` (the :class:`ChunkReader` protocol)."""

    def __init__(self, conn: Any, name: str) -> None:
        self.conn = conn
        self.name = name
        self._lock = threading.Lock()  # one statement at a time on the shared connection
        self._recent: dict[int, ChunkRow] = {}

    def _rows(self, query: str, params: Any = ()) -> list[Any]:
        with self._lock:
            return list(self.conn.execute(query, params).fetchall())

    def count(self) -> tuple[int, int]:
        row = self._rows("SELECT (SELECT count(*) FROM kbagent_documents WHERE kb=%(k)s), "
                         "(SELECT count(*) FROM kbagent_chunks WHERE kb=%(k)s)", {"k": self.name})
        return int(row[0][0]), int(row[0][1])

    def documents(self) -> dict[str, DocRow]:
        rows = self._rows("SELECT id,path,title,format,content_hash,size,access,n_chunks "
                          "FROM kbagent_documents WHERE kb=%s", (self.name,))
        return {r[1]: DocRow(r[0], r[1], r[2], r[3], r[4], r[5], list(r[6]), r[7]) for r in rows}

    def remember(self, rows: list[ChunkRow]) -> None:
        """Rows the last search statement returned (its caller asks for them next)."""
        self._recent = {r.id: r for r in rows}

    def chunks(self, ids: list[int]) -> dict[int, ChunkRow]:
        out = {i: self._recent[i] for i in ids if i in self._recent}
        missing = [i for i in ids if i not in out]
        if not missing:
            return out
        rows = self._rows(
            "SELECT c.id,c.doc_id,d.path,d.title,c.start_line,c.end_line,c.heading,c.text,"
            "d.access,c.location FROM kbagent_chunks c JOIN kbagent_documents d ON d.kb=c.kb "
            "AND d.id=c.doc_id WHERE c.kb=%s AND c.id = ANY(%s)", (self.name, missing))
        out.update({r[0]: ChunkRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], list(r[8]),
                                   r[9]) for r in rows})
        return out

    def locate(self, path: str, start: int, end: int) -> str:
        """Where lines ``start``..``end`` of ``path`` lie in the source ('' if unknown)."""
        rows = self._rows("SELECT locations FROM kbagent_documents WHERE kb=%s AND path=%s",
                          (self.name, path))
        return describe(loads(rows[0][0]), start, end) if rows and rows[0][0] else ""

    def document_lines(self, path: str) -> tuple[DocRow, list[Line]] | None:
        rows = self._rows("SELECT id,path,title,format,content_hash,size,access,n_chunks,text,"
                          "line_map FROM kbagent_documents WHERE kb=%s AND path=%s",
                          (self.name, path))
        if not rows:
            return None
        r = rows[0]
        doc = DocRow(r[0], r[1], r[2], r[3], r[4], r[5], list(r[6]), r[7])
        texts = r[8].split("\n")
        if r[9] is None:
            return doc, [Line(i + 1, t) for i, t in enumerate(texts)]
        spans = json.loads(r[9])
        return doc, [Line(n, t, e if e != n else 0)
                     for (n, e), t in zip(spans, texts, strict=False)]

    def paths(self) -> list[str]:
        return [r[0] for r in self._rows(
            "SELECT path FROM kbagent_documents WHERE kb=%s ORDER BY path", (self.name,))]

    def access_by_path(self) -> dict[str, list[str]]:
        return {r[0]: list(r[1]) for r in self._rows(
            "SELECT path, access FROM kbagent_documents WHERE kb=%s ORDER BY path",
            (self.name,))}

    def visible_bytes(self, principal: Principal) -> int:
        return sum(int(size) for access, size in self._rows(
            "SELECT access, size FROM kbagent_documents WHERE kb=%s", (self.name,))
            if may_read(principal, list(access)))

    def visible_counts(self, principal: Principal) -> tuple[int, int]:
        docs = chunks = 0
        for access, n_chunks in self._rows(
                "SELECT access, n_chunks FROM kbagent_documents WHERE kb=%s", (self.name,)):
            if may_read(principal, list(access)):
                docs += 1
                chunks += n_chunks
        return docs, chunks

    def chunk_spans(self, path: str) -> list[tuple[int, int]]:
        return [(int(a), int(b)) for a, b in self._rows(
            "SELECT c.start_line, c.end_line FROM kbagent_chunks c JOIN kbagent_documents d "
            "ON d.kb = c.kb AND d.id = c.doc_id WHERE c.kb=%s AND d.path=%s ORDER BY c.ordinal",
            (self.name, path))]

    def first_headings(self) -> list[tuple[str, str, str | None, list[str]]]:
        return [(r[0], r[1], r[2], list(r[3])) for r in self._rows(
            "SELECT d.title, d.path, (SELECT c.heading FROM kbagent_chunks c WHERE c.kb = d.kb "
            "AND c.doc_id = d.id AND c.heading != '' ORDER BY c.ordinal LIMIT 1), d.access "
            "FROM kbagent_documents d WHERE d.kb=%s ORDER BY d.path", (self.name,))]

    def text_candidates(self, doc_hash: str, words: list[str], exclude: str
                        ) -> tuple[list[str], list[str]]:
        """As :meth:`kbagent.kb.store.Store.text_candidates` (ILIKE: SQLite's LIKE is
        case-insensitive)."""
        same = [r[0] for r in self._rows(
            "SELECT path FROM kbagent_documents WHERE kb=%s AND content_hash=%s AND path != %s "
            'ORDER BY path COLLATE "C"', (self.name, doc_hash, exclude))]
        if not words:
            return same, []
        like = " AND ".join(["text ILIKE %s"] * len(words))
        return same, [r[0] for r in self._rows(
            f"SELECT path FROM kbagent_documents WHERE kb=%s AND path != %s AND {like} "
            'ORDER BY path COLLATE "C" LIMIT 50',
            (self.name, exclude, *map(like_pattern, words)))]

    def mentions(self, word: str, principal: Principal) -> bool:  # as Store.mentions
        return any(self._rows(
            "SELECT EXISTS(SELECT 1 FROM kbagent_chunks c WHERE c.kb=%(kb)s AND "
            "c.groups && %(allowed)s::text[] AND c.text ILIKE %(p)s)", {"kb": self.name,
            "allowed": allowed_tokens(principal), "p": like_pattern(form)})[0][0]
            for form in spellings(word))


class PgLexical:
    """BM25 alone (the :class:`LexicalReader` protocol)."""

    def __init__(self, kb: PgKnowledgeBase) -> None:
        self.kb = kb
        self.analyzer = _analyzer()

    def terms(self, text: str) -> list[str]:
        return list(dict.fromkeys(self.analyzer.analyze(text)))

    def search(self, query: str, limit: int,
               principal: Principal | None = ANONYMOUS) -> list[tuple[int, float]]:
        found = self.kb.search_evidence(query, "bm25", None, limit, principal)
        return [(cid, float(bs)) for cid, _, bs, _, _ in found if bs is not None]


class PgVectors:
    """Vectors alone (the :class:`VectorReader` protocol)."""

    def __init__(self, kb: PgKnowledgeBase) -> None:
        self.kb = kb

    def __len__(self) -> int:
        return self.kb.chunks

    def search(self, vector: np.ndarray, limit: int,
               denied: Collection[int] | None = None) -> list[tuple[int, float]]:
        # callers filter through search_evidence's principal; ``denied`` is applied
        # here too for callers that pass it
        found = self.kb.search_evidence("", "vector", vector, limit + len(denied or ()), None)
        banned = set(denied or ())
        return [(cid, float(vs)) for cid, _, _, _, vs in found
                if vs is not None and cid not in banned][:limit]


class PgKnowledgeBase:
    """Read access to KB ``name`` in the PostgreSQL database ``dsn``, through one of
    its read ``replicas`` when it has some."""

    vectors_pending = False  # an ingest commits chunks and vectors together
    fast_bm25, blocks_read = True, 0  # top-k BM25 over blocks (pg/bm25.py); blocks read

    def __init__(self, settings: Settings, name: str, dsn: str,
                 replicas: list[str] | tuple[str, ...] = ()) -> None:
        self.settings = settings
        self.name = name
        self.dsn = dsn
        self.conn = ReadConnection(dsn, replicas, name, setup=SESSION)
        self.store = PgStore(self.conn, name)
        self.lexical = PgLexical(self)
        self.vectors = PgVectors(self)
        self.generation = ""
        self._denied: dict[frozenset[str], frozenset[int]] = {}
        if not self._load():
            self.conn.close()
            raise NotFoundError(f"unknown KB '{name}' in {self._where()} (it is registered "
                                "there but holds no data; run 'kbagent ingest PATH' again)")

    def _where(self) -> str:
        from kbagent.kb.registry import redact

        return redact(self.dsn)

    def _load(self) -> bool:
        import psycopg

        try:
            rows = self.store._rows("SELECT manifest, n_chunks, updated_at FROM kbagent_kbs "
                                    "WHERE kb=%s", (self.name,))
        except psycopg.errors.UndefinedTable:
            return False
        if not rows:
            return False
        manifest, n_chunks, updated = rows[0]
        self.manifest: dict[str, Any] = dict(manifest)
        self.chunks = int(n_chunks)
        self.documents = int(self.manifest.get("documents", 0))
        self.generation = repr(updated)
        self.conn.saw(float(updated))  # a replica behind this is not read from
        self._denied = {}
        return True

    def refresh(self) -> bool:
        """Reload the manifest if an ingest committed since (a search statement
        checks this itself, without a round trip of its own)."""
        rows = self.store._rows("SELECT updated_at FROM kbagent_kbs WHERE kb=%s", (self.name,))
        if not rows:
            raise NotFoundError(f"KB '{self.name}' was removed")
        if repr(rows[0][0]) == self.generation:
            return False
        return self._load()

    @property
    def dim(self) -> int:
        return int(self.manifest["embedding_dim"])

    @property
    def embedding_model(self) -> str:
        return str(self.manifest["embedding_model"])

    @property
    def embedding_space(self) -> str:
        from kbagent.kb.embedder import vector_space

        return vector_space(self.embedding_model,
                            str(self.manifest.get("embedding_precision", "fp32")))

    def denied_chunks(self, principal: Principal) -> frozenset[int]:
        if principal.groups not in self._denied:
            self._denied[principal.groups] = frozenset(r[0] for r in self.store._rows(
                "SELECT id FROM kbagent_chunks WHERE kb=%s AND NOT groups && %s::text[]",
                (self.name, allowed_tokens(principal))))
        return self._denied[principal.groups]

    def mentions(self, word: str, principal: Principal) -> bool:
        return self.store.mentions(word, principal)

    def _statement(self, query: str, mode: str, vector: np.ndarray | None, depth: int,
                   principal: Principal | None, given: tuple[list[int], list[float]] | None = None
                   ) -> tuple[sql.Composed, dict[str, Any]] | None:
        terms = self.lexical.terms(query) if mode != "vector" else []
        use_vec = mode != "bm25" and vector is not None
        if mode == "vector" and not use_vec:
            return None
        allowed, tokens = _allowed(principal)
        kb = sql.Literal(self.name)  # a literal: the planner matches the KB's partial index
        parts = [
            sql.SQL(_BM25).format(kb=kb, allowed=sql.SQL(allowed), k1=sql.Literal(K1),
                                  b=sql.Literal(B), k1p1=sql.Literal(K1 + 1),
                                  gallowed=sql.SQL(_allowed(principal, "g")[0]),
                                  tallowed=sql.SQL(_allowed(principal, "t")[0]))
            if terms and given is None else
            sql.SQL(bm25.GIVEN).format(kb=kb, allowed=sql.SQL(allowed))
            if terms else sql.SQL(_EMPTY["br"]),
            sql.SQL(_VECTOR).format(kb=kb, allowed=sql.SQL(allowed), dim=sql.Literal(self.dim))
            if use_vec else sql.SQL(_EMPTY["vr"]),
        ]
        order = _ORDER[mode] if mode in _ORDER else _ORDER["hybrid"]
        statement = sql.SQL("WITH ") + sql.SQL(",").join(parts) + sql.SQL(",") + sql.SQL(
            _FUSE).format(rrf=sql.Literal(RRF_K), inner=sql.SQL(order),
                          order=sql.SQL(order.replace("id", "f.id")), kb=kb)
        params = {"terms": terms, "depth": depth, "allowed": tokens,
                  "bids": given[0] if given else None, "bscores": given[1] if given else None,
                  "vec": np.asarray(vector, dtype=np.float32) if use_vec else None}
        return statement, params

    def _execute(self, statement: sql.Composable, params: dict[str, Any]) -> list[Any]:
        # hnsw settings are per session (SESSION); never prepared (a generic plan does not
        # know the query vector and ranks 3-10x slower)
        with self.store._lock:
            return list(self.conn.execute(statement, params, prepare=False).fetchall())

    def _run(self, query: str, mode: str, vector: np.ndarray | None, depth: int,
             principal: Principal | None, prefix: str = "") -> list[Any]:
        """Rows of the search statement (``given``: BM25's top found first, by bm25.py)."""
        terms = self.lexical.terms(query) if mode != "vector" else []
        if terms and self.fast_bm25:  # the BM25 top first, in one snapshot with the rest
            return bm25.search_rows(self, (query, mode, vector, depth, principal), terms,
                                    _allowed, prefix)
        built = self._statement(query, mode, vector, depth, principal)
        return [] if built is None else self._execute(sql.SQL(prefix) + built[0], built[1])

    def search_evidence(self, query: str, mode: str, vector: np.ndarray | None, depth: int,
                        principal: Principal | None) -> list[Evidence]:
        """The top ``depth`` chunks ``principal`` may read, best first, with each
        retriever's rank and score: BM25, vectors, the access filter and RRF fusion in
        one statement. ``vector`` None: BM25 alone."""
        rows = self._run(query, mode, vector, depth, principal)
        if rows and repr(rows[0][13]) != self.generation:
            self._load()  # an ingest committed since: its manifest and counts
        self.store.remember([ChunkRow(r[0], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
                                      list(r[12]), r[14]) for r in rows])
        return [(int(r[0]), r[1], None if r[2] is None else float(r[2]), r[3],
                 None if r[4] is None else float(r[4])) for r in rows]

    def explain(self, query: str, mode: str, vector: np.ndarray | None, depth: int,
                principal: Principal | None) -> str:
        """The server's plan of :meth:`search_evidence`'s statement (benchmarks)."""
        rows = self._run(query, mode, vector, depth, principal, prefix="EXPLAIN ")
        return "\n".join(r[0] for r in rows)

    def symbol_reader(self) -> Any:  # a PgSymbols (the SymbolReader protocol)
        from kbagent.kb.pg.symbols import PgSymbols

        return PgSymbols(self.store)

    def close(self) -> None:
        self.conn.close()

