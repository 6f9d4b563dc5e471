"""Cold-start benchmark (issue 8): fresh processes, side by side in one run::

    .venv/bin/python bench/bench_cold.py              # 10 runs each, ~10k-chunk KB
    .venv/bin/python bench/bench_cold.py --runs 3 --chunks 2000   # smoke

Measured, each the median of ``--runs`` fresh processes, the two runtimes
alternating run by run so both see the same machine load:

- ``kbagent search QUERY --kb big`` on a ~10k-chunk KB: before (the torch path,
  ``KBAGENT_EMBEDDING_RUNTIME=torch``) and after (the default ONNX path);
- ``kbagent ask --mode rag --quiet QUESTION`` with the bundled LLM, both runtimes;
  generation time is reported apart (``usage.llm_ms`` of the same command with
  ``--json`` instead of ``--quiet``, fewer runs);
- ``kbagent --help``.

The KB's text is real (NFCorpus, SciFact, HotpotQA, MuSiQue documents, as
``bench_kb.py``'s big KB); its vectors are replayed real NFCorpus vectors
(:class:`bench_kb.ReplayEmbedder`), so building it costs no model time. The
ONNX export is made before timing starts (it is made once per machine).
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
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import bench_kb as B  # noqa: E402

from kbagent.kb.embedder import load_embedder  # noqa: E402

QUERY = "does vitamin D supplementation lower the risk of fractures"
QUESTION = "What does vitamin D do for bone health?"


def build_kb(home: Path, data: Path, work: Path, chunks: int) -> dict[str, Any]:
    """A ~``chunks``-chunk KB named ``big`` with replayed real vectors. Also times how
    soon the first search works: the BM25-only generation (kb/bm25_first.py) is
    published before embedding starts, so that time does not depend on the model."""
    emb = load_embedder("bundled")  # ONNX: also makes sure the export exists
    nf = B.load_nfcorpus(data, quick=True)
    base = emb.encode([f"{d['title']} {d['text']}" for d in nf.docs[:256]])
    folder = work / "big_src"
    B.make_big_corpus(data, folder, chunks, B.Settings.load(home=home))
    settings = B.Settings.load(home=home)
    marks: dict[str, float] = {}
    t0 = time.perf_counter()
    rep = B.Ingestor(settings, "big", embedder=B.ReplayEmbedder({}, base),
                     checkpoint=lambda step: marks.setdefault(step, time.perf_counter())
                     ).run(folder)
    return {"chunks": rep.chunks_total, "files": rep.count("added"),
            "first_search_after_s": round(marks["bm25-published"] - t0, 2),
            "ingest_without_model_s": round(rep.seconds, 2)}


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    return wall, p.stdout


def side_by_side(cmd: list[str], envs: dict[str, dict[str, str]], runs: int) -> dict[str, Any]:
    names = list(envs)
    for n in names:
        timed(cmd, envs[n])  # warm the page cache once (and any lazy export)
    walls: dict[str, list[float]] = {n: [] for n in names}
    for i in range(runs):
        for n in names[i % len(names):] + names[: i % len(names)]:
            walls[n].append(timed(cmd, envs[n])[0])
        B.log(f"{cmd[3]}: run {i + 1}/{runs}")
    return {n: {"median_s": round(statistics.median(w), 3), "all_s": [round(x, 3) for x in w]}
            for n, w in walls.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--ask-runs", type=int, default=None, help="ask runs (default: --runs)")
    ap.add_argument("--json-runs", type=int, default=3, help="ask --json runs (generation)")
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data")
                    if not B.DEFAULT_DATA.is_dir() else B.DEFAULT_DATA)
    ap.add_argument("--skip-ask", action="store_true")
    ap.add_argument("--out", type=Path, default=B.OUT_DIR / "cold_results.json")
    args = ap.parse_args(argv)
    load_start = os.getloadavg()
    results: dict[str, Any] = {
        "command": " ".join(["bench/bench_cold.py", *(argv if argv is not None
                                                      else sys.argv[1:])]),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "git_commit": B.git_commit(),
        "cpus": os.cpu_count(), "runs": args.runs}
    with tempfile.TemporaryDirectory(prefix="kbcold-", dir="/tmp") as tmp:
        work = Path(tmp)
        home = work / "home"
        results["kb"] = build_kb(home, args.data, work, args.chunks)
        B.log(f"KB 'big': {results['kb']}")
        base = {**os.environ, "KBAGENT_HOME": str(home), "PYTHONPATH": str(ROOT)}
        base.pop("KBAGENT_EMBEDDING_RUNTIME", None)
        envs = {"torch (before)": {**base, "KBAGENT_EMBEDDING_RUNTIME": "torch"},
                "onnx (after)": base}
        kb = [sys.executable, "-m", "kbagent"]
        results["search"] = side_by_side([*kb, "search", QUERY, "--kb", "big"], envs, args.runs)
        results["help"] = side_by_side([*kb, "--help"], {"default": base}, args.runs)
        if not args.skip_ask:
            ask = [*kb, "ask", "--mode", "rag", "--kb", "big", QUESTION]
            results["ask_quiet"] = side_by_side([*ask, "--quiet"], envs,
                                                args.ask_runs or args.runs)
            gen: dict[str, list[float]] = {n: [] for n in envs}
            for _ in range(args.json_runs):
                for n, env in envs.items():
                    out = json.loads(timed([*ask, "--json"], env)[1])
                    gen[n].append(out["usage"]["llm_ms"] / 1000)
            for n in envs:
                r = results["ask_quiet"][n]
                r["generation_s_median"] = round(statistics.median(gen[n]), 3)
                r["wall_minus_generation_s"] = round(r["median_s"] - r["generation_s_median"], 3)
    s = results["search"]
    results["search_speedup"] = round(s["torch (before)"]["median_s"]
                                      / s["onnx (after)"]["median_s"], 2)
    results["loadavg_start_end"] = [list(load_start), list(os.getloadavg())]
    B.OUT_DIR.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
