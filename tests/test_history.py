"""The history store: WAL, newest first, search, delete/clear, schema migration."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from kbagent.agent.events import AgentResult
from kbagent.agent.records import References
from kbagent.errors import BadInputError, NotFoundError
from kbagent.history import MIGRATIONS, SCHEMA_VERSION, History


def result(q: str, a: str = "An answer [1].") -> AgentResult:
    refs = References.from_json([{"kb": "sample", "path": "a.md", "chunks": [
        {"n": 1, "kb": "sample", "path": "a.md", "start_line": 3, "end_line": 5}]}])
    return AgentResult(question=q, answer=a, mode="rag", status="answered", references=refs,
                       all_references=refs, kbs=["sample"])


def test_entries_newest_first_search_get_delete_clear(tmp_path):
    h = History(tmp_path)
    ids = [h.add(result(f"question {i}", f"answer {i} 50%"), asked_at=100 + i) for i in range(3)]
    assert [e.question for e in h.list()] == ["question 2", "question 1", "question 0"]
    assert [e.id for e in h.list("answer 1")] == [ids[1]]
    assert h.list("50%") and not h.list("50_")  # LIKE wildcards are literal
    full = h.get(ids[0])
    assert full.result["references"][0]["chunks"][0]["start_line"] == 3
    assert full.result["all_references"] and full.kbs == ["sample"]
    h.delete(ids[0])
    with pytest.raises(NotFoundError):
        h.get(ids[0])
    assert h.clear() == 2 and h.list() == []


def test_wal_and_writes_from_threads(tmp_path):
    h = History(tmp_path)
    threads = [threading.Thread(target=h.add, args=(result(f"q{i}"),)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(h.list()) == 8
    conn = sqlite3.connect(h.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_an_old_schema_is_migrated_and_a_newer_one_refused(tmp_path):
    path = tmp_path / "history.sqlite"
    conn = sqlite3.connect(path)
    for stmt in MIGRATIONS[1]:
        conn.execute(stmt)
    conn.execute("INSERT INTO entries(asked_at,question) VALUES(1,'old question')")
    conn.execute("PRAGMA user_version=1")
    conn.commit()
    conn.close()
    h = History(tmp_path)
    assert h.schema_version() == SCHEMA_VERSION
    # kept, but an entry from before access control belongs to no principal
    assert h.list() == []
    [old] = History(tmp_path, owner="").list()
    assert old.question == "old question" and old.model == ""
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(BadInputError, match="schema version"):
        h.list()


def test_each_principal_sees_only_its_own_history(tmp_path):
    execs, anon = History(tmp_path, "g-execs"), History(tmp_path, "anonymous")
    eid = execs.add(AgentResult("CEO base salary?", "$385,000 [1]", "rag", "answered"))
    anon.add(AgentResult("hi", "hello", "direct", "answered"))
    assert [e.question for e in execs.list()] == ["CEO base salary?"]
    assert [e.question for e in anon.list()] == ["hi"]
    assert anon.list(search="385") == []
    with pytest.raises(NotFoundError):
        anon.get(eid)
    with pytest.raises(NotFoundError):
        anon.delete(eid)
    assert anon.clear() == 1 and len(execs.list()) == 1
