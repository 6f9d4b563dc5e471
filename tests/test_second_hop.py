"""The second hop of a bridge question (issue 22, HotpotQA in the default mode): which
gathered document the answer comes from (:mod:`kbagent.agent.harness.second_hop`, through
:func:`kbagent.agent.harness.bridge.second_hop_units`) and the short answer's span
(:func:`kbagent.agent.harness.bridge.short_of`). Constructed paragraphs in HotpotQA's shape
(a paragraph starts with its title entity); a neighbour that restates the question
shares its words but not the fact."""

from __future__ import annotations

from kbagent.agent.answer.citations import Citation
from kbagent.agent.harness.bridge import Hop, second_hop_units, short_of
from kbagent.agent.harness.hop_answer import head_of


def _doc(n: int, title: str, text: str) -> Citation:
    path = title.replace(",", "").replace(" ", "_") + ".md"
    return Citation(n, "kb", path, 1, 3, text, 0.5, "kb_search", heading=title)


KIRTON_Q = ("According to the 2001 census, what was the population of the city in which "
            "Kirton End is located?")
KIRTON_END = _doc(1, "Kirton End", "Kirton End is a hamlet in the civil parish of Kirton in "
                  "the Boston district of Lincolnshire, England. It lies 4 miles south-west "
                  "of Boston.")
# the same words as the question (Kirton, 2001 census, population), another place
KIRTON_NOTTS = _doc(2, "Kirton, Nottinghamshire", "Kirton is a village in Nottinghamshire, "
                    "England. According to the United Kingdom Census 2001 it had a "
                    "population of 273, reducing to 261 at the 2011 census.")
BOSTON = _doc(3, "Boston, Lincolnshire", "Boston is a town and small port in Lincolnshire, "
              "on the east coast of England. The town itself had a population of 35,124 at "
              "the 2001 census.")


def test_the_document_a_follow_up_searched_for_is_the_second_hop_under_its_qualified_title():
    # the follow-up searched "Boston" (the name the first hop gives); the document is
    # titled "Boston, Lincolnshire": the same place with a qualifier
    hops = [Hop(KIRTON_Q, [1, 2]), Hop("Boston According 2001 census population city", [3])]
    best = second_hop_units(KIRTON_Q, hops, [KIRTON_END, KIRTON_NOTTS, BOSTON])
    assert best[0].unit.n == 3 and "35,124" in best[0].unit.text


BROWN_Q = ("Brown State Fishing Lake is in a county that has a population of how many "
           "inhabitants?")
BROWN_LAKE = _doc(1, "Brown State Fishing Lake", "Brown State Fishing Lake and Wildlife Area "
                  "is a protected area in Kansas, 7 miles east of Hiawatha. The lake covers "
                  "62 acres.")
SHAWNEE_LAKE = _doc(2, "Shawnee State Fishing Lake", "Shawnee State Fishing Lake is "
                    "approximately eight miles northwest of Topeka, Kansas. The lake is "
                    "popular with anglers.")
COUNTY = _doc(3, "Doniphan County", "Doniphan County is a county in the northeast corner of "
              "Kansas. As of the 2010 census, the county population was 7,945.")


def test_documents_compare_on_the_words_the_first_hop_leaves_open():
    # neither candidate is named by the first hop nor searched for by name; the one that
    # restates the question ("State Fishing Lake", a number) holds none of what the first
    # hop leaves open ("county", "population", "inhabitants")
    hops = [Hop(BROWN_Q, [1, 2]), Hop("Kansas county population inhabitants", [3])]
    best = second_hop_units(BROWN_Q, hops, [BROWN_LAKE, SHAWNEE_LAKE, COUNTY])
    assert best[0].unit.n == 3 and "7,945" in best[0].unit.text


# ------------------------------------------------- the short answer: a class asked for
def _units(c: Citation):
    from kbagent.agent.answer.evidence import units_of

    return units_of(c)


def test_a_question_for_a_class_takes_the_document_whose_subject_is_one():
    # "What screenwriter ...": the second hop's best sentence names films, its first
    # sentence defines its subject as a screenwriter: the subject is the answer
    weissman = _doc(2, "David Weissman", "David Weissman is a screenwriter and director. "
                    'His film credits include "The Family Man" (2000), "Evolution" (2001), '
                    'and "When in Rome" (2010).')
    units = _units(weissman)
    q = ('What screenwriter with credits for "Evolution" co-wrote a film starring Nicolas '
         "Cage and Tea Leoni?")
    found = short_of(q, [units[1]], {2: units[0]})
    assert found is not None and found[0] == "David Weissman"


def test_a_name_that_carries_the_class_asked_for_is_the_answer_without_the_class_word():
    cummings = _doc(3, "Jim Cummings", 'He is known for voicing the title character from '
                    '"Darkwing Duck", Dr. Robotnik from "Sonic the Hedgehog", and Pete.')
    found = short_of("This singer of A Rather Blustery Day also voiced what hedgehog?",
                     _units(cummings))
    assert found is not None and found[0] == "Sonic"
    # a class the question capitalises is part of the name
    ibf = _doc(4, "International Boxing Federation", "The International Boxing Federation "
               "(IBF) is one of four major organizations recognized by the International "
               "Boxing Hall of Fame (IBHOF).")
    found = short_of("Vince Phillips held a title by an organization recognized by what "
                     "larger Hall of Fame?", _units(ibf))
    assert found is not None and found[0] == "International Boxing Hall of Fame"


def test_a_name_in_apposition_to_the_class_is_the_answer():
    album = _doc(5, "Based on a True Story", "Based on a True Story is the eighth studio "
                 "album by American country music artist Blake Shelton. Its songs were "
                 "recorded in Nashville with producer Scott Hendricks.")
    units = _units(album)
    found = short_of("Based on a True Story is an album by which country music star, with "
                     "the single My Eyes?", units)
    assert found is not None and found[0] == "Blake Shelton"


def test_a_relative_which_names_no_class():
    assert head_of("Where is the hotel in which Bill Cosby's third album was recorded?") == []
    assert head_of("What is the name of the fight song of the university?") == ["fight", "song"]
    assert head_of("recognized by what larger Hall of Fame?") == ["larger", "Hall", "of", "Fame"]


def test_of_two_numbers_the_one_whose_clause_holds_the_question_is_the_answer():
    boston = _doc(3, "Boston, Lincolnshire", "The borough had a total population of 66,900, "
                  "at the mid 2015 estimates, while the town itself had a population of "
                  "35,124 at the 2001 census.")
    found = short_of(KIRTON_Q, _units(boston))
    assert found is not None and found[0] == "35,124"


LEMPSTER_Q = ("What is the county seat of the county where East Lempster, New Hampshire is "
              "located?")
LEMPSTER = _doc(1, "East Lempster, New Hampshire", "East Lempster is an unincorporated "
                "community in the town of Lempster in Sullivan County, New Hampshire.")
SULLIVAN = _doc(2, "Sullivan County, New Hampshire", "Sullivan County is a county in the "
                "U.S. state of New Hampshire. Its county seat is Newport.")
# names the first hop (and as many of the question's open words), but the first hop
# does not lead to it
LIBRARY = _doc(3, "Miner Memorial Library", "Miner Memorial Library is the public library "
               "of East Lempster, New Hampshire, located at 3 Second New Hampshire "
               "Turnpike.")


def test_the_document_the_first_hop_names_outranks_one_that_only_names_the_first_hop():
    hops = [Hop(LEMPSTER_Q, [1, 2, 3])]
    best = second_hop_units(LEMPSTER_Q, hops, [LEMPSTER, SULLIVAN, LIBRARY])
    assert best[0].unit.n == 2 and "Newport" in best[0].unit.text


def test_a_date_is_the_one_next_to_the_event_asked_about_not_the_one_in_a_wordier_clause():
    khan = _doc(6, "Zaheer Khan", "Zaheer Khan (born 7 October 1978) is a former Indian "
                "cricketer who played for the Indian national cricket team from 2000 till "
                "2014.")
    found = short_of("When was the former Indian cricketer who made his debut during the 2000 "
                     "ICC KnockOut Trophy born?", _units(khan))
    assert found is not None and found[0] == "7 October 1978"
