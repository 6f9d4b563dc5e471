"""Query likelihood as a sentence reranker, with the bundled model (issue 22, a negative
result kept reproducible).

For each answerable question the harness runs without the model (as
``bench/replay_harness.py``) and its ranking of units for the whole question is taken;
the ``--top`` best units are then scored by how likely the bundled SmolLM2 finds the
question after the unit ("Write a question that this passage answers. Passage: ..."),
the mean log-probability of the question's tokens (UPR, Sachan et al. 2022). Printed:
the gold unit at rank 1 by the harness, by query likelihood alone, and by the harness's
score plus ``lambda`` times the likelihood (its gap to the best unit), for a few lambdas,
and the seconds spent per unit.

    PYTHONPATH=$PWD .venv/bin/python bench/query_likelihood.py \\
        --questions bench/heldout8/questions.jsonl --kb-dir DIR --home HOME [--top 10]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_agent import correct  # noqa: E402
from replay_harness import distinct, open_kb, run_harness, spy_on_ranking  # noqa: E402

from kbagent.agent.answer.evidence import Scored  # noqa: E402
from kbagent.agent.llm.llama import bundled_model_path  # noqa: E402

LAMBDAS = (0.1, 0.3, 1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--kb-dir", type=Path, required=True)
    ap.add_argument("--home", type=Path, required=True, help="kbagent home kept between runs")
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args()
    from llama_cpp import Llama

    llm = Llama(str(bundled_model_path()), n_ctx=1024, logits_all=True, n_threads=2,
                verbose=False)

    def likelihood(passage: str, question: str) -> float:
        prompt = ("<|im_start|>user\nWrite a question that this passage answers.\nPassage: "
                  f"{passage[:600]}<|im_end|>\n<|im_start|>assistant\n")
        a = llm.tokenize(prompt.encode(), add_bos=False, special=True)
        b = llm.tokenize(question.encode(), add_bos=False, special=False)
        llm.reset()
        llm.eval(a + b)
        logits = np.asarray(llm.scores[len(a) - 1:len(a) + len(b) - 1], dtype=np.float64)
        top = logits.max(axis=1)
        log_z = top + np.log(np.exp(logits - top[:, None]).sum(axis=1))
        return float(np.mean(logits[np.arange(len(b)), b] - log_z))

    kb = open_kb(args.home, args.kb_dir)
    ranked: list[list[Scored]] = []
    spy_on_ranking(ranked)
    hits = {"harness": 0, "likelihood": 0, **{f"+{x}": 0 for x in LAMBDAS}}
    answerable = scored = 0
    seconds = 0.0
    for line in args.questions.read_text().splitlines():
        q = json.loads(line) if line.strip() else {}
        if q.get("kind") in (None, "chit-chat", "unanswerable"):
            continue
        ranked.clear()
        run_harness(kb, q["question"])
        answerable += 1
        units = distinct(ranked[0])[:args.top] if ranked else []
        if not units:
            continue
        started = time.perf_counter()
        ql = [likelihood(f"{s.unit.context}: {s.unit.text}" if s.unit.context else s.unit.text,
                         q["question"]) for s in units]
        seconds += time.perf_counter() - started
        scored += len(units)
        gold = [correct(q, s.unit.text, []) for s in units]
        hits["harness"] += gold[0]
        hits["likelihood"] += gold[int(np.argmax(ql))]
        for x in LAMBDAS:
            best = max(range(len(units)), key=lambda i: units[i].score + x * (ql[i] - max(ql)))
            hits[f"+{x}"] += gold[best]
    print(f"{answerable} answerable; gold unit at rank 1: " +
          ", ".join(f"{k} {v}" for k, v in hits.items()) +
          f"; {seconds / max(1, scored):.2f} s per unit scored ({scored})")


if __name__ == "__main__":
    main()
