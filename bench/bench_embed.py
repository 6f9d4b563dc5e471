"""Embedding runtimes side by side (issue 8): ingest throughput on NFCorpus chunk
texts, and nDCG@10 (bm25 / vector / hybrid) on NFCorpus and SciFact, for torch
fp32 (sentence-transformers, the old path), ONNX fp32 and ONNX int8
(sentence-transformers' dynamic quantization export)::

    .venv/bin/python bench/bench_embed.py                  # full (~30-60 min on 2 cores)
    .venv/bin/python bench/bench_embed.py --quick          # ~300-doc subsets

1. throughput  the first ``--throughput-texts`` NFCorpus chunk texts (ingest's order),
               in ingest's groups of 256; every group is encoded by every variant
               back to back, the order rotating from group to group, so all variants
               see the same machine load. Variants (``--variants``): torch; ONNX
               fp32 (the default: the plain export, onnxruntime's default threads,
               length-sorted batches of ``embed_batch``), the fused-kernel graph
               (``kb/onnx_fused.py``), with 1 thread, without length-sorted
               batches, threads not spinning, batches of 16 / 64; ONNX int8 (the
               export quantized) and int8 of the fused graph (MatMul + Attention,
               made here, bench only).
               Cosine of each variant's vectors to torch's.
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
from kbagent.kb.onnx_fused import fused_path  # noqa: E402

INT8_MAX_NDCG_DROP = 0.005  # int8 may be the default only within this of fp32, both sets


def int8_of_fused(folder: Path) -> Path:
    """int8 (the avx2 dynamic settings, plus the fused Attention's weights) of the
    fused fp32 graph, made once beside it. A measured option, not a runtime."""
    import onnxruntime as ort

    fused = fused_path(folder / "onnx" / "model.onnx", ort.__version__)
    out = fused.with_name(fused.name.replace("model.", "model_qint8_", 1))
    if not out.is_file():
        import logging

        from onnxruntime.quantization import QuantType, quantize_dynamic

        logging.disable(logging.WARNING)
        tmp = out.with_suffix(".tmp")
        quantize_dynamic(fused, tmp, per_channel=True, reduce_range=True,
                         weight_type=QuantType.QUInt8, op_types_to_quantize=["MatMul", "Attention"],
                         extra_options={"WeightSymmetric": True, "ActivationSymmetric": False,
                                        "DefaultTensorType": 1})  # FLOAT: contrib-op outputs
        logging.disable(logging.NOTSET)
        os.replace(tmp, out)
    return out


VARIANTS = ("torch fp32", "onnx fp32", "onnx fp32 fused", "onnx fp32 1 thread",
            "onnx fp32 unsorted", "onnx fp32 no spin", "onnx fp32 batch 16",
            "onnx fp32 batch 64", "onnx int8", "onnx int8 fused")


def variants(batch: int, wanted: list[str]) -> dict[str, Any]:
    """name -> embedder for the ``wanted`` names; the first is the baseline (torch)."""
    model_dir = bundled_model_dir()
    fp32 = ensure_export(BUNDLED_MODEL_ID, model_dir, "fp32")
    m = BUNDLED_MODEL_ID
    make = {
        "torch fp32": lambda: load_embedder("bundled", batch, runtime="torch"),
        "onnx fp32": lambda: OnnxEmbedder(m, fp32, "fp32", batch),
        "onnx fp32 fused": lambda: OnnxEmbedder(m, fp32, "fp32", batch, fused=True),
        "onnx fp32 1 thread": lambda: OnnxEmbedder(m, fp32, "fp32", batch, threads=1),
        "onnx fp32 unsorted": lambda: OnnxEmbedder(m, fp32, "fp32", batch,
                                                   sort_by_length=False),
        "onnx fp32 no spin": lambda: OnnxEmbedder(m, fp32, "fp32", batch, spin=False),
        "onnx fp32 batch 16": lambda: OnnxEmbedder(m, fp32, "fp32", 16),
        "onnx fp32 batch 64": lambda: OnnxEmbedder(m, fp32, "fp32", 64),
        "onnx int8": lambda: OnnxEmbedder(
            m, ensure_export(m, model_dir, "int8"), "int8", batch),
        "onnx int8 fused": lambda: OnnxEmbedder(m, fp32, "int8", batch,
                                                graph=int8_of_fused(fp32)),
    }
    unknown = [w for w in wanted if w not in make]
    if unknown or not wanted or wanted[0] != "torch fp32":
        raise SystemExit(f"--variants: the first must be 'torch fp32'; unknown: {unknown}; "
                         f"known: {', '.join(VARIANTS)}")
    out = {w: make[w]() for w in wanted}
    for w, e in out.items():
        if w == "onnx fp32 fused" and e.graph_kind != "fused":
            B.log("note: the fused graph could not be made; 'onnx fp32 fused' runs the plain one")
    return out


def section_throughput(texts: list[str], embs: dict[str, Any], results: dict,
                       group: int = B.EMBED_GROUP) -> None:
    names = list(embs)
    for e in embs.values():
        e.encode(["warm up", "the model and its tokenizer"] * 8)
    times = {n: 0.0 for n in names}
    vecs: dict[str, list[np.ndarray]] = {n: [] for n in names}
    groups = [texts[i : i + group] for i in range(0, len(texts), group)]
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
    results["throughput"] = {"texts": len(texts), "groups": len(groups), "group": group,
                             "variants": out}


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
    """Each int8 variant as default only if nDCG@10 stays within INT8_MAX_NDCG_DROP of
    fp32 on every measured set and mode."""
    out: dict[str, Any] = {}
    for q in ("onnx int8", "onnx int8 fused"):
        drops = {}
        for name, r in results.get("ndcg", {}).items():
            rt = r["runtimes"]
            if "onnx fp32" in rt and q in rt:
                for m in B.MODES:
                    drops[f"{name} {m}"] = round(rt["onnx fp32"][f"ndcg@10 {m}"]
                                                 - rt[q][f"ndcg@10 {m}"], 4)
        if drops:
            key = q.replace("onnx ", "").replace(" ", "_")
            out[f"{key}_ndcg_drop_vs_fp32"] = drops
            out[f"{key}_within_limit"] = all(d <= INT8_MAX_NDCG_DROP for d in drops.values())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="~300-doc subsets for nDCG")
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data")
                    if not B.DEFAULT_DATA.is_dir() else B.DEFAULT_DATA)
    ap.add_argument("--throughput-texts", type=int, default=1024)
    ap.add_argument("--sets", default="nfcorpus,scifact", help="data sets for nDCG ('' = none)")
    ap.add_argument("--ndcg-runtimes", default="torch fp32,onnx fp32,onnx int8")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="throughput variants, comma-separated; the first is torch fp32")
    ap.add_argument("--group", type=int, default=B.EMBED_GROUP,
                    help="texts per encode call (ingest's group); smaller = more rotations")
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
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    wanted = [r.strip() for r in args.ndcg_runtimes.split(",") if r.strip()]
    embs = variants(settings.embed_batch, names + [r for r in wanted if r not in names])
    with tempfile.TemporaryDirectory(prefix="kbembed-", dir="/tmp") as tmp:
        work = Path(tmp)
        if args.throughput_texts:
            nf = B.load_nfcorpus(args.data, False)
            B.write_corpus(nf.docs, work / "nf_src")
            texts = B.index_texts_of_folder(work / "nf_src", settings)[: args.throughput_texts]
            section_throughput(texts, {n: embs[n] for n in names}, results, args.group)
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
