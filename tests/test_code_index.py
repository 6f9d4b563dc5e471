"""The symbol index inside a KB: built at ingest, incremental, crash-safe, and the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbagent.cli import app
from kbagent.errors import ExitCode
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase, current_generation, read_manifest
from kbagent.kb.symbol_index import MANIFEST_KEY, NoSymbolIndex, SymbolIndex

FIXTURE = Path(__file__).parent / "data" / "code_fixture"
runner = CliRunner()


def where(hits) -> list[str]:
    return [h.where for h in hits]


@pytest.fixture
def sample_index(sample_settings) -> SymbolIndex:
    return SymbolIndex(KnowledgeBase(sample_settings, "sample"))


@pytest.fixture
def code_kb(settings, embedder, tmp_path):
    src = tmp_path / "code"
    shutil.copytree(FIXTURE, src)
    report = Ingestor(settings, "code", embedder=embedder).run(src)
    return src, report


def test_sample_kb_definitions_and_call_sites(sample_index):
    assert where(sample_index.definitions("effective_delay")) == [
        "engineering/src/retry.py:116"]
    [d] = sample_index.definitions("CircuitBreaker.allow_request")
    assert (d.kind, d.line, d.end_line) == ("method", 171, 183)
    assert d.text.strip().startswith("def allow_request(self, now: float)")
    assert where(sample_index.callers("backoff_delay")) == ["engineering/src/retry.py:125"]
    [c] = sample_index.callers("effective_delay")
    assert (c.where, c.qualname) == ("engineering/src/retry.py:269", "call_with_retries")
    assert where(sample_index.definitions("normalizeContent")) == [
        "engineering/src/cache_key.go:124"]
    [g] = sample_index.callers("normalizeContent")
    assert (g.where, g.qualname) == ("engineering/src/cache_key.go:164", "Key")
    assert "engineering/src/retry.py:39" in where(sample_index.definitions("MAX_DELAY_S"))


def test_references_include_non_call_uses(sample_index):
    refs = sample_index.references("MAX_RETRY_AFTER_S")
    assert {h.kind for h in refs} == {"ref"}
    assert "engineering/src/retry.py:262" in where(refs)


def test_outline_lists_definitions_in_line_order(sample_index):
    hits, error = sample_index.outline("engineering/src/cache_key.go")
    assert error == ""
    names = [(h.name, h.kind, h.line) for h in hits]
    assert ("Key", "function", 140) in names and ("Request", "type", 64) in names
    assert [h.line for h in hits] == sorted(h.line for h in hits)
    with pytest.raises(Exception, match="not a source file"):
        sample_index.outline("engineering/architecture_overview.md")


def test_multi_language_kb_and_the_syntax_error_report(code_kb, settings):
    _, report = code_kb
    files = {f.path: f for f in report.files}
    assert files["py/broken.py"].status == "added"
    assert files["py/broken.py"].reason.startswith("parse error at line 5")
    assert files["py/shapes.py"].reason == ""
    idx = SymbolIndex(KnowledgeBase(settings, "code"))
    assert where(idx.definitions("good_after")) == ["py/broken.py:9"]
    assert where(idx.definitions("Server.Start")) == ["go/server.go:15"]
    assert where(idx.definitions("ds::Stack::push")) == ["c/stack.cpp:13"]
    assert where(idx.callers("clamp")) == ["rs/lib.rs:13"]
    assert where(idx.callers("join")) == ["java/Greeter.java:7"]
    assert where(idx.callers("deploy_service")) == ["sh/deploy.sh:12"]
    assert where(idx.callers("request")) == ["web/client.ts:11"]
    assert idx.stats()["files"] == 10


def test_a_renamed_function_after_reingest(code_kb, settings, embedder):
    src, _ = code_kb
    path = src / "py" / "shapes.py"
    path.write_text(path.read_text().replace("describe", "summarize"))
    report = Ingestor(settings, "code", embedder=embedder).run(src)
    assert {f.path: f.status for f in report.files}["py/shapes.py"] == "updated"
    idx = SymbolIndex(KnowledgeBase(settings, "code"))
    assert idx.definitions("describe") == [] and idx.callers("describe") == []
    assert where(idx.definitions("summarize")) == ["py/shapes.py:18"]
    assert where(idx.callers("summarize")) == ["py/shapes.py:24"]
    # other files were not re-parsed and are still there
    assert where(idx.definitions("formatAddress")) == ["go/server.go:20"]


def test_a_deleted_file_takes_its_symbols_with_it(code_kb, settings, embedder):
    src, _ = code_kb
    (src / "rs" / "lib.rs").unlink()
    Ingestor(settings, "code", embedder=embedder).run(src)
    idx = SymbolIndex(KnowledgeBase(settings, "code"))
    assert idx.definitions("clamp") == [] and idx.callers("clamp") == []
    assert idx.stats()["files"] == 9


def test_a_crash_before_publishing_leaves_the_old_symbols_live(code_kb, settings, embedder):
    src, _ = code_kb
    path = src / "py" / "shapes.py"
    path.write_text(path.read_text().replace("describe", "summarize"))

    def crash(step: str) -> None:
        if step == "manifest-written":
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        Ingestor(settings, "code", embedder=embedder, checkpoint=crash).run(src)
    idx = SymbolIndex(KnowledgeBase(settings, "code"))
    assert where(idx.definitions("describe")) == ["py/shapes.py:18"]
    assert idx.definitions("summarize") == []


def _strip_index(settings, name: str) -> None:
    """Make the KB look like one built before the symbol index existed."""
    import sqlite3

    kb_dir = settings.kbs_dir / name
    gen_dir = kb_dir / current_generation(kb_dir)
    manifest = read_manifest(gen_dir)
    del manifest[MANIFEST_KEY]
    (gen_dir / "manifest.json").write_text(json.dumps(manifest))
    conn = sqlite3.connect(gen_dir / "kb.sqlite")
    conn.executescript("DROP TABLE symbol_refs; DROP TABLE symbols; DROP TABLE symbol_files; "
                       "DROP TABLE symbol_names;")
    conn.close()


def test_an_old_kb_without_the_index_says_so_and_the_next_ingest_builds_it(
        code_kb, settings, embedder):
    src, _ = code_kb
    _strip_index(settings, "code")
    kb = KnowledgeBase(settings, "code")
    assert kb.documents == 10  # the KB itself still works
    with pytest.raises(NoSymbolIndex, match=r"has no symbol index.*run: kbagent ingest"):
        SymbolIndex(kb)
    res = runner.invoke(app, ["code", "def", "clamp", "--kb", "code"])
    assert res.exit_code == ExitCode.NOT_FOUND and "has no symbol index" in res.stderr
    # nothing changed on disk, yet the ingest publishes a generation with the index
    report = Ingestor(settings, "code", embedder=embedder).run(src)
    assert report.committed and report.chunks_embedded == 0
    assert {f.path: f.reason for f in report.files}["py/broken.py"].startswith("parse error")
    idx = SymbolIndex(KnowledgeBase(settings, "code"))
    assert where(idx.definitions("clamp")) == ["rs/lib.rs:18"]
    again = Ingestor(settings, "code", embedder=embedder).run(src)
    assert not again.committed  # and then it is up to date


def test_cli_code_commands(code_kb):
    res = runner.invoke(app, ["code", "def", "Polygon.perimeter", "--json"])
    assert res.exit_code == 0, res.stderr
    [hit] = json.loads(res.stdout)
    assert (hit["path"], hit["line"], hit["end_line"], hit["kind"]) == (
        "py/shapes.py", 14, 15, "method")
    res = runner.invoke(app, ["code", "callers", "describe", "--kb", "code"])
    assert res.exit_code == 0
    assert "py/shapes.py:24" in res.stdout and "in main" in res.stdout
    res = runner.invoke(app, ["code", "refs", "LIMIT", "--json"])
    assert {(h["line"], h["kind"]) for h in json.loads(res.stdout)} == {(19, "ref")}
    res = runner.invoke(app, ["code", "outline", "rs/lib.rs"])
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert lines[0].startswith("1-1 constant LIMIT")
    assert "  8-10 method new" in lines
    res = runner.invoke(app, ["code", "outline", "py/broken.py", "--json"])
    assert json.loads(res.stdout)["error"].startswith("parse error at line 5")
    res = runner.invoke(app, ["code", "outline", "nope.py"])
    assert res.exit_code == ExitCode.NOT_FOUND and "no file 'nope.py'" in res.stderr
    res = runner.invoke(app, ["code", "def", "no_such_symbol"])
    assert res.exit_code == 0 and "no definition of 'no_such_symbol'" in res.stderr


def test_ingest_text_report_shows_the_syntax_error_note(settings, embedder, tmp_path):
    src = tmp_path / "one"
    src.mkdir()
    shutil.copy(FIXTURE / "py" / "broken.py", src / "broken.py")
    res = runner.invoke(app, ["ingest", str(src), "--kb", "one"])
    assert res.exit_code == 0, res.stderr
    assert "note broken.py: parse error at line 5" in res.stderr
