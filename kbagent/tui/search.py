"""The Search screen: hybrid search as you type (debounced), no LLM needed."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Header, Input, Static

from kbagent.errors import KbagentError
from kbagent.tui.format import excerpt, located, plain
from kbagent.tui.host import host

DEBOUNCE_S = 0.25


class SearchDone(Message):
    def __init__(self, query: str, result: Any, error: str = "") -> None:
        super().__init__()
        self.query, self.result, self.error = query, result, error


class SearchScreen(Screen[None]):
    """Type to search every open KB (BM25 + vectors, fused by RRF)."""

    BINDINGS = [  # noqa: RUF012
        Binding("ctrl+f", "focus_query", "Query", id="search.query"),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._timer: Timer | None = None
        self.hits: list[Any] = []
        self.searched = ""  # the query the table shows

    def compose(self) -> ComposeResult:
        yield Header()
        yield Input(placeholder="Search the knowledge bases…", id="query")
        yield Static("Type to search; Enter on a result opens it at its lines.", id="status")
        table: DataTable[str | Text] = DataTable(id="results", cursor_type="row",
                                                 zebra_stripes=True)
        table.add_columns("#", "where", "score", "bm25", "vector", "excerpt")
        yield table
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#query", Input).focus()

    def action_focus_query(self) -> None:
        self.query_one("#query", Input).focus()

    @on(Input.Changed, "#query")
    def query_changed(self, event: Input.Changed) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(DEBOUNCE_S, lambda: self.search(event.value))

    @on(Input.Submitted, "#query")
    def query_submitted(self, event: Input.Submitted) -> None:
        if self._timer is not None:
            self._timer.stop()
        self.search(event.value)
        self.query_one("#results", DataTable).focus()

    def search(self, query: str) -> None:
        if not query.strip():
            return
        self.query_one("#status", Static).update(plain(f"searching {query!r}…"))
        self.run_search(query)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def run_search(self, query: str) -> None:
        try:
            result = host(self).session.search(query, k=20)
        except KbagentError as e:
            self.post_message(SearchDone(query, None, str(e)))
        except Exception as e:  # never a traceback on screen
            self.post_message(SearchDone(query, None, f"{type(e).__name__}: {e}"))
        else:
            self.post_message(SearchDone(query, result))

    @on(SearchDone)
    def show(self, message: SearchDone) -> None:
        status = self.query_one("#status", Static)
        if message.error:
            status.update(plain(f"search failed: {message.error}"))
            return
        if message.query != self.query_one("#query", Input).value:
            return  # an older query's answer: a newer search is on its way
        result = message.result
        self.hits, self.searched = result.hits, message.query
        table = self.query_one("#results", DataTable)
        table.clear()
        multi = len(host(self).session.kbs) > 1
        for i, h in enumerate(result.hits, 1):
            where = (f"{h.kb}:" if multi else "") + located(h.path, h.location, h.start_line,
                                                             h.end_line)
            table.add_row(str(i), plain(where), f"{h.score:.4f}", f"#{h.bm25_rank}"
                          if h.bm25_rank else "-", f"#{h.vector_rank}" if h.vector_rank
                          else "-", plain(excerpt(h.text, 60)), key=str(i))
        failed = "".join(f"; KB '{n}' failed" for n in result.failed_kbs)
        status.update(plain(f"{len(result.hits)} results for {message.query!r}{failed}"))

    @on(DataTable.RowSelected, "#results")
    def open_hit(self, event: DataTable.RowSelected) -> None:
        i = int(event.row_key.value or 0) - 1
        if 0 <= i < len(self.hits):
            h = self.hits[i]
            host(self).open_document(h.kb, h.path, (h.start_line, h.end_line))
