"""A document inside the app: line numbers, cited lines highlighted with their page,
slide or cells in the source, chunk bounds, and for a source file its outline from the
symbol index (Enter jumps there)."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Header, OptionList, Static
from textual.widgets.option_list import Option

from kbagent.tui.format import located, plain
from kbagent.tui.host import host
from kbagent.tui.widgets import DocumentView


class DocumentScreen(Screen[None]):
    """Shows one stored document; Esc goes back, e opens it in $EDITOR."""

    BINDINGS = [  # noqa: RUF012
        Binding("escape,q", "app.pop_screen", "Back", id="doc.back"),
        Binding("e", "editor", "Editor", id="doc.editor"),
    ]

    DEFAULT_CSS = """
    DocumentScreen #outline { width: 34; max-width: 40%; border-right: solid $primary; }
    """

    def __init__(self, kb: str, path: str, lines: list[Any], *,
                 highlight: tuple[int, int] | None = None,
                 chunks: list[tuple[int, int]] | None = None, source: str = "",
                 outline: list[tuple[int, str, str]] | None = None,
                 location: str = "", chunk_locations: list[str] | None = None) -> None:
        super().__init__()
        self.kb, self.path, self.lines = kb, path, lines
        self.highlight, self.chunks, self.source = highlight, chunks or [], source
        self.outline = outline or []  # (line, kind, qualified name) of each definition
        # the page/slide/cells of the highlighted lines (of the whole document without
        # a highlight), and of each chunk: '' for formats without places (kb/locations.py)
        self.location, self.chunk_locations = location, chunk_locations or []

    def compose(self) -> ComposeResult:
        yield Header()
        where = f"{self.kb}:{self.path}"
        if self.highlight:
            where = f"{self.kb}:{located(self.path, self.location, *self.highlight)}"
        elif self.location:
            where += f" {self.location}"
        if self.chunks:
            where += f"  · {len(self.chunks)} chunks"
        yield Static(plain(where), id="doc-title")
        view = DocumentView(self.lines, highlight=self.highlight, chunks=self.chunks,
                            chunk_locations=self.chunk_locations, id="document")
        if self.outline:
            with Horizontal():
                yield OptionList(*(Option(plain(f"{line:>4} {kind} {name}"), id=str(line))
                                   for line, kind, name in self.outline), id="outline")
                yield view
        else:
            yield view
        yield Footer()

    @on(OptionList.OptionSelected, "#outline")
    def _jump(self, event: OptionList.OptionSelected) -> None:
        view = self.query_one(DocumentView)
        view.scroll_to_line(int(event.option.id or 1))
        view.focus()

    def on_mount(self) -> None:
        view = self.query_one(DocumentView)
        view.focus()
        if self.highlight:
            view.scroll_to_line(self.highlight[0])

    def action_editor(self) -> None:
        line = self.highlight[0] if self.highlight else 1
        host(self).open_in_editor({"kb": self.kb, "path": self.path, "start_line": line})
