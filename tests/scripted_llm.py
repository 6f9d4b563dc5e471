"""A scripted LLM for tests: queued replies, every call recorded.

It stands in for the model's *decisions* only; everything around it (the
loop, tools, KB, citations) is real. Replies may be strings or callables
that receive the messages and return a string. Stop sequences are applied,
text over ``max_tokens`` (about 4 characters a token) is cut with finish reason
"length", and text is streamed in small pieces, like a real backend.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from kbagent.agent.llm.base import LLM, Completion, Message, Request, apply_stop
from kbagent.errors import BackendError

Reply = str | Callable[[list[Message]], str]
_LITERALS = re.compile(r'root ::= "[^"]*"(?: \| "[^"]*")*')


def literal_choices(grammar: str | None) -> list[str] | None:
    """The replies a grammar of literal alternatives allows (``root ::= "A" | "B"``);
    None for any other grammar (the ReAct loop's is not checked here)."""
    if grammar is None or not _LITERALS.fullmatch(grammar.strip()):
        return None
    return re.findall(r'"([^"]*)"', grammar)


@dataclass
class ScriptedLLM(LLM):
    replies: list[Reply]
    name: str = "scripted"
    supports_grammar: bool = True
    context_length: int = 32768
    piece_delay: float = 0.0  # seconds between streamed pieces (for cancellation tests)
    piece_chars: int = 7  # characters per streamed piece
    calls: list[dict[str, Any]] = field(default_factory=list)
    # the model's next-token judgment (LLM.option_logprobs): (messages, options) -> one
    # log-probability per option, or None (the default: it cannot tell)
    judgment: Callable[[list[Message], list[str]], list[float] | None] | None = None
    judged: list[list[Message]] = field(default_factory=list)
    judgment_usage: Completion | None = None

    def option_logprobs(self, messages: list[Message], options: list[str], *,
                        cancel: Any = None, deadline: float | None = None
                        ) -> list[float] | None:
        self.judgment_usage = None
        if cancel is not None and cancel.cancelled:
            return None
        self.judged.append([Message(m.role, m.content) for m in messages])
        lp = self.judgment(messages, options) if self.judgment else None
        if lp is not None:  # a reading costs its prompt, like a real backend's
            prompt = sum(len(m.content) for m in messages) // 4
            self.judgment_usage = Completion("", prompt, prompt, 0, "stop", 0.0)
        return lp

    def generate(self, req: Request) -> Generator[str, None, Completion]:
        messages, grammar, stop, max_tokens, cancel = (req.messages, req.grammar, req.stop,
                                                       req.max_tokens, req.cancel)
        self.calls.append({"messages": [Message(m.role, m.content) for m in messages],
                           "grammar": grammar, "stop": stop, "max_tokens": max_tokens})
        if not self.replies:
            raise BackendError("scripted LLM has no more replies")
        reply = self.replies.pop(0)
        text = reply(messages) if callable(reply) else reply
        choices = literal_choices(grammar)
        if choices is not None and text not in choices:  # a real backend cannot say it
            raise AssertionError(f"scripted reply {text!r} is none of the grammar's {choices}")
        text, _ = apply_stop(text, stop)
        finish = "stop"
        if len(text) > 4 * max_tokens:  # ~4 characters a token, like the usage counts below
            text, finish = text[: 4 * max_tokens], "length"
        started = time.perf_counter()
        sent = ""
        for i in range(0, len(text), self.piece_chars):
            piece = text[i : i + self.piece_chars]
            if self.piece_delay:
                if cancel is not None:
                    if cancel.wait(self.piece_delay):  # a cancel wakes it, like a real backend
                        finish = "aborted"
                        break
                else:
                    time.sleep(self.piece_delay)
            sent += piece
            yield piece
        prompt = sum(len(m.content) for m in messages) // 4
        return Completion(sent, prompt, prompt, max(1, len(sent) // 4), finish,
                          (time.perf_counter() - started) * 1000)
