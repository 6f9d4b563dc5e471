"""Pilot tests of the Ask screen's conversation keys (issue 45, finding 11) and of the
example cards it shows (finding 14): Ctrl+N on an empty conversation, Ctrl+R then
Ctrl+N then typing, and cards that never ask a document about itself."""

from __future__ import annotations

from typing import Any

from kbagent.kb.ingest import Ingestor
from kbagent.tui.app import KbApp
from kbagent.tui.ask import AskScreen
from kbagent.tui.widgets import Card, PromptInput, ReferencesPanel
from tests.test_tui import ANSWER, QUESTION, ask, drive, make_app, until


async def type_text(pilot: Any, text: str) -> None:
    """Type as a person does: one key per character, wherever the focus is."""
    await pilot.press(*[("space" if c == " " else c) for c in text])


def test_ctrl_n_on_an_empty_conversation_keeps_the_cards_and_the_input(sample_settings):
    app, _ = make_app(sample_settings, [ANSWER], mode="rag")

    async def scenario(pilot):
        screen = pilot.app.screen
        before = [c.question for c in screen.query(Card)]
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert pilot.app.is_running and pilot.app.screen is screen
        assert len(screen.query("#intro")) == 1 and len(screen.query("#cards")) == 1
        assert [c.question for c in screen.query(Card)] == before
        prompt = screen.query_one(PromptInput)
        assert prompt.has_focus
        await pilot.press("ctrl+n")  # twice in a row: still one intro, still the input
        await type_text(pilot, "Which GPU")
        assert prompt.text == "Which GPU" and len(screen.query("#intro")) == 1

    drive(app, scenario)


def test_ctrl_r_then_ctrl_n_gives_the_focus_back_to_the_input(sample_settings):
    app, _ = make_app(sample_settings, [ANSWER, ANSWER], mode="rag")

    async def scenario(pilot):
        screen = pilot.app.screen
        assert isinstance(screen, AskScreen)
        await ask(pilot, QUESTION)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(pilot.app.focused, ReferencesPanel)
        await pilot.press("ctrl+n")
        await until(pilot, lambda: not screen.turns and len(screen.query(Card)) == 4)
        prompt = screen.query_one(PromptInput)
        assert prompt.has_focus, pilot.app.focused
        await type_text(pilot, "Which GPU does it use?")  # not lost on a card
        assert prompt.text == "Which GPU does it use?"
        await pilot.press("enter")
        await until(pilot, lambda: bool(screen.turns) and not screen.running)
        assert screen.turns[0].question == "Which GPU does it use?"
        assert not screen.query("#intro") and not screen.query(Card)

    drive(app, scenario)


def _cards_of(settings, make_folder, embedder, files: dict[str, str]) -> list[str]:
    Ingestor(settings, "notes", embedder=embedder).run(make_folder(files))
    app = KbApp(settings, ["notes"], load_llm=False, timings=False)
    shown: list[str] = []

    async def scenario(pilot):
        shown.extend(c.question for c in pilot.app.screen.query(Card))

    drive(app, scenario)
    return shown


LIGHTHOUSE = ("# The Ardmore Lighthouse\n\nThe Ardmore Lighthouse was first lit in 1857 and "
              "stands 31 metres tall on the north headland.\n")


def test_a_card_never_asks_what_a_document_says_about_itself(settings, make_folder,
                                                            embedder):
    shown = _cards_of(settings, make_folder, embedder, {
        "ardmore.md": LIGHTHOUSE,  # its only heading is its title
        "harbour.md": "# Harbour log\n\n## Winter storms\n\nThe pier lost two bollards in "
                      "the January gale.\n",
    })
    assert len(shown) == 4, shown
    for title in ("The Ardmore Lighthouse", "Harbour log"):
        assert all(q.count(title) <= 1 for q in shown), shown
    assert shown[0] == "What does Harbour log say about Winter storms?"


def test_one_document_whose_heading_is_its_title_gets_no_repeated_subject(
        settings, make_folder, embedder):
    shown = _cards_of(settings, make_folder, embedder, {"ardmore.md": LIGHTHOUSE})
    assert all(q.count("The Ardmore Lighthouse") <= 1 for q in shown), shown
    assert shown[0] == "What are the key facts in The Ardmore Lighthouse?"
    assert not any(q.startswith("Compare") for q in shown)  # nothing to compare it with
