"""The History screen: past questions newest first, with search; open one without
the LLM, re-run it, delete one or clear all (with confirmation)."""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Footer, Header, Input, Markdown, Static

from kbagent.agent.records import References
from kbagent.errors import KbagentError
from kbagent.safe_text import clean
from kbagent.tui.format import check_note, excerpt, plain
from kbagent.tui.host import host
from kbagent.tui.widgets import ReferencesPanel, answer_markdown


class Confirm(ModalScreen[bool]):
    """Yes / no."""

    BINDINGS = [Binding("escape,n", "dismiss(False)", "No", id="confirm.no"),  # noqa: RUF012
                Binding("y", "dismiss(True)", "Yes", id="confirm.yes")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(plain(self.question))
            with Horizontal():
                yield Button("Yes (y)", id="yes", variant="error")
                yield Button("No (n)", id="no")

    @on(Button.Pressed)
    def answer(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class HistoryEntryScreen(Screen[None]):
    """One past answer, from the history only (no LLM call)."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="entry.back"),  # noqa: RUF012
                Binding("r", "rerun", "Re-run", id="entry.rerun")]

    def __init__(self, entry: Any) -> None:
        super().__init__()
        self.entry = entry

    def compose(self) -> ComposeResult:
        e = self.entry
        res = e.result
        yield Header()
        with VerticalScroll(id="entry"):
            yield Static(plain(f"❯ {e.question}"), classes="question")
            yield Static(plain(f"{e.status} · mode {e.mode} · KBs {', '.join(e.kbs)}"),
                         classes="route")
            for s in res.get("steps", []):
                what = f"{s['action']}({s.get('args') or ''})" if s.get("action") else "answer"
                yield Static(plain(f"{s['step']}. {what}  {s.get('summary') or ''}"),
                             classes="past-step")
            md = "".join(answer_markdown(x["text"] + " ", x.get("supported"))
                         for x in res.get("sentences", [])) or clean(e.answer)
            yield Markdown(md, open_links=False, classes="answer")
            checks = host(self).answer_checks(res)
            stale = [c for c in checks.values() if c.stale]
            if stale:
                yield Static("\n".join(["⚠ the sources changed since this answer:"] + [
                    f"[{c.n}] {c.path}:{c.start_line}-{c.end_line}: {check_note(c)[2:]}"
                    for c in stale]), classes="stale-sources", markup=False)
            if res.get("references"):
                yield ReferencesPanel(References.from_json(res["references"]), checks,
                                      classes="refs-tree")
        yield Footer()

    def action_rerun(self) -> None:
        self.app.pop_screen()
        host(self).rerun(self.entry.question)

    @on(ReferencesPanel.NodeSelected)
    def open_ref(self, message: ReferencesPanel.NodeSelected[dict[str, Any]]) -> None:
        data = message.node.data
        if data and "n" in data:
            host(self).open_reference(data)

    @on(ReferencesPanel.Open)
    def ref_open(self, message: ReferencesPanel.Open) -> None:
        host(self).open_reference(message.ref, editor=message.editor)


class HistoryScreen(Screen[None]):
    BINDINGS = [  # noqa: RUF012
        Binding("r", "rerun", "Re-run", id="history.rerun"),
        Binding("d", "delete", "Delete", id="history.delete"),
        Binding("ctrl+x", "clear", "Clear all", id="history.clear"),
        Binding("ctrl+f", "focus_search", "Search", id="history.search"),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entries: list[Any] = []
        # (entry id, the KBs' live generations) -> its status cell: a search typed
        # letter by letter re-lists the entries without checking them again
        self._marks: dict[tuple[int, tuple[str, ...]], str] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Input(placeholder="search past questions and answers…", id="history-search")
        table: DataTable[str | Text] = DataTable(id="history", cursor_type="row",
                                                 zebra_stripes=True)
        table.add_columns("when", "question", "status", "answer")
        yield table
        yield Footer()

    def on_mount(self) -> None:
        self.reload()
        self.query_one("#history", DataTable).focus()

    def on_screen_resume(self) -> None:
        self.reload()

    def reload(self) -> None:
        search = self.query_one("#history-search", Input).value
        try:
            self.entries = host(self).history.list(search)
        except KbagentError as e:
            self.entries = []
            self.notify(str(e), title="History", severity="error")
        table = self.query_one("#history", DataTable)
        table.clear()
        for entry in self.entries:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.asked_at)) \
                if host(self).timings else "—"
            table.add_row(when, plain(excerpt(entry.question, 50)), self._status(entry),
                          plain(excerpt(entry.answer, 60)), key=str(entry.id))

    def _status(self, e: Any) -> str:
        """The entry's status, marked when a cited source changed since the answer."""
        from kbagent.kb.knowledge_base import KnowledgeBase, current_generation

        # a local KB's generation published on disk now; a PostgreSQL KB's open stamp
        gens = tuple((current_generation(kb.dir) or "") if isinstance(kb, KnowledgeBase)
                     else kb.generation for kb in host(self).session.kbs)
        key = (e.id, gens)
        if key not in self._marks:
            self._marks[key] = self._check(e)
        return self._marks[key]

    def _check(self, e: Any) -> str:
        try:
            checks = host(self).answer_checks(host(self).history.get(e.id).result)
        except KbagentError:
            return str(e.status)
        stale = [c for c in checks.values() if c.stale]
        if not stale:
            return str(e.status)
        from kbagent.kb.provenance import SEVERITY

        worst = max((c.state for c in stale), key=lambda s: SEVERITY[s])
        return f"{e.status} ⚠ {worst}"

    @on(Input.Changed, "#history-search")
    def search_changed(self) -> None:
        self.reload()

    def action_focus_search(self) -> None:
        self.query_one("#history-search", Input).focus()

    def _current(self) -> Any | None:
        table = self.query_one("#history", DataTable)
        if not self.entries or table.cursor_row < 0 or table.cursor_row >= len(self.entries):
            return None
        return self.entries[table.cursor_row]

    @on(DataTable.RowSelected, "#history")
    def open_entry(self) -> None:
        e = self._current()
        if e is None:
            return
        try:
            self.app.push_screen(HistoryEntryScreen(host(self).history.get(e.id)))
        except KbagentError as err:
            self.notify(str(err), title="History", severity="error")

    def action_rerun(self) -> None:
        e = self._current()
        if e is not None:
            host(self).rerun(e.question)

    def action_delete(self) -> None:
        e = self._current()
        if e is None:
            return

        def done(yes: bool | None) -> None:
            if yes:
                host(self).history.delete(e.id)
                self.reload()

        self.app.push_screen(Confirm(f"Delete “{excerpt(e.question, 60)}”?"), done)

    def action_clear(self) -> None:
        def done(yes: bool | None) -> None:
            if yes:
                n = host(self).history.clear()
                self.notify(f"{n} questions deleted")
                self.reload()

        self.app.push_screen(Confirm("Delete the whole history?"), done)
