"""The typed protocol: enums read as plain strings on the wire, typed records write
exactly the JSON that plain dicts and strings did."""

from __future__ import annotations

import json

from kbagent.agent.answer.citations import CitationLedger
from kbagent.agent.events import ErrorEvent, Observation, Source, StepStarted
from kbagent.agent.kinds import (
    DONE,
    GO_ON,
    AskMode,
    ErrorKind,
    Status,
    StepKind,
    ToolSet,
    TurnEnd,
)
from kbagent.kb.models import SearchMode
from kbagent.kb.search import MODES


def test_enums_are_their_strings_in_json():
    ev = StepStarted(2, kind=StepKind.FORCED_FINAL)
    assert json.dumps(ev.to_dict()) == '{"type": "step", "step": 2, "kind": "forced-final"}'
    assert ErrorEvent("x", kind=ErrorKind.CANCELLED).to_dict()["kind"] == "cancelled"
    assert f"{Status.LIMIT}" == "limit" and AskMode("rag") is AskMode.RAG


def test_the_closed_sets():
    assert [m.value for m in AskMode] == ["auto", "agent", "rag", "direct"]
    assert [t.value for t in ToolSet] == ["knowledge", "full"]
    assert MODES == ("hybrid", "bm25", "vector") == tuple(SearchMode)
    assert "limit" not in [k.value for k in ErrorKind]  # a limit ends the run, not an error
    assert set(StepKind) == {"llm", "retrieval", "forced-final", "answer"}


def test_turn_end():
    assert GO_ON.go_on and not DONE.go_on and DONE.done
    stopped = TurnEnd(reason="time limit reached")
    assert not stopped.go_on and not stopped.done and stopped.reason


def test_sources_keep_their_wire_form():
    sources = [Source("a.md", 3, 9), Source("b.py", 12), Source("c.md")]
    assert [str(s) for s in sources] == ["a.md:3-9", "b.py:12", "c.md"]
    obs = Observation(1, "kb_search", "3 hits", "text", sources=sources)
    assert obs.to_dict()["sources"] == ["a.md:3-9", "b.py:12", "c.md"]


def test_references_json_is_the_old_dict_shape():
    ledger = CitationLedger(10)
    n = ledger.add(kb="k", path="p.md", start_line=1, end_line=4, text="Some text here.",
                   score=0.5, tool="kb_search", heading="H")
    refs = ledger.references(None, {n: True}).to_json()
    assert refs == [{"kb": "k", "path": "p.md", "chunks": [{
        "n": n, "kb": "k", "path": "p.md", "start_line": 1, "end_line": 4, "score": 0.5,
        "tool": "kb_search", "heading": "H", "excerpt": "Some text here.", "supported": True,
        "location": ""}]}]  # location (issue 24) added last: old keys keep their order
    assert list(refs[0]["chunks"][0]) == ["n", "kb", "path", "start_line", "end_line", "score",
                                          "tool", "heading", "excerpt", "supported", "location"]
    assert ledger.references(None, {n: True})[0].chunks[0].n == n
