"""Options: KBs, mode, tools, max steps, the model (an installed model's name, 'auto',
'bundled' or a GGUF path) or a server URL."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, SelectionList

from kbagent.agent.kinds import AskMode, ToolSet
from kbagent.session import MODES, TOOL_SETS
from kbagent.tui.host import host


class OptionsScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "app.pop_screen", "Close", id="options.close")]  # noqa: RUF012

    def compose(self) -> ComposeResult:
        from kbagent.kb.stores import list_all_kbs

        app = host(self)
        s = app.session
        names = [i.name for i in list_all_kbs(app.settings) if not i.error]
        chosen = set(s.kb_names or [kb.name for kb in s.kbs])
        with VerticalScroll(id="options"):
            yield Label("Knowledge bases")
            yield SelectionList[str](*[(n, n, n in chosen) for n in names], id="opt-kbs")
            yield Label("Mode")
            yield Select([(m, m) for m in MODES], value=s.mode, allow_blank=False, id="opt-mode")
            yield Label("Tools")
            yield Select([(t, t) for t in TOOL_SETS], value=s.tools, allow_blank=False,
                         id="opt-tools")
            yield Label("Max steps")
            yield Input(str(s.max_steps or app.settings.max_steps), id="opt-steps",
                        type="integer")
            yield Label("Model: an installed model's name (Models lists them), 'auto', "
                        "'bundled' or a GGUF path")
            yield Input(app.settings.llm_model, id="opt-model")
            yield Label("or server URL (OpenAI-compatible)")
            yield Input(app.settings.llm_url, id="opt-url")
            with Horizontal():
                yield Button("Apply", id="opt-apply", variant="primary")
                yield Button("Close", id="opt-close")

    @on(Button.Pressed, "#opt-close")
    def close(self) -> None:
        self.dismiss()

    @on(Button.Pressed, "#opt-apply")
    def apply(self) -> None:
        app = host(self)
        s = app.session
        try:
            steps = int(self.query_one("#opt-steps", Input).value or 0)
            if not 1 <= steps <= 50:
                raise ValueError
        except ValueError:
            self.notify("max steps must be 1 to 50", severity="error")
            return
        s.mode = AskMode(str(self.query_one("#opt-mode", Select).value))
        s.tools = ToolSet(str(self.query_one("#opt-tools", Select).value))
        s.max_steps = steps
        kbs = list(self.query_one("#opt-kbs", SelectionList).selected)
        if kbs != s.kb_names:
            s.kb_names = kbs
            app.open_kbs()
        model = self.query_one("#opt-model", Input).value.strip() or "bundled"
        url = self.query_one("#opt-url", Input).value.strip()
        self.notify("options applied")
        if (model, url) != (app.settings.llm_model, app.settings.llm_url) or app.llm_error:
            # loaded in a worker; the model in use stays until the new one has loaded
            app.switch_llm(model, url)
        self.dismiss()
