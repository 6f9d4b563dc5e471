"""Scripted batch mode: many questions in, one JSON line per answer out.

UI-neutral (the CLI renders progress and the summary). Input is a text file
(one question a line; blank lines and ``#`` comments skipped) or JSONL
(``id``, ``question``, optional ``kb`` (a name or a list), ``mode``, ``tools``);
``-`` reads standard input. Every output line is the ``ask --json`` shape plus
``id`` and ``error`` (null on success), written and flushed as each question
finishes, so a killed run leaves valid JSONL holding every finished answer.

Resuming: ids already answered in OUTPUT are skipped; lines of failed
questions and a torn last line are dropped (by an atomic rewrite) so that a
re-run retries them. An id defaults to a hash of the question, so a text file
resumes too.
"""

from __future__ import annotations

import hashlib
import io
import json
import statistics
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kbagent.agent.kinds import AskMode, ToolSet
from kbagent.errors import BadInputError, KbagentError, NotFoundError
from kbagent.safe_text import json_text, valid_unicode

MODES = tuple(m.value for m in AskMode)
TOOL_SETS = tuple(t.value for t in ToolSet)


@dataclass
class BatchQuestion:
    id: str
    question: str
    line: int
    kb: list[str] | None = None
    mode: str | None = None
    tools: str | None = None


@dataclass
class BadLine:
    """An input line that cannot be asked; it is recorded with its error."""

    id: str
    line: int
    error: str
    question: str = ""


def question_id(question: str) -> str:
    """Stable id of a question: a hash of its words, case-folded."""
    norm = " ".join(question.split()).casefold()
    return "q-" + hashlib.sha256(norm.encode("utf-8")).hexdigest()[:12]


def _parse_json_line(n: int, raw: str) -> BatchQuestion | BadLine:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as e:
        return BadLine(f"line-{n}", n, f"line {n}: not a JSON object ({e.msg})")
    if not isinstance(obj, dict):
        return BadLine(f"line-{n}", n, f"line {n}: not a JSON object")
    qid = obj.get("id")
    question = obj.get("question")
    ident = str(qid) if isinstance(qid, str | int) and str(qid).strip() else None
    if not isinstance(question, str) or not question.strip():
        return BadLine(ident or f"line-{n}", n, f"line {n}: 'question' must be a non-empty "
                       "string")
    if not question.isascii() and question != valid_unicode(question):  # "\\udcff" in JSON
        return BadLine(ident or f"line-{n}", n, f"line {n}: 'question' holds a lone surrogate "
                       "escape (\\ud800-\\udfff), which is not text")
    ident = ident or question_id(question)
    kb = obj.get("kb")
    if isinstance(kb, str):
        kb = [kb]
    if kb is not None and not (isinstance(kb, list) and all(isinstance(k, str) for k in kb)):
        return BadLine(ident, n, f"line {n}: 'kb' must be a name or a list of names", question)
    mode, tools = obj.get("mode"), obj.get("tools")
    if mode is not None and mode not in MODES:
        return BadLine(ident, n, f"line {n}: unknown mode {mode!r} (choose from "
                       f"{', '.join(MODES)})", question)
    if tools is not None and tools not in TOOL_SETS:
        return BadLine(ident, n, f"line {n}: unknown tools {tools!r} (knowledge or full)",
                       question)
    # other keys (an evaluation set's answers, gold paths) are fine; privileges are not
    if {"as", "groups", "user", "principal"} & set(obj):
        return BadLine(ident, n, f"line {n}: a question cannot set who is asking "
                           "(use --as/--groups on the command line)", question)
    return BatchQuestion(ident, " ".join(question.split()), n, kb or None, mode, tools)


def parse_questions(lines: Iterable[str], source: str) -> list[BatchQuestion | BadLine]:
    """Parse input lines; the format is JSONL when the first non-blank line is a
    JSON object, otherwise one question a line."""
    items: list[BatchQuestion | BadLine] = []
    fmt: str | None = None
    seen: set[str] = set()
    for n, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text or (fmt != "jsonl" and text.startswith("#")):
            continue
        if fmt is None:
            fmt = "jsonl" if text.startswith("{") else "text"
        if fmt == "jsonl":
            item = _parse_json_line(n, text)
        else:
            item = BatchQuestion(question_id(text), " ".join(text.split()), n)
        if item.id in seen:
            item = BadLine(f"line-{n}", n, f"line {n}: duplicate id {item.id!r}",
                           getattr(item, "question", ""))
        seen.add(item.id)
        items.append(item)
    if not items:
        raise BadInputError(f"no questions in {source}")
    return items


def read_questions(path: str | Path, stdin: TextIO | None = None) -> list[BatchQuestion | BadLine]:
    if str(path) == "-":
        if stdin is None:
            raise BadInputError("no standard input to read questions from")
        buffer = getattr(stdin, "buffer", None)  # bytes: sys.stdin may decode them leniently
        text = utf8_text(buffer.read(), "standard input") if buffer is not None else (
            utf8_text(stdin.read(), "standard input"))
        return parse_questions(_lines(text), "standard input")
    p = Path(path).expanduser()
    if not p.exists():
        raise NotFoundError(f"no such question file: {p}")
    if not p.is_file():
        raise BadInputError(f"{p} is not a file")
    return parse_questions(_lines(utf8_text(p.read_bytes(), str(p))), str(p))


def _lines(text: str) -> list[str]:
    """Lines as a file opened in text mode reads them (``\\r\\n`` and ``\\r`` end a line too)."""
    return io.StringIO(text, newline=None).readlines()


def utf8_text(data: bytes | str, source: str) -> str:
    """``data`` as UTF-8 text, or a :class:`BadInputError` naming ``source``, the line and
    the first byte that is not UTF-8 (text read with ``surrogateescape`` holds them as
    lone surrogates: the same error)."""
    raw = data if isinstance(data, bytes) else None
    if isinstance(data, str):
        try:
            data.encode("utf-8")
            return data
        except UnicodeEncodeError:
            try:
                raw = data.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a surrogate no byte stands for
                raw = data.encode("utf-8", "surrogatepass")
    assert raw is not None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise BadInputError(f"{source} is not UTF-8 text (line {line}: byte "
                            f"0x{raw[e.start]:02x})") from None


def answered_ids(output: Path) -> set[str]:
    """Ids answered in an earlier run of OUTPUT. Failed lines and a torn last line
    are dropped from the file (atomic rewrite) so the re-run retries them."""
    if not output.is_file():
        return set()
    keep: list[str] = []
    ids: set[str] = set()
    dropped = False
    with open(output, encoding="utf-8", errors="replace") as f:
        for raw in f:
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError:
                dropped = True
                continue
            if isinstance(rec, dict) and rec.get("error") is None and "id" in rec:
                ids.add(str(rec["id"]))
                keep.append(raw if raw.endswith("\n") else raw + "\n")
            else:
                dropped = True
    if dropped:
        from kbagent.kb.file_modes import write_atomic

        write_atomic(output, "".join(keep))
    return ids


@dataclass
class BatchTally:
    total: int = 0
    skipped: int = 0  # answered by an earlier run
    answered: int = 0
    failed: int = 0
    latencies: list[float] = field(default_factory=list)  # seconds of answered questions
    started: float = field(default_factory=time.perf_counter)

    @property
    def done(self) -> int:
        return self.answered + self.failed

    @property
    def median_s(self) -> float:
        return statistics.median(self.latencies) if self.latencies else 0.0

    @property
    def per_minute(self) -> float:
        wall = time.perf_counter() - self.started
        return self.done / wall * 60 if wall > 0 else 0.0


RunOne = Callable[[BatchQuestion, Any], dict[str, Any]]  # (question, cancel token) -> result


def error_record(item: BatchQuestion | BadLine, message: str) -> dict[str, Any]:
    return {"id": item.id, "question": getattr(item, "question", ""), "line": item.line,
            "error": message}


class BatchRunner:
    """Ask every question once, write each record as it finishes.

    ``run_one`` answers one question and returns the ``ask --json`` dict; it may
    raise :class:`KbagentError` (recorded as that question's error). With
    ``workers`` > 1 questions run concurrently (only sensible for a server
    backend; the in-process model answers one at a time)."""

    def __init__(self, run_one: RunOne, out: TextIO, *, workers: int = 1,
                 on_record: Callable[[dict[str, Any], BatchTally], None] | None = None,
                 make_token: Callable[[], Any] | None = None) -> None:
        self.run_one = run_one
        self.out = out
        self.workers = max(1, workers)
        self.on_record = on_record or (lambda rec, tally: None)
        self.make_token = make_token or (lambda: None)
        self.tally = BatchTally()
        self._lock = threading.Lock()
        self._tokens: list[Any] = []

    def _write(self, rec: dict[str, Any], seconds: float | None) -> None:
        with self._lock:
            self.out.write(json_text(rec) + "\n")  # C1 controls escaped too
            self.out.flush()
            if rec.get("error") is None:
                self.tally.answered += 1
                if seconds is not None:
                    self.tally.latencies.append(seconds)
            else:
                self.tally.failed += 1
            self.on_record(rec, self.tally)

    def _ask(self, item: BatchQuestion, token: Any) -> tuple[dict[str, Any] | None, float]:
        t0 = time.perf_counter()
        try:
            result = self.run_one(item, token)
        except KbagentError as e:
            return error_record(item, str(e)), time.perf_counter() - t0
        except Exception as e:  # a bug must not sink the other questions
            return error_record(item, f"{type(e).__name__}: {e}"), time.perf_counter() - t0
        seconds = time.perf_counter() - t0
        status = result.get("status")
        if status == "cancelled":
            return None, seconds  # not recorded: a re-run asks it again
        error = None
        if status == "error":
            error = "the LLM backend failed: " + (result.get("stop_reason") or result.get(
                "answer", "")[:200])
        return {"id": item.id, "error": error, **result}, seconds

    def cancel(self) -> None:
        for token in list(self._tokens):
            if token is not None:
                token.cancel()

    def run(self, items: list[BatchQuestion | BadLine], skip: set[str]) -> BatchTally:
        self.tally.total = len(items)
        todo: list[BatchQuestion] = []
        for item in items:
            if isinstance(item, BadLine):
                self._write(error_record(item, item.error), None)
            elif item.id in skip:
                self.tally.skipped += 1
            else:
                todo.append(item)
        if self.workers == 1:
            for item in todo:
                token = self.make_token()
                self._tokens = [token]
                rec, seconds = self._ask(item, token)
                if rec is None:
                    raise KeyboardInterrupt
                self._write(rec, seconds)
            return self.tally
        with ThreadPoolExecutor(self.workers) as pool:
            pending: dict[Future[tuple[dict[str, Any] | None, float]], BatchQuestion] = {}
            queue = list(reversed(todo))
            try:
                while queue or pending:
                    while queue and len(pending) < self.workers:
                        token = self.make_token()
                        self._tokens.append(token)
                        item = queue.pop()
                        pending[pool.submit(self._ask, item, token)] = item
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        pending.pop(fut)
                        rec, seconds = fut.result()
                        if rec is not None:
                            self._write(rec, seconds)
            except KeyboardInterrupt:
                queue.clear()
                self.cancel()
                for fut in pending:
                    rec, seconds = fut.result()
                    if rec is not None:
                        self._write(rec, seconds)
                raise
        return self.tally
