"""The harness's plan stage: reading the question before any evidence is read. The kind
of answer asked for (read from the sentence that asks, not the story around it, and from
a user's own words for a default, a length, a reply or a named thing), the things the
question names, its parts, and whether it goes to one search or to a multi-hop run
(``answer/focus.py``, ``answer/kind_rules.py``, ``answer/named.py``,
``answer/phrasing.py``, ``harness/clauses.py``, ``harness/decompose.py``,
``run/router.py``).

The harness policy's frozen rules, on constructed text: see ``tests/harness_cases.py``.
"""

from __future__ import annotations

import pytest

from kbagent.agent.answer.focus import TYPE_PATTERNS, AnswerType, focus_of
from kbagent.agent.harness.clauses import clauses
from kbagent.agent.harness.decompose import parts_of
from kbagent.agent.harness.short import short_answer, spans
from kbagent.agent.kinds import AskMode
from kbagent.agent.run.router import multi_hop, route


# the kind of answer asked for
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


def test_how_any_is_read_as_how_many():
    f = focus_of("The chain operated how any hypermarkets at the end of 2016?")
    assert f.answer_type is AnswerType.NUMBER and f.unit == "hypermarkets"
    assert [s.text for s in spans(f, "It ran 1,462 hypermarkets at the end of 2016.")][:1] == [
        "1,462 hypermarkets"]


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


@pytest.mark.parametrize(("question", "kind"), [
    ("What is the largest city in France?", AnswerType.OTHER),  # no measure of a thing
    ("What is the default port? Is it 25?", AnswerType.DEFAULT),  # a check after the ask
    ("How many retries does frobd make? Does it back off?", AnswerType.NUMBER),
])
def test_the_asking_sentence_is_the_one_with_a_question_word(question: str,
                                                             kind: AnswerType) -> None:
    assert focus_of(question).answer_type is kind


def test_a_question_opening_with_a_when_clause_asks_what_follows_it() -> None:
    # the condition goes on past a comma ("and a new folder to put it in,")
    asked = focus_of("When frobd creates a new log file, and a new folder to put it in, "
                     "which permission modes does it give them by default?").answer_type
    assert asked is not AnswerType.DATE
    assert focus_of("If I run frobd twice, and the first run fails, how many retries "
                    "happen?").answer_type is AnswerType.NUMBER
    assert focus_of("When was frobd 2.0 released?").answer_type is AnswerType.DATE


def test_a_question_that_opens_asking_for_a_number_wants_a_number() -> None:
    q = ("I load a script of my own through frob_js_files. What number decides where it "
         "lands in the loading order relative to Frob's own scripts, if I don't set one?")
    f = focus_of(q)
    assert f.answer_type is AnswerType.NUMBER
    assert short_answer(f, "Priority: 800; Main purpose in Frob: default priority for "
                           "frob_js_files") == "800"
    # a path question that only mentions a number stays a path question
    assert focus_of("Where are the log files stored?").answer_type is AnswerType.PATH


def test_what_is_the_newest_release_asks_for_a_version() -> None:
    q = focus_of("We still have a few Frob 7 PCs in the lab. What is the newest Frob release "
                 "branch that officially supports them?")
    assert q.answer_type is AnswerType.VERSION
    assert focus_of("What is the release date of 2.0?").answer_type is AnswerType.DATE


def test_the_asking_sentence_is_not_cut_at_an_abbreviation() -> None:
    from kbagent.agent.answer.focus import asking_sentence

    assert asking_sentence("Our PDF does not come out on A4. What page format does Frob "
                           "use?") == "What page format does Frob use?"
    for q in ("Who designed the game by Ken St. Andre that Frob is based on?",
              "What did the U.S. Department of Frob spend?",
              "Which ruling, Frobster v. Goldberg, held it?"):
        assert asking_sentence(q) == q


def test_what_a_question_names_ends_with_its_sentence() -> None:
    from kbagent.agent.answer.named import named_things

    assert named_things("I load a script through html_js_files. What number decides "
                        "its order?") == ("html_js_files",)
    assert named_things("Listings get cut off. Roughly how many characters fit?") == ()
    assert "A4" in named_things("The PDF does not come out on A4. What page format is it?")


@pytest.mark.parametrize("question", [
    "How long can a password be if the old crypt() hashing is used?",
    "Roughly how long may one line of the configuration file get once variables are expanded?",
    "How long may a request line be?",
])
def test_a_length_is_a_number_not_a_duration(question):
    assert focus_of(question).answer_type is AnswerType.NUMBER


@pytest.mark.parametrize("question", [
    "How long is paid parental leave?",
    "How long does a cache entry live?",
    "How long can a session be idle?",
])
def test_a_duration_is_still_a_duration(question):
    assert focus_of(question).answer_type is AnswerType.DURATION


def test_a_unit_told_in_words_makes_a_count():
    f = focus_of("Out of the box, how long may a header line be before it is refused, in bytes?")
    assert f.answer_type is AnswerType.NUMBER and f.unit == "bytes"
    assert "default" in f.terms


@pytest.mark.parametrize("question", [
    "Which hash does htpasswd use when I pass no option choosing one?",
    "How many iterations does it run unless I tell it otherwise?",
    "What is the lowest user ID it accepts, unless configured otherwise when it is built?",
    "If I never set ProxyTimeout, how many seconds will the proxy wait?",
])
def test_a_users_words_for_the_default_ask_for_the_default(question):
    assert "default" in focus_of(question).terms


def test_lowest_and_highest_ask_for_a_number():
    assert focus_of("What is the lowest user ID the wrapper accepts?").answer_type is (
        AnswerType.NUMBER)


def test_an_http_status_and_a_message_code_are_errors():
    assert focus_of("What HTTP status does a slow client get?").answer_type is AnswerType.ERROR
    f = focus_of("Which message code shows up in the error log?")
    assert f.answer_type is AnswerType.ERROR
    line = "[client 10.0.0.1] AH00124: Request exceeded the limit of 10 internal redirects"
    assert TYPE_PATTERNS[AnswerType.ERROR].search(line).group() == "AH00124"


def test_the_kinds_a_documentation_question_asks_for_in_its_own_words():
    assert focus_of("Which SMTP response code does the server send when a recipient is "
                    "unknown?").answer_type is AnswerType.ERROR
    assert focus_of("If my policy server can't be reached, what reply does the server send "
                    "by default?").answer_type is AnswerType.ERROR
    assert focus_of("What is the longest Relayd will wait between two retries, in "
                    "seconds?").answer_type is AnswerType.DURATION
    assert focus_of("What file permissions does the spooler give a new queue "
                    "file?").answer_type is AnswerType.NUMBER
    # guards: a superlative naming a thing, a class noun that is what is asked (its verb
    # no attribute), permissions that are no file mode
    assert focus_of("What is the longest river in Africa?").answer_type is not AnswerType.NUMBER
    assert focus_of("Which environment variable sets the speed?").answer_type is AnswerType.NAME
    assert focus_of("Which setting limits the number of workers?").answer_type is AnswerType.NAME
    assert focus_of("What permissions does a reviewer need?").answer_type is not AnswerType.NUMBER


def test_a_question_for_a_thing_by_name_in_other_words_is_a_name_question():
    for q in ["What race track in the midwest hosts a long race every May?",
              "What science fantasy series, told in first person, has companion books?",
              "Tysons Corner Mall is located in what county?",
              "The team competes in a conference that was formerly known as what?",
              "The producer has worked with this gospel singer born in July?"]:
        assert focus_of(q).answer_type is AnswerType.NAME, q
    assert focus_of("The civil war ended when ?").answer_type is AnswerType.DATE
    # guards: an explanation stays one
    for q in ["What steps are needed to rotate keys?", "What happens when the queue is full?",
              "What does the -v flag do?"]:
        assert focus_of(q).answer_type is AnswerType.OTHER, q


def test_the_name_of_something_asks_for_no_class():
    from kbagent.agent.answer.phrasing import class_word

    assert class_word("What was the name of the 1996 adaptation of the play?") == ""
    assert class_word("Which GPU model does the appliance use?") == "GPU"
    assert class_word("Which hash does htpasswd use?") == "hash"


def test_an_apostrophe_quotes_nothing():
    f = focus_of("Which file does the server send for a folder's URL, if I haven't set one?")
    assert not any("haven" in n for n in f.named)
    assert "default" in f.terms


# the parts of a question
def test_a_statement_after_the_question_is_no_second_part():
    q = ("Out of the box, what is the biggest message Frob will take in? I mean the built-in "
         "limit when I have not configured anything about size.")
    assert len(parts_of(q)) == 1
    # ... but a second question, or a request, after it is
    assert len(parts_of("What caused the outage? How long did it last?")) == 2
    assert len(parts_of("What is the retry cap? Explain why it is needed.")) == 2


def test_a_second_predicate_of_a_relative_clause_is_no_second_question():
    q = ("Who is the writer of this song that was inspired by words on a tombstone and was "
         "the first track on the box set Back to Mono?")
    assert len(parts_of(q)) == 1
    assert len(parts_of("How many days of PTO do employees get, and does it roll over?")) == 2


def test_a_statement_before_and_is_the_case_not_a_question_of_its_own() -> None:
    case = ("A cached page came without an expiry date and was last changed 5 days ago. "
            "With the default settings, for how many seconds is it served as fresh?")
    assert clauses(case) == [case]
    # a question, or a bid, before "and" still opens a second question
    assert len(clauses("What caused the outage and how long did it last?")) == 2
    assert len(clauses("Compare Q2 and Q3 gross margin and explain the change")) == 2


@pytest.mark.parametrize("question", [
    "By default, is compression on and what level does it use?",
    "Please tell me the default port and how do I change it?",
    "I need the default timeout and how can I raise it?",
    "Define MaxSessions and what is its default?",
])
def test_a_question_word_after_and_still_opens_a_second_question(question: str) -> None:
    assert len(clauses(question)) == 2


def test_which_one_in_a_later_clause_is_the_first_clauses_thing() -> None:
    from kbagent.agent.harness.decompose import parts_of

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


def test_a_second_question_may_open_with_a_preposition():
    parts = parts_of("Which daemon counts how fast clients connect, and over what time "
                     "window are those rates measured by default?")
    assert [p.question for p in parts] == [
        "Which daemon counts how fast clients connect?",
        "over what time window are those rates measured by default?"]


# one search, or a multi-hop run
def test_a_question_asked_as_we_is_a_users_question() -> None:
    q = ("We still have a handful of Frobix 7 PCs in the lab. What is the newest Frobd "
         "release branch that officially supports them?")
    assert multi_hop(q) is None
    assert route(q) is AskMode.RAG
    # a title with a capitalised "We" is no user speaking
    bridge = ('When was the British author who wrote the novel on which "Here We Go Round '
              'the Mulberry Bush" was based born?')
    assert route(bridge) is AskMode.AGENT


def test_the_sentence_that_asks_decides_whether_a_thing_is_described() -> None:
    # the setting first, then the question: "that" describes no thing to find first
    q = ("Frobd tagged a packet as a fast retransmission. One of its conditions is that "
         "the last acknowledgement was seen only a moment before. Within how many "
         "milliseconds?")
    assert multi_hop(q) is None
    assert route(q) is AskMode.RAG
    # a described thing in the sentence that asks is still a bridge ("St." ends none)
    assert multi_hop("The Frob album came out in 1980. Who produced the album that "
                     "followed it?") == "bridge"
    assert multi_hop("What is the adventure in a game designed by Ken St. Andre, "
                     "the author who wrote Frob?") == "bridge"
