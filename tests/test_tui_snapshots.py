"""Snapshot tests (pytest-textual-snapshot) at 80x24 and 160x48: the empty Ask screen
with its cards, a run in progress, a finished cited answer with references, Search,
History and an error. Deterministic: scripted LLM, no clocks (``timings=False``),
fixed sizes. Update with ``pytest tests/test_tui_snapshots.py --snapshot-update``."""

from __future__ import annotations

import threading

import pytest

from kbagent.agent.events import AgentResult
from kbagent.agent.records import References
from kbagent.tui.app import KbApp
from kbagent.tui.widgets import PromptInput
from tests.scripted_llm import ScriptedLLM

SIZES = [(80, 24), (160, 48)]
QUESTION = "Which GPU model does the Kestrel Edge appliance use?"
ANSWER = "Kestrel Edge uses four NVIDIA L40S GPUs."


def app_for(settings, replies, **kwargs) -> KbApp:
    return KbApp(settings, ["sample"], llm=ScriptedLLM(list(replies)), timings=False,
                 **kwargs)


async def wait(pilot, cond, timeout: float = 120.0) -> None:
    waited = 0.0
    while not cond() and waited < timeout:
        await pilot.pause(0.05)
        waited += 0.05
    assert cond(), "condition not reached in time"


async def steady(pilot) -> None:
    """No blinking cursors: a snapshot must not depend on when it is taken."""
    from textual.widgets import Input, TextArea

    for screen in pilot.app.screen_stack:
        for w in screen.query(Input):
            w.cursor_blink = False
        for w in screen.query(TextArea):
            w.cursor_blink = False
    await pilot.pause(0.1)


async def submit(pilot, question: str = QUESTION) -> None:
    pilot.app.screen.query_one(PromptInput).text = question
    await pilot.press("enter")


@pytest.mark.parametrize("size", SIZES)
def test_empty_ask_screen_with_cards(snap_compare, sample_settings, size):
    assert snap_compare(app_for(sample_settings, []), terminal_size=size, run_before=steady)


@pytest.mark.parametrize("size", SIZES)
def test_mid_run(snap_compare, sample_settings, size):
    gate = threading.Event()

    def held(messages):  # the final turn waits: the search step is done, the answer is not
        gate.wait(20)
        return ANSWER

    async def run_before(pilot):
        await submit(pilot)
        screen = pilot.app.screen
        await wait(pilot, lambda: bool(screen.turns) and len(screen.turns[0].panels) == 2)
        await steady(pilot)

    try:
        assert snap_compare(app_for(sample_settings, [held], mode="rag"), terminal_size=size,
                            run_before=run_before)
    finally:
        gate.set()


@pytest.mark.parametrize("size", SIZES)
def test_finished_cited_answer_with_references(snap_compare, sample_settings, size):
    async def run_before(pilot):
        await submit(pilot)
        screen = pilot.app.screen
        await wait(pilot, lambda: bool(screen.turns) and not screen.running)
        await pilot.app.workers.wait_for_complete()
        await steady(pilot)

    assert snap_compare(app_for(sample_settings, [ANSWER], mode="rag"), terminal_size=size,
                        run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_search_screen(snap_compare, sample_settings, size):
    async def run_before(pilot):
        await pilot.press("f2")
        await pilot.pause(0.1)
        await pilot.press(*"kestrel", "space", *"gpu")
        screen = pilot.app.screen
        await wait(pilot, lambda: getattr(screen, "searched", "") == "kestrel gpu")
        await steady(pilot)

    app = KbApp(sample_settings, ["sample"], load_llm=False, timings=False)
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_history_screen(snap_compare, sample_settings, size):
    app = app_for(sample_settings, [])
    refs = References.from_json([{"kb": "sample", "path": "company/overview.md",
                                  "chunks": [{"n": 1, "kb": "sample",
                                              "path": "company/overview.md",
                                              "start_line": 1, "end_line": 9, "score": 0.03}]}])
    for i, q in enumerate(["Who is the CEO?", QUESTION]):
        app.history.add(AgentResult(question=q, answer=f"Answer {i} [1].", mode="rag",
                                    status="answered", references=refs, all_references=refs,
                                    kbs=["sample"]), asked_at=1000.0 + i)

    async def run_before(pilot):
        await pilot.press("f4")
        await pilot.pause(0.3)
        await steady(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_error_missing_model(snap_compare, sample_settings, size):
    sample_settings.llm_model = "/nonexistent/model.gguf"
    app = KbApp(sample_settings, ["sample"], timings=False)

    async def run_before(pilot):
        await wait(pilot, lambda: bool(pilot.app.llm_error))
        await steady(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
