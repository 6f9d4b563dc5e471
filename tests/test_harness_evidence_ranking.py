"""The harness's evidence stage, its ranking: which unit comes first for a question
(``answer/evidence.py``: ``score_units``, ``best_evidence``): the question's own phrasing
word for word, the kind of answer asked for, a default not taken from an example.

The harness policy's frozen rules, on constructed text: see ``tests/harness_cases.py``.
"""

from __future__ import annotations

from kbagent.agent.answer.citations import Citation
from kbagent.agent.answer.evidence import SentenceVectors, best_evidence
from kbagent.agent.answer.focus import AnswerType, focus_of
from kbagent.agent.harness.short import short_answer
from kbagent.kb.embedder import load_embedder
from tests.agent_runs import cite
from tests.harness_cases import option_citation as _cite


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
