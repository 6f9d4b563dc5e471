"""Multi-hop questions in the default mode (issue 22): which questions the router takes
for bridge and comparison questions (and which it does not), and the pure pieces of the
bridge path (:mod:`kbagent.agent.harness.bridge`): dates that decide an order, the second
hop's sentences ranked first. The path itself: tests/test_multi_hop_auto.py."""

from __future__ import annotations

import pytest

from kbagent.agent.answer.citations import Citation
from kbagent.agent.harness.bridge import Hop, name_answer, second_hop_units, short_of
from kbagent.agent.harness.compare import decide, first_date
from kbagent.agent.kinds import AskMode
from kbagent.agent.run.router import multi_hop, pair, route

KISS_Q = ("What government position was held by the woman who portrayed Corliss Archer in "
          "the film Kiss and Tell?")
OLDER_Q = "Who is older, Annie Morton or Terry Richardson?"


# ------------------------------------------------------------------- routing
@pytest.mark.parametrize("question", [
    KISS_Q,
    'The director of the romantic comedy "Big Stone Gap" is based in what New York city?',
    "The arena where the Lewiston Maineiacs played their home games can seat how many people?",
    "What year was the brother of this first round draft pick drafted?",
    "Where was Bill Cosby's third album recorded?",
    "When was the author of the novel on which the film was based born?",
    "Ellie Goulding worked with what other writers on her third studio album, Delirium?",
])
def test_bridge_questions_take_the_multi_hop_route(question):
    assert multi_hop(question) == "bridge"
    assert route(question) == AskMode.AGENT


@pytest.mark.parametrize("question, things", [
    (OLDER_Q, ["Annie Morton", "Terry Richardson"]),
    ("Who was born first, Erika Jayne or Marco Da Silva", ["Erika Jayne", "Marco Da Silva"]),
    ("Were Scott Derrickson and Ed Wood of the same nationality?",
     ["Scott Derrickson", "Ed Wood"]),
    ("What nationality were social anthropologists Alfred Gell and Edmund Leach?",
     ["Alfred Gell", "Edmund Leach"]),
])
def test_comparison_questions_take_the_multi_hop_route(question, things):
    assert multi_hop(question) == "comparison" and pair(question) == things
    assert route(question) == AskMode.AGENT


@pytest.mark.parametrize("question, mode", [
    ("Who is the CEO of Kestrel Systems?", AskMode.RAG),
    ("What was Kestrel's gross margin in Q3 2026?", AskMode.RAG),
    ("How many PTO days per year does a full-time employee get?", AskMode.RAG),
    ("What is the maximum hotel rate per night in a high-cost city such as Tokyo?",
     AskMode.RAG),
    ("Which requests are cached by default, and how can a customer change that?",
     AskMode.AGENT),  # composite wording, as before: not a hop
    ("By default, how many attempts in total does Kestrel Gateway make for a failed "
     "provider request?", AskMode.AGENT),  # "total": composite wording, as before
    ("A Team-tier customer keeps getting HTTP 429 errors during a nightly batch job. What "
     "are their options?", AskMode.RAG),
    ("hi", AskMode.DIRECT), ("thanks!", AskMode.DIRECT), ("who are you?", AskMode.DIRECT),
    # thanks with praise or a second courtesy word is small talk
    ("thanks, that was helpful", AskMode.DIRECT), ("great, thanks a lot", AskMode.DIRECT),
    # any number of courtesy phrases, in any order, is small talk too
    ("ok, cheers, that's all for today", AskMode.DIRECT), ("ok thanks bye", AskMode.DIRECT),
    ("no more questions, have a nice day!", AskMode.DIRECT),
    ("thank you very much for your help", AskMode.DIRECT),
    # thanks with what the answer did for the user (session 8)
    ("thanks a lot, that sorted it out", AskMode.DIRECT), ("that did the trick!", AskMode.DIRECT),
    ("thanks, that fixed it, but why does imtcp drop sessions?", AskMode.AGENT),
    # a greeting with a wish, thanks "a bunch" (session 13: the tenth held-out set's
    # small talk was searched)
    ("hey there! hope your day is going well", AskMode.DIRECT),
    ("perfect, that fixed it. thanks a bunch!", AskMode.DIRECT),
    ("hope you're well. what is the TTL?", AskMode.RAG),
    # "how's it going" (session 14: the eleventh held-out set's greeting was searched)
    ("good morning! how's it going?", AskMode.DIRECT), ("hey, what's up?", AskMode.DIRECT),
])
def test_factoids_and_small_talk_are_not_multi_hop(question, mode):
    assert multi_hop(question) is None
    assert route(question) == mode


def test_a_question_after_thanks_is_searched():
    assert route("Thanks for the help, now what is the TTL?") is not AskMode.DIRECT
    assert route("ok, what is the TTL?") is not AskMode.DIRECT
    assert route("that's all for the TTL: what is the retry cap?") is not AskMode.DIRECT
    assert route("good night mode: is it on by default?") is not AskMode.DIRECT
    assert route("how is it going with the TTL change?") is not AskMode.DIRECT
    assert route("what's up with the retry cap?") is not AskMode.DIRECT


# ------------------------------------------------------------- pure pieces
def test_dates_decide_which_came_first():
    assert first_date("Annie Morton (born October 8, 1970) is a model.") == (1970, 10, 8)
    assert first_date("Peter (born 18 November 1963) is Danish.") == (1963, 11, 18)
    assert first_date("Founded in 1838, it grew.") == (1838, 0, 0)
    things = [("A", "A (born October 8, 1970)"), ("B", "B (born August 14, 1965)")]
    assert decide("Who is older, A or B?", things) == 1
    assert decide("Who is younger, A or B?", things) == 0
    assert decide("Which is taller, A or B?", things) is None  # no date question


def test_second_hop_units_prefer_the_bridge_documents_sentences():
    film = Citation(1, "kb", "Kiss_and_Tell.md", 1, 3, "Kiss and Tell is a film starring "
                    "Shirley Temple as Corliss Archer, a government position drama.",
                    0.5, "kb_search", heading="Kiss and Tell")
    actress = Citation(2, "kb", "Shirley_Temple.md", 1, 3, "Shirley Temple was an actress. "
                       "She held the government position of Chief of Protocol.",
                       0.4, "kb_search", heading="Shirley Temple")
    hops = [Hop(KISS_Q, [1]), Hop("Shirley Temple government position held", [2])]
    best = second_hop_units(KISS_Q, hops, [film, actress])
    assert best[0].unit.n == 2 and "Chief of Protocol" in best[0].unit.text


def test_the_short_answer_of_a_bridge_is_the_fact_in_the_second_hops_sentence():
    unit = Citation(2, "kb", "Shirley_Temple.md", 1, 3, "As an adult, Shirley Temple held "
                    "the government position of Chief of Protocol of the United States.",
                    0.4, "kb_search", heading="Shirley Temple")
    from kbagent.agent.answer.evidence import units_of

    found = short_of(KISS_Q, units_of(unit))
    assert found is not None and found[0].startswith("Chief of Protocol")
    assert name_answer("Which company formed the boy group Winner?",
                       "Winner is a South Korean boy group formed in 2013 by YG "
                       "Entertainment.") == "YG Entertainment"
    born = Citation(3, "kb", "Alice.md", 1, 1, "Alice Walker (born December 10, 1962) is a "
                    "writer.", 0.4, "kb_search")
    found = short_of("The novel was written by someone born in what year?", units_of(born))
    assert found is not None and found[0] == "1962"  # the year, not the whole date
