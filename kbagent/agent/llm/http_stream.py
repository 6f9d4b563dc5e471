"""An HTTP request whose blocking reads end when the run ends.

A server that accepts a request and then stops sending would hold a plain
``urlopen`` read for its whole socket timeout (minutes), past the run's time
limit and deaf to a cancel. :func:`open_guarded` connects through an opener
that hands the connection's socket to a :class:`ReadGuard` the moment it is
connected; the guard shuts that socket down when the cancel token fires or the
deadline passes, which wakes a read blocked in ``recv`` at once, whether it
waits for the response headers or for the next streamed token. The socket
timeout is the remaining time too, so nothing waits longer than the deadline.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.request
from typing import Any

from kbagent.agent.cancel import CancelToken

CANCELLED = "cancelled"
TIME_LIMIT = "time limit"


class ReadGuard:
    """Shuts a connection's socket down on a cancel or at a deadline
    (``time.perf_counter()`` seconds). :attr:`fired` says why it did, if it did."""

    def __init__(self, cancel: CancelToken | None, deadline: float | None) -> None:
        self.cancel, self.deadline = cancel, deadline
        self.fired = ""
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._unregister: Any = None

    def timeout(self, limit: float) -> float:
        """The socket timeout: ``limit``, or the time left when that is shorter."""
        if self.deadline is None:
            return limit
        # a little past the deadline: the guard's timer, not the socket, ends the read
        return max(0.05, min(limit, self.deadline - time.perf_counter() + 0.5))

    def ended(self) -> str:
        """Why the guard stopped the connection ("" if it did not): a socket timeout
        at the deadline can come a moment before the timer fires, and counts too."""
        if not self.fired and self.deadline is not None and time.perf_counter() >= self.deadline:
            self.fire(TIME_LIMIT)
        return self.fired

    def __enter__(self) -> ReadGuard:
        if self.cancel is not None:
            self._unregister = self.cancel.on_cancel(lambda: self.fire(CANCELLED))
        if self.deadline is not None:
            left = self.deadline - time.perf_counter()
            if left <= 0:
                self.fire(TIME_LIMIT)
            else:
                self._timer = threading.Timer(left, self.fire, (TIME_LIMIT,))
                self._timer.daemon = True
                self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._unregister is not None:
            self._unregister()

    def attach(self, sock: socket.socket) -> None:
        """The connection's socket, once connected (shut at once if the guard fired)."""
        with self._lock:
            self._sock = sock
            fired = bool(self.fired)
        if fired:
            _shut(sock)

    def fire(self, reason: str) -> None:
        with self._lock:
            if self.fired:
                return
            self.fired = reason
            sock = self._sock
        if sock is not None:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    """Wake a thread blocked in ``recv`` on ``sock`` (a plain close() does not); the
    reader's own ``with resp`` closes it."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _hooked(http_class: Any, guard: ReadGuard) -> Any:
    """``http_class`` (HTTPConnection or HTTPSConnection) reporting its socket to
    ``guard`` as soon as it is connected (TLS included)."""

    class Hooked(http_class):  # type: ignore[misc]
        def connect(self) -> None:
            super().connect()
            guard.attach(self.sock)

    return Hooked


class _HttpHandler(urllib.request.HTTPHandler):
    def __init__(self, guard: ReadGuard) -> None:
        super().__init__()
        self.guard = guard

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_hooked(http_class, self.guard), req, **kwargs)


class _HttpsHandler(urllib.request.HTTPSHandler):
    def __init__(self, guard: ReadGuard) -> None:
        super().__init__()
        self.guard = guard

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_hooked(http_class, self.guard), req, **kwargs)


def open_guarded(req: urllib.request.Request, guard: ReadGuard, timeout: float) -> Any:
    """``urlopen(req)`` whose socket ``guard`` can shut down (proxies from the
    environment still apply); the socket timeout is at most the time left."""
    opener = urllib.request.build_opener(_HttpHandler(guard), _HttpsHandler(guard))
    return opener.open(req, timeout=guard.timeout(timeout))
