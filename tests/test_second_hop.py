"""The second hop of a bridge question (issue 22, HotpotQA in the default mode): which
gathered document the answer comes from (:mod:`kbagent.agent.run.second_hop`, through
:func:`kbagent.agent.run.bridge.second_hop_units`) and the short answer's span
(:func:`kbagent.agent.run.bridge.short_of`). Constructed paragraphs in HotpotQA's shape
(a paragraph starts with its title entity); a neighbour that restates the question
shares its words but not the fact."""

from __future__ import annotations

from kbagent.agent.answer.citations import Citation
from kbagent.agent.run.bridge import Hop, second_hop_units


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
