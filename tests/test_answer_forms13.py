"""Forms of issue 22, session 13:

* a short answer is copied as the source spells it: a unit written onto its number
  stays there ("over 2GB", "default 70em", "10pt"), where it used to be cut off
  ("70") or spaced out ("2 GB", which is not in the source);
* a sentence about the other bound than the one asked for ("minimal_backoff_time ...:
  The minimal time between attempts" for "the longest it will wait between two
  retries") ranks its values lower, and "at least 300s" keeps its "at" (Postfix);
* "How many errors will it put up with?" counts errors: a time ("18000s") is no such
  count (Postfix);
* a question that opens asking for a number ("What number decides where it lands in
  the loading order ...?") asks for a number, whatever "where ... scripts" after it
  would say (it was read as asking for a path, and the number was never a candidate);

From the Sphinx (heldout8) and Postfix (heldout4) development sets. Constructed text only (the program and
its figures are invented). Each test fails on main before this session (13236ca)."""

from __future__ import annotations

from kbagent.agent.answer.focus import AnswerType, focus_of
from kbagent.agent.answer.short import short_answer, spans


def test_a_unit_written_onto_its_number_is_kept_as_the_source_spells_it() -> None:
    q = focus_of("In the frob theme, what is the default width of the page content?")
    assert short_answer(q, "pagewidth (CSS length): Width of the page content, "
                           "default 70em.") == "70em"
    size = focus_of("Roughly how big is the frob image for PDF builds?")
    assert short_answer(size, "So the image is very large (over 2GB!).") == "over 2GB"
    font = focus_of("How big is the body text in the PDF, if I change nothing?")
    assert short_answer(font, "The font size ('10pt', '11pt' or '12pt'), default "
                              "10pt.") == "10pt"
    # a word after the number is still no unit: "2 of them" -> "2"
    assert short_answer(focus_of("How many workers does frobd start?"),
                        "By default frobd starts 2 of them.") == "2"


def test_a_question_that_opens_asking_for_a_number_wants_a_number() -> None:
    q = ("I load a script of my own through frob_js_files. What number decides where it "
         "lands in the loading order relative to Frob's own scripts, if I don't set one?")
    f = focus_of(q)
    assert f.answer_type is AnswerType.NUMBER
    assert short_answer(f, "Priority: 800; Main purpose in Frob: default priority for "
                           "frob_js_files") == "800"
    # a path question that only mentions a number stays a path question
    assert focus_of("Where are the log files stored?").answer_type is AnswerType.PATH


def test_a_sentence_about_the_other_bound_does_not_answer_for_this_one() -> None:
    longest = focus_of("What is the longest Frobd will wait between two retries of a "
                       "deferred message by default, in seconds?")
    minimal = ("frob_min_backoff (default: 300s): The minimal time between attempts to "
               "deliver a deferred message.")
    maximal = "frob_max_backoff (default: 4000s): The maximal time between attempts."
    spans_min, spans_max = spans(longest, minimal), spans(longest, maximal)
    assert spans_min and spans_max
    assert spans_max[0].score > spans_min[0].score + 0.5
    # asked for the shortest, the minimal one is the answer
    shortest = focus_of("What is the shortest Frobd will wait between two retries?")
    assert spans(shortest, minimal)[0].score > spans(shortest, maximal)[0].score + 0.5
    # a sentence naming both bounds is about neither alone; "at least" keeps its "at"
    both = "The wait is at least 300s and at most 4000s."
    assert {x.text for x in spans(longest, both)} == {"at least 300s", "at most 4000s"}


def test_a_count_of_something_is_no_time() -> None:
    q = focus_of("How many errors will a Frobd daemon put up with before it shuts itself "
                 "down?")
    assert q.unit == "errors"
    timeout = ("daemon_timeout (18000s): How much time a Frobd daemon process may take to "
               "handle a request before it is terminated.")
    other = "For safety reasons, a Frobd process will terminate when more than 13 of these happen."
    assert spans(q, other)[0].text == "more than 13"
    assert spans(q, other)[0].score > spans(q, timeout)[0].score
    # asked how long, the time is the answer
    assert short_answer(focus_of("How long may a Frobd daemon take on a request?"),
                        timeout) == "18000s"
