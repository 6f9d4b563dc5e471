"""Multi-hop questions in the default mode (issue 22): ``--mode auto`` answers bridge and
comparison questions with the harness's own searches (each a visible step, no ReAct
step of the model), the second hop's fact first; limits and cancel hold. Real KB on
constructed paragraphs; the scripted LLM stands in for the model and must not be asked.
Only names that existed before the multi-hop path are imported, so each test runs (and
fails) on the code before it."""

from __future__ import annotations

import re

import pytest

from kbagent.agent.events import Action, AnswerDelta, Observation, StepStarted
from kbagent.agent.run.loop import Agent, AgentConfig
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from tests.agent_runs import run, searched
from tests.scripted_llm import ScriptedLLM

KISS_Q = ("What government position was held by the woman who portrayed Corliss Archer in "
          "the film Kiss and Tell?")
OLDER_Q = "Who is older, Annie Morton or Terry Richardson?"
# the first hop (the film) shares the question's words; the second (the actress) holds the
# fact; a neighbour shares the words and not the fact
PARAGRAPHS = {
    "Kiss and Tell (1945 film)": (
        "Kiss and Tell is a 1945 American comedy film in which then 17-year-old Shirley "
        "Temple portrayed Corliss Archer. In the film, two teenage girls cause their respective "
        "parents much concern when they start to become interested in boys."),
    "Meet Corliss Archer": (
        "Meet Corliss Archer, a program from radio's Golden Age, ran from January 7, 1943 "
        "to September 30, 1956. The woman who voiced Corliss Archer on the radio held no "
        "government position."),
    "Shirley Temple": (
        "Shirley Temple Black (April 23, 1928 - February 10, 2014) was an American actress "
        "and diplomat. As an adult, Shirley Temple held the government position of Chief "
        "of Protocol of the United States."),
    "Lord High Treasurer": (
        "The post of Lord High Treasurer was an English government position and has been "
        "a British government position since the Acts of Union of 1707."),
    "Annie Morton": (
        "Annie Morton (born October 8, 1970) is an American model born in Pennsylvania. She "
        "has been photographed by Helmut Newton and Terry Richardson."),
    "Terry Richardson": (
        "Terrence \"Uncle Terry\" Richardson (born August 14, 1965) is an American fashion "
        "and portrait photographer."),
    "Kestrel pricing": "The Business tier costs $499 per month and includes 20 seats.",
}


@pytest.fixture
def hop_kb(settings, make_folder, embedder):
    files = {title.replace(" ", "_").replace("(", "").replace(")", "") + ".md":
             f"# {title}\n\n{text}\n" for title, text in PARAGRAPHS.items()}
    Ingestor(settings, "hops", embedder=embedder).run(make_folder(files))
    return KnowledgeBase(settings, "hops")


# ------------------------------------------------------------------ the path
def test_a_bridge_question_searches_the_second_hop_and_leads_with_its_fact(hop_kb):
    llm = ScriptedLLM([])  # the harness's path asks the model nothing
    cfg = AgentConfig(rag_top_k=2)  # auto, grounded: the defaults
    events, result = run(Agent(llm, [hop_kb], cfg), KISS_Q)
    queries = searched(events)
    assert queries[0] == KISS_Q  # the first hop: the question
    assert queries[1].startswith("Shirley Temple")  # the second: the bridge entity
    actions = [e for e in events if isinstance(e, Action)]
    assert "second document" in actions[1].thought  # each search a visible step
    assert [e.kind for e in events if isinstance(e, StepStarted)][:2] == ["retrieval"] * 2
    assert len([e for e in events if isinstance(e, Observation)]) == len(queries)
    assert llm.calls == [] and result.mode == "agent" and result.status == "answered"
    # the answer leads with the second hop's fact, cited to the second hop's document
    first = result.sentences[0]
    assert "Chief of Protocol" in first.text
    assert result.reference(first.cited[0]).path == "Shirley_Temple.md"
    streamed = "".join(e.text for e in events if isinstance(e, AnswerDelta))
    assert streamed.strip() == result.answer.strip()
    # then why that document: the first hop's sentence that names the bridge
    assert any("Kiss and Tell" in x.text for x in result.sentences[1:])
    # an explicit --mode agent keeps the model's own loop
    llm = ScriptedLLM(["Thought: Done.\nFinal Answer: Chief of Protocol."])
    _, result = run(Agent(llm, [hop_kb], AgentConfig(mode="agent", rag_top_k=2)), KISS_Q)
    assert len(llm.calls) >= 1 and result.mode == "agent"


def test_a_comparison_searches_both_and_the_answer_is_the_older_one(hop_kb):
    llm = ScriptedLLM([])
    events, result = run(Agent(llm, [hop_kb], AgentConfig(rag_top_k=1)), OLDER_Q)
    queries = searched(events)
    assert queries[0] == OLDER_Q and len(queries) == 2  # one search for the other one
    paths = {c.path for c in result.all_references.chunks()}
    assert {"Annie_Morton.md", "Terry_Richardson.md"} <= paths
    assert result.short_answer.startswith("Terry Richardson [")
    assert result.answer.startswith("Terry Richardson [")
    n = int(result.short_answer.split("[")[1].rstrip("]"))
    assert result.reference(n).path == "Terry_Richardson.md"
    assert llm.calls == []


def test_the_step_limit_bounds_the_follow_ups(hop_kb):
    # three steps: the question's search, one follow-up, the answer
    events, _ = run(Agent(ScriptedLLM([]), [hop_kb], AgentConfig(rag_top_k=1, max_steps=3)),
                    KISS_Q)
    assert len(searched(events)) == 2


def test_a_cancel_after_the_first_hop_stops_before_the_second(hop_kb):
    agent = Agent(ScriptedLLM([]), [hop_kb], AgentConfig(rag_top_k=2))
    events = []
    for ev in agent.run(KISS_Q):
        events.append(ev)
        if isinstance(ev, Observation):
            agent.cancel()
    result = events[-1].result
    assert result.status == "cancelled" and result.mode == "agent"
    assert searched(events) == [KISS_Q]




# ------------------------------------------------------------------ routing
@pytest.mark.parametrize("question", [
    # a leading clause before the question proper is no statement that asks inside
    "Out of the box, how many volume files can I mount in one session?",
    "If I run the check_index command without an argument, how many problems does it list?",
    "Once a counter table has used the largest possible id, what error do further inserts "
    "fail with?",
    "Since which release can a table have computed columns?",
    "Up to what amount per month will the company reimburse a desk membership?",
    # code terms and a user asking: one document's fact, not a bridge or a comparison
    "What is the minimum length that core.abbrev shortens object names to?",
    "By default, how many queries can I chain together with MERGE or MERGE ALL?",
    # ", and which ..." starts a second question, not a relative clause
    "What are the drawbacks of journal mode on a network share, and which extra files does "
    "it create?",
])
def test_documentation_questions_are_not_multi_hop(question):
    from kbagent.agent.run.router import multi_hop

    assert multi_hop(question) is None


@pytest.mark.parametrize(("question", "kind"), [
    (KISS_Q, "bridge"),
    (OLDER_Q, "comparison"),
    ("The director of the romantic comedy Big Stone Gap is based in what New York city?",
     "bridge"),
    ("Which was fought earlier, the Seven Days Battles or the Battle of Manila?",
     "comparison"),
])
def test_bridge_and_comparison_questions_still_are(question, kind):
    from kbagent.agent.run.router import multi_hop

    assert multi_hop(question) == kind


def test_the_model_policy_reads_the_second_hop_that_the_harness_searched(hop_kb):
    """Under the model's policy the harness's follow-up search gathers the second hop's
    document before the model composes (a visible step, the model not asked to plan),
    and that document is shown to the model whatever its rank."""
    reply = "She held the position of Chief of Protocol of the United States [{n}]."

    def cite(messages):
        blocks = dict(re.findall(r"^\[(\d+)\] ([^,\n]+),", messages[-1].content, re.M))
        return reply.format(n=next(n for n, path in blocks.items()
                                   if path == "Shirley_Temple.md"))

    llm = ScriptedLLM([cite])
    cfg = AgentConfig(rag_top_k=1, answer_policy="model")  # two hits a search
    events, result = run(Agent(llm, [hop_kb], cfg), KISS_Q)
    queries = searched(events)
    assert queries[0] == KISS_Q and queries[1].startswith("Shirley Temple")
    assert "second document" in [e for e in events if isinstance(e, Action)][1].thought
    steps = [e for e in events if isinstance(e, StepStarted)]
    assert [e.step for e in steps] == list(range(1, len(steps) + 1))  # each step once
    [call] = llm.calls  # the model composed once, after both searches (nothing doubted)
    assert "Chief of Protocol" in call["messages"][-1].content
    assert result.answer.startswith("She held the position of Chief of Protocol")
    assert result.reference(result.sentences[0].cited[0]).path == "Shirley_Temple.md"


def test_a_two_hop_question_is_judged_once_the_harness_searched_its_second_hop(hop_kb):
    """The harness's test judges a two-hop question after the follow-up searches (its
    second hop's documents apart): here no document names the thing asked about, so
    the model is asked to choose before it writes anything."""
    from kbagent.agent.run.decline import DECLINE, GRAMMAR

    llm = ScriptedLLM([DECLINE])
    question = ("What government position was held by the woman who portrayed Corliss "
                "Archer in the film Zanzibar Quokka?")
    cfg = AgentConfig(rag_top_k=1, answer_policy="model")
    events, result = run(Agent(llm, [hop_kb], cfg), question)
    assert len(searched(events)) >= 2
    assert [c["grammar"] for c in llm.calls] == [GRAMMAR]
    assert result.abstained
