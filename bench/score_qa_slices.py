"""Score saved ``kbagent eval qa --save-answers`` files side by side, on slices of a
question set: the first 100 HotpotQA questions and questions 101-200 (not looked at
while the multi-hop rules were written), each file scored with the same metrics
(:mod:`kbagent.evaluation.qa`: EM/F1 on the short answer, contains-gold on the
whole answer, supporting-paragraph recall, latency). Prints one JSON line per
(file, slice), then the ratio of median latencies to the first file's.

    python bench/score_qa_slices.py ../shared/data/hotpotqa_ircot500 \\
        before=bench/out/base200.jsonl after=bench/out/mine200.jsonl --slices 0:100,100:200
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from kbagent.evaluation.qa import score_answers
from kbagent.evaluation.qa_data import load_qa
from kbagent.jsonl import numbered_jsonl


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("questions", type=Path)
    ap.add_argument("answers", nargs="+", help="LABEL=FILE.jsonl (saved answers)")
    ap.add_argument("--format", default="hotpotqa")
    ap.add_argument("--slices", default="0:100,100:200", help="start:end, comma-separated")
    args = ap.parse_args()
    slices = [tuple(int(x) for x in s.split(":")) for s in args.slices.split(",")]
    full = load_qa(args.questions, args.format, max(end for _, end in slices))
    base: dict[tuple[int, int], float] = {}
    for spec in args.answers:
        label, _, path = spec.partition("=")
        records = [row for _, row in numbered_jsonl(Path(path))]
        for start, end in slices:
            full_items = full.items
            full.items = full_items[start:end]
            report = score_answers(full, "", records)
            full.items = full_items
            m = report.modes[0]
            routes = Counter(r.routed for r in report.rows)
            out = {"label": label, "questions": f"{start + 1}-{end}", "answered": sum(
                r.error is None for r in report.rows),
                "contains": round(m.contains * m.questions), "em": m.em, "f1": m.f1,
                "short_answers": m.short_answers, "answer_f1": m.answer_f1,
                "recall": m.support_recall, "both": m.all_support,
                "abstained": m.false_abstentions, "steps": m.steps,
                "queries": m.distinct_queries, "median_s": m.latency_median_s,
                "p95_s": m.latency_p95_s, "routes": dict(routes), "errors": m.errors}
            if (start, end) not in base:
                base[(start, end)] = m.latency_median_s
            elif base[(start, end)]:
                out["median_ratio"] = round(m.latency_median_s / base[(start, end)], 2)
            print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
