"""The ``kbagent tui`` application: screens as modes, key bindings with ids (remap
them with the ``tui_keymap`` setting), every action in the command palette.

The app owns one :class:`~kbagent.session.Session` (KBs, LLM, agent, cancel) and
one :class:`~kbagent.history.History`. Slow work (loading the model, a run,
saving history, searching, ingesting) runs in thread workers that only post
messages or call back with ``call_from_thread``.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from kbagent.agent.kinds import AskMode
from kbagent.errors import KbagentError
from kbagent.history import History
from kbagent.kb.access import ANONYMOUS, Principal
from kbagent.safe_text import clean
from kbagent.session import Session, document_chunk_spans, editor_command
from kbagent.settings import Settings
from kbagent.tui.ask import AskScreen
from kbagent.tui.browse import BrowseScreen
from kbagent.tui.format import literal
from kbagent.tui.history_screen import HistoryScreen
from kbagent.tui.host import Host
from kbagent.tui.search import SearchScreen

SCREENS_HELP = {
    "ask": "Ask: questions to the agent, live steps, cited answers",
    "search": "Search: hybrid search as you type, no LLM needed",
    "browse": "Browse: KBs, their documents, ingest a folder",
    "history": "History: past questions; open, re-run, delete",
}


class KbApp(App[None]):
    """kbagent's terminal UI."""

    TITLE = "kbagent"
    CSS_PATH = "kbagent.tcss"
    ENABLE_COMMAND_PALETTE = True
    MODES = {"ask": AskScreen, "search": SearchScreen,  # noqa: RUF012
             "browse": BrowseScreen, "history": HistoryScreen}
    BINDINGS = [  # noqa: RUF012
        Binding("f1", "switch_mode('ask')", "Ask", id="screen.ask"),
        Binding("f2", "switch_mode('search')", "Search", id="screen.search"),
        Binding("f3", "switch_mode('browse')", "Browse", id="screen.browse"),
        Binding("f4", "switch_mode('history')", "History", id="screen.history"),
        Binding("f5", "options", "Options", id="app.options"),
        # priority: the Ask screen's input (a TextArea) takes F6 for "select line"
        Binding("f6", "models", "Models", id="app.models", priority=True),
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
    ]

    def __init__(self, settings: Settings, kb_names: list[str] | None = None, *,
                 llm: Any = None, mode: AskMode = AskMode.AUTO, load_llm: bool = True,
                 timings: bool = True, principal: Principal = ANONYMOUS) -> None:
        super().__init__()
        self.settings = settings
        # who is asking is fixed for the app's life (kbagent tui --as/--groups)
        self.session = Session(settings, kb_names, llm=llm, mode=mode, principal=principal)
        self.history = History(settings.home, self.session.principal.key)
        self.timings = timings  # off in snapshot tests: no clock-dependent text
        self._load_llm_at_start = load_llm and llm is None
        self.llm_error = ""
        self.switching = ""  # the model being loaded to replace the one in use
        self._model_ready = threading.Event()  # cleared while a switch loads
        self._model_ready.set()
        self.set_keymap(settings.tui_keymap)  # binding id -> keys

    # --- start ------------------------------------------------------------------
    def on_mount(self) -> None:
        self.open_kbs()
        self.switch_mode("ask")
        if self._load_llm_at_start:
            self.load_llm()

    def open_kbs(self) -> None:
        try:
            self.session.open_kbs(required=False)
        except KbagentError as e:
            self.notify(f"{e}", title="Knowledge bases", severity="error", timeout=10)
        for name, reason in self.session.failed_kbs.items():
            self.notify(f"KB '{name}' is not served: {reason}", title="Knowledge base failed",
                        severity="error", timeout=10)
        if not self.session.kbs and not self.session.failed_kbs:
            self.notify("no knowledge base yet: open Browse (F3) and ingest a folder",
                        title="Empty", severity="warning", timeout=10)
        self.update_header()

    def update_header(self) -> None:
        kbs = ", ".join(kb.name for kb in self.session.kbs) or "none"
        model = self.session.llm_description() if not self.llm_error else "no model"
        state = "" if self.session.llm_loaded or self.llm_error else " (loading)"
        if self.switching:
            model, state = self.switching, " (loading)"
        self.sub_title = literal(f"model: {model}{state} · KBs: {kbs} · as: "
                                 f"{self.session.principal.label}")

    @work(thread=True, exclusive=True, group="llm", exit_on_error=False)
    def load_llm(self) -> None:
        try:
            self.session.load_llm()
        except KbagentError as e:
            self.call_from_thread(self.llm_failed, str(e))
            return
        except Exception as e:  # an unexpected backend failure is still only a message
            self.call_from_thread(self.llm_failed, f"{type(e).__name__}: {e}")
            return
        self.llm_error = ""
        self.call_from_thread(self.update_header)

    def llm_failed(self, message: str) -> None:
        self.llm_error = message
        self.update_header()
        self.notify(f"{message}. Search and Browse still work; choose a model in Models "
                    "(F6), or a path or server URL in Options (F5).", title="Model not loaded",
                    severity="error", timeout=12)

    # --- switching models -------------------------------------------------------
    def model_busy(self) -> str:
        """Why the model cannot be switched now; "" when it can."""
        if any(w.group == "agent" and not w.is_finished for w in self.workers):
            return "a question is running: stop it (Esc) or let it finish, then switch"
        if self.switching or any(w.group == "llm" and not w.is_finished for w in self.workers):
            return "a model is loading: switch once it has loaded"
        return ""

    def switch_llm(self, model: str, url: str = "") -> bool:
        """Load ``model`` (an installed model's name, 'auto', 'bundled' or a GGUF path), or the
        OpenAI-compatible server at ``url``, in a thread worker; the session switches to
        it once it has loaded and keeps the model in use until then, and when it fails.
        A question asked meanwhile waits for it. Refused (False, with a notification)
        while a question runs or a model loads: a running answer is never cut short."""
        busy = self.model_busy()
        if busy:
            self.notify(busy, title="Model not switched", severity="warning")
            return False
        self.switching = url or (Path(model).name if "/" in model else model or "bundled")
        self._model_ready.clear()
        self.update_header()
        self._switch_llm(model, url)
        return True

    @work(thread=True, group="llm-switch", exit_on_error=False)
    def _switch_llm(self, model: str, url: str) -> None:
        from kbagent.agent.llm import load_llm

        try:
            llm = load_llm(self.settings.model_copy(update={"llm_model": model,
                                                            "llm_url": url}))
        except Exception as e:  # KbagentError, or a backend's own: one line either way
            self._model_ready.set()
            text = str(e) if isinstance(e, KbagentError) else f"{type(e).__name__}: {e}"
            self.call_from_thread(self._switch_failed, (text.strip() or "?").splitlines()[0])
            return
        try:
            old = self.call_from_thread(self._switched, model, url, llm)
        finally:
            self._model_ready.set()
        close = getattr(old, "close", None)
        if close is not None:  # the model replaced: freed once nothing can use it
            close()

    def _switched(self, model: str, url: str, llm: Any) -> Any:
        self.settings.llm_model, self.settings.llm_url = model, url
        old = self.session.set_llm(llm, owned=True)
        self.switching = self.llm_error = ""
        self.update_header()
        self.notify(f"now using {self.session.llm_description()}", title="Model")
        return old

    def _switch_failed(self, message: str) -> None:
        chosen, self.switching = self.switching, ""
        self.update_header()
        still = ("still using " + self.session.llm_description()
                 if self.session.llm_loaded else "no model is loaded")
        self.notify(f"{chosen} did not load: {message}; {still}",
                    title="Model not switched", severity="error", timeout=12)

    def run_question(self, question: str, previous: tuple[str, str] | None,
                     token: Any) -> Iterator[Any]:
        """The session's run of ``question`` (in the Ask screen's worker thread): a model
        switch under way finishes first; Esc stops the wait."""
        while not self._model_ready.wait(0.1) and not token.cancelled:
            pass
        return self.session.ask(question, previous=previous, token=token)

    def action_models(self) -> None:
        """Open the Models picker; the same key closes it."""
        from kbagent.tui.models_screen import ModelsScreen

        if isinstance(self.screen, ModelsScreen):
            self.pop_screen()
        else:
            self.push_screen(ModelsScreen())

    # --- shared actions -------------------------------------------------------
    def reference_lines(self, ref: dict[str, Any]) -> list[Any] | None:
        from kbagent.kb.views import FileViews

        try:
            kb = self.session.kb(ref["kb"])
            return FileViews(kb, self.session.principal).cat(
                ref["path"], ref["start_line"], ref["end_line"], max_lines=200).lines
        except KbagentError:
            return None

    def reference_check(self, ref: dict[str, Any]) -> Any | None:
        """Has the cited text changed since the answer? (kb.provenance.RefCheck)"""
        from kbagent.kb.provenance import ReferenceChecker

        checker = ReferenceChecker(self.session.settings, self.session.principal,
                                   kbs={kb.name: kb for kb in self.session.kbs})
        try:
            return checker.check(ref)
        except KbagentError:
            return None
        finally:
            checker.close()

    def answer_checks(self, answer: dict[str, Any]) -> dict[int, Any]:
        """Reference number -> RefCheck for the cited references of a saved answer."""
        from kbagent.kb.provenance import ReferenceChecker, cited_chunks

        checker = ReferenceChecker(self.session.settings, self.session.principal,
                                   kbs={kb.name: kb for kb in self.session.kbs})
        try:
            return {int(c.get("n", 0)): checker.check(c) for c in cited_chunks(answer)}
        except KbagentError:
            return {}
        finally:
            checker.close()

    def open_reference(self, ref: dict[str, Any], editor: bool = False) -> None:
        if editor:
            self.open_in_editor(ref)
        else:
            self.open_document(ref["kb"], ref["path"], (ref["start_line"], ref["end_line"]))

    def open_document(self, kb_name: str, path: str, lines: tuple[int, int] | None = None,
                      chunks: bool = False) -> None:
        from kbagent.kb.views import FileViews
        from kbagent.tui.document import DocumentScreen

        try:
            kb = self.session.kb(kb_name)
            doc = FileViews(kb, self.session.principal).cat(path, 1, None, max_lines=100_000)
            spans = document_chunk_spans(kb, path) if chunks else []
            # the page/slide/cells a person checks in the original, as `kbagent ref` and
            # `search` show them (kb/locations.py describe, through the store)
            where = kb.store.locate(doc.path, *lines) if lines and doc.location else ""
            places = [kb.store.locate(doc.path, a, b) for a, b in spans] if doc.location else []
        except KbagentError as e:
            self.notify(str(e), title="Cannot open the document", severity="error")
            return
        source = kb.manifest.get("source", "")
        outline = code_outline(kb, path, self.session.principal) if chunks else None
        self.push_screen(DocumentScreen(kb_name, path, doc.lines, highlight=lines,
                                        chunks=spans, source=source, outline=outline,
                                        location=where if lines else doc.location,
                                        chunk_locations=places))

    def open_in_editor(self, ref: dict[str, Any]) -> None:
        from pathlib import Path

        try:
            kb = self.session.kb(ref["kb"])
            cmd = editor_command(Path(kb.manifest.get("source", "")) / ref["path"],
                                 int(ref["start_line"]))
        except KbagentError as e:
            self.notify(str(e), title="Editor", severity="error")
            return
        try:
            with self.suspend():
                subprocess.call(cmd)
        except Exception as e:  # headless or a terminal that cannot suspend
            self.notify(f"cannot open the editor here: {e}", title="Editor", severity="error")
        self.refresh()

    def save_result(self, result: Any) -> None:
        """Persist a finished run (history and last answer) off the UI thread."""
        self._save_result(result, self.session.llm_description())

    @work(thread=True, group="history", exit_on_error=False)
    def _save_result(self, result: Any, model: str) -> None:
        try:
            self.history.add(result, model=model)
            self.session.save_last_answer(result)
        except (KbagentError, OSError) as e:
            self.call_from_thread(self.notify, f"history not saved: {e}",
                                  severity="warning")

    def action_options(self) -> None:
        from kbagent.tui.options import OptionsScreen

        self.push_screen(OptionsScreen())

    def rerun(self, question: str) -> None:
        """Put ``question`` back in the Ask screen's input."""
        self.switch_mode("ask")

        def put() -> None:
            screen = self.screen
            assert isinstance(screen, AskScreen)
            screen.set_question(question)

        self.call_after_refresh(put)

    # --- command palette ----------------------------------------------------
    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for mode, help_text in SCREENS_HELP.items():
            yield SystemCommand(f"Go to {mode.title()}", help_text,
                                lambda m=mode: self.switch_mode(m))
        yield SystemCommand("Options", "KBs, mode, tools, max steps, model or server",
                            self.action_options)
        yield SystemCommand("Switch model", "The installed models; load another one",
                            self.action_models)
        yield SystemCommand("Cancel the running question", "Stop the agent (Esc)",
                            self.session.cancel)
        yield SystemCommand("New conversation", "Forget the previous turns",
                            lambda: self._on_ask("action_new_conversation"))
        yield SystemCommand("Focus references", "The last answer's references",
                            lambda: self._on_ask("action_focus_refs"))
        yield SystemCommand("Reload knowledge bases", "Reopen the KBs (after an ingest)",
                            self.open_kbs)

    def _on_ask(self, action: str) -> None:
        self.switch_mode("ask")
        self.call_after_refresh(lambda: getattr(self.screen, action)())

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every notification (screens' included: they call this one) shows its text
        as written: messages quote file names, KB folders and errors."""
        super().notify(clean(message), title=clean(title), severity=severity,
                       timeout=timeout, markup=False)

    def on_unmount(self) -> None:
        import gc

        self.session.cancel()
        gc.enable()  # paused during a run (tui/ask.py pause_collector)


if TYPE_CHECKING:  # the screens take the app for a Host (tui/host.py): mypy checks it is one
    _KBAPP_IS_A_HOST: type[Host] = KbApp


def code_outline(kb: Any, path: str, principal: Principal) -> list[tuple[int, str, str]]:
    """(line, kind, name) of a source file's definitions; [] for other files or a KB
    without a symbol index (the document still opens)."""
    from kbagent.kb.symbol_index import SymbolIndex

    try:
        hits, _ = SymbolIndex(kb, principal).outline(path)
    except KbagentError:
        return []
    return [(h.line, h.kind, h.qualname or h.name) for h in hits]
