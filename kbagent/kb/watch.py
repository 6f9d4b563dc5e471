"""Watch mode: keep a KB in step with its folder (``kbagent ingest DIR --watch``).

After the normal (full, incremental) ingest, :class:`FolderWatcher` waits for file
events (``watchfiles``: inotify, FSEvents, ReadDirectoryChangesW; polling where
there are none). A burst of saves is debounced into one batch; each batch is one
incremental ingest (:class:`~kbagent.kb.ingest.Ingestor`) that reads only the
files the events named (every other file already in the KB is known unchanged)
and publishes one new generation. So each update has the ingest's guarantees:
one writer (the lock), readers never see half a commit, a kill at any moment
leaves the previous generation live, and the next start catches up (its first
ingest compares every file's hash).

Events on ignored paths (``.gitignore``/``.kbagentignore``, tool folders, editor
swap files) start no update. A changed ignore file or ``.kbaccess`` makes the
batch re-read the whole folder, so access is applied again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pathspec
import watchfiles

from kbagent.errors import KbagentError, KbBusyError
from kbagent.kb.ingest import Ingestor
from kbagent.kb.models import FileReport, IngestReport
from kbagent.kb.walker import ALWAYS_SKIP_DIRS, IGNORE_FILES, in_kb_home

DEBOUNCE_MS = 1600  # longest a batch gathers events
STEP_MS = 300  # a batch closes after this long without a new event
RETRY_S = 2.0  # a batch that met a busy KB (another ingest) is tried again after this
RESCAN_FILES = (*IGNORE_FILES, ".kbaccess")  # a change here re-reads the whole folder


@dataclass
class WatchUpdate:
    """One applied batch, for the one log line."""

    added: int = 0
    changed: int = 0
    removed: int = 0
    chunks: int = 0  # chunks of the added and changed files
    chunks_total: int = 0
    seconds: float = 0.0
    committed: bool = False  # False: nothing to change (no new generation)
    generation: str = ""
    full: bool = False  # the whole folder was read again (ignore or access file changed)
    error: str = ""  # the batch failed (the KB keeps its live generation)
    paths: list[str] = field(default_factory=list)
    # the batch's files with a note, as ingest prints them (skipped, failed, a malformed
    # access declaration "hidden until fixed", ...)
    notes: list[FileReport] = field(default_factory=list)

    @classmethod
    def of(cls, report: IngestReport, generation: str, full: bool) -> WatchUpdate:
        s = report.summary()
        return cls(added=s.get("added", 0), changed=s.get("updated", 0),
                   removed=s.get("removed", 0),
                   chunks=sum(f.chunks for f in report.files if f.status in ("added",
                                                                               "updated")),
                   chunks_total=report.chunks_total, seconds=report.seconds,
                   committed=report.committed, generation=generation, full=full,
                   notes=[f for f in report.files if f.reason])

    def line(self) -> str:
        if self.error:
            return f"update failed: {self.error} (the KB is unchanged)"
        if not self.committed:
            return f"no change to the KB ({self.seconds:.2f}s)"
        return (f"{self.generation}: {self.added} added, {self.changed} changed, "
                f"{self.removed} removed; {self.chunks} chunks indexed, {self.chunks_total} "
                f"in the KB; {self.seconds:.2f}s" + (" (whole folder re-read)" if self.full
                                                    else ""))


class IgnoreRules:
    """Is a path one the walker would skip? (ignore files of its folder and above,
    tool folders). Ignore files are read again when an event names one."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._specs: dict[Path, pathspec.GitIgnoreSpec | None] = {}

    def forget(self) -> None:
        self._specs.clear()

    def _spec(self, folder: Path) -> pathspec.GitIgnoreSpec | None:
        if folder not in self._specs:
            lines: list[str] = []
            for name in IGNORE_FILES:
                try:
                    lines += (folder / name).read_text(encoding="utf-8",
                                                       errors="replace").splitlines()
                except OSError:
                    continue
            self._specs[folder] = pathspec.GitIgnoreSpec.from_lines(lines) if lines else None
        return self._specs[folder]

    def ignored(self, rel: str) -> bool:
        parts = rel.split("/")
        if any(p in ALWAYS_SKIP_DIRS for p in parts[:-1]) or in_kb_home(self.root, parts):
            return True  # (a kbagent home in the folder: the store the ingest writes)
        if parts[-1] in RESCAN_FILES:
            return False
        for i in range(len(parts)):  # the ignore files of each folder above the path
            spec = self._spec(self.root.joinpath(*parts[:i]))
            if spec is None:
                continue
            below = "/".join(parts[i:])
            if spec.match_file(below):
                return True
            # a folder above the file ignored by this spec ("build/")
            if any(spec.match_file("/".join(parts[i:j]) + "/") for j in range(i + 1,
                                                                                 len(parts))):
                return True
        return False


class FolderWatcher:
    """Apply a folder's changes to a KB as they happen, until stopped."""

    def __init__(self, ingestor: Ingestor, source: Path, *,
                 on_update: Callable[[WatchUpdate], None] | None = None,
                 stop_event: threading.Event | None = None, debounce_ms: int = DEBOUNCE_MS,
                 step_ms: int = STEP_MS, force_polling: bool | None = None) -> None:
        self.ingestor = ingestor
        self.source = Path(source).expanduser().resolve()
        self.on_update = on_update or (lambda update: None)
        self.stop_event = stop_event or threading.Event()
        self.debounce_ms, self.step_ms = debounce_ms, step_ms
        self.force_polling = force_polling
        self.rules = IgnoreRules(self.source)
        self.updates = 0  # batches applied (committed or not)

    def stop(self) -> None:
        self.stop_event.set()

    def relevant(self, changes: set[tuple[Any, str]]) -> tuple[set[str], bool]:
        """(KB-relative paths that matter, whether the whole folder must be re-read)."""
        paths: set[str] = set()
        full = False
        for _, raw in changes:
            try:
                rel = Path(raw).resolve().relative_to(self.source).as_posix()
            except ValueError:
                continue
            if rel in ("", "."):
                continue
            name = rel.rsplit("/", 1)[-1]
            if name in RESCAN_FILES:
                full = True
                self.rules.forget()
                continue
            if not self.rules.ignored(rel):
                paths.add(rel)
        return paths, full

    def apply(self, paths: set[str], full: bool) -> WatchUpdate:
        """One incremental ingest of ``paths`` (all files when ``full``)."""
        started = time.perf_counter()
        self.ingestor.only_paths = None if full else paths
        try:
            report = self.ingestor.run(self.source)
        finally:
            self.ingestor.only_paths = None
        from kbagent.kb.knowledge_base import current_generation

        update = WatchUpdate.of(report, current_generation(self.ingestor.dir) or "", full)
        update.seconds = time.perf_counter() - started
        update.paths = sorted(paths)
        return update

    def run(self) -> None:
        """Watch until :meth:`stop` (or Ctrl-C in the main thread: KeyboardInterrupt)."""
        pending: set[str] = set()
        full = False
        for changes in watchfiles.watch(
                self.source, watch_filter=watchfiles.DefaultFilter(), debounce=self.debounce_ms,
                step=self.step_ms, stop_event=self.stop_event,
                rust_timeout=int(RETRY_S * 1000), yield_on_timeout=True,
                force_polling=self.force_polling, ignore_permission_denied=True):
            paths, rescan = self.relevant(changes)
            pending |= paths
            full = full or rescan
            if not pending and not full:
                continue
            try:
                update = self.apply(pending, full)
            except KbBusyError:
                continue  # another writer: the batch waits for the next wake-up
            except KbagentError as e:  # e.g. the folder emptied: the KB keeps its generation
                update = WatchUpdate(error=str(e), paths=sorted(pending))
            pending, full = set(), False
            self.updates += 1
            self.on_update(update)
