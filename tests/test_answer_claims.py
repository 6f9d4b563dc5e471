"""The model-authored policy's check stage (issue 44): a sentence a reader would accept
from its cited chunks passes as written; a figure, name or citation the chunks do not
bear out is named, in words for the model. The cases are the issue's: paraphrases the
extractive harness rewrote or deleted, and figures from nowhere."""

from __future__ import annotations

import pytest

from kbagent.agent.answer.claims import NOT_IN_KB, check_answer, feedback
from kbagent.agent.answer.figures import quantities, same_quantity

BACKOFF = ("Retries use exponential backoff: the first retry waits 500ms, each later "
           "retry doubles the wait, and the wait is capped at 120 seconds.")
PLANS = "| Plan | Price |\n|---|---|\n| Basic | $12 per month |\n| Pro | $30 per month |"
HTTPX = ("* `max_keepalive_connections`, number of allowable keep-alive connections, or "
         "`None` to always allow. (Defaults 20)\n* `max_connections`, maximum number of "
         "allowable connections, or `None` for no limits. (Default 100)")
TIMEOUT = "The client gives up on a server that has not answered after 5 s."


@pytest.mark.parametrize("answer, sources", [
    ("It doubles from 500 ms until it reaches the 2-minute cap [1].", {1: BACKOFF}),
    ("Pro costs $216 more per year than Basic ($360 vs $144) [1].", {1: PLANS}),
    ("It waits five seconds before giving up [1].", {1: TIMEOUT}),
    ("By default the pool keeps at most 20 keep-alive connections [1].", {1: HTTPX}),
    ("The `max_keepalive_connections` setting defaults to twenty [1].", {1: HTTPX}),
    ("Gross margin fell 3 percentage points, from 45% to 42% [1][2].",
     {1: "Q2 gross margin: 45%.", 2: "Q3 gross margin: 42%."}),
    ("A share is about 33.3% of the total [1].", {1: "Each of the 3 teams holds 1 of 3 "
                                                    "shares: 33.333% each."}),
    (NOT_IN_KB, {1: BACKOFF}),
])
def test_a_correct_paraphrase_passes_as_written(answer: str, sources: dict[int, str]) -> None:
    checks = check_answer(answer, sources)
    assert [c.problems for c in checks] == [()] * len(checks)
    assert "".join(c.text for c in checks).replace(" ", "") == answer.replace(" ", "")
    assert feedback(checks) == ""


def test_a_computed_figure_records_how_it_was_computed() -> None:
    [check] = check_answer("Pro costs $216 more per year than Basic ($360 vs $144) [1].",
                           {1: PLANS})
    assert "216 = 360 - 144" in check.derived
    assert "360 = 30 x 12" in check.derived


def test_a_figure_from_nowhere_is_named_with_its_sources() -> None:
    checks = check_answer("The pool keeps 5 keep-alive connections by default [1]. "
                          "It allows at most 100 connections [1].", {1: HTTPX})
    assert checks[0].problems == ("the figure 5 is in none of its cited sources [1]",)
    assert checks[1].ok
    text = feedback(checks)
    assert "The pool keeps 5 keep-alive connections by default [1]." in text
    assert "the figure 5 is in none of its cited sources [1]" in text
    assert "It allows at most 100" not in text


def test_a_computation_must_show_its_figures() -> None:
    sources = {1: "Q2 gross margin: 45%.", 2: "Q3 gross margin: 42%."}
    [bare] = check_answer("Gross margin fell 3 percentage points [1][2].", sources)
    assert bare.problems == ("the figure 3 is in none of its cited sources [1], [2]",)


def test_a_small_figure_is_not_made_by_dividing_a_big_one() -> None:
    [check] = check_answer("The cache holds 5 entries [1].",
                           {1: "Entries expire after 60 minutes."})
    assert not check.ok


def test_a_year_is_stated_never_computed() -> None:
    [check] = check_answer("It shipped in 2026 [1].", {1: "Released 2025, one year in beta."})
    assert check.problems == ("the figure 2026 is in none of its cited sources [1]",)


def test_citations_must_exist_and_be_given() -> None:
    checks = check_answer("The cap is 999 seconds. The first wait is 500 ms [4]. It grows.",
                          {1: BACKOFF})
    assert checks[0].problems == ("it cites no source",)
    assert checks[1].problems == ("it cites [4], which is not one of the sources",)
    assert checks[2].problems == ("it cites no source",)


def test_an_uncited_sentence_one_source_bears_out_gets_its_marker_placed() -> None:
    sources = {1: "Entries expire after a TTL of 3,600 seconds.", 2: BACKOFF}
    checks = check_answer("The default TTL is one hour. The wait is capped at 120 seconds.",
                          sources)
    assert [(c.text.strip(), c.cites, c.placed, c.ok) for c in checks] == [
        ("The default TTL is one hour [1].", (1,), True, True),
        ("The wait is capped at 120 seconds [2].", (2,), True, True)]


def test_a_name_or_code_term_must_be_in_the_cited_chunk() -> None:
    checks = check_answer("Set `R_LIBS_USER` to change it [1]. The Kestrel team owns it [1].",
                          {1: "Packages install into the site library by default."})
    assert checks[0].problems == ("'R_LIBS_USER' is in none of its cited sources [1]",)
    assert checks[1].problems == ("'Kestrel' is in none of its cited sources [1]",)


def test_figures_the_question_states_count_as_given() -> None:
    [check] = check_answer("Since version 3 it waits 120 seconds [1].", {1: BACKOFF},
                           question="Since version 3, how long is the cap?")
    assert check.ok


def test_a_question_name_no_document_mentions_does_not_ride_along() -> None:
    question = "What is the default value of core.fsyncTimeout?"
    claim = "The default value of core.fsyncTimeout is 120 seconds [1]."
    [passes] = check_answer(claim, {1: BACKOFF}, question)
    assert passes.ok  # the question's name rides along beside the chunk's figure
    [fails] = check_answer(claim, {1: BACKOFF}, question, never=["core.fsyncTimeout"])
    assert fails.problems == ("“core.fsyncTimeout” is in none of its cited sources [1]: no "
                              "document of the knowledge base mentions it",)
    # a name the sentence does not state changes nothing
    [still] = check_answer(claim, {1: BACKOFF}, question, never=["Roughtime"])
    assert still.ok


def test_a_digit_and_its_scale_word_are_one_figure() -> None:
    assert [(q.text, q.value) for q in quantities("about 5 million rows, 2.5 thousand more")] \
        == [("5 million", 5e6), ("2.5 thousand", 2500.0)]
    checks = check_answer("The table holds 5 million rows [1].",
                          {1: "The archive table holds 5,000,000 rows."}, "How many rows?")
    assert all(c.ok for c in checks)


def test_versions_are_not_read_as_figures() -> None:
    assert [q.value for q in quantities("Install 1.3.8 or v2.0.1 with 4 workers")] == [4]


@pytest.mark.parametrize("claim, source, same", [
    ("2 minutes", "120 seconds", True),
    ("1.5 hours", "90 min", True),
    ("five seconds", "5 s", True),
    ("4 KB", "4096 bytes", True),
    ("4 KB", "4000 bytes", True),
    ("3 minutes", "120 seconds", False),
    ("2 MB", "2 seconds", False),  # a number with another unit is another figure
    ("120 ms", "120 seconds", False),
    ("the default is 20", "(Defaults 20)", True),
    ("two hundred and five", "205", True),
    ("33%", "33.333%", True),
    ("34%", "33.333%", False),
    ("5 million", "5,000,000", True),  # one figure, not a 5 and a million
    ("2.5 million users", "2,500,000 users", True),
    ("2.5 million", "2,600,000", False),
    ("3 thousand rows", "3000 rows", True),
])
def test_quantities_compare_as_a_reader_compares(claim: str, source: str, same: bool) -> None:
    [c] = quantities(claim)
    [s] = quantities(source)
    assert same_quantity(c, s) is same


def test_a_citation_after_the_full_stop_belongs_to_the_sentence() -> None:
    [check] = check_answer("The wait is capped at 120 seconds. [1]", {1: BACKOFF})
    assert check.ok and check.cites == (1,) and not check.placed


def test_a_round_figure_is_not_made_from_a_one_in_the_chunk() -> None:
    """The 1.5B wrote "room for 100 entries" where its source said 512: a "1" in the
    chunk times 100 had made it pass."""
    [check] = check_answer("The module reserves room for 100 entries [1].",
                           {1: "BanTable: 1 file; the ban list holds up to 512 entries."})
    assert check.problems == ("the figure 100 is in none of its cited sources [1]",)


@pytest.mark.parametrize("answer, sources, question", [
    # operands come from the same sentence: figures stated elsewhere make nothing
    ("The pool keeps 20 connections [1]. It allows 100 [1]. The cache holds 8 entries [1].",
     {1: "Defaults: 20 keep-alive connections, 100 connections, 5 retries, 3 hosts."}, ""),
    # a calendar factor only for the period the sentence names
    ("It retries 35 times [1].", {1: "Retry 5 times, for 7 days."}, ""),
    # the question's figure never stands alone as the claim
    ("It uses port 8080 [1].", {1: "The port is 9090."}, "Is the port 8080?"),
    # saying the KB does not say, then claiming more
    ("The knowledge base does not say which, but the default is 42 [1].",
     {1: "Options are listed below."}, ""),
    # identifiers are names, matched whole
    ("Set R_PROFILE to change it [1].", {1: "Set R_LIBS_USER to change it."}, ""),
    ("Set `R_LIBS` to change it [1].", {1: "Set R_LIBS_USER to change it."}, ""),
    # units converted, then compared at 5% at most; another unit is another figure
    ("The cap is 1 hour [1].", {1: "The cap is 90 minutes."}, ""),
    ("The cap is 120 ms [1].", {1: "The cap is 120 seconds."}, ""),
    # digits of a version or an architecture are no figure
    ("The pool keeps 8 connections [1].", {1: "Requires httpx 0.23.8 or later."}, ""),
    ("It uses 64 workers [1].", {1: "Built for x86_64 only."}, ""),
    # a number too long for a float makes no figure pass
    ("The pool keeps 7 connections [1].", {1: "Defaults 20. Key: " + "9" * 400}, ""),
])
def test_what_a_reader_would_not_accept_is_named(answer: str, sources: dict[int, str],
                                                 question: str) -> None:
    checks = check_answer(answer, sources, question)
    assert not checks[-1].ok, checks[-1]


def test_a_question_figure_rides_along_but_never_gets_a_marker_placed() -> None:
    [check] = check_answer("Yes, the port is 8080.", {1: "The port is 9090."},
                           "Is the port 8080?")
    assert check.problems == ("it cites no source",) and not check.placed


def test_units_are_no_names_and_a_line_that_states_nothing_needs_no_citation() -> None:
    checks = check_answer("Each page is 4 KB [1].\n\n```\n", {1: "Pages are 4096 bytes."})
    assert all(c.ok for c in checks), checks
    assert "".join(c.text for c in checks) == "Each page is 4 KB [1].\n\n```\n"
