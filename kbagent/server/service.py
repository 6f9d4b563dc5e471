"""The transport-neutral core of the servers: one :class:`~kbagent.session.Session`
(KBs opened once, one LLM) shared by every client, each call made as its caller.

Searches, reads and symbol lookups run concurrently (from any thread); questions
queue for the one LLM (a llama.cpp model runs one generation at a time) behind a
lock, so a slow ask never blocks a search. The queue is bounded: at most
``serve_max_asks`` questions running or waiting in all and ``serve_max_asks_per_caller``
per caller; one more is refused at once with :class:`ServerBusyError` ("retry
later"), never left to hang. A question whose client went away (the transport
cancels :data:`CLIENT_GONE`) is cancelled and frees its place. Every call takes the caller's
:class:`~kbagent.kb.access.Principal` and goes through a per-caller view of the
session, so access is decided where the CLI and TUI decide it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any
from urllib.parse import quote, unquote

from kbagent.agent.cancel import CancelToken
from kbagent.agent.kinds import AskMode
from kbagent.errors import BadInputError, ExitCode, KbagentError, NotFoundError
from kbagent.kb.access import ANONYMOUS, Principal
from kbagent.server import models as m
from kbagent.session import MODES, Session
from kbagent.settings import Settings

SCHEME = "kbagent"
MAX_QUERY_CHARS = 2000  # a search query or a question; longer input is refused, not cut
MAX_K = 100
SEARCH_MODES = ("hybrid", "bm25", "vector")
READ_DEFAULT_LINES = 80  # the agent's kb_cat rule: 80 lines unless an end is given...
READ_MAX_LINES = 120  # ...and never more than 120 at once (next_line says where to go on)
LIMITS = ("serve_max_asks", "serve_max_asks_per_caller")

# The client of the call being served, as a token the transport cancels when that
# client goes away (``kbagent serve``: the HTTP connection that carried the call closed).
# An ask made under it is cancelled then, so an abandoned question frees its place.
CLIENT_GONE: ContextVar[CancelToken | None] = ContextVar("kbagent_client_gone", default=None)


class ServerBusyError(KbagentError):
    """Too many questions are running or waiting for the model: retry later."""

    exit_code = ExitCode.BUSY


def document_uri(kb: str, path: str) -> str:
    return f"{SCHEME}://{quote(kb, safe='')}/{quote(path, safe='/')}"


def parse_uri(uri: str) -> tuple[str, str]:
    """``kbagent://KB/path`` -> (KB, path); anything else is a one-line error."""
    prefix = SCHEME + "://"
    text = str(uri)
    if not text.startswith(prefix) or "/" not in text[len(prefix):]:
        raise BadInputError(f"not a kbagent document URI: {text[:200]!r} "
                            "(expected kbagent://KB/path)")
    kb, path = text[len(prefix):].split("/", 1)
    return unquote(kb), unquote(path)


def check_text(what: str, value: Any) -> str:
    if not isinstance(value, str):
        raise BadInputError(f"{what} must be a string")
    text = value.strip()
    if not text:
        raise BadInputError(f"empty {what}")
    if len(text) > MAX_QUERY_CHARS:
        raise BadInputError(f"{what} is {len(text)} characters long; the limit is "
                            f"{MAX_QUERY_CHARS}")
    return text


class KbService:
    """One KB set and one model for every client of a server."""

    def __init__(self, settings: Settings, kb_names: list[str] | None = None, *,
                 principal: Principal = ANONYMOUS, llm: Any = None,
                 mode: AskMode = AskMode.AUTO) -> None:
        for name in LIMITS:
            if getattr(settings, name) < 1:
                raise BadInputError(f"setting {name!r} must be 1 or more, got "
                                    f"{getattr(settings, name)}")
        self.settings = settings
        self.principal = principal  # the caller when the transport names no one
        self.session = Session(settings, kb_names, mode=mode, llm=llm)
        self.session.open_kbs()
        self.max_asks = settings.serve_max_asks
        self.max_asks_per_caller = settings.serve_max_asks_per_caller
        self._generation = threading.Lock()  # one question at a time on the LLM
        self._count = threading.Lock()
        self.asks_waiting = 0  # questions waiting for the LLM (shown by /health)
        self._asks: dict[Principal, int] = {}  # questions running or waiting, per caller

    @property
    def asks(self) -> int:
        """Questions admitted: running or waiting for the LLM (shown by /health)."""
        with self._count:
            return sum(self._asks.values())

    def close(self) -> None:
        self.session.close()

    def view(self, principal: Principal | None = None) -> Session:
        return self.session.for_principal(principal or self.principal)

    # --- tools without the LLM ----------------------------------------------------
    def search(self, principal: Principal, query: str, kbs: list[str] | None = None,
               k: int = 10, mode: str = "hybrid") -> m.SearchResult:
        query = check_text("query", query)
        if mode not in SEARCH_MODES:
            raise BadInputError(f"unknown search mode {mode!r} (hybrid, bm25 or vector)")
        if not 1 <= k <= MAX_K:
            raise BadInputError(f"k must be between 1 and {MAX_K}, got {k}")
        res = self.view(principal).search(query, k=k, mode=mode, kbs=kbs or None)
        hits = [m.SearchHit(kb=h.kb, path=h.path, start_line=h.start_line,
                            end_line=h.end_line, heading=h.heading, excerpt=h.text,
                            uri=document_uri(h.kb, h.path), score=h.score,
                            bm25_rank=h.bm25_rank, bm25_score=h.bm25_score,
                            vector_rank=h.vector_rank, vector_score=h.vector_score,
                            location=h.location or "")
                for h in res.hits]
        return m.SearchResult(query=query, mode=mode, hits=hits, failed_kbs=res.failed_kbs)

    def _views(self, principal: Principal, kb: str | None) -> list[tuple[str, Any]]:
        from kbagent.kb.views import FileViews

        session = self.session
        kbs = [session.kb(kb)] if kb else session.kbs
        if not kbs:
            raise NotFoundError("no knowledge base is open")
        return [(base.name, FileViews(base, principal)) for base in kbs]

    def read(self, principal: Principal, path: str, kb: str | None = None, start: int = 1,
             end: int | None = None) -> m.ReadResult:
        """Numbered lines of ``path``, under the agent's ``kb_cat`` rule; a document the
        caller may not read is reported exactly like a missing one."""
        if start < 1:
            raise BadInputError(f"start must be 1 or more, got {start}")
        if end is not None and end < start:
            raise BadInputError(f"end ({end}) is before start ({start})")
        end = start + READ_DEFAULT_LINES - 1 if end is None else end
        last: KbagentError | None = None
        for name, views in self._views(principal, kb):
            try:
                res = views.cat(path, start, end, max_lines=READ_MAX_LINES)
            except NotFoundError as e:
                last = e
                continue
            lines = [m.NumberedLine(number=ln.number, text=ln.text) for ln in res.lines]
            return m.ReadResult(kb=name, path=res.path, title=res.title, start_line=start,
                                end_line=max((ln.last for ln in res.lines), default=start),
                                total_lines=res.total_lines, next_line=res.next_line,
                                lines=lines)
        raise last or NotFoundError(f"no file '{path}'")

    def list_kbs(self, principal: Principal) -> m.KbList:
        out = []
        for base in self.session.kbs:
            docs, chunks = base.store.visible_counts(principal)
            out.append(m.KbInfo(name=base.name, documents=docs, chunks=chunks,
                                embedding_model=str(base.manifest.get("embedding_model", ""))))
        return m.KbList(kbs=out, failed_kbs=self.session.failed_kbs)

    def symbols(self, principal: Principal, symbol: str, what: str = "def",
                kbs: list[str] | None = None) -> m.SymbolResult:
        """Definitions (``def``) or references (``refs``) of ``symbol`` in the files
        ``principal`` may read."""
        from kbagent.kb.symbol_index import NoSymbolIndex, SymbolIndex
        symbol = check_text("symbol", symbol)
        results: list[m.SymbolLocation] = []
        missing: list[str] = []
        bases = [self.session.kb(n) for n in dict.fromkeys(kbs)] if kbs else self.session.kbs
        for base in bases:
            try:
                index = SymbolIndex(base, principal)  # filters every hit by may_read
            except NoSymbolIndex:
                missing.append(base.name)
                continue
            hits = index.definitions(symbol) if what == "def" else index.references(symbol)
            results += [m.SymbolLocation(**h.to_dict(), uri=document_uri(h.kb, h.path))
                        for h in hits]
        return m.SymbolResult(symbol=symbol, results=results, missing_index=missing)

    # --- documents as resources ---------------------------------------------------
    def documents(self, principal: Principal) -> list[tuple[str, str]]:
        """(KB, path) of every document ``principal`` may read."""
        return [(name, path) for name, views in self._views(principal, None)
                for path in views.paths()]

    def document_text(self, principal: Principal, uri: str) -> str:
        kb, path = parse_uri(uri)
        try:
            (_, views), = self._views(principal, kb)
        except NotFoundError:
            raise NotFoundError(f"no document {uri}") from None
        res = views.cat(path, 1, None, max_lines=1_000_000)
        return "\n".join(ln.text for ln in res.lines)

    # --- questions ----------------------------------------------------------------
    def ask(self, principal: Principal, question: str, *, mode: str | None = None,
            token: CancelToken | None = None,
            on_event: Callable[[Any], None] | None = None,
            previous: tuple[str, str] | None = None) -> m.AskResult:
        """Run the agent for ``principal`` (blocking: call it from a worker thread).
        Questions wait for the LLM in turn; a cancel while waiting or running ends the
        run (``token``). ``on_event`` sees every agent event as it happens; ``previous``
        (question, answer) makes it a follow-up. Beyond the limits on questions (in all,
        per caller) it raises :class:`ServerBusyError` at once."""
        question = check_text("question", question)
        if mode is not None and mode not in MODES:
            raise BadInputError(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
        token = token or CancelToken()
        self._admit(principal)
        gone = CLIENT_GONE.get()
        unhook = gone.on_cancel(token.cancel) if gone is not None else None
        try:
            return self._run(principal, question, mode, token, on_event, previous)
        finally:
            if unhook is not None:
                unhook()
            self._leave(principal)

    def _run(self, principal: Principal, question: str, mode: str | None, token: CancelToken,
             on_event: Callable[[Any], None] | None,
             previous: tuple[str, str] | None) -> m.AskResult:
        from kbagent.agent.events import Final

        view = self.view(principal)
        view.mode = AskMode(mode) if mode else self.session.mode
        self._waiting(+1)
        try:
            while not self._generation.acquire(timeout=0.05):
                if token.cancelled:
                    return cancelled(question, view.mode)
        finally:
            self._waiting(-1)
        try:
            if token.cancelled:
                return cancelled(question, view.mode)
            view.set_llm(self.session.load_llm())
            result = None
            for ev in view.ask(question, token=token, previous=previous):
                if on_event is not None:
                    on_event(ev)
                if isinstance(ev, Final):
                    result = ev.result
        finally:
            self._generation.release()
        if result is None:
            return cancelled(question, view.mode)
        return ask_result(result)

    def _admit(self, principal: Principal) -> None:
        with self._count:
            total, mine = sum(self._asks.values()), self._asks.get(principal, 0)
            if total >= self.max_asks:
                raise ServerBusyError(
                    f"server busy: {total} questions are already running or waiting for the "
                    f"model (serve_max_asks = {self.max_asks}); retry later")
            if mine >= self.max_asks_per_caller:
                raise ServerBusyError(
                    f"server busy: this caller already has {mine} questions running or "
                    f"waiting (serve_max_asks_per_caller = {self.max_asks_per_caller}); "
                    "retry when one has finished")
            self._asks[principal] = mine + 1

    def _leave(self, principal: Principal) -> None:
        with self._count:
            left = self._asks.get(principal, 1) - 1
            if left > 0:
                self._asks[principal] = left
            else:
                self._asks.pop(principal, None)

    def _waiting(self, delta: int) -> None:
        with self._count:
            self.asks_waiting += delta


def cancelled(question: str, mode: str) -> m.AskResult:
    return m.AskResult(question=question, answer="", status="cancelled", mode=str(mode),
                       references=[], steps=0)


def ask_result(result: Any) -> m.AskResult:
    refs = [m.Reference(n=c.n, kb=c.kb, path=c.path, start_line=c.start_line,
                        end_line=c.end_line, where=c.where, uri=document_uri(c.kb, c.path),
                        excerpt=c.excerpt, location=c.location)
            for c in result.references.chunks()]
    return m.AskResult(question=result.question, answer=result.answer,
                       status=str(result.status), mode=str(result.mode),
                       references=sorted(refs, key=lambda r: r.n), steps=len(result.steps),
                       abstained=result.abstained)

