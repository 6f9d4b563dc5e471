"""Word, PowerPoint, Excel/CSV, EPUB, notebooks and PDF: real files written by each
format's own library are ingested, their token is found by search, and the citation
names the page, slide, sheet cells, chapter or notebook cell."""

from __future__ import annotations

import json
import stat

import pytest
from typer.testing import CliRunner

import kbagent.agent.llm as llm_module
from kbagent.cli import app
from kbagent.kb.chunker import chunk_document
from kbagent.kb.extract import extract
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.search import HybridSearcher
from tests import doc_writers as w
from tests.scripted_llm import ScriptedLLM

runner = CliRunner()

# file -> (its bytes, the token inside, where the token's chunk must say it is)
FILES = {
    "audit.pdf": (lambda: w.make_pdf("QUOKKAPDF"), "QUOKKAPDF", "p.2 l.1-3"),
    "handbook.docx": (lambda: w.make_docx("QUOKKADOCX"), "QUOKKADOCX", "§ Limits"),
    "roadmap.pptx": (lambda: w.make_pptx("QUOKKAPPTX"), "QUOKKAPPTX", "slide 2"),
    "budget.xlsx": (lambda: w.make_xlsx("QUOKKAXLSX"), "QUOKKAXLSX", "Budget!A"),
    "guide.epub": (lambda: w.make_epub("QUOKKAEPUB"), "QUOKKAEPUB", "chapter “Chapter 2”"),
    "churn.ipynb": (lambda: w.make_ipynb("QUOKKANB"), "QUOKKANB", "cell"),
    "rates.csv": (lambda: b"City,Rate\nParis,90\nQUOKKACSV,75\n", "QUOKKACSV", "A1:B3"),
}


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return {name: make() for name, (make, _, _) in FILES.items()}


@pytest.fixture
def docs_kb(settings, make_folder, embedder, files):
    folder = make_folder(dict(files))
    report = Ingestor(settings, "docs", embedder=embedder).run(folder)
    assert {f.path: f.status for f in report.files} == dict.fromkeys(files, "added")
    return folder


def test_every_format_is_found_and_cited_by_its_own_place(settings, docs_kb):
    kb = KnowledgeBase(settings, "docs")
    for name, (_, token, where) in FILES.items():
        hits = HybridSearcher([kb]).search(token, k=3, mode="bm25").hits
        assert hits and hits[0].path == name, (name, [h.path for h in hits])
        assert hits[0].location.startswith(where), (name, hits[0].location)
        assert token in hits[0].text


def test_sheet_rows_carry_the_header_and_exact_cells():
    doc = extract("budget.xlsx", w.make_xlsx("QUOKKAXLSX", rows=120))
    chunks = chunk_document(doc, max_tokens=60, overlap=8)
    budget = [c for c in chunks if c.heading == "Budget"]
    assert len(budget) > 3
    for c in budget:  # the header row leads every chunk; no row is lost or repeated
        assert c.text.startswith("| Item | Cost | Owner |\n|---|---|---|\n")
    rows = [ln for c in budget for ln in c.text.split("\n")[2:]]
    assert len(rows) == len(set(rows)) == 121
    last = budget[-1]
    assert "QUOKKAXLSX" in last.text
    first_row = int(last.location.split("!A")[1].split(":")[0])
    n_rows = len(last.text.split("\n")) - 2
    assert last.location == f"Budget!A{first_row}:C122" and first_row == 122 - n_rows + 1
    staff = [c for c in chunks if c.heading == "Staff"]
    assert [c.location for c in staff] == ["Staff!A1:B2"]
    assert budget[0].location.startswith("Budget!A1:C")  # the first chunk holds the header


def test_word_keeps_headings_lists_and_tables():
    doc = extract("handbook.docx", w.make_docx("QUOKKADOCX"))
    text = [ln.text for ln in doc.lines]
    assert doc.title == "Travel handbook"
    assert "# Travel policy" in text and "## Limits" in text
    assert "- Book through the portal" in text and "1. Keep every receipt" in text
    assert "| City | Per diem |" in text and "| QUOKKADOCX | EUR 75 |" in text
    chunks = chunk_document(doc)
    limits = next(c for c in chunks if "QUOKKADOCX" in c.text)
    assert limits.heading == "Travel policy > Limits"


def test_powerpoint_slides_tables_and_speaker_notes():
    doc = extract("roadmap.pptx", w.make_pptx("QUOKKAPPTX"))
    chunks = chunk_document(doc)
    assert [c.heading for c in chunks] == ["slide 1: Roadmap", "slide 2: Hardware budget"]
    assert [c.location for c in chunks] == ["slide 1", "slide 2"]
    assert "Q2 scale to ten regions" in chunks[0].text
    assert "| GPU servers | 1200 |" in chunks[1].text
    assert "Speaker notes:\nMention that QUOKKAPPTX ships late." in chunks[1].text


def test_pdf_lines_are_cited_by_page_and_line_within_it():
    doc = extract("audit.pdf", w.make_pdf("QUOKKAPDF"))
    assert doc.title == "Audit report"
    chunks = chunk_document(doc)
    assert [c.location for c in chunks] == ["p.1 l.1-2", "p.2 l.1-3", "p.3 l.1-2"]
    assert "QUOKKAPDF" in chunks[1].text


def test_notebook_cells_keep_code_outputs_and_numbers():
    doc = extract("churn.ipynb", w.make_ipynb("QUOKKANB"))
    text = "\n".join(ln.text for ln in doc.lines)
    assert "In [2]:\n```python\nprint(rate)\n```\nOutput:\n```text\nQUOKKANB 4.2%" in text
    out_line = next(ln.number for ln in doc.lines if "QUOKKANB" in ln.text)
    from kbagent.kb.locations import describe

    assert describe(doc.locations, out_line, out_line) == "cell 3"
    assert chunk_document(doc)[0].heading == "Churn analysis"  # a '#' in code is no heading


def test_epub_chapters_in_spine_order_with_headings():
    doc = extract("guide.epub", w.make_epub("QUOKKAEPUB"))
    chunks = chunk_document(doc)
    assert doc.title == "Field guide"
    assert [(c.heading, c.location) for c in chunks] == [  # named by the book's own toc
        ("Chapter 1", "chapter “Chapter 1”"), ("Chapter 2", "chapter “Chapter 2”")]


@pytest.mark.parametrize(
    ("name", "make", "status", "reason"),
    [
        ("locked.pdf", w.make_encrypted_pdf, "skipped", "encrypted PDF"),
        ("scan.pdf", w.make_scanned_pdf, "skipped", "scanned PDF: no text layer on any of its 2"),
        ("locked.xlsx", w.make_encrypted_xlsx, "skipped", "password-protected"),
        ("broken.docx", lambda: w.make_docx("X")[:700], "failed", "corrupt .docx"),
        ("junk.pptx", lambda: b"PK\x03\x04 not really a zip", "failed", "corrupt .pptx"),
        ("bad.ipynb", lambda: b"{not json", "failed", "invalid JSON"),
        ("bad.epub", lambda: w.make_docx("X"), "failed", "unreadable epub"),
    ],
)
def test_bad_files_give_a_reason_and_no_traceback(name, make, status, reason, settings,
                                                  make_folder, embedder):
    folder = make_folder({name: make(), "ok.md": "# Fine\n\nGood text.\n"})
    report = Ingestor(settings, "docs", embedder=embedder).run(folder)
    got = {f.path: (f.status, f.reason) for f in report.files}
    assert got["ok.md"][0] == "added"
    assert got[name][0] == status and reason in got[name][1], got[name]
    assert "Traceback" not in got[name][1]


def test_a_pdf_with_some_scanned_pages_says_which(settings, make_folder, embedder):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    pdf.cell(0, 10, "Typed first page.")
    pdf.add_page()
    pdf.rect(20, 20, 100, 60, style="F")
    folder = make_folder({"mixed.pdf": bytes(pdf.output())})
    report = Ingestor(settings, "docs", embedder=embedder).run(folder)
    assert (report.files[0].status, report.files[0].reason) == (
        "added", "no text layer on page 2 (scanned?)")


def test_limits_report_a_file_instead_of_dropping_it(settings, make_folder, embedder):
    settings.max_pdf_pages = 2
    settings.max_sheet_rows = 10
    folder = make_folder({"long.pdf": w.make_pdf("T", pages=3), "big.xlsx": w.make_xlsx("T"),
                          "small.csv": b"a,b\n1,2\n"})
    report = Ingestor(settings, "docs", embedder=embedder).run(folder)
    got = {f.path: (f.status, f.reason) for f in report.files}
    assert got["long.pdf"] == ("skipped", "3 pages, more than the max_pdf_pages setting (2); "
                                          "raise it to ingest this file")
    assert got["big.xlsx"][0] == "skipped" and "max_sheet_rows" in got["big.xlsx"][1]
    assert got["small.csv"][0] == "added"


def test_big_files_report_progress(settings, make_folder, embedder):
    seen: list[tuple[str, int, int]] = []
    folder = make_folder({"long.pdf": w.make_pdf("T", pages=60),
                          "big.xlsx": w.make_xlsx("T", rows=12_000)})
    Ingestor(settings, "docs", embedder=embedder,
             progress=lambda phase, d, t: seen.append((phase, d, t))).run(folder)
    extract_ticks = [(d, t) for phase, d, t in seen if phase == "extract"]
    assert (60, 60) in extract_ticks  # page by page
    # rows: 12,000 + header + token row on Budget, 2 on Staff
    assert (5000, 12_004) in extract_ticks and (12_004, 12_004) in extract_ticks


# ------------------------------------------------------------------ surfaces
def test_search_shows_the_location_and_json_carries_it(docs_kb):
    res = runner.invoke(app, ["search", "QUOKKAPPTX", "--kb", "docs", "--mode", "bm25",
                              "--json"])
    assert res.exit_code == 0, res.stderr
    hit = json.loads(res.stdout)[0]
    assert (hit["path"], hit["location"]) == ("roadmap.pptx", "slide 2")
    res = runner.invoke(app, ["search", "QUOKKAXLSX", "--kb", "docs", "--mode", "bm25"])
    first = res.stdout.splitlines()[0]
    assert "budget.xlsx:" in first and "Budget!A" in first


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setenv("KBAGENT_SHORT_ANSWER", "harness")  # the script plays no short-answer call
    holder: dict = {}
    monkeypatch.setenv("KBAGENT_SEARCH_FIRST", "model")

    def use(*replies: str) -> None:
        holder["llm"] = ScriptedLLM(list(replies))

    monkeypatch.setattr(llm_module, "load_llm", lambda settings: holder["llm"])
    return use


def test_ask_references_ref_and_opener_name_the_slide(docs_kb, scripted, tmp_path,
                                                      monkeypatch):
    scripted('Thought: Search.\nAction: kb_search\nAction Input: {"query": "QUOKKAPPTX"}',
             "Thought: Found.\nFinal Answer: QUOKKAPPTX ships late [1].")
    res = runner.invoke(app, ["ask", "When does QUOKKAPPTX ship?", "--kb", "docs",
                              "--mode", "agent", "--json"])
    assert res.exit_code == 0, res.stderr
    ref = json.loads(res.stdout)["references"][0]["chunks"][0]
    assert (ref["path"], ref["location"]) == ("roadmap.pptx", "slide 2")
    scripted('Thought: Search.\nAction: kb_search\nAction Input: {"query": "QUOKKAPPTX"}',
             "Thought: Found.\nFinal Answer: QUOKKAPPTX ships late [1].")
    res = runner.invoke(app, ["ask", "When does QUOKKAPPTX ship?", "--kb", "docs",
                              "--mode", "agent"])
    assert "[1] roadmap.pptx slide 2 (" in res.stdout  # the badge's reference line
    res = runner.invoke(app, ["ref", "1"])
    assert res.exit_code == 0, res.stderr
    head, *body = res.stdout.splitlines()
    assert "roadmap.pptx slide 2:" in head
    assert any("QUOKKAPPTX" in line for line in body)
    # --editor hands a binary file to the system opener, not to $EDITOR +line
    log = tmp_path / "opener.log"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    opener = bindir / "xdg-open"
    opener.write_text(f'#!/bin/sh\necho "$@" > {log}\n')
    opener.chmod(opener.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.setenv("EDITOR", "false")
    monkeypatch.setattr("sys.platform", "linux")
    res = runner.invoke(app, ["ref", "1", "--editor"])
    assert res.exit_code == 0, res.stderr
    assert log.read_text().split() == [str(docs_kb.resolve() / "roadmap.pptx")]


def test_a_kb_built_before_locations_keeps_working_and_gains_them_on_ingest(
        settings, make_folder, embedder):
    import sqlite3

    from kbagent.kb.knowledge_base import current_generation

    folder = make_folder({"audit.pdf": w.make_pdf("QUOKKAPDF"), "a.md": "# A\n\nplain text\n"})
    Ingestor(settings, "docs", embedder=embedder).run(folder)
    kb_dir = settings.kbs_dir / "docs"
    db = kb_dir / current_generation(kb_dir) / "kb.sqlite"
    with sqlite3.connect(db) as conn:  # what a generation written before issue 24 holds
        conn.execute("ALTER TABLE chunks DROP COLUMN location")
        conn.execute("ALTER TABLE documents DROP COLUMN locations")
    kb = KnowledgeBase(settings, "docs")
    hit = HybridSearcher([kb]).search("QUOKKAPDF", k=1, mode="bm25").hits[0]
    assert (hit.path, hit.location, hit.start_line) == ("audit.pdf", "", 3)
    assert kb.store.locate("audit.pdf", 3, 5) == ""
    kb.close()
    report = Ingestor(settings, "docs", embedder=embedder).run(folder)
    got = {f.path: (f.status, f.reason) for f in report.files}
    assert got == {"audit.pdf": ("updated", "re-extracted to cite by page/slide/sheet"),
                   "a.md": ("unchanged", "")}
    kb = KnowledgeBase(settings, "docs")
    hit = HybridSearcher([kb]).search("QUOKKAPDF", k=1, mode="bm25").hits[0]
    assert hit.location == "p.2 l.1-3"
    assert HybridSearcher([kb]).search("plain text", k=1, mode="bm25").hits[0].location == ""
    kb.close()


def test_tui_references_panel_names_the_slide(sample_settings):
    from kbagent.tui.widgets import ReferencesPanel
    from tests.test_tui import ask, drive, make_app

    app, _ = make_app(sample_settings, ["Edge OS 3.3 targets December 8, 2026."], mode="rag")

    async def scenario(pilot):
        turn = await ask(pilot, "What is the target release date of Edge OS 3.3?")
        panel = turn.query_one(ReferencesPanel)
        docs = [str(n.label) for n in panel.root.children]
        i = docs.index("sample:product/roadmap_review_q4_2026.pptx")
        ref = turn.result.references[i].chunks[0]
        assert ref.location == "slide 3"
        leaf = str(panel.root.children[i].children[0].label)
        assert leaf.startswith(f"[{ref.n}] slide 3 · lines {ref.start_line}-")

    drive(app, scenario)
