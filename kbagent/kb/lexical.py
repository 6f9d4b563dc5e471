"""The BM25 side of a KB: a tantivy index over chunk texts.

Text is analysed by ``kb_en``: simple tokenizer, long-token removal,
lowercase, ASCII folding, English stop words and Snowball stemming. Queries
are analysed with the same analyzer and run as a disjunction of term
queries, so punctuation or query-syntax characters in a user's question can
never raise a parse error.

BM25 statistics per caller: tantivy computes a term's idf and the average chunk
length over the whole index, restricted chunks included, so a caller's scores
would depend on text it may not read. For a caller who may not read every chunk,
:meth:`LexicalIndex.search` therefore rescores the candidates with statistics of
the chunks that caller may read: the chunk count and each term's document
frequency (count queries under the same access filter) and the average length
(the ``body_tokens`` fast field summed under the filter). Term frequency and
field length per candidate come from tantivy's own explanation, so a score is
the BM25 tantivy would give if the index held only the visible chunks, rounded to
float32 as tantivy's own scores are (so its precision says nothing either).
The candidates are the best ``max(2 x limit, 100)`` by the global statistics; a
query matching more visible chunks than that is exact within that pool (about
50 us per candidate, measured in BENCHMARKS.md). An
index built before ``body_tokens`` existed keeps the global average length.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from kbagent.kb.access import ANONYMOUS, Principal, allowed_tokens, index_tokens

ANALYZER = "kb_en"
BODY_TOKENS = "body_tokens"  # fast field: analysed tokens of ``body`` (per-caller avgdl)
POOL_MIN = 100  # candidates rescored with per-caller statistics (at least 2 x limit)


def _analyzer() -> Any:
    import tantivy as t

    return (
        t.TextAnalyzerBuilder(t.Tokenizer.simple())
        .filter(t.Filter.remove_long(40))
        .filter(t.Filter.lowercase())
        .filter(t.Filter.ascii_fold())
        .filter(t.Filter.stopword("english"))
        .filter(t.Filter.stemmer("english"))
        .build()
    )


def _schema() -> Any:
    import tantivy as t

    sb = t.SchemaBuilder()
    sb.add_unsigned_field("chunk_id", stored=True, indexed=True, fast=True)
    sb.add_unsigned_field("doc_id", indexed=True, fast=True)
    sb.add_text_field("body", stored=False, tokenizer_name=ANALYZER)
    # access tokens (kbagent.kb.access.index_tokens), filtered on inside every query
    sb.add_text_field("groups", stored=False, tokenizer_name="raw")
    sb.add_unsigned_field(BODY_TOKENS, fast=True)
    return sb.build()


class LexicalIndex:
    """Open (or create) the tantivy index in ``path``."""

    def __init__(self, path: Path, create: bool = False) -> None:
        import tantivy as t

        self._t = t
        self.path = path
        if create:
            path.mkdir(parents=True, exist_ok=True)
            self.index = t.Index(_schema(), path=str(path), reuse=False)
        else:
            if not t.Index.exists(str(path)):
                raise FileNotFoundError(f"no tantivy index in {path}")
            self.index = t.Index.open(str(path))
        self.analyzer = _analyzer()
        self.index.register_tokenizer(ANALYZER, self.analyzer)
        self.schema = self.index.schema
        self._writer: Any = None
        # (groups, num_docs) -> (visible chunks, their average length or 0) or None when
        # the caller may read every chunk (tantivy's own statistics are then its own)
        self._visible: dict[tuple[tuple[str, ...], int], tuple[int, float] | None] = {}

    # --- writes ------------------------------------------------------------
    @property
    def writer(self) -> Any:
        if self._writer is None:
            self._writer = self.index.writer(heap_size=64_000_000, num_threads=1)
        return self._writer

    def add(self, chunk_id: int, doc_id: int, body: str, groups: list[str] | None = None) -> None:
        doc = self._t.Document()
        doc.add_unsigned("chunk_id", chunk_id)
        doc.add_unsigned("doc_id", doc_id)
        doc.add_text("body", body)
        doc.add_unsigned(BODY_TOKENS, len(self.analyzer.analyze(body)))
        for token in index_tokens(groups or []):
            doc.add_text("groups", token)
        self.writer.add_document(doc)

    def delete_docs(self, doc_ids: list[int]) -> None:
        for i in range(0, len(doc_ids), 1000):
            q = self._t.Query.term_set_query(self.schema, "doc_id", doc_ids[i : i + 1000])
            self.writer.delete_documents_by_query(q)

    def commit(self) -> None:
        if self._writer is not None:
            self._writer.commit()
            self._writer.wait_merging_threads()  # consumes the writer
            self._writer = None

    def abort(self) -> None:
        """Drop uncommitted changes and stop the writer's threads (before deleting files)."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            try:
                writer.rollback()
                writer.wait_merging_threads()
            except (RuntimeError, ValueError):
                pass

    # --- reads -------------------------------------------------------------
    def num_docs(self) -> int:
        self.index.reload()
        return int(self.index.searcher().num_docs)

    def terms(self, text: str) -> list[str]:
        return list(dict.fromkeys(self.analyzer.analyze(text)))

    def search(self, query: str, limit: int,
               principal: Principal | None = ANONYMOUS) -> list[tuple[int, float]]:
        """Return (chunk_id, bm25 score) best first; [] when no query term survives analysis.
        Only chunks ``principal`` may read match: the filter is a Must clause of the
        tantivy query itself (``None``: no filter, for benchmarks and maintenance)."""
        terms = self.terms(query)
        if not terms or limit <= 0:
            return []
        t = self._t
        q = t.Query.boolean_query(
            [(t.Occur.Should, t.Query.term_query(self.schema, "body", term)) for term in terms]
        )
        if principal is not None:
            allowed = t.Query.const_score_query(
                t.Query.term_set_query(self.schema, "groups", allowed_tokens(principal)), 0.0)
            q = t.Query.boolean_query([(t.Occur.Must, q), (t.Occur.Must, allowed)])
        searcher = self.index.searcher()
        if principal is not None:
            stats = self._visible_stats(searcher, principal)
            if stats is not None:
                return self._rescored(searcher, q, terms, limit, principal, stats)
        hits = searcher.search(q, limit, count=False).hits
        if not hits:
            return []
        ids = searcher.fast_field_values("chunk_id", [addr for _, addr in hits])
        out: list[tuple[int, float]] = []
        for (score, _), cid in zip(hits, ids, strict=True):
            assert cid is not None  # every indexed chunk has a chunk_id
            out.append((int(cid), float(score)))
        return out

    # --- per-caller BM25 statistics ------------------------------------------
    def _allowed(self, principal: Principal) -> Any:
        t = self._t
        return t.Query.term_set_query(self.schema, "groups", allowed_tokens(principal))

    def _count(self, searcher: Any, query: Any) -> int:
        return int(searcher.search(query, 1, count=True).count)

    def _visible_stats(self, searcher: Any, principal: Principal) -> tuple[int, float] | None:
        """(chunks ``principal`` may read, their average body length; 0 when the index
        has no ``body_tokens``), or None when it may read every chunk."""
        key = (tuple(sorted(principal.groups)), int(searcher.num_docs))
        if key not in self._visible:
            allowed = self._allowed(principal)
            n = self._count(searcher, allowed)
            if n >= key[1]:
                self._visible[key] = None
            else:
                agg = searcher.aggregate(allowed, {"s": {"sum": {"field": BODY_TOKENS}}})
                total = float(agg["s"]["value"] or 0.0)
                self._visible[key] = (n, total / n if n and total > 0 else 0.0)
        return self._visible[key]

    def _rescored(self, searcher: Any, query: Any, terms: list[str], limit: int,
                  principal: Principal, stats: tuple[int, float]) -> list[tuple[int, float]]:
        """The filtered query's best candidates, rescored with BM25 statistics of the
        chunks ``principal`` may read (see the module docstring)."""
        t = self._t
        n_visible, avgdl = stats
        allowed = self._allowed(principal)
        df: dict[str, int] = {}

        def visible_df(term: str) -> int:  # chunks the caller may read that hold ``term``
            if term not in df:
                df[term] = self._count(searcher, t.Query.boolean_query([
                    (t.Occur.Must, t.Query.term_query(self.schema, "body", term)),
                    (t.Occur.Must, allowed)]))
            return df[term]

        pool = max(2 * limit, POOL_MIN)
        hits = searcher.search(query, pool, count=False).hits
        if not hits:
            return []
        text_query = t.Query.boolean_query(
            [(t.Occur.Should, t.Query.term_query(self.schema, "body", term)) for term in terms])
        ids = searcher.fast_field_values("chunk_id", [addr for _, addr in hits])
        scored: list[tuple[int, float]] = []
        for (_, addr), cid in zip(hits, ids, strict=True):
            assert cid is not None  # every indexed chunk has a chunk_id
            explained = text_query.explain(searcher, addr).to_json()
            score = 0.0
            for term, parts in _term_parts(explained):
                n_t = visible_df(term)
                idf = math.log(1 + (n_visible - n_t + 0.5) / (n_t + 0.5))
                k1, b, freq, dl = parts["k1"], parts["b"], parts["freq"], parts["dl"]
                mean = avgdl or parts["avgdl"]
                score += (k1 + 1) * idf * freq / (freq + k1 * (1 - b + b * dl / mean))
            # tantivy scores in float32: a float64 score would tell this caller that it is
            # the one rescored, i.e. that documents hidden from it exist
            scored.append((int(cid), float(np.float32(score))))
        scored.sort(key=lambda x: (-x[1], x[0]))
        return scored[:limit]


# one BM25 factor or the term of a TermQuery in tantivy's explanation JSON (serde writes
# a node's "details" before its "context", so a term's factors come before its name)
_EXPLAINED = re.compile(
    r'"value":\s*([-+0-9.eE]+),\s*"description":\s*"(freq|k1|b|dl|avgdl),'
    r'|"context":\s*\[\s*"Term=Term\(field=\d+, type=Str, \\"((?:[^"\\]|\\.)*?)\\"\)"')
_FACTORS = ("freq", "k1", "b", "dl", "avgdl")


def _term_parts(explained: str) -> list[tuple[str, dict[str, float]]]:
    """(term, {freq, k1, b, dl, avgdl}) of every TermQuery in a tantivy explanation."""
    out: list[tuple[str, dict[str, float]]] = []
    parts: dict[str, float] = {}
    for m in _EXPLAINED.finditer(explained):
        if m.group(2):
            parts[m.group(2)] = float(m.group(1))
        else:
            if all(f in parts for f in _FACTORS):
                out.append((m.group(3), parts))
            parts = {}
    return out
