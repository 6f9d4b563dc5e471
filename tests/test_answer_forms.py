"""Forms of answers in documentation (issue 22, session 6): a function asked for as "is
there a function that ...", a yes/no asked "without restarting", a time-out asked "in
seconds", a protocol's status codes below 400, an option with its value ("-s 256"), a
value excluded by "different than", the sentence after a topic sentence, a name that a
paragraph's source line break cuts in two, a short sentence that goes on with the one
before ("It defaults to ..."), a list of settings ("name = value") led into by a
sentence, a definition whose text names the class asked for ("-h radix: ... The default
hash algorithm"), a two-part question whose facts lead the answer, a lower-case name no
page mentions where a tool or a place goes ("into prometheus"), a first name under a
heading that gives the full name, the question's own phrasing word for word ("merging
more than one branch"), and the years of a multi-hop question, which may sit in
different chunks.

Constructed text only (the tools, options and people below are invented; none of it
comes from a held-out folder). Each test fails on the code before this session's change
(main at ff3a361; checked by running this file against that tree), but the guards that
pass there too: "Is there a way to ...?" stays yes/no, a "without" whose thing the
source never mentions does not turn the answer, a line that ends a sentence still ends
it.
"""

from __future__ import annotations

from pathlib import Path

from kbagent.agent.answer.citations import Citation
from kbagent.agent.answer.focus import AnswerType, focus_of
from kbagent.agent.answer.short import short_answer, spans, yes_no
from kbagent.agent.answer.units import units_of
from kbagent.agent.events import Final
from kbagent.agent.run.loop import Agent, AgentConfig
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.settings import Settings
from tests.agent_runs import run
from tests.scripted_llm import ScriptedLLM


def test_is_there_a_function_asks_for_its_name():
    question = ("Is there a util function that puts the arguments of a link in a fixed "
                "order, so that the same page is stored once?")
    f = focus_of(question)
    assert f.answer_type is AnswerType.NAME and f.class_noun == "function"
    call = "set req.link = util.argsort(req.link);"
    assert f.type_match(call)
    assert short_answer(f, call) == "util.argsort"
    # a neighbour that shares the question's words but names no function gives nothing
    assert spans(f, "The same page requested twice is stored once in the cache.") == []


def test_is_there_a_way_stays_a_yes_no_question():
    assert focus_of("Is there a way to keep old logs?").answer_type is AnswerType.YESNO
    assert focus_of("Is there a limit on the size of a page?").answer_type is AnswerType.YESNO


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


def test_a_time_out_in_seconds_is_a_duration_and_its_default_the_answer():
    f = focus_of("What is probetest's default time-out for a test, in seconds?")
    assert f.answer_type is AnswerType.DURATION
    assert short_answer(f, "Time tests out after this long (default: 60s)") == "60s"


def test_a_status_code_below_400_is_a_status_code():
    f = focus_of("Which status code does the console send to say I have to log in first?")
    assert f.answer_type is AnswerType.ERROR
    assert short_answer(f, "The console status of 107 indicates that authentication is "
                           "necessary.") == "107"


def test_a_value_excluded_by_different_than_is_not_the_answer():
    f = focus_of("Which console status code tells me the output was cut short?")
    sentence = ("A status different than 200 or 201 makes the tool exit with status 1 (if "
                "you get 201, the output was truncated).")
    assert spans(f, sentence)[0].text == "201"


def test_an_option_is_given_with_its_value():
    f = focus_of("The proxy crashes on a 64-bit container. Which ulimit option should I put "
                 "in the init script?")
    assert f.answer_type is AnswerType.PATH and f.class_noun == "option"
    assert short_answer(f, "Reduce the maximum stack size by adding ulimit -s 256 before "
                           "starting the proxy.") == "-s 256"
    assert short_answer(f, "Pass -p name=val to set a parameter.") == "-p name=val"


def _cite(text: str, path: str = "reference/tool.html") -> Citation:
    return Citation(1, "docs", path, 1, text.count("\n") + 1, text, 0.5, "kb_search",
                    raw=text)


def test_a_name_cut_by_a_source_line_break_stays_one_sentence():
    raw = ("### AUTHORS\n"
           "The probeadm utility and this manual page were written by Ingrid\n"
           "Halvorsen. This man page has later been modified by Tomas Berg.\n")
    texts = [u.text for u in units_of(_cite(raw))]
    assert "The probeadm utility and this manual page were written by Ingrid Halvorsen." \
        in texts
    f = focus_of("Who wrote the probeadm utility?")
    assert short_answer(f, texts[0]) == "Ingrid Halvorsen"


def test_a_line_that_ends_a_sentence_still_ends_it():
    raw = "The list is kept in memory.\nReload it with the reload command.\n"
    texts = [u.text for u in units_of(_cite(raw))]
    assert texts == ["The list is kept in memory.", "Reload it with the reload command."]


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


def test_a_short_sentence_that_goes_on_with_the_one_before_is_one_unit_with_it():
    raw = ("The optional runuser argument names the user for the helper process. It "
           "defaults to probecache.\n")
    texts = [u.text for u in units_of(_cite(raw))]
    assert texts == ["The optional runuser argument names the user for the helper process. "
                     "It defaults to probecache."]
    f = focus_of("Which user does the helper process run as by default?")
    assert short_answer(f, texts[0]) == "probecache"


def test_a_list_of_settings_is_a_unit_each_read_with_the_sentence_that_leads_into_it():
    raw = ("On platforms with the needed socket options the defaults are set\nto:\n"
           "keepalive_idle = 600 seconds\nkeepalive_count = 5\nkeepalive_gap = 5 seconds\n"
           "Note that the proxy applies these only below the system value.\n")
    units = units_of(_cite(raw))
    item = next(u for u in units if u.text.startswith("keepalive_idle"))
    assert item.text == "keepalive_idle = 600 seconds"
    assert "defaults are set to" in item.context
    f = focus_of("What is the default keepalive_idle?")
    assert f.type_match(item.text)
    assert short_answer(f, item.text) == "600 seconds"


def test_a_definition_whose_text_names_the_class_asked_for_answers_with_its_term():
    f = focus_of("Which hash algorithm does probed use by default?")
    entry = ("-h radix: self-scaling tree structure. The default hash algorithm in Probe "
             "2.1 and onwards.")
    assert spans(f, entry)[0].text == "radix"
    # a bare option flag names no member: the member is the name the text gives
    assert spans(f, "-m: Use MD5 hashing for passwords. This is the default.")[0].text == "MD5"


def test_an_option_term_is_a_term_though_its_description_starts_in_lower_case():
    raw = "-h radix\nself-scaling tree structure. The default hash algorithm.\n"
    units = units_of(_cite(raw))
    assert [u.text for u in units] == [
        "-h radix: self-scaling tree structure. The default hash algorithm."]


def test_a_two_part_question_states_both_facts_first(sample_home):
    """The issue's own example on the sample KB: both facts in a few words lead the
    answer, before each part with the source sentence that says it."""
    kb = KnowledgeBase(Settings.load(home=sample_home), "sample")
    events = list(Agent(ScriptedLLM(["It is in the sources."] * 5), [kb],
                        AgentConfig(mode="rag", tools="full")).run(
        "How many days of PTO do employees get, and does it roll over?"))
    final = events[-1]
    assert isinstance(final, Final)
    lead, rest = final.result.answer.split(". ", 1)
    assert lead == final.result.short_answer
    assert "20 days" in lead and "Yes [" in lead
    assert "Does it roll over?" in rest
    # each short answer is checked against its own source ("Yes" by its quote)
    assert not any(u.startswith(lead) for u in final.result.unsupported)


def test_a_lower_case_place_no_page_mentions_is_a_name_the_kb_never_mentions(
        settings, make_folder, embedder):
    from kbagent.kb.ingest import Ingestor

    assert not embedder.is_word("prometheus")
    docs = {"stats.md": ("# Counters\n\nprobestat shows the proxy's counters. You can graph "
                         "them with munin, or write them to a file every minute.\n")}
    Ingestor(settings, "stats", embedder=embedder).run(make_folder(docs))
    kb = KnowledgeBase(settings, "stats")

    answers = {q: run(Agent(ScriptedLLM(["It is in the sources [1]."] * 5), [kb],
                            AgentConfig(mode="rag", tools="full")), q)[1]
               for q in ["how do I get the probestat counters into prometheus?",
                         # guards: a tool the page mentions, an ordinary word there
                         "how do I graph the probestat counters in munin?",
                         "how do I write the probestat counters to a file?"]}
    refused, *guards = answers.values()
    assert refused.abstained and "never mentions “prometheus”" in refused.answer
    assert not any("never mentions" in r.answer for r in guards)


def test_a_first_name_under_a_heading_that_is_the_full_name_answers_with_the_full_name():
    f = focus_of("Who looks after the Debian packages of the proxy?")
    sentence = ("Ingrid works at Example AS and is in charge of packaging the proxy for "
                "Debian, which means Ubuntu users owe her a thanks also.")
    found = spans(f, sentence, context="dev guide who.html Ingrid Tangen Halvorsen")
    assert found[0].text == "Ingrid Tangen Halvorsen"
    # no heading, no full name: the sentence's first word alone is no name
    assert all(s.text != "Ingrid" for s in spans(f, sentence))


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


def test_years_of_a_question_may_sit_in_different_chunks(settings, make_folder, embedder):
    """A question naming two years that two documents state apart ("born ... 1992",
    "... 2016") is not refused for want of one chunk holding both; a year nothing
    gathered mentions still is."""
    from kbagent.kb.ingest import Ingestor

    docs = {"Kai_Mercer.md": ("# Kai Mercer\n\nKai Mercer (born 18 October 1992) is an "
                              "American professional surfer from Hawaii.\n"),
            "Ridge_Pro.md": ("# Ridge Pro Lisbon\n\nThe Ridge Pro Lisbon is a surfing "
                             "contest. The Ridge Pro Lisbon 2016 was won by Kai Mercer.\n")}
    Ingestor(settings, "surf", embedder=embedder).run(make_folder(docs))
    kb = KnowledgeBase(settings, "surf")

    def ask(question: str):
        return run(Agent(ScriptedLLM(["It is in the sources [1]."] * 5), [kb],
                         AgentConfig(mode="rag", tools="full")), question)[1]

    answered = ask("Which American surfer born in October 1992 won the Ridge Pro Lisbon 2016?")
    assert not answered.abstained
    assert ask("Which surfer won the Ridge Pro Lisbon 2019?").abstained


# guards from the review of this session's change: each input misfired on a first
# version of a rule above (none misfired on ff3a361)
def test_a_follow_up_sentence_does_not_turn_a_yes_into_a_no():
    f = focus_of("Does the server support TLS 1.3?")
    raw = "The server supports TLS 1.3. It is not enabled by default.\n"
    unit = units_of(_cite(raw, "tls.md"))[0].text
    assert unit == raw.strip()  # one unit ...
    assert yes_no(f, unit) == "Yes"  # ... whose second sentence is another clause


def test_without_a_thing_both_sources_name_is_no_negative_question():
    f = focus_of("Can users log in to the portal without a password?")
    assert yes_no(f, "Users log in to the portal with SSH keys instead of a password.") == "Yes"


def test_no_such_function_is_no():
    f = focus_of("Is there a function to compute the median of a column?")
    assert short_answer(f, "The engine has no built-in function to compute the median of a "
                           "column; use a window query instead.") == "No"


def test_a_heading_that_is_no_persons_name_gives_no_name():
    sentence = "Debian packages are maintained by Ola Nordmann."
    f = focus_of("Who maintains the Debian packages?")
    assert spans(f, sentence, context="deb.md Debian Packaging Notes")[0].text == "Ola Nordmann"
    f = focus_of("Which setting controls the cache size?")
    assert all(s.text != "Cache Settings" for s in
               spans(f, "Cache size is set with cache_size.", context="cache.md Cache Settings"))


def test_an_ordinary_number_is_no_status_code():
    f = focus_of("What error code does the server return when the rate limit is exceeded?")
    assert spans(f, "When the rate limit is exceeded the client must wait 300 seconds.") == []


def test_a_users_wording_after_in_or_on_is_no_tool_name():
    from kbagent.agent.answer.phrasing import tool_names

    assert tool_names("Can I mount the data volume in read-only mode?") == []
    assert tool_names("What happens to queued jobs on shutdown?") == []
    assert tool_names("how do I get the counters into prometheus?") == ["prometheus"]


def test_separate_html_blocks_stay_apart_and_a_list_ends_at_a_blank_line():
    texts = [u.text for u in units_of(_cite("Supported on Linux\nWindows support is planned "
                                            "for the next release.\n"))]
    assert not any("Linux Windows" in t for t in texts)
    units = units_of(_cite("The default values are:\nretries = 3\n\nThe queue is stored "
                           "on disk.\n", "notes.md"))
    queue = next(u for u in units if u.text.startswith("The queue"))
    assert "default values" not in queue.context
