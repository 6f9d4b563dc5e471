"""Follow-up queries for multi-hop questions: the proposals (pure functions, on a few
HotpotQA items quoted in short) and the loop that searches them when the model
re-sends the question (the scripted LLM over a real KB of those paragraphs)."""

from __future__ import annotations

import json

import pytest

from kbagent.agent.events import Action, Observation
from kbagent.agent.run.hops import (
    Hit,
    bridges,
    compared,
    first_hop,
    followups,
    names_in,
    near_duplicate,
    title_of,
)
from kbagent.agent.run.loop import MAX_FOLLOWUPS, Agent, AgentConfig
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from tests.agent_runs import run, searched
from tests.scripted_llm import ScriptedLLM

# HotpotQA dev items (IRCoT subsample), paragraphs shortened.
KISS_Q = ("What government position was held by the woman who portrayed Corliss Archer in "
          "the film Kiss and Tell?")
PARAGRAPHS = {
    "Kiss and Tell (1945 film)": (
        "Kiss and Tell is a 1945 American comedy film starring then 17-year-old Shirley "
        "Temple as Corliss Archer. In the film, two teenage girls cause their respective "
        "parents much concern when they start to become interested in boys."),
    "Meet Corliss Archer": (
        "Meet Corliss Archer, a program from radio's Golden Age, ran from January 7, 1943 "
        "to September 30, 1956. Although it was CBS's answer to NBC's popular \"A Date with "
        "Judy\", it was also broadcast by NBC in 1948 as a summer replacement."),
    "Shirley Temple": (
        "Shirley Temple Black (April 23, 1928 - February 10, 2014) was an American actress, "
        "singer, dancer, businesswoman, and diplomat who was Hollywood's number one "
        "box-office draw as a child actress from 1935 to 1938. As an adult, she was named "
        "United States ambassador to Ghana and to Czechoslovakia and also served as Chief of "
        "Protocol of the United States."),
    "Lord High Treasurer": (
        "The post of Lord High Treasurer or Lord Treasurer was an English government "
        "position and has been a British government position since the Acts of Union of "
        "1707."),
    "Annie Morton": (
        "Annie Morton (born October 8, 1970) is an American model born in Pennsylvania. She "
        "has been photographed by Helmut Newton; Peter Lindbergh; Annie Leibovitz and Terry "
        "Richardson."),
    "Terry Richardson": (
        "Terrence \"Uncle Terry\" Richardson (born August 14, 1965) is an American fashion "
        "and portrait photographer who has shot advertising campaigns for Marc Jacobs, Aldo, "
        "Supreme, Sisley, Tom Ford, and Yves Saint Laurent among others."),
    "Big Stone Gap (film)": (
        "Big Stone Gap is a 2014 American drama romantic comedy film written and directed by "
        "Adriana Trigiani and produced by Donna Gigliotti for Altar Identity Studios, a "
        "subsidiary of Media Society."),
    "Adriana Trigiani": (
        "Adriana Trigiani is an Italian American best-selling author of sixteen books, "
        "television writer, film director, and entrepreneur based in Greenwich Village, New "
        "York City."),
}
OLDER_Q = "Who is older, Annie Morton or Terry Richardson?"


def hit(title: str) -> Hit:
    return Hit(title, f"{title} {PARAGRAPHS[title]}")


# ------------------------------------------------------------------ proposals
@pytest.mark.parametrize("question, entities", [
    (OLDER_Q, ["Annie Morton", "Terry Richardson"]),
    ("who is younger Keith Bostic or Jerry Glanville ?", ["Keith Bostic", "Jerry Glanville"]),
    ("Were Scott Derrickson and Ed Wood of the same nationality?",
     ["Scott Derrickson", "Ed Wood"]),
    ("Which band has more members, Muse or The Raconteurs?", ["Muse", "Raconteurs"]),
    (KISS_Q, []),
    ("The director of the romantic comedy \"Big Stone Gap\" is based in what New York city?",
     []),
])
def test_comparison_questions_name_what_they_compare(question, entities):
    assert compared(question) == entities


def test_a_compared_entity_a_hit_already_names_is_not_searched_again():
    hits = [hit("Annie Morton"), hit("Kiss and Tell (1945 film)")]
    proposed = followups(OLDER_Q, hits, [])
    # Annie Morton's text names Terry Richardson, but no hit is his article yet
    assert len(proposed) == 1 and proposed[0].startswith("Terry Richardson")
    assert followups(OLDER_Q, [*hits, hit("Terry Richardson")], []) == []


def test_the_bridge_is_the_name_in_the_first_hop_document_next_to_the_question_words():
    hits = [hit("Meet Corliss Archer"), hit("Kiss and Tell (1945 film)"),
            hit("Lord High Treasurer")]
    assert first_hop(KISS_Q, hits).title == "Kiss and Tell (1945 film)"  # named in the question
    assert bridges(KISS_Q, hits)[0] == "Shirley Temple"
    query = followups(KISS_Q, hits, [])[0]
    assert query.startswith("Shirley Temple") and "government" in query
    assert "Kiss" not in query and "Corliss" not in query  # what the first hop already matched


def test_a_bridge_to_the_director_of_a_quoted_film():
    q = "The director of the romantic comedy \"Big Stone Gap\" is based in what New York city?"
    proposed = followups(q, [hit("Big Stone Gap (film)")], [])
    assert proposed and proposed[0].startswith("Adriana Trigiani")
    # once her article is among the hits there is nothing left to follow
    assert not [p for p in followups(q, [hit("Big Stone Gap (film)"), hit("Adriana Trigiani")],
                                     []) if p.startswith("Adriana")]


def test_a_followup_already_searched_is_not_proposed_again():
    hits = [hit("Kiss and Tell (1945 film)")]
    first = followups(KISS_Q, hits, [])[0]
    assert first not in followups(KISS_Q, hits, [first])


def test_near_duplicates_are_the_question_again_not_a_query_that_adds_a_name():
    assert near_duplicate(KISS_Q.lower(), [KISS_Q])
    assert near_duplicate("government position woman portrayed Corliss Archer Kiss and Tell",
                          [KISS_Q])
    assert not near_duplicate("Shirley Temple government position", [KISS_Q])
    assert not near_duplicate("Annie Morton born", [OLDER_Q])
    assert near_duplicate("what is it?", [KISS_Q])  # nothing to search for


def test_names_and_titles():
    found = [n for n, _ in names_in("It stars Shirley Temple in the University of Kansas "
                                    "film \"A Date with Judy\" in January.")]
    assert "Shirley Temple" in found and "University of Kansas" in found
    assert "A Date with Judy" in found and "January" not in found and "It" not in found
    assert title_of("Kiss_and_Tell_1945_film_.md", "Kiss and Tell (1945 film)") == \
        "Kiss and Tell (1945 film)"
    assert title_of("Terry_Richardson~1a2b3c4d.md") == "Terry Richardson"


# ------------------------------------------------------------------ the loop
@pytest.fixture
def hotpot_kb(settings, make_folder, embedder):
    files = {title.replace(" ", "_").replace("(", "").replace(")", "") + ".md":
             f"# {title}\n\n{text}\n" for title, text in PARAGRAPHS.items()}
    Ingestor(settings, "hotpot", embedder=embedder).run(make_folder(files))
    return KnowledgeBase(settings, "hotpot")


def step(thought: str, query: str, top_k: int = 5) -> str:
    args = json.dumps({"query": query, "top_k": top_k})
    return f"Thought: {thought}\nAction: kb_search\nAction Input: {args}"


def retrieved(result) -> set[str]:
    return {c.path for c in result.all_references.chunks()}


def test_the_question_sent_again_is_replaced_by_the_bridge_followup(hotpot_kb):
    llm = ScriptedLLM([step("I will search the knowledge bases for this question.", KISS_Q),
                       "She was Chief of Protocol."])
    cfg = AgentConfig(mode="agent", rag_top_k=2, grounded=False)  # the loop, not the answer
    events, result = run(Agent(llm, [hotpot_kb], cfg), KISS_Q)
    queries = searched(events)
    assert queries[0] == KISS_Q  # the harness's first search
    assert queries[1].startswith("Shirley Temple") and "government" in queries[1]
    action = [a for a in events if isinstance(a, Action)][1]
    assert "harness searches the follow-up" in action.thought and KISS_Q[:40] in action.thought
    assert "Shirley_Temple.md" in retrieved(result)
    # the first model step saw the results inside the question message, no harness step
    first = llm.calls[0]["messages"]
    assert [m.role for m in first] == ["system", "user"]
    assert first[1].content.startswith(f"Question: {KISS_Q}") and "[1]" in first[1].content
    # and had to search once more before answering: a follow-up was still unsearched
    assert "Final Answer" not in llm.calls[0]["grammar"]
    assert "kb_search" in llm.calls[0]["grammar"] and "list_kbs" not in llm.calls[0]["grammar"]
    # the model that re-sent the question is not asked again: the harness searches what
    # is left to follow (at most MAX_FOLLOWUPS in all), then the answer is written
    assert len(llm.calls) == 2 and llm.calls[1]["grammar"] is None
    assert 2 <= len(queries) <= 1 + MAX_FOLLOWUPS
    assert all("harness searches the follow-up" in a.thought
               for a in events if isinstance(a, Action) and a.step > 2)
    assert result.stop_reason == "the follow-up searches are done"


def test_a_model_query_that_adds_a_name_is_its_own(hotpot_kb):
    llm = ScriptedLLM([step("Who played her?", "Shirley Temple diplomat"),
                       "Thought: Done.\nFinal Answer: Chief of Protocol."])
    events, result = run(Agent(llm, [hotpot_kb], AgentConfig(mode="agent", rag_top_k=2)),
                         KISS_Q)
    assert searched(events)[:2] == [KISS_Q, "Shirley Temple diplomat"]
    action = [a for a in events if isinstance(a, Action)][1]
    assert action.thought == "Who played her?"
    assert "Shirley_Temple.md" in retrieved(result)


def test_the_other_half_of_a_comparison_is_searched(hotpot_kb):
    repeat = step("I will search.", OLDER_Q, top_k=1)
    llm = ScriptedLLM([repeat, "Terry Richardson is older."])
    cfg = AgentConfig(mode="agent", rag_top_k=1, grounded=False)  # the loop, not the answer
    events, result = run(Agent(llm, [hotpot_kb], cfg), OLDER_Q)
    queries = searched(events)
    assert queries[0] == OLDER_Q
    first = next(e for e in events if isinstance(e, Observation)).sources[0].path
    other = "Terry Richardson" if first == "Annie_Morton.md" else "Annie Morton"
    assert any(q.startswith(other) for q in queries[1:])
    assert {"Annie_Morton.md", "Terry_Richardson.md"} <= retrieved(result)
    # nothing left to follow: the model that had to be led is not asked again
    assert result.stop_reason == "the follow-up searches are done"
    assert len(llm.calls) == 2 and llm.calls[-1]["grammar"] is None  # the answer turn


def test_a_question_one_hit_covers_gets_no_bridge_but_a_missing_named_document_does():
    hits = [hit("Annie Morton")]
    assert followups("In what state was the American model Annie Morton born?", hits, []) == []
    # a relative clause describes a second thing: follow the name next to its words
    q = "Which photographer that shot Marc Jacobs campaigns photographed Annie Morton?"
    assert followups(q, hits, [])
    # a name the question gives with no document found yet is searched by itself
    q = "Did Annie Morton and the photographer of the Tom Ford campaign work together?"
    assert "Tom Ford" in followups(q, hits, [])


def test_a_model_search_of_its_own_is_kept_and_the_followup_added_after_it(hotpot_kb):
    llm = ScriptedLLM([step("Which show?", "Meet Corliss Archer radio program CBS", top_k=1),
                       "Thought: Done.\nFinal Answer: Chief of Protocol."])
    cfg = AgentConfig(mode="agent", rag_top_k=2, grounded=False)
    events, result = run(Agent(llm, [hotpot_kb], cfg), KISS_Q)
    queries = searched(events)
    assert queries[1] == "Meet Corliss Archer radio program CBS"  # the model's, untouched
    assert queries[2].startswith("Shirley Temple")  # then the harness's, no LLM call
    assert "harness searches the follow-up" in [a for a in events
                                                if isinstance(a, Action)][2].thought
    assert "Shirley_Temple.md" in retrieved(result)
    assert "Shirley Temple" in llm.calls[1]["messages"][-1].content  # the model saw it


def test_a_passage_pasted_from_the_results_is_not_a_query(hotpot_kb):
    pasted = "Kiss and Tell is a 1945 American comedy film starring then 17-year-old"
    llm = ScriptedLLM([step("Search.", pasted), "She was Chief of Protocol."])
    cfg = AgentConfig(mode="agent", rag_top_k=2, grounded=False)
    events, _ = run(Agent(llm, [hotpot_kb], cfg), KISS_Q)
    queries = searched(events)
    assert pasted not in queries and queries[1].startswith("Shirley Temple")
