"""The TUI cannot be driven by documents: over a real KB holding a hostile document,
file name and folder, every screen's frame (what Textual would write to the
terminal, taken from its compositor) holds no control sequence but Textual's own
cursor moves and colours, no hyperlink a document asked for, and the markup inside
documents is shown as written. The scripted LLM stands in for the model."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from kbagent.tui.app import KbApp
from kbagent.tui.ask import AskScreen
from kbagent.tui.document import DocumentScreen
from kbagent.tui.widgets import PromptInput, ReferencesPanel, StepPanel
from tests.scripted_llm import ScriptedLLM
from tests.test_terminal_safety import (  # noqa: F401 - the fixture
    CLIPBOARD,
    HOSTILE_NAME,
    LINK,
    MARKUP,
    NAME_TITLE,
    TITLE,
    hostile,
)

ANSWER = f"The retry policy uses {MARKUP} {CLIPBOARD}with a cap of 5 s [1]."
# Textual's own output: SGR colours, cursor positioning, modes (?25l ...), sync updates
_OWN = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def frame(app: KbApp) -> str:
    """The whole screen as Textual would write it to a terminal."""
    update = app.screen._compositor.render_update(full=True)
    return update.render_segments(app.console)


def assert_frame_safe(app: KbApp) -> str:
    out = frame(app)
    rest = _OWN.sub("", out)  # what is left must be text
    for bad in ("\x1b", "\x07", "\x9b", "\x9c", "\x9d", "Q0xJUEJPQVJE", "PWNED-TITLE"):
        assert bad not in rest, f"{bad!r} on screen {type(app.screen).__name__}: {rest!r:.300}"
    assert "\x1b[2J" not in out and "\x1b]8;" not in out  # no clear, no injected hyperlink
    return rest


def texts(app: KbApp) -> str:
    """The plain text of every widget on the screen (scrolled out of view included)."""
    parts = []
    for w in app.screen.walk_children(with_self=False):
        content = getattr(w, "content", None)
        if content is not None:
            parts.append(str(content))
        if isinstance(w, ReferencesPanel) or hasattr(w, "root"):
            stack = [w.root] if getattr(w, "root", None) is not None else []
            while stack:
                node = stack.pop()
                parts.append(node.label.plain)
                stack.extend(node.children)
        if hasattr(w, "get_row_at") and getattr(w, "row_count", 0):
            for r in range(w.row_count):
                parts.extend(str(c) for c in w.get_row_at(r))
    return "\n".join(parts)


async def until(pilot: Any, cond, timeout: float = 120.0) -> None:
    waited = 0.0
    while not cond():
        assert waited < timeout, "condition not reached in time"
        await pilot.pause(0.05)
        waited += 0.05


def test_every_screen_shows_hostile_documents_as_plain_text(hostile):  # noqa: F811
    llm = ScriptedLLM([ANSWER, ANSWER])
    app = KbApp(hostile, ["evil"], llm=llm, mode="rag", timings=False)

    async def scenario(pilot: Any) -> None:
        screen = pilot.app.screen
        assert isinstance(screen, AskScreen)
        prompt = screen.query_one(PromptInput)
        prompt.focus()
        prompt.insert("What is the retry policy?")
        await pilot.press("enter")
        await until(pilot, lambda: bool(screen.turns) and not screen.running)
        turn = screen.turns[-1]
        assert turn.result is not None and turn.result.status != "error"
        for panel in turn.query(StepPanel):
            panel.collapsed = False
        screen.show_reference(turn, 1)
        await pilot.pause()
        shown = assert_frame_safe(pilot.app)
        assert "exponential backoff" in shown
        words = texts(pilot.app)
        assert LINK in words or MARKUP in words  # the cited lines, as written
        assert "notes/esc[blink]b.md" in words or "guide.md" in words

        # search as you type: hostile paths and excerpts in the table
        await pilot.app.run_action("switch_mode('search')")
        await pilot.pause()
        query = pilot.app.screen.query_one("#query")
        query.value = "retry policy exponential backoff"
        await pilot.press("enter")
        await until(pilot, lambda: bool(pilot.app.screen.hits))
        assert_frame_safe(pilot.app)
        assert "notes/esc[blink]b.md" in texts(pilot.app)

        # browse: the KB's tree of file names, its info
        await pilot.app.run_action("switch_mode('browse')")
        await pilot.pause()
        assert_frame_safe(pilot.app)
        assert "esc[blink]b.md" in texts(pilot.app)

        # a document, opened at its lines
        pilot.app.open_document("evil", HOSTILE_NAME, (1, 4), chunks=True)
        await until(pilot, lambda: isinstance(pilot.app.screen, DocumentScreen))
        await pilot.pause()
        shown = assert_frame_safe(pilot.app)
        assert "notes/esc[blink]b.md" in shown, shown
        assert MARKUP in shown, repr(shown)

        # a notification quoting a hostile name
        pilot.app.open_document("evil", f"missing{NAME_TITLE}[bold]x[/bold].md", None)
        await pilot.pause()
        (note,) = [n for n in pilot.app._notifications if "missing" in n.message]
        assert not note.markup and "[bold]x[/bold].md" in note.message  # shown as written
        assert "\x1b" not in note.message and "PWNED-TITLE" not in note.message
        assert_frame_safe(pilot.app)
        await pilot.app.run_action("app.pop_screen")

        # the history of the question asked above
        await pilot.app.run_action("switch_mode('history')")
        await pilot.pause()
        assert_frame_safe(pilot.app)

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            await scenario(pilot)

    asyncio.run(main())
