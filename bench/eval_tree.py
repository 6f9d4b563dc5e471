"""NFCorpus nDCG@10 of a candidate kbagent tree (e.g. a patched copy), in ~1 minute.

Ingests NFCorpus through the tree's own extractor, chunker and Ingestor, with
the real chunk vectors cached by a full ``bench/bench_kb.py`` run replayed by
text (texts the cache lacks are embedded with the real model), then scores
bm25 / vector / hybrid exactly as the benchmark does::

    .venv/bin/python bench/eval_tree.py --tree /tmp/kbagent-patched
    .venv/bin/python bench/eval_tree.py            # this checkout, for comparison
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, default=HERE.parent,
                    help="folder holding the kbagent package to evaluate")
    args = ap.parse_args()
    sys.path.insert(0, str(args.tree.resolve()))
    import kbagent  # bound now, before bench_kb puts this checkout first on sys.path

    sys.path.insert(0, str(HERE))
    import bench_kb as B
    import numpy as np

    print(f"kbagent from {Path(kbagent.__file__).parent}", file=sys.stderr)
    cache = B.vector_cache_path(False)
    if not cache.is_file():
        sys.exit("run bench/bench_kb.py (full) first: it caches the NFCorpus chunk vectors")
    z = np.load(cache)
    by_hash = dict(zip(z["hashes"], z["vectors"], strict=True))
    work = Path(tempfile.mkdtemp(prefix="kbtree-", dir="/tmp"))
    try:
        corpus = B.load_nfcorpus(B.DEFAULT_DATA, quick=False)
        settings = B.Settings.load(home=work / "home")
        B.write_corpus(corpus.docs, work / "src")
        texts = B.index_texts_of_folder(work / "src", settings)
        known = {}
        missing = []
        for t in texts:
            v = by_hash.get(B.text_hash(B.BUNDLED_MODEL_ID, t))
            if v is None:
                missing.append(t)
            else:
                known[t] = v
        emb = B.load_embedder("bundled")
        if missing:
            B.log(f"embedding {len(missing)} chunk texts the cache does not hold")
            known.update(zip(missing, emb.encode(missing), strict=True))
        rep = B.Ingestor(settings, "nf", embedder=B.ReplayEmbedder(known, z["vectors"])).run(
            work / "src")
        qids = sorted(corpus.qrels)
        qv = dict(zip(qids, emb.encode([corpus.queries[q] for q in qids]), strict=True))
        nf = B.NfState(settings, work / "src", "nf", texts, np.zeros((0, 0)), qv,
                       corpus.queries, corpus.qrels, len(corpus.docs))
        kb = B.KnowledgeBase(settings, "nf")
        res = B.evaluate_ndcg(B.HybridSearcher([kb], embedder_for=lambda _m: emb), nf,
                              kb.embedding_model)
        kb.close()
        out = {"tree": str(args.tree), "chunks": rep.chunks_total, "embedded_texts": len(texts),
               "texts_not_in_cache": len(missing),
               **{f"ndcg@10 {m}": res[m]["ndcg@10"] for m in B.MODES}}
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
