"""Knowledge-base benchmarks on BEIR NFCorpus (plus a 100k-chunk KB for latency).

Run from the repository root::

    .venv/bin/python bench/bench_kb.py            # full run (~15-20 min on 2 cores)
    .venv/bin/python bench/bench_kb.py --quick    # smoke run on a subset (~1-2 min)

What it measures, in one process, side by side (these machines are noisy, so
the numbers that matter are ratios of things timed back to back):

1. ingest   NFCorpus (one ``<_id>.md`` file per document: ``# <title>\\n\\n<text>\\n``)
            through the real :class:`~kbagent.kb.ingest.Ingestor`, against
            ``embedder.encode`` on exactly the chunk texts that ingest embedded,
            in the same order and groups of 256. Each group is encoded a second
            time right beside ingest's own call (see :class:`PairedEmbedder`), so
            the comparison holds under a busy CPU; a separate whole encode-alone
            run before the ingest is reported too. Also: re-ingest unchanged.
2. latency  p50/p95 of :meth:`HybridSearcher.search` over the NFCorpus test
            queries in a warm process, with and without query embedding.
3. ndcg     nDCG@10 (BEIR: graded gains, log2 discount, ideal from qrels) for
            bm25, vector and hybrid. Search returns chunks; chunks map to doc ids
            by file stem, first occurrence kept, k=100 chunks asked for.
4. big      a ~100k-chunk KB built through the real Ingestor with a *replay*
            embedder (real NFCorpus vectors, see :class:`ReplayEmbedder`) and
            texts from NFCorpus, SciFact, HotpotQA and MuSiQue; search latency.
5. cli      ``kbagent --help`` wall time and ``import kbagent.cli`` time.

Results: a table on stdout and JSON in ``bench/out/kb_results.json``. The
NFCorpus chunk vectors are cached in ``bench/out/cache/`` so that a rerun of
only some sections (``--sections latency,big``) skips the slow embedding.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from kb_big import (
    make_big_corpus,
    section_big,
    section_cli,
)
from kb_common import (
    DEFAULT_DATA,
    MODES,
    OUT_DIR,
    PUBLISHED,
    ROOT,
    SECTIONS,
    TARGETS,
    ReplayEmbedder,
    encode_alone,
    index_texts_of_folder,
    load_nfcorpus,
    log,
    write_corpus,
)
from kb_nf import (
    NfState,
    build_nf_kb_from_vectors,
    evaluate_ndcg,
    load_vector_cache,
    ndcg_at_10,
    section_ingest,
    section_latency,
    section_ndcg,
    vector_cache_path,
)

from kbagent.kb.embedder import BUNDLED_MODEL_ID, load_embedder
from kbagent.kb.ingest import EMBED_GROUP, Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.search import HybridSearcher
from kbagent.kb.store import text_hash
from kbagent.settings import Settings

# what the other benchmarks use as ``B.<name>`` (``import bench_kb as B``)
__all__ = [
    "BUNDLED_MODEL_ID",
    "DEFAULT_DATA",
    "EMBED_GROUP",
    "MODES",
    "OUT_DIR",
    "HybridSearcher",
    "Ingestor",
    "KnowledgeBase",
    "NfState",
    "ReplayEmbedder",
    "Settings",
    "build_nf_kb_from_vectors",
    "encode_alone",
    "evaluate_ndcg",
    "git_commit",
    "index_texts_of_folder",
    "load_embedder",
    "load_nfcorpus",
    "load_vector_cache",
    "log",
    "make_big_corpus",
    "ndcg_at_10",
    "text_hash",
    "vector_cache_path",
    "write_corpus",
]


# ---------------------------------------------------------------- report
def summary_rows(results: dict) -> list[tuple[str, str, str, str]]:
    """(metric, value, target, status)."""
    rows: list[tuple[str, str, str, str]] = []

    def ok(b: bool) -> str:
        return "PASS" if b else "FAIL"

    ing = results.get("ingest")
    if ing:
        target = f"< {TARGETS['ingest_overhead_pct']:g}%"
        rows.append(("ingest throughput (chunks/s)", f"{ing['ingest_chunks_per_s']:.1f}", "-",
                     "info"))
        rows.append(("encode-alone throughput, paired (chunks/s)",
                     f"{ing['encode_alone_chunks_per_s']:.1f}", "-", "info"))
        rows.append(("ingest time / paired encode-alone time",
                     f"{ing['ingest_over_encode_ratio']:.3f}", "-", "info"))
        rows.append(("non-embedding overhead of ingest (paired)", f"{ing['overhead_pct']:.2f}%",
                     target, ok(ing["overhead_pct"] < TARGETS["ingest_overhead_pct"])))
        rows.append(("  same, paired sums instead of median ratio",
                     f"{ing['overhead_pct_paired_sums']:.2f}%", target, "info"))
        rows.append(("  same, from encode calls inside ingest",
                     f"{ing['overhead_pct_in_process']:.2f}%", target, "info"))
        rows.append(("  same, vs a separate whole encode-alone run",
                     f"{ing['overhead_pct_whole_run']:.1f}%"
                     + (" (noisy)" if ing["whole_run_noisy"] else ""), target, "info"))
        rows.append(("re-ingest unchanged, % of first ingest", f"{ing['reingest_pct']:.3f}%",
                     f"< {TARGETS['reingest_pct']:g}%",
                     ok(ing["reingest_pct"] < TARGETS["reingest_pct"])))
    lat = results.get("latency_nfcorpus")
    if lat:
        for mode in MODES:
            a, b = lat["without_embedding"][mode], lat["with_embedding"][mode]
            value = (f"{a['p50_ms']:.1f}/{a['p95_ms']:.1f} | "
                     f"{b['p50_ms']:.1f}/{b['p95_ms']:.1f}")
            rows.append((f"NFCorpus {mode} p50/p95 ms (no emb | with emb)", value, "-", "info"))
        for key, suffix in (("", ""), ("_busy_neighbour", ", busy neighbour")):
            for name, v in lat.get("query_embedding_ms_by_torch_threads" + key, {}).items():
                rows.append((f"query embedding, torch {name.replace('_', ' ')}{suffix} p50/p95 ms",
                             f"{v['p50_ms']:.1f}/{v['p95_ms']:.1f}", "-", "info"))
    big = results.get("big")
    if big:
        for mode in MODES:
            a = big["latency_without_embedding"][mode]
            target = f"p50 < {TARGETS['big_hybrid_p50_ms']:g}" if mode == "hybrid" else "-"
            status = ok(a["p50_ms"] < TARGETS["big_hybrid_p50_ms"]) if mode == "hybrid" else "info"
            rows.append((f"{big['chunks'] // 1000}k chunks {mode} p50/p95 ms (no emb)",
                         f"{a['p50_ms']:.1f}/{a['p95_ms']:.1f}", target, status))
        h = big["latency_with_embedding"]["hybrid"]
        rows.append((f"{big['chunks'] // 1000}k chunks hybrid p50/p95 ms (with emb)",
                     f"{h['p50_ms']:.1f}/{h['p95_ms']:.1f}", "-", "info"))
    nd = results.get("ndcg_nfcorpus")
    if nd:
        for mode in MODES:
            pub = PUBLISHED.get(mode)
            rows.append((f"nDCG@10 {mode}", f"{nd[mode]['ndcg@10']:.4f}",
                         f"published {pub}" if pub else "> bm25 and vector",
                         ok(nd["hybrid_beats_both"]) if mode == "hybrid" else "info"))
    cli = results.get("cli")
    if cli:
        rows.append(("kbagent --help wall (median)", f"{cli['help_s_median']:.3f} s",
                     f"< {TARGETS['cli_help_s']:g} s",
                     ok(cli["help_s_median"] < TARGETS["cli_help_s"])))
        rows.append(("import kbagent.cli (median, incl. python start)",
                     f"{cli['import_cli_s_median']:.3f} s", "-", "info"))
    return rows


def print_table(rows: list[tuple[str, str, str, str]]) -> str:
    heads = ("metric", "value", "target", "status")
    widths = [max(len(r[i]) for r in [heads, *rows]) for i in range(4)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


# ------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 300 docs, the ~80 queries judged on them (40 timed), "
                    "a 10k-chunk big KB")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of the data sets")
    ap.add_argument("--sections", default=",".join(SECTIONS),
                    help=f"comma-separated subset of {','.join(SECTIONS)}")
    ap.add_argument("--big-chunks", type=int, default=None,
                    help="chunk target of the big KB (default 100000, quick 10000)")
    ap.add_argument("--cli-runs", type=int, default=10)
    ap.add_argument("--out", type=Path, default=OUT_DIR / "kb_results.json")
    ap.add_argument("--keep", action="store_true", help="keep the temporary work folder")
    args = ap.parse_args(argv)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections: {', '.join(sorted(unknown))}")
    big_target = args.big_chunks or (10_000 if args.quick else 100_000)

    started = time.perf_counter()
    load_start = os.getloadavg()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="kbbench-", dir="/tmp"))
    home = work / "home"
    settings = Settings.load(home=home)
    results: dict[str, Any] = {
        "command": " ".join(["bench/bench_kb.py", *(argv if argv is not None else sys.argv[1:])]),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "git_commit": git_commit(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "quick": args.quick,
        "settings": {"chunk_tokens": settings.chunk_tokens,
                     "chunk_overlap": settings.chunk_overlap, "embed_batch": settings.embed_batch,
                     "embed_group": EMBED_GROUP},
        "sections": sections,
    }
    try:
        need_nf = any(s in sections for s in ("ingest", "latency", "ndcg", "big"))
        if need_nf:
            corpus = load_nfcorpus(args.data, args.quick)
            folder = work / "nfcorpus_src"
            write_corpus(corpus.docs, folder)
            texts = index_texts_of_folder(folder, settings)
            log(f"NFCorpus: {len(corpus.docs)} docs -> {len(texts)} chunk texts, "
                f"{len(corpus.queries)} test queries")
            nf = NfState(settings, folder, "nfcorpus", texts, np.zeros((0, 0)), {},
                         corpus.queries, corpus.qrels, len(corpus.docs),
                         latency_queries=40 if args.quick else 0)

            log("loading the embedding model (excluded from every timing)")
            emb = load_embedder(settings.embedding_model, settings.embed_batch)
            import torch

            results["machine"]["torch_threads"] = torch.get_num_threads()
            emb.encode(["warm up the model", "and its tokenizer"])
            qids = sorted(corpus.queries)
            qv = emb.encode([corpus.queries[q] for q in qids])
            nf.query_vecs = dict(zip(qids, qv, strict=True))

            cache = vector_cache_path(args.quick)
            if "ingest" in sections:
                section_ingest(nf, emb, results)
                cache.parent.mkdir(parents=True, exist_ok=True)
                np.savez(cache, vectors=nf.vectors,
                         hashes=np.array([text_hash(BUNDLED_MODEL_ID, t) for t in texts]))
            else:
                cached = load_vector_cache(cache, texts)
                if cached is None:
                    log("no usable vector cache: encoding the chunk texts once")
                    _, cached = encode_alone(emb, texts)
                    cache.parent.mkdir(parents=True, exist_ok=True)
                    np.savez(cache, vectors=cached, hashes=np.array(
                        [text_hash(BUNDLED_MODEL_ID, t) for t in texts]))
                nf.vectors = cached
                if "latency" in sections or "ndcg" in sections:
                    build_nf_kb_from_vectors(nf)
            if "latency" in sections:
                section_latency(nf, emb, results)
            if "ndcg" in sections:
                section_ndcg(nf, emb, results)
            if "big" in sections:
                section_big(nf, emb, args.data, work, big_target, results)
        if "cli" in sections:
            section_cli(results, args.cli_runs, home)
    finally:
        if args.keep:
            log(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    results["runtime_s"] = round(time.perf_counter() - started, 1)
    results["loadavg_start_end"] = [list(load_start), list(os.getloadavg())]
    rows = summary_rows(results)
    results["summary"] = [dict(zip(("metric", "value", "target", "status"), r, strict=True))
                          for r in rows]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, default=float) + "\n", encoding="utf-8")
    print(print_table(rows))
    print(f"\nruntime {results['runtime_s']:.0f}s; load average start {load_start[0]:.2f}, "
          f"end {os.getloadavg()[0]:.2f}; JSON: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
