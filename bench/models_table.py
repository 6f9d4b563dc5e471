"""Issue 46's table: every offline model under each answer policy over the sets of
``bench/models_matrix.sh`` (``bench/out/models_{set}_{model}.json``), scored again with
``bench_agent``'s own scorer; per set, then summed over the sets.

    .venv/bin/python bench/models_table.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from bench_agent import NOT_IN_KB, correct, fact_first  # noqa: E402

SETS = {"sample": "tests/data/sample_questions.jsonl", "proftpd": "bench/heldout11/questions.jsonl",
        "git": "bench/heldout/questions.jsonl"}
MODELS = {"bundled": "SmolLM2-135M (bundled)", "05b": "Qwen2.5-Coder-0.5B",
          "15b": "Qwen2.5-Coder-1.5B"}
UNANSWERABLE = ("chit-chat", "unanswerable")


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def results(model: str, name: str) -> list[dict] | None:
    for suffix in (".json", ".partial.json"):
        f = ROOT / f"bench/out/models_{name}_{model}{suffix}"
        if f.exists():
            return list(json.loads(f.read_text())["rows"])
    return None


def main() -> None:
    print("| model | policy | set | fact first | contains gold | unanswerable abstained | "
          "answerable refused | flagged sentences (answers with one) | p50 / p95 s |")
    print("|---|---|---|---|---|---|---|---|---|")
    totals: dict[tuple[str, str], dict[str, list]] = {}
    for model, label in MODELS.items():
        for policy in ("harness", "model"):
            for name, qfile in SETS.items():
                rows = results(model, name)
                qs = {q["id"]: q for q in map(json.loads, (ROOT / qfile).read_text().splitlines())}
                rows = [r for r in rows or [] if r["mode"] == f"auto/{policy}"]
                if not rows:
                    continue
                ans = [r for r in rows if qs[r["id"]]["kind"] not in UNANSWERABLE]
                una = [r for r in rows if qs[r["id"]]["kind"] == "unanswerable"]
                row = {
                    "fact": [bool(fact_first(qs[r["id"]], r["answer"])) for r in ans],
                    "gold": [correct(qs[r["id"]], r["answer"], r["actions"]) for r in ans],
                    "abst": [bool(NOT_IN_KB.search(r["answer"])) for r in una],
                    "refused": [bool(NOT_IN_KB.search(r["answer"].split(".")[0] + "."))
                                for r in ans],
                    "flagged": [r["flagged"] for r in rows],
                    "wall": [r["wall_s"] for r in rows],
                }
                total = totals.setdefault((model, policy), {k: [] for k in row})
                for k, v in row.items():
                    total[k] += v
                print(f"| {label} | {policy} | {name} ({len(rows)}) | {line(row)}")
    print()
    print("| model | policy | fact first | contains gold | unanswerable abstained | "
          "answerable refused | flagged sentences (answers with one) | p50 / p95 s |")
    print("|---|---|---|---|---|---|---|---|")
    for (model, policy), total in totals.items():
        print(f"| {MODELS[model]} | {policy} | {line(total, share=True)}")


def line(row: dict[str, list], share: bool = False) -> str:
    def frac(xs: list) -> str:
        return f"{sum(xs)}/{len(xs)}" + (f" ({100 * sum(xs) / len(xs):.0f}%)"
                                          if share and xs else "")
    flagged = row["flagged"]
    return (f"{frac(row['fact'])} | {frac(row['gold'])} | {sum(row['abst'])}/{len(row['abst'])}"
            f" | {sum(row['refused'])} | {sum(flagged)} ({sum(1 for f in flagged if f)}) | "
            f"{statistics.median(row['wall']):.1f} / {pct(row['wall'], 95):.1f} |")


if __name__ == "__main__":
    main()
