"""A per-run cancel token shared by the loop, the tools and the LLM backends.

A UI creates one token per question *before* it starts the run, so a cancel
pressed between "submit" and the run's first step is not lost. Backends that
block (an HTTP read) register a callback with :meth:`CancelToken.on_cancel`
that unblocks them (closing the response); token loops (llama.cpp) poll
:attr:`CancelToken.cancelled` between tokens.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable


class CancelToken:
    """Thread-safe, one-shot: once cancelled it stays cancelled."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.cancelled_at: float | None = None  # time.perf_counter() of the cancel

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def is_set(self) -> bool:  # threading.Event's spelling, for old call sites
        return self._event.is_set()

    def cancel(self) -> None:
        """Cancel the run; run every registered callback once (errors are ignored:
        closing an already closed response must not break the canceller)."""
        with self._lock:
            if self._event.is_set():
                return
            self.cancelled_at = time.perf_counter()
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            with contextlib.suppress(Exception):
                cb()

    # ``set`` keeps the threading.Event interface the loop used before
    set = cancel

    def on_cancel(self, cb: Callable[[], None]) -> Callable[[], None]:
        """Call ``cb`` when the token is cancelled (at once if it already is).
        Returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(cb)

                def remove() -> None:
                    with self._lock:
                        if cb in self._callbacks:
                            self._callbacks.remove(cb)

                return remove
        cb()
        return lambda: None

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)
