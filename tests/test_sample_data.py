"""The sample KB and its question set stay consistent with each other."""

from __future__ import annotations

import json

from kbagent.kb.extract import extract
from kbagent.kb.walker import walk
from tests.conftest import ROOT, SAMPLE_KB

QUESTIONS = ROOT / "tests" / "data" / "sample_questions.jsonl"
KINDS = {"factoid", "composite", "calculation", "chit-chat", "unanswerable"}


def load_questions() -> list[dict]:
    return [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]


def test_question_file_shape_and_coverage():
    qs = load_questions()
    assert len(qs) >= 20
    assert len({q["id"] for q in qs}) == len(qs)
    for q in qs:
        assert set(q) == {"id", "question", "answer", "gold_paths", "kind"}
        assert q["kind"] in KINDS
    assert {q["kind"] for q in qs} == KINDS
    assert any(q["question"] == "Compare Q2 and Q3 gross margin and explain the change"
               for q in qs)


def test_gold_paths_exist_and_factoid_answers_are_in_them():
    files = {f.path: f for f in walk(SAMPLE_KB)}
    for q in load_questions():
        for p in q["gold_paths"]:
            assert p in files, (q["id"], p)
        if q["kind"] != "factoid":
            continue
        texts = []
        for p in q["gold_paths"]:
            doc = extract(p, files[p].abspath.read_bytes())
            texts.append(" ".join(" ".join(ln.text for ln in doc.lines).split()))
        assert any(q["answer"].lower() in t.lower() for t in texts), q["id"]


def test_corpus_is_mixed_format_and_honours_its_ignore_file():
    paths = [f.path for f in walk(SAMPLE_KB)]
    assert 25 <= len(paths) <= 45
    exts = {p.rsplit(".", 1)[-1] for p in paths}
    assert {"md", "txt", "rst", "html", "pdf", "py", "docx", "pptx", "xlsx"} <= exts
    assert not any(p.startswith("drafts/") or p.endswith(".tmp") for p in paths)
    plan = extract("hr/executive_compensation_2026.md",
                   (SAMPLE_KB / "hr/executive_compensation_2026.md").read_bytes())
    assert plan.access == ["executives"]
