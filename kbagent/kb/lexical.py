"""The BM25 side of a KB: a tantivy index over chunk texts.

Text is analysed by ``kb_en``: simple tokenizer, long-token removal,
lowercase, ASCII folding, English stop words and Snowball stemming. Queries
are analysed with the same analyzer and run as a disjunction of term
queries, so punctuation or query-syntax characters in a user's question can
never raise a parse error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kbagent.kb.access import ANONYMOUS, Principal, allowed_tokens, index_tokens

ANALYZER = "kb_en"


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
        hits = searcher.search(q, limit, count=False).hits
        if not hits:
            return []
        ids = searcher.fast_field_values("chunk_id", [addr for _, addr in hits])
        out: list[tuple[int, float]] = []
        for (score, _), cid in zip(hits, ids, strict=True):
            assert cid is not None  # every indexed chunk has a chunk_id
            out.append((int(cid), float(score)))
        return out
