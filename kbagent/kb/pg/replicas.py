"""Reads over streaming replicas of a PostgreSQL store.

``kbagent ingest DIR --kb K --store PRIMARY --replica R1 --replica R2`` records
read replicas (hot standbys fed by streaming replication) beside K's store
(:mod:`kbagent.kb.registry`). Ingest writes to the primary only; every reader of
K (:class:`kbagent.kb.pg.kb.PgKnowledgeBase`) reads through a
:class:`ReadConnection`:

* **One replica per reader, first healthy, readers spread round robin.** A reader
  starts at the next replica in a process-wide rotation (seeded by the process id,
  so one-shot commands spread too) and keeps it while it answers. All statements
  of one reader (a search and the rows, file views and symbols read after it) then
  see one replica's generation; a per-statement round robin would let a search on
  one replica and the ``kb_cat`` after it on another disagree about which chunks
  exist. Load spreads because every session, ``serve`` process and command is a
  reader of its own.
* **Never back in time.** A reader remembers the newest generation
  (``kbagent_kbs.updated_at``) it has read, and switches only to a replica that has
  replayed at least that far (else the primary, which is never behind). A replica
  that does not hold the KB yet (its first ingest not replayed) is passed over.
* **A replica that is down is skipped.** A refused or timed-out connection, or a
  connection lost mid-statement, marks that replica down for this process with ONE
  warning (logger ``kbagent.kb.pg``); the statement is re-run on the next replica or
  the primary (reads are idempotent), so no search fails for it. A down replica is
  tried again after :data:`RETRY_S` seconds; when it answers (and has caught up) its
  readers return to it, with one line saying so.

Replica lag is visible as the KB's generation on each node
(:func:`replica_states`, shown by ``kbagent kbs``), and a search on a replica that
is behind works on that replica's generation: its one statement reads one snapshot
and the reader reloads the manifest of the generation that statement saw.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from kbagent.errors import BackendError, BadInputError
from kbagent.kb.pg.conn import connect
from kbagent.kb.registry import check_dsn, redact

RETRY_S = 30.0  # seconds before a replica marked down is tried again
CONNECT_TIMEOUT_S = 3  # a replica that does not answer is skipped after this
# a replica whose host vanished mid-statement is given up on after ~11 s
KEEPALIVES: dict[str, Any] = {"keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2,
              "keepalives_count": 3}
log = logging.getLogger("kbagent.kb.pg")

_lock = threading.Lock()
_down: dict[str, float] = {}  # replica DSN -> monotonic time of its next try (this process)
_turn = itertools.count(os.getpid())


def _now() -> float:
    return time.monotonic()


def is_down(dsn: str) -> bool:
    """Whether ``dsn`` was found down and its retry time has not come yet."""
    with _lock:
        return _now() < _down.get(dsn, 0.0)


def mark_down(dsn: str, reason: str) -> None:
    """Skip replica ``dsn`` for :data:`RETRY_S` s; warn once per outage."""
    with _lock:
        first = dsn not in _down
        _down[dsn] = _now() + RETRY_S
    if first:
        log.warning("replica %s is down (%s): reads go to the next replica or the primary; "
                    "retrying it every %g s", redact(dsn), reason, RETRY_S)


def _mark_up(dsn: str) -> None:
    with _lock:
        was_down = _down.pop(dsn, None) is not None
    if was_down:
        log.warning("replica %s answers again: reads return to it", redact(dsn))


def _first_line(e: BaseException) -> str:
    """The reason in ``e``'s first line (without conn.py's "cannot connect to URL: ")."""
    text = str(e).strip()
    line = text.splitlines()[0] if text else type(e).__name__
    if line.startswith("cannot connect to "):
        line = line.partition(": ")[2] or line
    return line.strip()


def generation_on(conn: Any, kb: str) -> float | None:
    """KB ``kb``'s generation (the commit time of its last ingest) on ``conn``'s node;
    None when that node does not hold it (yet)."""
    import psycopg

    try:
        row = conn.execute("SELECT updated_at FROM kbagent_kbs WHERE kb=%s", (kb,)).fetchone()
    except psycopg.errors.UndefinedTable:
        return None
    return None if row is None else float(row[0])


def _close(conn: Any) -> None:
    with contextlib.suppress(Exception):
        conn.close()


def _lsn(value: Any) -> int | None:
    if value is None:
        return None
    high, _, low = str(value).partition("/")
    return (int(high, 16) << 32) | int(low, 16)


class ReadConnection:
    """The connection one reader of KB ``kb`` reads through: a replica of ``primary``
    or the primary itself, chosen and replaced as the module says. It offers what
    :class:`kbagent.kb.pg.kb.PgStore` uses of a psycopg connection (``execute``,
    ``close``); ``setup`` runs on every connection it opens. Not thread-safe: its
    callers hold their own lock around each statement."""

    def __init__(self, primary: str, replicas: list[str] | tuple[str, ...], kb: str,
                 setup: str = "") -> None:
        self.kb, self.setup = kb, setup
        start = next(_turn) % len(replicas) if replicas else 0
        self.order = [*replicas[start:], *replicas[:start], primary]
        self.seen = 0.0  # the newest generation read through this reader
        self._conn: Any = None
        self._at = len(self.order) - 1
        self._next_probe = _now() + RETRY_S
        self._connect()

    @property
    def serving(self) -> str:
        """The DSN the reader reads from now."""
        return str(self.order[self._at])

    @property
    def on_replica(self) -> bool:
        return self._at < len(self.order) - 1

    def saw(self, generation: float) -> None:
        self.seen = max(self.seen, generation)

    def _open(self, index: int) -> Any:
        """A connection to ``order[index]``, or None when that replica is down or has
        not replayed what this reader has read (the primary: opened or raised)."""
        dsn = self.order[index]
        if index == len(self.order) - 1:
            conn = connect(dsn)
            if self.setup:
                conn.execute(self.setup)
            return conn
        if is_down(dsn):
            return None
        import psycopg

        try:
            conn = connect(dsn, timeout=CONNECT_TIMEOUT_S, **KEEPALIVES)
        except BackendError as e:
            mark_down(dsn, _first_line(e))
            return None
        try:
            generation = generation_on(conn, self.kb)
            if generation is not None and generation >= self.seen and self.setup:
                conn.execute(self.setup)
        except psycopg.Error as e:
            _close(conn)
            mark_down(dsn, _first_line(e))
            return None
        _mark_up(dsn)
        if generation is None or generation < self.seen:
            _close(conn)  # behind this reader: not down, tried again later
            return None
        return conn

    def _connect(self, best: int = 0) -> None:
        for index in range(best, len(self.order)):
            conn = self._open(index)
            if conn is not None:
                self._conn, self._at = conn, index
                return

    def _probe(self) -> None:
        """Return to a better replica (one that was down, or behind) once per RETRY_S."""
        if self._at == 0 or _now() < self._next_probe:
            return
        self._next_probe = _now() + RETRY_S
        for index in range(self._at):
            conn = self._open(index)
            if conn is not None:
                self._drop()
                self._conn, self._at = conn, index
                return

    def _drop(self) -> None:
        _close(self._conn)
        self._conn = None

    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = None,
                binary: bool = False) -> Any:
        import psycopg

        self._probe()
        for attempt in (0, 1):
            if self._conn is None:  # every node failed last time: try them again
                self._connect()
            conn = self._conn
            try:
                return conn.execute(query, params, prepare=prepare, binary=binary)
            except psycopg.OperationalError as e:
                if isinstance(e, psycopg.errors.SerializationFailure) and not attempt:
                    continue  # a standby cancelled it for a conflict with WAL replay
                if not conn.broken or attempt:
                    raise
                if self.on_replica:
                    mark_down(self.serving, _first_line(e))
                self._drop()
                self._next_probe = _now() + RETRY_S
                self._connect()  # the statement runs again on the next node
        raise AssertionError("unreachable")

    def close(self) -> None:
        self._drop()


@dataclass
class ReplicaState:
    """Where one replica stands against the primary, for KB listings."""

    url: str  # redacted
    generation: float | None  # the KB's generation there (None: not there yet)
    primary_generation: float | None
    wal_behind_bytes: int | None  # WAL the primary wrote that it has not replayed
    behind: bool
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def replica_states(kb: str, primary: str, replicas: list[str]) -> list[ReplicaState]:
    """Each replica's generation of ``kb`` and WAL lag against the primary's."""
    if not replicas:
        return []
    with connect(primary, vectors=False) as conn:
        primary_gen = generation_on(conn, kb)
        primary_lsn = _lsn(conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0])
    out = []
    for dsn in replicas:
        try:
            with connect(dsn, vectors=False, timeout=CONNECT_TIMEOUT_S, **KEEPALIVES) as conn:
                gen = generation_on(conn, kb)
                standby, lsn = conn.execute(
                    "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()").fetchone()
        except Exception as e:  # a down replica is listed with the reason
            out.append(ReplicaState(redact(dsn), None, primary_gen, None, True,
                                    f"down: {_first_line(e)}"))
            continue
        replayed = _lsn(lsn)
        lag = None if primary_lsn is None or replayed is None else max(0, primary_lsn - replayed)
        behind = gen is None or (primary_gen is not None and gen < primary_gen)
        out.append(ReplicaState(redact(dsn), gen, primary_gen, lag, behind,
                                "" if standby else "not a standby (not in recovery)"))
    return out


def check_replicas(primary: str, replicas: list[str]) -> tuple[list[str], list[str]]:
    """``replicas`` checked before they are recorded for a KB held in ``primary``:
    (the URLs, de-duplicated; one line per replica that could not be confirmed).
    A replica that answers but is another cluster (its system identifier is not the
    primary's) is refused with :class:`BadInputError`; one that does not answer is
    recorded with a note (reads skip it until it does)."""
    import psycopg

    urls = list(dict.fromkeys(check_dsn(r, "--replica") for r in replicas))
    if primary in urls:
        raise BadInputError(f"--replica {redact(primary)} is the store itself")
    ident = "SELECT system_identifier, pg_is_in_recovery() FROM pg_control_system()"
    try:
        with connect(primary, vectors=False) as conn:
            want = conn.execute(ident).fetchone()[0]
    except psycopg.Error:
        want = None  # no right to read it: not checked
    notes = []
    for dsn in urls:
        try:
            with connect(dsn, vectors=False, timeout=CONNECT_TIMEOUT_S) as conn:
                got, standby = conn.execute(ident).fetchone()
        except BackendError as e:
            notes.append(f"replica {redact(dsn)} does not answer now ({_first_line(e)}); "
                         "recorded: reads skip it until it does")
            continue
        except psycopg.Error:
            continue
        if want is not None and got != want:
            raise BadInputError(f"--replica {redact(dsn)} is not a replica of "
                                f"{redact(primary)} (another database cluster)")
        if not standby:
            notes.append(f"replica {redact(dsn)} is not a standby (not in recovery): "
                         "ingests to the store may never reach it")
    return urls, notes
