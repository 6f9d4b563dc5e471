"""``kbagent eval retrieval``: BM25, vector and hybrid scored side by side on a
BEIR-format data set, through the same ingest and ``HybridSearcher`` that
``kbagent search`` uses.

The corpus is written to ``$KBAGENT_HOME/eval/<kb>/corpus`` and ingested into
the KB ``<kb>`` (default ``eval-<data set>``); ingest is incremental, so a
second run re-embeds nothing. Search returns chunks: the first chunk of each
document decides its rank (``METRIC_CHUNKS`` chunks are fetched so the top 100
documents are known). Latency is timed apart, at k=10 as a person searches:
BM25 alone, and for vector and hybrid the query embedding plus the search.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbagent.errors import IncompatibleKBError
from kbagent.evaluation.beir import BeirDataset, write_corpus
from kbagent.evaluation.metrics import mrr_at_k, ndcg_at_k, percentile, recall_at_k
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.models import IngestReport
from kbagent.kb.search import MODES, HybridSearcher
from kbagent.settings import Settings

METRIC_CHUNKS = 300  # chunks asked for per query, enough for 100 distinct documents
LATENCY_K = 10

# nDCG@10 on the BEIR test split as published (shared/data/README.md): BM25 is
# Pyserini's flat index, "vector" all-MiniLM-L6-v2, the bundled embedding model.
PUBLISHED_NDCG10 = {
    "nfcorpus": {"bm25": 0.322, "vector": 0.316},
    "scifact": {"bm25": 0.679, "vector": 0.645},
}
PUBLISHED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

ProgressFn = Callable[[str, int, int], None]


@dataclass
class ModeScores:
    mode: str
    ndcg_10: float
    recall_10: float
    recall_100: float
    mrr_10: float
    latency_p50_ms: float
    latency_p95_ms: float
    published_ndcg_10: float | None = None
    per_query_ndcg_10: dict[str, float] = field(default_factory=dict, repr=False)
    per_query_top10: dict[str, list[str]] = field(default_factory=dict, repr=False)


@dataclass
class RetrievalReport:
    dataset: str
    kb: str
    embedding_model: str
    documents: int
    chunks: int
    queries: int
    ingest_seconds: float
    modes: list[ModeScores]
    queries_text: dict[str, str] = field(default_factory=dict, repr=False)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)

    def best(self) -> str:
        return max(self.modes, key=lambda m: m.ndcg_10).mode

    def to_json(self, per_query: bool = False) -> dict[str, Any]:
        out = asdict(self)
        out.pop("queries_text")
        out.pop("qrels")
        if not per_query:
            for m in out["modes"]:
                m.pop("per_query_ndcg_10")
                m.pop("per_query_top10")
        return out


def rank_documents(paths: Sequence[str], stems: dict[str, str], n: int = 100) -> list[str]:
    """Corpus ids in the order their first chunk appears, at most ``n``."""
    out: list[str] = []
    seen: set[str] = set()
    for p in paths:
        doc = stems.get(Path(p).stem)
        if doc is not None and doc not in seen:
            seen.add(doc)
            out.append(doc)
            if len(out) == n:
                break
    return out


def prepare_kb(settings: Settings, ds: BeirDataset, kb: str,
               progress: ProgressFn | None = None) -> tuple[dict[str, str], float]:
    """Write the corpus folder and ingest it; return (stem -> id, ingest seconds)."""
    folder = settings.home / "eval" / kb / "corpus"
    stems = write_corpus(ds, folder)
    return stems, ingest_corpus(settings, kb, folder, progress).seconds


def ingest_corpus(settings: Settings, kb: str, folder: Path,
                  progress: ProgressFn | None = None) -> IngestReport:
    """Ingest an evaluation corpus folder into ``kb``. The KB is derived from the
    dataset: one built by an older kbagent (another extraction, chunking or index
    schema) is rebuilt, not refused."""
    try:
        return Ingestor(settings, kb, progress=progress).run(folder)
    except IncompatibleKBError:
        return Ingestor(settings, kb, progress=progress).run(folder, rebuild=True)


def evaluate(settings: Settings, ds: BeirDataset, kb_name: str, stems: dict[str, str],
             ingest_seconds: float = 0.0, modes: Sequence[str] = MODES,
             progress: ProgressFn | None = None) -> RetrievalReport:
    kb = KnowledgeBase(settings, kb_name)
    try:
        return _evaluate(kb, ds, stems, ingest_seconds, modes, progress)
    finally:
        kb.close()


def _evaluate(kb: KnowledgeBase, ds: BeirDataset, stems: dict[str, str], ingest_seconds: float,
              modes: Sequence[str], progress: ProgressFn | None) -> RetrievalReport:
    searcher = HybridSearcher([kb])
    tick = progress or (lambda phase, done, total: None)
    qids = list(ds.queries)
    ranked: dict[str, dict[str, list[str]]] = {m: {} for m in modes}
    times: dict[str, list[float]] = {m: [] for m in modes}
    for n, qid in enumerate(qids, 1):
        query = ds.queries[qid]
        t0 = time.perf_counter()
        vectors = searcher.embed_query(query) if any(m != "bm25" for m in modes) else None
        embed_s = time.perf_counter() - t0
        for mode in modes:
            t0 = time.perf_counter()
            searcher.search(query, LATENCY_K, mode, query_vectors=vectors)
            elapsed = time.perf_counter() - t0 + (embed_s if mode != "bm25" else 0.0)
            times[mode].append(elapsed * 1000)
            hits = searcher.search(query, METRIC_CHUNKS, mode, query_vectors=vectors).hits
            ranked[mode][qid] = rank_documents([h.path for h in hits], stems)
        tick("queries", n, len(qids))
    published = PUBLISHED_NDCG10.get(ds.name.lower(), {})
    if kb.embedding_model != PUBLISHED_MODEL:
        published = {k: v for k, v in published.items() if k == "bm25"}
    scores = []
    for mode in modes:
        per = {q: ndcg_at_k(ranked[mode][q], ds.qrels[q], 10) for q in qids}
        scores.append(ModeScores(
            mode=mode,
            ndcg_10=round(statistics.mean(per.values()), 4),
            recall_10=round(statistics.mean(recall_at_k(ranked[mode][q], ds.qrels[q], 10)
                                            for q in qids), 4),
            recall_100=round(statistics.mean(recall_at_k(ranked[mode][q], ds.qrels[q], 100)
                                             for q in qids), 4),
            mrr_10=round(statistics.mean(mrr_at_k(ranked[mode][q], ds.qrels[q], 10)
                                         for q in qids), 4),
            latency_p50_ms=round(percentile(times[mode], 50), 2),
            latency_p95_ms=round(percentile(times[mode], 95), 2),
            published_ndcg_10=published.get(mode),
            per_query_ndcg_10=per,
            per_query_top10={q: ranked[mode][q][:10] for q in qids},
        ))
    return RetrievalReport(ds.name, kb.name, kb.embedding_model, kb.documents, kb.chunks,
                           len(qids), round(ingest_seconds, 1), scores,
                           dict(ds.queries), dict(ds.qrels))
