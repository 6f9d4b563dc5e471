"""The CLI's event renderer on a terminal: the step lines and the answer share it."""

from __future__ import annotations

import io

from rich.console import Console

from kbagent.agent.events import AnswerDelta, StepStarted
from kbagent.agent.kinds import StepKind
from kbagent.cli.render import EventRenderer


def _shared_terminal() -> tuple[io.StringIO, Console]:
    buf = io.StringIO()
    return buf, Console(file=buf, force_terminal=True, color_system=None, width=200)


def test_step_after_answer_text_starts_its_own_line_on_a_terminal() -> None:
    # a grounded answer quotes the lead fact before the model's answer step starts
    buf, console = _shared_terminal()
    r = EventRenderer(console, console)
    r(AnswerDelta("a.md says: “The limit is 5.” [1] ", None))
    r(StepStarted(2, kind=StepKind.ANSWER))
    r(AnswerDelta("The limit is 5 [1].", True))
    lines = buf.getvalue().splitlines()
    assert any(line.startswith("▸ step 2 (answer)") for line in lines), lines
    assert not any("[1] ▸" in line for line in lines)


def test_piped_answer_is_not_broken_by_steps() -> None:
    out, err = io.StringIO(), io.StringIO()
    r = EventRenderer(Console(file=out, force_terminal=False, width=200),
                      Console(file=err, force_terminal=False, width=200))
    r(AnswerDelta("First part. ", None))
    r(StepStarted(2, kind=StepKind.ANSWER))
    r(AnswerDelta("Second part.", True))
    assert out.getvalue() == "First part. Second part."
    assert "▸ step 2 (answer)" in err.getvalue()
