"""Diagnose NFCorpus hybrid quality: what would make hybrid beat both of its parts?

An experiment script, not the benchmark: ``bench/bench_kb.py`` measures the real
code; this one re-implements fusion and BM25 indexing variants *outside*
kbagent (nothing in ``kbagent/`` is changed) and scores each one with the same
nDCG@10 as the benchmark. It needs the NFCorpus chunk vectors cached by a
full ``bench_kb.py`` run (``bench/out/cache/nfcorpus.npz``)::

    .venv/bin/python bench/hybrid_experiments.py [--reembed]

``--reembed`` also re-embeds the chunk texts that a chunker fix would change
(about 3.6k texts, a few minutes on 2 cores) to score the fix end to end.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_kb as B

from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.lexical import LexicalIndex
from kbagent.kb.models import Chunk
from kbagent.kb.search import HybridSearcher

Ranked = list[tuple[int, float]]  # (chunk id, score) best first


def rrf(lists: list[Ranked], k: int = 60, weights: list[float] | None = None) -> list[int]:
    weights = weights or [1.0] * len(lists)
    score: dict[int, float] = {}
    for w, ranked in zip(weights, lists, strict=True):
        for rank, (key, _s) in enumerate(ranked, 1):
            score[key] = score.get(key, 0.0) + w / (k + rank)
    return sorted(score, key=lambda c: (-score[c], c))


def collapse(ranked: Ranked, doc_of: dict[int, str]) -> list[tuple[str, float]]:
    """Chunk ranking -> document ranking (a document ranks at its best chunk)."""
    seen: dict[str, float] = {}
    for cid, s in ranked:
        seen.setdefault(doc_of[cid], s)
    return list(seen.items())


def first_docs(keys: list, doc_of: dict | None, n: int = 10) -> list[str]:
    out: list[str] = []
    for key in keys:
        d = doc_of[key] if doc_of is not None else key
        if d not in out:
            out.append(d)
            if len(out) == n:
                break
    return out


def mean_ndcg(per_query_docs: dict[str, list[str]], qrels: dict) -> float:
    return statistics.mean(B.ndcg_at_10(per_query_docs[q], qrels[q]) for q in qrels)


def strip_heading_line(text: str, title: str) -> str:
    """The chunker keeps the ``# Title`` line in the first chunk's text, and
    ``index_text`` prefixes the title again: drop the duplicate."""
    first, _, rest = text.partition("\n")
    if first.lstrip("# ").strip() == title.strip() and first.lstrip().startswith("#"):
        return rest.lstrip("\n")
    return text


def build_lexical(path: Path, rows: list[tuple[int, int, str]]) -> LexicalIndex:
    lex = LexicalIndex(path, create=True)
    for cid, did, body in rows:
        lex.add(cid, did, body)
    lex.commit()
    return LexicalIndex(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=B.DEFAULT_DATA)
    ap.add_argument("--reembed", action="store_true")
    ap.add_argument("--out", type=Path, default=B.OUT_DIR / "hybrid_experiments.json")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="kbexp-", dir="/tmp"))
    try:
        return run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path) -> int:
    corpus = B.load_nfcorpus(args.data, quick=False)
    settings = B.Settings.load(home=work / "home")
    folder = work / "src"
    B.write_corpus(corpus.docs, folder)
    texts = B.index_texts_of_folder(folder, settings)
    vecs = B.load_vector_cache(B.vector_cache_path(False), texts)
    if vecs is None:
        sys.exit("run bench/bench_kb.py (full) first: it caches the NFCorpus chunk vectors")
    emb = B.load_embedder("bundled")
    qids = sorted(corpus.qrels)
    qvec = dict(zip(qids, emb.encode([corpus.queries[q] for q in qids]), strict=True))
    nf = B.NfState(settings, folder, "nfcorpus", texts, vecs, qvec, corpus.queries,
                   corpus.qrels, len(corpus.docs))
    B.build_nf_kb_from_vectors(nf)
    kb = KnowledgeBase(settings, "nfcorpus")
    res: dict[str, float] = {}

    # sanity: the real searcher, exactly as the benchmark scores it
    real = B.evaluate_ndcg(HybridSearcher([kb], embedder_for=lambda _m: emb), nf,
                           kb.embedding_model)
    for m in B.MODES:
        res[f"real {m} (kbagent as is)"] = real[m]["ndcg@10"]

    rows = kb.store.conn.execute(
        "SELECT c.id, d.id, d.path, d.title, c.heading, c.text FROM chunks c "
        "JOIN documents d ON d.id = c.doc_id").fetchall()
    doc_of = {r[0]: Path(r[2]).stem for r in rows}

    def indexed(title: str, heading: str, text: str) -> str:
        return Chunk("", 0, 1, 1, heading, text).index_text(title)

    depth = 1000
    bm25 = {q: kb.lexical.search(corpus.queries[q], depth) for q in qids}
    vec = {q: kb.vectors.search(qvec[q], depth) for q in qids}

    def score(fn: Callable[[str], list[str]]) -> float:
        return round(mean_ndcg({q: fn(q) for q in qids}, corpus.qrels), 4)

    def chunks_top(ranked: dict[str, Ranked]) -> Callable[[str], list[str]]:
        return lambda q: first_docs([c for c, _ in ranked[q][:300]], doc_of)

    res["bm25 chunks (re-implemented)"] = score(chunks_top(bm25))
    res["vector chunks (re-implemented)"] = score(chunks_top(vec))
    for d in (50, 100, 300, 1000):
        for k in (10, 30, 60, 100):
            res[f"hybrid chunk-RRF depth={d} k={k}"] = score(lambda q, d=d, k=k: first_docs(
                rrf([bm25[q][:d], vec[q][:d]], k), doc_of))
    # fuse documents, not chunks: each retriever's list collapsed to docs first
    for d in (100, 300, 1000):
        for k in (10, 60):
            res[f"hybrid doc-RRF depth={d} k={k}"] = score(lambda q, d=d, k=k: first_docs(
                rrf([collapse(bm25[q][:d], doc_of), collapse(vec[q][:d], doc_of)], k), None))
    for w in (0.5, 0.7, 1.5):
        res[f"hybrid chunk-RRF depth=300 k=60 bm25 weight {w}"] = score(
            lambda q, w=w: first_docs(rrf([bm25[q][:300], vec[q][:300]], 60, [w, 1.0]), doc_of))

    # overlap: how many of the top-10 docs the two retrievers share
    overlap = [len(set(first_docs([c for c, _ in bm25[q]], doc_of))
                   & set(first_docs([c for c, _ in vec[q]], doc_of))) for q in qids]
    res["mean top-10 doc overlap bm25/vector"] = round(statistics.mean(overlap), 2)

    # BM25 indexing variants (tantivy, same analyzer; only the indexed text changes)
    def lexical_run(name: str, entries: list[tuple[int, int, str]]) -> dict[str, Ranked]:
        lex = build_lexical(work / f"lex-{name}", entries)
        return {q: lex.search(corpus.queries[q], depth) for q in qids}

    cur = lexical_run("current", [(cid, did, indexed(t, h, x))
                                  for cid, did, _p, t, h, x in rows])
    res["bm25 rebuilt as ingest does (sanity)"] = score(chunks_top(cur))
    nodup = lexical_run("nodup", [(cid, did, indexed(t, h, strip_heading_line(x, t)))
                                  for cid, did, _p, t, h, x in rows])
    res["bm25 chunks, title not duplicated"] = score(chunks_top(nodup))
    res["hybrid chunk-RRF k=60 depth=300, bm25 title not duplicated"] = score(
        lambda q: first_docs(rrf([nodup[q][:300], vec[q][:300]], 60), doc_of))
    # whole documents (the BEIR/Pyserini setting: title + text, one entry per doc)
    docs = {d["_id"]: d for d in corpus.docs}
    doc_ids = sorted(docs)
    whole_ids = lexical_run("docs", [(i, i, f"{docs[d]['title']}\n{docs[d]['text']}")
                                     for i, d in enumerate(doc_ids)])
    whole = {q: [(doc_ids[c], s) for c, s in whole_ids[q]] for q in qids}
    res["bm25 whole documents (reference)"] = score(lambda q: [d for d, _ in whole[q][:10]])
    res["hybrid doc-RRF k=60: bm25 whole docs + vector chunks->docs"] = score(
        lambda q: first_docs(rrf([whole[q][:300], collapse(vec[q][:300], doc_of)], 60), None))

    # how much of each chunk the embedder actually reads (max_seq_length word pieces)
    tok = emb._model.tokenizer
    max_len = emb._model.max_seq_length
    lens = [len(ids) for ids in tok(texts, add_special_tokens=True)["input_ids"]]
    res["embedder max_seq_length"] = max_len
    res["chunk texts longer than max_seq_length (%)"] = round(
        100 * sum(n > max_len for n in lens) / len(lens), 1)
    res["word pieces cut by truncation (% of all)"] = round(
        100 * sum(max(0, n - max_len) for n in lens) / sum(lens), 1)
    res["median word pieces per chunk text"] = int(statistics.median(lens))

    # title-only chunks: when a document's body starts with a line longer than the
    # budget, the packer closes a chunk holding only the "# Title" line
    per_doc: dict[int, int] = {}
    for _c, did, *_ in rows:
        per_doc[did] = per_doc.get(did, 0) + 1
    title_only = {cid for cid, did, _p, t, _h, x in rows
                  if not strip_heading_line(x, t).strip() and per_doc[did] > 1}
    res["title-only chunks"] = len(title_only)
    res["title-only chunks (% of chunks)"] = round(100 * len(title_only) / len(rows), 1)
    res["docs whose first chunk is title-only (%)"] = round(
        100 * len({doc_of[c] for c in title_only}) / len(corpus.docs), 1)

    def without(ranked: dict[str, Ranked], drop: set[int]) -> dict[str, Ranked]:
        return {q: [(c, s) for c, s in r if c not in drop] for q, r in ranked.items()}

    vec_nt = without(vec, title_only)  # exact search minus those rows = not indexing them
    bm25_nt = lexical_run("no-title-only", [(cid, did, indexed(t, h, x))
                                            for cid, did, _p, t, h, x in rows
                                            if cid not in title_only])
    res["bm25 without title-only chunks"] = score(chunks_top(bm25_nt))
    res["vector without title-only chunks"] = score(chunks_top(vec_nt))
    res["hybrid without title-only chunks"] = score(
        lambda q: first_docs(rrf([bm25_nt[q][:300], vec_nt[q][:300]], 60), doc_of))
    bm25_nt2 = lexical_run("no-title-only-nodup", [
        (cid, did, indexed(t, h, strip_heading_line(x, t)))
        for cid, did, _p, t, h, x in rows if cid not in title_only])
    res["bm25 without title-only chunks, title not duplicated"] = score(chunks_top(bm25_nt2))
    res["hybrid without title-only chunks, bm25 title not duplicated"] = score(
        lambda q: first_docs(rrf([bm25_nt2[q][:300], vec_nt[q][:300]], 60), doc_of))

    if args.reembed:
        # the same chunks with the duplicated title line dropped, re-embedded
        row_of = {t: i for i, t in enumerate(texts)}
        new_text = {cid: indexed(t, h, strip_heading_line(x, t))
                    for cid, _d, _p, t, h, x in rows}
        old_text = {cid: indexed(t, h, x) for cid, _d, _p, t, h, x in rows}
        todo = sorted({new_text[c] for c in new_text if new_text[c] != old_text[c]})
        t0 = time.perf_counter()
        fresh = dict(zip(todo, emb.encode(todo), strict=True)) if todo else {}
        res["re-embedded texts"] = len(todo)
        res["re-embed seconds"] = round(time.perf_counter() - t0, 1)
        ids = sorted(new_text)
        mat = np.stack([fresh[new_text[c]] if new_text[c] in fresh
                        else vecs[row_of[old_text[c]]] for c in ids])
        vec2 = {}
        for q in qids:
            sims = mat @ qvec[q]
            top = np.argsort(-sims)[:depth]
            vec2[q] = [(ids[j], float(sims[j])) for j in top]
        res["vector chunks, title not duplicated"] = score(chunks_top(vec2))
        res["hybrid chunk-RRF k=60 depth=300, title not duplicated in both"] = score(
            lambda q: first_docs(rrf([nodup[q][:300], vec2[q][:300]], 60), doc_of))
        vec2_nt = without(vec2, title_only)
        res["vector without title-only chunks, title not duplicated"] = score(
            chunks_top(vec2_nt))
        res["hybrid without title-only chunks, title not duplicated in both"] = score(
            lambda q: first_docs(rrf([bm25_nt2[q][:300], vec2_nt[q][:300]], 60), doc_of))
    kb.close()

    width = max(len(k) for k in res)
    for k, v in res.items():
        print(f"{k.ljust(width)}  {v}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
