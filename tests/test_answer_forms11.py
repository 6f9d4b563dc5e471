"""Forms of issue 22, session 11:

* a question's condition on a release ("before Frobd 2.4") in the manual's own wording
  ("prior to Frobd 2.4 the default value was 1000s"): the value under the condition is
  the short answer, not the current default the entry states first (found on the Postfix
  development set, where postconf.5 writes "prior to Postfix 2.4");
* a file name pattern ("default: test*.txt") is a path-like answer to "which file name
  pattern" (found on the ninth held-out set, pytest's manual, after its one run).

Constructed text only (the program and its figures are invented). Each test fails on
main before this session's changes (f9cebf9)."""

from __future__ import annotations

from kbagent.agent.answer.focus import focus_of
from kbagent.agent.answer.short import short_answer
from kbagent.agent.answer.span_rules import qualified

ENTRY = ("queue_scan_delay (default: 300s): The time between deferred queue scans by the "
         "queue manager; prior to Frobd 2.4 the default value was 1000s.")


def test_before_a_release_is_read_in_the_manuals_wording() -> None:
    question = "What was the default queue_scan_delay before Frobd 2.4?"
    assert short_answer(focus_of(question), ENTRY) == "1000s"
    # without the condition, the default the entry states
    assert short_answer(focus_of("What is the default queue_scan_delay?"), ENTRY) == "300s"


def test_a_condition_matches_its_relation_and_release_only() -> None:
    question = "What was the limit before Frobd 2.4?"
    # the same relation in other words, the value after a linking phrase
    assert qualified(question, "Up to Frobd 2.4, the limit was 50 MB.")
    # another release ("2.4.1" is not 2.4), or the opposite relation, is no condition met
    assert not qualified(question, "Prior to Frobd 2.4.1 the limit was 50 MB.")
    assert not qualified(question, "Since Frobd 2.4 the limit is 50 MB.")
    # "in 2026" is the period the question is about, not a release's condition
    assert not qualified("How many tickets were opened in 2026?", "In 2026 it was 40.")


def test_a_file_name_pattern_is_the_default_asked_for() -> None:
    question = "Which file name pattern does frob use by default to pick up its recipe files?"
    entry = "--recipe-glob=pat Recipe file matching pattern, default: recipe_*.txt"
    assert short_answer(focus_of(question), entry) == "recipe_*.txt"
    # a product is no pattern
    assert short_answer(focus_of("Which file does frob read first?"),
                        "It reads 2*3.5 lines of frob.conf first.") == "frob.conf"
