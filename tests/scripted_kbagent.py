"""Run the real ``kbagent`` command with the scripted LLM standing in for the model's
decisions: for tests that drive a server in a subprocess (MCP over stdio and HTTP,
ACP), where a test cannot patch the process it talks to.

    python -m tests.scripted_kbagent mcp --kb sample

``KBAGENT_TEST_SCRIPT`` picks the script: ``paste`` (default) answers every question
with a "Final Answer" that pastes each line of the observations it was shown, like a
model trying to leak everything, except that a question containing ``SLOW`` gets the
``slow`` reply; ``slow`` streams a long answer slowly (cancel tests) for every question.
``KBAGENT_TEST_PIECE_DELAY`` sets the seconds between streamed pieces (slow replies:
at least 0.05 s).
"""

from __future__ import annotations

import os
import sys

import kbagent.agent.llm as llm_module
from tests.scripted_llm import ScriptedLLM


class Forever(list):
    """A reply list that never runs out: the same reply for every call."""

    def pop(self, index: int = -1):  # type: ignore[override]
        return self[0]


def paste_observations(messages) -> str:
    seen = [" ".join(ln.split()) for m in messages if m.role == "user"
            for ln in m.content.splitlines() if ln.strip().startswith("[")]
    return "Thought: Copy what I saw.\nFinal Answer: " + " ".join(seen)[:1200]


def slow_answer(messages) -> str:
    return "Thought: " + "thinking slowly " * 400 + "\nFinal Answer: too late."


def scripted(settings) -> ScriptedLLM:
    script = os.environ.get("KBAGENT_TEST_SCRIPT", "paste")
    delay = float(os.environ.get("KBAGENT_TEST_PIECE_DELAY", "0"))

    def reply(messages) -> str:
        slow = script == "slow" or any("SLOW" in m.content for m in messages
                                       if m.role == "user")
        llm.piece_delay = max(delay, 0.05) if slow else delay
        return slow_answer(messages) if slow else paste_observations(messages)

    llm = ScriptedLLM(Forever([reply]), piece_delay=delay)
    return llm


def main() -> None:
    llm_module.load_llm = scripted
    from kbagent.cli import app

    app(sys.argv[1:], prog_name="kbagent")


if __name__ == "__main__":
    main()
