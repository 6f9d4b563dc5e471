"""Follow-up queries without a model: what the harness's proposals alone retrieve.

For the first N questions of a HotpotQA (IRCoT) set over the KB that ``kbagent eval
qa`` builds (``eval-hotpotqa`` under ``$KBAGENT_HOME``; run that command once first),
search the question (top 5, as the harness's first step does), then each follow-up
query :func:`kbagent.agent.run.hops.followups` proposes from the hits so far (top 5,
up to ``--followups``), and report supporting-paragraph recall before and after.
It measures the proposals, not the model: the agent's own numbers come from
``kbagent eval qa --compare-modes agent,rag``.

    KBAGENT_HOME=/tmp/h13hop-home python bench/bench_followup.py \\
        ../shared/data/hotpotqa_ircot500 --max-questions 60 [--show]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from kbagent.agent.run.hops import Hit, followups, title_of
from kbagent.evaluation.qa_data import load_qa
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.search import HybridSearcher
from kbagent.settings import Settings


def search(searcher: HybridSearcher, query: str, k: int, hits: list[Hit], paths: list[str],
           searched: list[str]) -> None:
    """Search ``query``; new documents join ``hits`` and ``paths``."""
    searched.append(query)
    for h in searcher.search(query, k=k).hits:
        if h.path not in paths:
            paths.append(h.path)
            hits.append(Hit(title_of(h.path, h.heading), h.text))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("questions", type=Path)
    ap.add_argument("--max-questions", type=int, default=60)
    ap.add_argument("--skip", type=int, default=0, help="start after this many questions "
                    "(a check on questions the heuristics were not tuned on)")
    ap.add_argument("--kb", default="eval-hotpotqa")
    ap.add_argument("--followups", type=int, default=2, help="follow-up searches at most")
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--show", action="store_true", help="print each question's queries")
    args = ap.parse_args()
    ds = load_qa(args.questions, "hotpotqa", args.skip + args.max_questions)
    ds.items = ds.items[args.skip:]
    searcher = HybridSearcher([KnowledgeBase(Settings.load(), args.kb)])
    before = after = both_before = both_after = 0.0
    queries = 0
    started = time.perf_counter()
    for item in ds.items:
        gold = set(item.gold_docs)
        hits: list[Hit] = []
        paths: list[str] = []
        searched: list[str] = []
        search(searcher, item.question, args.top_k, hits, paths, searched)
        first = gold & set(paths)
        for _ in range(args.followups):
            proposed = followups(item.question, hits, searched[1:])
            if not proposed:
                break
            search(searcher, proposed[0], args.top_k, hits, paths, searched)
        found = gold & set(paths)
        queries += len(searched)
        before += len(first) / len(gold)
        after += len(found) / len(gold)
        both_before += first == gold
        both_after += found == gold
        if args.show:
            print(json.dumps({"q": item.question, "queries": searched[1:],
                              "missing_before": sorted(gold - first),
                              "missing_after": sorted(gold - found)}, ensure_ascii=False))
    n = len(ds.items)
    print(json.dumps({"questions": n, "recall_question_only": round(before / n, 3),
                      "recall_with_followups": round(after / n, 3),
                      "both_question_only": int(both_before), "both_with_followups":
                      int(both_after), "queries_per_question": round(queries / n, 2),
                      "seconds": round(time.perf_counter() - started, 1)}))


if __name__ == "__main__":
    main()
