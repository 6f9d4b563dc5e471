"""The harness's abstention stage, by what the question names: "The knowledge base does
not say" because the sources never mention a thing the question asks about (a name
where a tool goes, a release, a year, an acronym), and not because of a name in the
story told before the question, a word the pages write in another form, or a counted
thing asked for in the user's own word ("iterations" where the page says "hash rounds")
(``Grounding.silent_reason``, ``Grounding.unmentioned``, ``answer/phrasing.py``).
Whether the best units cover the question is in test_harness_abstention_coverage.py.

The harness policy's frozen rules, on constructed text: see ``tests/harness_cases.py``.
"""

from __future__ import annotations

from pathlib import Path

from kbagent.agent.events import Final
from kbagent.agent.run.loop import Agent, AgentConfig
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.settings import Settings
from tests.agent_runs import ask_one_file, run, silent_reason
from tests.scripted_llm import ScriptedLLM


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


def test_a_lower_case_tool_no_page_mentions_is_a_name_the_kb_never_mentions(
        settings, make_folder, embedder):
    from kbagent.agent.events import Final
    from kbagent.agent.run.loop import Agent, AgentConfig
    from kbagent.kb.ingest import Ingestor
    from kbagent.kb.knowledge_base import KnowledgeBase
    from tests.scripted_llm import ScriptedLLM

    assert embedder.is_word("roll") and not embedder.is_word("certbot")
    docs = {"tls.md": ("# TLS certificates\n\nThe mail server reads its certificate from "
                       "smtpd_tls_cert_file. You can sign your own certificate or get a free "
                       "certificate from a public certificate authority, a wildcard "
                       "certificate too. Rotate logs with "
                       "logrotate every week.\n"),
            "other.md": "# Queue\n\nThe queue manager runs every five minutes.\n"}
    Ingestor(settings, "tls", embedder=embedder).run(make_folder(docs))
    kb = KnowledgeBase(settings, "tls")

    def ask(question: str):
        events = list(Agent(ScriptedLLM(["It is in the sources [1]."] * 5), [kb],
                            AgentConfig(mode="rag", tools="full")).run(question))
        assert isinstance(events[-1], Final)
        return events[-1].result

    refused = ask("How do I get a free certificate with certbot for the mail server?")
    assert refused.abstained and "never mentions “certbot”" in refused.answer
    # guards: a tool the pages mention, an ordinary word in the same place, a unit, a
    # plural whose singular the pages hold
    for question in ["How often do I rotate logs with logrotate?",
                     "How do I get a free certificate with ease for the mail server?",
                     "How often is the queue run, with milliseconds?",
                     "Can the server read certificates with wildcards?"]:
        assert "never mentions" not in ask(question).answer, question


def test_a_users_wording_after_in_or_on_is_no_tool_name():
    from kbagent.agent.answer.phrasing import tool_names

    assert tool_names("Can I mount the data volume in read-only mode?") == []
    assert tool_names("What happens to queued jobs on shutdown?") == []
    assert tool_names("how do I get the counters into prometheus?") == ["prometheus"]


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


def test_the_plural_of_an_acronym_is_the_acronym_the_document_writes(tmp_path: Path):
    text = ("# Frob history\n\nIn June 2007, Petra Valk from Hat Works helped us to create "
            "RPM files for Fedora.\n\nIn July 2007, Anders Pohl added BSD ports files.\n")
    final = ask_one_file(tmp_path, "history.md", text,
                 "Who from Hat Works helped create the first Fedora RPMs of frob?")
    assert not final.result.abstained
    assert final.result.short_answer.startswith("Petra Valk")


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


def test_a_question_about_the_release_itself_needs_it_in_the_pages() -> None:
    assert _silent("What changed in Frobd 3.7 about the session cache?") is not None


def test_a_name_in_the_story_before_the_question_is_no_reason_to_refuse() -> None:
    assert _silent("We're in Germany and our sessions vanish too soon. How long does "
                   "Frobd keep a session in its cache by default?") is None


def test_an_acronym_in_the_story_is_not_what_is_asked() -> None:
    pages = {"prefs.md": "You can also pass preference names to Frob and TFrob on the "
                         "command line. For example, the gui.prepend_window_title can be "
                         "used to differentiate between different instances of Frob."}
    q = ("I run two copies of Frob side by side, one on the office LAN and one on the "
         "DMZ, and I keep mixing up their windows. Which preference can I pass with -o "
         "to label each one?")
    assert silent_reason(pages, q) is None
    # an acronym in the sentence that asks is still looked for
    assert silent_reason(pages, "Which preference labels the DMZ copy of Frob?") is not None


def test_a_part_about_a_thing_never_mentioned_is_not_answered(tmp_path: Path) -> None:
    page = ("# Platforms\n\nFrob supports macOS 10.13 and later. Frob 2.6 was the last "
            "release branch to support Mac OS X 10.6 and 10.7. Frob 1.8 was the last "
            "release branch to support Mac OS X on PowerPC.\n")
    final = ask_one_file(tmp_path, "platforms.md", page,
                         "Is there a native build of Frob for Quantum Silicon Macs, and "
                         "since which version?")
    assert final.result.abstained, final.result.answer
    assert "never mentions" in final.result.answer
