"""Cold start before/after the settings moved to pydantic-settings (issue 21), side by side::

    .venv/bin/python bench/bench_settings_cold.py --before /path/to/old/checkout --runs 15

Each run is a fresh interpreter with ``PYTHONPATH`` set to one checkout; the two
checkouts alternate run by run so both see the same machine load. Measured (medians):

- ``kbagent --help``: wall time, and the import time of ``kbagent.cli`` as
  ``python -X importtime`` reports it (cumulative, microseconds);
- ``kbagent kbs`` on an empty home: a command that builds the settings (the new
  code imports pydantic-settings there, the old code a hand-written dataclass);
- ``import kbagent.settings`` alone.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "--help": ["-m", "kbagent", "--help"],
    "kbs (empty home)": ["-m", "kbagent", "kbs"],
    "import kbagent.settings": ["-c", "import kbagent.settings"],
}


def run(tree: Path, args: list[str], home: Path, importtime: bool = False) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(tree), "KBAGENT_HOME": str(home)}
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), *args]
    t0 = time.perf_counter()
    # cwd: not a checkout (``-m`` and ``-c`` put the working directory first on sys.path)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=home)
    wall = time.perf_counter() - t0
    cli_us = 0
    if importtime:
        m = re.search(r"\|\s*(\d+) \| kbagent\.cli$", out.stderr, re.M)
        cli_us = int(m.group(1)) if m else 0
    return wall, cli_us


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path, required=True, help="checkout of the old code")
    ap.add_argument("--after", type=Path, default=ROOT)
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    trees = {"before": a.before.resolve(), "after": a.after.resolve()}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        for name, tree in trees.items():  # each run imports its own checkout's kbagent
            where = subprocess.run(
                [sys.executable, "-c", "import kbagent; print(kbagent.__file__)"], cwd=home,
                env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True,
                check=True).stdout.strip()
            assert Path(where).is_relative_to(tree), (name, where)
        for tree in trees.values():  # warm the page cache and .pyc files
            for args in CASES.values():
                run(tree, args, home)
        wall: dict[tuple[str, str], list[float]] = {}
        cli: dict[str, list[int]] = {k: [] for k in trees}
        for _ in range(a.runs):
            for name, tree in trees.items():
                for case, args in CASES.items():
                    wall.setdefault((name, case), []).append(run(tree, args, home)[0])
                cli[name].append(run(tree, CASES["--help"], home, importtime=True)[1])
    print(f"{'case':28} {'before ms':>10} {'after ms':>10} {'after/before':>13}")
    for case in CASES:
        b = statistics.median(wall[("before", case)]) * 1000
        f = statistics.median(wall[("after", case)]) * 1000
        print(f"{case:28} {b:10.1f} {f:10.1f} {f / b:13.2f}")
    b, f = statistics.median(cli["before"]) / 1000, statistics.median(cli["after"]) / 1000
    print(f"{'import kbagent.cli (--help)':28} {b:10.1f} {f:10.1f} {f / b:13.2f}")


if __name__ == "__main__":
    main()
