"""Follow-up questions in a conversation (issue 45, finding 10): the earlier turns are
context for the search and the model's prompt, never part of the question the answer is
written, checked and quoted from, nor of the answer. A real KB of a few project pages,
the real session and agent, the scripted LLM for the model's words."""

from __future__ import annotations

import pytest

from kbagent.agent.events import Action, Final, Observation
from kbagent.history import History
from kbagent.kb.ingest import Ingestor
from kbagent.session import Session
from kbagent.settings import Settings
from tests.scripted_kbagent import Forever
from tests.scripted_llm import ScriptedLLM

PROJECTS = {
    "Heron": ("Northwind Freight", "2 June 2025", "1,200,000 euros"),
    "Kestrel": ("Bluewater Retail", "14 October 2025", "800,000 euros"),
    "Osprey": ("Garnet Health", "3 March 2026", "2,500,000 euros"),
    "Plover": ("Lumen Bank", "9 September 2025", "450,000 euros"),
    "Tern": ("Cobalt Mining", "21 January 2026", "3,100,000 euros"),
    "Wren": ("Harbor Foods", "30 November 2025", "610,000 euros"),
}
Q1 = "Who is the pilot customer for Project Heron?"
Q2 = "And when does it launch?"
Q3 = "What is its budget?"
GLUE = "follow-up to the previous question"


def page(name: str, customer: str, launch: str, budget: str) -> str:
    return (f"# Project {name}\n\nProject {name} is one of the programmes of the "
            "operations group.\n\n## Pilot customer\n\n"
            f"The pilot customer for Project {name} is {customer}.\n\n## Launch\n\n"
            f"Project {name} launches on {launch}.\n\n## Budget\n\n"
            f"The budget of Project {name} is {budget}.\n")


@pytest.fixture
def session(kb_home, monkeypatch, make_folder, embedder):
    # the answer as a user gets it: grounded, the harness stating the short answer
    monkeypatch.delenv("KBAGENT_GROUNDED")
    monkeypatch.setenv("KBAGENT_SHORT_ANSWER", "harness")
    settings = Settings.load()
    folder = make_folder({f"projects/{name.lower()}.md": page(name, *facts)
                          for name, facts in PROJECTS.items()})
    Ingestor(settings, "docs", embedder=embedder).run(folder)
    llm = ScriptedLLM(Forever(["It is in the sources."]))
    s = Session(settings, ["docs"], llm=llm)
    s.open_kbs()
    yield s
    s.close()


def ask(session: Session, question: str, previous: tuple[str, str] | None = None):
    events = list(session.ask(question, previous=previous))
    assert isinstance(events[-1], Final)
    return events, events[-1].result


def first_search(events) -> tuple[str, list[str]]:
    """The query of the run's first search and the paths it found, best first."""
    action = next(e for e in events if isinstance(e, Action) and e.tool == "kb_search")
    obs = next(e for e in events if isinstance(e, Observation) and e.step == action.step)
    return action.args["query"], [src.path for src in obs.sources]


def test_three_turns_never_paste_earlier_turns_into_the_answer(session):
    _, r1 = ask(session, Q1)
    _, r2 = ask(session, Q2, previous=(r1.question, r1.answer))
    _, r3 = ask(session, Q3, previous=(r2.question, r2.answer))
    assert "Northwind Freight" in r1.answer
    for earlier, result in ((r1, r2), (r2, r3)):
        assert GLUE not in result.answer and "answered:" not in result.answer
        assert earlier.question not in result.answer  # no earlier question echoed
        assert earlier.answer.strip() not in result.answer  # no earlier answer nested
    assert Q1 not in r3.answer
    # the follow-ups are answered from the subject the first turn named
    assert "2 June 2025" in r2.answer and "1,200,000 euros" in r3.answer
    # no growth from turn to turn: each answer is about as long as the first
    assert len(r3.answer) < 2 * max(len(r1.answer), len(r2.answer))


def test_a_follow_up_searches_the_earlier_subject_and_keeps_the_users_question(session):
    _, r1 = ask(session, Q1)
    events, r2 = ask(session, Q2, previous=(r1.question, r1.answer))
    query, paths = first_search(events)
    assert query.startswith(Q2) and "Project Heron" in query and "Northwind" not in query
    assert paths[0] == "projects/heron.md"
    # the result and the history keep the question as the user asked it
    assert r2.question == Q2
    history = History(session.settings.home)
    history.add(r2, model="scripted")
    assert [e.question for e in history.list()] == [Q2]
    # a third turn that names nothing still searches the subject two turns back
    events, _ = ask(session, Q3, previous=(r2.question, r2.answer))
    query, paths = first_search(events)
    assert "Project Heron" in query and paths[0] == "projects/heron.md"


def test_the_model_is_shown_the_previous_turn_apart_from_the_question(session):
    _, r1 = ask(session, Q1)
    llm = session.load_llm()
    llm.calls.clear()
    ask(session, Q2, previous=(r1.question, r1.answer))
    prompts = [m.content for call in llm.calls for m in call["messages"] if m.role == "user"]
    assert prompts, "the scripted model was asked"
    for text in prompts:
        assert GLUE not in text
        assert f"Previous question: {Q1}" in text
        assert f"Question: {Q2}\n" in text or text.endswith(f"Question: {Q2}")


def test_a_follow_up_that_names_its_subject_searches_its_own_words(session):
    _, r1 = ask(session, Q1)
    events, _ = ask(session, "When does Project Kestrel launch?",
                    previous=(r1.question, r1.answer))
    query, paths = first_search(events)
    assert query == "When does Project Kestrel launch?" and paths[0] == "projects/kestrel.md"


def test_follow_up_queries_and_prompts():
    from kbagent.agent.run.conversation import Conversation, follow_up_query, in_conversation

    first = Conversation().then(Q1, "Northwind Freight [1].")
    assert follow_up_query(Q2, None) == Q2
    assert follow_up_query(Q2, first) == f"{Q2} Project Heron"
    assert follow_up_query("When does Project Wren launch?", first) == \
        "When does Project Wren launch?"
    # the subject of the latest turn that named one, past a turn that named nothing
    assert follow_up_query(Q3, first.then(Q2, "2 June 2025 [2].")) == f"{Q3} Project Heron"
    # a previous question that names nothing: its content words
    plain = Conversation().then("what is the retry backoff?", "200 ms [1].")
    assert "retry" in follow_up_query("and the cap?", plain)
    assert in_conversation("Question: x", None) == "Question: x"
    shown = in_conversation("Question: x", first)
    assert shown.endswith("\n\nQuestion: x") and "[1]" not in shown
    assert shown.startswith(f"Previous question: {Q1}\nPrevious answer: Northwind Freight.")
