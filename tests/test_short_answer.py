"""The short answer (agent/harness/short.py, agent/harness/short_turn.py): the fact in a few
words, copied from one source sentence, leads the answer; ``short_answer`` carries it."""

from __future__ import annotations

import pytest

from kbagent.agent.answer.focus import focus_of
from kbagent.agent.events import Final
from kbagent.agent.harness.short import short_answer, span_grammar, spans
from kbagent.agent.kinds import ShortAnswerMode
from kbagent.agent.run.loop import Agent, AgentConfig
from kbagent.kb.knowledge_base import KnowledgeBase
from tests.scripted_llm import ScriptedLLM


@pytest.mark.parametrize(("question", "sentence", "short"), [
    ("How many days of PTO do employees get?",
     "Full-time employees accrue 20 days of PTO per year, prorated in the first year.",
     "20 days"),
    ("What is the default value of maxsize in lru_cache?",
     "lru_cache(user_function, maxsize=128, typed=False)", "128"),
    ("What is the default value of maxsize in lru_cache?",
     "If maxsize is set to None, the LRU feature is disabled; it defaults to 128.", "128"),
    ("Which exception does json.loads raise on invalid input?",
     "If the data being deserialized is not a valid JSON document, a JSONDecodeError will "
     "be raised.", "JSONDecodeError"),
    ("What shell does subprocess use when shell=True?",
     "On POSIX with shell=True, the shell defaults to /bin/sh.", "/bin/sh"),
    ("When was the Kestrel Gateway launched?",
     "Kestrel Gateway launched on March 3, 2024 after a beta.", "March 3, 2024"),
    ("How long is the retry backoff cap?",
     "The backoff doubles each attempt and is capped at 8 seconds.", "8 seconds"),
    ("What percentage of tickets were resolved within SLA?",
     "In Q3, 94.5% of tickets were resolved within SLA.", "94.5%"),
    ("Who is the on-call lead for payments?",
     "The payments on-call lead is Maria Lopez, backed up by Sam Ortiz.", "Maria Lopez"),
    ("Which is older, the Eiffel Tower or Big Ben?", "Big Ben was completed in 1859.",
     "Big Ben"),
    ("Does the free tier include SSO?", "SSO is not included in the free tier.", "No"),
    ("Is SSO included in the business plan?", "The business plan includes SSO and audit "
     "logs.", "Yes"),
    ("How many databases can be attached by default?",
     "The number of attached databases is limited to MAX_ATTACHED which is set to 10 by "
     "default.", "10"),
    # a version is one whole token, not its last two numbers
    ("Since which release can a table have generated columns?",
     "Version 3.31.0 is the first release with generated columns.", "3.31.0"),
    # the name the sentence says the fact is not comes second
    ("What storage class does a field declared as SHORT TEXT get?",
     'Note that a field declared as "SHORT TEXT" would give STRING class, not BINARY class, '
     'due to the "TEXT" at the end of "SHORT TEXT".', "STRING"),
    # an ordinary word that starts a clause is no name; an identifier and a quoted
    # literal are, the literal whole even where it holds the question's words
    ("What export-compliance code do I declare for the product?",
     "Export rules: All shipments of the product are classified as ECN42.", "ECN42"),
    ("Where does the engine remember the largest id it handed out?",
     "The engine keeps the largest id in an internal table named id_sequence.",
     "id_sequence"),
    ("What header string does every archive file begin with?",
     'Every archive file starts with the string "Archive format 2" and a nul byte.',
     "Archive format 2"),
    # the counted noun after an adjective, and the result a sum states
    ("How many paid days off does a US employee get?",
     "20 PTO days + 11 company holidays + 2 recharge days = 33 paid days off.",
     "33 paid days"),
    # a default's value ends with its sentence; "X is the new default"; a definition
    # entry about its term ("This is the default ...") answers with the term
    ("What is the default value of store.bigBlob, in MiB?",
     "store.bigBlob: Blobs larger than this are kept apart. Default is 256 MiB. Common unit "
     "suffixes are supported.", "256 MiB"),
    ("Which sync.mode setting has been the default since release 3?",
     "This used to be the default, but not since release 3 (eager is the new default).",
     "eager"),
    ("Which join strategy does the planner use by default for more than two tables?",
     "hashjoin: This is the default join strategy when joining more than two tables.",
     "hashjoin"),
])
def test_the_span_of_the_kind_asked_for(question: str, sentence: str, short: str) -> None:
    assert short_answer(focus_of(question), sentence) == short


def test_never_a_span_of_the_question_and_none_for_explanations() -> None:
    # the year of the question is not its answer
    f = focus_of("How many offices did Kestrel open in 2025?")
    assert short_answer(f, "In 2025 Kestrel opened 3 offices.") == "3 offices"
    assert short_answer(focus_of("Why did latency increase in Q3?"),
                        "Latency rose 40% in Q3 because of cache misses.") is None
    assert spans(focus_of("When was the Kestrel Gateway launched?"),
                 "The gateway routes requests.") == []


def test_span_grammar_allows_exactly_the_candidates() -> None:
    g = span_grammar(["128", 'say "hi"'])
    assert g == 'root ::= "128" | "say \\"hi\\""\n'


@pytest.fixture
def kb(sample_settings):
    return KnowledgeBase(sample_settings, "sample")


def _ask(kb, question: str, replies: list[str], mode: ShortAnswerMode):
    llm = ScriptedLLM(list(replies))
    config = AgentConfig(mode="rag", tools="full", short_answer=mode)
    events = list(Agent(llm, [kb], config).run(question))
    assert isinstance(events[-1], Final)
    return events[-1].result, llm


def test_the_answer_begins_with_the_short_answer_cited(kb) -> None:
    result, llm = _ask(kb, "How many weeks of paid parental leave do employees get?",
                       ["Employees get paid parental leave [1]."], ShortAnswerMode.HARNESS)
    assert result.short_answer.startswith("16 weeks [")
    assert result.answer.startswith(result.short_answer + ".")
    n = int(result.short_answer.split("[")[1].rstrip("]"))
    assert result.reference(n) is not None
    quoted = result.sentences[1]  # the source sentence that says it, quoted, same badge
    assert quoted.cited == [n] and "says:" in quoted.text and "16 weeks" in quoted.text
    assert result.to_dict()["short_answer"] == result.short_answer
    assert len(llm.calls) == 1  # harness: no call for the short answer


def test_the_model_picks_among_spans_under_a_grammar(kb) -> None:
    question = "What was Kestrel's headcount at the end of Q2 2026?"
    harness, _ = _ask(kb, question, ["It is in the sources [1]."], ShortAnswerMode.HARNESS)
    assert harness.short_answer.startswith("173 [")
    # the model picks another span of the same sentence: its pick is the short answer
    result, llm = _ask(kb, question, ["182", "Headcount was 182 [1]."], ShortAnswerMode.PICK)
    grammar = llm.calls[0]["grammar"]
    assert grammar.startswith("root ::= ") and '"173"' in grammar and '"182"' in grammar
    assert "Question: " + question in llm.calls[0]["messages"][-1].content
    assert result.short_answer.startswith("182 [")
    assert result.usage.llm_calls == 2  # the pick, then the answer turn


def test_a_written_short_answer_is_kept_only_when_the_sources_hold_it(kb) -> None:
    question = "What was Kestrel's headcount at the end of Q2 2026?"
    result, llm = _ask(kb, question, ["about 170 people", "Headcount was 173 [1]."],
                       ShortAnswerMode.WRITE)
    assert "Short answer:" in llm.calls[0]["messages"][-1].content
    assert result.short_answer.startswith("173 [")  # 170 is in no source: the span
    result, _ = _ask(kb, question, ["Q2: 173 [4]", "Headcount was 173 [1]."],
                     ShortAnswerMode.WRITE)
    assert result.short_answer.startswith("Q2: 173 [")  # written, checked, re-cited
    result, _ = _ask(kb, question, ["173 people", "Headcount was 173 [1]."],
                     ShortAnswerMode.WRITE)
    assert result.short_answer.startswith("173 [")  # "people": a word of its own


def test_auto_lets_the_bundled_model_leave_it_to_the_harness_and_others_write() -> None:
    from kbagent.agent.harness.short_turn import effective_mode
    from kbagent.agent.llm.llama import BUNDLED_FILE

    bundled = ScriptedLLM([], name=BUNDLED_FILE)
    assert effective_mode(ShortAnswerMode.AUTO, bundled) is ShortAnswerMode.HARNESS
    assert effective_mode(ShortAnswerMode.AUTO, ScriptedLLM([])) is ShortAnswerMode.WRITE
    assert effective_mode(ShortAnswerMode.PICK, bundled) is ShortAnswerMode.PICK
