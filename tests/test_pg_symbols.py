"""The symbol index of a KB held in PostgreSQL (issue 26), against a real server
(tests/pg_server.py, skipped with the reason if it cannot start): the same
definitions, references, callers and outlines as the local store, the same access
rule (tests/test_access_code.py's checks run unchanged on a PostgreSQL KB), kept
exact by incremental ingests, and the CLI (``kbagent code``, ``kbagent kbs``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tests.test_access_code as tac
from kbagent.cli import app
from kbagent.errors import NotFoundError
from kbagent.kb.access import ANONYMOUS, Principal
from kbagent.kb.ingest import Ingestor
from kbagent.kb.stores import open_kb
from kbagent.kb.symbol_index import MANIFEST_KEY, NoSymbolIndex, SymbolIndex
from tests import test_pg_store as tps

pg_dsn, memo, pg_ingest = tps.pg_dsn, tps.memo, tps.pg_ingest  # its server fixture, its embedder

FIXTURE = Path(__file__).parent / "data" / "code_fixture"
runner = CliRunner()


def names_of(kb) -> list[str]:
    """Every defined or referenced name of a local KB (from its own tables)."""
    conn = kb.store.conn
    return sorted({r[0] for r in conn.execute("SELECT name FROM symbols")}
                  | {r[0] for r in conn.execute("SELECT name FROM symbol_names")})


def dump(hits) -> list[dict]:
    return [h.to_dict() for h in hits]


@pytest.fixture
def code_src(tmp_path) -> Path:
    src = tmp_path / "code"
    shutil.copytree(FIXTURE, src)
    return src


def test_pg_lookups_equal_the_local_store(settings, code_src, pg_dsn, memo):
    local_rep = Ingestor(settings, "code", embedder=memo).run(code_src)
    pg_rep = pg_ingest(settings, "pgcode", pg_dsn, code_src, memo)
    # the syntax-error note of py/broken.py, in both reports
    assert {f.path: f.reason for f in pg_rep.files} == {
        f.path: f.reason for f in local_rep.files}
    assert any("parse error" in f.reason for f in pg_rep.files)
    local, pg = open_kb(settings, "code"), open_kb(settings, "pgcode")
    assert type(pg).__name__ == "PgKnowledgeBase"
    a, b = SymbolIndex(local), SymbolIndex(pg)
    assert b.stats() == a.stats() and b.stats()["definitions"] > 30
    names = names_of(local)
    assert len(names) > 40
    for name in names:
        for what in ("definitions", "references", "callers"):
            want = dump(getattr(a, what)(name))
            got = [{**h, "kb": "code"} for h in dump(getattr(b, what)(name))]
            assert got == want, (what, name)
    assert dump(b.definitions("Polygon.perimeter")) != []
    assert [{**h, "kb": "code"} for h in dump(b.definitions("Polygon.perimeter"))] == dump(
        a.definitions("Polygon.perimeter"))
    assert [h.where for h in b.references("helper", limit=1)] == [
        h.where for h in a.references("helper", limit=1)]
    for path in local.store.paths():
        try:
            want_hits, want_err = a.outline(path)
        except NotFoundError as e:
            with pytest.raises(NotFoundError) as got_e:
                b.outline(path)
            assert str(got_e.value).replace("pgcode", "code") == str(e)
            continue
        got_hits, got_err = b.outline(path)
        assert [{**h, "kb": "code"} for h in dump(got_hits)] == dump(want_hits)
        assert got_err == want_err
    local.close()
    pg.close()


@pytest.fixture
def pgk(settings, make_folder, pg_dsn, memo):
    """tests/test_access_code.py's folder (one restricted file) as PostgreSQL KB 'k'."""
    pg_ingest(settings, "k", pg_dsn, make_folder(tac.FILES), memo)
    kb = open_kb(settings, "k")
    assert type(kb).__name__ == "PgKnowledgeBase"
    yield kb
    kb.close()


@pytest.mark.parametrize("check", [
    tac.test_symbol_index_filters_every_lookup_by_the_callers_groups,
    tac.test_outline_of_a_denied_file_is_exactly_a_missing_file,
    tac.test_the_limit_applies_after_the_filter,
    tac.test_code_tools_leak_nothing_and_cite_nothing_restricted,
    tac.test_code_outline_tool_denied_reads_like_missing,
    tac.test_code_tools_show_an_executive_the_restricted_code_with_citations,
    tac.test_cli_outline_denied_reads_like_missing,
])
def test_access_code_checks_pass_on_a_pg_kb(pgk, check):
    check(pgk)


def test_no_restricted_symbol_is_returned_for_any_name(pgk, pg_dsn):
    import psycopg

    with psycopg.connect(pg_dsn) as c:
        names = sorted({r[0] for r in c.execute(
            "SELECT name FROM kbagent_symbols WHERE kb='k' UNION "
            "SELECT name FROM kbagent_symbol_refs WHERE kb='k'")})
    assert "ceo_bonus" in names and "helper" in names
    callers = [ANONYMOUS, Principal(None, frozenset({"hr"})), tac.EXEC]
    seen = {c.groups: 0 for c in callers}
    restricted = {c.groups: 0 for c in callers}
    for who in callers:
        idx = SymbolIndex(pgk, who)
        for name in names:
            hits = idx.definitions(name) + idx.references(name) + idx.callers(name)
            seen[who.groups] += len(hits)
            restricted[who.groups] += sum(h.path == tac.SECRET for h in hits)
    assert restricted[ANONYMOUS.groups] == 0 and restricted[frozenset({"hr"})] == 0
    assert restricted[tac.EXEC.groups] > 0  # the filter is not simply "nothing"
    assert seen[ANONYMOUS.groups] > 0
    for args in (["code", "outline", tac.SECRET], ["code", "def", "SECRET_SALARY_TABLE"],
                 ["code", "refs", "helper", "--json"], ["code", "callers", "helper"]):
        tac.test_cli_code_commands_leak_nothing_to_a_caller_without_the_group(pgk, args)
    tac.test_cli_an_executive_sees_the_restricted_code(pgk, Path(pgk.settings.home))


def test_pg_symbols_follow_incremental_ingests_and_old_kbs_are_backfilled(
        settings, code_src, pg_dsn, memo):
    pg_ingest(settings, "inc", pg_dsn, code_src, memo)
    shapes = code_src / "py" / "shapes.py"
    shapes.write_text(shapes.read_text().replace("def describe", "def portray")
                      .replace("describe(", "portray("), encoding="utf-8")
    (code_src / "go" / "server.go").unlink()
    rep = pg_ingest(settings, "inc", pg_dsn, code_src, memo)
    assert rep.committed
    kb = open_kb(settings, "inc")
    idx = SymbolIndex(kb)
    assert idx.definitions("describe") == []
    assert [h.where for h in idx.definitions("portray")] == ["py/shapes.py:18"]
    assert [h.where for h in idx.callers("portray")] == ["py/shapes.py:24"]
    assert idx.definitions("NewServer") == [] and idx.callers("formatAddress") == []
    before = idx.stats()
    # a KB written before the symbol index: no manifest key, no symbol rows
    import psycopg

    with psycopg.connect(pg_dsn, autocommit=True) as c:
        c.execute("DELETE FROM kbagent_symbol_files WHERE kb='inc'")
        c.execute("DELETE FROM kbagent_symbols WHERE kb='inc'")
        c.execute("UPDATE kbagent_kbs SET manifest = manifest - %s, updated_at = updated_at + 1 "
                  "WHERE kb='inc'", (MANIFEST_KEY,))
    kb.refresh()
    with pytest.raises(NoSymbolIndex, match="kbagent ingest"):
        SymbolIndex(kb)
    rep = pg_ingest(settings, "inc", pg_dsn, code_src, memo)  # nothing changed on disk
    assert rep.committed
    kb.refresh()
    assert SymbolIndex(kb).stats() == before
    assert [h.where for h in SymbolIndex(kb).callers("portray")] == ["py/shapes.py:24"]
    kb.close()


def test_cli_code_and_kbs_on_a_pg_kb(settings, code_src, pg_dsn, memo):
    Ingestor(settings, "loc", embedder=memo).run(code_src)
    pg_ingest(settings, "pgc", pg_dsn, code_src, memo)
    r = runner.invoke(app, ["code", "def", "Polygon", "--kb", "pgc", "--json"])
    assert r.exit_code == 0, r.output
    assert [(h["path"], h["line"], h["kind"]) for h in json.loads(r.stdout)] == [
        ("py/shapes.py", 6, "class")]
    r = runner.invoke(app, ["code", "callers", "describe", "--kb", "pgc"])
    assert r.exit_code == 0 and "py/shapes.py:24" in r.stdout and "main" in r.stdout
    r = runner.invoke(app, ["code", "outline", "go/server.go", "--kb", "pgc"])
    assert r.exit_code == 0 and "NewServer" in r.stdout
    r = runner.invoke(app, ["kbs", "--json"])
    listed = {k["name"]: k for k in json.loads(r.stdout)}
    total = sum(p.stat().st_size for p in code_src.rglob("*") if p.is_file())
    assert listed["pgc"]["size_bytes"] == listed["loc"]["size_bytes"] == total


CACHE = ("# Cache\n\nIntro line.\n\nThe default TTL is 1 hour.\nEntries expire after that.\n"
         "\nUnrelated closing line.\n")


@pytest.mark.parametrize("edit", ["rename", "rename-and-edit"])
def test_provenance_finds_moved_text_in_another_document_of_a_pg_kb(
        settings, make_folder, pg_dsn, memo, edit):
    from kbagent.agent.records import References
    from kbagent.kb.provenance import ReferenceChecker, RefState, stamp_references

    root = make_folder({"cache.md": CACHE, "other.md": "# Other\n\nSomething else.\n"})
    pg_ingest(settings, "pgnotes", pg_dsn, root, memo)
    kb = open_kb(settings, "pgnotes")
    refs = References.from_json([{"kb": "pgnotes", "path": "cache.md", "chunks": [
        {"n": 1, "kb": "pgnotes", "path": "cache.md", "start_line": 5, "end_line": 6,
         "excerpt": "The default TTL is 1 hour. Entries expire after that."}]}])
    stamp_references({"pgnotes": kb}, refs.chunks())
    kb.close()
    ref = refs.to_json()[0]["chunks"][0]
    assert len(ref["text_sha"]) == 64
    (root / "cache.md").unlink()
    (root / "notes").mkdir()
    text = CACHE if edit == "rename" else CACHE.replace("Unrelated closing", "Edited")
    (root / "notes" / "ttl.md").write_text(text, encoding="utf-8")
    pg_ingest(settings, "pgnotes", pg_dsn, root, memo)
    checker = ReferenceChecker(settings)
    try:
        c = checker.check(ref)
    finally:
        checker.close()
    assert c.state is RefState.MOVED, c.detail
    assert (c.now_path, c.now_start, c.now_end) == ("notes/ttl.md", 5, 6)
