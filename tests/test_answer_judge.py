"""The model's judgment of which unit states the answer (issue 22, session 15;
kbagent/agent/harness/judge.py, setting ``answer_judge``).

The scripted model stands in for the judgment (a decision); the KB, the harness's
ranking, the re-ordering and the answer around it are real. The pages are constructed
so that the harness alone leads with a neighbour: it shares the question's words and
holds a number, but not the fact ("floor 3" for how many people a room holds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbagent.agent.answer.evidence import Scored
from kbagent.agent.answer.units import Unit
from kbagent.agent.cancel import CancelToken
from kbagent.agent.harness.judge import JUDGE_UNITS, judge
from kbagent.agent.llm.base import Message
from kbagent.errors import BackendError
from kbagent.settings import Settings, SettingsError
from tests.agent_runs import ask_one_file
from tests.scripted_llm import ScriptedLLM

ROOM = ("# Rooms\n\nThe large meeting room is on floor 3 and has 2 screens and 4 microphones. "
        "Up to 12 attendees fit around its table. The room is booked through the calendar.\n")
ROOM_Q = "How many people can the large meeting room hold?"
UPLOADS = ("# Uploads\n\nThe upload service accepts files over HTTPS on port 8443. A single file "
           "may not exceed 250 MB; larger files are rejected. Uploads of 10 or more files are "
           "queued.\n")
UPLOADS_Q = "What is the biggest file the upload service will take?"


def says_yes_to(fact: str):
    """A judgment that the passage holding ``fact`` answers and no other does."""
    def judgment(messages: list[Message], options: list[str]) -> list[float]:
        yes = fact in messages[-1].content
        return [-0.1 if (o.lower() == "yes") == yes else -4.0 for o in options]
    return judgment


def scripted(judgment=None) -> ScriptedLLM:
    return ScriptedLLM(["It is in the sources."] * 10, judgment=judgment)


@pytest.mark.parametrize(("page", "question", "fact", "wrong"), [
    (ROOM, ROOM_Q, "12 attendees", "3 [1]"),
    (UPLOADS, UPLOADS_Q, "250 MB", "10 [1]"),
], ids=["room", "uploads"])
def test_the_unit_the_model_judges_to_answer_leads(tmp_path: Path, page: str, question: str,
                                                   fact: str, wrong: str) -> None:
    (tmp_path / "off").mkdir()
    (tmp_path / "on").mkdir()
    alone = ask_one_file(tmp_path / "off", "p.md", page, question)
    assert alone.result.answer.startswith(wrong), alone.result.answer  # the harness alone
    llm = scripted(says_yes_to(fact))
    final = ask_one_file(tmp_path / "on", "p.md", page, question, llm, answer_judge=True)
    first = final.result.answer.split("”")[0]
    assert fact in first, final.result.answer
    assert fact.split()[0] in final.result.short_answer, final.result.short_answer
    # one reading a unit, each with the question and one passage
    assert 2 <= len(llm.judged) <= JUDGE_UNITS
    assert all(question in m[-1].content for m in llm.judged)
    assert sum(fact in m[-1].content for m in llm.judged) == 1
    # each reading counts in the run's usage: the answer turn's call and the readings
    assert final.result.usage.llm_calls == 1 + len(llm.judged)
    assert alone.result.usage.llm_calls == 1


def test_a_backend_that_cannot_tell_leaves_the_harness_order(tmp_path: Path) -> None:
    llm = scripted()  # option_logprobs: None, as for a backend without logits
    final = ask_one_file(tmp_path, "p.md", ROOM, ROOM_Q, llm, answer_judge=True)
    assert final.result.answer.startswith("3 [1]"), final.result.answer
    assert len(llm.judged) == 1  # it gave up at the first unit it could not judge


def test_off_asks_the_model_nothing(tmp_path: Path) -> None:
    llm = scripted(says_yes_to("12 attendees"))
    final = ask_one_file(tmp_path, "p.md", ROOM, ROOM_Q, llm, answer_judge=False)
    assert final.result.answer.startswith("3 [1]"), final.result.answer
    assert llm.judged == []


def _evidence(*texts: str) -> list[Scored]:
    return [Scored(Unit(1, text, "p.md", i), 1.0 - i / 10, 0.5)
            for i, text in enumerate(texts)]


def test_judge_reorders_only_the_best_units_and_keeps_their_scores_comparable() -> None:
    ev = _evidence("a 1", "b 2", "c 3", "d 4", "e 5", "f 6", "g 7")
    judged, read = judge(scripted(says_yes_to("c 3")), "q?", ev)
    assert read == JUDGE_UNITS
    assert [e.unit.text for e in judged][:1] == ["c 3"]
    assert [e.unit.text for e in judged][JUDGE_UNITS:] == ["f 6", "g 7"]  # not read: kept
    assert judged[0].score > judged[1].score


def test_judge_stops_at_a_cancel_or_time_limit_and_on_a_backend_error() -> None:
    ev = _evidence("a 1", "b 2", "c 3")
    llm = scripted(says_yes_to("c 3"))
    cancel = CancelToken()
    cancel.cancel()
    assert judge(llm, "q?", ev, cancel=cancel) == (ev, 0)
    assert llm.judged == []

    def fails(messages: list[Message], options: list[str]) -> list[float]:
        raise BackendError("the server went away")

    assert judge(scripted(fails), "q?", ev) == (ev, 0)
    assert judge(scripted(says_yes_to("c 3")), "q?", ev[:1]) == (ev[:1], 0)  # one: no choice


def test_the_setting_is_read_and_a_bad_value_is_named(tmp_path: Path) -> None:
    assert Settings.load(home=tmp_path).answer_judge is False  # off unless asked for
    (tmp_path / "config.toml").write_text("answer_judge = true\n")
    assert Settings.load(home=tmp_path).answer_judge is True
    (tmp_path / "config.toml").write_text('answer_judge = "sometimes"\n')
    with pytest.raises(SettingsError, match="answer_judge"):
        Settings.load(home=tmp_path)


def test_a_server_that_cannot_be_reached_leaves_the_harness_order() -> None:
    import socket

    from kbagent.agent.llm.openai_compat import OpenAICompatLLM

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ev = _evidence("a 1", "b 2", "c 3")
    llm = OpenAICompatLLM(f"http://127.0.0.1:{port}/v1", "m", timeout=5)
    assert judge(llm, "q?", ev) == (ev, 0)


def test_an_answer_without_log_probabilities_gives_no_reading() -> None:
    from kbagent.agent.llm.openai_compat import _top_logprobs

    listed = {"choices": [{"logprobs": {"content": [{"token": "yes", "logprob": -0.2,
                                                     "top_logprobs": [
                                                         {"token": " yes", "logprob": -0.2},
                                                         {"token": "No", "logprob": -1.9}]}]}}]}
    assert _top_logprobs(listed) == [(" yes", -0.2), ("No", -1.9)]
    for junk in ({"choices": [{"logprobs": None}]}, {"choices": []}, [], None,
                 {"choices": [{"logprobs": {"content": [{"top_logprobs": [{"token": "x"}]}]}}]}):
        assert _top_logprobs(junk) == [], junk
