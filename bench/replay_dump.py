"""Issue 44's byte-identity check of the harness: every development question's answer
as the harness writes it (``bench/replay_harness.py``'s ``run_harness``: the real agent,
a scripted model that says nothing useful), from the code of TREE (a checkout, e.g. a
``git worktree`` of an older commit), kept in a JSON file; ``--compare`` lists the
questions whose answer, short answer or abstention differ between two such files.
The KBs are the kept homes ``bench/out/devhomes/heldout*`` (``bench_agent.py --home``).

    .venv/bin/python bench/replay_dump.py /tmp/wt-old bench/out/replay_old.json
    .venv/bin/python bench/replay_dump.py . bench/out/replay_new.json
    .venv/bin/python bench/replay_dump.py --compare bench/out/replay_old.json \
        bench/out/replay_new.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETS = ["heldout"] + [f"heldout{i}" for i in range(2, 14)]


def dump(tree: Path, out: Path) -> None:
    sys.path.insert(0, str(tree))
    sys.path.insert(0, str(tree / "bench"))
    import replay_harness

    import kbagent
    if not Path(kbagent.__file__).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"kbagent imported from {kbagent.__file__}, not from {tree}")
    answers = {}
    for name in SETS:
        kb_dir = next((ROOT / "bench/out" / name).iterdir())
        kb = replay_harness.open_kb(ROOT / "bench/out/devhomes" / name, kb_dir)
        for line in (ROOT / "bench" / name / "questions.jsonl").read_text().splitlines():
            q = json.loads(line)
            if q["kind"] == "chit-chat":
                continue
            r = replay_harness.run_harness(kb, q["question"])
            answers[f"{name}/{q['id']}"] = [r.answer, r.short_answer, bool(r.abstained)]
        print(name, flush=True)
    out.write_text(json.dumps(answers, indent=1))


def compare(a: Path, b: Path) -> None:
    old, new = json.loads(a.read_text()), json.loads(b.read_text())
    differ = [k for k in old if old[k] != new.get(k)]
    print(f"{len(old) - len(differ)} of {len(old)} byte-identical")
    for k in differ:
        print(f"{k}: abstained {old[k][2]} -> {new.get(k, [0, 0, None])[2]}\n"
              f"  before: {old[k][0][:160]!r}\n  after:  {new.get(k, [''])[0][:160]!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs=2, type=Path, help="TREE OUT.json, or with --compare A B")
    ap.add_argument("--compare", action="store_true")
    args = ap.parse_args()
    if args.compare:
        compare(*args.paths)
    else:
        dump(args.paths[0], args.paths[1])


if __name__ == "__main__":
    main()
