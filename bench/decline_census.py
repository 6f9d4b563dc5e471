"""Which questions the model policy asks to choose between answering and declining
(issue 44, ``kbagent/agent/run/decline.py``): the harness's test doubts the evidence of
the first retrieval. No model runs: a stand-in that declines at once makes each run a
retrieval and the test, so every question of every development set is counted in
minutes. Its lists are the questions the change can touch (every other prompt is
unchanged), for a model run on those alone.

    .venv/bin/python bench/decline_census.py --set heldout=bench/heldout/questions.jsonl=\
bench/out/heldout/git-doc=bench/out/devhomes/heldout [--set ...] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def census(questions_file: Path, kb_dir: Path, home: Path) -> list[dict]:
    from kbagent.agent.run.decline import ASKED, DECLINE
    from kbagent.agent.run.loop import Agent, AgentConfig, run_to_result
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.settings import Settings
    from tests.scripted_llm import ScriptedLLM

    settings = Settings.load(home=home)
    Ingestor(settings, kb_dir.name, embedder=load_embedder()).run(kb_dir)
    kb = KnowledgeBase(settings, kb_dir.name)
    rows = []
    for line in questions_file.read_text().splitlines():
        q = json.loads(line)
        llm = ScriptedLLM([lambda _m: DECLINE] * 8)  # declines, or "answers" with the word
        config = AgentConfig(mode="auto", tools="full", answer_policy="model")
        result = run_to_result(Agent(llm, [kb], config), q["question"])
        asked = [s.thought for s in result.steps if s.thought.startswith(ASKED)]
        rows.append({"id": q["id"], "kind": q["kind"], "asked": bool(asked),
                     "reason": asked[0][len(ASKED):].split(". Answer, or")[0].strip()
                     if asked else None})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", required=True,
                    help="NAME=QUESTIONS=KB_DIR=HOME (HOME: a kept bench_agent --home)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/out/decline_census.json")
    args = ap.parse_args()
    out: dict[str, list[dict]] = {}
    for spec in args.set:
        name, questions, kb_dir, home = spec.split("=")
        rows = out[name] = census(Path(questions), Path(kb_dir), Path(home))
        un = [r for r in rows if r["kind"] == "unanswerable"]
        ans = [r for r in rows if r["kind"] != "unanswerable"]
        print(f"{name:>10}: asked for {sum(r['asked'] for r in un)}/{len(un)} unanswerable, "
              f"{sum(r['asked'] for r in ans)}/{len(ans)} answerable "
              f"({', '.join(r['id'] for r in ans if r['asked'])})", flush=True)
    args.out.write_text(json.dumps(out, indent=1))
    total = [r for rows in out.values() for r in rows]
    un = [r for r in total if r["kind"] == "unanswerable"]
    ans = [r for r in total if r["kind"] != "unanswerable"]
    print(f"all: asked for {sum(r['asked'] for r in un)}/{len(un)} unanswerable, "
          f"{sum(r['asked'] for r in ans)}/{len(ans)} answerable")


if __name__ == "__main__":
    main()
