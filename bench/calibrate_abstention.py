"""Calibrate the grounded harness's abstention on the sample questions (no LLM).

For every non-chit-chat question of tests/data/sample_questions.jsonl the harness
searches the question over sample_kb/ (rag mode, a scripted model that is never
reached for this decision) and records what the abstention decision sees: the best
evidence unit's coverage (scaled for long questions, as the harness does) and the
*reason* rules of ``Grounding.silent_reason`` (a question word no readable chunk
contains, a year nothing gathered mentions). It then prints, per coverage threshold,
how many answerable and unanswerable questions would be abstained on, with and
without the reasons. Decomposed questions (parts, arithmetic) never abstain as a
whole and are listed apart.

    .venv/bin/python bench/calibrate_abstention.py     # ~1 min: ingest + 44 searches
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def measure() -> list[dict[str, Any]]:
    from kbagent.agent.answer.evidence import question_terms
    from kbagent.agent.harness.grounding import LONG_QUESTION_TERMS, Grounding
    from kbagent.agent.run.loop import Agent, AgentConfig, run_to_result
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.settings import Settings
    from tests.scripted_llm import ScriptedLLM

    settings = Settings.load(home=Path(tempfile.mkdtemp(prefix="kbagent-calib-")))
    Ingestor(settings, "sample", embedder=load_embedder()).run(ROOT / "sample_kb")
    kb = KnowledgeBase(settings, "sample")
    questions = [json.loads(line) for line in
                 (ROOT / "tests/data/sample_questions.jsonl").read_text().splitlines()]
    rows = []
    decide = Grounding.silent_reason
    for q in questions:
        if q["kind"] == "chit-chat":
            continue
        seen: dict[str, Any] = {}

        def spy(g: Grounding, evidence: list, seen: dict[str, Any] = seen) -> str | None:
            seen["g"], seen["evidence"] = g, evidence
            return decide(g, evidence)

        Grounding.silent_reason = spy  # type: ignore[method-assign]
        try:
            run_to_result(Agent(ScriptedLLM(["-"] * 3), [kb],
                                AgentConfig(mode="rag", tools="full")), q["question"])
        finally:
            Grounding.silent_reason = decide  # type: ignore[method-assign]
        if "g" not in seen:
            rows.append({"id": q["id"], "kind": q["kind"], "decomposed": True})
            continue
        g, evidence = seen["g"], seen["evidence"]
        threshold, g.threshold = g.threshold, 0.0
        reason = decide(g, evidence)  # the reasons alone
        g.threshold = threshold
        terms = len(question_terms(q["question"]))
        coverage = evidence[0].coverage if evidence else 0.0
        rows.append({"id": q["id"], "kind": q["kind"], "decomposed": False,
                     "coverage": round(coverage, 3),
                     "scaled": round(coverage / min(1.0, LONG_QUESTION_TERMS / max(1, terms)), 3),
                     "reason": reason})
    return rows


def report(rows: list[dict[str, Any]]) -> str:
    scored = [r for r in rows if not r["decomposed"]]
    ans = [r for r in scored if r["kind"] != "unanswerable"]
    unans = [r for r in scored if r["kind"] == "unanswerable"]
    out = [f"{len(rows) - len(scored)} decomposed (never abstain as a whole), "
           f"{len(ans)} answerable and {len(unans)} unanswerable scored", "",
           "| coverage threshold | coverage only: answerable / unanswerable abstained "
           "| with the reasons |", "|---|---|---|"]
    for th in (0.0, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6):
        def count(rs: list[dict[str, Any]], reasons: bool, th: float = th) -> int:
            return sum(1 for r in rs if r["scaled"] < th or (reasons and r["reason"] is not None))
        out.append(f"| {th:.2f} | {count(ans, False)} / {count(unans, False)} "
                   f"| {count(ans, True)} / {count(unans, True)} |")
    out += ["", "per question (id, kind, coverage, scaled, reason):"]
    out += [f"  {r['id']} {r['kind']:<12} {r['coverage']:.2f} {r['scaled']:.2f} {r['reason']}"
            for r in scored]
    return "\n".join(out)


def main() -> None:
    rows = measure()
    (ROOT / "bench/out").mkdir(parents=True, exist_ok=True)
    (ROOT / "bench/out/abstention_calibration.json").write_text(json.dumps(rows, indent=1))
    print(report(rows))


if __name__ == "__main__":
    main()
