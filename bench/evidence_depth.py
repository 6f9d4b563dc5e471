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
    import kbagent.agent.run.policy as policy
    from bench.bench_agent import correct
    from kbagent.agent.run.decline import DECLINE
    from kbagent.agent.run.loop import Agent, AgentConfig, run_to_result
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.settings import Settings
    from tests.scripted_llm import ScriptedLLM

    policy.DEPTH = 1  # ``depth`` is the hits asked for, not a multiple of them
    settings = Settings.load(home=home)
    Ingestor(settings, kb_dir.name, embedder=load_embedder()).run(kb_dir)
    kb = KnowledgeBase(settings, kb_dir.name)
    out = {}
    for line in questions_file.read_text().splitlines():
        q = json.loads(line)
        if q["kind"] in ("unanswerable", "chit-chat"):
            continue
        llm = ScriptedLLM([lambda _m: DECLINE] * 8)
        config = AgentConfig(mode="auto", tools="full", answer_policy="model", rag_top_k=depth)
        run_to_result(Agent(llm, [kb], config), q["question"])
        prompt = llm.calls[0]["messages"][-1].content if llm.calls else ""
        out[q["id"]] = correct(q, prompt.split("\n\nBefore you answer:")[0], [])
    return out


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
