"""How a KB behaves as it grows (issue 8, for docs/scaling.md)::

    .venv/bin/python bench/bench_scale.py --sizes 10000,100000

For each size: a folder of real text (NFCorpus, SciFact, HotpotQA, MuSiQue,
then paraphrased rounds, as ``bench_kb.py``'s big KB) ingested through the real
``Ingestor`` with replayed real vectors (:class:`bench_kb.ReplayEmbedder`, so
the time is ingest without the model; the model's own throughput is in
``bench_embed.py``), then, in a fresh process: open time, resident memory
after open and after the searches, hybrid / bm25 / vector search p50 and p95
over NFCorpus test queries (query vectors computed beforehand by the ONNX
embedder, whose per-query time is reported apart), and the disk size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import bench_kb as B  # noqa: E402

from kbagent.kb.embedder import load_embedder  # noqa: E402

PROBE = r"""
import json, sys, time
import numpy as np
def rss_mb(key):  # not ru_maxrss: a forked child inherits its parent's peak
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return round(int(line.split()[1]) / 1024, 1)
sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.search import HybridSearcher
from kbagent.settings import Settings
kb = KnowledgeBase(Settings.load(home=sys.argv[2]), "big")
open_s = time.perf_counter() - t0
rss_open = rss_mb("VmRSS")
data = np.load(sys.argv[3])
queries = [str(q) for q in data["queries"]]
vecs = data["vectors"]
s = HybridSearcher([kb])
out = {"open_s": round(open_s, 3), "rss_after_open_mb": rss_open, "chunks": kb.chunks}
for mode in ("hybrid", "bm25", "vector"):
    times = []
    for q, v in zip(queries, vecs):
        t = time.perf_counter()
        s.search(q, 10, mode, {kb.embedding_space: v})
        times.append((time.perf_counter() - t) * 1000)
    out[mode + "_p50_ms"] = round(float(np.percentile(times, 50)), 2)
    out[mode + "_p95_ms"] = round(float(np.percentile(times, 95)), 2)
out["rss_after_searches_mb"] = rss_mb("VmRSS")
out["rss_peak_mb"] = rss_mb("VmHWM")
print(json.dumps(out))
"""


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def measure(size: int, data: Path, work: Path, base: Any, qfile: Path) -> dict[str, Any]:
    home = work / f"home{size}"
    folder = work / f"src{size}"
    info = B.make_big_corpus(data, folder, size, B.Settings.load(home=home))
    settings = B.Settings.load(home=home, bm25_first_chunks=0)
    emb = B.ReplayEmbedder({}, base)
    rep = B.Ingestor(settings, "big", embedder=emb).run(folder)
    gen = (home / "kbs" / "big" / "CURRENT").read_text().strip()
    files = rep.count("added")
    out: dict[str, Any] = {
        "chunks": rep.chunks_total, "documents": files,
        "ingest_without_model_s": round(rep.seconds - emb.seconds, 2),
        "ingest_without_model_s_per_1k_docs": round((rep.seconds - emb.seconds) / files * 1000, 2),
        "disk_mb": round(du(home / "kbs" / "big" / gen) / 1e6, 1),
        "source_mb": round(du(folder) / 1e6, 1), "rounds": info["rounds"]}
    p = subprocess.run([sys.executable, "-c", PROBE, str(ROOT), str(home), str(qfile)],
                       capture_output=True, text=True, check=True)
    out.update(json.loads(p.stdout))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data")
                    if not B.DEFAULT_DATA.is_dir() else B.DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=B.OUT_DIR / "scale_results.json")
    args = ap.parse_args(argv)
    import numpy as np

    load_start = os.getloadavg()
    emb = load_embedder("bundled")
    nf = B.load_nfcorpus(args.data, quick=False)
    base = emb.encode([f"{d['title']} {d['text']}" for d in nf.docs[:128]])
    queries = [nf.queries[q] for q in sorted(nf.queries)][: args.queries]
    qtimes = []
    qvecs = []
    for q in queries:
        t = time.perf_counter()
        qvecs.append(emb.encode([q])[0])
        qtimes.append((time.perf_counter() - t) * 1000)
    results: dict[str, Any] = {
        "command": " ".join(["bench/bench_scale.py", *(argv if argv is not None
                                                       else sys.argv[1:])]),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "git_commit": B.git_commit(),
        "query_embedding_onnx_p50_ms": round(float(np.percentile(qtimes, 50)), 2),
        "query_embedding_onnx_p95_ms": round(float(np.percentile(qtimes, 95)), 2),
        "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="kbscale-", dir="/tmp") as tmp:
        work = Path(tmp)
        qfile = work / "q.npz"
        np.savez(qfile, queries=np.array(queries), vectors=np.stack(qvecs))
        for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
            B.log(f"scale: {size} chunks")
            results["sizes"][str(size)] = measure(size, args.data, work, base, qfile)
            B.log(f"scale: {results['sizes'][str(size)]}")
            B.OUT_DIR.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=2))
    results["loadavg_start_end"] = [list(load_start), list(os.getloadavg())]
    args.out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
