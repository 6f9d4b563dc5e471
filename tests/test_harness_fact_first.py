"""The harness's fact-first stage: the short answer the final turn writes before anything
else, cited, and the span of a source sentence it is (``harness/short.py``,
``harness/span_rules.py``, ``harness/name_spans.py``, ``harness/defaults.py``,
``harness/final_turn.py``): which spans are figures of the kind asked for (not a number
inside an identifier, a date, a standard's or a manual section's number), names of the
class asked for (not the name every page of the folder holds), the default a page states
(not an example's value or another parameter's, and the value under a condition on a
release), and a "Yes" or "No" read from the clause that answers.

The harness policy's frozen rules, on constructed text: see ``tests/harness_cases.py``.
"""

from __future__ import annotations

from pathlib import Path

from kbagent.agent.answer.focus import TYPE_PATTERNS, AnswerType, focus_of
from kbagent.agent.answer.units import units_of
from kbagent.agent.events import Final
from kbagent.agent.harness.short import short_answer, spans, yes_no
from kbagent.agent.harness.span_rules import common_names, qualified, range_release
from kbagent.agent.run.loop import Agent, AgentConfig
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.settings import Settings
from tests.agent_runs import ask_one_file
from tests.harness_cases import FRAME_LIMITS as LIMITS
from tests.harness_cases import FROBD, sample_rag
from tests.harness_cases import raw_citation as _cite
from tests.scripted_llm import ScriptedLLM


# figures: numbers with their units, codes, durations, sizes
def test_a_time_out_in_seconds_is_a_duration_and_its_default_the_answer():
    f = focus_of("What is probetest's default time-out for a test, in seconds?")
    assert f.answer_type is AnswerType.DURATION
    assert short_answer(f, "Time tests out after this long (default: 60s)") == "60s"


def test_a_status_code_below_400_is_a_status_code():
    f = focus_of("Which status code does the console send to say I have to log in first?")
    assert f.answer_type is AnswerType.ERROR
    assert short_answer(f, "The console status of 107 indicates that authentication is "
                           "necessary.") == "107"


def test_an_ordinary_number_is_no_status_code():
    f = focus_of("What error code does the server return when the rate limit is exceeded?")
    assert spans(f, "When the rate limit is exceeded the client must wait 300 seconds.") == []


def test_a_value_excluded_by_different_than_is_not_the_answer():
    f = focus_of("Which console status code tells me the output was cut short?")
    sentence = ("A status different than 200 or 201 makes the tool exit with status 1 (if "
                "you get 201, the output was truncated).")
    assert spans(f, sentence)[0].text == "201"


def test_a_factor_of_a_product_and_a_ports_name_are_no_figures():
    f = focus_of("How long can a sender stay silent before frobd forgets it?")
    assert short_answer(f, "Default: 12 hours (12*60*60 seconds): frobd forgets a sender "
                           "after that.") == "12 hours"
    f = focus_of("How many clients can connect to the frob listener at once?")
    assert short_answer(f, "This sets up a listener on port 7514 that accepts up to 500 "
                           "connections.") == "up to 500 connections"
    # a port asked for is a port
    f = focus_of("Which port does the frob listener use?")
    assert "7514" in (short_answer(f, "The listener binds port 7514.") or "")


def test_spaced_products_prose_phrases_and_space_between_paragraphs():
    f = focus_of("How long can a sender stay silent before frobd forgets it?")
    assert short_answer(f, "Default: 12 hours (12 * 60 * 60 seconds): frobd forgets a "
                           "sender after that.") == "12 hours"
    f = focus_of("Which package provides frobtool?")
    assert short_answer(f, "frobtool comes with the so-called plug-and-play setup.") != \
        "plug-and-play"
    assert focus_of("How much space does the formatter put between paragraphs?").unit != "bytes"
    assert focus_of("How much disk space does the frob cache take?").unit == "bytes"


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


def test_an_issue_number_of_a_change_log_is_no_figure() -> None:
    asked = focus_of("How wide is the frob sidebar by default?")
    assert short_answer(asked, "#7721: frob theme: the default sidebar width is "
                               "230.") == "230"


def test_a_number_inside_a_build_string_is_no_figure() -> None:
    f = focus_of("What is the maximum packet length frobdump writes if I don't pass -m?")
    assert spans(f, "Frobdump (Frob) 4.0.17 (v4.0.17rc0-0-ga60cfdea0653)") == []
    # a range of two numbers keeps both
    n = focus_of("How many seconds does frobd wait between retries?")
    assert short_answer(n, "It waits between 10-20 seconds.") == "20 seconds"


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


def test_the_cell_whose_label_names_more_of_the_focus_gives_the_value() -> None:
    row = "frobd version: 7.1+; min. Python version: 3.7+"
    question = ("Our build servers still have an old interpreter. What is the minimum "
                "Python version the current frobd release needs?")
    assert short_answer(focus_of(question), row) == "3.7"
    assert short_answer(focus_of("Which frobd version is it for?"), row) == "7.1"
    # a period in the question ("Q3") names no cell: every cell of the row is the period's
    row = "Driver: Q3 2026 gross margin; Q3 impact ($K): +586 net; Margin impact: 66.2%"
    assert short_answer(focus_of("What was Frobco's gross margin in Q3 2026?"), row) == "66.2%"


def test_a_number_inside_an_identifier_is_no_answer():
    f = focus_of("How long can a password be with crypt()?")
    assert [s.text for s in spans(f, "-2: Use SHA-256 crypt() based hashes.")] == []
    assert spans(f, "Only the first 8 characters of the password are used.")[0].text == (
        "8 characters")


def test_a_standards_number_and_a_version_are_no_figures():
    f = focus_of("How low can the session cache timeout be set when testing?")
    sentence = "Applies also to RFC 5077 session resumption in release 2.4.10 and later."
    assert spans(f, sentence) == []


def test_a_dates_numbers_are_no_figures():
    f = focus_of("How many levels deep may the nesting go?")
    assert spans(f, "Built in by default as of version 3.38.0 (2022-02-22).") == []


def test_a_manual_section_number_is_no_figure():
    focus = focus_of("When the proxy logs an EARLYTALK event, how much of the text does it keep?")
    assert spans(focus, "When a client talks first, relayd(8) logs this as:") == []
    assert not TYPE_PATTERNS[AnswerType.NUMBER].search("relayd(8) logs this as:")
    assert TYPE_PATTERNS[AnswerType.NUMBER].search("frame_size_limit (4096)")


def test_a_default_keeps_its_thousands_separator_and_an_option_is_no_figure():
    f = focus_of("How many hash rounds does it run unless I tell it otherwise?")
    sentence = ("-r: Only allowed in combination with -2 or -5. It sets the number of hash "
                "rounds (higher is slower; the default is 5,000).")
    assert short_answer(f, sentence) == "5,000"


def test_a_signal_question_finds_the_signal_name():
    f = focus_of("Which signal makes the server reload its configuration gracefully?")
    assert f.answer_type is AnswerType.ERROR
    assert f.type_match("Signal: USR1 apachectl -k graceful")
    assert short_answer(f, "Signal: USR1 apachectl -k graceful") == "USR1"
    assert not f.type_match("The parent process reloads the configuration.")


# counts
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


def test_a_version_is_no_count() -> None:
    f = focus_of("How many people attended the first Frobfest back in 2008?")
    assert spans(f, "In 2008, after ten years of development, Frob finally arrived at "
                    "version 1.0.") == []
    # unless a version is asked for
    v = focus_of("Which version did Frob arrive at in 2008?")
    assert short_answer(v, "In 2008 Frob finally arrived at version 1.0.") == "1.0"


# bounds
def test_a_bound_asked_for_is_the_bound_the_sentence_states() -> None:
    sentence = ("frob_cache_timeout = 3600s: As of frobd 2.11 this setting cannot exceed "
                "100 days. If set to 0, caching is off.")
    assert short_answer(focus_of("What is the longest lifetime I can give the frob "
                                 "cache?"), sentence) == "100 days"
    # not asked for a bound: the setting's value
    assert short_answer(focus_of("How long is the frob cache timeout set to?"),
                        sentence) == "3600s"


def test_a_setting_named_maximum_is_asked_for_its_value_not_its_bound() -> None:
    sentence = "The maximum frob size defaults to 50 MB and cannot exceed 2 GB."
    assert short_answer(focus_of("What is the maximum frob size?"), sentence) == "50 MB"
    assert short_answer(focus_of("What is the largest frob size I can set?"),
                        sentence) == "2 GB"


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


# versions
def test_the_word_version_is_no_version() -> None:
    q = focus_of("I want the buffering setup on some old boxes. What's the oldest Frobd "
                 "release those sending machines can run for it?")
    assert q.answer_type is AnswerType.VERSION
    assert short_answer(q, "So the client system must run Frobd (at least version 3.12.0), "
                           "while on the server another daemon may run.") == "3.12.0"


def test_a_release_opening_a_range_does_not_answer_for_one_release(tmp_path: Path) -> None:
    page = ("# Scripting\n\nSquirrel is a light-weight language designed for extending "
            "applications. Frobd 2.6 and earlier enabled or disabled scripts with the "
            "variable disable_squirrel. Frobd contains an embedded Squirrel 3.1 "
            "interpreter which can be used to write decoders and taps.\n")
    final = ask_one_file(tmp_path, "scripting.md", page,
                         "Before I start scripting my own decoder: which version of the "
                         "scripting language does Frobd ship built in?")
    assert final.result.answer.startswith("3.1 [1]"), final.result.answer
    # a bound or a requirement asked for: the range is the answer, not ranked down
    said = "Frobd 2.6 and later read v2 files."
    end = said.index("2.6") + 3
    assert range_release(focus_of("Which Frobd release reads v2 files?"), said, end) > 0
    for asked in ("What is the oldest Frobd release that reads v2 files?",
                  "Which Frobd release is required to read v2 files?",
                  "Which Frobd release before 3.0 reads v2 files?"):
        assert range_release(focus_of(asked), said, end) == 0, asked


def test_a_pre_release_letter_belongs_to_the_release() -> None:
    f = focus_of("Starting with which Frobd release can mod_frob handle implicit FTPS?")
    assert short_answer(f, "All that said, in Frobd 1.3.3rc2, the mod_frob module was "
                           "enhanced to support implicit FTPS.") == "1.3.3rc2"
    assert short_answer(f, "Implicit FTPS came with frobd-1.3.2a.") == "1.3.2a"


def test_a_version_question_is_answered_by_a_version_not_a_default_value():
    focus = focus_of("Since which Relayd release is TLS 1.0 the lowest protocol version by "
                     "default?")
    sentence = ('Starting with Relayd 3.6, the default value is ">=TLSv1", which sets TLS '
                "1.0 as the lowest supported protocol version.")
    assert spans(focus, sentence)[0].text == "3.6"


# names, terms, options and paths
def test_an_option_is_given_with_its_value():
    f = focus_of("The proxy crashes on a 64-bit container. Which ulimit option should I put "
                 "in the init script?")
    assert f.answer_type is AnswerType.PATH and f.class_noun == "option"
    assert short_answer(f, "Reduce the maximum stack size by adding ulimit -s 256 before "
                           "starting the proxy.") == "-s 256"
    assert short_answer(f, "Pass -p name=val to set a parameter.") == "-p name=val"


def test_the_sentence_after_the_topic_sentence_gives_the_fact(tmp_path: Path):
    """Through the real agent over a real KB: the sentence that names the question's
    setting says what to do, the next one says it with the option and its value; the
    answer leads with the option."""
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor

    src = tmp_path / "docs"
    src.mkdir()
    (src / "platforms.html").write_text(
        "<html><body><h2>Containers</h2>\n"
        "<p>If you are running the proxy in a 64-bit Jailbox container, you must reduce the "
        "maximum stack size before starting the proxy.</p>\n"
        "<p>Reduce the maximum stack size by adding ulimit -s 256 before starting.</p>\n"
        "<h2>Logging</h2><p>The proxy writes its log to the shared memory segment.</p>"
        "</body></html>\n", encoding="utf-8")
    settings = Settings.load(home=tmp_path / "home")
    Ingestor(settings, "docs", embedder=load_embedder()).run(src)
    agent = Agent(ScriptedLLM(["It is in the sources."] * 10),
                  [KnowledgeBase(settings, "docs")],
                  AgentConfig(mode="auto", tools="full", short_answer="harness"))
    events = agent.run("The proxy runs in a 64-bit Jailbox container and falls over under "
                       "load. Which ulimit option should I put in the init script?")
    final = next(e for e in events if isinstance(e, Final))
    assert final.result.short_answer.startswith("-s 256 [")
    assert final.result.answer.startswith("-s 256 [")


def test_a_file_name_pattern_is_the_default_asked_for() -> None:
    question = "Which file name pattern does frob use by default to pick up its recipe files?"
    entry = "--recipe-glob=pat Recipe file matching pattern, default: recipe_*.txt"
    assert short_answer(focus_of(question), entry) == "recipe_*.txt"
    # a product is no pattern
    assert short_answer(focus_of("Which file does frob read first?"),
                        "It reads 2*3.5 lines of frob.conf first.") == "frob.conf"


def test_a_file_name_ending_a_sentence_is_a_path() -> None:
    focus = focus_of("I ran frobd with --trace and no file name; which file do I send them?")
    assert short_answer(focus, "Tracing information goes to frobtrace.log.") == "frobtrace.log"
    assert short_answer(focus, "Traces are kept, e.g. for a week.") is None


def test_a_relative_path_is_a_path():
    f = focus_of("On Unix, where does the error log go if the ErrorLog directive is not set?")
    assert f.answer_type is AnswerType.PATH and "default" in f.terms
    row = "Default: ErrorLog logs/error_log (Unix) ErrorLog logs/error.log (Windows and OS/2)"
    assert spans(f, row)[0].text == "logs/error_log"
    assert not TYPE_PATTERNS[AnswerType.PATH].search("The rate is given in KiB/s and/or MiB.")


def test_a_directory_question_is_answered_by_a_path_not_an_option():
    focus = focus_of("In which directory does Relayd keep its queue by default?")
    found = [s.text for s in spans(focus, "By default, relayctl works with the -s and -p "
                                          "options on every queue directory below "
                                          "/var/spool/relayd.")]
    assert found == ["/var/spool/relayd"]


def test_a_file_question_that_mentions_options_is_answered_by_the_file():
    """Found on the fifth held-out set after its run: the class asked for decides, not a
    word of the question ("the startup options" are what the file holds)."""
    focus = focus_of("On Red Hat or CentOS, in which file are the startup options of the "
                     "packaged daemon?")
    assert [s.text for s in spans(focus, "Red Hat, Centos: /etc/sysconfig/relayd")] == [
        "/etc/sysconfig/relayd"]


# members of the class asked for
def test_a_definition_whose_text_names_the_class_asked_for_answers_with_its_term():
    f = focus_of("Which hash algorithm does probed use by default?")
    entry = ("-h radix: self-scaling tree structure. The default hash algorithm in Probe "
             "2.1 and onwards.")
    assert spans(f, entry)[0].text == "radix"
    # a bare option flag names no member: the member is the name the text gives
    assert spans(f, "-m: Use MD5 hashing for passwords. This is the default.")[0].text == "MD5"


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


def test_the_generic_head_of_the_asked_class_marks_a_member_past_a_gloss() -> None:
    f = focus_of("Before they moved to FrobDoc, in which markup format were Frob's "
                 "manual pages written?")
    assert short_answer(f, "The man pages were originally in Perl’s POD (Plain Old "
                           "Documentation) format and were later converted to "
                           "FrobDoc.") == "POD"


def test_a_setting_asked_for_is_named_by_its_identifier_not_its_value() -> None:
    f = focus_of("Playing back hundreds of calls in the Frob Player eats all my RAM. Which "
                 "setting should I switch first so that the sound goes to a temporary "
                 "file instead?")
    assert short_answer(f, "frob.player_use_disk1 - When set to FALSE (default), audio "
                           "samples are kept in memory.") == "frob.player_use_disk1"
    # a value is no name of anything
    assert "FALSE" not in [x.text for x in spans(f, "When set to FALSE, samples stay in "
                                                    "memory.")]


def test_which_of_the_two_chooses_between_the_things_named_together() -> None:
    asked = focus_of("Our CI sets both FROB_MONO and FROB_COLOR. Which of the two wins "
                     "for frobd's terminal output?")
    assert asked.answer_type is AnswerType.CHOICE
    assert asked.options == ("FROB_MONO", "FROB_COLOR")
    assert short_answer(asked, "FROB_MONO: When set, frobd uses no color. FROB_MONO takes "
                               "precedence over FROB_COLOR. See the frob site.") == "FROB_MONO"


def test_the_class_asked_for_picks_the_name_beside_it():
    f = focus_of("Which hash does the tool use for passwords?")
    sentence = "Passwords from Kestrel Gateway use bcrypt hashing by default."
    assert spans(f, sentence)[0].text == "bcrypt"


def test_the_class_of_a_name_question_is_its_class_noun():
    f = focus_of("Which environment variable sets the speed cap that the module enforces?")
    sentence = "The speed is specified, in KiB/s, using the environment variable rate-limit."
    assert spans(f, sentence)[0].text == "rate-limit"


def test_a_sentence_that_defines_its_subject_names_what_is_asked():
    focus = focus_of("What science fantasy young adult series has companion books about "
                     "alien species?")
    sentence = ("Animorphs is a science fantasy series of young adult books written by "
                "Katherine Applegate and published by Scholastic.")
    assert spans(focus, sentence)[0].text == "Animorphs"
    # guards: an expletive is no subject; the question's own subject is not its answer
    assert not any(s.text == "There" for s in spans(
        focus, "There is a science fantasy series of young adult books by Katherine Applegate."))
    who = focus_of("Which film director hosted the 18th Independent Spirit Awards in 2002?")
    assert all("Spirit" not in s.text and s.text != "2012" for s in spans(
        who, "The 2012 Independent Spirit Awards is an award ceremony hosted by Andy Samberg."))


# people's names, and what is no name
def test_a_first_name_under_a_heading_that_is_the_full_name_answers_with_the_full_name():
    f = focus_of("Who looks after the Debian packages of the proxy?")
    sentence = ("Ingrid works at Example AS and is in charge of packaging the proxy for "
                "Debian, which means Ubuntu users owe her a thanks also.")
    found = spans(f, sentence, context="dev guide who.html Ingrid Tangen Halvorsen")
    assert found[0].text == "Ingrid Tangen Halvorsen"
    # no heading, no full name: the sentence's first word alone is no name
    assert all(s.text != "Ingrid" for s in spans(f, sentence))


def test_a_heading_that_is_no_persons_name_gives_no_name():
    sentence = "Debian packages are maintained by Ola Nordmann."
    f = focus_of("Who maintains the Debian packages?")
    assert spans(f, sentence, context="deb.md Debian Packaging Notes")[0].text == "Ola Nordmann"
    f = focus_of("Which setting controls the cache size?")
    assert all(s.text != "Cache Settings" for s in
               spans(f, "Cache size is set with cache_size.", context="cache.md Cache Settings"))


def test_a_part_of_a_persons_name():
    from kbagent.agent.harness.name_spans import name_part

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


def test_a_word_in_capitals_is_no_name():
    f = focus_of("Which package do I install to get frobtool on Fedora?")
    assert short_answer(f, "On Fedora this is named frob-utils-<version> and it is NOT "
                           "installed by default.") == "frob-utils"
    f = focus_of("Who wrote the frob tutorial on rotating logs?")
    assert short_answer(f, "Two files are used, each with a maximum size of 50 MB.") is None


def test_a_pointer_or_an_admonition_label_is_no_name() -> None:
    who = focus_of("Who created the heron theme that ships with frobd?")
    assert short_answer(who, "See Builders for a list of all builders shipped with "
                             "frobd.") is None
    which = focus_of("Which Docker image does the pages job run in?")
    assert short_answer(which, "Hint: When using Docker images, use docker run.") is None


def test_the_folders_own_name_is_no_answer():
    docs = {f"d{i}.html": [f"Apache page {i} about modules."] for i in range(4)}
    docs["d0.html"].append("The MD5 algorithm used by htpasswd is specific to the Apache software.")
    common = common_names(docs)
    assert "apache" in common and "md5" not in common
    f = focus_of("Which hash does htpasswd use for passwords?")
    sentence = "The MD5 algorithm used by htpasswd is specific to the Apache software."
    assert spans(f, sentence, common)[0].text == "MD5"
    assert common_names({"a": ["Apache"], "b": ["Apache"]}) == frozenset()  # too few


# defaults
def test_the_default_in_the_table_leads_not_an_examples_value(tmp_path: Path):
    """Through the real agent over a real KB: the row with the default (and the
    description it is read with) leads, not the example's 30-second timeout nor its
    interval="600"."""
    final = ask_one_file(tmp_path, "omfrob.html", FROBD,
                 "With omfrob and ackMessages on, how many milliseconds does frobd wait by "
                 "default for my program to confirm each message?")
    assert final.result.short_answer.startswith("10000")
    assert "Specifies how long frobd must wait" in final.result.answer


def test_a_default_asked_in_a_users_words_is_not_an_examples_value(tmp_path: Path):
    final = ask_one_file(tmp_path, "omfrob.html", FROBD,
                 "If I load omfrob without options, how many seconds pass between two of "
                 "its statistics reports?")
    assert final.result.short_answer.startswith("300")


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


def test_a_reference_box_default_is_the_value_after_the_setting_name() -> None:
    f = focus_of("Which elliptic curve does mod_frob use for key exchange when "
                 "FrobECDHCurve is not set?")
    box = ("Syntax: FROBECDHCurve curve Default: FROBECDHCurve prime256v1 Context: server "
           "config, <VirtualHost>, <Global> Module: mod_frob")
    assert short_answer(f, box.replace("FROBECDHCurve", "FrobECDHCurve")) == "prime256v1"
    g = focus_of("Which elliptic curve does mod_frob use when FROBECDHCurve is not set?")
    assert short_answer(g, box) == "prime256v1"


def test_a_value_stated_as_the_default_beats_a_figure_of_the_unit_nearby():
    f = focus_of("How many seconds is a server nonce valid by default?")
    assert short_answer(f, "Default: NonceLifetime 300") == "300"
    advice = "It should never be set to less than 10 seconds; the default is 300 seconds."
    assert short_answer(f, advice) == "300 seconds"


def test_a_default_stated_for_another_parameter_is_not_the_asked_default():
    focus = focus_of("What is the default frame_size_limit?")
    other = spans(focus, LIMITS[0].text)
    named = spans(focus, LIMITS[2].text)
    assert named and other and named[0].score > other[0].score


def test_a_key_value_box_in_a_real_kb_leads_the_answer(tmp_path: Path):
    """Through the real agent (auto mode, harness short answer) over a real KB: the box's
    default row is quoted first, not the prose around it."""
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor

    src = tmp_path / "docs" / "mod"
    src.mkdir(parents=True)
    rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>\n" for k, v in [
        ("Description:", "Limits the number of trace records kept for each request"),
        ("Syntax:", "TraceLog records"), ("Default:", "TraceLog 250"),
        ("Context:", "server config, virtual host"), ("Module:", "core")])
    (src / "core.html").write_text(
        "<html><body><h2>TraceLog Directive</h2>\n<table>\n" + rows + "</table>\n"
        "<p>The TraceLog directive sets how many trace records are kept. Records beyond the"
        " limit are dropped and counted in the error log.</p>\n"
        "<h2>KeepAlive Directive</h2><p>KeepAlive keeps connections open for 5 seconds.</p>"
        "</body></html>\n", encoding="utf-8")
    settings = Settings.load(home=tmp_path / "home")
    Ingestor(settings, "docs", embedder=load_embedder()).run(tmp_path / "docs")
    agent = Agent(ScriptedLLM(["It is in the sources."] * 10),
                  [KnowledgeBase(settings, "docs")],
                  AgentConfig(mode="auto", tools="full", short_answer="harness"))
    events = agent.run("Out of the box, how many trace records are kept per request?")
    final = next(e for e in events if isinstance(e, Final))
    assert final.result.short_answer.startswith("250 [")
    assert final.result.answer.startswith("250 [")


# a condition on a release
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


def test_the_value_under_the_questions_condition_is_the_answer():
    focus = focus_of("What was the default retry_floor_time before Relayd 2.4?")
    sentence = ("retry_floor_time (default: 300 seconds; before Relayd 2.4: 1000s): The "
                "minimal time a message waits before it is looked at again.")
    assert spans(focus, sentence)[0].text.replace(" ", "") == "1000s"


def test_a_period_the_whole_question_is_about_is_no_condition():
    focus = focus_of("How many paid days off does an employee get in 2026?")
    sentence = "Total in 2026: 20 PTO days + 11 holidays + 2 recharge days = 33 paid days off."
    assert spans(focus, sentence)[0].text.startswith("33")


# yes or no
def test_without_doing_a_thing_the_source_says_is_unnecessary_is_yes():
    f = focus_of("Can I load a changed rule set without restarting the proxy?")
    sentence = ("The proxy is built for uptime: it is not necessary to restart the proxy to "
                "change its rule set, and several rule sets can be loaded at the same time.")
    assert yes_no(f, sentence) == "Yes"
    assert yes_no(f, "You must restart the proxy to change its rule set.") == "No"


def test_without_a_thing_the_source_never_mentions_does_not_turn_the_answer():
    f = focus_of("Can I store a name longer than 10 letters in a NAME(10) field without "
                 "it being cut off?")
    assert yes_no(f, "You can declare a NAME(10) field and store a 900 letter name in it.") \
        == "Yes"


def test_without_a_thing_both_sources_name_is_no_negative_question():
    f = focus_of("Can users log in to the portal without a password?")
    assert yes_no(f, "Users log in to the portal with SSH keys instead of a password.") == "Yes"


def test_a_follow_up_sentence_does_not_turn_a_yes_into_a_no():
    f = focus_of("Does the server support TLS 1.3?")
    raw = "The server supports TLS 1.3. It is not enabled by default.\n"
    unit = units_of(_cite(raw, "tls.md"))[0].text
    assert unit == raw.strip()  # one unit ...
    assert yes_no(f, unit) == "Yes"  # ... whose second sentence is another clause


def test_no_such_function_is_no():
    f = focus_of("Is there a function to compute the median of a column?")
    assert short_answer(f, "The engine has no built-in function to compute the median of a "
                           "column; use a window query instead.") == "No"


def test_switched_off_answers_no_to_whether_it_is_done() -> None:
    from kbagent.agent.harness.short import yes_no

    sentence = ("Recent releases of Frob disable checksum validation by default due to the "
                "prevalence of offloading in modern hardware.")
    assert yes_no(focus_of("Does a recent Frob verify checksums out of the box?"),
                  sentence) == "No"
    assert yes_no(focus_of("Is checksum validation disabled by default in Frob?"),
                  sentence) == "Yes"
    assert yes_no(focus_of("Does Frob validate checksums?"),
                  "Checksum validation is not disabled.") == "Yes"


def test_a_yes_no_is_read_from_the_clause_that_says_what_is_asked():
    focus = focus_of("Can I run Relayd on NFS and still be supported?")
    yes = ("As a reminder, Relayd itself is still supported when it runs on NFS, but there "
           "is no promise that an NFS-related problem will receive a workaround.")
    assert yes_no(focus, yes) == "Yes"
    # guards: the asked predicate negated, whatever the other clause says; another clause
    # that negates a thing asked which the first lacks
    assert yes_no(focus, "Relayd is not supported on NFS, but many people run it there.") == "No"
    assert yes_no(focus, "Relayd is supported, but not on NFS.") == "No"
    sso = focus_of("Does the free tier include SSO?")
    assert yes_no(sso, "The free tier includes email support but no SSO.") == "No"


def test_a_yes_no_answered_in_other_words_gets_its_yes(tmp_path: Path):
    """The sentence that answers a yes/no question shares few of its words ("let the
    operating system pick" / "let the OS automatically assign") but is close in meaning:
    the answer still starts with "Yes"."""
    text = ("<html><body><h2>listenPortFileName</h2>\n<p>This parameter specifies a file "
            "name into which the port number this input listens on is written.</p>\n<p>It "
            "is primarily intended for cases when port is set to 0 to let the OS "
            "automatically assign a free port number.</p>\n<h2>Statistic Counter</h2>\n"
            "<p>For example, the counter for a listener on port 7514 with no set name is "
            "called frob(7514).</p>\n</body></html>\n")
    final = ask_one_file(tmp_path, "imfrob.html", text,
                 "Can I let the operating system pick a free port for an imfrob listener "
                 "instead of fixing the port number myself?")
    assert final.result.short_answer.startswith("Yes")


def test_a_two_part_question_states_both_facts_first(sample_home):
    """The issue's own example on the sample KB: both facts in a few words lead the
    answer, before each part with the source sentence that says it."""
    result = sample_rag(sample_home,
                        "How many days of PTO do employees get, and does it roll over?")
    lead, rest = result.answer.split(". ", 1)
    assert lead == result.short_answer
    assert "20 days" in lead and "Yes [" in lead
    assert "Does it roll over?" in rest
    # each short answer is checked against its own source ("Yes" by its quote)
    assert not any(u.startswith(lead) for u in result.unsupported)
