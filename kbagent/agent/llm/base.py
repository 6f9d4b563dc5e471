"""The LLM interface the agent needs: chat messages in, streamed text out, with stop
sequences, an optional GBNF grammar, and token usage (including how many prompt
tokens were actually evaluated, so KV-cache reuse is measurable)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Protocol

from kbagent.agent.cancel import CancelToken
from kbagent.errors import BackendError


@dataclass
class Message:
    role: str  # system | user | assistant
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass
class Completion:
    text: str
    prompt_tokens: int  # length of the prompt
    prompt_evaluated: int  # prompt tokens evaluated this call (the rest came from the KV cache)
    completion_tokens: int
    finish_reason: str  # stop | length | aborted | repetition (cut by the loop)
    ms: float

    @property
    def tokens(self) -> int:
        """Tokens this call cost: prompt tokens evaluated plus tokens generated."""
        return self.prompt_evaluated + self.completion_tokens


class ContextFull(BackendError):
    """The prompt does not fit the model's context window. ``needed``: the tokens the
    call needed (prompt and the least room to answer in) and ``context`` the window's
    size, where the backend can tell (a server's error text may not say)."""

    def __init__(self, message: str, *, needed: int | None = None,
                 context: int | None = None) -> None:
        super().__init__(message)
        self.needed = needed
        self.context = context


class ContextTooSmall(BackendError):
    """A run's first prompt does not fit: the model (or its ``n_ctx``) is refused for
    this question, with the number of tokens it needs, rather than answered as a run
    that filled its context."""


@dataclass(frozen=True)
class Request:
    """One generation: the messages, an optional GBNF grammar, stop sequences, a token
    limit, a cancel token and a deadline (``time.perf_counter()`` seconds: a backend
    that blocks, on an HTTP read, gives up then and ends the stream as aborted). The
    defaults live here, once, for every backend."""

    messages: list[Message]
    grammar: str | None = None
    stop: list[str] | None = None
    max_tokens: int = 256
    cancel: CancelToken | None = None
    deadline: float | None = None


class LLM(Protocol):
    """What the agent needs of a model. A backend subclasses this and implements
    :meth:`generate`; callers use :meth:`stream`, which takes the request as
    keywords."""

    name: str
    supports_grammar: bool
    context_length: int

    def stream(
        self,
        messages: list[Message],
        *,
        grammar: str | None = None,
        stop: list[str] | None = None,
        max_tokens: int = 256,
        cancel: CancelToken | None = None,
        deadline: float | None = None,
    ) -> Generator[str, None, Completion]:
        """Yield text pieces as they are generated; return the :class:`Completion`.
        Closing the generator early stops generation (cancel, time limit); a
        cancelled ``cancel`` token or a passed ``deadline`` stops it too, even while
        the backend blocks (the completion's finish reason is then ``aborted``)."""
        return self.generate(Request(messages, grammar, stop, max_tokens, cancel, deadline))

    def generate(self, req: Request) -> Generator[str, None, Completion]:
        """The backend's generation of ``req`` (see :meth:`stream`)."""
        ...

    def option_logprobs(self, messages: list[Message], options: list[str], *,
                        cancel: CancelToken | None = None, deadline: float | None = None
                        ) -> list[float] | None:
        """How likely each option is as the first token of the reply to ``messages``: the
        next-token log-probabilities of each option's first token (the model's judgment
        of a yes/no question, read without writing a reply). None where the backend
        cannot tell (no logits, an option that is not one token's start) or ``cancel``
        or ``deadline`` ended the reading. A backend that can tell sets
        ``judgment_usage`` to the reading's cost (None when it gave no reading)."""
        return None

    def close(self) -> None:
        """Free the backend's resources (a loaded model) now rather than at interpreter
        exit, when the libraries they need may already be gone. Idempotent."""


def complete(llm: LLM, messages: list[Message], **kwargs: Any) -> Completion:
    """Run a stream to the end and return its completion."""
    gen = llm.stream(messages, **kwargs)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            result: Completion = stop.value
            return result


def apply_stop(text: str, stop: list[str] | None) -> tuple[str, bool]:
    """Cut ``text`` at the first stop sequence; return (text, stopped)."""
    cut = len(text)
    for s in stop or []:
        i = text.find(s)
        if i != -1:
            cut = min(cut, i)
    return text[:cut], cut < len(text)
