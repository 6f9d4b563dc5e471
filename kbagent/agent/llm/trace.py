"""Run traces: one JSONL file per question holding everything needed to see
what happened and to reproduce it offline with the same model.

Records, one per line, in the order they happened (``kind`` says which):

* ``header``: trace version, question, KBs (with their live generation),
  mode, tool set, every setting, the LLM (backend, model file or URL, name),
  the kbagent version and the start time;
* ``llm_call``: the exact messages sent, grammar, stop sequences and token
  limit, the raw text the model produced, its token counts and milliseconds;
* ``event``: each agent event (steps, thoughts, tool calls with their
  arguments, observations with their text and citations, answer pieces,
  the final result) with its time since the start;
* ``end``: status, answer and wall time.

:class:`TracingLLM` wraps any backend and records its calls; it forwards
everything else to the wrapped backend, so the agent cannot tell the
difference. :func:`read_trace` and :func:`event_from_dict` turn a file back
into events for ``kbagent replay``.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any, TextIO

from kbagent.agent.events import (
    Action,
    AgentResult,
    AnswerDelta,
    ErrorEvent,
    Event,
    Final,
    Observation,
    StepStarted,
    ThoughtDelta,
)
from kbagent.agent.llm.base import Completion, Message
from kbagent.errors import BadInputError, NotFoundError
from kbagent.jsonl import numbered_jsonl
from kbagent.kb.file_modes import open_private, private_dir
from kbagent.settings import Settings

TRACE_VERSION = 1
_EVENT_TYPES: dict[str, type[Event]] = {
    cls.type: cls for cls in (StepStarted, ThoughtDelta, Action, Observation, AnswerDelta,
                              ErrorEvent)
}


def settings_dict(settings: Settings) -> dict[str, Any]:
    """Every setting as JSON-safe values (paths and enums as strings)."""
    return settings.model_dump(mode="json")


def llm_identity(llm: Any, settings: Settings) -> dict[str, Any]:
    """Which model answered: enough to load the same one again."""
    if settings.llm_url:
        return {"backend": "openai", "url": settings.llm_url,
                "model": settings.llm_server_model, "name": getattr(llm, "name", "")}
    path = getattr(llm, "path", None)
    size = Path(path).stat().st_size if path and Path(path).is_file() else None
    return {"backend": type(llm).__name__, "name": getattr(llm, "name", ""),
            "model_path": str(path) if path else settings.llm_model, "model_bytes": size}


class TraceWriter:
    """Append records to one trace file, each line flushed as it is written."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        # a trace holds prompts with document text: the file 0600, a folder it creates
        # 0700 (a folder the user named and that exists is left as it is)
        if not self.path.parent.is_dir():
            private_dir(self.path.parent)
        self._f: TextIO = open_private(self.path)
        self._lock = threading.Lock()
        self._t0 = time.perf_counter()
        self.llm_calls = 0

    def ms(self) -> float:
        return round((time.perf_counter() - self._t0) * 1000, 2)

    def write(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._f.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._f.flush()

    def header(self, *, question: str, kbs: Iterable[Any], mode: str, tools: str,
               settings: Settings, llm: Any, principal: Any = None) -> None:
        from kbagent import __version__

        self.write({
            "kind": "header", "version": TRACE_VERSION, "question": question,
            # who asked: the trace holds only what this principal could read
            "principal": getattr(principal, "label", "anonymous"),
            "kbs": [{"name": kb.name, "generation": getattr(kb, "generation", "")} for kb in kbs],
            "mode": mode, "tools": tools, "settings": settings_dict(settings),
            "llm": llm_identity(llm, settings), "kbagent_version": __version__,
            "started_at": time.time(),
        })

    def event(self, ev: Event) -> None:
        data = ev.to_dict()
        if isinstance(ev, Final):
            data["all_references"] = ev.result.all_references.to_json()
        self.write({"kind": "event", "t_ms": self.ms(), "event": data})

    def end(self, result: AgentResult | None, status: str = "") -> None:
        self.write({"kind": "end", "t_ms": self.ms(),
                    "status": result.status if result else status,
                    "answer": result.answer if result else "",
                    "short_answer": result.short_answer if result else ""})

    def close(self) -> None:
        with self._lock:
            if not self._f.closed:
                self._f.close()


class TracingLLM:
    """An LLM backend that records every call into a :class:`TraceWriter`."""

    def __init__(self, inner: Any, writer: TraceWriter) -> None:
        self._inner = inner
        self._writer = writer

    def __getattr__(self, name: str) -> Any:  # name, supports_grammar, context_length, ...
        return getattr(self._inner, name)

    def stream(self, messages: list[Message], **kwargs: Any) -> Generator[str, None, Completion]:
        w = self._writer
        w.llm_calls += 1
        record: dict[str, Any] = {
            "kind": "llm_call", "n": w.llm_calls, "t_ms": w.ms(),
            "messages": [m.to_dict() for m in messages],
            **{k: v for k, v in kwargs.items() if k in ("grammar", "stop", "max_tokens")},
        }
        pieces: list[str] = []
        gen = self._inner.stream(messages, **kwargs)
        completion: Completion | None = None
        try:
            while True:
                try:
                    piece = next(gen)
                except StopIteration as stop:
                    completion = stop.value
                    return completion
                pieces.append(piece)
                yield piece
        finally:
            gen.close()
            record["output"] = "".join(pieces)
            record["completion"] = dataclasses.asdict(completion) if completion else None
            record["closed_early"] = completion is None
            w.write(record)


# ----------------------------------------------------------------- reading
def read_trace(path: Path) -> list[dict[str, Any]]:
    path = Path(path).expanduser()
    if not path.is_file():
        raise NotFoundError(f"no such trace file: {path}")
    records = [row for _, row in numbered_jsonl(path, "a trace record")]
    if not records or records[0].get("kind") != "header":
        raise BadInputError(f"{path} is not a kbagent trace (no header record)")
    if records[0].get("version") != TRACE_VERSION:
        raise BadInputError(f"{path} is a trace of version {records[0].get('version')}; "
                            f"this kbagent reads version {TRACE_VERSION}")
    return records


def result_from_dict(d: dict[str, Any]) -> AgentResult:
    return AgentResult.from_json(d)


def event_from_dict(d: dict[str, Any]) -> Event:
    kind = d.get("type")
    fields = {k: v for k, v in d.items() if k != "type"}
    if kind == Final.type:
        return Final(result_from_dict(fields))
    cls = _EVENT_TYPES.get(str(kind))
    if cls is None:
        raise BadInputError(f"unknown event type {kind!r} in trace")
    return cls(**fields)


def trace_events(records: list[dict[str, Any]]) -> list[Event]:
    return [event_from_dict(r["event"]) for r in records if r.get("kind") == "event"]
