"""The harness alone over a question set: no LLM cost, for development of issue 22's
answer rules (lead sentence, short answer, abstention).

Each question runs through the real agent (`auto` mode, full tools, short answers by the
harness) with a scripted model that says nothing useful, so what is measured is what the
harness writes without the model: the answer's first sentence, the short answer and
whether it refused. The KB is built once in HOME and reused. Never run it on a held-out
folder before its final run.

    PYTHONPATH=$PWD .venv/bin/python bench/replay_harness.py \
        --questions bench/heldout2/questions.jsonl --kb-dir DIR --home HOME \
        [--kb NAME] [--ids s01,s02]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_agent import correct, first_sentence  # noqa: E402

from kbagent.agent.run.loop import Agent, AgentConfig, run_to_result  # noqa: E402
from kbagent.kb.embedder import load_embedder  # noqa: E402
from kbagent.kb.ingest import Ingestor  # noqa: E402
from kbagent.kb.knowledge_base import KnowledgeBase  # noqa: E402
from kbagent.settings import Settings  # noqa: E402
from tests.scripted_llm import ScriptedLLM  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=Path, default=ROOT / "tests/data/sample_questions.jsonl")
    ap.add_argument("--kb-dir", type=Path, default=ROOT / "sample_kb")
    ap.add_argument("--home", type=Path, required=True, help="kbagent home kept between runs")
    ap.add_argument("--kb", default="", help="KB name (default: the folder's name)")
    ap.add_argument("--ids", default="", help="comma-separated question ids (default: all)")
    args = ap.parse_args()
    settings = Settings.load(home=args.home)
    name = args.kb or args.kb_dir.resolve().name.replace("_", "-")
    if not (args.home / "kbs" / name).exists():
        Ingestor(settings, name, embedder=load_embedder()).run(args.kb_dir)
    kb = KnowledgeBase(settings, name)
    ids = set(args.ids.split(",")) if args.ids else None
    questions = [json.loads(line) for line in args.questions.read_text().splitlines() if line]
    first = short = answerable = refused = abstained = unanswerable = 0
    walls: list[float] = []
    for q in questions:
        if q["kind"] == "chit-chat" or (ids and q["id"] not in ids):
            continue
        t = time.perf_counter()
        agent = Agent(ScriptedLLM(["It is in the sources."] * 20), [kb],
                      AgentConfig(mode="auto", tools="full", short_answer="harness"))
        r = run_to_result(agent, q["question"])
        walls.append(time.perf_counter() - t)
        refused_here = bool(r.abstained)
        if q["kind"] == "unanswerable":
            unanswerable += 1
            abstained += refused_here
            print(q["id"], "abstained" if refused_here else "ANSWERED", "|", r.answer[:120])
            continue
        f = correct(q, first_sentence(r.answer), [])
        s = correct(q, r.short_answer or "", [])
        answerable += 1
        first += f
        short += s
        refused += refused_here
        print(q["id"], "F" if f else "-", "S" if s else "-", "R" if refused_here else " ",
              repr(q["answer"]), "|", repr(r.short_answer), "|", r.answer[:110].replace("\n", " "))
    print(f"fact first {first}/{answerable}  short answer {short}/{answerable}  refused "
          f"{refused}  abstained {abstained}/{unanswerable}  median "
          f"{statistics.median(walls) if walls else 0:.2f} s")


if __name__ == "__main__":
    main()
