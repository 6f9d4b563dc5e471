"""The TUI says when an answer's sources changed: the badge detail of an answer on the
Ask screen, the History list (a mark on stale answers) and a History entry (a note
per changed reference, marks in its references panel). Real files edited and
re-ingested; the scripted LLM makes the model's decisions."""

from __future__ import annotations

import asyncio
from typing import Any

from kbagent.agent.llm.trace import result_from_dict
from kbagent.kb.ingest import Ingestor
from kbagent.tui.app import KbApp
from kbagent.tui.ask import AskScreen
from kbagent.tui.widgets import Badge, PromptInput, ReferencesPanel
from tests.scripted_llm import ScriptedLLM

CACHE = ("# Cache\n\nIntro line.\n\nThe default TTL is 1 hour.\nEntries expire after that.\n"
         "\nUnrelated closing line.\n")
CAT = ('Thought: Read it.\nAction: kb_cat\nAction Input: {"path": "cache.md", "start_line": 5, '
       '"end_line": 6}')
ANSWER = "Thought: Found it.\nFinal Answer: The default TTL is 1 hour [1]."


def drive(app: KbApp, scenario: Any) -> None:
    async def main() -> None:
        async with app.run_test(size=(140, 44)) as pilot:
            await pilot.pause()
            await scenario(pilot)

    asyncio.run(main())


async def until(pilot: Any, cond: Any, timeout: float = 120.0) -> None:
    waited = 0.0
    while not cond():
        assert waited < timeout, "condition not reached"
        await pilot.pause(0.05)
        waited += 0.05


def setup(make_folder, settings, embedder, monkeypatch):
    monkeypatch.setenv("KBAGENT_SEARCH_FIRST", "model")
    root = make_folder({"cache.md": CACHE, "other.md": "# Other\n\nSomething else.\n"})

    def reingest() -> None:
        Ingestor(settings, "notes", embedder=embedder).run(root)

    reingest()
    return root, reingest


def test_badge_detail_says_the_cited_lines_changed_since_the_answer(make_folder, settings,
                                                                    embedder, monkeypatch):
    root, reingest = setup(make_folder, settings, embedder, monkeypatch)
    app = KbApp(settings, ["notes"], llm=ScriptedLLM([CAT, ANSWER]), timings=False,
                mode="agent")

    async def scenario(pilot):
        screen = pilot.app.screen
        assert isinstance(screen, AskScreen)
        screen.query_one(PromptInput).text = "What is the default TTL?"
        await pilot.press("enter")
        await until(pilot, lambda: bool(screen.turns) and not screen.running)
        turn = screen.turns[-1]
        (root / "cache.md").write_text(CACHE.replace("1 hour", "45 minutes"))
        reingest()
        badge = turn.query(Badge).first()
        badge.focus()
        await pilot.press("enter")
        await pilot.pause()
        detail = str(turn.detail.content)
        # (the harness's own first search cited the whole file: the settings were loaded
        # before the script was told to play step 1)
        assert "⚠ changed since the answer: now says " in detail
        assert "-1 hour." in detail and "+45 minutes." in detail
        assert "5│ The default TTL is 45 minutes." in detail  # the lines as they are now

    drive(app, scenario)


def test_history_marks_stale_answers_and_an_entry_says_what_changed(make_folder, settings,
                                                                    embedder, monkeypatch):
    from typer.testing import CliRunner

    import kbagent.agent.llm as llm_module
    from kbagent.cli import app as cli

    root, reingest = setup(make_folder, settings, embedder, monkeypatch)
    replies = [CAT, ANSWER]
    monkeypatch.setattr(llm_module, "load_llm", lambda s: ScriptedLLM(list(replies)))
    res = CliRunner().invoke(cli, ["ask", "What is the default TTL?", "--kb", "notes",
                                   "--mode", "agent", "--json"])
    assert res.exit_code == 0, res.stderr
    app = KbApp(settings, ["notes"], llm=ScriptedLLM([]), timings=False)
    import json

    stale = result_from_dict(json.loads(res.stdout))
    fresh = result_from_dict({**json.loads(res.stdout), "question": "Still fresh?",
                              "references": [], "all_references": []})
    app.history.add(stale, asked_at=1000.0)
    app.history.add(fresh, asked_at=1001.0)
    (root / "cache.md").write_text(CACHE.replace("1 hour", "45 minutes"))
    reingest()

    async def scenario(pilot):
        from textual.widgets import DataTable

        await pilot.press("f4")
        await until(pilot, lambda: type(pilot.app.screen).__name__ == "HistoryScreen")
        table = pilot.app.screen.query_one("#history", DataTable)
        statuses = [str(table.get_row_at(i)[2]) for i in range(table.row_count)]
        assert statuses == ["answered", "answered ⚠ changed"]  # newest first
        table.move_cursor(row=1)
        await pilot.press("enter")
        await until(pilot, lambda: type(pilot.app.screen).__name__ == "HistoryEntryScreen")
        note = str(pilot.app.screen.query_one(".stale-sources").content)
        assert note.startswith("⚠ the sources changed since this answer:")
        assert "[1] cache.md:5-6: changed since the answer: now says The default TTL is 45" \
            in note
        panel = pilot.app.screen.query_one(ReferencesPanel)
        leaves = [str(n.label) for n in panel.root.children[0].children]
        assert leaves and "changed since the answer" in leaves[0]

    drive(app, scenario)
