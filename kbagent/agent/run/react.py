"""The ReAct text protocol: the GBNF grammar built from the tool registry, the
step parser, and a streaming splitter for Thought and Final Answer text.

A step is ``Thought: <one line>`` followed by either ``Action: <tool>`` and
``Action Input: <JSON object>`` or ``Final Answer: <text>``. With llama.cpp
the grammar makes every generated step parse: the tool name comes from the
registry and the arguments match that tool's schema. Without a grammar
(a server that rejects it) the parser is lenient and reports what was wrong.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from kbagent.agent.tools.base import Tool
from kbagent.agent.tools.schema import (
    BYTES_PER_CHAR,
    GBNF_COMMON,
    schema_to_gbnf,
    with_kb_names,
    worst_case_bytes,
)

STOP = ["\nObservation:", "Observation:"]
MAX_THOUGHT = 150  # characters
ANSWER_STOP = [*STOP, "\nQuestion:"]


def step_grammar(tools: dict[str, Tool], *, allow_final: bool = True,
                 kb_names: list[str] | None = None) -> str:
    """GBNF for one step: a Thought line, then a call of one of ``tools`` with
    schema-shaped arguments, or a Final Answer. ``allow_final=False`` forces a tool
    call (search before answering). Final-answer turns use no grammar at all."""
    if not tools:
        raise ValueError("a step needs at least one tool")
    rules = [
        'root ::= "Thought: " thought "\\n" step',
        f"thought ::= [^\\n]{{1,{MAX_THOUGHT}}}",
        "step ::= " + " | ".join(["action"] + (["final"] if allow_final else [])),
    ]
    names = list(tools)
    rules.append('action ::= "Action: " (' + " | ".join(
        f"call{i}" for i in range(len(names))) + ")")
    for i, name in enumerate(names):
        rules.append(f'call{i} ::= "{name}\\nAction Input: " args{i}')
        schema = with_kb_names(tools[name].parameters, kb_names or [])
        rules.append(schema_to_gbnf(f"args{i}", schema))
    if allow_final:
        rules.append('final ::= "Final Answer: " [^\\n\\x00] [^\\x00]*')
    return "\n".join(rules) + "\n" + GBNF_COMMON


def action_token_bound(tools: dict[str, Tool], kb_names: list[str] | None = None) -> int:
    """Tokens that always suffice for a complete ``Thought`` + ``Action`` step under
    :func:`step_grammar` (byte-level BPE: a token covers at least one byte)."""
    thought = len("Thought: \n") + MAX_THOUGHT * BYTES_PER_CHAR
    call = max(
        len(f"Action: {name}\nAction Input: ")
        + worst_case_bytes(with_kb_names(t.parameters, kb_names or []))
        for name, t in tools.items()
    )
    return thought + call + 8


class ProtocolError(ValueError):
    """The model's reply is not a valid step; the message says what to fix."""


@dataclass(frozen=True)
class ParsedStep:
    """One reply of the model: its Thought, then either an Action (the tool's name,
    its Action Input as a JSON object, or why the input could not be read) or the
    Final Answer."""

    thought: str
    action: str | None = None
    args: dict[str, Any] | None = None
    args_error: str | None = None
    final: str | None = None


_THOUGHT = re.compile(r"^\s*(?:Thought\s*:)?\s*(.*?)\s*(?=\n?\s*(?:Action\s*:|Final Answer\s*:)|$)",
                      re.S | re.I)
_FINAL = re.compile(r"Final Answer\s*:\s*(.*)\Z", re.S | re.I)
_ACTION = re.compile(r"Action\s*:\s*`?([A-Za-z_][\w-]*)`?", re.I)
_INPUT = re.compile(r"Action Input\s*:\s*", re.I)


def _first_json_object(text: str) -> tuple[Any, str | None]:
    start = text.find("{")
    if start == -1:
        return None, "Action Input is missing a JSON object"
    try:
        return _DECODER.raw_decode(text, start)[0], None
    except json.JSONDecodeError as e:
        # the text runs out inside the object (a reply cut at max_tokens)
        if "}" not in text[e.pos:] or e.msg.startswith("Unterminated string"):
            return None, "Action Input JSON is not closed"
        return None, f"Action Input is not valid JSON ({e.msg})"


_DECODER = json.JSONDecoder()


def parse_step(text: str) -> ParsedStep:
    m = _THOUGHT.match(text)
    thought = m.group(1).strip() if m else ""
    final = _FINAL.search(text)
    action = _ACTION.search(text)
    if action and (not final or action.start() < final.start()):
        rest = text[action.end():]
        inp = _INPUT.search(rest)
        args: Any
        if inp is None:
            args, error = {}, None if rest.strip() == "" else "missing 'Action Input:' line"
        else:
            args, error = _first_json_object(rest[inp.end():])
        return ParsedStep(thought, action=action.group(1), args=args, args_error=error)
    if final:
        return ParsedStep(thought, final=final.group(1).strip())
    raise ProtocolError("reply has neither 'Action:' nor 'Final Answer:'")


class StepStreamer:
    """Split streamed step text into Thought deltas and Final Answer deltas.

    With ``answer_only`` (final-answer turns, generated without a grammar) the
    whole reply is the answer, unless the model still opened with a ``Thought:``
    line, in which case the answer starts after it (or after ``Final Answer:``)."""

    def __init__(self, answer_only: bool = False) -> None:
        self.text = ""
        self.answer_only = answer_only
        self._thought_sent = 0
        self._answer_sent = 0

    def _answer_start(self, body: str) -> int | None:
        f = re.search(r"Final Answer\s*:[ \t]*", body, re.I)
        if f:
            return f.end()
        if not self.answer_only:
            return None
        stripped = body.lstrip()
        if not stripped or any(label.startswith(stripped.lower())
                               for label in ("thought:", "final answer:")):
            return None  # could still become "Thought:" or "Final Answer:"
        if re.match(r"\s*Thought\s*:", body, re.I):
            nl = body.find("\n")
            if nl == -1 or "final answer:".startswith(body[nl + 1 :].lstrip()[:13].lower()):
                return None
            return nl + 1
        return 0

    def feed(self, piece: str) -> tuple[str, str]:
        self.text += piece
        thought_delta = answer_delta = ""
        body = self.text
        if self.answer_only and not re.match(r"\s*(Thought|Final Answer)\s*:", body, re.I):
            start = self._answer_start(body)
            if start is None:
                return "", ""
            answer = body[start:]
            delta = answer[self._answer_sent :]
            self._answer_sent = len(answer)
            return "", delta
        m = re.match(r"\s*Thought\s*:[ \t]*", body, re.I)
        if m is None and "thought:".startswith(body.strip().lower()):
            return "", ""  # still reading the "Thought:" label itself
        start = m.end() if m else 0
        nl = body.find("\n", start)
        line = body[start:] if nl == -1 else body[start:nl]
        for marker in ("Action:", "Final Answer:"):
            k = line.find(marker)
            if k != -1:
                line = line[:k]
        if nl == -1:  # keep back a tail that could be the start of a marker
            safe = len(line)
            for marker in ("Action:", "Final Answer:"):
                for j in range(1, len(marker)):
                    if line.endswith(marker[:j]):
                        safe = min(safe, len(line) - j)
            line = line[:safe]
        if len(line) > self._thought_sent:
            thought_delta = line[self._thought_sent:]
            self._thought_sent = len(line)
        start = self._answer_start(body)
        if start is not None:
            answer = body[start:]
            if len(answer) > self._answer_sent:
                answer_delta = answer[self._answer_sent:]
                self._answer_sent = len(answer)
        return thought_delta, answer_delta
