"""Follow-ups in the TUI (issue 45, finding 10), driven with Textual's Pilot over a real
KB, the scripted model and grounded answers: each turn's answer holds only its own
question's answer, and the history keeps the questions as they were typed."""

from __future__ import annotations

import pytest

from kbagent.kb.ingest import Ingestor
from kbagent.settings import Settings
from kbagent.tui.app import KbApp
from tests.scripted_kbagent import Forever
from tests.scripted_llm import ScriptedLLM
from tests.test_conversation import GLUE, PROJECTS, Q1, Q2, Q3, page
from tests.test_tui import ask, drive, until


@pytest.fixture
def settings(kb_home, make_folder, embedder, monkeypatch):
    monkeypatch.delenv("KBAGENT_GROUNDED")
    monkeypatch.setenv("KBAGENT_SHORT_ANSWER", "harness")
    folder = make_folder({f"projects/{name.lower()}.md": page(name, *facts)
                          for name, facts in PROJECTS.items()})
    Ingestor(Settings.load(), "docs", embedder=embedder).run(folder)
    return Settings.load()


def test_tui_follow_ups_answer_only_the_new_question(settings):
    llm = ScriptedLLM(Forever(["It is in the sources."]))
    app = KbApp(settings, ["docs"], llm=llm, timings=False)
    turns = []

    async def scenario(pilot):
        for question in (Q1, Q2, Q3):
            turns.append(await ask(pilot, question))
        await until(pilot, lambda: len(app.history.list()) == 3)

    drive(app, scenario)
    answers = [t.result.answer for t in turns]
    assert "Northwind Freight" in answers[0] and "2 June 2025" in answers[1]
    assert "1,200,000 euros" in answers[2]
    for shown in [*answers[1:], *(t.answer_text for t in turns[1:])]:
        assert GLUE not in shown and Q1 not in shown
    assert Q2 not in answers[2] and answers[1] not in answers[2]
    assert sorted(e.question for e in app.history.list()) == sorted([Q1, Q2, Q3])
