"""Batch throughput: the sample questions answered by one ``kbagent batch``
process against the same questions asked by separate ``kbagent ask`` processes
(each one loading the embedding model and the LLM again), side by side in one
run on the bundled model. Prints questions per minute for both and the ratio.

    .venv/bin/python bench/bench_batch.py [--limit N] [--mode auto]

The two runs alternate in halves (asks for the first half, the batch, asks for
the second half) so that a change in machine load touches both.
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

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "tests" / "data" / "sample_questions.jsonl"


def kbagent(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kbagent", *args], env=env, text=True,
                          capture_output=True, check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=0, help="first N questions (default: all)")
    ap.add_argument("--mode", default="auto")
    args = ap.parse_args()
    rows = [json.loads(x) for x in QUESTIONS.read_text().splitlines() if x.strip()]
    rows = rows[: args.limit] if args.limit else rows
    home = Path(tempfile.mkdtemp(prefix="kbagent-bench-batch-"))
    env = {**os.environ, "KBAGENT_HOME": str(home), "TOKENIZERS_PARALLELISM": "false"}
    res = kbagent("ingest", str(ROOT / "sample_kb"), "--kb", "sample", "--quiet", env=env)
    assert res.returncode == 0, res.stderr
    src = home / "questions.jsonl"
    src.write_text("".join(json.dumps({"id": r["id"], "question": r["question"]}) + "\n"
                           for r in rows))
    load_start = os.getloadavg()
    half = len(rows) // 2
    ask_s: list[float] = []
    ask_failed = 0

    def asks(part: list[dict]) -> None:
        nonlocal ask_failed
        for r in part:
            t0 = time.perf_counter()
            out = kbagent("ask", r["question"], "--kb", "sample", "--mode", args.mode, "--json",
                          env=env)
            ask_s.append(time.perf_counter() - t0)
            ask_failed += out.returncode != 0
            print(f"ask {r['id']}: {ask_s[-1]:.1f} s", flush=True)

    asks(rows[:half])
    t0 = time.perf_counter()
    res = kbagent("batch", str(src), "-o", str(home / "answers.jsonl"), "--kb", "sample",
                  "--mode", args.mode, "--quiet", env=env)
    batch_s = time.perf_counter() - t0
    assert res.returncode == 0, res.stderr
    print(f"batch: {batch_s:.1f} s", flush=True)
    asks(rows[half:])
    answered = sum(1 for x in (home / "answers.jsonl").read_text().splitlines()
                   if json.loads(x)["error"] is None)
    n = len(rows)
    ask_total = sum(ask_s)
    result = {
        "questions": n, "mode": args.mode,
        "batch_s": round(batch_s, 1), "batch_per_min": round(n / batch_s * 60, 2),
        "batch_answered": answered,
        "asks_s": round(ask_total, 1), "asks_per_min": round(n / ask_total * 60, 2),
        "asks_failed": ask_failed,
        "ratio_batch_over_asks": round(ask_total / batch_s, 2),
        "load_average_start": load_start, "load_average_end": os.getloadavg(),
    }
    (ROOT / "bench" / "out").mkdir(parents=True, exist_ok=True)
    (ROOT / "bench" / "out" / "batch_results.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
