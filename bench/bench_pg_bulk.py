"""Bulk ingest into the PostgreSQL store against the row-by-row path, side by side
(issue 47, items 2 and 4). Run from the repository root; it starts its own
throwaway PostgreSQL 18 + pgvector (tests/pg_server.py, autovacuum off so that no
background worker adds CPU to either side)::

    .venv/bin/python bench/bench_pg_bulk.py ingest --size 40000
    .venv/bin/python bench/bench_pg_bulk.py halfvec --sets nfcorpus,scifact

ingest   a corpus of real text (bench/kb_big.py's make_big_corpus, as bench/bench_pg.py
         latency) of ``--size`` chunks, synthetic vectors (bench_access.HashEmbedder, its
         time left out as bench/pg_scale.py does), ingested in two steps (the first half,
         then the rest: a first load, then an addition as large as the KB) into two
         databases of one server: ``row`` (PgIngestor(bulk=False), the row-by-row path of
         every ingest before issue 47) and ``bulk`` (the path an ingest now chooses).
         Per step and path: wall s, CPU s (this process + the server's processes) per
         1,000 new chunks, and each database's disk by table (heap, TOAST, indexes),
         with new/old ratios. Then BM25 through both KBs must return the same chunks
         and scores, and each KB's vector search is scored by its recall@10 against an
         exact scan (the HNSW graphs differ: one built, one grown row by row).
halfvec  each BEIR set with the bundled all-MiniLM-L6-v2 vectors (bench_pg.py's cached
         embedder) loaded in bulk; a second HNSW index over ``embedding::halfvec(dim)``
         beside the float32 one; nDCG@10 (vector and hybrid, 100 hits -> 10 documents,
         as bench_pg.py ndcg) and recall@10 against an exact scan, for the float32 index
         as searched today and for the halfvec index with an exact float32 re-rank of its
         candidates (kbagent.kb.pg.kb's vector CTE replaced in this process only), and
         both indexes' sizes and build CPU.

JSON in ``bench/out/pg_bulk_<section>.json``; tables on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_access import HashEmbedder  # noqa: E402

from kbagent.settings import Settings  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

OUT = ROOT / "bench" / "out"
PATHS = ("row", "bulk")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _stat(pid: int | str) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()


def server_cpu(server: PgServer) -> float:
    """CPU seconds of the server: postmaster, reaped children and live backends."""
    pid = int((server.dir / "data" / "postmaster.pid").read_text().split()[0])
    total = sum(int(x) for x in _stat(pid)[11:15])
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                f = _stat(d.name)
            except OSError:
                continue
            if int(f[1]) == pid:
                total += int(f[11]) + int(f[12])
    return total / os.sysconf("SC_CLK_TCK")


def client_cpu() -> float:
    t = os.times()
    return t.user + t.system


class TimedEmbedder(HashEmbedder):
    seconds = 0.0

    def encode(self, texts: list[str]) -> Any:
        t0 = time.perf_counter()
        try:
            return super().encode(texts)
        finally:
            self.seconds += time.perf_counter() - t0


def disk(dsn: str) -> dict[str, dict[str, int]]:
    """Bytes per kbagent table of one database: heap, TOAST, indexes, and each index."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CHECKPOINT")
        out: dict[str, dict[str, int]] = {}
        for name, heap, toast, idx, total in c.execute(
                "SELECT relname, pg_relation_size(oid), coalesce(pg_total_relation_size("
                "nullif(reltoastrelid, 0)), 0), pg_indexes_size(oid), "
                "pg_total_relation_size(oid) FROM pg_class WHERE relkind = 'r' "
                "AND relname LIKE 'kbagent_%' ORDER BY 5 DESC"):
            out[name] = {"heap": heap, "toast": toast, "indexes": idx, "total": total}
        for name, size in c.execute(
                "SELECT c.relname, pg_relation_size(c.oid) FROM pg_index i JOIN pg_class c "
                "ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid "
                "WHERE t.relname IN ('kbagent_chunks', 'kbagent_postings') ORDER BY 2 DESC"):
            key = name if not name.startswith("kbagent_hnsw_") else "kbagent_hnsw (the KB's)"
            out.setdefault("index " + key, {"total": 0})["total"] += size
        out["database"] = {"total": int(c.execute(
            "SELECT pg_database_size(current_database())").fetchone()[0])}
    return out


def _link(pool: Path, dest: Path, plan: list[tuple[str, int]]) -> int:
    for rel, _ in plan:
        target = dest / rel
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(pool / rel, target)
    return sum(n for _, n in plan)


def corpus_pool(args: argparse.Namespace, settings: Settings
                ) -> tuple[Path, list[tuple[str, int]]]:
    """The synthetic corpus of ``args.size`` chunks (written once under bench/out/bulk,
    reused) and its plan: (file, chunks) in order."""
    from kb_big import make_big_corpus

    pool = OUT / "bulk" / f"pool{args.size}"
    plan_file = pool.with_suffix(".json")
    if not plan_file.is_file():
        plan: list[tuple[str, int]] = []
        log(f"writing a corpus of ~{args.size} chunks to {pool}")
        info = make_big_corpus(args.data, pool, args.size, settings, plan)
        plan_file.write_text(json.dumps({"info": info, "plan": plan}))
    return pool, [(r, int(n)) for r, n in json.loads(plan_file.read_text())["plan"]]


def section_ingest(args: argparse.Namespace, server: PgServer, dsn: str, work: Path
                   ) -> dict[str, Any]:
    import psycopg

    from kbagent.kb.pg.ingest import PgIngestor

    settings = Settings.load(home=work / "home", bm25_first_chunks=0)
    pool, plan = corpus_pool(args, settings)
    half = len(plan) // 2
    dsns = {}
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("ALTER SYSTEM SET autovacuum = off")
        c.execute("SELECT pg_reload_conf()")
        for path in PATHS:
            c.execute(f"CREATE DATABASE kb_{path}")
            dsns[path] = dsn.rsplit("/", 1)[0] + f"/kb_{path}"
    out: dict[str, Any] = {"steps": []}
    for step, part in (("first load", plan[:half]), ("addition", plan[half:])):
        row: dict[str, Any] = {"step": step}
        for path in PATHS:
            src = work / f"src-{path}"
            new = _link(pool, src, part)
            emb = TimedEmbedder()
            ing = PgIngestor(settings, path, dsns[path], bulk=False if path == "row" else None,
                             embedder=emb)
            load = os.getloadavg()[0]
            c0, s0, t0 = client_cpu(), server_cpu(server), time.perf_counter()
            rep = ing.run(src)
            wall = time.perf_counter() - t0
            cpu_c, cpu_s = client_cpu() - c0 - emb.seconds, server_cpu(server) - s0
            row[path] = {"new_chunks": new, "chunks_total": rep.chunks_total,
                         "bulk": ing.loaded_in_bulk, "wall_s": round(wall, 1),
                         "client_cpu_s": round(cpu_c, 1), "server_cpu_s": round(cpu_s, 1),
                         "cpu_s_per_1k": round((cpu_c + cpu_s) / new * 1000, 2),
                         "wall_s_per_1k": round((wall - emb.seconds) / new * 1000, 2),
                         "load_before": round(load, 2), "disk": disk(dsns[path])}
            log(f"{step} {path}: { {k: v for k, v in row[path].items() if k != 'disk'} }")
        for key in ("cpu_s_per_1k", "wall_s_per_1k", "server_cpu_s", "client_cpu_s"):
            row[f"ratio_{key}"] = round(row["bulk"][key] / max(row["row"][key], 1e-9), 3)
        out["steps"].append(row)
    out["same_results"] = same_results(settings, args.data)
    return out


def same_results(settings: Settings, data: Path) -> dict[str, Any]:
    """Top 10 through both KBs: BM25 must be the same chunks with the same scores;
    vector search is approximate (two HNSW graphs, one built, one grown row by row),
    so each is scored by its recall@10 against an exact scan of the same KB."""
    import random

    from bench_pg import read_jsonl

    import kbagent.kb.pg.kb as pgkb
    from kbagent.kb.search import HybridSearcher
    from kbagent.kb.stores import open_kb

    texts = [q["text"] for q in read_jsonl(data / "scifact" / "queries.jsonl")]
    queries = random.Random(3).sample(texts, 30)
    vecs = HashEmbedder().encode(queries)
    kbs = {p: open_kb(settings, p) for p in PATHS}

    def top(kb: Any, q: str, v: Any, mode: str) -> list[tuple[Any, ...]]:
        return [(h.path, h.start_line, h.end_line, h.text, round(h.score, 9), h.chunk_id)
                for h in HybridSearcher([kb]).search(q, 10, mode, {kb.embedding_space: v}).hits]

    pairs = list(zip(queries, vecs, strict=True))
    out: dict[str, Any] = {"queries": len(queries)}
    # scores to 9 digits: SQL sums a chunk's terms in the order it meets their rows
    out["bm25_differing"] = sum([h[:5] for h in top(kbs["row"], q, v, "bm25")] !=
                                [h[:5] for h in top(kbs["bulk"], q, v, "bm25")] for q, v in pairs)
    fp32 = pgkb._VECTOR
    for p, kb in kbs.items():
        hnsw = [{h[5] for h in top(kb, q, v, "vector")} for q, v in pairs]
        pgkb._VECTOR = EXACT_VECTOR
        exact = [{h[5] for h in top(kb, q, v, "vector")} for q, v in pairs]
        pgkb._VECTOR = fp32
        out[f"{p}_vector_recall10"] = round(statistics.mean(
            len(a & b) / 10 for a, b in zip(hnsw, exact, strict=True)), 3)
    for kb in kbs.values():
        kb.close()
    return out


# ------------------------------------------------------------------ halfvec
HALF_VECTOR = """
v AS MATERIALIZED (SELECT id, embedding::vector({dim}) <=> %(vec)s::vector({dim}) AS d
      FROM (SELECT id, embedding FROM kbagent_chunks c WHERE kb = {kb}
            AND vector_dims(embedding) = {dim} AND {allowed}
            ORDER BY embedding::halfvec({dim}) <=> %(vec)s::halfvec({dim})
            LIMIT %(depth)s) h),
vr AS (SELECT id, d, row_number() OVER (ORDER BY d, id) AS r FROM v)
"""
EXACT_VECTOR = """
v AS MATERIALIZED (SELECT id, embedding::vector({dim}) <=> %(vec)s::vector({dim}) AS d
      FROM kbagent_chunks c WHERE kb = {kb} AND vector_dims(embedding) = {dim} AND {allowed}
      ORDER BY (embedding::vector({dim}) <=> %(vec)s::vector({dim})) + 0, id
      LIMIT %(depth)s),
vr AS (SELECT id, d, row_number() OVER (ORDER BY d, id) AS r FROM v)
"""


def _build(conn: Any, server: PgServer, statement: str) -> float:
    s0 = server_cpu(server)
    conn.execute(statement)
    return round(server_cpu(server) - s0, 1)


def section_halfvec(args: argparse.Namespace, server: PgServer, dsn: str, work: Path
                    ) -> dict[str, Any]:
    import psycopg
    from bench_pg import CachedEmbedder, beir, beir_folder
    from kb_nf import docs_from_hits

    import kbagent.kb.pg.kb as pgkb
    from kbagent.evaluation.metrics import ndcg_at_k
    from kbagent.kb.pg.ingest import PgIngestor
    from kbagent.kb.pg.schema import hnsw_index_name, hnsw_index_sql
    from kbagent.kb.search import HybridSearcher
    from kbagent.kb.stores import open_kb

    emb = CachedEmbedder(OUT / "cache" / args.cache)
    settings = Settings.load(home=work / "home", bm25_first_chunks=0)
    results: dict[str, Any] = {}
    fp32 = pgkb._VECTOR
    for name in [s for s in args.sets.split(",") if s]:
        docs, queries, qrels = beir(args.data, name)
        folder = beir_folder(docs, work / name)
        PgIngestor(settings, name, dsn, embedder=emb).run(folder)
        kb = open_kb(settings, name)
        index = hnsw_index_name(name, kb.dim)
        row: dict[str, Any] = {"chunks": kb.chunks, "queries": len(queries)}
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f"DROP INDEX {index}")
            row["fp32_build_cpu_s"] = _build(c, server, hnsw_index_sql(name, kb.dim).as_string(c))
            row["half_build_cpu_s"] = _build(
                c, server, hnsw_index_sql(name, kb.dim).as_string(c).replace(
                    index, index + "_half").replace(f"::vector({kb.dim})) vector_cosine_ops",
                                                    f"::halfvec({kb.dim})) halfvec_cosine_ops"))
            for suffix in ("", "_half"):
                row[f"index{suffix or '_fp32'}_bytes"] = int(c.execute(
                    "SELECT pg_relation_size(%s::regclass)", (index + suffix,)).fetchone()[0])
            c.execute("ANALYZE kbagent_chunks")
        qids = sorted(queries)
        qvecs = dict(zip(qids, emb.encode([queries[q] for q in qids]), strict=True))
        searcher = HybridSearcher([kb], embedder_for=lambda _s: emb)
        top: dict[str, dict[str, list[tuple[int, float]]]] = {}
        for variant, cte in (("exact", EXACT_VECTOR), ("fp32", fp32), ("half", HALF_VECTOR)):
            pgkb._VECTOR = cte
            plan = kb.explain(queries[qids[0]], "vector", qvecs[qids[0]], 100, None)
            row[f"{variant}_plan_index"] = ("_half" in plan if variant == "half" else
                                            "kbagent_hnsw_" in plan)
            top[variant] = {}
            for mode in ("vector", "hybrid"):
                scores = []
                for q in qids:
                    hits = searcher.search(queries[q], 100, mode,
                                           {kb.embedding_space: qvecs[q]}).hits
                    scores.append(ndcg_at_k(docs_from_hits(hits), qrels[q], 10))
                    if mode == "vector":
                        top[variant][q] = [(h.chunk_id, h.score) for h in hits[:10]]
                row[f"{variant}_{mode}_ndcg10"] = round(statistics.mean(scores), 4)
        pgkb._VECTOR = fp32
        for variant in ("fp32", "half"):  # chunk ids: a long line makes several chunks
            row[f"{variant}_recall10"] = round(statistics.mean(
                len({c for c, _ in top[variant][q]} & {c for c, _ in top["exact"][q]}) / 10
                for q in qids), 4)
            exact = {(q, c): s for q in qids for c, s in top["exact"][q]}
            row[f"{variant}_score_mismatches"] = sum(  # the returned similarity is exact
                1 for q in qids for c, s in top[variant][q] if exact.get((q, c), s) != s)
        kb.close()
        log(f"{name}: {row}")
        results[name] = row
    return results


# ------------------------------------------------------------------ main
def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f}"


def print_ingest(res: dict[str, Any]) -> None:
    print("| step | path | new chunks | bulk | wall s per 1k | CPU s per 1k (client + server) "
          "| load |")
    print("|---|---|---|---|---|---|---|")
    for s in res["steps"]:
        for p in PATHS:
            r = s[p]
            print(f"| {s['step']} | {p} | {r['new_chunks']:,} | {r['bulk']} | "
                  f"{r['wall_s_per_1k']} | {r['cpu_s_per_1k']} ({r['client_cpu_s']} + "
                  f"{r['server_cpu_s']} s) | {r['load_before']} |")
        print(f"| {s['step']} | bulk / row | | | {s['ratio_wall_s_per_1k']}x | "
              f"{s['ratio_cpu_s_per_1k']}x | |")
    last = res["steps"][-1]
    print("\n| relation (MB) | row: heap / TOAST / indexes / total | bulk: total | bulk/row |")
    print("|---|---|---|---|")
    for rel, a in last["row"]["disk"].items():
        b = last["bulk"]["disk"].get(rel, {"total": 0})
        parts = " / ".join(_mb(a[k]) for k in ("heap", "toast", "indexes") if k in a)
        print(f"| {rel} | {parts + ' / ' if parts else ''}{_mb(a['total'])} | "
              f"{_mb(b['total'])} | {b['total'] / max(a['total'], 1):.3f} |")
    print(f"\nsame results: {res['same_results']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("section", choices=("ingest", "halfvec"))
    ap.add_argument("--size", type=int, default=40_000, help="ingest: chunks in all")
    ap.add_argument("--sets", default="nfcorpus,scifact", help="halfvec: BEIR sets")
    ap.add_argument("--cache", default="pg_embed.sqlite", help="halfvec: vector cache file")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = ap.parse_args()
    if not args.data.is_dir():
        args.data = Path("/work/shared/data")
    server = PgServer()
    dsn = server.start()
    results: dict[str, Any] = {"load_avg_start": [round(x, 2) for x in os.getloadavg()],
                               "cpus": os.cpu_count()}
    try:
        with tempfile.TemporaryDirectory(prefix="bench_pg_bulk_") as tmp:
            fn = section_ingest if args.section == "ingest" else section_halfvec
            results[args.section] = fn(args, server, dsn, Path(tmp))
    finally:
        server.stop()
    results["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"pg_bulk_{args.section}.json").write_text(json.dumps(results, indent=2))
    if args.section == "ingest":
        print_ingest(results["ingest"])
    else:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
