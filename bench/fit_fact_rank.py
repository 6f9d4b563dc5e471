"""Would the evidence ranking gain from the short answer a unit states? A negative result.

Ranking units by the question's words and meaning puts a setting's description
("doctest_encoding: Default encoding to use to decode text files") above the sentence
that states its value ("The default encoding is UTF-8"). This script asks whether the
score of a unit's best short-answer candidate (``short.spans``) should count in the
ranking, and with which weights, fitted on the development sets. It does move the gold
unit to the top more often (BENCHMARKS, issue 22 session 12), but with those weights in
``score_units`` the answer led with the gold fact less often: the units it promotes hold
a value of the asked kind that is not the answer (a date's day, a version note), and the
final turn already weighs each candidate span with its unit (final_turn._answer_unit).
Not taken; kept so the measurement can be repeated.

For every answerable question of each set, the harness runs as in
``bench/replay_harness.py`` (no model) and every unit gathered for the whole question
is recorded with three features: its score without the fact signal
(``score_units(..., fact=None)``), whether it holds a short answer of the kind asked
for, and that answer's score (``short.spans``). A unit is gold when it holds the
question's answer (bench_agent.correct). A listwise logistic ranker (softmax over a
question's units, the gold ones as targets, L2 0.01) is fitted on all sets but one and
scored on that one: how often the gold unit ranks first, before and after. Then the
sweep over fixed weights, on all sets, shows how flat the optimum is.

    PYTHONPATH=$PWD .venv/bin/python bench/fit_fact_rank.py --home-root HOMES \\
        --set heldout8:bench/out/heldout8/sphinx-doc --set sample:sample_kb ...

HOMES/<name> is each set's kbagent home (the KB built once, as replay_harness does);
the questions are bench/<name>/questions.jsonl (tests/data/sample_questions.jsonl for
``sample``). Development sets only: never a held-out folder before its final run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_agent import correct  # noqa: E402
from replay_harness import open_kb, run_harness  # noqa: E402

from kbagent.agent.answer.citations import Citation  # noqa: E402
from kbagent.agent.answer.evidence import gather_units, score_units  # noqa: E402
from kbagent.agent.answer.focus import AnswerType, focus_of  # noqa: E402
from kbagent.agent.answer.units import Unit  # noqa: E402
from kbagent.agent.harness import grounding as grounding_module  # noqa: E402
from kbagent.agent.harness.short import spans  # noqa: E402
from kbagent.agent.harness.span_rules import cited_common_names  # noqa: E402

Question = tuple[np.ndarray, np.ndarray]  # features (units x 3), gold (units)


def fact_scorer(question: str, citations: list[Citation]) -> Callable[[Unit], float | None] | None:
    """The score of the best short answer a unit holds for ``question`` (None: none),
    or None when the question asks for no fact."""
    focus = focus_of(question)
    if not focus.wants_fact or focus.answer_type is AnswerType.YESNO:
        return None
    common = (cited_common_names(citations) if focus.answer_type is AnswerType.NAME
              else frozenset())

    def score(unit: Unit) -> float | None:
        found = spans(focus, unit.text, common, unit.context)
        return found[0].score if found else None

    return score


def capture(questions: Path, kb_dir: Path, home: Path) -> list[Question]:
    """Each answerable question's units: (score without the fact signal, holds a short
    answer, its score), and which hold the gold answer."""
    seen: list[np.ndarray] = []
    evidence = grounding_module.Grounding.evidence

    def spy(g: grounding_module.Grounding, question: str | None = None, *args: object,
            **kwargs: object) -> object:
        if question is None and not seen:
            cites = list(g.ledger)
            ranks = {c.n: i for i, c in enumerate(cites)}
            fact = fact_scorer(g.question, cites)
            rows = []
            for s in score_units(g.question, gather_units(cites), ranks, g.vectors):
                stated = fact(s.unit) if fact is not None else None
                rows.append((s.score, float(stated is not None), stated or 0.0, s.unit.text))
            seen.append(np.array(rows, dtype=object))
        return evidence(g, question, *args, **kwargs)  # type: ignore[arg-type]

    grounding_module.Grounding.evidence = spy  # type: ignore[assignment,method-assign]
    try:
        kb = open_kb(home, kb_dir)
        out = []
        for line in questions.read_text().splitlines():
            q = json.loads(line) if line.strip() else None
            if not q or q["kind"] in ("chit-chat", "unanswerable"):
                continue
            seen.clear()
            run_harness(kb, q["question"])
            if seen and len(seen[0]):
                rows = seen[0]
                gold = np.array([correct(q, str(t), []) for t in rows[:, 3]], bool)
                out.append((rows[:, :3].astype(float), gold))
        return out
    finally:
        grounding_module.Grounding.evidence = evidence  # type: ignore[method-assign]


def fit(data: list[Question], l2: float = 0.01, iters: int = 600, rate: float = 0.5
        ) -> np.ndarray:
    """Weights of a listwise logistic ranker (raw feature units; an offset is moot)."""
    data = [(x, y) for x, y in data if y.any()]
    stacked = np.concatenate([x for x, _ in data])
    mu, sd = stacked.mean(0), stacked.std(0) + 1e-6
    w = np.zeros(stacked.shape[1])
    for _ in range(iters):
        grad = np.zeros_like(w)
        for x, y in data:
            z = (x - mu) / sd
            s = z @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            grad += z.T @ p - z[y].T @ (p[y] / p[y].sum())
        w -= rate * (grad / len(data) + l2 * w)
    return w / sd


def first_is_gold(data: list[Question], w: np.ndarray) -> int:
    return sum(bool(y[int(np.argmax(x @ w))]) for x, y in data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home-root", type=Path, required=True)
    ap.add_argument("--set", action="append", required=True, help="NAME:KB_DIR")
    args = ap.parse_args()
    sets: dict[str, list[Question]] = {}
    for spec in args.set:
        name, kb_dir = spec.split(":", 1)
        questions = (ROOT / "tests/data/sample_questions.jsonl" if name == "sample"
                     else ROOT / "bench" / name / "questions.jsonl")
        sets[name] = capture(questions, Path(kb_dir), args.home_root / name)
        print(f"{name}: {len(sets[name])} questions captured", flush=True)
    before = after = reachable = 0
    base = np.array([1.0, 0.0, 0.0])
    for name, data in sets.items():
        w = fit([q for other, d in sets.items() if other != name for q in d])
        b, a = first_is_gold(data, base), first_is_gold(data, w)
        r = sum(bool(y.any()) for _, y in data)
        print(f"{name:10} gold in a unit {r:3}  ranked first: before {b:3}  after {a:3}  "
              f"(weights fitted on the other sets: {np.round(w / w[0], 3).tolist()})")
        before, after, reachable = before + b, after + a, reachable + r
    print(f"leave-one-set-out: gold first {before} -> {after} of {reachable}")
    every = [q for d in sets.values() for q in d]
    w = fit(every)
    print(f"fitted on all sets, per unit of the old score: holds a short answer "
          f"{w[1] / w[0]:.3f}, per point of its score {w[2] / w[0]:.3f}")
    for fact_w in (0.3, 0.5, 0.7):
        row = [f"{first_is_gold(every, np.array([1.0, fact_w, span_w]))}"
               for span_w in (0.15, 0.25, 0.5)]
        print(f"fixed weights, holds {fact_w}: span 0.15 / 0.25 / 0.5 -> {' / '.join(row)}")


if __name__ == "__main__":
    main()
