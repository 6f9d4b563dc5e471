"""Did a change alter what the agent does? Compare two result files of
``bench/bench_agent.py`` question by question (issue 21: the refactor must not
change answers or steps).

    .venv/bin/python bench/compare_runs.py BEFORE.json AFTER.json

Compared per question and mode: the answer text word for word, the status, the
route ``auto`` chose, the number of steps, the tools called in order, the repairs
the grounding made, the references, the citations and the verdict. Timings are
reported side by side (median and ratio), never compared for equality. Exit 1 when
any question differs.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

SAME = ("answer", "status", "routed", "steps", "actions", "repairs", "refs", "cited",
        "sentences", "supported_sentences", "abstained", "correct")


def rows(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {(r["id"], r["mode"]): r for r in data["rows"]}


def compare(before: dict[tuple[str, str], dict[str, Any]],
            after: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    """One line per difference; empty when both runs did the same thing."""
    out = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if a is None or b is None:
            out.append(f"{key[0]} {key[1]}: only in {'after' if a is None else 'before'}")
            continue
        for field in SAME:
            if a.get(field) != b.get(field):
                out.append(f"{key[0]} {key[1]} {field}: {a.get(field)!r} -> {b.get(field)!r}")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    before, after = rows(Path(argv[0])), rows(Path(argv[1]))
    diffs = compare(before, after)
    same = sum(1 for k in before if k in after
               and all(before[k].get(f) == after[k].get(f) for f in SAME))
    print(f"questions x modes: {len(before)} before, {len(after)} after; "
          f"identical in every compared field: {same}")
    for mode in sorted({k[1] for k in before}):
        wa = [r["wall_s"] for k, r in before.items() if k[1] == mode]
        wb = [r["wall_s"] for k, r in after.items() if k[1] == mode]
        if wa and wb:
            ma, mb = statistics.median(wa), statistics.median(wb)
            ca = sum(r["correct"] for k, r in before.items() if k[1] == mode)
            cb = sum(r["correct"] for k, r in after.items() if k[1] == mode)
            print(f"{mode}: median wall {ma:.2f} s before, {mb:.2f} s after "
                  f"({mb / ma:.2f}x); correct {ca} -> {cb}")
    for line in diffs:
        print(line)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
