"""The harness's evidence stage, its ranking: which unit comes first for a question
(``answer/evidence.py``: ``score_units``, ``best_evidence``): the question's own phrasing
word for word, the parameter it names exactly (not a longer name that holds it), the kind
of answer asked for, a default not taken from an example, boilerplate repeated on every
page below a fact, and a later part of a composite question by its own words.

The harness policy's frozen rules, on constructed text: see ``tests/harness_cases.py``.
"""

from __future__ import annotations

from kbagent.agent.answer.citations import Citation
from kbagent.agent.answer.evidence import SentenceVectors, best_evidence, score_units, units_of
from kbagent.agent.answer.focus import TYPE_PATTERNS, AnswerType, focus_of
from kbagent.agent.harness.short import short_answer
from kbagent.kb.embedder import load_embedder
from tests.agent_runs import cite
from tests.harness_cases import DIRECTIVE_BOX as BOX
from tests.harness_cases import FRAME_LIMITS as LIMITS
from tests.harness_cases import option_citation as _cite
from tests.harness_cases import page_citation as _page_cite
from tests.harness_cases import sample_rag


def test_the_questions_own_phrasing_tells_apart_entries_that_share_its_words():
    from kbagent.agent.answer.evidence import score_units
    from kbagent.agent.answer.units import Unit, UnitKind

    question = ("Which merge strategy does weave use by default when merging more than one "
                "branch into the current one?")
    units = [Unit(1, "braid: This is the default merge strategy when pulling or merging one "
                     "branch.", "weave merge", 0, UnitKind.DEFINITION),
             Unit(1, "plait: This is the default merge strategy when pulling or merging more "
                     "than one branch.", "weave merge", 1, UnitKind.DEFINITION)]
    best = score_units(question, units)[0]
    assert best.unit.text.startswith("plait:")
    assert short_answer(focus_of(question), best.unit.text) == "plait"


def test_which_things_of_a_plural_noun_asks_for_a_description(embedder):
    q = "Which requests are cached by default?"
    assert focus_of(q).answer_type is not AnswerType.NAME
    assert focus_of("Which options are enabled by default?").answer_type is AnswerType.NAME
    assert focus_of("Which team owns billing?").answer_type is AnswerType.NAME
    raw = ("X-Frob-Cache-TTL: Override the cache TTL for this request, in seconds (default "
           "3,600).\n\nBy default only requests with temperature set to 0 are cached.\n")
    vectors = SentenceVectors(lambda texts: embedder.encode(texts))
    best = best_evidence(q, [_cite(raw, "support/faq.md")], limit=2, vectors=vectors)
    assert best[0].unit.text.startswith("By default only requests")


def test_how_much_memory_asks_for_a_size_not_a_count(embedder):
    q = "How much memory should I count for each message sitting in the frob queue?"
    raw = ("With 5 workers and a batch size of 1,000, the frob queue holds up to 5,000 "
           "messages in main memory.\n\nFor typical messages, 512 bytes of memory should be "
           "a good bet.\n")
    vectors = SentenceVectors(lambda texts: embedder.encode(texts))
    best = best_evidence(q, [cite(raw, "guide/frob.md")], limit=2, vectors=vectors)
    assert best[0].unit.text.startswith("For typical messages, 512 bytes")
    assert short_answer(focus_of(q), best[0].unit.text) == "512 bytes"


def test_a_unit_under_an_examples_heading_is_no_default(embedder):
    """The chunk's heading trail says "Examples" (the unit's own heading does not): a
    value set there is no default."""
    q = "If I load omfrob without options, how many seconds pass between two statistics reports?"
    example = Citation(1, "kb", "modules/omfrob.html", 1, 2, "This loads the module and "
                       "reports statistics every 600 seconds.", None, "kb_search",
                       heading="omfrob > Examples > Report to the frob log")
    reference = Citation(2, "kb", "modules/omfrob.html", 9, 10, "Statistics are reported "
                         "every 300 seconds.", None, "kb_search",
                         heading="omfrob > Module Parameters > reportInterval")
    vectors = SentenceVectors(lambda texts: embedder.encode(texts))
    best = best_evidence(q, [example, reference], limit=2, vectors=vectors)
    assert best[0].unit.n == 2


def test_the_sentence_that_says_the_questions_phrase_leads() -> None:
    # both sentences share the question's words; the second says its condition word for
    # word ("cannot be tested"), the first is longer and closer in meaning overall
    text = ("$ frob probe run my_check arguments: Note that the check (my_check in the above "
            "example) should exit with code 0 if the current source code is good, and exit "
            "with a code between 1 and 127 (inclusive), except 125, if the current source "
            "code is bad.\n"
            "Any other exit code will abort the probe process.\n"
            "The special exit code 125 should be used when the current source code cannot "
            "be tested.\n")

    embedder = load_embedder()
    question = ("Which exit code should a frob probe check return on a run if the code "
                "cannot be tested?")
    best = best_evidence(question, [cite(text, "frob-probe.html")], limit=2,
                         vectors=SentenceVectors(lambda t: embedder.encode(t)))
    assert best[0].unit.text.startswith("The special exit code 125")
    assert short_answer(focus_of(question), best[0].unit.text) == "125"


def test_the_parameter_named_exactly_leads_not_a_longer_name_that_contains_it():
    question = "What is the default frame_size_limit?"
    best = score_units(question, LIMITS)[0]
    assert best.unit.text == "RESOURCE CONTROLS frame_size_limit (4096)"
    assert short_answer(focus_of(question), best.unit.text) == "4096"


def test_a_named_parameter_in_a_real_chunk_is_matched_whole():
    text = ("edge_frame_size_limit (default: 998): The maximal size of a frame.\n\n"
            "frame_size_limit (4096): Upon input, long frames are cut into pieces.\n")
    c = Citation(1, "docs", "relayd.8.html", 1, 3, text, 0.5, "kb_search", raw=text)
    best = score_units("What is the default frame_size_limit?", units_of(c))[0]
    assert best.unit.text.startswith("frame_size_limit (4096)")


def test_a_manual_parameter_with_its_value_in_parentheses_states_a_default():
    assert TYPE_PATTERNS[AnswerType.DEFAULT].search("frame_size_limit (4096)")
    assert not TYPE_PATTERNS[AnswerType.DEFAULT].search("frame size limit (see below)")


def test_a_key_value_box_answers_its_default_first():
    question = "How many trace records are kept for a request out of the box?"
    ranked = score_units(question, units_of(_page_cite(BOX)))
    assert ranked[0].unit.text == "Default: TraceLog 250"
    assert short_answer(focus_of(question), ranked[0].unit.text) == "250"


def test_one_as_a_pronoun_is_no_number():
    f = focus_of("How many workers does the server start?")
    assert not f.type_match("One way to use the wrapper is through the group directive.")
    assert f.type_match("Only one worker is started.")


def test_boilerplate_repeated_on_every_page_ranks_below_a_fact():
    footer = "Licensed under the Example Server License, version 2.0, by the Example Foundation."
    question = "Which license version covers the Example Server?"
    cites = [_page_cite(f"# Page {i}\n\n{footer}\n", n=i, path=f"p{i}.html") for i in range(1, 4)]
    cites.append(_page_cite("# Legal\n\nThe server code is covered by license version 3.1 since "
                            "2024.\n", n=4, path="legal.html"))
    ranked = score_units(question, [u for c in cites for u in units_of(c)])
    assert ranked[0].unit.n == 4


def test_a_later_part_is_answered_by_its_own_words_not_the_subject_it_inherits(sample_home):
    """The issue's own example on the sample KB: "does it roll over?" inherits "days PTO
    employees get", which a total of paid days off shares more than the carryover line."""
    result = sample_rag(sample_home,
                        "How many days of PTO do employees get, and does it roll over?")
    first, second = result.answer.split("Does it roll over?")
    assert "20 days" in first
    assert second.lstrip().startswith("Yes [") and "Carryover" in second
