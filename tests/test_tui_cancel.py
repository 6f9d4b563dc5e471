"""Esc stops a run while the bundled model is still reading its prompt (issue 45,
finding 11): llama.cpp evaluated a prompt of thousands of tokens without looking at
the cancel token, and Esc waited for all of it (8.9 s). The model's own KV cache
says how far the evaluation got when the run stopped. Marked ``slow`` (the real
GGUF), like tests/test_llm_real.py."""

from __future__ import annotations

import threading
import time

import pytest

from kbagent.agent.cancel import CancelToken
from kbagent.agent.llm.base import Message
from kbagent.agent.llm.llama import LlamaCppLLM, bundled_model_path
from kbagent.tui.app import KbApp
from tests.test_tui import QUESTION, drive, until

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def llm():
    model = LlamaCppLLM(bundled_model_path(), n_ctx=8192)
    yield model
    model.close()


def evaluated(llm: LlamaCppLLM) -> int:
    """How many tokens the model's KV cache holds now."""
    return int(llm._llm.n_tokens)


def test_a_cancel_stops_the_evaluation_of_a_long_prompt(llm):
    prompt = [Message("user", "The retry policy backs off exponentially. " * 400)]
    llm.reset_cache()
    token = CancelToken()
    out: list[str] = []
    run = threading.Thread(target=lambda: out.extend(
        llm.stream(prompt, max_tokens=16, cancel=token)))
    run.start()
    while evaluated(llm) == 0 and run.is_alive():  # the first slice of the prompt is in
        time.sleep(0.001)
    token.cancel()
    run.join()
    usage = llm.last_usage
    assert usage is not None and usage.prompt_tokens > 2000
    assert out == [] and usage.finish_reason == "aborted"
    assert evaluated(llm) < usage.prompt_tokens  # the rest of the prompt was never read


def test_esc_stops_a_run_while_the_model_reads_its_prompt(sample_settings, llm):
    app = KbApp(sample_settings, ["sample"], llm=llm, mode="rag", timings=False)

    async def scenario(pilot):
        screen = pilot.app.screen
        llm.reset_cache()
        prompt = screen.query_one("#prompt")
        # a prompt of thousands of tokens: read in slices over seconds even on an idle
        # machine, so the Esc lands while it is being read (a 600-token one could be read
        # whole before the key arrived)
        prompt.text = QUESTION + " Context: " + "the retry policy backs off. " * 600
        await pilot.press("enter")
        await until(pilot, lambda: evaluated(llm) > 0)  # the answer's prompt is being read
        await pilot.press("escape")
        await until(pilot, lambda: not screen.running)
        turn = screen.turns[0]
        assert turn.result.status == "cancelled"
        assert "stopped: cancelled by the user" in [str(n.content) for n in
                                                    turn.notices.children]
        assert evaluated(llm) < llm.last_usage.prompt_tokens
        assert not prompt.disabled and prompt.has_focus

    drive(app, scenario)
