"""Question history: every question with its answer, steps and references, in SQLite.

UI-neutral (no Textual, Typer or rich). The database is
``$KBAGENT_HOME/history.sqlite`` in WAL mode so a reader (the history screen)
never blocks the writer (a finished run, saved from a worker thread). Each call
opens its own connection, so the store can be used from any thread.

The schema version is SQLite's ``user_version``. :data:`MIGRATIONS` maps each
version to the statements that bring the previous one up to it; opening an
older database applies the missing ones in one transaction. A database written
by a newer kbagent is refused with a clear message rather than changed.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbagent.errors import BadInputError, KbCorruptError, NotFoundError
from kbagent.kb.file_modes import private_dir, private_file

HISTORY_FILE = "history.sqlite"

# version -> statements that upgrade version-1 to version
MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE entries(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            asked_at REAL NOT NULL,
            question TEXT NOT NULL,
            answer TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL DEFAULT '',
            mode TEXT NOT NULL DEFAULT '',
            kbs TEXT NOT NULL DEFAULT '[]',
            result TEXT NOT NULL DEFAULT '{}'
        )""",
        "CREATE INDEX entries_asked ON entries(asked_at)",
    ],
    2: [  # the model that answered, shown in the history list
        "ALTER TABLE entries ADD COLUMN model TEXT NOT NULL DEFAULT ''",
    ],
    3: [  # whose question it was (Principal.key): each caller sees only their own;
        # entries older than access control belong to no one and stay hidden
        "ALTER TABLE entries ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX entries_owner ON entries(owner, asked_at)",
    ],
}
SCHEMA_VERSION = max(MIGRATIONS)


def _wal(conn: sqlite3.Connection, tries: int = 50) -> None:
    """Put the history in WAL mode (kept in the file: once set, every connection sees
    it). Switching takes an exclusive lock for which SQLite does not wait (it answers
    "database is locked" at once to avoid a deadlock), so connections that open a new
    history at the same moment try again for a while."""
    for i in range(tries):
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                return
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or i == tries - 1:
                raise
            time.sleep(0.02 * (i + 1))


@dataclass
class HistoryEntry:
    id: int
    asked_at: float
    question: str
    answer: str
    status: str
    mode: str
    kbs: list[str]
    model: str = ""
    result: dict[str, Any] = field(default_factory=dict)  # AgentResult.to_dict() + all refs


class History:
    """The history database of one data home, as one principal sees it: ``owner``
    is :attr:`kbagent.kb.access.Principal.key`, and every read, write, delete and
    clear touches only that owner's entries (an answer may quote documents another
    caller must not see)."""

    def __init__(self, home: Path, owner: str = "anonymous") -> None:
        self.path = Path(home) / HISTORY_FILE
        self.owner = owner

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        private_dir(self.path.parent)  # answers quote documents: 0700 folder, 0600 files
        try:
            # created 0600 first: SQLite gives the -wal and -shm files the database's mode
            conn = sqlite3.connect(private_file(self.path), timeout=10)
        except sqlite3.Error as e:
            raise KbCorruptError(f"cannot open the history {self.path}: {e}") from e
        try:
            _wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            self._migrate(conn)
            yield conn
            conn.commit()
        except sqlite3.DatabaseError as e:
            raise KbCorruptError(f"the history {self.path} is unreadable ({e}); move it "
                                 "away to start a new one") from e
        finally:
            conn.close()

    def _migrate(self, conn: sqlite3.Connection) -> None:
        if self._version(conn) == SCHEMA_VERSION:
            return
        conn.isolation_level = None  # explicit transaction control below
        # IMMEDIATE: two threads opening a new database at once migrate it once
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = self._version(conn)
            for v in range(version + 1, SCHEMA_VERSION + 1):
                for stmt in MIGRATIONS[v]:
                    conn.execute(stmt)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("COMMIT")  # one transaction: a crash mid-way keeps the old version
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        finally:
            conn.isolation_level = "DEFERRED"  # back to implicit transactions ("BEGIN")

    def _version(self, conn: sqlite3.Connection) -> int:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise BadInputError(f"the history {self.path} has schema version {version}; this "
                                f"kbagent reads up to {SCHEMA_VERSION}")
        return version

    def schema_version(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])

    # --- writes ---------------------------------------------------------------
    def add(self, result: Any, model: str = "", asked_at: float | None = None) -> int:
        """Store one finished run (an ``AgentResult``); return its id."""
        data = result.to_json()
        with self._connect() as conn:
            cur = conn.execute(
                "INSERT INTO entries(asked_at,question,answer,status,mode,kbs,result,model,"
                "owner) VALUES(?,?,?,?,?,?,?,?,?)",
                (time.time() if asked_at is None else asked_at, result.question, result.answer,
                 result.status, result.mode, json.dumps(result.kbs),
                 json.dumps(data, ensure_ascii=False), model, self.owner))
            assert cur.lastrowid is not None  # an INSERT sets it
            return cur.lastrowid

    def delete(self, entry_id: int) -> None:
        with self._connect() as conn:
            if conn.execute("DELETE FROM entries WHERE id=? AND owner=?",
                            (entry_id, self.owner)).rowcount == 0:
                raise NotFoundError(f"no history entry {entry_id}")

    def clear(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("DELETE FROM entries WHERE owner=?",
                                    (self.owner,)).rowcount)

    # --- reads ----------------------------------------------------------------
    def list(self, search: str = "", limit: int = 200) -> list[HistoryEntry]:
        """Newest first; ``search`` matches question or answer (case-insensitive)."""
        sql = ("SELECT id,asked_at,question,answer,status,mode,kbs,model FROM entries "
               "WHERE owner=?")
        args: list[Any] = [self.owner]
        if search.strip():
            sql += " AND (question LIKE ? ESCAPE '\\' OR answer LIKE ? ESCAPE '\\')"
            pat = "%" + search.strip().replace("\\", "\\\\").replace("%", "\\%") \
                .replace("_", "\\_") + "%"
            args += [pat, pat]
        sql += " ORDER BY asked_at DESC, id DESC LIMIT ?"
        args.append(limit)
        with self._connect() as conn:
            return [HistoryEntry(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), r[7])
                    for r in conn.execute(sql, args)]

    def get(self, entry_id: int) -> HistoryEntry:
        with self._connect() as conn:
            r = conn.execute("SELECT id,asked_at,question,answer,status,mode,kbs,model,result "
                             "FROM entries WHERE id=? AND owner=?",
                             (entry_id, self.owner)).fetchone()
        if r is None:
            raise NotFoundError(f"no history entry {entry_id}")
        return HistoryEntry(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), r[7],
                            json.loads(r[8]))
