"""Any OpenAI-compatible chat server: llama-server, llama-cpp-python's server, vLLM,
Ollama. Streams ``/chat/completions`` over SSE with the standard library only.

A GBNF grammar is sent as the ``grammar`` field (understood by llama.cpp
servers). If a server rejects it, the backend stops sending it and the agent
falls back to lenient parsing (and, if the model cannot follow the protocol,
to single-retrieval RAG). The API key is read from the environment variable
named by the ``llm_api_key_env`` setting, never from a flag.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Generator
from typing import Any

from kbagent.agent.cancel import CancelToken
from kbagent.agent.llm.base import LLM, Completion, ContextFull, Message, Request, apply_stop
from kbagent.agent.llm.http_stream import ReadGuard, open_guarded
from kbagent.errors import BackendError, BadInputError
from kbagent.settings import Settings
from kbagent.text import shorten

# how vLLM, llama-server, Ollama and OpenAI word a request that does not fit
_CONTEXT_ERROR = re.compile(r"context (length|size|window)|exceeds? the (available )?context|"
                            r"too many tokens|maximum context", re.I)


class OpenAICompatLLM(LLM):
    def __init__(self, base_url: str, model: str = "", api_key: str = "",
                 temperature: float = 0.0, seed: int = 42, timeout: float = 300.0,
                 context_length: int = 8192) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise BadInputError(f"LLM URL must start with http:// or https://, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model or "default"
        self.name = f"{self.model}@{self.base_url}"
        self.api_key = api_key
        self.temperature = temperature
        self.seed = seed
        self.timeout = timeout
        self.context_length = context_length
        self.supports_grammar = True  # until the server says otherwise
        self.supports_logprobs = True  # until the server refuses a judgment's request
        self.judgment_usage: Completion | None = None  # of the last judgment read

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAICompatLLM:
        return cls(settings.llm_url, settings.llm_server_model,
                   os.environ.get(settings.llm_api_key_env, ""), settings.temperature,
                   settings.seed, context_length=settings.n_ctx)

    def _request(self, body: dict[str, Any], guard: ReadGuard,
                 accept: str = "text/event-stream") -> Any:
        req = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Accept": accept,
                     **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})},
            method="POST",
        )
        return open_guarded(req, guard, self.timeout)

    def _http_failure(self, e: urllib.error.HTTPError) -> BackendError:
        """The error for an HTTP error answer: ContextFull when the server says the
        prompt is too long."""
        detail = e.read().decode(errors="replace")[:300]
        if _CONTEXT_ERROR.search(detail):
            return ContextFull(f"LLM server {self.base_url}: {detail}")
        return BackendError(f"LLM server {self.base_url} answered HTTP {e.code}: {detail}")

    def _open(self, body: dict[str, Any], guard: ReadGuard,
              accept: str = "text/event-stream") -> Any:
        """The response (streaming unless ``accept`` says otherwise); None when the
        guard fired (cancel or deadline) before it came."""
        try:
            try:
                return self._request(body, guard, accept)
            except urllib.error.HTTPError as e:
                failure = self._http_failure(e)
                if (isinstance(failure, ContextFull) or "grammar" not in body
                        or e.code not in (400, 422)):
                    raise failure from e
                self.supports_grammar = False
                body.pop("grammar")
                try:
                    return self._request(body, guard)
                except urllib.error.HTTPError as e2:
                    raise self._http_failure(e2) from e2
        except BackendError:
            raise
        except (urllib.error.URLError, http.client.HTTPException, OSError) as e:
            if guard.ended():
                return None
            reason = getattr(e, "reason", e)
            raise BackendError(f"cannot reach LLM server at {self.base_url}: {reason}") from e

    def generate(self, req: Request) -> Generator[str, None, Completion]:
        messages, grammar, stop, max_tokens = req.messages, req.grammar, req.stop, req.max_tokens
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in messages],
            "stream": True,
            "max_tokens": max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "stream_options": {"include_usage": True},
        }
        if stop:
            body["stop"] = stop[:4]  # the OpenAI API accepts at most four
        if grammar and self.supports_grammar:
            body["grammar"] = grammar
        started = time.perf_counter()
        text, finish, usage, events = "", "stop", None, 0
        # a cancel or the run's deadline shuts the connection down from another thread:
        # a read blocked on a server that stopped sending returns at once
        with ReadGuard(req.cancel, req.deadline) as guard:
            resp = self._open(body, guard)
            try:
                with contextlib.nullcontext() if resp is None else resp:
                    for raw in resp or ():
                        line = raw.decode("utf-8", errors="replace").strip()
                        if not line.startswith("data:"):
                            continue
                        events += 1
                        data = line[5:].strip()
                        if data == "[DONE]":
                            break
                        try:
                            chunk = json.loads(data)
                        except json.JSONDecodeError:
                            continue
                        piece, ended, usage_now = self._event(chunk, data)
                        usage = usage_now or usage
                        finish = ended or finish
                        if piece:
                            text += piece
                            yield piece
            except (TimeoutError, OSError, ValueError, http.client.HTTPException) as e:
                if not guard.ended():
                    raise BackendError(f"LLM server {self.base_url} stream broke: {e}") from e
        if guard.ended():
            finish = "aborted"
        elif not events:  # llama_cpp.server fails this way when a prompt exceeds its context
            raise BackendError(f"LLM server {self.base_url} closed the stream without an "
                               "answer (a prompt longer than its context window?)")
        ms = (time.perf_counter() - started) * 1000
        text, _ = apply_stop(text, stop)
        prompt_tokens = _count(usage, "prompt_tokens", sum(len(m.content) for m in messages) // 4)
        completion_tokens = _count(usage, "completion_tokens", max(1, len(text) // 4))
        return Completion(text, prompt_tokens, prompt_tokens, completion_tokens, finish, ms)

    def option_logprobs(self, messages: list[Message], options: list[str], *,
                        cancel: CancelToken | None = None, deadline: float | None = None
                        ) -> list[float] | None:
        """The options' log-probabilities as the reply's first token, from the server's
        ``top_logprobs`` of a one-token completion (an option not among them gets the
        lowest listed: at most that likely). None when the server gives no log
        probabilities (after one refusal it is not asked again), lists none of the
        options, or ``cancel`` / ``deadline`` ended the request."""
        self.judgment_usage = None
        if not self.supports_logprobs:
            return None
        body: dict[str, Any] = {
            "model": self.model, "messages": [m.to_dict() for m in messages],
            "stream": False, "max_tokens": 1, "temperature": 0.0, "seed": self.seed,
            "logprobs": True, "top_logprobs": TOP_LOGPROBS,
        }
        started = time.perf_counter()
        # a cancel or the run's deadline shuts the connection down, as in generate
        with ReadGuard(cancel, deadline) as guard:
            try:
                resp = self._open(body, guard, "application/json")
                if resp is None:
                    return None
                with resp:
                    answer = json.loads(resp.read().decode("utf-8", errors="replace"))
            except ContextFull:
                raise
            except BackendError as e:
                refused = e.__cause__
                if not (isinstance(refused, urllib.error.HTTPError)
                        and refused.code in (400, 422, 501)):
                    raise
                self.supports_logprobs = False  # the server takes no logprobs request
                return None
            except (http.client.HTTPException, OSError, ValueError) as e:
                if guard.ended():
                    return None
                raise BackendError(f"LLM server {self.base_url}: no judgment: {e}") from e
        top = _top_logprobs(answer)
        if not top:
            self.supports_logprobs = False  # it answered, without log-probabilities
            return None
        seen = [max((lp for tok, lp in top if tok.strip() == o), default=None)
                for o in options]
        if all(v is None for v in seen):
            return None
        floor = min(lp for _, lp in top)
        usage = answer.get("usage") if isinstance(answer, dict) else None
        prompt_tokens = _count(usage, "prompt_tokens", sum(len(m.content) for m in messages) // 4)
        self.judgment_usage = Completion("", prompt_tokens, prompt_tokens,
                                         _count(usage, "completion_tokens", 1), "stop",
                                         (time.perf_counter() - started) * 1000)
        return [floor if v is None else v for v in seen]

    def _event(self, chunk: Any, data: str) -> tuple[str, str, dict[str, Any] | None]:
        """(text, finish reason or "", usage or None) of one streamed event. A shape
        no OpenAI-compatible server sends is a BackendError naming it, never a crash."""
        def malformed(what: str) -> BackendError:
            return BackendError(f"LLM server {self.base_url} sent a malformed stream event "
                                f"({what}): {shorten(data, 120)!r}")

        if not isinstance(chunk, dict):
            raise malformed("not a JSON object")
        if chunk.get("error") and not chunk.get("choices"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise BackendError(f"LLM server {self.base_url} failed: "
                               f"{shorten(str(message), 300)}")
        usage = chunk.get("usage")
        if usage is not None and not isinstance(usage, dict):
            raise malformed("'usage' is not an object")
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise malformed("'choices' is not a list")
        text, finish = "", ""
        for choice in choices:
            if not isinstance(choice, dict):
                raise malformed("a choice is not an object")
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise malformed("'delta' is not an object")
            content = delta.get("content") or ""
            if not isinstance(content, str):
                raise malformed("'content' is not a string")
            text += content
            if choice.get("finish_reason"):
                finish = str(choice["finish_reason"])
        return text, finish, usage


TOP_LOGPROBS = 20  # the most the OpenAI API lists


def _top_logprobs(answer: Any) -> list[tuple[str, float]]:
    """(token, log-probability) of the first generated token's alternatives in a chat
    completion, or [] when the answer has none in the OpenAI shape."""
    try:
        first = answer["choices"][0]["logprobs"]["content"][0]
        return [(str(x["token"]), float(x["logprob"])) for x in first["top_logprobs"]]
    except (KeyError, IndexError, TypeError, ValueError):
        return []


def _count(usage: dict[str, Any] | None, key: str, fallback: int) -> int:
    """A token count from the server's usage, or ``fallback`` when it sent none or junk."""
    value = (usage or {}).get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return fallback
    return int(value) or fallback


