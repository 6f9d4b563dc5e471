"""HotpotQA in ``--mode auto`` without a model: what the routing, the harness's
searches and its answer (quotes, short answer) reach on their own.

For questions START+1..END of a HotpotQA (IRCoT) set over the KB ``kbagent eval qa``
builds (``eval-hotpotqa`` under ``$KBAGENT_HOME``), run the real agent in auto mode
with grounded answers (the harness's short answer, no model pick) and a scripted LLM
that writes nothing (every model turn is empty, so only what the harness states
counts), and report answer-contains-gold, the gold in the first quote, EM/F1 of the
short answer, supporting-paragraph recall and the median time. Run it from the tree to
measure (it imports that tree's ``kbagent``); it measures retrieval and the harness's
answer, not the model: ``kbagent eval qa`` measures the whole default mode.

    KBAGENT_HOME=... PYTHONPATH=$PWD python bench/bench_hops.py 0 100 [-v]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kbagent.agent.run.loop import Agent, AgentConfig, run_to_result
from kbagent.evaluation.metrics import contains_gold, exact_match, token_f1
from kbagent.evaluation.qa_data import load_qa
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.settings import Settings
from tests.scripted_llm import ScriptedLLM

try:  # the tree before issue 22 scored the whole answer
    from kbagent.evaluation.qa import short_text
except ImportError:  # pragma: no cover
    def short_text(rec: dict[str, Any]) -> str:
        return str(rec.get("answer", ""))

DATA = Path(__file__).resolve().parent.parent.parent / "shared/data/hotpotqa_ircot500"


def main() -> None:
    lo, hi = int(sys.argv[1]), int(sys.argv[2])
    ds = load_qa(DATA, "hotpotqa", hi)
    kb = KnowledgeBase(Settings.load(), "eval-hotpotqa")
    n = contains = first = 0
    recall = em = f1 = 0.0
    lat = []
    for i, it in enumerate(ds.items[lo:hi], lo + 1):
        llm = ScriptedLLM([lambda m: "" for _ in range(20)])
        started = time.perf_counter()
        r = run_to_result(Agent(llm, [kb], AgentConfig()), it.question)
        lat.append(time.perf_counter() - started)
        got = {c.path for c in r.all_references.chunks()}
        gold = set(it.gold_docs)
        recall += len(gold & got) / len(gold)
        hit = contains_gold(r.answer, it.golds)
        contains += hit
        first += contains_gold(r.answer.split("\u201d [")[0], it.golds)
        short = short_text(r.to_json())
        em += exact_match(short, it.golds)
        f1 += token_f1(short, it.golds)
        n += 1
        if "-v" in sys.argv:
            print(i, r.mode, int(hit), "|", it.golds[0], "|", getattr(r, "short_answer", ""),
                  "|", r.answer[:160].replace("\n", " "))
    print(json.dumps({"questions": f"{lo + 1}-{hi}", "contains": contains,
                      "gold_in_first_quote": first, "recall": round(recall / n, 3),
                      "em": round(em / n, 3), "f1": round(f1 / n, 3),
                      "median_s": round(statistics.median(lat), 3)}))


if __name__ == "__main__":
    main()
