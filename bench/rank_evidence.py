"""Evidence ranking and abstention on a question set, without the LLM (issue 22).

For every question the grounded harness searches the sample KB (rag mode, a scripted
model the decision never depends on) and this records what the final turn decides
before the model writes: the unit the answer leads with (the best-ranked evidence),
whether it holds the gold answer, and whether the harness abstains (and why). With
``--features`` the best three units are printed with what ranked them (coverage,
embedder similarity, answer-kind match).

It runs on any tree with ``Grounding.silent_reason`` (issue 13 on), so the same command
compares two trees side by side (the other one named by ``KBAGENT_TREE=/its/root``):

    PYTHONPATH=$PWD .venv/bin/python bench/rank_evidence.py \\
        [--questions tests/data/sample_questions.jsonl,bench/paraphrase_questions.jsonl] \\
        [--features] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# the tree to measure (its kbagent, sample_kb and bench): this file's, or another one's
# given by KBAGENT_TREE (the baseline, run with this script)
ROOT = Path(os.environ.get("KBAGENT_TREE", "") or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT))

from bench.bench_agent import correct  # noqa: E402

DEFAULT_SETS = "tests/data/sample_questions.jsonl,bench/paraphrase_questions.jsonl"


def measure(paths: list[Path], features: bool) -> list[dict[str, Any]]:
    from kbagent.agent.harness.grounding import Grounding
    from kbagent.agent.run.loop import Agent, AgentConfig, run_to_result
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.settings import Settings
    from tests.scripted_llm import ScriptedLLM

    settings = Settings.load(home=Path(tempfile.mkdtemp(prefix="kbagent-rank-")))
    Ingestor(settings, "sample", embedder=load_embedder()).run(ROOT / "sample_kb")
    kb = KnowledgeBase(settings, "sample")
    decide = Grounding.silent_reason
    rows = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            q = json.loads(line)
            if q["kind"] == "chit-chat":
                continue
            seen: dict[str, Any] = {}

            def spy(g: Grounding, evidence: list[Any], seen: dict[str, Any] = seen
                    ) -> str | None:
                seen["evidence"] = evidence
                vectors = getattr(g, "vectors", None)
                if vectors is not None:
                    seen["embedded"] = (vectors.calls, vectors.texts, vectors.seconds)
                seen["reason"] = decide(g, evidence)
                return seen["reason"]  # type: ignore[no-any-return]

            Grounding.silent_reason = spy  # type: ignore[method-assign]
            started = time.perf_counter()
            try:
                result = run_to_result(Agent(ScriptedLLM(["-"] * 3), [kb],
                                             AgentConfig(mode="rag", tools="full")),
                                       q["question"])
            finally:
                Grounding.silent_reason = decide  # type: ignore[method-assign]
            row: dict[str, Any] = {"id": q["id"], "kind": q["kind"],
                                   "seconds": round(time.perf_counter() - started, 3)}
            if "evidence" not in seen:
                row["decomposed"] = True
                row["abstained"] = bool(result.abstained)
                rows.append(row)
                continue
            evidence = seen["evidence"]
            lead = evidence[0].unit.text if evidence else ""
            row.update(decomposed=False, abstained=seen["reason"] is not None,
                       reason=seen["reason"], lead=lead[:200], embedded=seen.get("embedded"),
                       lead_holds_gold=(correct(q, lead, []) if q["kind"] != "unanswerable"
                                        else None))
            if features:
                row["top"] = [{"text": s.unit.text[:120], "score": round(s.score, 3),
                               "coverage": round(s.coverage, 3),
                               "similarity": round(getattr(s, "similarity", 0.0), 3),
                               "typed": getattr(s, "typed", None),
                               "present": round(getattr(s, "present", 0.0), 3),
                               "absent": round(getattr(s, "absent", 0.0), 3),
                               "kind": str(getattr(s.unit, "kind", ""))}
                              for s in evidence[:3]]
            rows.append(row)
    return rows


def report(rows: list[dict[str, Any]]) -> str:
    out = []
    for r in rows:
        if r.get("decomposed"):
            out.append(f"{r['id']:4} {r['kind']:12} decomposed abstained={r['abstained']}")
            continue
        mark = ("ABSTAIN " + repr(r["reason"]) if r["abstained"] else
                ("gold" if r["lead_holds_gold"] else ("-" if r["lead_holds_gold"] is None
                                                      else "MISS")))
        out.append(f"{r['id']:4} {r['kind']:12} {mark:40} {r['lead'][:90]!r}")
        for t in r.get("top", []):
            out.append(f"       {t['score']:.2f} cov={t['coverage']:.2f} sim={t['similarity']:.2f}"
                       f" pres={t['present']:.2f} abs={t['absent']:.2f}"
                       f" typed={t['typed']} {t['kind']:10} {t['text'][:70]!r}")
    for prefix in sorted({r["id"][0] for r in rows}):
        mine = [r for r in rows if r["id"][0] == prefix]
        ans = [r for r in mine if r["kind"] != "unanswerable" and not r.get("decomposed")]
        unans = [r for r in mine if r["kind"] == "unanswerable"]
        gold = sum(1 for r in ans if r["lead_holds_gold"] and not r["abstained"])
        refused = sum(1 for r in ans if r["abstained"])
        out.append(f"[{prefix}] answerable (not decomposed) {len(ans)}: lead holds gold {gold}, "
                   f"refused {refused}; unanswerable {len(unans)}: abstained "
                   f"{sum(1 for r in unans if r['abstained'])}")
    seconds = sorted(r["seconds"] for r in rows)
    out.append(f"median seconds per question (rag, scripted model): "
               f"{seconds[len(seconds) // 2]:.3f}")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", default=DEFAULT_SETS)
    ap.add_argument("--features", action="store_true")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    here = Path(__file__).resolve().parent.parent  # question sets are read from this tree
    rows = measure([here / p for p in args.questions.split(",")], args.features)
    print(report(rows))
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
