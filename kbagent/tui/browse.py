"""The Browse screen: the KBs (documents, chunks, model, last ingest), a tree of each
KB's documents, and ingesting a folder with a progress bar (cancellable)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, Footer, Header, Input, ProgressBar, Static, Tree

from kbagent.agent.cancel import CancelToken
from kbagent.errors import KbagentError
from kbagent.kb.views import FileViews
from kbagent.tui.format import plain
from kbagent.tui.host import host


class IngestCancelled(Exception):
    """Raised from the progress callback to stop an ingest (nothing is published)."""


class BrowseScreen(Screen[None]):
    """KB info and documents; Enter on a document opens it with its chunk boundaries."""

    BINDINGS = [  # noqa: RUF012
        Binding("ctrl+g", "focus_ingest", "Ingest folder", id="browse.ingest"),
        Binding("escape", "cancel_ingest", "Cancel ingest", id="browse.cancel"),
        Binding("ctrl+o", "reload", "Reload", id="browse.reload"),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._ingest_token: CancelToken | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="browse-main"):
            yield Tree("knowledge bases", id="kb-tree")
            with Vertical(id="browse-side"):
                yield Static("", id="kb-info")
                yield Input(placeholder="folder to ingest (Enter)", id="ingest-path")
                yield Input(placeholder="KB name (default: the folder's name)", id="ingest-kb")
                yield ProgressBar(id="ingest-progress", show_eta=False)
                yield Static("", id="ingest-status")
                yield Button("Cancel ingest", id="ingest-cancel", disabled=True)
        yield Footer()

    def on_mount(self) -> None:
        self.reload()
        self.query_one("#kb-tree", Tree).focus()

    def on_screen_resume(self) -> None:
        self.reload()

    def action_reload(self) -> None:
        host(self).open_kbs()
        self.reload()

    def reload(self) -> None:
        from kbagent.kb.stores import list_all_kbs

        tree = self.query_one("#kb-tree", Tree)
        tree.clear()
        tree.root.expand()
        info_lines = []
        try:
            infos = list_all_kbs(host(self).settings)
        except OSError as e:
            infos = []
            info_lines.append(f"cannot list KBs: {e}")
        open_kbs = {kb.name: kb for kb in host(self).session.kbs}
        for i in infos:
            if i.error:
                info_lines.append(f"{i.name}: {i.error}")
                continue
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(i.updated_at))
            kb = open_kbs.get(i.name)
            if kb is not None:
                with contextlib.suppress(KbagentError):
                    kb.refresh()  # follow a generation published since (ingest, --watch)
            if kb is not None:  # counts of what the session's principal may read
                docs, chunks = kb.store.visible_counts(host(self).session.principal)
                info_lines.append(f"{i.name}: {docs} documents, {chunks} chunks, "
                                  f"{i.embedding_model}, last ingest {when}")
            else:
                info_lines.append(f"{i.name}: not open, last ingest {when}")
            node = tree.root.add(plain(i.name), expand=True, data={"kb": i.name})
            if kb is None:
                node.add_leaf("(not open in this session; Ctrl+O reloads)")
                continue
            folders: dict[str, Any] = {"": node}
            for path in FileViews(kb, host(self).session.principal).paths():
                parent = ""
                parts = path.split("/")
                for part in parts[:-1]:
                    key = f"{parent}/{part}" if parent else part
                    if key not in folders:
                        folders[key] = folders[parent].add(plain(part + "/"), expand=True)
                    parent = key
                folders[parent].add_leaf(plain(parts[-1]), data={"kb": i.name, "path": path})
        if not infos:
            info_lines.append("no knowledge base yet: type a folder below and press Enter")
        self.query_one("#kb-info", Static).update(plain("\n".join(info_lines)))

    @on(Tree.NodeSelected, "#kb-tree")
    def open_doc(self, event: Tree.NodeSelected[dict[str, Any]]) -> None:
        data = event.node.data
        if data and "path" in data:
            host(self).open_document(data["kb"], data["path"], None, chunks=True)

    # --- ingest -----------------------------------------------------------------
    def action_focus_ingest(self) -> None:
        self.query_one("#ingest-path", Input).focus()

    @on(Input.Submitted, "#ingest-path")
    @on(Input.Submitted, "#ingest-kb")
    def start_ingest(self) -> None:
        from kbagent.kb.knowledge_base import name_from_folder, validate_name

        raw = self.query_one("#ingest-path", Input).value.strip()
        if not raw:
            self.notify("type the folder to ingest", severity="warning")
            return
        if self._ingest_token is not None:
            self.notify("an ingest is running; Esc cancels it", severity="warning")
            return
        folder = Path(raw).expanduser()
        try:
            name_raw = self.query_one("#ingest-kb", Input).value.strip()
            name = validate_name(name_raw) if name_raw else name_from_folder(folder)
        except KbagentError as e:
            self.notify(str(e), title="Ingest", severity="error")
            return
        self._ingest_token = CancelToken()
        self.query_one("#ingest-cancel", Button).disabled = False
        self.query_one("#ingest-status", Static).update(
            plain(f"ingesting {folder} into '{name}'…"))
        self.ingest(folder, name, self._ingest_token)

    @work(thread=True, exclusive=True, group="ingest", exit_on_error=False)
    def ingest(self, folder: Path, name: str, token: CancelToken) -> None:
        from kbagent.kb.ingest import Ingestor

        labels = {"scan": "reading files", "embed": "embedding chunks",
                  "write": "indexing chunks"}

        def progress(phase: str, done: int, total: int) -> None:
            if token.cancelled:
                raise IngestCancelled
            self.app.call_from_thread(self.show_progress, labels.get(phase, phase), done, total)

        try:
            report = Ingestor(host(self).settings, name, progress=progress).run(folder)
        except IngestCancelled:
            self.app.call_from_thread(self.ingest_done, f"cancelled; KB '{name}' is unchanged")
        except KbagentError as e:
            self.app.call_from_thread(self.ingest_done, f"ingest failed: {e}", True)
        except Exception as e:
            self.app.call_from_thread(self.ingest_done, f"ingest failed: {type(e).__name__}: "
                                      f"{e}", True)
        else:
            parts = ", ".join(f"{v} {k}" for k, v in report.summary().items())
            self.app.call_from_thread(self.ingest_done, f"KB '{name}': {parts}; "
                                      f"{report.chunks_total} chunks", False, name)

    def show_progress(self, label: str, done: int, total: int) -> None:
        bar = self.query_one("#ingest-progress", ProgressBar)
        bar.update(total=max(total, 1), progress=done)
        self.query_one("#ingest-status", Static).update(f"{label}: {done}/{total}")

    def ingest_done(self, message: str, error: bool = False, name: str = "") -> None:
        self._ingest_token = None
        self.query_one("#ingest-cancel", Button).disabled = True
        self.query_one("#ingest-status", Static).update(plain(message))
        self.notify(message, title="Ingest", severity="error" if error else "information")
        if name:
            session = host(self).session
            if session.kb_names and name not in session.kb_names:
                session.kb_names.append(name)
            host(self).open_kbs()
            self.reload()

    @on(Button.Pressed, "#ingest-cancel")
    def action_cancel_ingest(self) -> None:
        if self._ingest_token is not None:
            self._ingest_token.cancel()
            self.query_one("#ingest-status", Static).update("cancelling…")
