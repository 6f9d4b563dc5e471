"""The harness alone over a question set: no LLM cost, for development of issue 22's
answer rules (lead sentence, short answer, abstention).

Each question runs through the real agent (`auto` mode, full tools, short answers by the
harness) with a scripted model that says nothing useful, so what is measured is what the
harness writes without the model: the answer's first sentence, the short answer and
whether it refused. The KB is built once in HOME and reused. Never run it on a held-out
folder before its final run.

    PYTHONPATH=$PWD .venv/bin/python bench/replay_harness.py \
        --questions bench/heldout2/questions.jsonl --kb-dir DIR --home HOME \
        [--kb NAME] [--ids s01,s02] [--ranks]

``--ranks`` also prints, per answerable question, the rank of the first unit holding the
gold answer in the harness's ranking for the whole question (distinct units, best
first), and sums them: gold at rank 1, within 3, within 10. The gap between rank 1 and
"within 10" is what better ranking alone could win; "within 10" is its ceiling (what is
not in the ten best units is a retrieval or a unit-cutting miss).
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

from kbagent.agent.answer.evidence import Scored, gather_units, same_text, score_units  # noqa: E402
from kbagent.agent.events import AgentResult  # noqa: E402
from kbagent.agent.harness import grounding as grounding_module  # noqa: E402
from kbagent.agent.llm.llama import LlamaCppLLM  # noqa: E402
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
    ap.add_argument("--ranks", action="store_true",
                    help="where the first gold-holding unit ranks (1, within 3, within 10)")
    ap.add_argument("--judge", type=Path, default=None, metavar="GGUF",
                    help="this model judges the best units (setting answer_judge = true); "
                         "everything else the model would say stays scripted")
    args = ap.parse_args()
    judge_llm = LlamaCppLLM(args.judge) if args.judge else None
    ranked: list[list[Scored]] = []  # the whole question's ranking of the current run
    if args.ranks:
        spy_on_ranking(ranked)
    kb = open_kb(args.home, args.kb_dir, args.kb)
    ids = set(args.ids.split(",")) if args.ids else None
    questions = [json.loads(line) for line in args.questions.read_text().splitlines() if line]
    first = short = answerable = refused = abstained = unanswerable = 0
    at_rank = [0, 0, 0]  # the gold unit at rank 1, within 3, within 10
    walls: list[float] = []
    for q in questions:
        if q["kind"] == "chit-chat" or (ids and q["id"] not in ids):
            continue
        ranked.clear()
        t = time.perf_counter()
        r = run_harness(kb, q["question"], judge_llm)
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
        if args.ranks:
            rank = next((i + 1 for i, x in enumerate(distinct(ranked[0])[:10] if ranked else [])
                         if correct(q, x.unit.text, [])), None)
            for j, limit in enumerate((1, 3, 10)):
                at_rank[j] += rank is not None and rank <= limit
            print(q["id"], "gold unit at rank", rank or "-")
        print(q["id"], "F" if f else "-", "S" if s else "-", "R" if refused_here else " ",
              repr(q["answer"]), "|", repr(r.short_answer), "|", r.answer[:110].replace("\n", " "))
    print(f"fact first {first}/{answerable}  short answer {short}/{answerable}  refused "
          f"{refused}  abstained {abstained}/{unanswerable}  median "
          f"{statistics.median(walls) if walls else 0:.2f} s")
    if args.ranks:
        print(f"gold unit at rank 1 {at_rank[0]}/{answerable}  within 3 {at_rank[1]}  "
              f"within 10 {at_rank[2]}")


def open_kb(home: Path, kb_dir: Path, kb: str = "") -> KnowledgeBase:
    """The KB of ``kb_dir`` in ``home`` (named ``kb``, default the folder's name), ingested
    the first time."""
    settings = Settings.load(home=home)
    name = kb or kb_dir.resolve().name.replace("_", "-")
    if not (home / "kbs" / name).exists():
        Ingestor(settings, name, embedder=load_embedder()).run(kb_dir)
    return KnowledgeBase(settings, name)


def run_harness(kb: KnowledgeBase, question: str, judge: LlamaCppLLM | None = None
                ) -> AgentResult:
    """``question`` through the real agent (auto mode, full tools, the harness's short
    answers) with a scripted model that says nothing useful; with ``judge``, that model
    judges the best units (its only say in the run)."""
    llm = ScriptedLLM(["It is in the sources."] * 20)
    if judge is not None:
        llm.option_logprobs = judge.option_logprobs  # type: ignore[method-assign]
    agent = Agent(llm, [kb], AgentConfig(mode="auto", tools="full", short_answer="harness",
                                         answer_judge=judge is not None))
    return run_to_result(agent, question)


def spy_on_ranking(ranked: list[list[Scored]]) -> None:
    """From now on, record into ``ranked`` (cleared by the caller before each run) the
    units ranked for the whole question: the final turn's first ``Grounding.evidence()``
    call, every unit gathered, best first."""
    evidence = grounding_module.Grounding.evidence

    def spy(g: grounding_module.Grounding, question: str | None = None, *args: object,
            **kwargs: object) -> object:
        if question is None and not ranked:
            cites = list(g.ledger)
            ranks = {c.n: i for i, c in enumerate(cites)}
            ranked.append(score_units(g.question, gather_units(cites), ranks, g.vectors))
        return evidence(g, question, *args, **kwargs)  # type: ignore[arg-type]

    grounding_module.Grounding.evidence = spy  # type: ignore[assignment,method-assign]


def distinct(ranked: list[Scored]) -> list[Scored]:
    """``ranked`` without the later repeats of a unit's words (a line two chunks share)."""
    seen: set[str] = set()
    out = []
    for s in ranked:
        key = same_text(s.unit.text)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


if __name__ == "__main__":
    main()
