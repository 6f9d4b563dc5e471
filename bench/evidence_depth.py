"""How often the model policy's compose prompt holds the gold answer, by retrieval depth
(issue 44): every answerable question of the given sets is run through the model policy
with a stand-in model that declines at once, so each run is the retrieval, the unit
ranking and the prompt; the prompt (the sources as shown, cut around their best passage,
and the best passages) is searched for the gold answer as ``bench_agent.py`` matches it.
No model runs. The deeper search gives the ranking more chunks to choose the six shown
from (six at most, as before, which is one more than five hits could give). The
figures in BENCHMARKS.md were taken before the model policy's follow-up searches for
two-hop questions (``run/gather.py``).

    .venv/bin/python bench/evidence_depth.py --depths 5,10,20 --set NAME=QUESTIONS=KB_DIR=HOME ...
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def gold_shown(questions_file: Path, kb_dir: Path, home: Path, depth: int) -> dict[str, bool]:
    """Per answerable question: is the gold in the first prompt the model is shown (the
    runs of :func:`bench.decline_census.census`, ``depth`` hits a search)?"""
    import kbagent.agent.run.policy as policy
    from bench.bench_agent import correct
    from bench.decline_census import census

    policy.DEPTH = 1  # ``depth`` is the hits asked for, not a multiple of them
    gold = {q["id"]: q for q in map(json.loads, questions_file.read_text().splitlines())}
    return {r["id"]: correct(gold[r["id"]], r["first"][-1][1].split("\n\nBefore you answer:")[0]
                             if r["first"] else "", [])
            for r in census(questions_file, kb_dir, home, depth)
            if r["kind"] not in ("unanswerable", "chit-chat")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", required=True,
                    help="NAME=QUESTIONS=KB_DIR=HOME (HOME: a kept bench_agent --home)")
    ap.add_argument("--depths", default="5,10,20")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/out/evidence_depth.json")
    args = ap.parse_args()
    depths = [int(d) for d in args.depths.split(",")]
    result: dict[str, dict[str, dict[str, bool]]] = {}
    for spec in args.set:
        name, questions, kb_dir, home = spec.split("=")
        result[name] = {}
        for d in depths:
            started = time.perf_counter()
            shown = gold_shown(Path(questions), Path(kb_dir), Path(home), d)
            result[name][str(d)] = shown
            print(f"{name:>10} depth {d:>2}: gold shown {sum(shown.values())}/{len(shown)} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
    args.out.write_text(json.dumps(result, indent=1))
    for d in depths:
        shown = [v for sets in result.values() for v in sets[str(d)].values()]
        print(f"all, depth {d}: gold shown {sum(shown)}/{len(shown)}")


if __name__ == "__main__":
    main()
