"""Bulk loads into the PostgreSQL store (kbagent/kb/pg/bulk.py) against the row-by-row
path, on a real server (tests/pg_server.py); skipped with the reason when it cannot
start."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from kbagent.kb.access import ANONYMOUS, Principal, may_read
from kbagent.kb.pg import bulk
from kbagent.kb.pg.ingest import PgIngestor
from kbagent.kb.pg.schema import BULK_LOCK, hnsw_index_name
from kbagent.kb.search import HybridSearcher
from kbagent.kb.stores import open_kb
from tests.conftest import SMALL_DOCS
from tests.pg_server import serve_or_skip
from tests.test_pg_store import DOCS, QUERIES, MemoEmbedder

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[dev]'")
ROOT = Path(__file__).resolve().parent.parent
CODE = "def backoff(n):\n    return min(2 ** n, 30)\n\n\ndef retry():\n    return backoff(3)\n"
MORE = {f"more/topic{i}.md": f"# Topic {i}\n\nZebra crossing number {i} has jitter and "
        f"backoff lights.\n\n## Detail\n\nMargin of {i} metres.\n" for i in range(8)}
WHO = (ANONYMOUS, Principal("maya", frozenset({"executives", "hr"})))


@pytest.fixture(scope="module")
def pg_dsn():
    yield from serve_or_skip("PG bulk")


@pytest.fixture(scope="module")
def memo(embedder) -> MemoEmbedder:
    return MemoEmbedder(embedder)


def ingest(settings, name, dsn, folder, memo, bulk_=None, rebuild=False, **kw) -> PgIngestor:
    ing = PgIngestor(settings, name, dsn, bulk=bulk_, embedder=memo, **kw)
    ing.run(folder, rebuild=rebuild)
    return ing


def results(settings, name, memo) -> list[tuple]:
    """Every query, mode and caller: the hits with their ranks and scores."""
    kb = open_kb(settings, name)
    searcher = HybridSearcher([kb], embedder_for=lambda _s: memo)
    out = [(q, mode, who.groups, [(h.path, h.start_line, h.end_line, h.text, h.score,
                                   h.bm25_rank, h.bm25_score, h.vector_rank, h.vector_score)
                                  for h in searcher.search(q, k=20, mode=mode,
                                                           principal=who).hits])
           for q in [*QUERIES, "zebra crossing lights"] for mode in ("bm25", "vector", "hybrid")
           for who in WHO]
    kb.close()
    return out


def same(a: list[tuple], b: list[tuple]) -> bool:
    """The same hits in the same order with the same ranks; scores equal but for the
    last bits (SQL sums the same terms in the order it meets their rows)."""
    def close(u: float | None, v: float | None) -> bool:
        return u == v or (u is not None and v is not None and math.isclose(u, v, rel_tol=1e-12))

    return len(a) == len(b) and all(
        x[:3] == y[:3] and len(x[3]) == len(y[3]) and all(
            g[:4] + g[5:6] + g[7:8] == h[:4] + h[5:6] + h[7:8] and
            all(close(u, v) for u, v in zip(g[4::2], h[4::2], strict=True))
            for g, h in zip(x[3], y[3], strict=True))
        for x, y in zip(a, b, strict=True))


def rows(dsn: str, kb: str) -> dict[str, list[tuple]]:
    """What the store holds for ``kb``, chunks named by (path, ordinal), not by id."""
    named = ("JOIN kbagent_chunks c ON c.kb = p.kb AND c.id = p.chunk_id JOIN "
             "kbagent_documents d ON d.kb = c.kb AND d.id = c.doc_id")
    queries = {
        "documents": "SELECT path, title, format, language, content_hash, size, access, text, "
                     "line_map, locations, n_chunks FROM kbagent_documents WHERE kb=%(kb)s",
        "chunks": "SELECT d.path, c.ordinal, c.start_line, c.end_line, c.heading, c.text, "
                  "c.text_hash, c.groups, c.n_tokens, c.location, c.embedding::text FROM "
                  "kbagent_chunks c JOIN kbagent_documents d ON d.kb = c.kb AND "
                  "d.id = c.doc_id WHERE c.kb=%(kb)s",
        "postings": f"SELECT d.path, c.ordinal, p.term, p.tf, p.n_tokens FROM "
                    f"kbagent_postings p {named} WHERE p.kb=%(kb)s",
        "terms": "SELECT term, groups, df FROM kbagent_terms WHERE kb=%(kb)s",
        "groupstats": "SELECT groups, n_chunks, total_tokens FROM kbagent_groupstats "
                      "WHERE kb=%(kb)s",
        "totals": "SELECT n_chunks, total_tokens FROM kbagent_kbs WHERE kb=%(kb)s",
        "symbols": "SELECT d.path, s.name, s.qualname, s.kind, s.start_line, s.end_line "
                   "FROM kbagent_symbols s JOIN kbagent_documents d ON d.kb = s.kb AND "
                   "d.id = s.doc_id WHERE s.kb=%(kb)s",
    }
    with psycopg.connect(dsn) as c:
        return {k: sorted(c.execute(q, {"kb": kb}).fetchall(), key=repr)
                for k, q in queries.items()}


def index_info(dsn: str, kb: str, dim: int = 384) -> tuple[int, bool] | None:
    """The KB's HNSW index as other sessions see it: its oid and whether it is valid."""
    with psycopg.connect(dsn) as c:
        row = c.execute("SELECT indexrelid::bigint, indisvalid FROM pg_index WHERE "
                        "indexrelid = to_regclass(%s)", (hnsw_index_name(kb, dim),)).fetchone()
    return None if row is None else (int(row[0]), bool(row[1]))


def index_at(dsn: str, kb: str, seen: dict[str, object]):
    """A checkpoint noting the KB's index as another session sees it at each step."""
    return lambda step: seen.__setitem__(step, index_info(dsn, kb))


def source(make_folder, docs):
    folder = make_folder({**docs, "src/retry.py": CODE})
    (folder / ".kbaccess").write_text("hr/** hr\n", encoding="utf-8")
    return folder


def test_a_bulk_load_stores_and_finds_exactly_what_the_row_path_does(settings, make_folder,
                                                                     pg_dsn, memo):
    folder = source(make_folder, {**DOCS, **MORE})
    seen_row: dict[str, object] = {}
    seen_bulk: dict[str, object] = {}
    assert not ingest(settings, "rowp", pg_dsn, folder, memo, bulk_=False,
                      checkpoint=index_at(pg_dsn, "rowp", seen_row)).loaded_in_bulk
    assert ingest(settings, "bulkp", pg_dsn, folder, memo,  # a first load: bulk
                  checkpoint=index_at(pg_dsn, "bulkp", seen_bulk)).loaded_in_bulk
    assert rows(pg_dsn, "bulkp") == rows(pg_dsn, "rowp")
    assert same(results(settings, "bulkp", memo), results(settings, "rowp", memo))
    # the row path created the index before its transaction and inserted every row
    # into it; the bulk load builds it inside its transaction, after the rows
    assert seen_row["pg-written"] is not None and "pg-copying" not in seen_row
    assert seen_bulk["pg-copying"] is None and seen_bulk["pg-written"] is None
    assert index_info(pg_dsn, "bulkp")[1] and index_info(pg_dsn, "rowp")[1]
    kb = open_kb(settings, "bulkp")
    access = kb.store.access_by_path()
    searcher = HybridSearcher([kb], embedder_for=lambda _s: memo)
    for mode in ("bm25", "vector", "hybrid"):  # the access filter is the same statement's
        for q in ("retry backoff merger vendor", "exponential raises jitter salaries"):
            got = searcher.search(q, k=50, mode=mode).hits
            assert got and all(may_read(ANONYMOUS, access[h.path]) for h in got)
        assert "secret/plan.md" in [h.path for h in searcher.search(
            "Project Bluefin merger", k=50, mode=mode, principal=WHO[1]).hits]
    kb.close()


def test_an_incremental_update_after_a_bulk_load_goes_row_by_row(settings, make_folder,
                                                                 pg_dsn, memo):
    folder = source(make_folder, {**DOCS, **MORE})
    ingest(settings, "incb", pg_dsn, folder, memo)
    before = index_info(pg_dsn, "incb")
    (folder / "notes.txt").unlink()
    (folder / "finance/q3.md").write_text("# Q3 report\n\nGross margin rose to 80%.\n",
                                          encoding="utf-8")
    (folder / "new.md").write_text("# Quokkas\n\nQuokkas smile at zebra crossings.\n",
                                   encoding="utf-8")
    assert not ingest(settings, "incb", pg_dsn, folder, memo).loaded_in_bulk
    after = index_info(pg_dsn, "incb")
    assert after is not None and after[0] == before[0] and after[1]  # the same index, kept
    ingest(settings, "incr", pg_dsn, folder, memo, bulk_=False)  # the final folder, fresh
    assert rows(pg_dsn, "incb") == rows(pg_dsn, "incr")
    assert same(results(settings, "incb", memo), results(settings, "incr", memo))


def test_an_addition_as_large_as_the_kb_is_loaded_in_bulk(settings, make_folder, pg_dsn,
                                                          memo, monkeypatch):
    monkeypatch.setattr(bulk, "BULK_MIN_CHUNKS", 1)  # the rule, at a test's size
    folder = source(make_folder, SMALL_DOCS)
    ingest(settings, "grow", pg_dsn, folder, memo)
    before = index_info(pg_dsn, "grow")
    for rel, text in MORE.items():
        (folder / rel).parent.mkdir(exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    seen: dict[str, object] = {}
    assert ingest(settings, "grow", pg_dsn, folder, memo,
                  checkpoint=index_at(pg_dsn, "grow", seen)).loaded_in_bulk
    after = index_info(pg_dsn, "grow")
    assert seen["embedded"] == before and seen["pg-copying"] is None  # dropped for the load
    assert after[0] != before[0] and after[1]  # and built again, after the rows
    ingest(settings, "growr", pg_dsn, folder, memo, bulk_=False)
    assert rows(pg_dsn, "grow") == rows(pg_dsn, "growr")
    assert same(results(settings, "grow", memo), results(settings, "growr", memo))
    (folder / "more/topic0.md").write_text("# Topic 0\n\nChanged.\n", encoding="utf-8")
    assert not ingest(settings, "grow", pg_dsn, folder, memo).loaded_in_bulk  # one file


def test_a_failure_mid_copy_leaves_the_previous_generation(settings, make_folder, pg_dsn,
                                                           memo):
    folder = source(make_folder, DOCS)
    ingest(settings, "failb", pg_dsn, folder, memo)
    kb = open_kb(settings, "failb")
    state = (kb.documents, kb.chunks, kb.store.paths())
    found = results(settings, "failb", memo)
    seen: list[str] = []

    def interrupt(step: str) -> None:
        seen.append(step)
        if step == "pg-copying":
            raise KeyboardInterrupt  # Ctrl-C with the COPY half sent

    v2 = source(make_folder, {**DOCS, **MORE})
    with pytest.raises(KeyboardInterrupt):
        ingest(settings, "failb", pg_dsn, v2, memo, bulk_=True, checkpoint=interrupt)
    assert seen[-1] == "pg-copying"
    assert not kb.refresh() and (kb.documents, kb.chunks, kb.store.paths()) == state
    # the previous generation answers as before: its vector searches scan exactly
    # while its index (dropped for the bulk load) is missing
    assert index_info(pg_dsn, "failb") is None
    assert results(settings, "failb", memo) == found
    ingest(settings, "failb", pg_dsn, folder, memo)  # nothing changed: the index is back
    assert index_info(pg_dsn, "failb")[1] and results(settings, "failb", memo) == found
    # the KB's writer lock went with the failed run: the next ingest runs
    assert ingest(settings, "failb", pg_dsn, v2, memo).loaded_in_bulk is False
    kb.close()


KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.pg.ingest import PgIngestor
    from kbagent.settings import Settings

    home, name, dsn, folder, marker = sys.argv[1:6]

    def checkpoint(step):
        if step == "pg-copying":
            Path(marker).write_text(step)
            os.kill(os.getpid(), signal.SIGKILL)

    PgIngestor(Settings.load(home=Path(home)), name, dsn, bulk=True, checkpoint=checkpoint,
               embedder=load_embedder("bundled")).run(Path(folder), rebuild=True)
""")


def test_kill_9_mid_copy_of_a_rebuild_leaves_the_previous_generation(settings, make_folder,
                                                                     pg_dsn, memo, tmp_path):
    folder = source(make_folder, DOCS)
    ingest(settings, "killb", pg_dsn, folder, memo)
    found = results(settings, "killb", memo)
    before = rows(pg_dsn, "killb")
    marker = tmp_path / "killed"
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, str(settings.home), "killb",
                           pg_dsn, str(source(make_folder, {**DOCS, **MORE})), str(marker)],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300,
                          check=False)
    assert proc.returncode == -signal.SIGKILL and marker.read_text() == "pg-copying"
    assert rows(pg_dsn, "killb") == before and results(settings, "killb", memo) == found
    with psycopg.connect(pg_dsn) as c:  # the server let the dead session's locks go
        assert not c.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                             ).fetchone()[0]


def test_bulk_loads_of_two_kbs_at_once_take_turns_and_readers_never_wait(
        settings, make_folder, pg_dsn, memo):
    """B is past its scan while A copies; B waits for A's bulk lock (without it, both
    would hold ROW EXCLUSIVE on the chunks and ask for SHARE: a deadlock), and a reader
    of a third KB searches while A holds the SHARE lock of its index build."""
    ingest(settings, "third", pg_dsn, source(make_folder, SMALL_DOCS), memo)
    b_scanned, a_copying = threading.Event(), threading.Event()
    waited: list[bool] = []
    read: list[object] = []
    errors: list[BaseException] = []

    def a_steps(step: str) -> None:
        if step == "embedded":
            b_scanned.wait(60)
        elif step == "pg-copying":
            a_copying.set()
            with psycopg.connect(pg_dsn) as c:
                for _ in range(600):
                    if c.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                                 "AND NOT granted AND objid::bigint = %s", (BULK_LOCK,)
                                 ).fetchone()[0]:
                        waited.append(True)
                        break
                    time.sleep(0.05)
        elif step == "pg-written":
            out: list[object] = []
            reader = threading.Thread(target=lambda: out.append(
                [h.path for h in HybridSearcher([open_kb(settings, "third")],
                                                embedder_for=lambda _s: memo).search(
                    "exponential backoff", k=5, mode="hybrid").hits]))
            reader.start()
            reader.join(timeout=120)
            read.extend([not reader.is_alive(), out])

    def b_steps(step: str) -> None:
        if step == "embedded":
            b_scanned.set()
            a_copying.wait(60)

    def run(name, docs, steps):
        try:
            ingest(settings, name, pg_dsn, source(make_folder, docs), memo, checkpoint=steps)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=("turna", {**DOCS, **MORE}, a_steps)),
               threading.Thread(target=run, args=("turnb", DOCS, b_steps))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors and waited == [True]
    assert read[0] and read[1] and read[1][0][0] == "guide/retry.md"
    for name in ("turna", "turnb"):
        assert index_info(pg_dsn, name)[1]


def test_an_ingest_of_another_kb_runs_while_a_write_transaction_is_open(settings, make_folder,
                                                                      pg_dsn, memo):
    """The schema DDL (CREATE INDEX IF NOT EXISTS: a SHARE lock on each table) runs once
    per database, not at every ingest, where it waited for every open transaction."""
    first, other = source(make_folder, DOCS), source(make_folder, SMALL_DOCS)
    ingest(settings, "opena", pg_dsn, first, memo)
    ingest(settings, "openb", pg_dsn, other, memo)
    (first / "new.md").write_text("# Quokkas\n\nQuokkas smile.\n", encoding="utf-8")
    (other / "new.md").write_text("# Wombats\n\nWombats dig.\n", encoding="utf-8")
    done: list[object] = []

    def meanwhile(step: str) -> None:
        if step == "pg-written":  # opena's transaction is open, its rows written
            t = threading.Thread(target=lambda: done.append(
                ingest(settings, "openb", pg_dsn, other, memo).loaded_in_bulk))
            t.start()
            t.join(timeout=60)
            done.append(not t.is_alive())

    assert not ingest(settings, "opena", pg_dsn, first, memo, checkpoint=meanwhile).loaded_in_bulk
    assert done == [False, True]


def kb_indexes(dsn: str, kb: str) -> dict[str, str]:
    """The KB's HNSW indexes: name -> definition."""
    from kbagent.kb.pg.schema import hnsw_index_prefix

    with psycopg.connect(dsn) as c:
        return dict(c.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = "
                              "'kbagent_chunks' AND indexname LIKE %s",
                              (hnsw_index_prefix(kb) + "%",)).fetchall())


@pytest.mark.parametrize("change", [False, True])
def test_the_vector_index_is_halfvec_and_an_older_float32_one_is_replaced(
        settings, make_folder, pg_dsn, memo, change):
    """The HNSW index holds halfvec (half the size); a search re-ranks its candidates with
    the stored float32 vectors, so scores stay the exact cosine. A KB built by an older
    version (a float32 index) gets the halfvec one from its next ingest, changed or not,
    and the float32 one is dropped."""
    from kbagent.kb.pg.schema import hnsw_index_prefix

    name = f"half{int(change)}"
    folder = source(make_folder, DOCS)
    ingest(settings, name, pg_dsn, folder, memo)
    new = hnsw_index_name(name, 384)
    assert new.endswith("h") and list(kb_indexes(pg_dsn, name)) == [new]
    assert "halfvec_cosine_ops" in kb_indexes(pg_dsn, name)[new]
    kb = open_kb(settings, name)
    vec = memo.encode(["retry backoff"])[0]
    for plan in ("seqscan", "bitmapscan", "sort"):  # a few rows: the planner would scan
        kb.conn.execute(f"SET enable_{plan} = off")
    assert new in kb.explain("retry backoff", "vector", vec, 10, None)
    hits = kb.search_evidence("retry backoff", "vector", vec, 10, None)
    with psycopg.connect(pg_dsn) as c:  # exact float32 cosine, not the halfvec distance
        exact = dict(c.execute("SELECT id, 1 - (embedding <=> %s::vector) FROM kbagent_chunks "
                               "WHERE kb = %s", (str(list(map(float, vec))), name)).fetchall())
    assert hits and all(math.isclose(h[4], exact[h[0]], rel_tol=1e-9) for h in hits)
    kb.close()
    old = f"{hnsw_index_prefix(name)}_384"  # what an older version built
    with psycopg.connect(pg_dsn, autocommit=True) as c:
        c.execute(f'DROP INDEX "{new}"')
        c.execute(f'CREATE INDEX "{old}" ON kbagent_chunks USING hnsw ((embedding::vector(384)) '
                  f"vector_cosine_ops) WHERE kb = '{name}' AND vector_dims(embedding) = 384")
    if change:
        (folder / "new.md").write_text("# Quokkas\n\nQuokkas smile.\n", encoding="utf-8")
    ingest(settings, name, pg_dsn, folder, memo)
    assert list(kb_indexes(pg_dsn, name)) == [new]
