"""Big KBs for bench/bench_pg.py: a kept PostgreSQL server, a stepwise resumable
ingest, and a resident-memory probe (issue 26).

``server``  start/stop a PostgreSQL 18 + pgvector server whose data folder is kept
            (``--work W``: ``W/pg``; same settings as tests/pg_server.py), so a
            1M-chunk KB survives between runs; its DSN goes to ``W/dsn``.
``scale``   ONE store (``--store local|pg``) built up to ``--size`` chunks in steps
            of ``--step``: the corpus (bench/kb_big.py's make_big_corpus, real text)
            is written once to ``W/pool`` with its plan (file order and chunk count);
            each step hard-links the next files into ``W/src-<store>`` and runs the
            real incremental ingest (hash embedder: no model). A step is one commit
            (a generation, a transaction), so a killed run resumes at its step; each
            finished step is appended to ``W/scale_<store>.json``: seconds, seconds
            per 1,000 new chunks without the embedder's time, disk, load average.
            With ``--probe-queries N``, each finished step is also probed (``rss``).
``rss``     open one KB in a fresh process and report resident memory (VmRSS)
            before the open, after it and after N searches per mode (p50/p95 of
            those searches: this store alone, not interleaved); for PostgreSQL
            also the server backend's RSS and PSS (``/proc/PID/smaps_rollup``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from bench_access import HashEmbedder

from kbagent.settings import Settings
from tests.pg_server import PgServer, _bin_dir

ROOT = Path(__file__).resolve().parent.parent
MODES = ("bm25", "vector", "hybrid")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


# ------------------------------------------------------------------ server
class KeptPg(PgServer):
    """tests/pg_server.py's server with a fixed folder that stop() keeps (its _start
    reuses a folder that already holds a database)."""

    start_timeout = 120

    def __init__(self, folder: Path, port: int) -> None:
        self.bin = _bin_dir()
        self.port = port
        self.as_root = os.geteuid() == 0
        self.started = False
        self.dir = folder
        folder.mkdir(parents=True, exist_ok=True)

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "fast",
                  "-w", "stop", timeout=600)


def section_server(args: argparse.Namespace) -> dict[str, Any]:
    work: Path = args.work
    server = KeptPg(work / "pg", args.port)
    if args.action == "start":
        dsn = server.start()
        (work / "dsn").write_text(dsn + "\n")
        log(f"PostgreSQL at {dsn} (data in {work / 'pg'})")
        return {"dsn": dsn}
    server.stop()
    return {"stopped": str(work / "pg")}


# ------------------------------------------------------------------ scale
class TimedEmbedder(HashEmbedder):
    """The hash embedder, timing itself (its time is left out of ingest rates)."""

    seconds = 0.0

    def encode(self, texts: list[str]) -> np.ndarray:
        t0 = time.perf_counter()
        try:
            return super().encode(texts)
        finally:
            self.seconds += time.perf_counter() - t0


def _plan(args: argparse.Namespace, settings: Settings) -> list[tuple[str, int]]:
    from kb_big import make_big_corpus

    work: Path = args.work
    plan_file = work / f"plan{args.size}.json"
    if plan_file.is_file():
        return [(r, int(n)) for r, n in json.loads(plan_file.read_text())["plan"]]
    plan: list[tuple[str, int]] = []
    t0 = time.perf_counter()
    log(f"writing a corpus of ~{args.size} chunks to {work / 'pool'}")
    info = make_big_corpus(args.data, work / "pool", args.size, settings, plan)
    info["seconds"] = round(time.perf_counter() - t0, 1)
    log(f"corpus: {info}")
    write_json(plan_file, {"info": info, "plan": plan})
    return plan


def _stat(pid: int | str) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()  # fields from 3 (state) on


def server_cpu_s(work: Path) -> float:
    """CPU seconds of the kept server: the postmaster, the backends it has reaped
    (cutime/cstime) and the live ones."""
    tick = os.sysconf("SC_CLK_TCK")
    pid = int((work / "pg" / "data" / "postmaster.pid").read_text().split()[0])
    f = _stat(pid)
    total = sum(int(x) for x in f[11:15])  # utime, stime, cutime, cstime
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                c = _stat(d.name)
            except OSError:
                continue
            if int(c[1]) == pid:
                total += int(c[11]) + int(c[12])
    return total / tick


def _cpu(work: Path, store: str) -> float:
    t = os.times()
    return t.user + t.system + (server_cpu_s(work) if store == "pg" else 0.0)


def _local_disk(settings: Settings, name: str) -> int:
    from kbagent.kb.knowledge_base import current_generation, kb_dir

    gen = current_generation(kb_dir(settings, name))
    folder = kb_dir(settings, name) / str(gen)
    seen: set[int] = set()
    total = 0
    for f in folder.rglob("*"):
        st = f.lstat()
        if f.is_file() and st.st_ino not in seen:
            seen.add(st.st_ino)
            total += st.st_size
    return total


def db_size(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CHECKPOINT")
        return int(c.execute("SELECT pg_database_size(current_database())").fetchone()[0])


def _probe(args: argparse.Namespace, row: dict[str, Any], store: str, name: str,
           home: Path, dsn: str) -> None:
    """This store alone, in a fresh process, at this step's size."""
    before = load_avg()
    row["probe"] = rss_probe(store, name, home, dsn, args.probe_queries, args.data)
    row["probe"].update(load_before=before, load_after=load_avg())
    log(f"{store} probe at {row['chunks_total']} chunks: {row['probe']}")


def section_scale(args: argparse.Namespace, dsn: str) -> dict[str, Any]:
    from kbagent.kb.stores import ingestor_for

    work: Path = args.work
    store = args.store
    settings = Settings.load(home=work / "home", bm25_first_chunks=0)
    plan = _plan(args, settings)
    name = f"big{args.size}-{store}"
    src = work / f"src-{store}"
    out_file = work / f"scale{args.size}_{store}.json"
    results: dict[str, Any] = (json.loads(out_file.read_text()) if out_file.is_file()
                               else {"store": store, "kb": name, "steps": []})
    if store == "pg" and "pg_baseline_bytes" not in results:
        results["pg_baseline_bytes"] = db_size(dsn)
    done = {s["target"] for s in results["steps"]}
    linked = 0
    cum = 0
    targets = [*range(args.step, args.size, args.step), args.size]
    for target in targets:
        prev_cum, first = cum, linked
        while linked < len(plan) and cum < target:
            rel, n = plan[linked]
            dest = src / rel
            if not dest.exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.link(work / "pool" / rel, dest)
            cum += n
            linked += 1
        if target in done:
            continue
        last = results["steps"][-1] if results["steps"] else None
        if args.probe_queries and last is not None and "probe" not in last:
            _probe(args, last, store, name, settings.home, dsn)  # the KB is still at it
            write_json(out_file, results)
        emb = TimedEmbedder()
        before = load_avg()
        cpu0 = _cpu(work, store)
        log(f"{store} step {target}: {linked} files, {cum} chunks planned; ingesting")
        t0 = time.perf_counter()
        rep = ingestor_for(settings, name, dsn if store == "pg" else None,
                           embedder=emb).run(src)
        seconds = time.perf_counter() - t0
        cpu = _cpu(work, store) - cpu0
        row: dict[str, Any] = {"target": target, "files": linked, "chunks_total": rep.chunks_total}
        if not rep.committed:  # a kill after the commit, before this file was written
            row["note"] = "already ingested by an earlier (killed) run: not timed"
        else:
            added = cum - prev_cum
            row.update(new_files=linked - first, new_chunks=added, seconds=round(seconds, 1),
                       embed_s=round(emb.seconds, 1),
                       s_per_1k_chunks_excl_embed=round(
                           (seconds - emb.seconds) / max(added, 1) * 1000, 2),
                       # CPU (this process's threads, and the server's for pg): what
                       # the ingest costs whatever the load; the wall time is mostly
                       # waiting for a core on the shared machine
                       cpu_s=round(cpu, 1), cpu_s_per_1k_chunks_excl_embed=round(
                           (cpu - emb.seconds) / max(added, 1) * 1000, 2))
        row["disk_mb"] = round((_local_disk(settings, name) if store == "local" else
                                db_size(dsn) - results["pg_baseline_bytes"]) / 1e6, 1)
        row.update(load_before=before, load_after=load_avg(),
                   finished_at=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))
        results["steps"].append(row)
        write_json(out_file, results)
        if args.probe_queries:
            _probe(args, row, store, name, settings.home, dsn)
        write_json(out_file, results)
        log(f"{store} step {target}: {row}")
    return results


# ------------------------------------------------------------------ rss
def _status_kb(pid: int | str, field: str, path: str = "status") -> int:
    for line in Path(f"/proc/{pid}/{path}").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))]


def rss_mb(pid: int | str = "self") -> float:
    return round(_status_kb(pid, "VmRSS") / 1024, 1)


def section_rss(args: argparse.Namespace, dsn: str) -> dict[str, Any]:
    """Resident memory of one open KB, in this (fresh) process."""
    from bench_pg import read_jsonl

    import kbagent.kb.knowledge_base
    import kbagent.kb.pg.kb  # noqa: F401  (both stores' imports before the baseline)
    from kbagent.kb.search import HybridSearcher
    from kbagent.kb.stores import open_kb

    settings = Settings.load(home=args.home, bm25_first_chunks=0)
    texts = [q["text"] for s in ("nfcorpus", "scifact")
             for q in read_jsonl(args.data / s / "queries.jsonl")]
    queries = random.Random(7).sample(texts, args.queries)
    qvecs = HashEmbedder().encode(queries)
    out: dict[str, Any] = {"kb": args.name, "rss_before_open_mb": rss_mb()}
    t0 = time.perf_counter()
    kb = open_kb(settings, args.name)
    out["open_s"] = round(time.perf_counter() - t0, 3)
    out["rss_after_open_mb"] = rss_mb()
    backend = None
    if hasattr(kb, "conn"):
        backend = int(kb.conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        out["pg_backend_rss_after_open_mb"] = rss_mb(backend)
    searcher = HybridSearcher([kb])
    for mode in MODES:
        times = []
        for q, v in zip(queries, qvecs, strict=True):
            t0 = time.perf_counter()
            searcher.search(q, k=10, mode=mode, query_vectors={kb.embedding_space: v})
            times.append((time.perf_counter() - t0) * 1000)
        out[f"{mode}_p50_ms"] = round(pct(times, 50), 2)
        out[f"{mode}_p95_ms"] = round(pct(times, 95), 2)
    out["rss_after_searches_mb"] = rss_mb()
    out["rss_peak_mb"] = round(_status_kb("self", "VmHWM") / 1024, 1)
    out["searches"] = len(queries) * len(MODES)
    if backend is not None:
        out["pg_backend_rss_after_searches_mb"] = rss_mb(backend)
        out["pg_backend_pss_after_searches_mb"] = round(
            _status_kb(backend, "Pss", "smaps_rollup") / 1024, 1)
    kb.close()
    return out


def rss_probe(store: str, name: str, home: Path, dsn: str, queries: int,
              data: Path) -> dict[str, Any]:
    """section_rss in a child process (resident memory of that store alone)."""
    cmd = [sys.executable, str(ROOT / "bench" / "bench_pg.py"), "rss", "--name", name,
           "--home", str(home), "--queries", str(queries), "--data", str(data)]
    if store == "pg":
        cmd += ["--dsn", dsn]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout)["rss"])


# ------------------------------------------------------------------ table
def section_table(args: argparse.Namespace) -> str:
    """The scale JSON files of ``--work`` as Markdown tables (for BENCHMARKS.md)."""
    lines: list[str] = []
    for store in ("local", "pg"):
        path = args.work / f"scale{args.size}_{store}.json"
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        lines += ["", f"{store} ({data['kb']})", "",
                  "| chunks | ingest s (s per 1k, no model) | load 1-min before/after | disk MB "
                  "| open s | RSS before open / after open / after 300 searches MB "
                  "| bm25 p50/p95 ms | vector p50/p95 ms | hybrid p50/p95 ms | probe load |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for s in data["steps"]:
            p = s.get("probe", {})
            mem = (f"{p['rss_before_open_mb']} / {p['rss_after_open_mb']} / "
                   f"{p['rss_after_searches_mb']}" if p else "")
            if p and "pg_backend_rss_after_searches_mb" in p:
                mem += (f" (server backend RSS {p['pg_backend_rss_after_searches_mb']}, "
                        f"PSS {p['pg_backend_pss_after_searches_mb']})")
            lat = [f"{p[f'{m}_p50_ms']} / {p[f'{m}_p95_ms']}" if p else "" for m in MODES]
            lines.append(
                f"| {s['chunks_total']:,} | {s.get('seconds', '')} "
                f"({s.get('s_per_1k_chunks_excl_embed', '')}) | {s['load_before'][0]} / "
                f"{s['load_after'][0]} | {s['disk_mb']:,} | {p.get('open_s', '')} | {mem} | "
                + " | ".join(lat) + f" | {p.get('load_before', [''])[0]} |")
    return "\n".join(lines)
