"""Check bench/heldout2/questions.jsonl against the second held-out folder, without any model.

The checks of bench/heldout/verify.py, plus two: gold_paths is complete (every page
whose extracted text holds one of a question's evidence lines is in its gold_paths), and
the set has the shape issue 22 asks for (at least 30 questions, ids unique, at least
a third of the answerable ones marked "paraphrase").

For every question: each gold path exists in the folder; each evidence line (other than
"absent: X" lines and free-text notes of unanswerable questions) appears,
whitespace-normalised, in the text kbagent extracts from at least one gold path; every
gold path holds at least one evidence line; every page holding an evidence line is a
gold path; a factoid or composite answer appears in its evidence (case-insensitive;
not for yes/no answers, which the documents state as a sentence); an unanswerable
question's "absent: X" terms appear in no file of the folder (case-insensitive).
Exits non-zero if any check fails.

    .venv/bin/python bench/heldout2/verify.py [FOLDER]   (default bench/out/heldout2/sqlite-doc)
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
ANSWERABLE = ("factoid", "composite", "calculation")


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def folder_texts(folder: Path) -> dict[str, str]:
    """Relative path -> whitespace-normalised text as kbagent extracts it."""
    texts = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            rel = path.relative_to(folder).as_posix()
            try:
                doc = extract(rel, path.read_bytes())
            except Exception as exc:  # kbagent skips such a file too: it holds no text
                print(f"note: {rel} not extracted ({type(exc).__name__}: {exc})")
                continue
            texts[rel] = normalise("\n".join(line.text for line in doc.lines))
    return texts


def problems(questions: list[dict], texts: dict[str, str]) -> list[str]:
    out = []
    ids = collections.Counter(q["id"] for q in questions)
    out += [f"{qid}: id used {n} times" for qid, n in ids.items() if n > 1]
    for q in questions:
        qid, evidence, gold = q["id"], q.get("evidence", []), q["gold_paths"]
        absent = [e.removeprefix("absent: ") for e in evidence if e.startswith("absent: ")]
        if q["kind"] not in ANSWERABLE:
            if gold:
                out.append(f"{qid}: a {q['kind']} question has gold paths")
        else:
            found = [normalise(e) for e in evidence if not e.startswith("absent: ")]
            if not found:
                out.append(f"{qid}: no evidence lines")
            for path in gold:
                if path not in texts:
                    out.append(f"{qid}: gold path {path} is not in the folder")
                elif not any(e in texts[path] for e in found):
                    out.append(f"{qid}: gold path {path} holds none of the evidence lines")
            for e in found:
                holders = [p for p, t in texts.items() if e in t]
                if not holders:
                    out.append(f"{qid}: evidence in no file of the folder: {e[:80]!r}")
                missing = sorted(set(holders) - set(gold))
                if missing:
                    out.append(f"{qid}: {missing} hold evidence {e[:60]!r}, not in gold_paths")
            if (q["kind"] in ("factoid", "composite") and q.get("answer_type") != "yes/no"
                    and not any(q["answer"].lower() in e.lower() for e in found)):
                out.append(f"{qid}: answer {q['answer']!r} is in none of its evidence lines")
            if q.get("answer_type") == "yes/no" and q["answer"] not in ("yes", "no"):
                out.append(f"{qid}: yes/no answer is {q['answer']!r}")
        for term in absent:
            hits = [p for p, t in texts.items() if term.lower() in t.lower()]
            if hits:
                out.append(f"{qid}: 'absent' term {term!r} found in {hits[:3]}")
        if q["kind"] == "unanswerable" and not absent:
            out.append(f"{qid}: unanswerable question without 'absent:' terms")
    answerable = [q for q in questions if q["kind"] in ANSWERABLE]
    para = sum(1 for q in answerable if q.get("paraphrase"))
    if len(questions) < 30:
        out.append(f"only {len(questions)} questions (issue 22 asks for at least 30)")
    if 3 * para < len(answerable):
        out.append(f"only {para} of {len(answerable)} answerable questions are paraphrases")
    return out


def main(questions_path: Path = QUESTIONS,
         default_folder: Path = ROOT / "bench/out/heldout2/sqlite-doc",
         make: str = "bench/heldout2/make_folder.sh") -> None:
    """Check the set in ``questions_path`` against FOLDER (argv[1], else ``default_folder``,
    built by the script ``make``); bench/heldout3/verify.py reuses it for its own set."""
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else default_folder
    if not folder.is_dir():
        sys.exit(f"verify: {folder} is missing: run {make}")
    questions = [json.loads(line) for line in questions_path.read_text().splitlines() if line]
    texts = folder_texts(folder)
    found = problems(questions, texts)
    kinds = collections.Counter(q["kind"] for q in questions)
    answerable = [q for q in questions if q["kind"] in ANSWERABLE]
    para = sum(1 for q in answerable if q.get("paraphrase"))
    types = collections.Counter(q.get("answer_type", "-") for q in answerable)
    print(f"{len(questions)} questions {dict(kinds)} over {len(texts)} files in {folder}")
    print(f"answerable: {len(answerable)}, paraphrased: {para}; answer types {dict(types)}")
    for p in found:
        print("PROBLEM", p)
    print("OK" if not found else f"{len(found)} problem(s)")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
