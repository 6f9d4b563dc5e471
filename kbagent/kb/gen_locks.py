"""Old generations are deleted once no reader uses them.

A reader holds a shared ``flock`` on the folder of the generation it opened
(:func:`open_current`), for as long as it reads it. After publishing a new
generation, ingest (the one writer, under the KB's writer lock) calls
:func:`collect`: each older generation it can lock *exclusively* is renamed out
of the way (``.gen-NNNNNN.deleting-PID``) and removed; one a reader still holds is
left, and the next ingest collects it. The kernel drops a dead process's locks,
so a crashed reader never pins a generation for good.

The race between a reader that read ``CURRENT`` just before a commit and the
collector is closed by checking, once the shared lock is held, that the path
still names the folder that was locked (the collector renames it while holding
the exclusive lock): if not, the reader reads ``CURRENT`` again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

GEN_RE = re.compile(r"^gen-[0-9]{6,}$")
TRASH_RE = re.compile(r"^\.gen-[0-9]{6,}\.deleting-[0-9]+$")
_RETRIES = 200  # ~2 s of a collector holding the folder a reader wants: never in practice


def lock_shared(gen_dir: Path) -> int | None:
    """A shared lock on ``gen_dir`` (an open fd), or None when the folder is missing
    or being deleted."""
    try:
        fd = os.open(gen_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        held, now = os.fstat(fd), os.stat(gen_dir)
        if (held.st_ino, held.st_dev) == (now.st_ino, now.st_dev):
            return fd
    except OSError:  # locked by the collector, or renamed away meanwhile
        pass
    os.close(fd)
    return None


def release(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)  # closing the only descriptor drops the flock


def release_all(held: list[tuple[str, int]]) -> None:
    """Release every (generation, fd) lock in ``held`` (emptied)."""
    while held:
        release(held.pop()[1])


def release_older(held: list[tuple[str, int]], keep: set[str]) -> None:
    """Release the locks in ``held`` on generations not in ``keep`` (in place)."""
    for item in [h for h in held if h[0] not in keep]:
        held.remove(item)
        release(item[1])


def open_current(kb_dir: Path, read_current: Callable[[], str | None]
                 ) -> tuple[str | None, int | None]:
    """The generation ``CURRENT`` names and a shared lock on it. The lock is None
    when the folder cannot be locked because it is missing: the caller then reports
    the KB as it finds it (corrupted)."""
    gen = read_current()
    for _ in range(_RETRIES):
        if gen is None:
            return None, None
        fd = lock_shared(kb_dir / gen)
        if fd is not None:
            return gen, fd
        again = read_current()
        if again == gen and not (kb_dir / gen).is_dir():
            return gen, None  # CURRENT names a folder that is not there
        if again == gen:
            time.sleep(0.01)  # a collector holds it this instant (it cannot be CURRENT's)
        gen = again
    return gen, None


def collect(kb_dir: Path, keep: str | None) -> list[str]:
    """Remove the generation folders of ``kb_dir`` other than ``keep`` that no reader
    holds (and the leftovers of a collect that was killed); return the names removed.
    Only the writer calls this, holding the KB's writer lock."""
    removed: list[str] = []
    if not kb_dir.is_dir():
        return removed
    for d in sorted(kb_dir.iterdir()):
        if TRASH_RE.match(d.name):
            shutil.rmtree(d, ignore_errors=True)
        elif GEN_RE.match(d.name) and d.name != keep and d.is_dir() and not d.is_symlink():
            try:
                fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                trash = d.with_name(f".{d.name}.deleting-{os.getpid()}")
                os.rename(d, trash)  # new readers no longer find it by name
            except OSError:  # a reader holds it: the next ingest collects it
                continue
            finally:
                os.close(fd)
            shutil.rmtree(trash, ignore_errors=True)
            removed.append(d.name)
    return removed
