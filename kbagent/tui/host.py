"""What the screens use of the app they run in (:class:`~kbagent.tui.app.KbApp`),
as a protocol: Textual types a widget's ``app`` as a plain ``App``, and the screens
cannot import ``KbApp`` (it imports them). :func:`host` gives a widget its app as a
:class:`Host`; ``tui/app.py`` has mypy check that ``KbApp`` is one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

from textual.message_pump import MessagePump

from kbagent.history import History
from kbagent.session import Session
from kbagent.settings import Settings


@runtime_checkable
class Host(Protocol):
    settings: Settings
    session: Session
    history: History
    timings: bool  # off in snapshot tests: no clock-dependent text
    llm_error: str
    switching: str  # the model being loaded to replace the one in use ("" when none)

    def open_kbs(self) -> None: ...

    def update_header(self) -> None: ...

    def load_llm(self) -> Any: ...  # a thread worker: returns the Worker

    def switch_llm(self, model: str, url: str = "") -> bool: ...

    def run_question(self, question: str, previous: tuple[str, str] | None,
                     token: Any) -> Iterator[Any]: ...

    def reference_lines(self, ref: dict[str, Any]) -> list[Any] | None: ...

    def reference_check(self, ref: dict[str, Any]) -> Any | None: ...

    def answer_checks(self, answer: dict[str, Any]) -> dict[int, Any]: ...

    def open_reference(self, ref: dict[str, Any], editor: bool = False) -> None: ...

    def open_document(self, kb_name: str, path: str, lines: tuple[int, int] | None = None,
                      chunks: bool = False) -> None: ...

    def open_in_editor(self, ref: dict[str, Any]) -> None: ...

    def save_result(self, result: Any) -> None: ...

    def rerun(self, question: str) -> None: ...


def host(node: MessagePump) -> Host:
    """The app ``node`` runs in, as the screens use it."""
    app = node.app
    assert isinstance(app, Host), f"{type(app).__name__} is not kbagent's app"
    return app
