"""Hybrid search over one or several KBs: BM25 (tantivy) + vectors (usearch) fused
with Reciprocal Rank Fusion, ``score = sum 1 / (k + rank)`` with k = 60.

Every hit keeps each retriever's rank and score so a person can see *why* it
won. Several KBs are searched independently and merged: RRF works on ranks,
so scores never need to be comparable across indexes. A KB that fails is
reported in ``failed_kbs`` and the others still answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from kbagent.errors import BadInputError, KbagentError
from kbagent.kb.access import ANONYMOUS, Principal, may_read
from kbagent.kb.embedder import Embedder, embedder_for_space, parse_space
from kbagent.kb.models import Hit, SearchMode
from kbagent.kb.rerank import Reranker, rerank_hits
from kbagent.kb.store import ChunkRow
from kbagent.kb.store_protocol import KbReader
from kbagent.safe_text import valid_unicode
from kbagent.settings import default

RRF_K = 60
MODES = tuple(m.value for m in SearchMode)


@dataclass
class SearchResult:
    query: str
    mode: str
    hits: list[Hit]
    failed_kbs: dict[str, str] = field(default_factory=dict)  # kb -> reason
    bm25_only_kbs: list[str] = field(default_factory=list)  # vectors still being built
    # vectors still being built, some searchable: kb -> (chunks with vectors, chunks)
    partial_kbs: dict[str, tuple[int, int]] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)  # e.g. a reranker that failed


@dataclass
class Evidence:
    """What each retriever said about one chunk (``None``: it did not find it)."""

    bm25_rank: int | None = None
    bm25_score: float | None = None
    vector_rank: int | None = None
    vector_score: float | None = None


def check_same_space(kb_name: str, space: str, embedder: Embedder) -> None:
    """Refuse to query a KB with vectors of another kind (model or precision)."""
    model_id, precision = parse_space(space)
    got = (getattr(embedder, "model_id", model_id), getattr(embedder, "precision", "fp32"))
    if got != (model_id, precision):
        raise BadInputError(
            f"KB '{kb_name}' holds {precision} vectors of {model_id}, the query embedder makes "
            f"{got[1]} vectors of {got[0]}: use the KB's model and precision "
            "(settings embedding_model / embedding_precision) or rebuild it with --rebuild")


def candidate_depth(k: int) -> int:
    """How deep each retriever looks before fusion."""
    return max(50, 3 * k)


class HybridSearcher:
    """Search a fixed set of open KBs. Query embeddings are computed once per model."""

    def __init__(
        self,
        kbs: Sequence[KbReader],
        embedder_for: Callable[[str], Embedder] | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.kbs = kbs
        self.reranker = reranker  # reorders the top-N fused hits (kb/rerank.py)
        # called with a KB's vector space (model id, plus "#int8" for int8 vectors)
        self._embedder_for = embedder_for or self._default_embedder

    def _default_embedder(self, space: str) -> Embedder:
        if not self.kbs:
            return embedder_for_space(space, default("embedding_runtime"))
        settings = self.kbs[0].settings
        return embedder_for_space(space, settings.embedding_runtime, settings)

    def embed_query(self, query: str) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for kb in self.kbs:
            space = kb.embedding_space
            if space not in out and not (kb.vectors_pending and len(kb.vectors) == 0):
                embedder = self._embedder_for(space)
                check_same_space(kb.name, space, embedder)
                if embedder.dim != int(kb.manifest["embedding_dim"]):
                    raise BadInputError(
                        f"KB '{kb.name}' holds {kb.manifest['embedding_dim']}-dimensional "
                        f"vectors, the query embedder makes {embedder.dim}-dimensional ones")
                out[space] = embedder.encode([valid_unicode(query)])[0]
        return out

    def _first_space(self) -> str | None:
        """The embedding space of the first KB with vectors to compare in (None: none)."""
        return next((kb.embedding_space for kb in self.kbs
                     if not (kb.vectors_pending and len(kb.vectors) == 0)), None)

    def is_word(self, word: str) -> bool | None:
        """Is ``word`` an ordinary word of the first searchable KB's embedder vocabulary
        (None when that embedder cannot say: a remote one)? A lower-case word that is
        not, and that no chunk holds, is a name the KB never mentions ("certbot")."""
        space = self._first_space()
        if space is None:
            return None
        try:  # a check that fails says nothing (an embedder that cannot load)
            check = getattr(self._embedder_for(space), "is_word", None)
            return bool(check(word)) if check is not None else None
        except Exception:
            return None

    def embed_texts(self, texts: list[str]) -> np.ndarray | None:
        """L2-normalised vectors of ``texts`` by the first searchable KB's embedder, in
        one batched call (None when no KB has vectors to compare in). The agent ranks
        evidence sentences with them: a paraphrase ("roll over" for "carry over") is
        close in this space though it shares no word."""
        space = self._first_space()
        if space is None:
            return None
        vecs = self._embedder_for(space).encode([valid_unicode(t) for t in texts])
        norms = np.linalg.norm(vecs, axis=1)
        norms[norms == 0] = 1.0
        unit: np.ndarray = vecs / norms[:, None]
        return unit

    def search(
        self,
        query: str,
        k: int = 10,
        mode: str = "hybrid",
        query_vectors: dict[str, np.ndarray] | None = None,
        principal: Principal | None = ANONYMOUS,
    ) -> SearchResult:
        """Top ``k`` chunks ``principal`` may read for ``query``. ``query_vectors``
        (model id -> vector) skips query embedding. Both retrievers filter inside their
        index query, so restricted chunks never crowd out allowed ones; ``None`` turns
        the filter off (benchmarks and maintenance only, never a caller)."""
        if mode not in MODES:
            raise BadInputError(f"unknown search mode {mode!r} (choose from {', '.join(MODES)})")
        # a query holding bytes that are not UTF-8 (an argument like $'\xffcache' reaches
        # Python as lone surrogates) is searched with U+FFFD in their place: neither the
        # tokenizer nor tantivy accepts a string no UTF-8 encoder can write
        query = valid_unicode(query).strip()
        if not query:
            raise BadInputError("empty search query")
        if k <= 0:
            raise BadInputError("k must be at least 1")
        depth = candidate_depth(k)
        if mode != "bm25" and query_vectors is None:
            query_vectors = self.embed_query(query)
        failed: dict[str, str] = {}
        bm25_only: list[str] = []
        partial: dict[str, tuple[int, int]] = {}
        evidence: dict[tuple[int, int], Evidence] = {}  # (kb index, chunk_id) -> evidence
        for i, kb in enumerate(self.kbs):
            try:
                fused = getattr(kb, "search_evidence", None)
                if fused is None:
                    kb.refresh()
                else:  # both retrievers, filter and RRF in one SQL statement (it refreshes)
                    vec = (None if mode == "bm25" or query_vectors is None
                           else query_vectors.get(kb.embedding_space))
                    for cid, br, bs, vr, vs in fused(query, mode, vec, depth, principal):
                        evidence[(i, cid)] = Evidence(br, bs, vr, vs)
                    continue
                if mode != "vector":
                    found = kb.lexical.search(query, depth, principal)
                    for rank, (cid, score) in enumerate(found, 1):
                        ev = evidence.setdefault((i, cid), Evidence())
                        ev.bm25_rank, ev.bm25_score = rank, score
                # no vectors yet (kb/bm25_first.py), or some since the query was
                # embedded without them: this KB answers by BM25 alone this time
                vec = (None if mode == "bm25" or query_vectors is None
                       else query_vectors.get(kb.embedding_space))
                if mode != "bm25" and (vec is None or len(kb.vectors) == 0):
                    bm25_only.append(kb.name)
                elif mode != "bm25":
                    assert vec is not None  # the branch above took a missing one
                    if kb.vectors_pending:  # the vectors made so far
                        partial[kb.name] = (len(kb.vectors), kb.chunks)
                    denied = kb.denied_chunks(principal) if principal is not None else None
                    for rank, (cid, score) in enumerate(kb.vectors.search(vec, depth, denied),
                                                        1):
                        ev = evidence.setdefault((i, cid), Evidence())
                        ev.vector_rank, ev.vector_score = rank, score
            except KbagentError as e:
                failed[kb.name] = str(e)
            except Exception as e:  # an index failing at query time must not sink the rest
                failed[kb.name] = f"{type(e).__name__}: {e}"
        scored = []
        for key, ev in evidence.items():
            br, vr = ev.bm25_rank, ev.vector_rank
            if mode == SearchMode.HYBRID:
                score = (1 / (RRF_K + br) if br else 0.0) + (1 / (RRF_K + vr) if vr else 0.0)
            elif mode == SearchMode.BM25:
                assert ev.bm25_score is not None  # BM25 alone: every entry came from it
                score = ev.bm25_score
            else:
                assert ev.vector_score is not None  # vectors alone: likewise
                score = ev.vector_score
            scored.append((score, key))
        scored.sort(key=lambda x: (-x[0], x[1]))
        hits: list[Hit] = []
        rows_by_kb: dict[int, dict[int, ChunkRow]] = {}
        want = max(k, self.reranker.top_n) if self.reranker else k
        # fetch rows lazily; the ACL check here is a second line of defence (same rule)
        for score, (i, cid) in scored:
            if len(hits) >= want:
                break
            if i not in rows_by_kb:
                ids = [c for _, (j, c) in scored if j == i][: depth * 2]
                rows_by_kb[i] = self.kbs[i].store.chunks(ids)
            row = rows_by_kb[i].get(cid)
            if row is None or (principal is not None and not may_read(principal, row.access)):
                continue
            ev = evidence[(i, cid)]
            hits.append(Hit(
                kb=self.kbs[i].name, chunk_id=cid, path=row.path, start_line=row.start_line,
                end_line=row.end_line, heading=row.heading, text=row.text, score=float(score),
                bm25_rank=ev.bm25_rank, bm25_score=ev.bm25_score, vector_rank=ev.vector_rank,
                vector_score=ev.vector_score, title=row.title, location=row.location,
            ))
        notices = []
        if self.reranker is not None:
            hits, notice = rerank_hits(self.reranker, query, hits)
            notices += [notice] if notice else []
        return SearchResult(query, mode, hits[:k], failed, bm25_only, partial, notices)
