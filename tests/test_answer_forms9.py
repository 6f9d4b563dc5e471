"""Forms of questions (issue 22, session 9): a sentence before "and" that states the case
rather than asking, a question split in parts none of which is answered alone, a bound
asked for next to a setting's value, the release of the documented program that the
user names ("in Frobd 3.7") where the pages never repeat it, and a Sphinx entry (a <dt>
with its link mark, a <dd> ending with a version note).

Constructed text only (the program, its options and its figures are invented; none of
it comes from a held-out folder). Each test fails on main before this session's changes
(71fcd18; checked by running this file against that tree).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kbagent.agent.answer.evidence import SentenceVectors, best_evidence
from kbagent.agent.answer.focus import AnswerType, focus_of
from kbagent.agent.answer.short import short_answer
from kbagent.agent.answer.units import units_of
from kbagent.agent.run.clauses import clauses
from kbagent.kb.embedder import load_embedder
from tests.agent_runs import ask_one_file, cite, silent_reason


def test_a_statement_before_and_is_the_case_not_a_question_of_its_own() -> None:
    case = ("A cached page came without an expiry date and was last changed 5 days ago. "
            "With the default settings, for how many seconds is it served as fresh?")
    assert clauses(case) == [case]
    # a question, or a bid, before "and" still opens a second question
    assert len(clauses("What caused the outage and how long did it last?")) == 2
    assert len(clauses("Compare Q2 and Q3 gross margin and explain the change")) == 2


ZLIB = """# Forwarding with compression

frobd can compress what it forwards with zlib.

Please note that frobd checks the compression gain first. Messages of 60 bytes or
less are never compressed, because the zlib header would make them longer.

Compression costs CPU time on both ends of the connection.
"""


def test_a_question_in_parts_is_answered_from_a_sentence_close_in_meaning(
        tmp_path: Path) -> None:
    # "Do small messages get compressed too, or ...?" shares few words with "Messages of
    # 60 bytes or less are never compressed": closeness of meaning covers the part (and a
    # question none of whose parts is covered is judged whole, never refused for its split)
    final = ask_one_file(
        tmp_path, "forwarding.md", ZLIB,
        "Do small messages get compressed too, or is there a size up to which they go out "
        "as they are? How big is that?")
    result = final.result
    assert not result.abstained
    assert "60 bytes or less are never compressed" in result.answer


def test_a_bound_asked_for_is_the_bound_the_sentence_states() -> None:
    sentence = ("frob_cache_timeout = 3600s: As of frobd 2.11 this setting cannot exceed "
                "100 days. If set to 0, caching is off.")
    assert short_answer(focus_of("What is the longest lifetime I can give the frob "
                                 "cache?"), sentence) == "100 days"
    # not asked for a bound: the setting's value
    assert short_answer(focus_of("How long is the frob cache timeout set to?"),
                        sentence) == "3600s"


FROBD_PAGES = {
    "cache.html": "Frobd keeps a session cache. frob_cache_timeout (default: 3600s): How "
                  "long Frobd keeps a session in its cache, at most 100 days.",
    "queue.html": "Frobd queues mail it cannot deliver at once in the deferred queue.",
    "tls.html": "Frobd speaks TLS 1.2 and 1.3 when the peer offers it.",
}


def _silent(question: str) -> str | None:
    """Why the three Frobd pages do not answer ``question`` (None: they may)."""
    return silent_reason(FROBD_PAGES, question)


def test_the_release_of_the_documented_program_need_not_be_in_the_pages() -> None:
    assert _silent("How long does Frobd 3.7 keep a session in its cache by default?") is None
    # a release number of something else still has to be found ("ticket 3.7")
    assert _silent("How long does the Quux 3.7 appliance keep a session in its cache by "
                   "default?") is not None


def _confval(name: str, description: str, note: str) -> str:
    """One configuration value as Sphinx writes it: a <dt> with its link mark, a <dd>
    with the description and a version note."""
    return (f'<dl class="std confval">\n<dt class="sig sig-object std" id="confval-{name}">\n'
            f'<span class="sig-name descname"><span class="pre">{name}</span></span>'
            f'<a class="headerlink" href="#confval-{name}">¶</a></dt>\n'
            f'<dd><p>{description}</p>\n<div class="versionadded">\n<p><span class='
            f'"versionmodified added">{note}</span></p>\n</div>\n</dd></dl>\n')


FROBDOC = ("<html><body><h1>Configuration</h1>\n<h2>Options for page output</h2>\n"
           + _confval("page_skin", "The skin the page output should use. See the section "
                      "about skins. The default is <code>'heron'</code>.", "New in version 0.6.")
           + _confval("page_footer_fmt", "If this is not None, a footer is inserted at every "
                      "page bottom, using the given format.", "New in version 1.2.")
           + "</body></html>\n")


def test_a_sphinx_entry_is_read_with_its_term_and_its_version_note(tmp_path: Path) -> None:
    from kbagent.kb.html_text import html_to_lines

    text = "\n".join(x.text for x in html_to_lines(FROBDOC)[0])
    units = units_of(cite(text, "config.html"))
    # the link mark is no part of the term, and the note knows whose it is
    assert not any("\u00b6" in u.text for u in units)
    notes = [u for u in units if u.text.startswith("New in version")]
    assert [("page_skin" in u.context, "page_footer_fmt" in u.context) for u in notes] == [
        (True, False), (False, True)]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    final = ask_one_file(tmp_path / "a", "config.html", FROBDOC,
                         "Since which version can I set page_skin?")
    assert final.result.short_answer.startswith("0.6 [")
    # "if I don't pick one" asks for the default: the value, not the entry's name
    final = ask_one_file(tmp_path / "b", "config.html", FROBDOC,
                         "Which skin does the page output use if I don't pick one?")
    assert final.result.short_answer.startswith("heron [")


def test_what_is_a_named_setting_by_default_asks_for_its_default() -> None:
    # "What is X by default?" / "What is X normally?": X's default value, read where the
    # page states it ("Default: FrobBodyLimit 1073741824")
    asked = focus_of("What is FrobBodyLimit by default?")
    assert short_answer(asked, "Default: FrobBodyLimit 1073741824") == "1073741824"
    normally = focus_of("What is frob_timeout normally?")
    assert short_answer(normally, "frob_timeout (default: 300s): How long frobd waits for "
                                  "a reply.") == "300s"
    # an explanation asked about a named thing is still no fact
    assert not focus_of("What is FrobBodyLimit used for?").wants_fact


@pytest.mark.parametrize(("question", "kind"), [
    # the sentence that asks decides, not the story before it or the remark after it
    ("Something odd is going on with the fields my rules match. Which of frobd's built-in "
     "layouts should I write to a file to see them all?", AnswerType.NAME),
    ("Out of the box, what is the biggest message frobd will take in? I mean the built-in "
     "limit when I have not configured anything.", AnswerType.NUMBER),
    ("I run frobd on old boxes. What's the oldest frobd release that has the disk buffer?",
     AnswerType.VERSION),
    ("To build frobd from a checkout, which autoconf and which automake versions do I need "
     "at least?", AnswerType.VERSION),
    ("Our relay was down for a day. While frobd keeps failing to reach it, what is the "
     "longest pause it makes between two attempts?", AnswerType.DURATION),
])
def test_the_asking_sentence_and_its_superlative_tell_the_kind(question: str,
                                                               kind: AnswerType) -> None:
    assert focus_of(question).answer_type is kind


def test_an_address_is_no_figure_and_a_figure_the_question_states_is_no_answer() -> None:
    port = focus_of("On which TCP port does frobd expect the scanner if I don't set "
                    "scan_address?")
    # "127.0" is the head of an address, not a port
    assert short_answer(port, "The default is scan_address = 127.0.0.1 783, the scanner's "
                              "own port.") == "783"
    # "around 90 days" is the question's "90-day": the answer is the other duration
    renew = focus_of("With a usual 90-day certificate, how long before it runs out does "
                     "frobd fetch a fresh one by default?")
    assert short_answer(renew, "Certificates are valid for around 90 days and frobd renews "
                               "them a third of their lifetime before they expire (so for "
                               "90 days validity, 30 days before expiry).") == "30 days"


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


@pytest.mark.parametrize("question", [
    "By default, is compression on and what level does it use?",
    "Please tell me the default port and how do I change it?",
    "I need the default timeout and how can I raise it?",
    "Define MaxSessions and what is its default?",
])
def test_a_question_word_after_and_still_opens_a_second_question(question: str) -> None:
    assert len(clauses(question)) == 2


@pytest.mark.parametrize(("question", "kind"), [
    ("What is the largest city in France?", AnswerType.OTHER),  # no measure of a thing
    ("What is the default port? Is it 25?", AnswerType.DEFAULT),  # a check after the ask
    ("How many retries does frobd make? Does it back off?", AnswerType.NUMBER),
])
def test_the_asking_sentence_is_the_one_with_a_question_word(question: str,
                                                             kind: AnswerType) -> None:
    assert focus_of(question).answer_type is kind


def test_a_setting_named_maximum_is_asked_for_its_value_not_its_bound() -> None:
    sentence = "The maximum frob size defaults to 50 MB and cannot exceed 2 GB."
    assert short_answer(focus_of("What is the maximum frob size?"), sentence) == "50 MB"
    assert short_answer(focus_of("What is the largest frob size I can set?"),
                        sentence) == "2 GB"


def test_a_question_about_the_release_itself_needs_it_in_the_pages() -> None:
    assert _silent("What changed in Frobd 3.7 about the session cache?") is not None


def test_a_version_note_after_a_signature_is_not_the_earlier_entrys() -> None:
    from kbagent.kb.html_text import html_to_lines

    html = FROBDOC.replace("</body>", '<dl class="py function"><dt class="sig sig-object py" '
                           'id="frob.open"><span class="sig-name descname">frob.open</span>'
                           '(<em>path</em>, <em>mode</em>)</dt>\n<dd><div class="deprecated">'
                           '<p><span class="versionmodified deprecated">Deprecated since '
                           'version 3.4.</span></p></div></dd></dl>\n</body>')
    text = "\n".join(x.text for x in html_to_lines(html)[0])
    notes = [u for u in units_of(cite(text, "config.html"))
             if u.text.startswith("Deprecated since")]
    assert notes and not any("page_footer_fmt" in u.context for u in notes)


def test_an_issue_number_of_a_change_log_is_no_figure() -> None:
    asked = focus_of("How wide is the frob sidebar by default?")
    assert short_answer(asked, "#7721: frob theme: the default sidebar width is "
                               "230.") == "230"


def test_a_pointer_or_an_admonition_label_is_no_name() -> None:
    who = focus_of("Who created the heron theme that ships with frobd?")
    assert short_answer(who, "See Builders for a list of all builders shipped with "
                             "frobd.") is None
    which = focus_of("Which Docker image does the pages job run in?")
    assert short_answer(which, "Hint: When using Docker images, use docker run.") is None


def test_what_a_question_names_ends_with_its_sentence() -> None:
    from kbagent.agent.answer.named import named_things

    assert named_things("I load a script through html_js_files. What number decides "
                        "its order?") == ("html_js_files",)
    assert named_things("Listings get cut off. Roughly how many characters fit?") == ()
    assert "A4" in named_things("The PDF does not come out on A4. What page format is it?")


def test_a_name_in_the_story_before_the_question_is_no_reason_to_refuse() -> None:
    assert _silent("We're in Germany and our sessions vanish too soon. How long does "
                   "Frobd keep a session in its cache by default?") is None


def test_which_of_the_two_chooses_between_the_things_named_together() -> None:
    asked = focus_of("Our CI sets both FROB_MONO and FROB_COLOR. Which of the two wins "
                     "for frobd's terminal output?")
    assert asked.answer_type is AnswerType.CHOICE
    assert asked.options == ("FROB_MONO", "FROB_COLOR")
    assert short_answer(asked, "FROB_MONO: When set, frobd uses no color. FROB_MONO takes "
                               "precedence over FROB_COLOR. See the frob site.") == "FROB_MONO"
