"""Pilot tests: the real app over the real ingested sample KB, the scripted LLM making
the model's decisions. Each test drives the app by keys (and the mouse for hover)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kbagent.tui.app import KbApp
from kbagent.tui.ask import AskScreen, Turn
from kbagent.tui.document import DocumentScreen
from kbagent.tui.widgets import Badge, Card, PromptInput, ReferencesPanel, StepPanel
from tests.scripted_llm import ScriptedLLM

QUESTION = "Which GPU model does the Kestrel Edge appliance use?"
ANSWER = "Kestrel Edge uses four NVIDIA L40S GPUs."


def drive(app: KbApp, scenario: Callable[[Any], Awaitable[None]], size=(120, 40),
          **kwargs: Any) -> None:
    async def main() -> None:
        async with app.run_test(size=size, **kwargs) as pilot:
            await pilot.pause()
            await scenario(pilot)

    asyncio.run(main())


async def until(pilot: Any, cond: Callable[[], bool], timeout: float = 120.0) -> None:
    waited = 0.0
    while not cond():
        if waited > timeout:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.05)
        waited += 0.05


async def ask(pilot: Any, question: str) -> Turn:
    screen = pilot.app.screen
    assert isinstance(screen, AskScreen)
    prompt = screen.query_one(PromptInput)
    prompt.focus()
    await pilot.press(*[("space" if c == " " else c) for c in question[:12]])
    prompt.insert(question[12:])
    await pilot.press("enter")  # Enter submits
    await until(pilot, lambda: bool(screen.turns) and not screen.running)
    return screen.turns[-1]


def text_of(widget: Any) -> str:
    return str(widget.content)


def make_app(settings, replies, **kwargs: Any) -> tuple[KbApp, ScriptedLLM]:
    llm = replies if isinstance(replies, ScriptedLLM) else ScriptedLLM(list(replies))
    return KbApp(settings, ["sample"], llm=llm, timings=False, **kwargs), llm


def test_submit_by_key_shows_steps_in_order_and_a_cited_answer(sample_settings):
    app, llm = make_app(sample_settings, [ANSWER], mode="rag")

    async def scenario(pilot):
        turn = await ask(pilot, QUESTION)
        assert turn.result.status == "answered" and "L40S" in turn.result.answer
        assert len(llm.calls) == 1
        panels = list(turn.query(StepPanel))
        assert [(p.step, p.kind) for p in panels] == [(1, "retrieval"), (2, "answer")]
        assert "kb_search" in str(panels[0].title)
        assert ".md:" in text_of(panels[0].observation)  # hits as path:lines
        assert all(p.collapsed for p in panels)  # finished steps fold
        assert "L40S" in turn.answer_text and "](ref:" in turn.answer_text
        assert [b.n for b in turn.query(Badge)]
        assert text_of(turn.query_one(".route")) == "route: rag"
        prompt = pilot.app.screen.query_one(PromptInput)
        assert not prompt.disabled and prompt.text == ""

    drive(app, scenario)


def test_badge_selection_shows_path_lines_and_excerpt_and_its_tooltip(sample_settings):
    app, _ = make_app(sample_settings, [ANSWER], mode="rag")

    async def scenario(pilot):
        turn = await ask(pilot, QUESTION)
        badge = turn.query(Badge).first()
        ref = turn.reference(badge.n)
        where = f"{ref['path']}:{ref['start_line']}-{ref['end_line']}"
        badge.focus()
        await pilot.press("enter")
        await pilot.pause()
        detail = text_of(turn.detail)
        assert where in detail and f"score {ref['score']:.3f}" in detail
        first_line = app.reference_lines(ref)[0]
        assert f"{first_line.number}│ {first_line.text}" in detail  # the cited lines
        # hovering shows path:lines and the excerpt
        await pilot.hover(badge)
        await pilot.pause(0.9)
        tooltip = pilot.app.screen.query_one("#textual-tooltip")
        assert where in str(tooltip.content) and ref["excerpt"][:20] in str(tooltip.content)

    drive(app, scenario, tooltips=True)


def test_references_panel_groups_by_document_and_opens_the_cited_lines(sample_settings):
    app, _ = make_app(sample_settings, [ANSWER], mode="rag")

    async def scenario(pilot):
        turn = await ask(pilot, QUESTION)
        panel = turn.query_one(ReferencesPanel)
        docs = [str(n.label) for n in panel.root.children]
        assert docs == [f"{d.kb}:{d.path}" for d in turn.result.references]
        first = turn.result.references[0].chunks[0]
        leaf = str(panel.root.children[0].children[0].label)
        assert leaf.startswith(f"[{first.n}] lines {first.start_line}-{first.end_line}")
        panel.focus()
        panel.move_cursor(panel.root.children[0].children[0])
        await pilot.press("o")
        await until(pilot, lambda: isinstance(pilot.app.screen, DocumentScreen))
        doc = pilot.app.screen
        assert doc.highlight == (first.start_line, first.end_line)
        assert doc.path == first.path
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(pilot.app.screen, AskScreen))

    drive(app, scenario)


def test_an_example_card_fills_the_input(sample_settings):
    app, _ = make_app(sample_settings, [])

    async def scenario(pilot):
        cards = list(pilot.app.screen.query(Card))
        assert len(cards) == 4
        cards[2].focus()
        await pilot.press("enter")
        prompt = pilot.app.screen.query_one(PromptInput)
        assert prompt.text == cards[2].question and prompt.has_focus

    drive(app, scenario)


def test_esc_cancels_a_run_shows_what_was_gathered_and_input_works_again(sample_settings):
    long_answer = " ".join(f"Kestrel Edge fact number {i} is distinct." for i in range(300))
    slow = ScriptedLLM([long_answer, ANSWER], piece_delay=0.02)  # distinct: never "repetition"
    app, llm = make_app(sample_settings, slow, mode="rag")

    async def scenario(pilot):
        screen = pilot.app.screen
        prompt = screen.query_one(PromptInput)
        prompt.text = QUESTION
        await pilot.press("enter")
        await until(pilot, lambda: bool(screen.turns) and len(screen.turns[0].panels) == 2)
        assert prompt.disabled
        await pilot.press("escape")
        await until(pilot, lambda: not screen.running)
        turn = screen.turns[0]
        assert turn.result.status == "cancelled"
        assert "Evidence gathered so far" in turn.answer_text
        assert not prompt.disabled
        # the input is usable again and a follow-up sees the previous turn
        turn2 = await ask(pilot, "And how many of them?")
        assert turn2.result.status == "answered"
        assert QUESTION in llm.calls[-1]["messages"][-1].content

    drive(app, scenario)


def test_resize_mid_stream_does_not_crash(sample_settings):
    slow = ScriptedLLM([ANSWER + " " + "It is fast. " * 60], piece_delay=0.01)
    app, _ = make_app(sample_settings, slow, mode="rag")

    async def scenario(pilot):
        screen = pilot.app.screen
        screen.query_one(PromptInput).text = QUESTION
        await pilot.press("enter")
        await until(pilot, lambda: bool(screen.turns) and screen.turns[0].stream is not None)
        await pilot.resize_terminal(60, 20)
        await pilot.pause(0.1)
        await pilot.resize_terminal(160, 48)
        await until(pilot, lambda: not screen.running)
        assert screen.turns[0].result.status == "answered"

    drive(app, scenario)


def test_history_survives_a_restart_and_reruns_a_question(sample_settings):
    app, _ = make_app(sample_settings, [ANSWER], mode="rag")

    async def first(pilot):
        await ask(pilot, QUESTION)
        await pilot.app.workers.wait_for_complete()

    drive(app, first)
    app2, _ = make_app(sample_settings, [])

    async def second(pilot):
        await pilot.press("f4")
        await until(pilot, lambda: type(pilot.app.screen).__name__ == "HistoryScreen")
        screen = pilot.app.screen
        assert [e.question for e in screen.entries] == [QUESTION]
        await pilot.press("enter")  # open it: from the history, no LLM call
        await until(pilot, lambda: type(pilot.app.screen).__name__ == "HistoryEntryScreen")
        assert "L40S" in pilot.app.screen.query_one(".answer").source
        await pilot.press("r")  # re-run: the question goes back in the input
        await until(pilot, lambda: isinstance(pilot.app.screen, AskScreen))
        await pilot.pause(0.1)
        assert pilot.app.screen.query_one(PromptInput).text == QUESTION

    drive(app2, second)


def test_search_as_you_type_and_open_a_result(sample_settings):
    app = KbApp(sample_settings, ["sample"], load_llm=False, timings=False)  # no LLM at all

    async def scenario(pilot):
        await pilot.press("f2")
        await until(pilot, lambda: type(pilot.app.screen).__name__ == "SearchScreen")
        screen = pilot.app.screen
        await pilot.press(*"kestrel", "space", *"gpu")
        await until(pilot, lambda: screen.searched == "kestrel gpu")
        assert screen.hits and not pilot.app.session.llm_loaded
        table = screen.query_one("#results")
        assert table.row_count == len(screen.hits)
        top = screen.hits[0]
        table.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(pilot.app.screen, DocumentScreen))
        assert pilot.app.screen.highlight == (top.start_line, top.end_line)

    drive(app, scenario)


def test_browse_opens_a_document_with_chunk_boundaries_at_a_line(sample_settings):
    app, _ = make_app(sample_settings, [], load_llm=False)

    async def scenario(pilot):
        await pilot.press("f3")
        await until(pilot, lambda: type(pilot.app.screen).__name__ == "BrowseScreen")
        tree = pilot.app.screen.query_one("#kb-tree")
        leaf = next(n for n in _walk(tree.root)
                    if n.data and n.data.get("path") == "finance/q1_2026_report.md")
        tree.focus()
        tree.move_cursor(leaf)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(pilot.app.screen, DocumentScreen))
        doc = pilot.app.screen
        assert doc.chunks and "chunk 1 · lines" in str(doc.query_one(".doc-text").content)
        await pilot.press("escape")
        # open the same document at a line far down: the view scrolls there
        app.open_document("sample", "finance/q1_2026_report.md", (50, 52))
        await until(pilot, lambda: isinstance(pilot.app.screen, DocumentScreen))
        # the scroll follows the layout: wait for it rather than a fixed pause

        def scrolled() -> bool:
            views = pilot.app.screen.query("#document")
            return bool(views) and views.first().scroll_y > 0

        await until(pilot, scrolled, timeout=30)

    drive(app, scenario, size=(100, 20))


def test_browse_shows_a_source_files_outline_and_jumps_to_a_definition(sample_settings):
    app, _ = make_app(sample_settings, [], load_llm=False)

    async def scenario(pilot):
        app.open_document("sample", "engineering/src/retry.py", None, chunks=True)
        await until(pilot, lambda: isinstance(pilot.app.screen, DocumentScreen)
                    and bool(pilot.app.screen.query("#outline")))
        outline = pilot.app.screen.query_one("#outline")
        labels = [str(outline.get_option_at_index(i).prompt)
                  for i in range(outline.option_count)]
        assert any("effective_delay" in lb for lb in labels), labels
        line = next(int(lb.split()[0]) for lb in labels if "effective_delay" in lb)
        assert line == 116  # where the symbol index says it is defined
        outline.focus()
        outline.highlighted = next(i for i, lb in enumerate(labels) if "effective_delay" in lb)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert pilot.app.screen.query_one("#document").scroll_y > 0
        await pilot.press("escape")
        # a document that is not source code opens without an outline
        app.open_document("sample", "finance/q1_2026_report.md", None, chunks=True)
        await until(pilot, lambda: isinstance(pilot.app.screen, DocumentScreen)
                    and bool(pilot.app.screen.query("#document")))
        assert not pilot.app.screen.query("#outline")

    drive(app, scenario, size=(120, 30))


def _walk(node):
    yield node
    for child in node.children:
        yield from _walk(child)


def test_a_missing_model_is_a_notification_and_the_app_stays_usable(sample_settings):
    sample_settings.llm_model = str(sample_settings.home / "missing.gguf")
    app = KbApp(sample_settings, ["sample"], mode="rag", timings=False)

    async def scenario(pilot):
        await until(pilot, lambda: bool(pilot.app.llm_error))
        messages = [n.message for n in pilot.app._notifications]
        assert any("model file not found" in m for m in messages)
        assert "no model" in pilot.app.sub_title
        # asking still gives a clear error, then the input is usable again
        turn = await ask(pilot, QUESTION)
        assert "model file not found" in text_of(turn.query_one(".notice.-error"))
        assert not pilot.app.screen.query_one(PromptInput).disabled

    drive(app, scenario)


def test_a_worker_exception_is_a_notification_not_a_traceback(sample_settings):
    def boom(messages):
        raise RuntimeError("scripted crash")

    app, _ = make_app(sample_settings, [boom], mode="rag")

    async def scenario(pilot):
        turn = await ask(pilot, QUESTION)
        assert "scripted crash" in text_of(turn.query_one(".notice.-error"))
        assert pilot.app.is_running

    drive(app, scenario)


@pytest.mark.parametrize("keymap", ["ask.submit=ctrl+s", {"ask.submit": "ctrl+s"}])
def test_bindings_can_be_remapped_by_id(sample_settings, keymap):
    sample_settings.tui_keymap = keymap
    app, _ = make_app(sample_settings, [ANSWER], mode="rag")

    async def scenario(pilot):
        screen = pilot.app.screen
        screen.query_one(PromptInput).text = QUESTION
        await pilot.press("ctrl+s")
        await until(pilot, lambda: bool(screen.turns) and not screen.running)
        assert screen.turns[0].result.status == "answered"

    drive(app, scenario)


def test_an_unknown_kb_is_a_notification_and_the_others_are_served(sample_settings):
    app = KbApp(sample_settings, ["sample", "nope"], llm=ScriptedLLM([]), timings=False)

    async def scenario(pilot):
        messages = [n.message for n in pilot.app._notifications]
        assert any("KB 'nope' is not served" in m and "unknown KB" in m for m in messages)
        assert pilot.app.sub_title.endswith("KBs: sample · as: anonymous")
        assert len(list(pilot.app.screen.query(Card))) == 4  # the good KB still serves

    drive(app, scenario)


def test_browse_ingests_a_folder_with_progress(sample_settings, make_folder):
    from tests.conftest import SMALL_DOCS

    folder = make_folder(SMALL_DOCS)
    app = KbApp(sample_settings, None, llm=ScriptedLLM([]), timings=False)

    async def scenario(pilot):
        await pilot.press("f3")
        await until(pilot, lambda: type(pilot.app.screen).__name__ == "BrowseScreen")
        screen = pilot.app.screen
        screen.query_one("#ingest-path").value = str(folder)
        screen.query_one("#ingest-kb").value = "docs"
        screen.query_one("#ingest-path").focus()
        await pilot.press("enter")
        await until(pilot, lambda: "KB 'docs'" in text_of(screen.query_one("#ingest-status")))
        assert "3 added" in text_of(screen.query_one("#ingest-status"))
        assert screen.query_one("#ingest-progress").progress > 0
        assert "docs" in [kb.name for kb in pilot.app.session.kbs]

    drive(app, scenario)


def test_history_delete_one_and_clear_all_ask_for_confirmation(sample_settings):
    from kbagent.agent.events import AgentResult

    app = KbApp(sample_settings, ["sample"], llm=ScriptedLLM([]), timings=False)
    for q in ("first question", "second question"):
        app.history.add(AgentResult(question=q, answer="a", mode="rag", status="answered"))

    async def scenario(pilot):
        await pilot.press("f4")
        await until(pilot, lambda: type(pilot.app.screen).__name__ == "HistoryScreen")
        screen = pilot.app.screen
        await pilot.press("d")
        await until(pilot, lambda: type(pilot.app.screen).__name__ == "Confirm")
        await pilot.press("n")  # declined: nothing deleted
        await until(pilot, lambda: pilot.app.screen is screen)
        assert len(pilot.app.history.list()) == 2
        await pilot.press("d")
        await until(pilot, lambda: type(pilot.app.screen).__name__ == "Confirm")
        await pilot.press("y")
        await until(pilot, lambda: len(screen.entries) == 1)
        assert [e.question for e in pilot.app.history.list()] == ["first question"]
        await pilot.press("ctrl+x")
        await until(pilot, lambda: type(pilot.app.screen).__name__ == "Confirm")
        await pilot.press("y")
        await until(pilot, lambda: not screen.entries)
        assert pilot.app.history.list() == []

    drive(app, scenario)


def test_tui_command_refuses_model_and_url_together():
    from typer.testing import CliRunner

    from kbagent.cli import app as cli
    from kbagent.errors import ExitCode

    res = CliRunner().invoke(cli, ["tui", "--model", "m.gguf", "--llm-url", "http://x/v1"])
    assert res.exit_code == ExitCode.BAD_INPUT and "cannot be combined" in res.stderr
    res = CliRunner().invoke(cli, ["tui", "--help"])
    assert res.exit_code == 0 and "--kb" in res.stdout


def test_a_burst_of_keys_then_enter_sends_the_whole_question(sample_settings):
    """Keys arrive as a terminal sends them in a burst (a paste, a fast typist, tmux
    send-keys): all queued before any is handled. Enter, a priority binding, used to
    read the prompt before the keys ahead of it had reached it, and sent "Which GPU
    model does the Kestrel Edge" for the whole question."""
    from textual import events

    app, _ = make_app(sample_settings, [ANSWER])

    async def scenario(pilot):
        screen = app.screen
        screen.query_one(PromptInput).focus()
        await pilot.pause()
        for c in QUESTION:
            app.post_message(events.Key("space" if c == " " else c, c))
        app.post_message(events.Key("enter", "\r"))
        await until(pilot, lambda: bool(screen.turns) and not screen.running)
        assert screen.turns[-1].question == QUESTION

    drive(app, scenario)
