"""Question focus and answer type (agent/answer/focus.py): what the ranking, the
abstention check and the short answer read a question as."""

from __future__ import annotations

import pytest

from kbagent.agent.answer.focus import AnswerType, focus_of


@pytest.mark.parametrize(("question", "kind"), [
    ("How many days of PTO do employees get?", AnswerType.DURATION),
    ("How many replicas does the cluster run?", AnswerType.NUMBER),
    ("What is the maximum upload size?", AnswerType.NUMBER),
    ("What is the default value of maxsize in lru_cache?", AnswerType.DEFAULT),
    ("Which exception does json.loads raise on invalid input?", AnswerType.ERROR),
    ("What error code comes back when the disk is full?", AnswerType.ERROR),
    ("What shell does subprocess use when shell=True?", AnswerType.PATH),
    ("Where are the logs stored?", AnswerType.PATH),
    ("Were Scott Derrickson and Ed Wood of the same nationality?", AnswerType.YESNO),
    ("Does the free tier include SSO?", AnswerType.YESNO),
    ("Which is older, the Eiffel Tower or Big Ben?", AnswerType.CHOICE),
    ("When was the Kestrel Gateway launched?", AnswerType.DATE),
    ("In which year did the office open?", AnswerType.DATE),
    ("How long is the retry backoff cap?", AnswerType.DURATION),
    ("How much does the team plan cost per month?", AnswerType.PRICE),
    ("What percentage of tickets were resolved within SLA?", AnswerType.PERCENT),
    ("Since which version is the flag available?", AnswerType.VERSION),
    ("Who is the on-call lead for payments?", AnswerType.NAME),
    ("Which team owns the billing service?", AnswerType.NAME),
    ("Why did latency increase in Q3?", AnswerType.OTHER),
    ("What is Kestrel Gateway?", AnswerType.OTHER),
])
def test_answer_type(question: str, kind: AnswerType) -> None:
    assert focus_of(question).answer_type is kind


def test_named_things_focus_and_options() -> None:
    f = focus_of("What is the default of SQLITE_MAX_ATTACHED in `limits.h`?")
    assert "SQLITE_MAX_ATTACHED" in f.named and "limits.h" in f.named
    assert "default" in f.focus
    f = focus_of("Which is older, the Eiffel Tower or Big Ben?")
    assert f.options == ("Eiffel Tower", "Big Ben")
    assert focus_of("Were Scott Derrickson and Ed Wood of the same nationality?").named == (
        "Scott Derrickson", "Ed Wood")
    assert focus_of("How many days of PTO do employees get?").unit == "days"


def test_type_match() -> None:
    f = focus_of("How long is the retry backoff cap?")
    assert f.type_match("The backoff is capped at 8 seconds.")
    assert not f.type_match("Retries back off exponentially.")
    f = focus_of("Which exception does json.loads raise on invalid input?")
    assert f.type_match("It raises JSONDecodeError.")
    assert not f.type_match("It parses the input.")
    f = focus_of("Where are the logs stored?")
    assert f.type_match("Logs go to /var/log/kestrel by default.")


@pytest.mark.parametrize(("question", "kind"), [
    ("Why was semantic caching rejected as the default?", AnswerType.OTHER),
    ("How does the gateway retry failed calls?", AnswerType.OTHER),
    ("What is the default page size?", AnswerType.DEFAULT),
    ("What is the default journal mode?", AnswerType.DEFAULT),
    ("What does maxsize default to?", AnswerType.DEFAULT),
    ("By default, how many retries are made?", AnswerType.NUMBER),
])
def test_explanations_and_defaults(question: str, kind: AnswerType) -> None:
    assert focus_of(question).answer_type is kind


@pytest.mark.parametrize(("question", "kind"), [
    # "how" with an adjective or adverb of degree asks for a number, "how soon" for a time
    ("How deeply can a config file be nested before the parser rejects it?",
     AnswerType.NUMBER),
    ("How frequently does the sync job run?", AnswerType.DURATION),
    ("What is the shortest time the sleep call will wait?", AnswerType.DURATION),
    # "what kind of", "what type", "which mode", a code: a name
    ("What kind of lock does the server take first?", AnswerType.NAME),
    ("What type affinity does a column declared as SHORT TEXT get?", AnswerType.NAME),
    ("What export-compliance code do I declare for the product?", AnswerType.NAME),
    # a port and an exit status are numbers
    ("Which TCP port does the daemon listen on by default?", AnswerType.NUMBER),
    ("Which exit code should the script return when a commit cannot be tested?",
     AnswerType.NUMBER),
    # a leading clause says under what conditions, not what is asked
    ("By default, is the comparison case-sensitive?", AnswerType.YESNO),
    ("When neither limit is set, how many files does the scan look at?", AnswerType.NUMBER),
    ("If I just type BEGIN, what kind of transaction starts?", AnswerType.NAME),
])
def test_how_adverbs_kinds_and_leading_clauses(question: str, kind: AnswerType) -> None:
    assert focus_of(question).answer_type is kind


@pytest.mark.parametrize(("question", "unit"), [
    ("How many database files can I attach to one connection?", "files"),
    ("How many paid days off does a new employee get?", "days"),
    ("How much larger is the maximum depth than the default depth?", ""),
    ("How much does the plan cost?", ""),
])
def test_the_unit_is_the_counted_noun(question: str, unit: str) -> None:
    assert focus_of(question).unit == unit


def test_out_of_the_box_asks_for_the_default() -> None:
    f = focus_of("Out of the box, how many database files can I attach at once?")
    assert f.answer_type is AnswerType.NUMBER
    assert "default" in f.focus and "default" in f.terms


def test_a_version_and_a_dotted_number_are_whole() -> None:
    f = focus_of("Since which release can a table have generated columns?")
    assert f.answer_type is AnswerType.VERSION
    assert f.type_match("Version 3.31.0 added generated columns.")
    # "two or more" counts no number
    assert not focus_of("How many files can be attached?").type_match(
        "Two or more files can be attached at the same time.")
