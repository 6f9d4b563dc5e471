"""The Models picker (F6; "Switch model" in the command palette): the models of this
data home (the bundled one and every ``kbagent models pull``) with the size and the
quantisation their GGUF declares and their file size, the one in use and the default
marked; a session on an OpenAI-compatible server shows the server as the model in use.
Enter switches to the highlighted model: the app loads it in a thread worker and keeps
the model in use until the new one has loaded (``KbApp.switch_llm``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from kbagent.errors import KbagentError
from kbagent.models.store import ModelStore
from kbagent.settings import Settings
from kbagent.tui.format import plain
from kbagent.tui.host import host

SERVER = "@server"  # the row key of an OpenAI-compatible server


@dataclass(frozen=True)
class ModelRow:
    """One model the picker lists."""

    key: str  # what llm_model becomes when chosen: a name or a path (SERVER: a server)
    name: str
    parameters: str = ""
    quantisation: str = ""
    size_bytes: int | None = None
    where: str = ""  # the file, or the server's URL
    current: bool = False
    default: str = ""  # "default", or "default (auto)" when llm_model is "auto"
    problem: str = ""  # why the file's header cannot be read, or why it is missing

    @property
    def note(self) -> str:
        notes = ["in use"] * self.current + [self.default] * bool(self.default)
        if self.key == SERVER:
            notes.append("OpenAI-compatible server")
        if self.problem:
            notes.append("damaged" if self.size_bytes else self.problem)
        return " · ".join(notes)


def _is_name(value: str) -> bool:
    """A model's name rather than a path (as the models store reads ``llm_model``)."""
    return "/" not in value and os.sep not in value and not value.lower().endswith(".gguf")


def _key_of(value: str, rows: dict[str, ModelRow], store: ModelStore) -> str:
    """The row of ``llm_model = value``: 'auto', 'bundled', an installed model's name or
    a path."""
    from kbagent.models.catalogue import AUTO, BUNDLED_NAME

    if value == AUTO:
        value = store.auto_choice()
    if value in ("", "bundled"):
        return BUNDLED_NAME
    if _is_name(value):
        hit = next((k for k in rows if k.lower() == value.lower()), None)
        if hit is not None or not Path(value).is_file():
            return hit or value  # a name not installed keeps its own row
    path = os.path.abspath(Path(value).expanduser())
    return next((k for k, r in rows.items()
                 if k != SERVER and r.where and os.path.abspath(r.where) == path), path)


def _row_of_file(key: str, name: str, path: Path) -> ModelRow:
    from kbagent.models.catalogue import find
    from kbagent.models.gguf_info import read_info

    entry = find(name)
    params, quant = (entry.parameters, entry.quantisation) if entry else ("", "")
    try:
        size: int | None = path.stat().st_size
        info = read_info(path)
    except OSError as e:  # the file named by llm_model is gone
        return ModelRow(key, name, params, quant, None, str(path),
                        problem=(e.strerror or "cannot be read").lower())
    except KbagentError as e:
        return ModelRow(key, name, params, quant, size, str(path), problem=str(e))
    return ModelRow(key, name, info.parameters_text or params, info.quantisation or quant,
                    size, str(path))


def model_rows(settings: Settings, in_use: Any) -> list[ModelRow]:
    """The picker's rows: the installed models, the model in use (``in_use``: the loaded
    LLM; None while it loads, from ``settings`` then) and the default (``llm_model`` or
    ``llm_url`` of the config file and the environment). Reads each file's GGUF header:
    call it off the UI thread."""
    from kbagent.models.catalogue import AUTO

    store = ModelStore(settings.home)
    rows = {m.name: _row_of_file(m.name, m.name, m.path) for m in store.installed()}
    try:
        configured: Settings | None = Settings.load(home=settings.home)
    except KbagentError:
        configured = None  # a config file that does not parse marks no default
    path = getattr(in_use, "path", None)
    if path is not None:  # a GGUF loaded in this process
        current = _key_of(str(path), rows, store)
    elif settings.llm_url:  # a server (loading, or loaded: settings name the one in use)
        current = SERVER
    elif in_use is None:
        current = _key_of(settings.llm_model, rows, store)
    else:
        current = ""  # a backend that is no file and no server (a test's scripted model)
    default = "" if configured is None else SERVER if configured.llm_url else \
        _key_of(configured.llm_model, rows, store)
    server = settings.llm_url if current == SERVER else \
        configured.llm_url if configured is not None and default == SERVER else ""
    if server:
        rows[SERVER] = ModelRow(SERVER, server, where=server)
    for key in (current, default):
        if key and key not in rows:  # a file named by its path, or a name not installed
            file = Path(key)
            rows[key] = (_row_of_file(key, file.name, file) if file.is_absolute()
                         else ModelRow(key, key, problem="not installed"))
    if current:
        rows[current] = replace(rows[current], current=True)
    if default:
        auto = configured is not None and configured.llm_model == AUTO and default != SERVER
        rows[default] = replace(rows[default], default="default (auto)" if auto else "default")
    return sorted(rows.values(), key=lambda r: (r.key != SERVER, r.name.lower()))


class ModelsScreen(ModalScreen[None]):
    """Choose the model the session uses."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Close", id="models.close")]  # noqa: RUF012

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[ModelRow] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="models"):
            yield Static("Models", id="models-title")
            yield DataTable(id="models-table", cursor_type="row", zebra_stripes=True)
            yield Static("reading the models…", id="models-detail")
            yield Static("Enter switches to the highlighted model · Esc closes · more with "
                         "'kbagent models pull NAME'; a path or a server URL in Options",
                         id="models-help")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for label, key in (("", "mark"), ("model", "model"), ("params", "params"),
                           ("quant", "quant"), ("size", "size"), ("", "note")):
            table.add_column(label, key=key)
        table.focus()
        app = host(self)
        self.read_rows(app.session.load_llm() if app.session.llm_loaded else None)

    @work(thread=True, exclusive=True, group="models-list", exit_on_error=False)
    def read_rows(self, in_use: Any) -> None:
        try:
            rows = model_rows(host(self).settings, in_use)
        except KbagentError as e:  # the models folder cannot be read: say so, list none
            self.app.call_from_thread(self.show_rows, [], str(e))
            return
        self.app.call_from_thread(self.show_rows, rows, "")

    def show_rows(self, rows: list[ModelRow], problem: str) -> None:
        from kbagent.models.fetch import human_bytes

        self.rows = rows
        table = self.query_one(DataTable)
        switching = host(self).switching
        for r in rows:
            loading = bool(switching) and switching in (r.name, Path(r.key).name)
            mark = Text("●", style="bold green") if r.current else Text("")
            note = "loading…" if loading else r.note
            table.add_row(mark, plain(r.name), plain(r.parameters or "?"),
                          plain(r.quantisation or "?"),
                          human_bytes(r.size_bytes) if r.size_bytes else "",
                          plain(note), key=r.key)
        current = next((i for i, r in enumerate(rows) if r.current), 0)
        if rows:
            table.move_cursor(row=current)
        self.query_one("#models-detail", Static).update(
            plain(problem or ("no model is installed" if not rows else self.detail(current))))

    def detail(self, index: int) -> str:
        r = self.rows[index]
        if r.key == SERVER:
            return f"server: {r.where}"
        problem = r.problem.removeprefix(f"{r.where}: ") if r.where else r.problem
        return f"{r.where or r.key}" + (f"\n{problem}" if problem else "")

    @on(DataTable.RowHighlighted, "#models-table")
    def highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.rows):
            self.query_one("#models-detail", Static).update(plain(self.detail(event.cursor_row)))

    @on(DataTable.RowSelected, "#models-table")
    def chosen(self, event: DataTable.RowSelected) -> None:
        if not 0 <= event.cursor_row < len(self.rows):
            return
        row = self.rows[event.cursor_row]
        app = host(self)
        if row.current and app.session.llm_loaded:
            self.notify(f"{row.name} is in use already", title="Model")
            self.dismiss()
            return
        model = app.settings.llm_model if row.key == SERVER else row.key
        if app.switch_llm(model, row.where if row.key == SERVER else ""):
            self.dismiss()
