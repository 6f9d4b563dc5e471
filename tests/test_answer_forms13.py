"""Forms of issue 22, session 13:

* a short answer is copied as the source spells it: a unit written onto its number
  stays there ("over 2GB", "default 70em", "10pt"), where it used to be cut off
  ("70") or spaced out ("2 GB", which is not in the source);
* a question that opens asking for a number ("What number decides where it lands in
  the loading order ...?") asks for a number, whatever "where ... scripts" after it
  would say (it was read as asking for a path, and the number was never a candidate);

All from the Sphinx development set (heldout8). Constructed text only (the program and
its figures are invented). Each test fails on main before this session (13236ca)."""

from __future__ import annotations

from kbagent.agent.answer.focus import AnswerType, focus_of
from kbagent.agent.answer.short import short_answer


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
