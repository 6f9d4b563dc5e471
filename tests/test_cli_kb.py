"""CLI: ingest / search / kbs through Typer's CliRunner, stdout and stderr apart."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kbagent.cli import app
from kbagent.errors import ExitCode
from tests.conftest import SMALL_DOCS

runner = CliRunner()


def run(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


@pytest.fixture
def docs_kb(make_folder, embedder):
    folder = make_folder({**SMALL_DOCS, "bin.dat": b"\x00\x01"})
    res = run("ingest", str(folder), "--kb", "docs")
    assert res.exit_code == 0, res.stderr
    return folder


def test_ingest_prints_summary_on_stdout_and_skips_on_stderr(docs_kb):
    res = run("ingest", str(docs_kb), "--kb", "docs")
    assert res.exit_code == 0
    assert "KB 'docs' up to date: 0 added, 0 updated, 0 removed, 3 unchanged, 1 skipped" in (
        res.stdout)
    assert "skipped bin.dat: binary content (NUL bytes)" in res.stderr
    assert "bin.dat" not in res.stdout


def test_ingest_json_report(docs_kb):
    (docs_kb / "notes.txt").write_text("changed\n")
    res = run("ingest", str(docs_kb), "--kb", "docs", "--report", "json")
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    assert data["summary"]["updated"] == 1 and data["committed"] is True
    files = {f["path"]: f for f in data["files"]}
    assert files["bin.dat"]["status"] == "skipped" and files["bin.dat"]["reason"]
    assert files["notes.txt"] == {"path": "notes.txt", "status": "updated", "reason": "",
                                  "chunks": 1}


def test_default_kb_name_comes_from_the_folder(make_folder, embedder):
    folder = make_folder({"a.md": "# A\n\nalpha\n"})
    assert run("ingest", str(folder)).exit_code == 0
    assert json.loads(run("kbs", "--json").stdout)[0]["name"] == folder.name


def test_search_json_shape(docs_kb):
    res = run("search", "retry 503", "--json", "-k", "3")
    assert res.exit_code == 0, res.stderr
    hits = json.loads(res.stdout)
    assert len(hits) == 3
    for h in hits:
        for key in ("path", "start_line", "end_line", "score", "text", "bm25_rank",
                    "vector_rank", "kb"):
            assert key in h
        assert h["kb"] == "docs"
    assert hits[0]["path"] == "guide/retry.md" and hits[0]["start_line"] >= 1
    assert any(h["bm25_rank"] is None for h in hits) or all(h["bm25_rank"] for h in hits)


def test_search_human_output(docs_kb):
    res = run("search", "gross margin", "--kb", "docs", "-k", "2", "--mode", "bm25")
    assert res.exit_code == 0
    assert res.stdout.splitlines()[0].startswith(" 1. finance/q3.md:")
    assert "(bm25 #1)" in res.stdout
    assert "hits in" in res.stderr


def test_search_several_kbs(docs_kb, make_folder):
    run("ingest", str(make_folder({"pto.md": "# PTO\n\n25 days of leave.\n"})), "--kb", "hr")
    res = run("search", "leave days", "--kb", "docs", "--kb", "hr", "--json")
    assert {h["kb"] for h in json.loads(res.stdout)} == {"docs", "hr"}


def test_kbs_lists_and_rm_removes(docs_kb):
    res = run("kbs")
    assert res.exit_code == 0 and "docs" in res.stdout
    info = json.loads(run("kbs", "--json").stdout)[0]
    assert info["documents"] == 3 and info["chunks"] > 0 and info["size_bytes"] > 0
    assert info["source"] == str(docs_kb.resolve())
    res = run("kbs", "rm", "docs", input="n\n")
    assert res.exit_code == 1 and "not removed" in res.stderr
    res = run("kbs", "rm", "docs", input="y\n")
    assert res.exit_code == 0 and "removed KB 'docs'" in res.stdout
    assert json.loads(run("kbs", "--json").stdout) == []


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["search", "x", "--kb", "nope"], ExitCode.NOT_FOUND, "unknown KB 'nope'"),
        (["search", "x", "--kb", "../x"], ExitCode.BAD_INPUT, "invalid KB name"),
        (["kbs", "rm", "nope", "--yes"], ExitCode.NOT_FOUND, "unknown KB 'nope'"),
        (["ingest", "/definitely/missing"], ExitCode.NOT_FOUND, "no such folder"),
        (["search", "anything"], ExitCode.NOT_FOUND, "no knowledge bases yet"),
    ],
)
def test_errors_are_one_line_with_exit_codes(args, code, message):
    res = run(*args)
    assert res.exit_code == code
    assert message in res.stderr
    assert res.stderr.strip().count("\n") == 0
    assert res.stdout == ""


def test_empty_folder_and_file_instead_of_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    res = run("ingest", str(tmp_path / "empty"))
    assert res.exit_code == ExitCode.BAD_INPUT and "no ingestible files" in res.stderr
    (tmp_path / "f.md").write_text("x")
    res = run("ingest", str(tmp_path / "f.md"))
    assert res.exit_code == ExitCode.BAD_INPUT and "is a file" in res.stderr


def test_corrupted_kb_says_how_to_rebuild(docs_kb, settings):
    from kbagent.kb.knowledge_base import current_generation

    kb_dir = settings.kbs_dir / "docs"
    (kb_dir / current_generation(kb_dir) / "vectors.usearch").write_bytes(b"junk")
    res = run("search", "retry", "--kb", "docs")
    assert res.exit_code == ExitCode.CORRUPT
    assert f"kbagent ingest {docs_kb.resolve()} --kb docs --rebuild" in res.stderr
    assert run("ingest", str(docs_kb), "--kb", "docs", "--rebuild").exit_code == 0
    assert run("search", "retry", "--kb", "docs").exit_code == 0


def test_busy_kb(docs_kb, settings):
    from kbagent.kb.lock import WriterLock

    with WriterLock(settings.kbs_dir / "docs", "docs"):
        res = run("ingest", str(docs_kb), "--kb", "docs")
    assert res.exit_code == ExitCode.BUSY and "another ingest" in res.stderr


def test_version_and_help():
    assert run("--version").stdout.startswith("kbagent ")
    res = run("--help")
    assert res.exit_code == 0 and "ingest" in res.stdout and "search" in res.stdout


def test_ctrl_c_mid_ingest_exits_130_and_keeps_the_kb(docs_kb, monkeypatch):
    from kbagent.kb.ingest import Ingestor

    (docs_kb / "new.md").write_text("# New\n\nZebras graze at dawn.\n")

    def interrupted(self, *a, **k):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(Ingestor, "_embed", interrupted)
        res = run("ingest", str(docs_kb), "--kb", "docs")
    assert res.exit_code == ExitCode.INTERRUPTED
    assert "interrupted; KB 'docs' is unchanged" in res.stderr
    res = run("search", "zebras", "--kb", "docs", "--json", "--mode", "bm25")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout) == []
    assert run("ingest", str(docs_kb), "--kb", "docs").exit_code == 0
    hits = json.loads(run("search", "zebras", "--kb", "docs", "--json", "--mode", "bm25").stdout)
    assert hits[0]["path"] == "new.md"


def test_progress_bar_reports_files_and_chunks(tmp_path):
    import io

    from rich.console import Console

    from kbagent.cli.shared import ProgressBar

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=120)
    bar = ProgressBar(True, console)
    with bar:
        bar("scan", 3, 3)
        bar("embed", 10, 40)
    text = buf.getvalue()
    assert "reading files" in text and "embedding chunks" in text and "10/40" in text
