"""Watch-mode benchmark (issue 25): a 10,000-file folder watched by the real
``kbagent ingest DIR --kb K --watch`` process.

Run from the repository root::

    PYTHONPATH=$PWD .venv/bin/python bench/bench_watch.py            # 10,000 files
    PYTHONPATH=$PWD .venv/bin/python bench/bench_watch.py --files 1000 --idle 10 --saves 5

1. build   a folder of N small Markdown files (100 per sub-folder, deterministic
           text), ingested once in this process. Its vectors are deterministic
           pseudo-random ones recorded as the bundled model's (as bench_access.py:
           embedding 10,000 chunks on a busy laptop takes many minutes and says nothing
           about watching); ``--real-build`` embeds them with the model. Every update
           the watcher makes embeds with the real bundled model.
2. idle    ``kbagent ingest DIR --kb K --watch`` started as a subprocess; after its
           start-up ingest (nothing to do: every file is read and hashed) and a few
           seconds to settle, its CPU time (utime + stime from /proc) over ``--idle``
           seconds of no file activity, as a share of one core; its RSS then.
3. saves   ``--saves`` times: one file rewritten with a new unique word; the time
           until a BM25 search in this process (a reader opened before, which follows
           new generations) finds it. p50 / p95. Then the watcher's RSS and its
           CPU time over another idle period (the embedding model is loaded by now).
4. compare with the watcher stopped: the same one-file update applied in this
           process by a watch batch (reads the named file only) and by a plain
           re-run of the incremental ingest (reads and hashes every file),
           interleaved, ``--compare`` times each: p50 and the ratio.

Results: a table on stdout and JSON in ``bench/out/watch_results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbagent.kb.embedder import load_embedder  # noqa: E402
from kbagent.kb.ingest import Ingestor  # noqa: E402
from kbagent.kb.watch import FolderWatcher  # noqa: E402
from kbagent.session import Session  # noqa: E402
from kbagent.settings import Settings  # noqa: E402
from tests.hash_embedder import HashEmbedder  # noqa: E402

WORDS = ("cache retry policy latency budget queue shard replica index token window "
         "backoff jitter quota tenant region failover snapshot ledger audit metric "
         "alert rollout canary schema migration vector segment merge compaction").split()
CLK = os.sysconf("SC_CLK_TCK")


def build_folder(root: Path, n: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for i in range(n):
        d = root / f"d{i // 100:03d}"
        d.mkdir(parents=True, exist_ok=True)
        paras = [f"# Note {i}\n"]
        for _ in range(3):
            paras.append(" ".join(rng.choice(WORDS) for _ in range(40)) + ".\n")
        (d / f"note{i:05d}.md").write_text("\n".join(paras), encoding="utf-8")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK  # utime, stime


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def idle_cpu(pid: int, seconds: float) -> float:
    """Share of one core the process used over ``seconds`` of wall time."""
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - c0) / (time.monotonic() - t0)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def wait_for(cond, bound: float, step: float = 0.02) -> bool:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return False


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--idle", type=float, default=30.0, help="seconds of idle measured")
    ap.add_argument("--saves", type=int, default=20)
    ap.add_argument("--compare", type=int, default=5)
    ap.add_argument("--real-build", action="store_true", help="embed the first build with "
                    "the model too")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "watch_results.json")
    args = ap.parse_args()
    load_before = uptime()
    work = Path(tempfile.mkdtemp(prefix="bench_watch_"))
    home, src = work / "home", work / "src"
    os.environ["KBAGENT_HOME"] = str(home)
    settings = Settings.load(home=home)
    res: dict[str, object] = {"files": args.files, "load_before": load_before}

    t = time.perf_counter()
    build_folder(src, args.files)
    embedder = load_embedder("bundled")
    first = embedder if args.real_build else HashEmbedder(embedder.model_id, embedder.dim)
    report = Ingestor(settings, "w", embedder=first).run(src)
    res["build_s"] = round(time.perf_counter() - t, 1)
    res["chunks"] = report.chunks_total
    print(f"built {args.files} files, {report.chunks_total} chunks in {res['build_s']}s",
          flush=True)

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kbagent", "ingest", str(src), "--kb", "w",
                             "--watch", "--quiet"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    err_lines: list[str] = []
    out_lines: list[str] = []
    threading.Thread(target=lambda: err_lines.extend(iter(proc.stderr.readline, "")),
                     daemon=True).start()
    threading.Thread(target=lambda: out_lines.extend(iter(proc.stdout.readline, "")),
                     daemon=True).start()
    try:
        if not wait_for(lambda: any("watching" in x for x in err_lines), 900, 0.1):
            raise SystemExit("the watcher did not start: " + "".join(err_lines))
        res["startup_s"] = round(time.perf_counter() - t, 1)
        time.sleep(5)  # settle (the watcher registers its watches)
        res["idle_cpu_cold"] = idle_cpu(proc.pid, args.idle)
        res["rss_mb_cold"] = round(rss_mb(proc.pid), 1)
        print(f"idle (no model loaded yet): {100 * res['idle_cpu_cold']:.2f}% of a core, "
              f"RSS {res['rss_mb_cold']} MB", flush=True)

        session = Session(settings, ["w"])
        session.open_kbs()
        latencies: list[float] = []
        rng = random.Random(11)
        for i in range(args.saves):
            n = rng.randrange(args.files)
            path = src / f"d{n // 100:03d}" / f"note{n:05d}.md"
            word = f"zqsave{i}x{n}"
            text = path.read_text() + f"\nAdded {word} here.\n"
            t0 = time.perf_counter()
            path.write_text(text)
            ok = wait_for(lambda w=word: bool(session.search(w, k=1, mode="bm25").hits), 300)
            if not ok:
                raise SystemExit(f"save {i} never became searchable")
            latencies.append(time.perf_counter() - t0)
            print(f"save {i + 1}: {latencies[-1]:.2f}s", flush=True)
            time.sleep(1.0)
        res["save_to_search_s"] = [round(x, 3) for x in latencies]
        res["save_p50_s"], res["save_p95_s"] = pct(latencies, 0.5), pct(latencies, 0.95)
        time.sleep(5)
        res["idle_cpu_warm"] = idle_cpu(proc.pid, args.idle)
        res["rss_mb_warm"] = round(rss_mb(proc.pid), 1)
        res["update_lines"] = [x.strip() for x in out_lines if "gen-" in x][-3:]
        session.close()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
    print(f"idle (model loaded): {100 * res['idle_cpu_warm']:.2f}% of a core, "
          f"RSS {res['rss_mb_warm']} MB", flush=True)

    # watch batch (the named file only) vs a re-run of the incremental ingest, interleaved
    ingestor = Ingestor(settings, "w", embedder=embedder)
    watcher = FolderWatcher(ingestor, src)
    batch_s: list[float] = []
    rerun_s: list[float] = []
    for i in range(args.compare):
        for kind in ("batch", "rerun"):
            path = src / "d000" / f"note{i:05d}.md"
            path.write_text(path.read_text() + f"\n{kind} {i}\n")
            rel = path.relative_to(src).as_posix()
            t0 = time.perf_counter()
            if kind == "batch":
                watcher.apply({rel}, full=False)
                batch_s.append(time.perf_counter() - t0)
            else:
                ingestor.run(src)
                rerun_s.append(time.perf_counter() - t0)
    res["batch_p50_s"], res["rerun_p50_s"] = statistics.median(batch_s), statistics.median(rerun_s)
    res["load_after"] = uptime()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2))

    print()
    print(f"| measure | value |\n|---|---:|\n"
          f"| files / chunks | {args.files:,} / {res['chunks']:,} |\n"
          f"| watcher start-up (every file read and hashed) | {res['startup_s']} s |\n"
          f"| idle CPU, before the first update | {100 * res['idle_cpu_cold']:.2f}% of a core"
          " |\n"
          f"| idle CPU, after {args.saves} updates | {100 * res['idle_cpu_warm']:.2f}% of a core"
          " |\n"
          f"| RSS before the first update | {res['rss_mb_cold']} MB |\n"
          f"| RSS after {args.saves} updates (model loaded) | {res['rss_mb_warm']} MB |\n"
          f"| save to searchable p50 / p95 ({args.saves} saves) | {res['save_p50_s']:.2f} s / "
          f"{res['save_p95_s']:.2f} s |\n"
          f"| one-file update: watch batch p50 | {res['batch_p50_s']:.2f} s |\n"
          f"| one-file update: ingest re-run p50 | {res['rerun_p50_s']:.2f} s |\n"
          f"| re-run / watch batch | {res['rerun_p50_s'] / res['batch_p50_s']:.1f}x |")
    print(f"load before: {load_before}\nload after:  {res['load_after']}")


if __name__ == "__main__":
    main()
