"""One writer per KB: an advisory ``flock`` on ``<kb>/.lock``.

The kernel drops the lock when the holder dies, so a killed ingest never
leaves a stale lock behind. The file records the holder's pid for the message.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from kbagent.errors import KbBusyError
from kbagent.kb.file_modes import private_dir


class WriterLock:
    def __init__(self, kb_dir: Path, kb_name: str) -> None:
        self.path = kb_dir / ".lock"
        self.kb_name = kb_name
        self._fd: int | None = None

    def acquire(self) -> None:
        private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            finally:
                os.close(fd)
            raise KbBusyError(
                f"KB '{self.kb_name}' is being written by another ingest (pid {holder}); "
                "wait for it to finish"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
