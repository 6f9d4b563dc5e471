"""A document inside the app: line numbers, cited lines highlighted, chunk bounds."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from kbagent.tui.widgets import DocumentView


class DocumentScreen(Screen):
    """Shows one stored document; Esc goes back, e opens it in $EDITOR."""

    BINDINGS = [  # noqa: RUF012
        Binding("escape,q", "app.pop_screen", "Back", id="doc.back"),
        Binding("e", "editor", "Editor", id="doc.editor"),
    ]

    def __init__(self, kb: str, path: str, lines: list[Any], *,
                 highlight: tuple[int, int] | None = None,
                 chunks: list[tuple[int, int]] | None = None, source: str = "") -> None:
        super().__init__()
        self.kb, self.path, self.lines = kb, path, lines
        self.highlight, self.chunks, self.source = highlight, chunks or [], source

    def compose(self) -> ComposeResult:
        yield Header()
        where = f"{self.kb}:{self.path}"
        if self.highlight:
            where += f"  · lines {self.highlight[0]}-{self.highlight[1]}"
        if self.chunks:
            where += f"  · {len(self.chunks)} chunks"
        yield Static(where, id="doc-title")
        yield DocumentView(self.lines, highlight=self.highlight, chunks=self.chunks,
                           id="document")
        yield Footer()

    def on_mount(self) -> None:
        view = self.query_one(DocumentView)
        view.focus()
        if self.highlight:
            view.scroll_to_line(self.highlight[0])

    def action_editor(self) -> None:
        line = self.highlight[0] if self.highlight else 1
        self.app.open_in_editor({"kb": self.kb, "path": self.path, "start_line": line})
