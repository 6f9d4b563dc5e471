"""Check bench/heldout/questions.jsonl against the held-out folder, without any model.

For every question: each gold path exists in the folder; each evidence line (other than
"absent: X" lines) appears, whitespace-normalised, in the text kbagent extracts from at
least one gold path; every gold path holds at least one evidence line; a factoid or
composite answer appears in its evidence; an unanswerable question's "absent: X" terms
appear in no file of the folder (case-insensitive). Exits non-zero on the first
problem list.

    .venv/bin/python bench/heldout/verify.py [FOLDER]   (default bench/out/heldout/git-doc)
"""

from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

from kbagent.kb.extract import extract  # noqa: E402

QUESTIONS = Path(__file__).resolve().parent / "questions.jsonl"


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def folder_texts(folder: Path) -> dict[str, str]:
    """Relative path -> whitespace-normalised text as kbagent extracts it."""
    texts = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            rel = path.relative_to(folder).as_posix()
            doc = extract(rel, path.read_bytes())
            texts[rel] = normalise("\n".join(line.text for line in doc.lines))
    return texts


def problems(questions: list[dict], texts: dict[str, str]) -> list[str]:
    out = []
    for q in questions:
        qid, evidence = q["id"], q.get("evidence", [])
        absent = [e.removeprefix("absent: ") for e in evidence if e.startswith("absent: ")]
        found = [normalise(e) for e in evidence if not e.startswith("absent: ")]
        for path in q["gold_paths"]:
            if path not in texts:
                out.append(f"{qid}: gold path {path} is not in the folder")
            elif not any(e in texts[path] for e in found):
                out.append(f"{qid}: gold path {path} holds none of the evidence lines")
        if q["kind"] in ("factoid", "composite", "calculation"):
            for e in found:
                if not any(e in texts.get(p, "") for p in q["gold_paths"]):
                    out.append(f"{qid}: evidence not in any gold path: {e[:80]!r}")
        if q["kind"] in ("factoid", "composite") and not any(
                q["answer"].lower() in e.lower() for e in found):
            out.append(f"{qid}: answer {q['answer']!r} is in none of its evidence lines")
        for term in absent:
            hits = [p for p, t in texts.items() if term.lower() in t.lower()]
            if hits:
                out.append(f"{qid}: 'absent' term {term!r} found in {hits[:3]}")
    return out


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "bench/out/heldout/git-doc")
    questions = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line]
    texts = folder_texts(folder)
    found = problems(questions, texts)
    kinds = collections.Counter(q["kind"] for q in questions)
    print(f"{len(questions)} questions {dict(kinds)} over {len(texts)} files in {folder}")
    for p in found:
        print("PROBLEM", p)
    print("OK" if not found else f"{len(found)} problem(s)")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
