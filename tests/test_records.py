"""Typed results (issue 21): references, sentences and repairs are records that write
exactly the JSON the plain dicts did and read it back; reference ``[n]`` is looked up
in one place; tool names are an enum and a tool call is a frozen, hashable record."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbagent.agent.events import AgentResult, Final, StepRecord, Usage
from kbagent.agent.kinds import SEARCH_TOOLS, RepairAction, Status, ToolName, ToolSet
from kbagent.agent.llm.trace import TRACE_VERSION, TraceWriter, read_trace, trace_events
from kbagent.agent.records import (
    DocumentReferences,
    ReferenceChunk,
    References,
    Repair,
    SentenceRecord,
    describe_repairs,
)
from kbagent.agent.run.loop import Agent, AgentConfig, run_to_result
from kbagent.agent.tools.base import ToolCall
from kbagent.agent.tools.toolset import registry
from kbagent.errors import NotFoundError
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.session import find_reference
from tests.scripted_llm import ScriptedLLM

# the keys, in order, that the dicts of the payloads have always had
CHUNK_KEYS = ["n", "kb", "path", "start_line", "end_line", "score", "tool", "heading",
              "excerpt", "supported", "location"]
STAMP_KEYS = ["text_sha", "doc_hash", "generation"]
SENTENCE_KEYS = ["text", "cited", "auto", "support", "supported", "role", "numbers_missing"]


def chunk(n: int, path: str = "a.md", **kw) -> ReferenceChunk:
    return ReferenceChunk(n=n, kb="k", path=path, start_line=n, end_line=n + 2, score=0.5,
                          tool=ToolName.KB_SEARCH, heading="H", excerpt=f"text {n}",
                          supported=True, **kw)


def refs(*chunks: ReferenceChunk) -> References:
    groups: dict[str, DocumentReferences] = {}
    for c in chunks:
        groups.setdefault(c.path, DocumentReferences(c.kb, c.path)).chunks.append(c)
    return References(groups.values())


def through_json(data):
    return json.loads(json.dumps(data, ensure_ascii=False))


# ----------------------------------------------------------------- round trips
def test_a_reference_chunk_round_trips_with_and_without_stamps():
    plain = chunk(1, location="p.2 l.3-9")
    assert list(plain.to_json()) == CHUNK_KEYS  # unstamped: no stamp keys at all
    stamped = chunk(2, text_sha="ab" * 32, doc_hash="cd" * 32, generation="g0002")
    assert list(stamped.to_json()) == CHUNK_KEYS + STAMP_KEYS
    for c in (plain, stamped):
        assert ReferenceChunk.from_json(through_json(c.to_json())) == c
    assert plain.where == "a.md:1-3"


def test_references_round_trip_grouped_by_document():
    r = refs(chunk(1), chunk(2, path="b.md"), chunk(3))
    data = through_json(r.to_json())
    assert [d["path"] for d in data] == ["a.md", "b.md"]
    assert [list(d) for d in data] == [["kb", "path", "chunks"]] * 2
    back = References.from_json(data)
    assert back == r and back.to_json() == data
    assert References.from_json(None) == References() == []


def test_an_older_chunk_reads_with_defaults():
    """A chunk written before ``location`` (issue 24) and without ``kb``/``path`` of
    its own takes them from its document."""
    old = {"kb": "k", "path": "a.md", "chunks": [{"n": 4, "start_line": 2, "end_line": 3,
                                                   "score": None, "excerpt": "x"}]}
    c = References.from_json([old]).chunks()[0]
    assert (c.n, c.kb, c.path, c.location, c.supported, c.text_sha) == (
        4, "k", "a.md", "", None, None)


def test_sentences_and_repairs_round_trip():
    sent = SentenceRecord("It is 4 [1].", [1], False, 0.91, True, "claim", ["4"])
    assert list(sent.to_json()) == SENTENCE_KEYS
    assert SentenceRecord.from_json(through_json(sent.to_json())) == sent
    repairs = [Repair("x was 5", ("5",), RepairAction.REPLACED, 3),
               Repair("x was 4", ("4",), RepairAction.RECITED, 2),
               Repair("Zanzibar", ("Zanzibar",), RepairAction.REMOVED)]
    data = through_json([r.to_json() for r in repairs])
    assert data == [
        {"sentence": "x was 5", "missing": ["5"], "action": "replaced", "with": 3},
        {"sentence": "x was 4", "missing": ["4"], "action": "recited", "with": 2},
        {"sentence": "Zanzibar", "missing": ["Zanzibar"], "action": "removed"}]
    assert [Repair.from_json(d) for d in data] == repairs
    assert Repair.from_json(data[0]).action is RepairAction.REPLACED
    with pytest.raises(ValueError):
        Repair.from_json({**data[0], "action": "rewritten"})  # a closed set


def test_repairs_are_described_from_the_typed_records():
    lines = describe_repairs([Repair("x was 5", ("5",), RepairAction.REPLACED, 3),
                              Repair("x was 4", (), RepairAction.RECITED, 2),
                              Repair("Zanzibar", ("Zanzibar",), RepairAction.REMOVED)])
    assert lines[0].startswith("corrected: \u201cx was 5\u201d (5: not in its source)")
    assert "[3] is quoted instead" in lines[0]
    assert lines[1] == "re-cited: \u201cx was 4\u201d to [2], the source that says it"
    assert lines[2] == "removed: \u201cZanzibar\u201d (Zanzibar: in no source found)"


def test_an_agent_result_round_trips():
    result = AgentResult(
        question="q", answer="a [1].", mode="rag", status=Status.ANSWERED,
        steps=[StepRecord(1, "t", "kb_search", {"query": "q"}, "obs", "1 hit", 0, 0, 0, 0,
                          1.0, 0.0, 1.0)],
        references=refs(chunk(1)), all_references=refs(chunk(1), chunk(2, path="b.md")),
        sentences=[SentenceRecord("a [1].", [1], role="claim")],
        usage=Usage(llm_calls=1), kbs=["k"],
        repairs=[Repair("b", ("7",), RepairAction.REMOVED)])
    data = through_json(result.to_json())
    assert AgentResult.from_json(data) == result
    assert AgentResult.from_json(data).to_json() == data
    assert data["references"] == result.references.to_json()
    assert data["all_references"] == result.all_references.to_json()
    assert through_json(result.to_dict(True))["references"] == data["all_references"]


# ------------------------------------------------------------- reference(n)
def test_reference_n_present_and_absent():
    result = AgentResult("q", "a", "rag", Status.ANSWERED, references=refs(chunk(2)),
                         all_references=refs(chunk(1), chunk(2), chunk(5, path="b.md")))
    assert result.reference(5) == chunk(5, path="b.md")  # seen, not cited: still found
    assert result.reference(2) is result.all_references.chunks()[1]
    assert result.reference(3) is None and result.reference(0) is None
    assert result.references.reference(1) is None
    assert result.all_references.numbers() == [1, 2, 5]
    older = AgentResult("q", "a", "rag", Status.ANSWERED, references=refs(chunk(7)))
    assert older.reference(7) == chunk(7)  # no all_references: the cited ones


def test_find_reference_in_a_saved_answer():
    result = AgentResult("q", "a", "rag", Status.ANSWERED, references=refs(chunk(1)),
                         all_references=refs(chunk(1), chunk(3)))
    saved = through_json(result.to_json())
    assert find_reference(saved, 3) == chunk(3).to_json()
    with pytest.raises(NotFoundError, match=r"no reference \[4\].*known: 1, 3"):
        find_reference(saved, 4)


# ------------------------------------------------------ a real run, scripted
@pytest.mark.parametrize(("reply", "action"), [
    ("Gross margin in Q3 2026 was 68.9% [1].", RepairAction.REPLACED),
    ("Gross margin in Q3 2026 was 66.2% [1].", RepairAction.RECITED),
])
def test_a_real_runs_json_is_the_old_shape_and_round_trips(sample_settings, reply, action):
    kb = KnowledgeBase(sample_settings, "sample")
    try:
        agent = Agent(ScriptedLLM([reply]), [kb], AgentConfig(mode="rag", grounded=True))
        result = run_to_result(agent, "What was Kestrel's gross margin in Q3 2026?")
    finally:
        kb.close()
    data = through_json(result.to_json())
    assert [r["action"] for r in data["repairs"]] == [action.value]
    assert list(data["repairs"][0]) == ["sentence", "missing", "action", "with"]
    assert all(list(s) == SENTENCE_KEYS for s in data["sentences"])
    chunks = [c for d in data["all_references"] for c in d["chunks"]]
    assert chunks and all(list(c) == CHUNK_KEYS + STAMP_KEYS for c in chunks)  # stamped
    assert {c["tool"] for c in chunks} == {"kb_search"}
    cited = [c["n"] for d in data["references"] for c in d["chunks"]]
    assert cited and result.reference(cited[0]).to_json() == next(
        c for c in chunks if c["n"] == cited[0])
    assert AgentResult.from_json(data) == result
    assert AgentResult.from_json(data).to_json() == data


def test_a_trace_gives_back_the_same_result(sample_settings, tmp_path):
    kb = KnowledgeBase(sample_settings, "sample")
    path = tmp_path / "t.jsonl"
    writer = TraceWriter(path)
    writer.write({"kind": "header", "version": TRACE_VERSION})
    try:
        events = list(Agent(ScriptedLLM(["Gross margin in Q3 2026 was 68.9% [1]."]), [kb],
                            AgentConfig(mode="rag", grounded=True)).run(
            "What was Kestrel's gross margin in Q3 2026?"))
        for ev in events:
            writer.event(ev)
    finally:
        writer.close()
        kb.close()
    replayed = trace_events(read_trace(path))[-1]
    assert isinstance(replayed, Final) and replayed.result == events[-1].result
    assert replayed.result.repairs[0].action is RepairAction.REPLACED


# ---------------------------------------------------------- tools and calls
def test_every_tool_is_a_tool_name():
    tools = registry(ToolSet.FULL, code_tools=True)
    assert set(tools) == set(ToolName) and all(t.name in ToolName for t in tools.values())
    assert {"kb_search", "kb_semantic_search"} == SEARCH_TOOLS
    assert json.dumps({"tool": ToolName.KB_GREP}) == '{"tool": "kb_grep"}'


def test_a_tool_call_is_frozen_and_keyed_by_its_arguments_in_any_order():
    a = ToolCall("kb_search", {"query": "q", "top_k": 5})
    b = ToolCall(ToolName.KB_SEARCH, {"top_k": 5, "query": "q"})
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    assert ToolCall("kb_search", {"query": "q", "top_k": 6}) != a
    assert ToolCall("kb_semantic_search", {"query": "q", "top_k": 5}) != a
    assert len({ToolCall("t", {"x": v}) for v in (1, 1.0, True, "1", 0.0, -0.0)}) == 6
    with pytest.raises(AttributeError):
        a.name = "kb_cat"  # type: ignore[misc]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=3),
    max_leaves=8)


@given(st.dictionaries(st.text(max_size=3), JSON, max_size=4),
       st.dictionaries(st.text(max_size=3), JSON, max_size=4))
def test_two_calls_are_equal_exactly_when_their_json_is(x, y):
    """The old cache key was ``json.dumps(args, sort_keys=True)``: the frozen key
    tells the same calls apart, no more and no fewer."""
    same = json.dumps(x, sort_keys=True) == json.dumps(y, sort_keys=True)
    assert (ToolCall("t", x) == ToolCall("t", y)) == same
    assert ToolCall("t", x) == ToolCall("t", json.loads(json.dumps(x)))
