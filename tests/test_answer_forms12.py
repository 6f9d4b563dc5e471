"""Forms of issue 22, session 12:

* abstention reads the sentence that asks: a story told before it ("Our weekly
  newsletter goes out to lots of addresses ...") need not be in the sources, so a word
  of the story that no chunk holds does not make the harness refuse (found on the
  Sphinx and pytest development sets: "We're in Germany and the PDF ...", "Before
  writing my own helper I'd like to know how many ... the catalogue ... lists. How many
  are there?"), and one such word among more than eight of the question's words does
  not either ("... so that the same page requested with its parameters shuffled is
  cached once?": the Varnish development set); fewer words, and it still does ("Which
  dental insurance provider ...");
* a question that opens with a condition of several clauses, "When omfile creates a new
  log file, and a new directory to put it in, which permission modes ...?", asks what
  follows them, not for a date (the rsyslog development set);
* a table row of several "label: value" cells gives the value whose label names more of
  what is asked ("min. Python version: 3.7+" over "pytest version: 7.1+" for "the
  minimum Python version"; the ninth development set, pytest);
* a ``--help`` listing, in a code block or in a chunk cut from one, is read one option
  a unit with its description's indented lines ("--debug=[DEBUG_FILE_NAME]" / "...
  Default: pytestdebug.log."), and a file name ending a sentence ("Default: x.log.") is
  a path (pytest's reference page).

Constructed text only (the program and its figures are invented). Each test fails on
main before this session's changes (91b937b)."""

from __future__ import annotations

from kbagent.agent.answer.focus import AnswerType, focus_of
from kbagent.agent.answer.short import short_answer
from kbagent.agent.answer.units import UnitKind, units_of
from tests.agent_runs import cite, silent_reason

SMTP_PAGES = {
    "smtp.html": "frob_max_rcpt (default: 100): The maximum number of recipients that the "
                 "smtp transport of Frobd lists in one SMTP transaction; the rest are sent "
                 "in further transactions over the same connection, or a new one when the "
                 "remote host asks for it.",
    "queue.html": "Frobd queues mail it cannot deliver at once in the deferred queue.",
    "tls.html": "Frobd speaks TLS 1.2 and 1.3 when the peer offers it.",
}


def _silent(question: str) -> str | None:
    """Why the Frobd pages do not answer ``question`` (None: they may)."""
    return silent_reason(SMTP_PAGES, question)


def test_a_story_word_the_sources_lack_does_not_make_it_refuse() -> None:
    asked = "How many recipients does the smtp transport list in one transaction by default?"
    assert _silent("Our weekly newsletter goes out to lots of addresses at one provider. "
                   + asked) is None
    # the same words in the sentence that asks are what the sources do not cover
    assert _silent("How many recipients of our weekly newsletter does the smtp transport "
                   "list in one transaction by default?") is not None



def test_one_word_the_sources_lack_in_a_long_question_does_not_make_it_refuse() -> None:
    assert _silent("Once the rest go to the deferred queue and the remote host asks for a "
                   "new connection, how many recipients does the transport list in one "
                   "transaction, shuffled?") is None
    # in a short question the one word is a large part of what is asked
    assert _silent("How many recipients does the transport list in one transaction, "
                   "shuffled?") is not None



def test_a_word_of_precision_is_not_what_the_sources_must_hold() -> None:
    for hedge in ("Roughly", "Approximately"):
        assert _silent(f"{hedge} how many recipients does the smtp transport list in one "
                       "transaction by default?") is None


def test_the_cell_whose_label_names_more_of_the_focus_gives_the_value() -> None:
    row = "frobd version: 7.1+; min. Python version: 3.7+"
    question = ("Our build servers still have an old interpreter. What is the minimum "
                "Python version the current frobd release needs?")
    assert short_answer(focus_of(question), row) == "3.7"
    assert short_answer(focus_of("Which frobd version is it for?"), row) == "7.1"
    # a period in the question ("Q3") names no cell: every cell of the row is the period's
    row = "Driver: Q3 2026 gross margin; Q3 impact ($K): +586 net; Margin impact: 66.2%"
    assert short_answer(focus_of("What was Frobco's gross margin in Q3 2026?"), row) == "66.2%"


# the middle of `frobd --help` as a chunk holds it: cut from its code block (no fence)
HELP = """  -h, --help            Show help message and configuration info
  -p name               Early-load given plugin module name or entry point
                        (multi-allowed). To avoid loading of plugins, use
                        the no: prefix.
  --trace-config        Trace considerations of conftest files
  --debug=[DEBUG_FILE_NAME]
                        Store internal tracing debug information in this log
                        file. This file is opened with 'w' and truncated as
                        a result, care advised. Default: frobdebug.log.
  -o OVERRIDE_INI, --override-ini=OVERRIDE_INI
                        Override ini option with "option=value" style.
"""


def test_a_help_listing_is_read_one_option_a_unit() -> None:
    for text in (HELP, f"Options:\n\n```\n{HELP}```\n"):
        units = {u.text.split(":")[0]: u for u in units_of(cite(text, "usage.md"))}
        debug = units["--debug=[DEBUG_FILE_NAME]"]
        assert debug.kind is UnitKind.DEFINITION
        assert debug.text.endswith("care advised. Default: frobdebug.log.")
        assert units["-p name"].text.endswith("To avoid loading of plugins, use the no: prefix.")
        assert "-o OVERRIDE_INI, --override-ini=OVERRIDE_INI" in units
        question = "I ran frobd with --debug and no file name; which file do I send them?"
        assert short_answer(focus_of(question), debug.text) == "frobdebug.log"
    # in source code every line stays a unit of its own (a usage text in a docstring)
    lines = [u.text for u in units_of(cite(f'USAGE = """\n{HELP}"""\n', "cli.py"))]
    assert "-p name Early-load given plugin module name or entry point" in lines
    assert "--trace-config Trace considerations of conftest files" in lines
    assert "a result, care advised. Default: frobdebug.log." in lines


def test_a_file_name_ending_a_sentence_is_a_path() -> None:
    focus = focus_of("I ran frobd with --trace and no file name; which file do I send them?")
    assert short_answer(focus, "Tracing information goes to frobtrace.log.") == "frobtrace.log"
    assert short_answer(focus, "Traces are kept, e.g. for a week.") is None


def test_a_question_opening_with_a_when_clause_asks_what_follows_it() -> None:
    # the condition goes on past a comma ("and a new folder to put it in,")
    asked = focus_of("When frobd creates a new log file, and a new folder to put it in, "
                     "which permission modes does it give them by default?").answer_type
    assert asked is not AnswerType.DATE
    assert focus_of("If I run frobd twice, and the first run fails, how many retries "
                    "happen?").answer_type is AnswerType.NUMBER
    assert focus_of("When was frobd 2.0 released?").answer_type is AnswerType.DATE
