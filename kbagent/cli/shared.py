"""Pieces several command modules use, under public names (a command module
imports no other command module): the ingest progress bar, the error of a Ctrl-C
during an ingest, the main-thread check before setting a signal handler, and
opening KBs with a warning for each one that fails."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, ClassVar

from kbagent.cli.common import stderr_console, warn
from kbagent.errors import Interrupted

if TYPE_CHECKING:
    from kbagent.kb.store_protocol import KbReader
    from kbagent.settings import Settings


class ProgressBar:
    """A rich progress bar on stderr (files, then chunks), silent when not a TTY."""

    LABELS: ClassVar[dict[str, str]] = {
        "scan": "reading files", "embed": "embedding chunks", "write": "indexing chunks",
        "extract": "big file pages/rows",
    }

    def __init__(self, enabled: bool, console: Any = None) -> None:
        self.enabled = enabled
        self._console = console  # default: stderr
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> ProgressBar:
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description:<17}"), BarColumn(), MofNCompleteColumn(),
                TaskProgressColumn(), TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                TextColumn("eta"), TimeRemainingColumn(),
                console=self._console or stderr_console(), transient=False,
            )
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def __call__(self, phase: str, done: int, total: int) -> None:
        if self._progress is None or (phase == "write" and total == 0):
            return
        task = self._tasks.get(phase)
        if task is None:
            task = self._progress.add_task(self.LABELS.get(phase, phase), total=total, rate="")
            self._tasks[phase] = task
        t = self._progress.tasks[task]
        elapsed = t.elapsed or 0.0
        unit = {"scan": "files", "extract": "pages/rows"}.get(phase, "chunks")
        rate = f"{done / elapsed:,.0f} {unit}/s" if elapsed > 0.5 and done else ""
        self._progress.update(task, completed=done, total=total, rate=rate)


def ingest_interrupted(name: str) -> Interrupted:
    """The error for a Ctrl-C during an ingest (the KB keeps its live generation)."""
    return Interrupted(f"interrupted; KB '{name}' is unchanged (re-run to finish, "
                       "finished embeddings are reused)")


def threading_main() -> bool:
    """Whether this is the main thread (the only one that may set a signal handler)."""
    return threading.current_thread() is threading.main_thread()


def open_kbs(settings: Settings, names: list[str] | None) -> list[KbReader]:
    """Open the named KBs, or every KB when none is named (see
    :func:`kbagent.session_kbs.open_kbs`); a KB that fails to open is a warning while
    another one serves."""
    from kbagent.session_kbs import open_kbs as session_open_kbs

    opened = session_open_kbs(settings, names)
    for name, reason in opened.failed.items():
        warn(f"KB '{name}' failed: {reason}")
    return opened.kbs
