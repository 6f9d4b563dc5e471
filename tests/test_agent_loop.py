"""The ReAct loop with the scripted LLM (the model's decisions) over the real sample KB."""

from __future__ import annotations

import json
import re
import threading

import pytest

from kbagent.agent.events import (
    Action,
    AnswerDelta,
    ErrorEvent,
    Final,
    Observation,
    StepStarted,
    ThoughtDelta,
)
from kbagent.agent.run.loop import Agent, AgentConfig, run_to_result
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from tests.scripted_llm import ScriptedLLM


def agent_cfg(**overrides) -> AgentConfig:
    """Agent mode where the scripted model, not the harness, makes the first search."""
    return AgentConfig(mode="agent", search_first="model", **overrides)


def step(thought: str, tool: str, args: dict | str) -> str:
    raw = args if isinstance(args, str) else json.dumps(args)
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {raw}"


def final(thought: str, answer: str) -> str:
    return f"Thought: {thought}\nFinal Answer: {answer}"


@pytest.fixture
def kb(sample_settings):
    return KnowledgeBase(sample_settings, "sample")


def run(agent: Agent, question: str):
    events = list(agent.run(question))
    assert isinstance(events[-1], Final)
    return events, events[-1].result


def test_composite_question_searches_twice_and_calculates_before_answering(kb):
    llm = ScriptedLLM([
        step("Find Q2 gross margin.", "kb_search", {"query": "Q2 2026 gross margin"}),
        step("Find Q3 gross margin.", "kb_search", {"query": "Q3 2026 gross margin reasons"}),
        step("Compute the change.", "calculate", {"expression": "66.2 - 71.4"}),
        final("I have both numbers.",
              "Gross margin fell from 71.4% in Q2 to 66.2% in Q3, a change of -5.2 points. "
              "The GPU reserved-capacity contract and the EU region migration raised costs."),
    ])
    # grounding off: the ReAct loop itself, not the harness's decomposition
    agent = Agent(llm, [kb], agent_cfg(tools="full", grounded=False))
    events, result = run(agent, "Compare Q2 and Q3 gross margin and explain the change")
    actions = [e for e in events if isinstance(e, Action)]
    assert [a.tool for a in actions] == ["kb_search", "kb_search", "calculate"]
    obs = [e for e in events if isinstance(e, Observation)]
    assert obs[2].text == "66.2 - 71.4 = -5.2"
    assert obs[0].citations and obs[0].summary.startswith("5 hits")
    assert any("q3_2026_report" in s.path for s in obs[1].sources)
    assert result.status == "answered" and result.mode == "agent"
    assert "66.2%" in result.answer and "[" in result.answer  # citations placed by the harness
    assert len(result.steps) == 4
    assert result.steps[2].observation == "66.2 - 71.4 = -5.2"
    cited_paths = {r.path for r in result.references}
    assert any(p.startswith("finance/") for p in cited_paths)
    # the model saw the observations, numbered, in later prompts
    last_prompt = llm.calls[-1]["messages"]
    assert any(m.role == "user" and m.content.startswith("Observation: 5 results") for m in
               last_prompt)
    assert "[1]" in last_prompt[3].content


def test_events_stream_thought_before_action_and_answer_before_final(kb):
    llm = ScriptedLLM([step("Look up the CEO.", "kb_search", {"query": "CEO"}),
                       final("Found it.", "The CEO is Maya Okafor.")])
    events, result = run(Agent(llm, [kb], agent_cfg()), "Who is the CEO?")
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "StepStarted"
    assert kinds.index("ThoughtDelta") < kinds.index("Action") < kinds.index("Observation")
    assert kinds.index("AnswerDelta") < kinds.index("Final")
    thought = "".join(e.text for e in events if isinstance(e, ThoughtDelta) and e.step == 1)
    assert thought == "Look up the CEO."
    answer = "".join(e.text for e in events if isinstance(e, AnswerDelta))
    assert answer.strip() == result.answer
    for e in events:
        json.dumps(e.to_dict())  # every event serialises for --jsonl


def test_greeting_is_answered_directly_without_tools(kb):
    llm = ScriptedLLM(["Welcome to my office."])
    events, result = run(Agent(llm, [kb]), "hi there!")
    assert result.mode == "direct"
    assert not [e for e in events if isinstance(e, Action)]
    # grounded (the default): kbagent's own words, true by construction; no model call
    assert result.answer.startswith("Hello! I'm kbagent") and "sample" in result.answer
    assert result.references == [] and llm.calls == []


def test_greeting_without_grounding_is_the_models_small_talk(kb):
    llm = ScriptedLLM(["Hello! I can answer questions about your documents."])
    _, result = run(Agent(llm, [kb], AgentConfig(grounded=False)), "hi there!")
    assert result.mode == "direct"
    assert result.answer.startswith("Hello!") and result.references == []
    assert llm.calls[0]["grammar"] is None
    assert "small talk" in llm.calls[0]["messages"][0].content


def test_first_step_must_search_and_later_steps_may_answer(kb):
    llm = ScriptedLLM([step("Search.", "kb_search", {"query": "default cache TTL"}),
                       final("Done.", "Cache entries live for 1 hour by default.")])
    run(Agent(llm, [kb], agent_cfg()), "What is the default cache TTL?")
    first, second = llm.calls[0]["grammar"], llm.calls[1]["grammar"]
    assert "Final Answer" not in first and "kb_grep" not in first and "kb_search" in first
    assert "Final Answer" in second and "kb_grep" in second


def test_repeated_identical_call_is_served_from_the_cache(kb):
    same = {"query": "retry policy", "top_k": 3}
    llm = ScriptedLLM([step("Search.", "kb_search", same),
                       step("Search again.", "kb_search", {"top_k": 3, "query": "retry policy"}),
                       final("Enough.", "Four attempts in total.")])
    calls = []
    agent = Agent(llm, [kb], agent_cfg())
    original = agent.searcher.search
    agent.searcher.search = lambda *a, **k: calls.append(a) or original(*a, **k)
    events, result = run(agent, "How many retry attempts?")
    obs = [e for e in events if isinstance(e, Observation)]
    assert len(calls) == 1
    assert obs[1].cached and "Already done" in obs[1].text and "step 1" in obs[1].text
    assert result.steps[1].cached


def test_max_steps_forces_one_final_answer_turn(kb):
    llm = ScriptedLLM([step("a", "kb_search", {"query": "pricing"}),
                       step("b", "kb_search", {"query": "tiers"}),
                       final("Forced.", "The Business tier costs $2,400 per month.")])
    # grounding off: the final turn's sources are the chunks' excerpts, in ledger order
    events, result = run(Agent(llm, [kb], agent_cfg(max_steps=2, grounded=False)),
                         "How much is the Business tier?")
    assert result.status == "limit" and "step limit of 2" in result.stop_reason
    assert [e.kind for e in events if isinstance(e, StepStarted)] == ["llm", "llm",
                                                                      "forced-final"]
    forced = llm.calls[-1]
    assert forced["grammar"] is None  # the final turn is a plain answer over the evidence
    assert forced["messages"][0].content.startswith("Answer the question using only the")
    assert forced["messages"][1].content.startswith("Sources:\n[1] ")
    assert forced["messages"][1].content.endswith("Question: How much is the Business tier?")
    assert "$2,400" in result.answer


def test_the_final_turn_sees_the_first_hits_and_the_newest_finds(kb):
    llm = ScriptedLLM([step("a", "kb_search", {"query": "pricing tiers", "top_k": 10}),
                       step("b", "kb_cat", {"path": "hr/pto_and_leave_policy.md",
                                            "start_line": 1, "end_line": 8}),
                       "The answer."])
    events, _ = run(Agent(llm, [kb], agent_cfg(max_steps=2, grounded=False)),
                    "How many PTO days?")
    search, cat = [e for e in events if isinstance(e, Observation)]
    assert len(search.citations) > 8 and len(cat.citations) == 1
    sources = llm.calls[-1]["messages"][1].content
    numbers = [int(n) for n in re.findall(r"^\[(\d+)\] ", sources, re.M)]
    assert len(numbers) == 8 and numbers[:4] == search.citations[:4]
    assert numbers[-1] == cat.citations[0]  # the read made after the many search hits


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (step("x", "kb_search", "{\"query\": \"x\",}"), "not valid JSON"),
        (step("x", "kb_search", "{\"query\": \"x\""), "JSON is not closed"),
        (step("x", "kb_search", {"q": "x"}), "unknown argument(s) q"),
        (step("x", "kb_search", {}), "missing required argument 'query'"),
        (step("x", "kb_search", {"query": "x", "top_k": "many"}), "must be a number"),
        (step("x", "kb_search", {"query": "x", "top_k": 500}), "between 1 and 10"),
        (step("x", "kb_cat", {"path": "../../etc/passwd"}), "'..' is not allowed"),
        (step("x", "kb_cat", {"path": "/etc/passwd"}), "absolute paths are not allowed"),
        (step("x", "kb_cat", {"path": "nope.md"}), "no file 'nope.md'"),
        (step("x", "kb_search", {"query": "x", "kb": "other"}), "unknown KB other"),
        (step("x", "delete_everything", {}), "There is no tool 'delete_everything'"),
        (step("x", "kb_grep", {"pattern": "(", "regex": True}), "invalid regular expression"),
    ],
)
def test_bad_tool_calls_become_observations_for_the_model(kb, reply, expected):
    llm = ScriptedLLM([step("Search.", "kb_search", {"query": "retry"}), reply,
                       final("ok", "The knowledge base does not say.")])
    events, result = run(Agent(llm, [kb], agent_cfg()), "Tell me about retries")
    bad = [e for e in events if isinstance(e, Observation)][1]
    assert not bad.ok and expected in bad.text
    assert result.status == "answered"
    assert expected in llm.calls[2]["messages"][-1].content  # the model is told


def test_tool_outputs_show_numbered_citations_and_true_lines(kb):
    llm = ScriptedLLM([
        step("s", "kb_search", {"query": "certificate rotation"}),
        step("g", "kb_grep", {"pattern": "Ines Moreau"}),
        step("c", "kb_cat", {"path": "runbooks/certificate_rotation.md", "start_line": 1,
                             "end_line": 12}),
        final("f", "Done."),
    ])
    events, _ = run(Agent(llm, [kb], agent_cfg()), "How are certs rotated?")
    grep, cat = [e for e in events if isinstance(e, Observation)][1:3]
    assert grep.text.splitlines()[0].endswith("files:") and "Ines Moreau" in grep.text
    assert cat.text.splitlines()[0].endswith("runbooks/certificate_rotation.md lines 1-12 of "
                                             f"{cat.text.splitlines()[0].split()[-1]}")
    assert cat.text.splitlines()[1].startswith("1| ")
    assert "(continue at line 13)" in cat.text


def test_multi_kb_search_reports_the_failing_kb(kb, sample_settings, make_folder, embedder):
    Ingestor(sample_settings, "hr2", embedder=embedder).run(
        make_folder({"pto.md": "# PTO\n\nEveryone gets 20 PTO days.\n"}))
    hr = KnowledgeBase(sample_settings, "hr2")
    hr.vectors.search = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("index gone"))
    llm = ScriptedLLM([step("s", "kb_search", {"query": "PTO days"}),
                       final("f", "20 PTO days.")])
    events, _ = run(Agent(llm, [kb, hr], agent_cfg()), "How many PTO days?")
    obs = next(e for e in events if isinstance(e, Observation))
    assert obs.ok and "failed_kbs: hr2" in obs.text and "index gone" in obs.text
    assert "sample:" in obs.text  # hits from the healthy KB, labelled with their KB


def test_cancellation_mid_generation_stops_cleanly_with_evidence(kb):
    llm = ScriptedLLM([step("s", "kb_search", {"query": "Kestrel Edge GPU"}),
                       "Thought: " + "thinking " * 400], piece_delay=0.005)
    agent = Agent(llm, [kb], agent_cfg())
    events = []
    for ev in agent.run("Which GPU does Kestrel Edge use?"):
        events.append(ev)
        if isinstance(ev, ThoughtDelta) and ev.step == 2:
            agent.cancel()
    result = events[-1].result
    assert result.status == "cancelled"
    assert any(isinstance(e, ErrorEvent) and e.kind == "cancelled" for e in events)
    assert "Evidence gathered so far" in result.answer and "[1]" in result.answer
    assert result.references  # what was gathered is still cited


def test_cancel_from_another_thread(kb):
    # no timer: the second model call waits until the other thread has cancelled,
    # so the cancel always lands while that step is being generated
    generating, cancelled = threading.Event(), threading.Event()

    def slow_reply(messages):
        generating.set()
        assert cancelled.wait(30), "the canceller thread never ran"
        return "Thought: " + "slow " * 2000

    def canceller():
        generating.wait(30)
        agent.cancel()
        cancelled.set()

    llm = ScriptedLLM([step("s", "kb_search", {"query": "pricing"}), slow_reply],
                      piece_delay=0.002)
    agent = Agent(llm, [kb], agent_cfg())
    thread = threading.Thread(target=canceller)
    thread.start()
    events = list(agent.run("How much is Team?"))
    thread.join()
    result = events[-1].result
    assert result.status == "cancelled" and result.stop_reason == "cancelled"
    assert len(llm.calls) == 2 and "Evidence gathered so far" in result.answer
    # not one piece of the cancelled step reached the stream
    assert not [e for e in events if isinstance(e, ThoughtDelta) and e.step == 2]


def test_token_budget_forces_final(kb):
    llm = ScriptedLLM([step("s", "kb_search", {"query": "retry"}),
                       final("f", "Retries use exponential backoff.")])
    result = run_to_result(Agent(llm, [kb], agent_cfg(token_budget=50)),
                           "Explain retries")
    assert result.status == "limit" and "token budget" in result.stop_reason


class FakeClock:
    """A :class:`~kbagent.agent.run.state.Clock` the agent is given (the run's deadline,
    the checks while a call streams): time moves only when a test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now


def test_time_limit_stops_a_step_and_forces_the_final_answer(kb):
    clock = FakeClock()

    def slow_step(messages):
        clock.now += 2.0  # this step outlives the 1.5 s limit
        return "Thought: " + "slow " * 500

    llm = ScriptedLLM([step("s", "kb_search", {"query": "retry"}), slow_step,
                       final("f", "Retries use exponential backoff.")])
    result = run_to_result(Agent(llm, [kb], agent_cfg(time_limit=1.5, grounded=False),
                                 clock=clock), "Explain retries")
    assert result.status == "limit" and result.stop_reason == "time limit reached"
    assert result.answer.startswith("Retries use exponential backoff")
    assert len(llm.calls) == 3  # search step, the stopped step, the final-answer turn


def test_protocol_failures_fall_back_to_single_retrieval(kb):
    llm = ScriptedLLM(["I think the answer is blue.", "Still no format.",
                       final("ok", "The Team tier costs $499 per month.")])
    llm.supports_grammar = False  # a server that rejected the grammar
    events, result = run(Agent(llm, [kb], agent_cfg()), "Team tier price?")
    err = [e for e in events if isinstance(e, ErrorEvent)]
    assert err and err[0].kind == "protocol"
    assert [a.tool for a in events if isinstance(a, Action)] == ["kb_search"]
    assert result.status == "answered" and "$499" in result.answer
    assert all(c["grammar"] is None for c in llm.calls)


def test_fallback_after_the_harness_search_does_not_search_again(kb):
    llm = ScriptedLLM(["I think the answer is blue.", "Still no format.",
                       "The Team tier costs $499 per month."])
    llm.supports_grammar = False
    events, result = run(Agent(llm, [kb], AgentConfig(mode="agent")), "Team tier price?")
    assert [a.tool for a in events if isinstance(a, Action)] == ["kb_search"]
    assert [st.step for st in events if isinstance(st, StepStarted)] == [1, 2, 3, 4]
    assert result.status == "answered" and "$499" in result.answer


def test_rag_mode_is_one_search_then_an_answer(kb):
    llm = ScriptedLLM([final("ok", "Kestrel Edge uses four NVIDIA L40S GPUs.")])
    events, result = run(Agent(llm, [kb], AgentConfig(mode="rag", grounded=False)),
                         "Which GPU model does the Kestrel Edge appliance use?")
    assert result.mode == "rag" and len(llm.calls) == 1
    assert [a.tool for a in events if isinstance(a, Action)] == ["kb_search"]
    prompt = llm.calls[0]["messages"]
    assert prompt[0].content.startswith("Answer the question using only the sources")
    assert prompt[1].content.startswith("Sources:\n[1] ")
    assert prompt[1].content.endswith("Question: Which GPU model does the Kestrel Edge "
                                      "appliance use?")
    assert result.references and "L40S" in result.answer


def test_an_answer_cut_by_the_token_limit_ends_with_a_whole_sentence(kb):
    answer = "Kestrel Edge uses four NVIDIA L40S GPUs. " + "It also has " * 40
    llm = ScriptedLLM([answer])
    events, result = run(Agent(llm, [kb], AgentConfig(mode="rag", final_max_tokens=40,
                                                 grounded=False)),
                         "Which GPU model does the Kestrel Edge appliance use?")
    assert llm.calls[0]["max_tokens"] == 40
    assert result.answer.startswith("Kestrel Edge uses four NVIDIA L40S GPUs")
    assert result.answer.endswith((".", "]")) and "It also" not in result.answer
    streamed = "".join(e.text for e in events if isinstance(e, AnswerDelta))
    assert "It also" not in streamed


def test_auto_routes_factoids_to_rag_and_composites_to_agent(kb):
    llm = ScriptedLLM([final("ok", "Maya Okafor.")])
    assert run_to_result(Agent(llm, [kb]), "Who is the CEO of Kestrel?").mode == "rag"
    llm = ScriptedLLM([step("s", "kb_search", {"query": "Q2 Q3 margin"}), final("f", "x")])
    assert run_to_result(Agent(llm, [kb]), "Compare Q2 and Q3 gross margin").mode == "agent"


def test_backend_failure_is_an_error_event_and_still_an_answer(kb):
    llm = ScriptedLLM([step("s", "kb_search", {"query": "pricing"})])  # then runs dry
    events, result = run(Agent(llm, [kb], agent_cfg()), "Pricing tiers?")
    assert any(isinstance(e, ErrorEvent) and "no more replies" in e.message for e in events)
    assert result.status == "error" and "could not write a full answer" in result.answer
    assert result.references  # the evidence found is still shown and cited


def test_usage_accounts_for_llm_and_tool_time(kb):
    llm = ScriptedLLM([step("s", "kb_search", {"query": "pricing"}), final("f", "Done.")])
    result = run_to_result(Agent(llm, [kb], agent_cfg()), "Pricing?")
    u = result.usage
    assert u.llm_calls == 2 and u.tool_ms > 0 and u.wall_ms >= u.tool_ms
    assert u.budget_tokens == u.prompt_evaluated + u.completion_tokens > 0


def test_by_default_the_harness_searches_the_question_first(kb):
    llm = ScriptedLLM([final("It is there.", "Kestrel Edge uses NVIDIA L40S GPUs.")])
    events, result = run(Agent(llm, [kb], AgentConfig(mode="agent")),
                         "Which GPU model does the Kestrel Edge appliance use?")
    first = next(e for e in events if isinstance(e, Action))
    assert first.tool == "kb_search" and first.args["query"].startswith("Which GPU model")
    assert [e.kind for e in events if isinstance(e, StepStarted)] == ["retrieval", "llm"]
    prompt = llm.calls[0]["messages"]
    # the results come with the question: no harness-written step for the model to copy
    assert [m.role for m in prompt] == ["system", "user"]
    assert prompt[-1].content.startswith("Question: Which GPU model")
    assert "Observation: 5 results" in prompt[-1].content
    assert "Final Answer" in llm.calls[0]["grammar"]  # the model may answer right away
    assert result.status == "answered" and "L40S" in result.answer


def test_a_model_repeating_itself_is_stopped_early(kb):
    same = step("again", "kb_search", {"query": "pricing tiers"})
    llm = ScriptedLLM([same, same, same, final("f", "Team costs $499 per month.")])
    events, result = run(Agent(llm, [kb], AgentConfig(mode="agent", max_steps=10)),
                         "What does Team cost?")
    assert result.stop_reason == "the model repeated the same call"
    assert sum(1 for e in events if isinstance(e, Observation) and e.cached) == 2
    assert len(result.steps) == 5  # harness search, 3 model steps, the answer


def test_calculator_results_reach_the_final_answer_prompt(kb):
    llm = ScriptedLLM([step("c", "calculate", {"expression": "(11.2 - 9.8) / 9.8 * 100"}),
                       step("c", "calculate", {"expression": "(11.2 - 9.8) / 9.8 * 100"}),
                       step("c", "calculate", {"expression": "(11.2 - 9.8) / 9.8 * 100"}),
                       final("f", "Revenue grew 14.3% in Q3.")])
    result = run_to_result(Agent(llm, [kb], AgentConfig(mode="agent", tools="full",
                                                        grounded=False)),
                           "How much did revenue grow in Q3?")
    prompt = llm.calls[-1]["messages"][1].content
    assert "Calculations:\n(11.2 - 9.8) / 9.8 * 100 = 14.28571429" in prompt
    assert result.status == "limit" and result.answer.startswith("Revenue grew 14.3% in Q3")


def test_a_full_context_window_forces_the_final_answer_with_a_clear_reason(kb):
    from kbagent.agent.llm.base import ContextFull

    def too_long(messages):
        raise ContextFull("prompt of 9000 tokens leaves 0 of the 8192-token context")

    llm = ScriptedLLM([step("s", "kb_search", {"query": "pricing"}), too_long,
                       "The Team tier costs $499/month."])
    _, result = run(Agent(llm, [kb], agent_cfg()), "Team tier price?")
    assert result.stop_reason == "the context window is full"
    assert result.status == "limit" and "$499" in result.answer
    assert llm.calls[-1]["messages"][0].content.startswith("Answer the question using only")


class _BreaksMidAnswer(ScriptedLLM):
    """Streams part of an answer, then the backend fails (like a turn cut short)."""

    def stream(self, messages, **kwargs):
        yield from ("Retries use exponential backoff. ", "The base delay is two hun")
        from kbagent.errors import BackendError

        raise BackendError("the server went away")


def test_an_answer_cut_short_keeps_whole_sentences_then_the_notice(kb):
    result = run_to_result(Agent(_BreaksMidAnswer([]), [kb], AgentConfig(mode="rag")),
                           "Explain retries")
    answer = result.answer
    assert "I could not write a full answer" in answer, answer
    before = answer.split("I could not write a full answer")[0]
    # the half sentence is dropped, not glued to the notice ("...two hunI could not...")
    assert "two hun" not in answer and not re.search(r"[a-z]I could not", answer)
    assert before == "" or before.endswith("\n\n"), repr(before[-40:])


def test_a_final_answer_inside_a_step_is_cut_at_the_answer_budget(kb):
    # a step's max_tokens covers the grammar's longest tool call (thousands of tokens);
    # a model that keeps talking after "Final Answer:" must not spend them all on one
    # answer (SmolLM2 once wrote 70 sentences in 187 s)
    rambling = " ".join(f"Fact {n} concerns item{n} of the list." for n in range(300))
    llm = ScriptedLLM([final("I know this.", rambling)])
    cfg = AgentConfig(mode="agent", grounded=False, final_max_tokens=40)
    events, result = run(Agent(llm, [kb], cfg), "What does the list say?")
    assert len(llm.calls) == 1 and llm.calls[0]["max_tokens"] > 400  # the step's bound
    streamed = "".join(e.text for e in events if isinstance(e, AnswerDelta))
    assert result.status == "answered"
    assert result.answer.startswith("Fact 0 concerns item0")
    assert "item299" not in result.answer and len(streamed) <= 41 * llm.piece_chars
