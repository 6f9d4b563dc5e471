"""Grammar generation, the token bound of a tool call, the step parser, argument schemas."""

from __future__ import annotations

import json

import pytest

from kbagent.agent.run.react import (
    MAX_THOUGHT,
    ProtocolError,
    StepStreamer,
    action_token_bound,
    parse_step,
    step_grammar,
)
from kbagent.agent.tools.schema import ArgumentError, validate, worst_case_bytes
from kbagent.agent.tools.toolset import registry


def test_grammar_names_every_tool_and_the_final_answer():
    g = step_grammar(registry("full"))
    for name in registry("full"):
        assert f'"{name}\\nAction Input: "' in g
    assert '"Final Answer: "' in g and "root ::=" in g


def test_search_first_variant_and_an_empty_registry():
    tools = registry()
    first = step_grammar({"kb_search": tools["kb_search"]}, allow_final=False)
    assert "Final Answer" not in first and "kb_grep" not in first
    with pytest.raises(ValueError):
        step_grammar({})


def test_argument_values_are_constrained_in_the_grammar():
    g = step_grammar(registry(), kb_names=["eng", "hr"])
    args0 = next(line for line in g.splitlines() if line.startswith("args0 ::="))
    assert '("\\"eng\\"" | "\\"hr\\"")' in args0  # kb limited to the session's KBs
    assert '"10" | "9"' in args0 and '"11"' not in args0  # top_k within 1..10
    assert "jchar{1,120}" in args0


def _max_string(n: int) -> str:
    return "😀" * n  # 4 UTF-8 bytes a character: the worst case


@pytest.mark.parametrize("mode", ["knowledge", "full"])
def test_a_maximal_call_fits_the_token_bound(mode):
    """Byte-level BPE uses at least one byte a token, so bytes bound tokens."""
    tools = registry(mode)
    for name, tool in tools.items():
        args = {}
        for prop, spec in tool.parameters["properties"].items():
            if spec["type"] == "string":
                args[prop] = _max_string(min(spec.get("maxLength", 120), 120))
            elif spec["type"] == "array":
                args[prop] = [_max_string(spec["items"]["maxLength"])] * spec["maxItems"]
            elif spec["type"] == "boolean":
                args[prop] = False
            else:
                args[prop] = spec.get("maximum", 9_999_999)
        call = (f"Thought: {_max_string(MAX_THOUGHT)}\nAction: {name}\nAction Input: "
                f"{json.dumps(args, ensure_ascii=False)}")
        assert len(json.dumps(args, ensure_ascii=False).encode()) <= worst_case_bytes(
            tool.parameters)
        assert len(call.encode()) <= action_token_bound(tools), name


@pytest.mark.parametrize(
    ("text", "action", "args", "final"),
    [
        ('Thought: look\nAction: kb_search\nAction Input: {"query": "x"}', "kb_search",
         {"query": "x"}, None),
        ("Thought: done\nFinal Answer: It is 4 [1].\nSecond line.", None, None,
         "It is 4 [1].\nSecond line."),
        ('thought: lower\naction: `kb_cat`\naction input: {"path": "a.md"} trailing', "kb_cat",
         {"path": "a.md"}, None),
        ("Final Answer: no thought", None, None, "no thought"),
        ('Action: kb_search\nAction Input: {"query": "a {brace} \\"q\\""}', "kb_search",
         {"query": 'a {brace} "q"'}, None),
    ],
)
def test_parse_step_variants(text, action, args, final):
    step = parse_step(text)
    assert step.action == action and step.final == final
    if args is not None:
        assert step.args == args and step.args_error is None


def test_parse_step_errors():
    with pytest.raises(ProtocolError):
        parse_step("I think the answer is blue.")
    step = parse_step("Thought: x\nAction: kb_search\nAction Input: [1, 2]")
    assert step.args_error == "Action Input is missing a JSON object"


def test_validate_arguments():
    schema = registry()["kb_search"].parameters
    assert validate("kb_search", schema, {"query": " q "}) == {"query": "q", "top_k": 5}
    with pytest.raises(ArgumentError, match="must not be empty"):
        validate("kb_search", schema, {"query": "  "})
    with pytest.raises(ArgumentError, match="must be a JSON object"):
        validate("kb_search", schema, ["q"])
    assert validate("kb_search", schema, {"query": "q", "top_k": "3"})["top_k"] == 3
    plan = registry("full")["plan"].parameters
    assert validate("plan", plan, {"steps": "one step"}) == {"steps": ["one step"]}


def test_step_streamer_holds_back_partial_labels():
    st = StepStreamer()
    got = [st.feed(p) for p in ["Tho", "ught: ab", "c\nFinal Ans", "wer: 42", "!"]]
    assert "".join(t for t, _ in got) == "abc"
    assert "".join(a for _, a in got) == "42!"


@pytest.mark.parametrize("pieces", [
    ["Final", " Answer", ":", " The TTL", " is 1 hour [1]."],
    ["Thought", ": done\n", "Final Answer: The TTL", " is 1 hour [1]."],
    ["The TTL", " is 1 hour [1]."],
    ["F", "inal Answer: The TTL is 1 hour [1]."],
])
def test_answer_only_streamer_strips_labels_split_across_tokens(pieces):
    st = StepStreamer(answer_only=True)
    answer = "".join(st.feed(p)[1] for p in pieces)
    assert answer.strip() == "The TTL is 1 hour [1]."


def test_answer_only_streamer_releases_an_answer_that_only_starts_like_a_label():
    st = StepStreamer(answer_only=True)
    assert "".join(st.feed(p)[1] for p in ["Fin", "ally, the TTL is 1 hour."]) == (
        "Finally, the TTL is 1 hour.")
