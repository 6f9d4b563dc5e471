"""Private files: everything kbagent writes that can hold document text (KB
databases and indexes, the last answers, the history, traces) is created 0600
in folders created 0700, whatever the umask, and an existing one found wider
is tightened where that is cheap (its owner running kbagent).

The umask can only remove permission bits, so creating with 0600/0700 and then
``chmod``-ing to the same mode gives exactly that mode; the ``chmod`` matters for
files that already existed, and for files other libraries create (SQLite,
tantivy, usearch) inside a private folder, which :func:`tighten_tree` fixes
before anything is published."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import TextIO

FILE_MODE = 0o600
DIR_MODE = 0o700


def tighten(path: Path, mode: int) -> None:
    """``chmod`` ``path`` to ``mode`` if its permission bits differ (errors ignored:
    a file another user owns, or one that vanished, stays as it is)."""
    with contextlib.suppress(OSError):
        if stat.S_IMODE(os.stat(path).st_mode) != mode:
            os.chmod(path, mode)


def private_dir(path: Path) -> Path:
    """Make ``path`` (and any missing parent) a folder with mode 0700; an existing
    ``path`` is tightened to 0700 (existing parents are left alone)."""
    path = Path(path)
    missing: list[Path] = []
    p = path
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(d, DIR_MODE)
        tighten(d, DIR_MODE)
    tighten(path, DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600 if missing (an empty file is also an
    empty SQLite database, so SQLite keeps that mode and gives it to its journal),
    else tighten it to 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != FILE_MODE:
            with contextlib.suppress(OSError):
                os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return path


def open_private(path: Path, append: bool = False) -> TextIO:
    """``open(path, "w")`` (or ``"a"``) for UTF-8 text, the file 0600 (a device or a
    pipe named as an output, like ``/dev/stdout``, is written without a ``chmod``)."""

    def opener(name: str, flags: int) -> int:
        fd = os.open(name, flags, FILE_MODE)
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) != FILE_MODE:
            with contextlib.suppress(OSError):
                os.fchmod(fd, FILE_MODE)
        return fd

    if append:
        return open(path, "a", encoding="utf-8", opener=opener)
    return open(path, "w", encoding="utf-8", opener=opener)


def tighten_tree(root: Path) -> None:
    """Every folder under ``root`` (itself included) 0700, every file 0600."""
    tighten(root, DIR_MODE)
    for base, dirs, files in os.walk(root):
        for d in dirs:
            tighten(Path(base, d), DIR_MODE)
        for f in files:
            tighten(Path(base, f), FILE_MODE)


def write_atomic(path: Path, data: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open_private(tmp) as f:  # 0600: a last answer or a manifest quotes documents
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_path(path.parent)


def fsync_path(path: Path) -> None:
    """fsync a file or a directory (a directory: so that a rename in it is durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
