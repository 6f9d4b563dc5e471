"""Embedding runtimes side by side (issue 8): ingest throughput on NFCorpus chunk
texts, and nDCG@10 (bm25 / vector / hybrid) on NFCorpus and SciFact, for torch
fp32 (sentence-transformers, the old path), ONNX fp32 and ONNX int8
(sentence-transformers' dynamic quantization export)::

    .venv/bin/python bench/bench_embed.py                  # full (~30-60 min on 2 cores)
    .venv/bin/python bench/bench_embed.py --quick          # ~300-doc subsets

1. throughput  the first ``--throughput-texts`` NFCorpus chunk texts (ingest's order),
               in ingest's groups of 256; every group is encoded by every variant
               back to back, the order rotating from group to group, so all variants
               see the same machine load. Variants: torch; ONNX fp32 with
               onnxruntime's default threads, with 1 thread, without length-sorted
               batches; ONNX int8. Cosine of each variant's vectors to torch's.
2. ndcg        each data set's chunk texts embedded whole by each runtime (timed: a
               second throughput figure), a KB built from those vectors through the
               real Ingestor, then the BEIR nDCG@10 of ``bench_kb.evaluate_ndcg``.

Results: a table on stdout and JSON in ``bench/out/embed_results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import bench_kb as B  # noqa: E402

from kbagent.kb.embedder import BUNDLED_MODEL_ID, bundled_model_dir, load_embedder  # noqa: E402
from kbagent.kb.onnx_embedder import OnnxEmbedder, ensure_export  # noqa: E402

INT8_MAX_NDCG_DROP = 0.005  # int8 may be the default only within this of fp32, both sets


def variants(batch: int) -> dict[str, Any]:
    """name -> embedder; the first is the baseline (today's torch path)."""
    model_dir = bundled_model_dir()
    fp32 = ensure_export(BUNDLED_MODEL_ID, model_dir, "fp32")
    int8 = ensure_export(BUNDLED_MODEL_ID, model_dir, "int8")
    return {
        "torch fp32": load_embedder("bundled", batch, runtime="torch"),
        "onnx fp32": OnnxEmbedder(BUNDLED_MODEL_ID, fp32, "fp32", batch),
        "onnx fp32 1 thread": OnnxEmbedder(BUNDLED_MODEL_ID, fp32, "fp32", batch, threads=1),
        "onnx fp32 unsorted": OnnxEmbedder(BUNDLED_MODEL_ID, fp32, "fp32", batch,
                                           sort_by_length=False),
        "onnx int8": OnnxEmbedder(BUNDLED_MODEL_ID, int8, "int8", batch),
    }


def section_throughput(texts: list[str], embs: dict[str, Any], results: dict) -> None:
    names = list(embs)
    for e in embs.values():
        e.encode(["warm up", "the model and its tokenizer"] * 8)
    times = {n: 0.0 for n in names}
    vecs: dict[str, list[np.ndarray]] = {n: [] for n in names}
    groups = [texts[i : i + B.EMBED_GROUP] for i in range(0, len(texts), B.EMBED_GROUP)]
    for g, group in enumerate(groups):
        order = names[g % len(names):] + names[: g % len(names)]
        for n in order:
            t0 = time.perf_counter()
            v = embs[n].encode(group)
            times[n] += time.perf_counter() - t0
            vecs[n].append(v)
        B.log(f"throughput: group {g + 1}/{len(groups)}")
    base = names[0]
    ref = np.concatenate(vecs[base])
    out = {}
    for n in names:
        v = np.concatenate(vecs[n])
        cos = (v * ref).sum(axis=1)
        out[n] = {"seconds": round(times[n], 2),
                  "chunks_per_s": round(len(texts) / times[n], 2),
                  "speedup_vs_torch": round(times[base] / times[n], 3),
                  "cosine_to_torch_min": round(float(cos.min()), 6),
                  "cosine_to_torch_mean": round(float(cos.mean()), 6)}
    results["throughput"] = {"texts": len(texts), "groups": len(groups), "variants": out}


def section_ndcg(data: Path, name: str, quick: bool, runtimes: dict[str, Any], work: Path,
                 results: dict) -> None:
    corpus = B.load_nfcorpus(data, quick, name=name)
    folder = work / f"{name}_src"
    B.write_corpus(corpus.docs, folder)
    settings0 = B.Settings.load(home=work / "home")
    texts = B.index_texts_of_folder(folder, settings0)
    B.log(f"{name}: {len(corpus.docs)} docs -> {len(texts)} chunk texts, "
          f"{len(corpus.queries)} queries")
    per: dict[str, Any] = {}
    for rname, emb in runtimes.items():
        B.log(f"{name}: embedding with {rname}")
        clock, vectors = B.encode_alone(emb, texts)
        precision = getattr(emb, "precision", "fp32")
        settings = B.Settings.load(home=work / f"home-{name}-{rname.replace(' ', '_')}",
                                   embedding_precision=precision)
        known = dict(zip(texts, vectors, strict=True))
        replay = B.ReplayEmbedder(known, vectors)
        B.Ingestor(settings, name, embedder=replay).run(folder)
        assert replay.synthesised == 0
        qids = sorted(corpus.qrels)
        qv = dict(zip(qids, emb.encode([corpus.queries[q] for q in qids]), strict=True))
        nf = B.NfState(settings, folder, name, texts, vectors, qv, corpus.queries,
                       corpus.qrels, len(corpus.docs))
        kb = B.KnowledgeBase(settings, name)
        res = B.evaluate_ndcg(B.HybridSearcher([kb], embedder_for=lambda _s, e=emb: e), nf,
                              kb.embedding_space)
        kb.close()
        per[rname] = {"embed_s": round(clock.wall, 2),
                      "chunks_per_s": round(len(texts) / clock.wall, 2),
                      **{f"ndcg@10 {m}": res[m]["ndcg@10"] for m in B.MODES}}
        B.log(f"{name} {rname}: {per[rname]}")
    results.setdefault("ndcg", {})[name] = {"docs": len(corpus.docs), "chunk_texts": len(texts),
                                            "queries": len(corpus.qrels), "runtimes": per}


def verdict(results: dict) -> dict:
    """int8 as default only if nDCG@10 stays within INT8_MAX_NDCG_DROP of fp32 on
    every measured set and mode."""
    drops = {}
    for name, r in results.get("ndcg", {}).items():
        rt = r["runtimes"]
        if "onnx fp32" in rt and "onnx int8" in rt:
            for m in B.MODES:
                drops[f"{name} {m}"] = round(rt["onnx fp32"][f"ndcg@10 {m}"]
                                             - rt["onnx int8"][f"ndcg@10 {m}"], 4)
    ok = bool(drops) and all(d <= INT8_MAX_NDCG_DROP for d in drops.values())
    return {"int8_ndcg_drop_vs_fp32": drops, "int8_within_limit": ok}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="~300-doc subsets for nDCG")
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data")
                    if not B.DEFAULT_DATA.is_dir() else B.DEFAULT_DATA)
    ap.add_argument("--throughput-texts", type=int, default=1024)
    ap.add_argument("--sets", default="nfcorpus,scifact", help="data sets for nDCG ('' = none)")
    ap.add_argument("--ndcg-runtimes", default="torch fp32,onnx fp32,onnx int8")
    ap.add_argument("--out", type=Path, default=B.OUT_DIR / "embed_results.json")
    args = ap.parse_args(argv)
    load_start = os.getloadavg()
    started = time.perf_counter()
    results: dict[str, Any] = {
        "command": " ".join(["bench/bench_embed.py", *(argv if argv is not None
                                                       else sys.argv[1:])]),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "git_commit": B.git_commit(),
        "cpus": os.cpu_count(), "embed_group": B.EMBED_GROUP}
    settings = B.Settings.load(home=Path(tempfile.mkdtemp(prefix="kbembed-")))
    embs = variants(settings.embed_batch)
    with tempfile.TemporaryDirectory(prefix="kbembed-", dir="/tmp") as tmp:
        work = Path(tmp)
        if args.throughput_texts:
            nf = B.load_nfcorpus(args.data, False)
            B.write_corpus(nf.docs, work / "nf_src")
            texts = B.index_texts_of_folder(work / "nf_src", settings)[: args.throughput_texts]
            section_throughput(texts, embs, results)
        wanted = [r.strip() for r in args.ndcg_runtimes.split(",") if r.strip()]
        for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
            section_ndcg(args.data, name, args.quick, {r: embs[r] for r in wanted}, work,
                         results)
    results["verdict"] = verdict(results)
    results["runtime_s"] = round(time.perf_counter() - started, 1)
    results["loadavg_start_end"] = [list(load_start), list(os.getloadavg())]
    B.OUT_DIR.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(json.dumps({k: results[k] for k in ("throughput", "ndcg", "verdict",
                                              "loadavg_start_end") if k in results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
