"""Run the real ``kbagent`` command with the scripted LLM standing in for the model's
decisions: for tests that drive a server in a subprocess (MCP over stdio and HTTP,
ACP), where a test cannot patch the process it talks to.

    python -m tests.scripted_kbagent mcp --kb sample

``KBAGENT_TEST_SCRIPT`` picks the script: ``paste`` (default) answers every question
with a "Final Answer" that pastes each line of the observations it was shown, like a
model trying to leak everything, except that a question containing ``SLOW`` gets the
``slow`` reply; ``slow`` streams a long answer slowly (cancel tests) for every question.
``KBAGENT_TEST_PIECE_DELAY`` sets the seconds between streamed pieces (slow replies:
at least 0.05 s). ``KBAGENT_TEST_PREFILL`` (seconds) makes each generation start as
llama.cpp's does with a long prompt: that long without looking at the cancel; and the
model then says on stderr when it is freed under a generation (where llama.cpp would
crash), as ``kbagent-test: model freed during a generation``.
"""

from __future__ import annotations

import os
import sys
import time

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


class PrefillLLM(ScriptedLLM):
    """The scripted model with llama.cpp's two hazards: a prompt evaluation that does not
    see a cancel, and a model that must not be freed while it generates."""

    prefill: float = 0.0
    generating: int = 0

    def generate(self, req):
        self.generating += 1
        try:
            time.sleep(self.prefill)
            return (yield from super().generate(req))
        finally:
            self.generating -= 1

    def close(self) -> None:
        if self.generating:
            print("kbagent-test: model freed during a generation", file=sys.stderr, flush=True)


def scripted(settings) -> ScriptedLLM:
    script = os.environ.get("KBAGENT_TEST_SCRIPT", "paste")
    delay = float(os.environ.get("KBAGENT_TEST_PIECE_DELAY", "0"))

    def reply(messages) -> str:
        slow = script == "slow" or any("SLOW" in m.content for m in messages
                                       if m.role == "user")
        llm.piece_delay = max(delay, 0.05) if slow else delay
        return slow_answer(messages) if slow else paste_observations(messages)

    prefill = float(os.environ.get("KBAGENT_TEST_PREFILL", "0"))
    if prefill:
        llm = PrefillLLM(Forever([reply]), piece_delay=delay)
        llm.prefill = prefill
        return llm
    llm = ScriptedLLM(Forever([reply]), piece_delay=delay)
    return llm


def main() -> None:
    llm_module.load_llm = scripted
    from kbagent.cli import app

    app(sys.argv[1:], prog_name="kbagent")


if __name__ == "__main__":
    main()
