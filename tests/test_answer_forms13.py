"""Forms of issue 22, session 13:

* a short answer is copied as the source spells it: a unit written onto its number
  stays there ("over 2GB", "default 70em", "10pt"), where it used to be cut off
  ("70") or spaced out ("2 GB", which is not in the source);
* a sentence about the other bound than the one asked for ("minimal_backoff_time ...:
  The minimal time between attempts" for "the longest it will wait between two
  retries") ranks its values lower, and "at least 300s" keeps its "at" (Postfix);
* "How many errors will it put up with?" counts errors: a time ("18000s") is no such
  count (Postfix);
* an HTML paragraph wrapped over several source lines is one text: a sentence no longer
  ends where its source line does ("... conforms to Semantic" / "Versioning 2.0.0";
  Sphinx; the rsyslog set's two wrong refusals went with it);
* a question that opens asking for a number ("What number decides where it lands in
  the loading order ...?") asks for a number, whatever "where ... scripts" after it
  would say (it was read as asking for a path, and the number was never a candidate).

After the tenth held-out set's one run (Wireshark, now a development set):

* "which switch ..., and which one ...?": the later clause's "one" is the first clause's
  thing, so it is asked as a switch ("/NCRC", not "NCRC");
* a sentence saying a thing is switched off ("disable checksum validation by default")
  answers "No" to whether it is done ("Does it verify checksums?");
* "What is the newest ... release branch ...?" asks for a version.

From the Sphinx (heldout8), Postfix (heldout4) and rsyslog (heldout7) development sets
and the Wireshark one (heldout10).
Constructed text only (the program and its figures are invented). Each test fails on
main before this session (13236ca)."""

from __future__ import annotations

from kbagent.agent.answer.focus import AnswerType, focus_of
from kbagent.agent.answer.short import short_answer, spans
from kbagent.agent.answer.units import units_of
from kbagent.kb.html_text import html_to_lines
from tests.agent_runs import cite


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


WRAPPED = """<html><body><div class="body" role="main">
<h1>Release process</h1>
<p>The Frob project uses the following branches for developing that conforms to Semantic
Versioning 2.0.0 (refs: <a href="https://semver.org/">https://semver.org/</a> ).</p>
<p>A second paragraph,<br>after a forced break.</p>
<table><tr><td><p>Default</p></td><td><p>200</p></td></tr></table>
<ul><li><p>An item wrapped
over two lines.</p></li></ul>
</div></body></html>
"""


def test_an_html_paragraph_wrapped_in_the_source_is_one_line() -> None:
    lines = html_to_lines(WRAPPED)[0]
    texts = [x.text for x in lines]
    semver = next(x for x in lines if "Semantic" in x.text)
    assert semver.text.endswith("Semantic Versioning 2.0.0 (refs: https://semver.org/ ).")
    assert (semver.number, semver.end) == (3, 4)  # the citation keeps both source lines
    assert "A second paragraph," in texts and "after a forced break." in texts  # <br>
    assert "Default | 200" in texts  # a cell's paragraph stays in its row
    assert "- An item wrapped over two lines." in texts
    # the chunk a search returns holds the extracted lines
    units = [u.text for u in units_of(cite("\n".join(texts), "release.html"))]
    assert any(u.endswith("conforms to Semantic Versioning 2.0.0 (refs: "
                          "https://semver.org/ ).") for u in units), units


def test_how_many_of_the_things_counts_the_things_and_no_time() -> None:
    q = focus_of("How many of the most recent health checks does Frobd remember for each "
                 "backend?")
    assert q.unit == "checks"
    example = ("In this example Frobd will check the health of each backend every 5 seconds, "
               "timing out after 1 second.")
    register = ("Backend health probes use a 64 stage shift register to remember the most "
                "recent health probes.")
    # the example's unit matches the question better; its figures are times, no count
    assert spans(q, register)[0].score > spans(q, example)[0].score + 0.8
    assert short_answer(q, register) == "64"


def test_a_sentence_on_the_no_options_case_states_the_default() -> None:
    q = focus_of("I run frob_tidydb from cron without any options. How old must an entry in "
                 "a hints database be before it gets cleaned out?")
    no_options = ("If run with no options, it removes all records that are more than 30 days "
                  "old.")
    elsewhere = "The interval for this is, by default, 10 days."
    assert short_answer(q, no_options) == "30 days"
    assert spans(q, no_options)[0].score > spans(q, elsewhere)[0].score - 0.3
    # a sentence about some option's case states no default
    assert spans(q, "If run with -t 7d, it removes records older than 7 days.")[0].score < 1


def test_the_word_version_is_no_version() -> None:
    q = focus_of("I want the buffering setup on some old boxes. What's the oldest Frobd "
                 "release those sending machines can run for it?")
    assert q.answer_type is AnswerType.VERSION
    assert short_answer(q, "So the client system must run Frobd (at least version 3.12.0), "
                           "while on the server another daemon may run.") == "3.12.0"


def test_an_identifier_defined_under_a_heading_that_names_the_class_is_a_member() -> None:
    q = focus_of("Which environment variable sets the Pygments style Frob uses to highlight "
                 "code in its output?")
    entry = "FROB_THEME: Sets a pygment style to use for the code output."
    under = spans(q, entry, context="reference.html Reference > Environment Variables")
    assert [x.text for x in under][:1] == ["FROB_THEME"]
    # under another heading the label is no answer; nor is a label that is no identifier
    assert spans(q, entry, context="reference.html Reference > Syntax highlighting") == []
    assert spans(q, "Note: Sets a pygment style to use for the code output.",
                 context="reference.html Environment Variables") == []
    # an identifier that opens a sentence is a name, not a capitalised first word
    other = focus_of("Which environment variable takes precedence over FORCE_COLOR?")
    assert short_answer(other, "PY_COLORS takes precedence over FORCE_COLOR.") == "PY_COLORS"


def test_a_thing_never_set_or_left_unless_configured_asks_for_its_default() -> None:
    never = focus_of("I build the CHM help output and never gave it a name in frob.conf. What "
                     "will the generated help project files be called?")
    assert "default" in never.terms
    entry = "frobhelp_basename: Output file base name for HTML help builder. Default is 'frobdoc'."
    assert short_answer(never, entry) == "frobdoc"
    unless = focus_of("When I build the plain-text output on a Windows machine, which kind of "
                      "line breaks do the generated files get unless I configure something?")
    assert "default" in unless.terms
    assert short_answer(unless, "'native': use the line ending style of the platform the "
                                "documentation is built on Default: 'unix'.") == "unix"
    # a value in single quotes is a name; an apostrophe is none
    name = focus_of("Which style name does the frob theme use?")
    assert short_answer(name, "The frob theme uses the style 'sphinxdoc'.") == "sphinxdoc"
    assert [x.text for x in spans(name, "The users' files don't change when it's rebuilt.")] == []


def test_which_one_in_a_later_clause_is_the_first_clauses_thing() -> None:
    from kbagent.agent.run.decompose import parts_of

    parts = parts_of("For a scripted rollout of the Frob installer: which switch makes it run "
                     "without any dialogs, and which one skips the installer's CRC check?")
    assert [p.question for p in parts][1] == "which switch skips the installer's CRC check?"
    # asked as a switch, the answer keeps its slash
    assert short_answer(focus_of(parts[1].question),
                        "/NCRC: Don't run the CRC check. We recommend against using this "
                        "flag.") == "/NCRC"
    engine = parts_of("Which LaTeX engine does Frob use by default, and which one does it "
                      "pick for Japanese documents?")
    assert engine[1].question == "which LaTeX engine does it pick for Japanese documents?"
    # no thing named in the first clause: "one" stays
    port = parts_of("What is the default port, and which one is used for TLS?")
    assert port[1].question == "which one is used for TLS?"


def test_switched_off_answers_no_to_whether_it_is_done() -> None:
    from kbagent.agent.answer.short import yes_no

    sentence = ("Recent releases of Frob disable checksum validation by default due to the "
                "prevalence of offloading in modern hardware.")
    assert yes_no(focus_of("Does a recent Frob verify checksums out of the box?"),
                  sentence) == "No"
    assert yes_no(focus_of("Is checksum validation disabled by default in Frob?"),
                  sentence) == "Yes"
    assert yes_no(focus_of("Does Frob validate checksums?"),
                  "Checksum validation is not disabled.") == "Yes"


def test_what_is_the_newest_release_asks_for_a_version() -> None:
    q = focus_of("We still have a few Frob 7 PCs in the lab. What is the newest Frob release "
                 "branch that officially supports them?")
    assert q.answer_type is AnswerType.VERSION
    assert focus_of("What is the release date of 2.0?").answer_type is AnswerType.DATE
