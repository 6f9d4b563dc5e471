"""Issue 44's must-show on HotpotQA: the first N questions of the HotpotQA (IRCoT) set,
answered by ``kbagent eval qa`` (``--mode auto``) in the four configurations side by side
(bundled + harness, the 1.5B + harness, the 1.5B + model policy, the 0.5B + model
policy; the policy set by ``KBAGENT_ANSWER_POLICY``), one after the other in one run,
each answer kept (``--save-answers``, so a run resumes), then one table: fact first (a
gold answer in the answer's first sentence, as ``bench_agent.py`` reads it), the answer
holds a gold answer, refused (every question is answerable), claim sentences that pass
the check, flagged sentences, latency p50/p95.

    .venv/bin/python bench/bench_hotpot_policies.py [--max-questions 50] \
        [--home bench/out/hotpot_home] [--configs bundled,15b-harness,15b-model,05b-model]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_agent import first_sentence  # noqa: E402

DATA = ROOT.parent / "shared/data/hotpotqa_ircot500"
MODELS = Path("~/.cache/kbagent/eval-models").expanduser()
CONFIGS = {  # name: (GGUF or "" for the bundled model, answer policy)
    "bundled": ("", "harness"),
    "15b-harness": (str(MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"), "harness"),
    "15b-model": (str(MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"), "model"),
    "05b-model": (str(MODELS / "qwen2.5-coder-0.5b-instruct.gguf"), "model"),
}


def run(name: str, n: int, home: Path, out: Path) -> None:
    model, policy = CONFIGS[name]
    env = {**os.environ, "KBAGENT_HOME": str(home), "KBAGENT_ANSWER_POLICY": policy}
    cmd = [str(ROOT / ".venv/bin/kbagent"), "eval", "qa", str(DATA), "--max-questions", str(n),
           "--save-answers", str(out), "--quiet"] + (["--model", model] if model else [])
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"=== {time.strftime('%H:%M:%S')} {name} load {' '.join(load)}", flush=True)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)


def golds(n: int) -> dict[str, list[str]]:
    from kbagent.evaluation.qa_data import load_qa

    return {item.id: item.golds for item in load_qa(DATA, "hotpotqa", n).items}


def table(outs: dict[str, Path], gold: dict[str, list[str]]) -> str:
    from kbagent.evaluation.metrics import contains_gold
    from kbagent.evaluation.qa import abstained

    lines = ["| config | fact first | holds the gold | refused | claims that pass the check "
             "| flagged sentences | p50 / p95 s |", "|---|---|---|---|---|---|---|"]
    for name, path in outs.items():
        recs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        recs = [r for r in recs if r.get("id") in gold]
        first = sum(contains_gold(first_sentence(r["answer"]), gold[r["id"]]) for r in recs)
        holds = sum(contains_gold(r["answer"], gold[r["id"]]) for r in recs)
        refused = sum(bool(r.get("abstained")) or abstained(r["answer"]) for r in recs)
        claims = [s for r in recs for s in r.get("sentences") or []
                  if s.get("role", "claim") == "claim"]
        passed = sum(1 for s in claims if s.get("cited") and s.get("supported"))
        flagged = sum(len(r.get("unsupported") or []) for r in recs)
        wall = sorted(float((r.get("usage") or {}).get("wall_ms") or 0) / 1000 for r in recs)
        p95 = wall[min(len(wall) - 1, round(0.95 * (len(wall) - 1)))] if wall else 0.0
        lines.append(f"| {name} | {first}/{len(recs)} | {holds}/{len(recs)} | {refused} | "
                     f"{passed}/{len(claims)} | {flagged} | "
                     f"{statistics.median(wall) if wall else 0:.1f} / {p95:.1f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-questions", type=int, default=50)
    ap.add_argument("--home", type=Path, default=ROOT / "bench/out/hotpot_home")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--prefix", default="hq")
    args = ap.parse_args()
    outs = {}
    for name in args.configs.split(","):
        outs[name] = ROOT / f"bench/out/{args.prefix}{args.max_questions}_{name}.jsonl"
        run(name, args.max_questions, args.home, outs[name])
    print(table(outs, golds(args.max_questions)))


if __name__ == "__main__":
    main()
