"""BM25 in PostgreSQL: the exhaustive statement against block-max top-k
(kbagent/kb/pg/bm25.py) and against PostgreSQL's own full-text search (issue 47,
item 1). Run from the repository root under ``nice -n 19``; it starts its own
throwaway PostgreSQL 18 + pgvector (tests/pg_server.py)::

    nice -n 19 .venv/bin/python bench/bench_pg_bm25.py latency --size 150000
    nice -n 19 .venv/bin/python bench/bench_pg_bm25.py ndcg --sets nfcorpus,scifact

latency  a corpus of real text (bench/kb_big.py's make_big_corpus, as bench_pg_bulk.py
         ingest; the pool is shared with it) of ``--size`` chunks, round 1's documents
         readable by group ``hr`` only (.kbaccess), synthetic vectors, loaded through
         the bulk path. Queries: ``--queries`` real SciFact/NFCorpus questions and 40
         built from the KB's most frequent terms; callers: anonymous (cannot read
         round 1) and ``maya`` (hr: reads everything, other statistics). Per query and
         caller the old statement and the new one run back to back (order alternating),
         BM25 at depth 50 (what a k = 10 search asks for, kbagent.kb.search.
         candidate_depth) and hybrid; every fast top is checked against the exhaustive
         one (same scores to 1e-12, ids equal but for ties). ``--fts``: PostgreSQL's
         full-text search as the alternative: a tsvector (english) per chunk with a GIN
         index, the OR of the query's words, the ``--fts-candidates`` best by
         ts_rank_cd rescored by exact BM25 (per-caller statistics), on every
         ``--fts-every``-th query: p50/p95 and its recall of the exact top 10.
ndcg     each BEIR set ingested (synthetic vectors), BM25 nDCG@10 (100 hits -> 10
         documents, as bench_pg.py ndcg) through the old statement and the new one.

JSON in ``bench/out/pg_bm25_<section>.json``; tables on stdout.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_access import HashEmbedder  # noqa: E402

from kbagent.kb.access import ANONYMOUS, Principal  # noqa: E402
from kbagent.settings import Settings  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

OUT = ROOT / "bench" / "out"
DEPTH = 50  # kbagent.kb.search.candidate_depth(10)
WHO = {"anonymous": ANONYMOUS, "restricted": Principal("maya", frozenset({"hr"}))}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))] if s else float("nan")


def same_top(fast: list[Any], slow: list[Any]) -> bool:
    """Same scores (to 1e-12) and ids, but for ids swapped within ties."""
    if len(fast) != len(slow):
        return False
    for f, s in zip(fast, slow, strict=True):
        if not math.isclose(f[2], s[2], rel_tol=1e-12):
            return False
    ties = {s[0]: s[2] for s in slow}
    return all(f[0] == s[0] or (f[0] in ties and math.isclose(ties[f[0]], f[2], rel_tol=1e-12))
               or math.isclose(s[2], slow[-1][2], rel_tol=1e-12)
               for f, s in zip(fast, slow, strict=True))


def build(args: argparse.Namespace, server: PgServer, dsn: str, work: Path
          ) -> tuple[Settings, dict[str, Any]]:
    """The corpus ingested through the bulk path, or, with ``--keep``, the build a
    previous run left there (its figures read back)."""
    from bench_pg_bulk import TimedEmbedder, _link, client_cpu, corpus_pool, disk, server_cpu

    from kbagent.kb.pg.ingest import PgIngestor

    settings = Settings.load(home=work / "home", bm25_first_chunks=0)
    built = work / "build.json"
    if built.is_file():
        info = json.loads(built.read_text())
        log(f"reusing the build in {work}: {info}")
        return settings, info
    pool, plan = corpus_pool(args, settings)
    src = work / "src"
    _link(pool, src, plan)
    (src / ".kbaccess").write_text("r1/** hr\n", encoding="utf-8")
    log(f"ingesting {len(plan)} files (bulk path)")
    load = os.getloadavg()[0]
    emb = TimedEmbedder()
    c0, s0, t0 = client_cpu(), server_cpu(server), time.perf_counter()
    ing = PgIngestor(settings, "big", dsn, embedder=emb)
    rep = ing.run(src)
    wall = time.perf_counter() - t0
    cpu_c, cpu_s = client_cpu() - c0 - emb.seconds, server_cpu(server) - s0
    info = {"chunks": rep.chunks_total, "bulk": ing.loaded_in_bulk, "ingest_s": round(wall, 1),
            "embed_s": round(emb.seconds, 1), "client_cpu_s": round(cpu_c, 1),
            "server_cpu_s": round(cpu_s, 1),
            "cpu_s_per_1k": round((cpu_c + cpu_s) / rep.chunks_total * 1000, 2),
            "wall_s_per_1k": round((wall - emb.seconds) / rep.chunks_total * 1000, 2),
            "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2)}
    d = disk(dsn)
    info["disk_mb"] = {k: round(v["total"] / 1e6, 1) for k, v in d.items()}
    info["disk_detail_mb"] = {k: {f: round(b / 1e6, 1) for f, b in v.items()}
                              for k, v in d.items() if k.startswith("kbagent_")}
    if args.keep:
        built.write_text(json.dumps(info))
    log(f"built: {info}")
    return settings, info


def recut(server: PgServer, dsn: str) -> dict[str, Any]:
    """The blocks cut again by this code (kbagent.kb.pg.bm25_blocks.rebuild, one
    transaction), as a build with this code's bulk path would cut them: its CPU and
    the blocks' segments and size before and after."""
    import psycopg
    from bench_pg_bulk import client_cpu, server_cpu

    from kbagent.kb.pg import bm25_blocks, schema

    def shape(c: Any) -> dict[str, Any]:
        n, segs = c.execute("SELECT count(*), count(DISTINCT (term, groups, seg)) FROM "
                            "kbagent_blocks WHERE kb = 'big'").fetchone()
        return {"blocks": int(n), "segments": int(segs), "mb": round(int(c.execute(
            "SELECT pg_total_relation_size('kbagent_blocks')").fetchone()[0]) / 1e6, 1)}

    with psycopg.connect(dsn, autocommit=True) as c:
        out: dict[str, Any] = {"before": shape(c)}
        log(f"re-cutting the blocks: {out['before']}")
        c0, s0, t0 = client_cpu(), server_cpu(server), time.perf_counter()
        schema.create_schema(c)  # as this code's ingest would: its columns
        with c.transaction():
            c.execute("SET LOCAL work_mem = '256MB'")
            bm25_blocks.rebuild(c, "big")
            c.execute("UPDATE kbagent_kbs SET manifest = jsonb_set(manifest, %s, to_jsonb(%s)) "
                      "WHERE kb = 'big'", ([bm25_blocks.MANIFEST_KEY], bm25_blocks.VERSION))
        out["wall_s"] = round(time.perf_counter() - t0, 1)
        out["cpu_s"] = round(client_cpu() - c0 + server_cpu(server) - s0, 1)
        c.execute("VACUUM (FULL, ANALYZE) kbagent_blocks")
        out["after"] = shape(c)
    log(f"re-cut: {out}")
    return out


def make_queries(args: argparse.Namespace, kb: Any) -> list[tuple[str, str]]:
    """(kind, text): real questions, then queries of the KB's most frequent terms."""
    from bench_pg import read_jsonl

    rnd = random.Random(7)
    texts = [q["text"] for s in ("scifact", "nfcorpus")
             for q in read_jsonl(args.data / s / "queries.jsonl")]
    out = [("real", t) for t in rnd.sample(texts, args.queries)]
    top = [r[0] for r in kb.store._rows(
        "SELECT term FROM kbagent_terms WHERE kb = %s GROUP BY term ORDER BY sum(df) DESC "
        "LIMIT 60", (kb.name,))]
    out += [("frequent", top[i]) for i in range(0, 40, 4)]
    out += [("frequent", " ".join(rnd.sample(top, rnd.randint(2, 4)))) for _ in range(30)]
    return out


FTS = """
WITH q AS (SELECT to_tsquery('english', %(tq)s) AS q),
c AS (SELECT f.id FROM kbagent_fts f, q WHERE f.tsv @@ q.q AND {fallowed}
      ORDER BY ts_rank_cd(f.tsv, q.q) DESC LIMIT %(cands)s),
st AS (SELECT coalesce(sum(n_chunks), 0)::float8 AS n,
              greatest(coalesce(sum(total_tokens), 0)::float8
                       / greatest(coalesce(sum(n_chunks), 0), 1), 1e-9) AS avgdl
       FROM kbagent_groupstats g WHERE kb = 'big' AND {gallowed}),
w AS (SELECT t.term, ln(1 + (st.n - sum(t.df) + 0.5) / (sum(t.df) + 0.5)) AS idf
      FROM kbagent_terms t, st WHERE t.kb = 'big' AND t.term = ANY(%(terms)s) AND {tallowed}
      GROUP BY t.term, st.n)
SELECT p.chunk_id, sum(w.idf * p.tf * 2.2 / (p.tf + 1.2 * (1 - 0.75 + 0.75 * p.n_tokens
                                                            / st.avgdl))) AS s
FROM c JOIN kbagent_postings p ON p.kb = 'big' AND p.chunk_id = c.id
JOIN w ON w.term = p.term, st GROUP BY p.chunk_id ORDER BY s DESC, p.chunk_id LIMIT 10
"""


def fts_statement(who: Any) -> Any:
    from psycopg import sql

    from kbagent.kb.pg.kb import _allowed

    return sql.SQL(FTS).format(**{f"{a}allowed": sql.SQL(_allowed(who, a)[0]) for a in "fgt"})


def section_latency(args: argparse.Namespace, server: PgServer, dsn: str, work: Path
                    ) -> dict[str, Any]:
    from kbagent.kb.access import allowed_tokens
    from kbagent.kb.stores import open_kb

    settings, info = build(args, server, dsn, work)
    out: dict[str, Any] = {"build": info}
    if args.recut:
        out["recut"] = recut(server, dsn)
    if args.build_only:
        return out
    kb = open_kb(settings, "big")
    if args.fts:
        t0 = time.perf_counter()
        kb.conn.execute("CREATE TABLE kbagent_fts AS SELECT id, groups, to_tsvector('english', "
                       "heading || ' ' || text) AS tsv FROM kbagent_chunks WHERE kb = 'big'")
        kb.conn.execute("CREATE INDEX ON kbagent_fts USING gin(tsv)")
        kb.conn.execute("VACUUM ANALYZE kbagent_fts")
        out["fts_build_s"] = round(time.perf_counter() - t0, 1)
        out["fts_mb"] = round(int(kb.store._rows(
            "SELECT pg_total_relation_size('kbagent_fts')")[0][0]) / 1e6, 1)
    queries = make_queries(args, kb)
    vecs = HashEmbedder().encode([q for _, q in queries])
    n = kb.chunks
    rows = []
    for i, ((kind, q), vec) in enumerate(zip(queries, vecs, strict=True)):
        terms = kb.lexical.terms(q)
        dfs = [int(r[0]) for r in kb.store._rows(
            "SELECT sum(df) FROM kbagent_terms WHERE kb = 'big' AND term = ANY(%s) "
            "GROUP BY term", (terms,))]
        for who_name, who in WHO.items():
            row: dict[str, Any] = {"kind": kind, "q": q, "who": who_name,
                                   "max_df_share": round(max(dfs, default=0) / n, 4)}
            for mode in ("bm25", "hybrid"):
                got: dict[bool, Any] = {}
                for fast in ((False, True) if i % 2 else (True, False)):
                    kb.fast_bm25 = fast
                    kb.search_evidence(q, mode, vec, DEPTH, who)  # warm
                    t0 = time.perf_counter()
                    got[fast] = kb.search_evidence(q, mode, vec, DEPTH, who)
                    row[f"{mode}_{'new' if fast else 'old'}_ms"] = (time.perf_counter() - t0) * 1e3
                    if fast and mode == "bm25":
                        row["blocks_read"] = kb.blocks_read
                if mode == "bm25":
                    row["exact"] = same_top(got[True], got[False])
                else:
                    row["exact"] = row["exact"] and [g[1] for g in got[True]] == [
                        g[1] for g in got[False]]
            if args.fts and i % args.fts_every == 0:
                words = re.findall(r"[a-z0-9]+", q.lower())
                params = {"tq": " | ".join(words) or "x", "cands": args.fts_candidates,
                          "terms": terms, "allowed": allowed_tokens(who)}
                stmt = fts_statement(who)
                kb.store._rows(stmt, params)
                t0 = time.perf_counter()
                top = [r[0] for r in kb.store._rows(stmt, params)]
                row["fts_ms"] = (time.perf_counter() - t0) * 1e3
                kb.fast_bm25 = True
                exact = [g[0] for g in kb.search_evidence(q, "bm25", None, 10, who)]
                row["fts_recall10"] = len(set(top) & set(exact)) / max(len(exact), 1)
            if who is ANONYMOUS:  # the access probe: round 1 is readable by hr only
                row["restricted_seen"] = sum(
                    1 for h in kb.search_evidence(q, "hybrid", vec, DEPTH, who)
                    if kb.store.chunks([h[0]])[h[0]].path.startswith("r1/"))
            rows.append(row)
        if i % 20 == 0:
            log(f"{i}/{len(queries)} queries")
    kb.close()
    out["rows"] = rows
    out["summary"] = summarize(rows, args.fts)
    return out


def summarize(rows: list[dict[str, Any]], fts: bool) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        kind = r["kind"] if r["kind"] == "frequent" else (
            "real, a term in >= 5% of chunks" if r["max_df_share"] >= 0.05 else
            "real, rarer terms")
        for key in ((kind, r["who"]), ("all", r["who"])):
            groups.setdefault(key, []).append(r)
    out = []
    for (kind, who), rs in sorted(groups.items()):
        s: dict[str, Any] = {"queries": kind, "caller": who, "n": len(rs),
                             "exact": sum(r["exact"] for r in rs)}
        for mode in ("bm25", "hybrid"):
            for v in ("old", "new"):
                vals = [r[f"{mode}_{v}_ms"] for r in rs]
                s[f"{mode}_{v}"] = (round(pct(vals, 50), 2), round(pct(vals, 95), 2))
            s[f"{mode}_ratio"] = tuple(round(s[f"{mode}_new"][j] / s[f"{mode}_old"][j], 3)
                                       for j in (0, 1))
        s["blocks_read_p50"] = pct([r["blocks_read"] for r in rs], 50)
        s["blocks_read_max"] = max(r["blocks_read"] for r in rs)
        s["restricted_seen"] = sum(r.get("restricted_seen", 0) for r in rs)
        if fts:
            rs = [r for r in rs if "fts_ms" in r]
            vals = [r["fts_ms"] for r in rs]
            s["fts"] = (round(pct(vals, 50), 2), round(pct(vals, 95), 2))
            s["fts_recall10"] = round(statistics.mean([r["fts_recall10"] for r in rs] or [0]), 3)
            s["fts_n"] = len(rs)
        out.append(s)
    return out


def section_ndcg(args: argparse.Namespace, server: PgServer, dsn: str, work: Path
                 ) -> dict[str, Any]:
    from bench_pg import beir, beir_folder
    from kb_nf import docs_from_hits

    from kbagent.evaluation.metrics import ndcg_at_k
    from kbagent.kb.pg.ingest import PgIngestor
    from kbagent.kb.search import HybridSearcher
    from kbagent.kb.stores import open_kb

    settings = Settings.load(home=work / "home", bm25_first_chunks=0)
    out: dict[str, Any] = {}
    for name in [s for s in args.sets.split(",") if s]:
        docs, queries, qrels = beir(args.data, name)
        folder = beir_folder(docs, work / name)
        PgIngestor(settings, name, dsn, embedder=HashEmbedder()).run(folder)
        kb = open_kb(settings, name)
        searcher = HybridSearcher([kb])
        row: dict[str, Any] = {"chunks": kb.chunks, "queries": len(queries)}
        tops: dict[bool, list[list[str]]] = {}
        for fast in (False, True):
            kb.fast_bm25 = fast
            tops[fast] = [docs_from_hits(searcher.search(queries[q], 100, "bm25").hits)
                          for q in sorted(queries)]
            row[f"{'new' if fast else 'old'}_bm25_ndcg10"] = round(statistics.mean(
                ndcg_at_k(t, qrels[q], 10) for t, q in zip(tops[fast], sorted(queries),
                                                           strict=True)), 4)
        row["top10_lists_differing"] = sum(a != b for a, b in zip(tops[False], tops[True],
                                                                  strict=True))
        kb.close()
        log(f"{name}: {row}")
        out[name] = row
    return out


def print_latency(res: dict[str, Any]) -> None:
    print(json.dumps(res["build"]))
    fts = "fts" in res["summary"][0]
    print("| queries | caller | n | exact | bm25 old p50/p95 | bm25 new p50/p95 | new/old | "
          "hybrid old | hybrid new | new/old | blocks read p50 / max | restricted seen |"
          + (" FTS+rescore p50/p95 | FTS recall@10 |" if fts else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if fts else ""))
    for s in res["summary"]:
        line = (f"| {s['queries']} | {s['caller']} | {s['n']} | {s['exact']}/{s['n']} | "
                f"{s['bm25_old'][0]} / {s['bm25_old'][1]} | {s['bm25_new'][0]} / "
                f"{s['bm25_new'][1]} | {s['bm25_ratio'][0]}x / {s['bm25_ratio'][1]}x | "
                f"{s['hybrid_old'][0]} / {s['hybrid_old'][1]} | {s['hybrid_new'][0]} / "
                f"{s['hybrid_new'][1]} | {s['hybrid_ratio'][0]}x / {s['hybrid_ratio'][1]}x | "
                f"{s['blocks_read_p50']} / {s['blocks_read_max']} | {s['restricted_seen']} |")
        if fts:
            line += f" {s['fts'][0]} / {s['fts'][1]} (n={s['fts_n']}) | {s['fts_recall10']} |"
        print(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("section", choices=("latency", "ndcg"))
    ap.add_argument("--size", type=int, default=40_000, help="latency: chunks in all")
    ap.add_argument("--queries", type=int, default=100, help="latency: real questions")
    ap.add_argument("--fts", action="store_true", help="latency: measure tsvector + GIN too")
    ap.add_argument("--fts-candidates", type=int, default=200)
    ap.add_argument("--fts-every", type=int, default=4, help="FTS on every n-th query")
    ap.add_argument("--sets", default="nfcorpus,scifact", help="ndcg: BEIR sets")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--keep", type=Path, help="latency: build once in this folder (server, "
                    "home, source links) and reuse the build on later runs")
    ap.add_argument("--port", type=int, default=54329, help="--keep: the kept server's port")
    ap.add_argument("--build-only", action="store_true", help="latency: build, then stop")
    ap.add_argument("--recut", action="store_true",
                    help="latency: cut the blocks again with this code before measuring")
    ap.add_argument("--tag", default="", help="a suffix for the JSON file's name")
    args = ap.parse_args()
    if not args.data.is_dir():
        args.data = Path("/work/shared/data")
    if args.keep:  # a server in a kept folder, on a fixed port (the registry names it)
        from pg_scale import KeptPg

        server: PgServer = KeptPg(args.keep.resolve() / "pg", args.port)
    else:
        server = PgServer()
    dsn = server.start()
    results: dict[str, Any] = {"load_avg_start": [round(x, 2) for x in os.getloadavg()],
                               "cpus": os.cpu_count(), "nice": os.nice(0)}
    fn = section_latency if args.section == "latency" else section_ndcg
    try:
        if args.keep:
            results[args.section] = fn(args, server, dsn, args.keep.resolve())
        else:
            with tempfile.TemporaryDirectory(prefix="bench_pg_bm25_") as tmp:
                results[args.section] = fn(args, server, dsn, Path(tmp))
    finally:
        server.stop()
    results["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    OUT.mkdir(parents=True, exist_ok=True)
    name = f"pg_bm25_{args.section}" + (f"_{args.size}" if args.section == "latency" else "")
    name += f"_{args.tag}" if args.tag else ""
    (OUT / f"{name}.json").write_text(json.dumps(results, indent=2))
    if args.section == "latency" and not args.build_only:
        print_latency(results["latency"])
    else:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
