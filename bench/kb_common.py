"""Shared parts of the KB benchmark (bench_kb.py): paths, timing, the data sets
and the replay embedders."""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbagent.kb.chunker import chunk_document  # noqa: E402
from kbagent.kb.embedder import BUNDLED_MODEL_ID  # noqa: E402
from kbagent.kb.extract import extract  # noqa: E402
from kbagent.kb.ingest import EMBED_GROUP  # noqa: E402
from kbagent.kb.walker import walk  # noqa: E402
from kbagent.settings import Settings  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data"
OUT_DIR = ROOT / "bench" / "out"
MODES = ("hybrid", "bm25", "vector")
SECTIONS = ("ingest", "latency", "ndcg", "big", "cli")
TARGETS = {
    "ingest_overhead_pct": 15.0,  # non-embedding share of ingest time, below
    "reingest_pct": 3.0,  # unchanged re-ingest as % of first ingest, below
    "big_hybrid_p50_ms": 30.0,  # 100k chunks, query vector given, below
    "cli_help_s": 0.5,  # kbagent --help wall time, below
}
PUBLISHED = {"bm25": 0.322, "vector": 0.316}  # BEIR NFCorpus nDCG@10 (README of the data)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Clock:
    """Wall and process CPU time of a block; cpu/wall shows CPU contention."""

    wall: float = 0.0
    cpu: float = 0.0
    _w: float = field(default=0.0, repr=False)
    _c: float = field(default=0.0, repr=False)

    def __enter__(self) -> Clock:
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._w
        self.cpu = time.process_time() - self._c

    def as_dict(self) -> dict[str, float]:
        return {"wall_s": round(self.wall, 3), "cpu_s": round(self.cpu, 3),
                "cpu_per_wall": round(self.cpu / self.wall, 2) if self.wall else 0.0}


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


# ---------------------------------------------------------------- data sets
def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def safe_name(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s)[:80] or "x"


def doc_markdown(title: str, text: str) -> str:
    return f"# {title}\n\n{text}\n"


@dataclass
class NfCorpus:
    docs: list[dict]  # {"_id","title","text"}
    queries: dict[str, str]  # test query id -> text (only queries with qrels)
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> grade


def load_nfcorpus(data: Path, quick: bool, name: str = "nfcorpus") -> NfCorpus:
    """A BEIR data set (NFCorpus by default; SciFact has the same layout)."""
    root = data / name
    docs = read_jsonl(root / "corpus.jsonl")
    all_queries = {q["_id"]: q["text"] for q in read_jsonl(root / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    with open(root / "qrels" / "test.tsv", encoding="utf-8") as f:
        next(f)
        for line in f:
            qid, did, score = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[did] = int(score)
    if quick:
        # ~300 docs holding every judged doc of the queries with the fewest judgements
        keep: set[str] = set()
        qids = []
        for q in sorted(qrels, key=lambda q: (len(qrels[q]), q)):
            if len(keep | set(qrels[q])) > 200:
                break
            keep |= set(qrels[q])
            qids.append(q)
        rnd = random.Random(7)
        others = [d["_id"] for d in docs if d["_id"] not in keep]
        rnd.shuffle(others)
        keep |= set(others[: max(0, 300 - len(keep))])
        docs = [d for d in docs if d["_id"] in keep]
        qrels = {q: {d: g for d, g in qrels[q].items() if d in keep} for q in qids}
        qrels = {q: r for q, r in qrels.items() if r}
    queries = {q: all_queries[q] for q in qrels}
    return NfCorpus(docs, queries, qrels)


def write_corpus(docs: Iterable[dict], folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for d in docs:
        (folder / f"{d['_id']}.md").write_text(doc_markdown(d["title"], d["text"]),
                                               encoding="utf-8")
        n += 1
    return n


def index_texts_of_folder(folder: Path, settings: Settings) -> list[str]:
    """The texts ingest embeds, in its order: walk order, chunk order, de-duplicated."""
    seen: dict[str, None] = {}
    for sf in walk(folder):
        doc = extract(sf.path, sf.abspath.read_bytes())
        for ch in chunk_document(doc, settings.chunk_tokens, settings.chunk_overlap):
            seen.setdefault(ch.index_text(doc.title), None)
    return list(seen)


# ------------------------------------------------------------ embedders
class ReplayEmbedder:
    """Same interface as the real embedder, no model: known texts get their real
    vector; any other text gets a real NFCorpus chunk vector chosen by the text's
    hash, plus Gaussian noise (sigma per dimension), re-normalised. Deterministic."""

    def __init__(self, known: dict[str, np.ndarray], base: np.ndarray, sigma: float = 0.02,
                 model_id: str = BUNDLED_MODEL_ID) -> None:
        self.model_id = model_id
        self.dim = int(base.shape[1])
        self.known = known
        self.base = base
        self.sigma = sigma
        self.seconds = 0.0  # time spent inside encode (to subtract from ingest)
        self.replayed = 0
        self.synthesised = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        t0 = time.perf_counter()
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            v = self.known.get(t)
            if v is not None:
                out[i] = v
                self.replayed += 1
                continue
            h = hashlib.sha1(t.encode()).digest()
            seed = int.from_bytes(h[:8], "little")
            rng = np.random.default_rng(seed)
            w = self.base[seed % len(self.base)] + rng.normal(0.0, self.sigma, self.dim)
            out[i] = w / np.linalg.norm(w)
            self.synthesised += 1
        self.seconds += time.perf_counter() - t0
        return out


class PairedEmbedder:
    """The embedder handed to the benchmarked ingest. Every group of texts ingest
    encodes is encoded a second time right beside it ("encode alone": same texts,
    same group, same model), the order alternating from group to group, so both
    see the same machine load. The shadow time is subtracted from the ingest's
    wall time, and encode-alone time is estimated as ingest's own encode time
    times the median per-group ratio (paired / own). This pairs the comparison at
    group granularity (seconds), where a whole-run comparison (minutes apart) is
    at the mercy of other processes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.inside: list[float] = []  # per group: ingest's own encode call
        self.shadow: list[float] = []  # per group: the paired encode-alone call
        self.max_abs_diff = 0.0

    def _timed(self, texts: list[str]) -> tuple[float, np.ndarray]:
        t0 = time.perf_counter()
        v = self.inner.encode(texts)
        return time.perf_counter() - t0, v

    def encode(self, texts: list[str]) -> np.ndarray:
        if len(self.inside) % 2:
            ts, vs = self._timed(texts)
            ti, vi = self._timed(texts)
        else:
            ti, vi = self._timed(texts)
            ts, vs = self._timed(texts)
        self.inside.append(ti)
        self.shadow.append(ts)
        self.max_abs_diff = max(self.max_abs_diff, float(np.max(np.abs(vi - vs))))
        return vi


def encode_alone(emb: Any, texts: list[str]) -> tuple[Clock, np.ndarray]:
    """Encode ``texts`` exactly as ingest does: groups of EMBED_GROUP, same order."""
    parts = []
    with Clock() as c:
        for i in range(0, len(texts), EMBED_GROUP):
            parts.append(emb.encode(texts[i : i + EMBED_GROUP]))
    vecs = np.concatenate(parts) if parts else np.zeros((0, emb.dim), np.float32)
    return c, vecs


class PhaseTimer:
    """Progress callback that records when each ingest phase first reports."""

    def __init__(self) -> None:
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = time.perf_counter()
        self.first.setdefault(phase, now)
        self.last[phase] = now

    def spans(self, start: float, end: float) -> dict[str, float]:
        order = sorted(self.first, key=self.first.get)
        out = {}
        marks = [self.first[p] for p in order] + [end]
        for p, a, b in zip(order, marks, marks[1:], strict=False):
            out[p] = round(b - a, 3)
        if order:
            out["before_scan"] = round(self.first[order[0]] - start, 3)
        # "write" ends at its last report; what follows is commit/fsync/publish/prune
        if "write" in self.last:
            out["write"] = round(self.last["write"] - self.first["write"], 3)
            out["commit_publish"] = round(end - self.last["write"], 3)
        return out
