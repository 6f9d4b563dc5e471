"""Documentation factoids (issue 22, session 4): a reference page's key/value boxes, the
words a user has for "the default" and for a length, the folder's own name as no
answer, boilerplate repeated on every page, numbers inside identifiers.

Constructed text only (none of it from a held-out folder). Every test here fails on the
code before this session's change (main at f2db450), but the guards that a normal table
and a duration keep their reading and the real-KB check of a key/value box (which the old
reading also answered, from a mislabelled row): a key/value table read as a header row,
"how long can a password be" read as a duration, "Apache" as the name asked for, a page
footer ranked like prose, "256" read out of "SHA-256", "iterations" refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kbagent.agent.answer.citations import Citation
from kbagent.agent.answer.evidence import score_units, units_of
from kbagent.agent.answer.focus import TYPE_PATTERNS, AnswerType, focus_of
from kbagent.agent.answer.units import UnitKind
from kbagent.agent.events import Final
from kbagent.agent.harness.short import short_answer, spans
from kbagent.agent.harness.span_rules import common_names
from kbagent.agent.run.loop import Agent, AgentConfig
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.settings import Settings
from tests.scripted_llm import ScriptedLLM

# a reference page's directive box as kbagent's HTML extraction writes it: label | value
BOX = """## TraceLog Directive
Description: | Limits the number of trace records kept for each request
Syntax: | TraceLog records
Default: | TraceLog 250
Context: | server config, virtual host
Module: | core
The TraceLog directive sets how many trace records are kept. Records beyond the limit
are dropped, and the dropped count is written to the error log.
"""


def _cite(text: str, n: int = 1, path: str = "mod/core.html") -> Citation:
    return Citation(n, "docs", path, 1, text.count("\n") + 1, text, 0.5, "kb_search",
                    raw=text)


def test_a_key_value_box_reads_label_and_value_not_a_header_row():
    units = [u for u in units_of(_cite(BOX)) if u.kind is UnitKind.ROW]
    texts = [u.text for u in units]
    assert "Default: TraceLog 250" in texts
    assert "Syntax: TraceLog records" in texts
    assert not any("Description:" in t and "Default:" in t for t in texts)
    default = next(u for u in units if u.text == "Default: TraceLog 250")
    # the row says what it is about through the box's description
    assert "trace records" in default.gloss and "trace records" in default.context


def test_a_key_value_box_answers_its_default_first():
    question = "How many trace records are kept for a request out of the box?"
    ranked = score_units(question, units_of(_cite(BOX)))
    assert ranked[0].unit.text == "Default: TraceLog 250"
    assert short_answer(focus_of(question), ranked[0].unit.text) == "250"


def test_a_normal_table_keeps_its_header_row():
    table = "| Setting | Default |\n|---|---|\n| upload_retries | 3 |\n"
    assert [u.text for u in units_of(_cite(table, path="ops/uploads.md"))] == [
        "Setting: upload_retries; Default: 3"]


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


def test_one_as_a_pronoun_is_no_number():
    f = focus_of("How many workers does the server start?")
    assert not f.type_match("One way to use the wrapper is through the group directive.")
    assert f.type_match("Only one worker is started.")


def test_a_number_inside_an_identifier_is_no_answer():
    f = focus_of("How long can a password be with crypt()?")
    assert [s.text for s in spans(f, "-2: Use SHA-256 crypt() based hashes.")] == []
    assert spans(f, "Only the first 8 characters of the password are used.")[0].text == (
        "8 characters")


def test_the_folders_own_name_is_no_answer():
    docs = {f"d{i}.html": [f"Apache page {i} about modules."] for i in range(4)}
    docs["d0.html"].append("The MD5 algorithm used by htpasswd is specific to the Apache software.")
    common = common_names(docs)
    assert "apache" in common and "md5" not in common
    f = focus_of("Which hash does htpasswd use for passwords?")
    sentence = "The MD5 algorithm used by htpasswd is specific to the Apache software."
    assert spans(f, sentence, common)[0].text == "MD5"
    assert common_names({"a": ["Apache"], "b": ["Apache"]}) == frozenset()  # too few


def test_the_class_asked_for_picks_the_name_beside_it():
    f = focus_of("Which hash does the tool use for passwords?")
    sentence = "Passwords from Kestrel Gateway use bcrypt hashing by default."
    assert spans(f, sentence)[0].text == "bcrypt"


def test_boilerplate_repeated_on_every_page_ranks_below_a_fact():
    footer = "Licensed under the Example Server License, version 2.0, by the Example Foundation."
    question = "Which license version covers the Example Server?"
    cites = [_cite(f"# Page {i}\n\n{footer}\n", n=i, path=f"p{i}.html") for i in range(1, 4)]
    cites.append(_cite("# Legal\n\nThe server code is covered by license version 3.1 since "
                       "2024.\n", n=4, path="legal.html"))
    ranked = score_units(question, [u for c in cites for u in units_of(c)])
    assert ranked[0].unit.n == 4


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


def test_a_relative_path_is_a_path():
    f = focus_of("On Unix, where does the error log go if the ErrorLog directive is not set?")
    assert f.answer_type is AnswerType.PATH and "default" in f.terms
    row = "Default: ErrorLog logs/error_log (Unix) ErrorLog logs/error.log (Windows and OS/2)"
    assert spans(f, row)[0].text == "logs/error_log"
    assert not TYPE_PATTERNS[AnswerType.PATH].search("The rate is given in KiB/s and/or MiB.")


def test_a_value_stated_as_the_default_beats_a_figure_of_the_unit_nearby():
    f = focus_of("How many seconds is a server nonce valid by default?")
    assert short_answer(f, "Default: NonceLifetime 300") == "300"
    advice = "It should never be set to less than 10 seconds; the default is 300 seconds."
    assert short_answer(f, advice) == "300 seconds"


def test_an_apostrophe_quotes_nothing():
    f = focus_of("Which file does the server send for a folder's URL, if I haven't set one?")
    assert not any("haven" in n for n in f.named)
    assert "default" in f.terms


def test_the_class_of_a_name_question_is_its_class_noun():
    f = focus_of("Which environment variable sets the speed cap that the module enforces?")
    sentence = "The speed is specified, in KiB/s, using the environment variable rate-limit."
    assert spans(f, sentence)[0].text == "rate-limit"


def test_a_standards_number_and_a_version_are_no_figures():
    f = focus_of("How low can the session cache timeout be set when testing?")
    sentence = "Applies also to RFC 5077 session resumption in release 2.4.10 and later."
    assert spans(f, sentence) == []


def test_a_signal_question_finds_the_signal_name():
    f = focus_of("Which signal makes the server reload its configuration gracefully?")
    assert f.answer_type is AnswerType.ERROR
    assert f.type_match("Signal: USR1 apachectl -k graceful")
    assert short_answer(f, "Signal: USR1 apachectl -k graceful") == "USR1"
    assert not f.type_match("The parent process reloads the configuration.")


def test_a_dates_numbers_are_no_figures():
    f = focus_of("How many levels deep may the nesting go?")
    assert spans(f, "Built in by default as of version 3.38.0 (2022-02-22).") == []


def test_a_default_keeps_its_thousands_separator_and_an_option_is_no_figure():
    f = focus_of("How many hash rounds does it run unless I tell it otherwise?")
    sentence = ("-r: Only allowed in combination with -2 or -5. It sets the number of hash "
                "rounds (higher is slower; the default is 5,000).")
    assert short_answer(f, sentence) == "5,000"


def test_the_counted_noun_may_be_the_users_word(tmp_path: Path):
    """"How many iterations" asked of a page that says "hash rounds" is answered (it was
    refused: "iterations" is in no page); a question about a thing no page names is
    still refused."""
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor

    src = tmp_path / "docs"
    src.mkdir()
    (src / "hashing.md").write_text(
        "# Password hashing\n\nThe -r flag sets the number of hash rounds used for the "
        "SHA-2 algorithms (higher is more secure but slower); the default is 5,000.\n\n"
        "The -B flag selects bcrypt, which is slower to compute.\n", encoding="utf-8")
    (src / "benefits.md").write_text(
        "# Benefits\n\nEmployees choose one of three health insurance plans each year. "
        "The insurance provider is chosen by the benefits team.\n", encoding="utf-8")
    settings = Settings.load(home=tmp_path / "home")
    Ingestor(settings, "docs", embedder=load_embedder()).run(src)

    def ask(question: str):
        agent = Agent(ScriptedLLM(["It is in the sources."] * 10),
                      [KnowledgeBase(settings, "docs")],
                      AgentConfig(mode="auto", tools="full", short_answer="harness"))
        return next(e for e in agent.run(question) if isinstance(e, Final)).result

    answered = ask("For SHA-2 password hashes, how many iterations are computed out of the box?")
    assert not answered.abstained and answered.short_answer.startswith("5,000 [")
    assert ask("How many iterations does the Argon2 hashing run by default?").abstained


def test_the_name_of_something_asks_for_no_class():
    from kbagent.agent.answer.phrasing import class_word

    assert class_word("What was the name of the 1996 adaptation of the play?") == ""
    assert class_word("Which GPU model does the appliance use?") == "GPU"
    assert class_word("Which hash does htpasswd use?") == "hash"
