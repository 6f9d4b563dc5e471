"""Cold ``kbagent search`` of this tree against an older commit, side by side (issue
21: ``kbagent search`` moved onto the session; it must stay as fast)::

    .venv/bin/python bench/bench_search_door.py --before b66f4f4            # 10 runs
    .venv/bin/python bench/bench_search_door.py --before b66f4f4 --runs 3   # smoke

The sample KB is ingested once into a temporary home; the old commit's ``kbagent/``
is exported with ``git archive`` beside it. Each command then runs as a fresh
process (``python -m kbagent search ...``) from both trees, alternating which goes
first, after one unmeasured round that warms the page cache. Printed: the median
wall time of each tree, the ratio after/before, whether both printed the same
hits, and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "hybrid (query embedder loads)": ["search", "retry backoff jitter"],
    "bm25 (no model)": ["search", "retry backoff jitter", "--mode", "bm25"],
    "hybrid --as maya --json": ["search", "CEO base salary", "--as", "maya", "--json"],
}


def run(tree: Path, home: Path, args: list[str]) -> tuple[float, str]:
    env = {**os.environ, "KBAGENT_HOME": str(home), "PYTHONPATH": str(tree)}
    env.pop("KBAGENT_EMBEDDING_RUNTIME", None)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "kbagent", *args], env=env, capture_output=True,
                       text=True, cwd=home)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {tree}: {p.stderr.strip()[-400:]}")
    return wall, p.stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="commit to compare with (e.g. b66f4f4)")
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args(argv)
    load_start = os.getloadavg()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    out: dict[str, object] = {"command": " ".join(["bench/bench_search_door.py",
                                                   *(argv if argv is not None else sys.argv[1:])]),
                              "after": commit, "before": args.before, "runs": args.runs}
    with tempfile.TemporaryDirectory(prefix="kbdoor-") as tmp:
        before = Path(tmp) / "before"
        before.mkdir()
        archive = subprocess.run(["git", "archive", args.before, "kbagent"], cwd=ROOT,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        home = Path(tmp) / "home"
        sys.path.insert(0, str(ROOT))
        from kbagent.kb.ingest import Ingestor
        from kbagent.settings import Settings

        Ingestor(Settings.load(home=home), "sample").run(ROOT / "sample_kb")
        (home / "users.toml").write_text('[users]\nmaya = ["executives"]\n')
        trees = {"before": before, "after": ROOT}
        for label, cmd in COMMANDS.items():
            walls: dict[str, list[float]] = {k: [] for k in trees}
            outputs = {k: run(t, home, cmd)[1] for k, t in trees.items()}  # warm-up round
            for i in range(args.runs):
                for k in (list(trees) if i % 2 == 0 else list(trees)[::-1]):
                    walls[k].append(run(trees[k], home, cmd)[0])
            med = {k: statistics.median(w) for k, w in walls.items()}
            out[label] = {"before_median_s": round(med["before"], 3),
                          "after_median_s": round(med["after"], 3),
                          "after_over_before": round(med["after"] / med["before"], 3),
                          "same_output": outputs["before"] == outputs["after"],
                          "all_s": {k: [round(x, 3) for x in w] for k, w in walls.items()}}
            print(f"{label}: before {med['before']:.3f} s, after {med['after']:.3f} s, "
                  f"after/before {med['after'] / med['before']:.3f}, same output: "
                  f"{outputs['before'] == outputs['after']}", flush=True)
    out["loadavg_start_end"] = [list(load_start), list(os.getloadavg())]
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
