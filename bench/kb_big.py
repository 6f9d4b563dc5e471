"""The big-KB and CLI sections of the KB benchmark."""

from __future__ import annotations

import json
import os
import random
import re
import statistics
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kb_common import (
    ROOT,
    Clock,
    PhaseTimer,
    ReplayEmbedder,
    doc_markdown,
    log,
    read_jsonl,
    safe_name,
)
from kb_nf import (
    NfState,
    measure_latency,
)

from kbagent.kb.chunker import chunk_document
from kbagent.kb.extract import extract
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.search import HybridSearcher
from kbagent.settings import Settings


# ------------------------------------------------------------- big KB
def iter_source_docs(data: Path) -> Iterable[tuple[str, str, str, str]]:
    """(source, id, title, text) from all four corpora; HotpotQA contexts pooled."""
    for d in read_jsonl(data / "nfcorpus" / "corpus.jsonl"):
        yield "nf", d["_id"], d["title"], d["text"]
    for d in read_jsonl(data / "scifact" / "corpus.jsonl"):
        yield "sf", d["_id"], d["title"], d["text"]
    seen = set()
    n = 0
    for q in read_jsonl(data / "hotpotqa_ircot500" / "dev_subsampled.jsonl"):
        for c in q["contexts"]:
            key = (c["title"], c["paragraph_text"])
            if key in seen:
                continue
            seen.add(key)
            n += 1
            yield "hp", str(n), c["title"], c["paragraph_text"]
    with open(data / "musique_hipporag100" / "musique_train100_corpus.json",
              encoding="utf-8") as f:
        for i, d in enumerate(json.load(f)):
            yield "mq", str(i), d["title"], d["text"]


_SENT = re.compile(r"(?<=[.!?])\s+")


def paraphrase(text: str, rnd: random.Random, drop: float = 0.1) -> str:
    """A cheap variant: sentences shuffled, ~10% of words dropped."""
    sents = [s for s in _SENT.split(text.strip()) if s]
    rnd.shuffle(sents)
    out = []
    for s in sents:
        words = [w for w in s.split() if rnd.random() >= drop] or s.split()[:1]
        out.append(" ".join(words))
    return " ".join(out)


def make_big_corpus(data: Path, folder: Path, target_chunks: int,
                    settings: Settings, plan: list[tuple[str, int]] | None = None
                    ) -> dict[str, Any]:
    """Write documents until the real chunker says ``target_chunks`` is reached.
    Round 0 is the four corpora verbatim; round r>0 paraphrases each document.
    ``plan`` gets (relative path, chunks) of every file in the order written (a
    stepwise ingest takes prefixes of it: bench/pg_scale.py)."""
    base = list(iter_source_docs(data))
    rnd = random.Random(12345)
    total = 0
    files = 0
    per_source: dict[str, int] = {}
    rounds = 0
    while total < target_chunks:
        order = list(range(len(base)))
        rnd.shuffle(order)  # mixes the sources when the target is below one round
        sub = folder / f"r{rounds}"
        sub.mkdir(parents=True, exist_ok=True)
        for i in order:
            src, did, title, text = base[i]
            if rounds:
                text = paraphrase(text, rnd)
            if not text.strip():
                continue
            rel = f"r{rounds}/{src}-{safe_name(did)}.md"
            body = doc_markdown(title, text)
            doc = extract(rel, body.encode())
            n = len(chunk_document(doc, settings.chunk_tokens, settings.chunk_overlap))
            (folder / rel).write_text(body, encoding="utf-8")
            if plan is not None:
                plan.append((rel, n))
            total += n
            files += 1
            per_source[src] = per_source.get(src, 0) + n
            if total >= target_chunks:
                break
        rounds += 1
    return {"files": files, "chunks_planned": total, "rounds": rounds,
            "chunks_by_source": per_source, "base_documents": len(base)}


def section_big(nf: NfState, emb: Any, data: Path, work: Path, target: int,
                results: dict) -> None:
    folder = work / "big_src"
    log(f"big: writing a corpus of ~{target} chunks")
    with Clock() as cw:
        info = make_big_corpus(data, folder, target, nf.settings)
    log(f"big: {info['files']} files, {info['chunks_planned']} chunks planned "
        f"({cw.wall:.1f}s); ingesting with the replay embedder")
    known = dict(zip(nf.texts, nf.vectors, strict=True))
    replay = ReplayEmbedder(known, nf.vectors, sigma=0.02)
    phases = PhaseTimer()
    with Clock() as ci:
        t0 = time.perf_counter()
        rep = Ingestor(nf.settings, "big", embedder=replay, progress=phases).run(folder)
        t1 = time.perf_counter()
    log(f"big: {rep.chunks_total} chunks ingested in {ci.wall:.1f}s "
        f"(replay encode {replay.seconds:.1f}s)")
    r2 = Ingestor(nf.settings, "big", embedder=replay).run(folder)
    assert not r2.committed, r2.summary()
    kb = KnowledgeBase(nf.settings, "big")
    searcher = HybridSearcher([kb], embedder_for=lambda _m: emb)
    qs, vs = nf.timed_queries()
    log(f"big: latency, {len(qs)} queries x 3 modes (query vectors given)")
    lat = measure_latency(searcher, qs, vs, kb.embedding_model, False)
    lat_emb = measure_latency(searcher, qs, vs, kb.embedding_model, True, modes=("hybrid",))
    kb.close()
    results["big"] = {
        "how": "real Ingestor; texts = NFCorpus+SciFact+HotpotQA(pooled contexts)+MuSiQue "
               "verbatim (round 0), then paraphrased copies (sentences shuffled, 10% words "
               "dropped) until the chunk target; vectors: exact NFCorpus vectors for NFCorpus "
               "chunk texts, else a real NFCorpus chunk vector picked by text hash + N(0, 0.02) "
               "noise per dim, re-normalised",
        **info,
        "chunks": rep.chunks_total,
        "vectors_replayed": replay.replayed,
        "vectors_synthesised": replay.synthesised,
        "ingest": ci.as_dict(),
        "ingest_minus_fake_encode_s": round(ci.wall - replay.seconds, 2),
        "ingest_chunks_per_s_without_embedding": round(
            rep.chunks_total / max(1e-9, ci.wall - replay.seconds), 1),
        "ingest_phases_s": phases.spans(t0, t1),
        "reingest_unchanged_s": round(r2.seconds, 3),
        "latency_without_embedding": lat,
        "latency_with_embedding": lat_emb,
    }


# ------------------------------------------------------------------- CLI
def section_cli(results: dict, runs: int, home: Path) -> None:
    exe = ROOT / ".venv" / "bin" / "kbagent"
    py = ROOT / ".venv" / "bin" / "python"
    env = {**os.environ, "KBAGENT_HOME": str(home)}

    def wall(cmd: list[str]) -> list[float]:
        subprocess.run(cmd, env=env, capture_output=True, check=True)  # warm the page cache
        out = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, capture_output=True, check=True)
            out.append(time.perf_counter() - t0)
        return out

    log(f"cli: {runs} runs each")
    help_t = wall([str(exe), "--help"])
    imp_t = wall([str(py), "-c", "import kbagent.cli"])
    base_t = wall([str(py), "-c", "pass"])
    p = subprocess.run([str(py), "-X", "importtime", "-c", "import kbagent.cli"], env=env,
                       capture_output=True, text=True, check=True)
    rows = []
    for line in p.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append((int(m.group(2)), int(m.group(1)), len(m.group(3)), m.group(4)))
    top = sorted((r for r in rows if r[2] <= 3), reverse=True)[:8]  # top-level-ish packages
    results["cli"] = {
        "help_s_median": round(statistics.median(help_t), 3),
        "help_s_all": [round(x, 3) for x in help_t],
        "import_cli_s_median": round(statistics.median(imp_t), 3),
        "python_startup_s_median": round(statistics.median(base_t), 3),
        "importtime_top_cumulative_ms": [{"module": m, "cumulative_ms": round(c / 1000, 1)}
                                         for c, _s, _d, m in top],
        "heavy_modules_imported": sorted(
            {r[3].split(".")[0] for r in rows} & {"torch", "sentence_transformers", "tantivy",
                                                   "usearch", "numpy", "transformers",
                                                   "llama_cpp", "textual", "rich"}),
    }
