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
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Generator
from typing import Any

from kbagent.agent.llm.base import LLM, Completion, ContextFull, Request, apply_stop
from kbagent.errors import BackendError, BadInputError

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

    @classmethod
    def from_settings(cls, settings: Any) -> OpenAICompatLLM:
        return cls(settings.llm_url, settings.llm_server_model,
                   os.environ.get(settings.llm_api_key_env, ""), settings.temperature,
                   settings.seed, context_length=settings.n_ctx)

    def _request(self, body: dict[str, Any]) -> Any:
        req = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Accept": "text/event-stream",
                     **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})},
            method="POST",
        )
        return urllib.request.urlopen(req, timeout=self.timeout)

    def _http_failure(self, e: urllib.error.HTTPError) -> BackendError:
        """The error for an HTTP error answer: ContextFull when the server says the
        prompt is too long."""
        detail = e.read().decode(errors="replace")[:300]
        if _CONTEXT_ERROR.search(detail):
            return ContextFull(f"LLM server {self.base_url}: {detail}")
        return BackendError(f"LLM server {self.base_url} answered HTTP {e.code}: {detail}")

    def generate(self, req: Request) -> Generator[str, None, Completion]:
        messages, grammar, stop, max_tokens, cancel = (req.messages, req.grammar, req.stop,
                                                       req.max_tokens, req.cancel)
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
        try:
            resp = self._request(body)
        except urllib.error.HTTPError as e:
            failure = self._http_failure(e)
            if not isinstance(failure, ContextFull) and "grammar" in body and e.code in (400, 422):
                self.supports_grammar = False
                body.pop("grammar")
                try:
                    resp = self._request(body)
                except urllib.error.HTTPError as e2:
                    raise self._http_failure(e2) from e2
                except (urllib.error.URLError, OSError) as e2:
                    raise BackendError(f"LLM server {self.base_url} failed: {e2}") from e2
            else:
                raise failure from e
        except (TimeoutError, urllib.error.URLError, ConnectionError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise BackendError(f"cannot reach LLM server at {self.base_url}: {reason}") from e
        text, finish, usage, events = "", "stop", None, 0
        # a cancel closes the response from the cancelling thread: the blocked read
        # below returns or raises at once instead of waiting for the next token
        unregister = cancel.on_cancel(lambda: _shut(resp)) if cancel is not None else None
        try:
            with resp:
                for raw in resp:
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
                    usage = chunk.get("usage") or usage
                    for choice in chunk.get("choices") or []:
                        piece = (choice.get("delta") or {}).get("content") or ""
                        if piece:
                            text += piece
                            yield piece
                        if choice.get("finish_reason"):
                            finish = choice["finish_reason"]
        except (TimeoutError, OSError, ValueError) as e:
            if cancel is None or not cancel.cancelled:
                raise BackendError(f"LLM server {self.base_url} stream broke: {e}") from e
        finally:
            if unregister is not None:
                unregister()
        if cancel is not None and cancel.cancelled:
            finish = "aborted"
        elif not events:  # llama_cpp.server fails this way when a prompt exceeds its context
            raise BackendError(f"LLM server {self.base_url} closed the stream without an "
                               "answer (a prompt longer than its context window?)")
        ms = (time.perf_counter() - started) * 1000
        text, _ = apply_stop(text, stop)
        prompt_tokens = int((usage or {}).get("prompt_tokens") or
                            sum(len(m.content) for m in messages) // 4)
        completion_tokens = int((usage or {}).get("completion_tokens") or max(1, len(text) // 4))
        return Completion(text, prompt_tokens, prompt_tokens, completion_tokens, finish, ms)


def _shut(resp: Any) -> None:
    """Unblock a read on ``resp`` from another thread: shut its socket down (a plain
    close() does not wake a thread blocked in recv), then close it."""
    import socket

    sock = getattr(getattr(getattr(resp, "fp", None), "raw", None), "_sock", None)
    if sock is None:
        resp.close()
        return
    with contextlib.suppress(OSError):  # the reading thread's `with resp` then closes it
        sock.shutdown(socket.SHUT_RDWR)
