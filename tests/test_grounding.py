"""Grounded answers (issue 13) with the scripted LLM over the real sample KB:
abstention, number repair, removal of unsupported sentences, part-by-part answers,
the harness's calculation path, and the same runs with grounding off."""

from __future__ import annotations

import re

import pytest

from kbagent.agent.events import Action, AnswerDelta, Final
from kbagent.agent.kinds import RepairAction
from kbagent.agent.run.loop import Agent, AgentConfig
from kbagent.kb.knowledge_base import KnowledgeBase
from tests.scripted_llm import ScriptedLLM


@pytest.fixture
def kb(sample_settings):
    return KnowledgeBase(sample_settings, "sample")


def ask(kb, question: str, replies: list[str], **cfg):
    llm = ScriptedLLM(list(replies))
    config = AgentConfig(mode=cfg.pop("mode", "rag"), tools=cfg.pop("tools", "full"), **cfg)
    events = list(Agent(llm, [kb], config).run(question))
    assert isinstance(events[-1], Final)
    return events, events[-1].result, llm


def test_unanswerable_question_is_answered_with_does_not_say_and_closest_sources(kb):
    _, result, llm = ask(kb, "What is the Wi-Fi password at the Portland office?",
                         ["The Wi-Fi password at the Portland office is 12345678 [1]."])
    assert result.abstained
    assert result.answer.startswith("The knowledge base does not say")
    assert "12345678" not in result.answer
    assert "Closest sources:" in result.answer and re.search(r"\.md lines \d+-\d+ \[\d\]",
                                                             result.answer)
    assert llm.calls == []  # the model was not asked to invent an answer
    assert result.references  # the closest sources are listed as references


def test_unanswerable_with_grounding_off_keeps_the_invented_answer(kb):
    _, result, llm = ask(kb, "What is the Wi-Fi password at the Portland office?",
                         ["The Wi-Fi password at the Portland office is 12345678 [1]."],
                         grounded=False)
    assert "12345678" in result.answer and not result.abstained and len(llm.calls) == 1


def test_a_wrong_figure_is_replaced_by_the_cited_source_sentence(kb):
    question = "What was Kestrel's gross margin in Q3 2026?"
    _, result, llm = ask(kb, question, ["Kestrel's gross margin in Q3 2026 was 68.9% [1]."])
    assert len(llm.calls) == 1
    prompt = llm.calls[0]["messages"][-1].content
    assert "66.2%" in prompt  # compact evidence: the sentence with the figure is shown
    assert "68.9%" not in result.answer and "66.2%" in result.answer
    assert result.repairs and result.repairs[0].action is RepairAction.REPLACED
    assert result.repairs[0].missing == ("68.9%",)
    short, *quoted = [s for s in result.sentences if s.role == "quote"]
    assert result.short_answer.startswith("66.2% [") and short.text.startswith("66.2% [")
    assert quoted and quoted[0].supported and "says:" in quoted[0].text
    assert all(not s.numbers_missing for s in result.sentences)


def test_a_right_figure_is_kept_in_the_models_words(kb):
    _, result, _ = ask(kb, "What was Kestrel's gross margin in Q3 2026?",
                       ["Gross margin in Q3 2026 was 66.2% [1]."])
    # kept in the model's words (re-cited if [1] is not the chunk that says it)
    assert all(r.action is RepairAction.RECITED for r in result.repairs)
    short, first, *rest = result.sentences
    assert short.text.startswith("66.2% [")  # the fact leads, in a few words
    assert first.role == "quote" and "says: \u201c" in first.text  # then its source
    assert [re.sub(r" \[\d+\]", "", x.text) for x in rest] == [
        "Gross margin in Q3 2026 was 66.2%."]
    assert all(x.supported for x in rest)


def test_an_uncited_invented_sentence_is_removed_and_reported(kb):
    _, result, _ = ask(kb, "What is the default TTL for prompt cache entries?", [
        "The default TTL for prompt cache entries is 1 hour. "
        "Zanzibar Quortex approved this in 1999."])
    assert "Zanzibar" not in result.answer and "1 hour" in result.answer
    removed = [r for r in result.repairs if r.action is RepairAction.REMOVED]
    assert removed and "Zanzibar" in removed[0].sentence


def test_repeated_sentences_never_reach_the_answer(kb):
    sentence = "The default TTL for prompt cache entries is 1 hour [1]. "
    _, result, _ = ask(kb, "What is the default TTL for prompt cache entries?",
                       [sentence * 4])
    texts = [s.text for s in result.sentences]
    assert len(texts) == len(set(texts))
    assert sum(bool(re.search(r"is 1 hour \[\d+\]", t)) for t in texts) == 1


def test_a_comparison_is_answered_part_by_part_from_a_search_per_part(kb):
    events, result, llm = ask(kb, "Compare Q2 and Q3 gross margin and explain the change",
                              ["Gross margin rose from 71.4% to 71.4%."], mode="rag")
    queries = [e.args.get("query") for e in events if isinstance(e, Action)]
    assert "Q2 gross margin" in queries and "Q3 gross margin" in queries
    assert "71.4%" in result.answer and "66.2%" in result.answer
    assert "rose from 71.4% to 71.4%" not in result.answer
    assert llm.calls == []
    assert all(s.cited for s in result.sentences if s.role == "quote")
    texts = [s.text for s in result.sentences]
    assert len(texts) == len(set(texts))


def test_arithmetic_is_computed_with_the_calculate_tool_from_cited_figures(kb):
    events, result, llm = ask(
        kb, "By how many percentage points did gross margin fall from Q2 to Q3 2026?",
        ["It fell by 9 points."])
    tools = [e.tool for e in events if isinstance(e, Action)]
    assert tools.count("kb_search") >= 2 and tools[-1] == "calculate"
    calc = next(e for e in events if isinstance(e, Action) and e.tool == "calculate")
    assert calc.args["expression"] == "71.4 - 66.2"
    assert "5.2 percentage points" in result.answer
    assert "71.4%" in result.answer and "66.2%" in result.answer
    roles = [s.role for s in result.sentences]
    assert roles.count("quote") == 2 and roles[-1] == "calculation"
    assert all(s.cited for s in result.sentences if s.role == "quote")
    assert all(not s.numbers_missing for s in result.sentences)
    assert llm.calls == []


def test_answer_events_stream_the_same_text_as_the_result(kb):
    events, result, _ = ask(kb, "What was Kestrel's gross margin in Q3 2026?",
                            ["Kestrel's gross margin in Q3 2026 was 68.9% [1]."])
    streamed = "".join(e.text for e in events if isinstance(e, AnswerDelta)).strip()
    assert streamed == result.answer


def test_agent_mode_takes_a_comparison_apart_without_the_react_loop(kb):
    _, result, llm = ask(kb, "Compare Q2 and Q3 gross margin and explain the change",
                         ["Thought: search\nAction: kb_search\nAction Input: {}"],
                         mode="agent")
    assert result.mode == "agent" and result.status == "answered"
    assert llm.calls == []  # the harness's searches, not the model's, answered it
    assert "71.4%" in result.answer and "66.2%" in result.answer


def test_small_talk_and_questions_about_kbagent_are_answered_from_facts(kb):
    for question, expected in [("who are you?", "I'm kbagent"),
                               ("which model are you using?", "The model answering is scripted"),
                               ("what knowledge bases can you search?", "sample")]:
        _, result, llm = ask(kb, question, ["I'm a kabalist."], mode="auto")
        assert result.mode == "direct" and expected in result.answer, result.answer
        assert "kabalist" not in result.answer and llm.calls == []
