"""The model-authored answer policy end to end (issue 44), over a real KB with the
scripted model standing in for the model's decisions: the model's own reply is the
answer the user gets, word for word; a sentence whose figure no cited chunk holds is
sent back once with the reason and, if it comes back the same, shown flagged; the model
may ask for another search in other words; the draft streams as the step's thought."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from kbagent.agent.answer.claims import NOT_IN_KB
from kbagent.agent.events import Action, Final, ThoughtDelta
from kbagent.agent.llm.base import Message
from kbagent.agent.run.authored import PASSAGES, SOURCES, ranked_sources
from kbagent.agent.run.decline import ANSWER, DECLINE, GRAMMAR
from tests.agent_runs import ask_one_file, cite
from tests.scripted_llm import Reply, ScriptedLLM

POOL = """# Connection pools

Pool limits are set with `httpx.Limits`:

* `max_keepalive_connections`, number of allowable keep-alive connections, or `None` to
  always allow. (Defaults 20)
* `max_connections`, maximum number of allowable connections, or `None` for no limits.
  (Default 100)

# Retries

Retries use exponential backoff: the first retry waits 500ms, each later retry doubles
the wait, and the wait is capped at 120 seconds.
"""
QUESTION = "How many keep-alive connections does the pool keep unless told otherwise?"


def citing(template: str, phrase: str) -> Callable[[list[Message]], str]:
    """A reply that cites, as ``{n}``, the source whose text holds ``phrase`` (the
    search decides the numbers)."""
    def reply(messages: list[Message]) -> str:
        blocks = re.findall(r"^\[(\d+)\] [^\n]*, lines? [^\n]*:\n(.*?)(?=\n\n|\Z)",
                            messages[-1].content, re.S | re.M)
        return template.format(n=next(n for n, text in blocks if phrase in text))
    return reply


def _ask(tmp_path: Path, replies: list[Reply], question: str = QUESTION
         ) -> tuple[Final, ScriptedLLM]:
    llm = ScriptedLLM(list(replies))
    final = ask_one_file(tmp_path, "pools.md", POOL, question, llm=llm, answer_policy="model")
    return final, llm


def _user_messages(llm: ScriptedLLM) -> list[str]:
    return [m.content for call in llm.calls for m in call["messages"] if m.role == "user"]


def test_the_models_own_answer_reaches_the_user_as_written(tmp_path: Path) -> None:
    reply = ("Unless told otherwise, the pool keeps at most 20 keep-alive connections [1]. "
             "Set `max_keepalive_connections` to change it [1].")
    final, llm = _ask(tmp_path, [reply])
    assert final.result.answer == reply
    assert len(llm.calls) == 1
    assert [s.supported for s in final.result.sentences] == [True, True]
    assert final.result.unsupported == []
    # the model was shown the chunk with its location and the best passage by itself
    [prompt] = _user_messages(llm)
    assert "pools.md, lines" in prompt and "(Defaults 20)" in prompt
    assert prompt.rstrip().endswith(f"Question: {QUESTION}")


def test_a_correct_paraphrase_is_kept_as_written(tmp_path: Path) -> None:
    reply = "It doubles from 500 ms until it reaches the 2-minute cap [{n}]."
    final, llm = _ask(tmp_path, [citing(reply, "500ms")],
                      "How long does a retry wait grow to at most?")
    n = final.result.sentences[0].cited[0]
    assert final.result.answer == reply.format(n=n)
    # the router would give this question the ReAct loop; the model policy takes one
    # retrieval and lets the model ask for more
    assert final.result.mode == "rag" and len(llm.calls) == 1


def test_the_react_loop_ends_in_the_authored_answer(tmp_path: Path) -> None:
    """--mode agent: the model's step that begins its Final Answer ends the loop, and the
    answer is composed over the evidence."""
    reply = "It doubles from 500 ms until it reaches the 2-minute cap [{n}]."
    llm = ScriptedLLM(["Thought: The results hold it.\nFinal Answer: It doubles.",
                       citing(reply, "500ms")])
    final = ask_one_file(tmp_path, "pools.md", POOL, "How long does a retry wait grow to?",
                         llm=llm, answer_policy="model", mode="agent")
    assert final.result.answer == reply.format(n=final.result.sentences[0].cited[0])
    assert len(llm.calls) == 2 and llm.calls[0]["grammar"]
    assert final.result.unsupported == []


def test_a_figure_from_nowhere_is_sent_back_once_then_flagged(tmp_path: Path) -> None:
    wrong = "The pool keeps 5 keep-alive connections by default [1]."
    final, llm = _ask(tmp_path, [wrong, wrong, "never asked a third time"])
    assert len(llm.calls) == 2
    feedback = llm.calls[1]["messages"][-1]
    assert feedback.role == "user"
    assert f'"{wrong}"' in feedback.content
    assert "the figure 5 is in none of its cited sources [1]" in feedback.content
    assert Message("assistant", wrong) in llm.calls[1]["messages"]
    # shown as the model wrote it, flagged, never rewritten or removed
    assert final.result.answer == wrong
    assert final.result.unsupported == [wrong]
    assert [s.supported for s in final.result.sentences] == [False]


def test_a_corrected_reply_replaces_the_draft(tmp_path: Path) -> None:
    right = "It keeps 20 keep-alive connections by default [1]."
    final, llm = _ask(tmp_path, ["It keeps 5 [1].", right])
    assert len(llm.calls) == 2
    assert final.result.answer == right
    assert final.result.unsupported == []


@pytest.mark.parametrize("asking", [
    "SEARCH: exponential backoff first retry wait",
    # the protocol's line after a sentence saying it found nothing: still a request, and
    # never a sentence of the answer
    "The sources do not say when it retries. SEARCH: exponential backoff first retry wait",
])
def test_the_model_may_search_again_in_other_words(tmp_path: Path, asking: str) -> None:
    right = "The first retry waits 500ms [{n}]."
    # the words of the question are not the sources': the harness's test doubts the
    # evidence, and the model chooses to go on, then asks for a search in other words
    # (still doubted after the search: the model again chooses to go on)
    final, llm = _ask(tmp_path, [ANSWER, asking, ANSWER, citing(right, "500ms")],
                      "After a failure, how long before the client tries once more?")
    assert len(llm.calls) == 4 and llm.calls[0]["grammar"] == GRAMMAR
    assert final.result.answer == right.format(n=final.result.sentences[0].cited[0])
    queries = [s.args["query"] for s in final.result.steps
               if s.action == "kb_search" and s.args]
    assert queries[-1] == "exponential backoff first retry wait"
    # the second prompt is built over what both searches gathered
    assert "500ms" in _user_messages(llm)[-1]


def test_a_search_request_with_no_search_left_abstains(tmp_path: Path) -> None:
    asking = "Nothing here says it.\nSEARCH: proxy protocols supported"
    # each time the evidence is doubted the model chooses to go on (ANSWER), then asks
    final, llm = _ask(tmp_path, [ANSWER, asking] * 3 + ["never asked a fourth time"],
                      "Which proxy protocols does the pool support?")
    assert len(llm.calls) == 6  # two searches asked for, then it must answer
    assert final.result.answer == NOT_IN_KB
    assert final.result.abstained and "SEARCH" not in final.result.answer


def test_a_cited_answer_followed_by_a_search_request_is_the_answer(tmp_path: Path) -> None:
    right = "It keeps 20 keep-alive connections by default [1]."
    final, llm = _ask(tmp_path, [right + "\nSEARCH: keep-alive default", "never asked"])
    assert len(llm.calls) == 1
    assert final.result.answer == right


def test_when_the_sources_do_not_hold_it_the_answer_says_so(tmp_path: Path) -> None:
    final, llm = _ask(tmp_path, [ANSWER, NOT_IN_KB],
                      "Which proxy protocols does the pool support?")
    assert final.result.answer == NOT_IN_KB
    assert final.result.abstained
    assert len(llm.calls) == 2


def test_doubted_evidence_makes_declining_the_models_explicit_choice(tmp_path: Path) -> None:
    """When the harness's test finds the evidence may not answer the question, the model
    is told why and must reply with one of two words before it writes anything: here it
    declines, and that is the answer (no compose prompt follows)."""
    question = "Which proxy protocols does the pool support?"
    final, llm = _ask(tmp_path, [DECLINE], question)
    assert len(llm.calls) == 1 and llm.calls[0]["grammar"] == GRAMMAR
    [prompt] = _user_messages(llm)
    assert f"Question: {question}\n\nBefore you answer: a check of the knowledge base " \
           "found that no passage found covers what the question asks." in prompt
    assert final.result.answer == NOT_IN_KB and final.result.abstained
    assert "the model chose" not in final.result.answer
    [step] = [s for s in final.result.steps if s.thought.endswith(DECLINE)]
    assert step.thought.startswith("The sources may not answer this:")
    # a question the evidence answers is never asked to choose
    (tmp_path / "again").mkdir()
    _, llm = _ask(tmp_path / "again", ["It keeps 20 keep-alive connections by default [1]."])
    assert [c["grammar"] for c in llm.calls] == [None]


def test_a_question_of_two_hops_is_judged_after_the_model_searched_again(
        tmp_path: Path) -> None:
    """A question comparing two things is answered from two documents, which one
    retrieval seldom finds: the model composes first (here it asks for a search), and
    only then, over what both searches gathered, is it asked to choose."""
    question = "Which pool keeps more connections, Roughtime or Chrony?"
    final, llm = _ask(tmp_path, ["SEARCH: Chrony connections", DECLINE], question)
    assert [c["grammar"] for c in llm.calls] == [None, GRAMMAR]
    assert "never mentions “Roughtime”" in _user_messages(llm)[-1]
    assert final.result.answer == NOT_IN_KB and final.result.abstained


def test_a_name_the_kb_never_mentions_is_the_reason_the_model_is_given(
        tmp_path: Path) -> None:
    final, llm = _ask(tmp_path, [DECLINE], "Does the pool keep Roughtime connections?")
    assert "found that the knowledge base never mentions “Roughtime”." in \
        _user_messages(llm)[0]
    assert final.result.abstained


def test_the_draft_streams_as_the_steps_thought(tmp_path: Path) -> None:
    from kbagent.agent.run.loop import Agent, AgentConfig
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.settings import Settings

    src = tmp_path / "docs"
    src.mkdir()
    (src / "pools.md").write_text(POOL, encoding="utf-8")
    settings = Settings.load(home=tmp_path / "home")
    Ingestor(settings, "docs", embedder=load_embedder()).run(src)
    reply = "It keeps 20 keep-alive connections by default [1]."
    agent = Agent(ScriptedLLM([reply]), [KnowledgeBase(settings, "docs")],
                  AgentConfig(mode="auto", answer_policy="model"))
    events = list(agent.run(QUESTION))
    thought = "".join(e.text for e in events if isinstance(e, ThoughtDelta))
    assert reply in thought
    assert any(isinstance(e, Action) and e.tool == "kb_search" for e in events)
    assert isinstance(events[-1], Final) and events[-1].result.answer == reply


def test_a_reply_that_gives_up_does_not_replace_a_draft_that_stood_better(
        tmp_path: Path) -> None:
    draft = ("It keeps 20 keep-alive connections by default [{n}]. "
             "It keeps 7 when idle [{n}].")
    final, llm = _ask(tmp_path, [citing(draft, "(Defaults 20)"), NOT_IN_KB])
    assert len(llm.calls) == 2
    n = final.result.sentences[0].cited[0]
    assert final.result.answer == draft.format(n=n)
    assert [s.supported for s in final.result.sentences] == [True, False]


def test_a_table_row_quoted_as_the_passages_list_shows_it_passes(tmp_path: Path) -> None:
    table = ("# Margin bridge\n\n| Driver | Q3 impact ($K) | Margin impact |\n|---|---|---|\n"
             "| Q3 2026 gross margin | +586 net | 66.2% |\n")
    llm = ScriptedLLM([citing('It was 66.2%: "Driver: Q3 2026 gross margin; Margin impact: '
                              '66.2%" [{n}].', "66.2%")])
    final = ask_one_file(tmp_path, "bridge.md", table, "What was the Q3 2026 gross margin?",
                         llm=llm, answer_policy="model")
    assert len(llm.calls) == 1
    assert final.result.unsupported == []


def test_when_asking_again_does_not_fit_the_checked_draft_stands(tmp_path: Path) -> None:
    from kbagent.agent.llm.base import ContextFull

    def full(messages: list[Message]) -> str:
        raise ContextFull("the prompt does not fit")

    draft = "It keeps 20 keep-alive connections by default [{n}]. It keeps 7 idle [{n}]."
    final, _ = _ask(tmp_path, [citing(draft, "(Defaults 20)"), full])
    n = final.result.sentences[0].cited[0]
    assert final.result.status == "answered"
    assert final.result.answer == draft.format(n=n)
    assert [s.supported for s in final.result.sentences] == [True, False]


def test_a_follow_up_shows_the_previous_turn_and_ranks_by_its_subject(tmp_path: Path) -> None:
    from kbagent.agent.run.conversation import Conversation
    from kbagent.agent.run.loop import Agent, AgentConfig
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.settings import Settings

    src = tmp_path / "docs"
    src.mkdir()
    (src / "pools.md").write_text(POOL, encoding="utf-8")
    settings = Settings.load(home=tmp_path / "home")
    Ingestor(settings, "docs", embedder=load_embedder()).run(src)
    llm = ScriptedLLM([citing("It is capped at 120 seconds [{n}].", "500ms")])
    agent = Agent(llm, [KnowledgeBase(settings, "docs")],
                  AgentConfig(mode="rag", answer_policy="model"))
    context = Conversation().then("How does the retry backoff work?", "It doubles [1].")
    final = [e for e in agent.run("And its cap?", context=context) if isinstance(e, Final)][-1]
    prompt = llm.calls[0]["messages"][-1].content
    assert prompt.startswith("Previous question: How does the retry backoff work?")
    assert final.result.answer.startswith("It is capped at 120 seconds [")
    assert final.result.question == "And its cap?"


def test_a_reply_cut_at_its_token_limit_is_told_so_and_its_cut_sentence_flagged(
        tmp_path: Path) -> None:
    """A reply that runs past ``final_max_tokens`` ends mid-sentence: the cut sentence
    fails the check as cut off, the model is asked for a shorter answer, and a cut that
    remains is shown as written, flagged."""
    right = "It keeps 20 keep-alive connections by default [1]. "
    rambling = right + "Set `max_keepalive_connections` to change it [1]. " * 60
    final, llm = _ask(tmp_path, [rambling, right.strip()])
    assert len(llm.calls) == 2
    said = llm.calls[1]["messages"][-1].content
    assert "it is cut off: the reply ran past its limit of" in said
    assert final.result.answer == right.strip()
    # cut again: shown as written up to the cut, the cut sentence flagged
    (tmp_path / "again").mkdir()
    final, llm = _ask(tmp_path / "again", [rambling, rambling])
    last = final.result.sentences[-1]
    assert last.supported is False and not last.text.rstrip().endswith(".")
    assert final.result.sentences[0].supported is True
    assert final.result.unsupported == [last.text.strip()]


NOTE = "The knowledge base never mentions:"


@pytest.mark.parametrize(("question", "never"), [
    # the subject the KB never mentions is named to the model, with the possessive off
    ("Does the pool keep Google's Roughtime connections?", "“Google”, “Roughtime”"),
    # a plural whose singular is there is mentioned ("pools": "pool"), and stop words,
    # contractions and short words are not words to check
    ("Why don't pools keep Roughtime connections by default?", "“Roughtime”"),
])
def test_the_model_is_told_the_questions_words_the_kb_never_mentions(
        tmp_path: Path, question: str, never: str) -> None:
    final, llm = _ask(tmp_path, [ANSWER, NOT_IN_KB], question)
    prompt = _user_messages(llm)[-1]  # the compose prompt, after the choice to go on
    assert f"{NOTE} {never}." in prompt
    assert prompt.rstrip().endswith(f"Question: {question}")
    # the model decides: its reply is the answer
    assert final.result.answer == NOT_IN_KB and final.result.abstained


def test_no_note_when_the_kb_mentions_every_word(tmp_path: Path) -> None:
    _, llm = _ask(tmp_path, ["It keeps 20 keep-alive connections by default [1]."],
                  "What is the pool's default number of keep-alive connections?")
    assert NOTE not in _user_messages(llm)[0]


def test_a_word_only_a_restricted_document_holds_is_never_mentioned_for_others(
        tmp_path: Path) -> None:
    """The note is judged on what the asker may read: a word only in a document the
    asker may not read is one the knowledge base never mentions, for that asker."""
    from kbagent.agent.run.loop import Agent, AgentConfig
    from kbagent.kb.access import Principal
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.settings import Settings

    src = tmp_path / "docs"
    src.mkdir()
    (src / "pools.md").write_text(POOL, encoding="utf-8")
    (src / "plans.md").write_text("---\naccess: [executives]\n---\n# Plans\n\n"
                                  "The pool will speak Roughtime next year.\n", encoding="utf-8")
    settings = Settings.load(home=tmp_path / "home")
    Ingestor(settings, "docs", embedder=load_embedder()).run(src)
    question = "Does the pool keep Roughtime connections?"
    prompts = []
    for principal in (Principal(), Principal(user="ann", groups=frozenset({"executives"}))):
        llm = ScriptedLLM([DECLINE] if principal.user is None else [NOT_IN_KB])
        agent = Agent(llm, [KnowledgeBase(settings, "docs")],
                      AgentConfig(mode="rag", answer_policy="model"), principal=principal)
        list(agent.run(question))
        prompts.append(_user_messages(llm)[0])
    anonymous, executive = prompts
    assert f"{NOTE} “Roughtime”." in anonymous and "next year" not in anonymous
    assert NOTE not in executive and "next year" in executive


def test_a_name_the_kb_never_mentions_does_not_ride_along_on_a_cited_figure(
        tmp_path: Path) -> None:
    """The question's own names may be restated beside a figure the cited chunk holds,
    but not a name no document mentions: that sentence states what no source does. It
    goes back once with the reason; a reply that then says the KB does not say stands."""
    question = "How many Roughtime connections does the pool keep by default?"
    claim = "The pool keeps 20 Roughtime connections by default [{n}]."
    final, llm = _ask(tmp_path, [ANSWER, citing(claim, "(Defaults 20)"), NOT_IN_KB], question)
    assert len(llm.calls) == 3
    said = llm.calls[2]["messages"][-1].content
    assert ("“Roughtime” is in none of its cited sources [" in said
            and "no document of the knowledge base mentions it" in said)
    assert final.result.answer == NOT_IN_KB and final.result.abstained
    # a name the KB does mention rides along as before ("keep-alive" is in the chunk's
    # words, `max_keepalive_connections` only in the question)
    (tmp_path / "again").mkdir()
    ok = "`max_keepalive_connections` keeps 20 connections by default [{n}]."
    final, llm = _ask(tmp_path / "again", [ANSWER, citing(ok, "(Defaults 20)")],
                      "How many connections does `max_keepalive_connections` keep?")
    assert len(llm.calls) == 2 and final.result.unsupported == []


def test_a_draft_stating_a_name_no_document_mentions_does_not_outstand_giving_up(
        tmp_path: Path) -> None:
    """A draft with one sentence the check passes and one that states a name of the
    question no document mentions: the reply that then says the KB does not say is
    shown (a draft that failed for another reason would stand: test_a_reply_that_gives_
    up_does_not_replace_a_draft_that_stood_better)."""
    question = "Does the pool keep Roughtime connections alive by default?"
    draft = ("The pool keeps 20 keep-alive connections by default [{n}]. "
             "Roughtime connections are kept alive the same way [{n}].")
    final, llm = _ask(tmp_path, [ANSWER, citing(draft, "(Defaults 20)"), NOT_IN_KB], question)
    assert len(llm.calls) == 3
    assert final.result.answer == NOT_IN_KB and final.result.abstained


KB_TEXT = ("Peter built the first Fedora RPM. Perl compatible regular expressions are "
           "supported. The pool keeps 20 connections.")


def _never(question: str, vocabulary: set[str] | None = None) -> list[str]:
    from kbagent.agent.run.authored import unmentioned_words

    words = None if vocabulary is None else (lambda w: w in vocabulary)
    return unmentioned_words(question, [], lambda w: w.lower() in KB_TEXT.lower(), words)


@pytest.mark.parametrize(("question", "never"), [
    ("Does the pool support Google's Roughtime and WireGuard?", ["Google", "Roughtime",
                                                                "WireGuard"]),
    # a plural whose singular is there; a compound each of whose parts is there
    ("Who built the first Fedora RPMs?", []),
    ("Is a Perl-compatible regex library supported?", []),
    ("Does Systemd-Timesyncd run?", ["Systemd-Timesyncd"]),
    # plain lower-case words, said in the asker's story, are no names (nor, so, is a
    # name written in lower case: the shape of a word is all that is read)
    ("We ship overseas for export-compliance. What does the pool keep?", []),
    ("Does systemd-timesyncd run?", []),
    # identifiers and versions are names, whatever their case
    ("What is wal_checkpoint_timeout in v1.2?", ["wal_checkpoint_timeout", "v1.2"]),
])
def test_the_names_of_a_question_no_document_mentions(question: str, never: list[str]) -> None:
    assert _never(question) == never


def test_a_capital_that_begins_a_sentence_makes_no_name() -> None:
    vocabulary = {"someone", "roughly"}  # single tokens of the embedder's vocabulary
    assert _never("Someone asked. Roughly how many connections?", vocabulary) == []
    # a word spelt in pieces is a name even at a sentence's start
    assert _never("Kubernetes runs it. Does the pool keep connections?", vocabulary) \
        == ["Kubernetes"]
    # without a vocabulary to ask, a sentence's first word is not judged a name
    assert _never("Kubernetes runs it. Does the pool keep connections?") == []


def test_the_model_policy_searches_twice_as_deep_and_shows_the_best_six(
        tmp_path: Path) -> None:
    """The model policy's search asks for twice the harness's hits; the unit ranking
    picks the six chunks the model is shown, as many as ever."""
    text = "\n\n".join(f"# Setting {i}\n\nThe setting number {i} of the pool is {i * 7}."
                       for i in range(12))
    llm = ScriptedLLM([DECLINE])  # asked to choose (the evidence is doubted), it declines
    final = ask_one_file(tmp_path, "settings.md", text, QUESTION, llm=llm,
                         answer_policy="model", rag_top_k=4)
    [search] = [s for s in final.result.steps if s.action == "kb_search"]
    assert search.args["top_k"] == 8
    [prompt] = _user_messages(llm)
    assert len(re.findall(r"^\[\d+\] settings\.md", prompt, re.M)) == 6
    # the harness's own search is as deep as the setting says
    (tmp_path / "harness").mkdir()
    final = ask_one_file(tmp_path / "harness", "settings.md", text, QUESTION,
                         answer_policy="harness", rag_top_k=4, mode="rag")
    assert [s.args["top_k"] for s in final.result.steps if s.action == "kb_search"] == [4]


def test_a_kept_chunk_is_shown_whatever_its_rank_and_no_passage_cites_an_unshown_one(
) -> None:
    """A two-hop question's follow-up hit (``keep``) is shown though eight chunks rank
    above it; the passages listed again come only from chunks shown, so a reply citing
    one never cites a source it was not given."""
    cites = [cite(f"The pool keeps {20 + i} keep-alive connections in mode {i}.",
                  f"pool{i}.md", n=i + 1) for i in range(8)]
    cites += [cite("Chrony serves time to the fleet.", "chrony.md", n=9),
              cite("Roughtime signs its replies.", "roughtime.md", n=10)]
    shown, best = ranked_sources(QUESTION, cites, None)
    assert len(shown) == SOURCES and not {9, 10} & {c.n for c in shown}
    shown, best = ranked_sources(QUESTION, cites, None, keep=[9, 10, 9, 42])
    numbers = [c.n for c in shown]
    assert len(shown) == SOURCES and {9, 10} <= set(numbers)
    assert best and len(best) <= PASSAGES and all(b.unit.n in numbers for b in best)
