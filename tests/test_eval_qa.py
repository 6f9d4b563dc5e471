"""``kbagent eval qa``: adapters, per-answer scoring, the CLI over the real sample KB
with the scripted LLM writing the answers, and scoring a batch output file."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import kbagent.agent.llm as llm_module
from kbagent.cli import app
from kbagent.evaluation.qa import abstained, score, summarize
from kbagent.evaluation.qa_data import QaItem, load_qa
from tests.scripted_llm import ScriptedLLM

runner = CliRunner()

HOTPOT = [
    {"question_id": "h1", "question_text": "Which country is the birthplace of the author of X?",
     "answers_objects": [{"spans": ["France"]}],
     "contexts": [{"id": "0", "title": "X (novel)", "paragraph_text": "X was written by Ann.",
                   "is_supporting": True},
                  {"id": "1", "title": "Ann", "paragraph_text": "Ann was born in France.",
                   "is_supporting": True},
                  {"id": "2", "title": "Bob", "paragraph_text": "Bob is a baker.",
                   "is_supporting": False}]},
    {"question_id": "h2", "question_text": "Who bakes?", "answers_objects": [{"spans": ["Bob"]}],
     "contexts": [{"id": "0", "title": "Bob", "paragraph_text": "Bob is a baker.",
                   "is_supporting": True}]},
]


def test_hotpotqa_adapter_pools_paragraphs_once(tmp_path):
    path = tmp_path / "dev.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in HOTPOT))
    ds = load_qa(path)
    assert ds.format == "hotpotqa" and [i.id for i in ds.items] == ["h1", "h2"]
    assert sorted(ds.corpus) == ["Ann.md", "Bob.md", "X_novel.md"]  # Bob's paragraph once
    assert ds.corpus["Ann.md"] == "# Ann\n\nAnn was born in France.\n"
    assert ds.items[0].gold_docs == ["X_novel.md", "Ann.md"]
    assert ds.items[0].golds == ["France"] and ds.items[1].gold_docs == ["Bob.md"]
    assert len(load_qa(path, max_questions=1).items) == 1


def _rec(answer, cited=(), retrieved=(), steps=()):
    return {"answer": answer, "mode": "rag", "retrieved": list(retrieved),
            "references": [{"path": p, "chunks": [{"n": i + 1, "path": p}]}
                           for i, p in enumerate(cited)],
            "steps": [{"action": "kb_search", "args": {"query": q}} for q in steps],
            "usage": {"budget_tokens": 120, "wall_ms": 1500.0}}


def test_score_one_answer():
    item = QaItem("h1", "q", ["France"], ["X_novel.md", "Ann.md"], "multi-hop")
    row = score(item, "agent", _rec("She was born in France [1].", cited=["Ann.md", "Bob.md"],
                                    retrieved=["Ann.md", "Bob.md"], steps=["a", "A ", "b"]))
    assert row.correct and row.contains and row.em == 0.0
    # no short answer: the whole answer, its marker stripped, "she was born in france":
    # precision 1/5, recall 1, F1 1/3
    assert row.f1 == pytest.approx(1 / 3)
    assert row.support_recall == 0.5 and row.all_support is False
    assert (row.cited, row.cited_gold) == (2, 1) and row.queries == 2
    assert row.tokens == 120 and row.latency_s == 1.5
    wrong = score(item, "rag", _rec("Spain."))
    unans = QaItem("u", "q", [], [], "unanswerable")
    said_no = score(unans, "rag", _rec("The knowledge base does not say."))
    invented = score(unans, "rag", _rec("The password is 12345678."))
    assert not wrong.correct and said_no.correct and not invented.correct
    s = summarize("rag", [row, wrong, said_no, invented])
    assert s.correct == 2 and s.correct_by_kind == {"multi-hop": "1/2", "unanswerable": "1/2"}
    assert s.abstention_recall == 0.5 and s.false_abstentions == 0
    assert s.citation_precision == 0.5 and s.support_recall == 0.25
    assert abstained("I could not find that.") and not abstained("It is 5 [1].")


SAMPLE = [
    {"id": "q01", "question": "What was Kestrel's gross margin in Q3 2026?", "answer": "66.2%",
     "gold_paths": ["finance/q3_2026_report.html"], "kind": "factoid"},
    {"id": "q45", "question": "What is the Wi-Fi password at the Portland office?",
     "answer": "not in the knowledge base", "gold_paths": [], "kind": "unanswerable"},
]


def reply(messages):
    q = messages[-1].content
    return ("Gross margin was 66.2% in Q3 2026." if "gross margin" in q
            else "The knowledge base does not say.")


@pytest.fixture
def sample_file(tmp_path, sample_settings, monkeypatch):
    path = tmp_path / "qs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in SAMPLE))
    monkeypatch.setattr(llm_module, "load_llm", lambda s: ScriptedLLM([reply] * 20))
    return path


def test_cli_runs_modes_side_by_side_and_writes_html(sample_file, tmp_path):
    html = tmp_path / "qa.html"
    res = runner.invoke(app, ["eval", "qa", str(sample_file), "--kb", "sample",
                              "--compare-modes", "rag,agent", "--json", "--html", str(html)])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    rag = next(m for m in out["modes"] if m["mode"] == "rag")
    assert rag["correct"] == 2 and rag["abstention_recall"] == 1.0
    assert rag["support_recall"] == 1.0  # the harness search found the Q3 report
    assert {r["mode"] for r in out["rows"]} == {"rag", "agent"}
    page = html.read_text()
    assert "Wi-Fi password" in page and "66.2%" in page


def test_cli_scores_a_batch_output_file(sample_file, tmp_path):
    out = tmp_path / "answers.jsonl"
    res = runner.invoke(app, ["batch", str(sample_file), "-o", str(out), "--kb", "sample",
                              "--mode", "rag", "--quiet"])
    assert res.exit_code == 0, res.stderr
    res = runner.invoke(app, ["eval", "qa", str(sample_file), "--answers", str(out), "--json"])
    assert res.exit_code == 0, res.stderr
    (mode,) = json.loads(res.stdout)["modes"]
    assert mode["mode"] == "rag" and mode["correct"] == 2 and mode["errors"] == 0


def test_cli_bad_modes_and_files(tmp_path, sample_file):
    res = runner.invoke(app, ["eval", "qa", str(sample_file), "--compare-modes", "rag,fast"])
    assert res.exit_code == 2 and "unknown mode fast" in res.stderr
    res = runner.invoke(app, ["eval", "qa", str(tmp_path / "none.jsonl")])
    assert res.exit_code == 3 and "no such question file" in res.stderr


def test_save_answers_resumes_an_evaluation(sample_file, tmp_path, monkeypatch):
    saved = tmp_path / "saved.jsonl"
    args = ["eval", "qa", str(sample_file), "--kb", "sample", "--compare-modes", "rag",
            "--save-answers", str(saved), "--json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.stderr
    assert len(saved.read_text().splitlines()) == 2
    calls = ScriptedLLM([])  # no replies left: a second run must not ask the model
    monkeypatch.setattr(llm_module, "load_llm", lambda s: calls)
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["modes"] == json.loads(first.stdout)["modes"]
    assert calls.calls == [] and len(saved.read_text().splitlines()) == 2


# ---------------------------------------------------------- short answers (issue 22)
def test_em_and_f1_score_the_short_answer_without_its_markers():
    item = QaItem("h1", "q", ["Chief of Protocol"], ["Shirley_Temple.md"], "multi-hop")
    rec = _rec("Chief of Protocol [2]. Shirley_Temple.md says: “As an adult, she served as "
               "Chief of Protocol of the United States.” [2]")
    rec["short_answer"] = "Chief of Protocol [2]"
    row = score(item, "auto", rec)
    assert row.em == 1.0 and row.f1 == 1.0 and row.short_answer == "Chief of Protocol [2]"
    assert row.contains  # contains is judged on the whole answer
    assert 0 < row.answer_f1 < 1  # and the whole answer keeps an F1 of its own
    summary = summarize("auto", [row, score(item, "auto", _rec("Protocol."))])
    assert summary.short_answers == 1 and summary.em == 0.5


def test_without_a_short_answer_the_whole_answer_is_scored():
    item = QaItem("h2", "q", ["Bob"], ["Bob.md"], "multi-hop")
    for rec in (_rec("Bob [1]"), {**_rec("Bob [1]"), "short_answer": ""},
                {**_rec("Bob"), "short_answer": " [1] "}):
        row = score(item, "auto", rec)
        assert row.em == 1.0 and row.f1 == 1.0, rec


def test_a_gold_answer_inside_curly_quotes_is_found():
    # answers quote sources in curly quotes: the gold at the quote's end still counts
    item = QaItem("h3", "q", ["Greenwich Village, New York City"], [], "multi-hop")
    row = score(item, "auto", _rec("Trigiani.md says: “She is based in Greenwich Village, "
                                   "New York City.” [1]"))
    assert row.contains

