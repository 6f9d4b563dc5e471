"""``kbagent eval retrieval`` on a small BEIR-format data set, for real:
ingest, tantivy, usearch and the bundled embedding model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbagent.cli import app
from kbagent.evaluation.beir import load_beir, write_corpus
from kbagent.evaluation.retrieval import evaluate, prepare_kb, rank_documents
from kbagent.kb.knowledge_base import current_generation, kb_dir

runner = CliRunner()

DOCS = [
    ("a/1", "Sourdough starter", "Feed the sourdough starter with rye flour and water daily."),
    ("b 2", "Tidal energy", "Tidal turbines convert the motion of ocean tides into power."),
    ("c3", "Honey bees", "Worker bees perform a waggle dance to point at nectar."),
    ("d4", "Volcano basalt", "Basalt forms when lava from a shield volcano cools quickly."),
    ("e5", "Chess openings", "The Sicilian defence answers the king's pawn opening."),
    ("f6", "Glacier retreat", "Mountain glaciers lose ice mass as summers warm."),
]
QUERIES = {"q1": "waggle dance of bees", "q2": "sicilian defence chess", "q3": "lava basalt",
           "q4": "nothing judged"}
QRELS = [("q1", "c3", 2), ("q2", "e5", 1), ("q3", "d4", 1), ("q3", "f6", 0)]


def write_beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    with open(root / "corpus.jsonl", "w") as f:
        for i, t, x in DOCS:
            f.write(json.dumps({"_id": i, "title": t, "text": x}) + "\n")
    with open(root / "queries.jsonl", "w") as f:
        for q, text in QUERIES.items():
            f.write(json.dumps({"_id": q, "text": text}) + "\n")
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in QRELS))
    return root


def test_loader_keeps_judged_queries_and_maps_files_back(tmp_path):
    ds = load_beir(write_beir(tmp_path / "toy"))
    assert sorted(ds.queries) == ["q1", "q2", "q3"]  # q4 has no judgement
    assert ds.qrels["q1"] == {"c3": 2}
    stems = write_corpus(ds, tmp_path / "out")
    assert stems["a_1"] == "a/1" and stems["b_2"] == "b 2"
    assert (tmp_path / "out" / "a_1.md").read_text().startswith("# Sourdough starter\n")
    assert rank_documents(["x/c3.md", "c3.md", "e5.md", "zz.md"], stems) == ["c3", "e5"]


def test_evaluate_scores_every_mode_and_reuses_the_kb(tmp_path, settings, embedder):
    ds = load_beir(write_beir(tmp_path / "toy"))
    stems, _ = prepare_kb(settings, ds, "eval-toy")
    gen = current_generation(kb_dir(settings, "eval-toy"))
    report = evaluate(settings, ds, "eval-toy", stems)
    assert [m.mode for m in report.modes] == ["hybrid", "bm25", "vector"]
    assert report.documents == 6 and report.queries == 3
    for m in report.modes:
        # every query names its document's own words: each finds it first
        assert m.ndcg_10 == pytest.approx(1.0), m
        assert m.mrr_10 == pytest.approx(1.0) and m.recall_100 == pytest.approx(1.0)
        assert m.latency_p95_ms >= m.latency_p50_ms > 0
    assert report.modes[1].published_ndcg_10 is None  # not a published data set
    prepare_kb(settings, ds, "eval-toy")  # a second run writes no new generation
    assert current_generation(kb_dir(settings, "eval-toy")) == gen


def test_cli_json_and_html(tmp_path, embedder):
    root = write_beir(tmp_path / "scifact")  # named like a published set
    html = tmp_path / "r.html"
    res = runner.invoke(app, ["eval", "retrieval", str(root), "--json", "--mode", "bm25",
                              "--html", str(html)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["kb"] == "eval-scifact" and [m["mode"] for m in out["modes"]] == ["bm25"]
    assert out["modes"][0]["published_ndcg_10"] == 0.679
    page = html.read_text()
    assert "waggle dance of bees" in page and "<script" not in page


@pytest.mark.parametrize(("breakage", "code", "message"), [
    ("missing", 3, "no such data set folder"),
    ("no-qrels", 3, "missing qrels file"),
    ("bad-json", 2, "corpus.jsonl:2: not a JSON object"),
    ("bad-qrels", 2, "expected 'query-id"),
])
def test_bad_data_sets_are_one_line_errors(tmp_path, breakage, code, message):
    root = tmp_path / "toy"
    if breakage != "missing":
        write_beir(root)
    if breakage == "no-qrels":
        (root / "qrels" / "test.tsv").unlink()
    if breakage == "bad-json":
        with open(root / "corpus.jsonl", "a") as f:
            f.write("{not json\n")
        lines = (root / "corpus.jsonl").read_text().splitlines()
        (root / "corpus.jsonl").write_text("\n".join([lines[0], lines[-1], *lines[1:-1]]))
    if breakage == "bad-qrels":
        (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1 c3\n")
    res = runner.invoke(app, ["eval", "retrieval", str(root)])
    assert res.exit_code == code
    assert message in res.stderr and len(res.stderr.strip().splitlines()) == 1
