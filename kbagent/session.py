"""The session layer shared by every surface (CLI, TUI, batch): UI-neutral.

It opens KBs (several at once: a missing or corrupted one is reported in
``failed_kbs`` while the others are served), loads the LLM, builds the
:class:`~kbagent.agent.run.loop.Agent`, owns one cancel token per run, and saves /
resolves the last answer's references. It imports no UI library (Textual,
Typer, rich): tests/test_layering.py checks that.

:meth:`Session.open_kbs` and :meth:`Session.search` are the one place where KBs
are opened and searched, so access control (a principal) can be wired in there.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbagent.agent.cancel import CancelToken
from kbagent.agent.kinds import AskMode, ToolSet
from kbagent.agent.records import References
from kbagent.errors import BadInputError, NotFoundError
from kbagent.kb.access import ANONYMOUS, Principal
from kbagent.kb.file_modes import private_dir
from kbagent.session_kbs import OpenedKbs, open_kbs
from kbagent.settings import Settings

if TYPE_CHECKING:
    from kbagent.agent.events import AgentResult, Event
    from kbagent.agent.llm.base import LLM
    from kbagent.agent.run.conversation import Conversation
    from kbagent.agent.run.loop import Agent
    from kbagent.kb.embedder import Embedder
    from kbagent.kb.models import Line
    from kbagent.kb.search import HybridSearcher, SearchResult
    from kbagent.kb.store_protocol import KbReader

LAST_ANSWER = "last_answer.json"
MODES = tuple(m.value for m in AskMode)  # for pickers (the TUI's options)
TOOL_SETS = tuple(t.value for t in ToolSet)


# ------------------------------------------------------------ last answer
def last_answer_path(settings: Settings, principal: Principal = ANONYMOUS) -> Path:
    """One last-answer file per principal's groups: ``ref`` as someone else never
    sees what this principal's answer cited."""
    return settings.home / LAST_ANSWER.replace(".json", f".{principal.key}.json")


def save_last_answer(settings: Settings, result: AgentResult,
                     principal: Principal = ANONYMOUS) -> None:
    """Keep the last answer (with every reference seen) for ``kbagent ref``."""
    from kbagent.kb.file_modes import write_atomic

    private_dir(settings.home)  # the answer quotes documents: 0700 here, the file 0600
    write_atomic(last_answer_path(settings, principal),
                 json.dumps(result.to_json(), ensure_ascii=False))


def load_last_answer(settings: Settings, principal: Principal = ANONYMOUS) -> dict[str, Any]:
    path = last_answer_path(settings, principal)
    if not path.is_file():
        raise NotFoundError("no answer yet; run 'kbagent ask QUESTION' first")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BadInputError(f"cannot read the last answer ({e}); ask again") from e
    if not isinstance(data, dict):
        raise BadInputError("cannot read the last answer (not an answer); ask again")
    return data


def find_reference(answer: dict[str, Any], n: int) -> dict[str, Any]:
    """Reference ``[n]`` of an answer dict (``to_dict()`` form)."""
    refs = References.from_json(answer.get("all_references") or answer.get("references"))
    found = refs.reference(n)
    if found is not None:
        return found.to_json()
    known = refs.numbers()
    raise NotFoundError(f"no reference [{n}] in the last answer"
                        + (f" (known: {', '.join(map(str, known))})" if known else ""))


@dataclass
class ReferenceView:
    """The lines behind one reference, ready for any surface to render."""

    n: int
    kb: str
    path: str
    on_disk: Path
    start_line: int
    end_line: int
    lines: list[Line]
    location: str = ""  # where the lines lie in the source: "p.2 l.3-9", "slide 3", ...


def reference_view(settings: Settings, ref: dict[str, Any], max_lines: int = 400,
                   principal: Principal = ANONYMOUS) -> ReferenceView:
    """The cited lines, read again now, only if ``principal`` may read them (a denied
    document reads as a missing one)."""
    from kbagent.kb.stores import open_kb
    from kbagent.kb.views import FileViews

    kb = open_kb(settings, ref["kb"])
    try:
        res = FileViews(kb, principal).cat(ref["path"], ref["start_line"], ref["end_line"],
                                max_lines=max_lines)
        on_disk = Path(kb.manifest.get("source", "")) / ref["path"]
    finally:
        kb.close()
    return ReferenceView(int(ref.get("n", 0)), ref["kb"], ref["path"], on_disk,
                         ref["start_line"], ref["end_line"], res.lines, res.location)


# Files a text editor cannot show: the system's opener gets them (a PDF viewer, an
# office suite), the location in the reference says where to look.
SYSTEM_OPENED = frozenset({".pdf", ".docx", ".pptx", ".xlsx", ".xlsm", ".epub", ".ipynb",
                           ".odt", ".ods", ".odp", ".fodt", ".fods", ".fodp"})


def system_opener() -> str:
    """The desktop's "open this file" command: ``open`` on macOS, else ``xdg-open``."""
    return "open" if sys.platform == "darwin" else "xdg-open"


def editor_command(on_disk: Path, line: int) -> list[str]:
    """``$VISUAL``/``$EDITOR +line file`` as an argv (a PDF or an Office file: the
    system opener, ``xdg-open file``); the surface runs it."""
    if on_disk.suffix.lower() in SYSTEM_OPENED:
        if not on_disk.is_file():
            raise NotFoundError(f"{on_disk} is no longer on disk")
        opener = system_opener()
        if shutil.which(opener) is None:
            raise BadInputError(f"'{opener}' is not installed; open {on_disk} yourself")
        return [opener, str(on_disk)]
    cmd = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not cmd:
        raise BadInputError("set $EDITOR (or $VISUAL) to open references in an editor")
    if not on_disk.is_file():
        raise NotFoundError(f"{on_disk} is no longer on disk")
    return [*shlex.split(cmd), f"+{line}", str(on_disk)]


def document_chunk_spans(kb: KbReader, path: str) -> list[tuple[int, int]]:
    """(start_line, end_line) of each chunk of ``path``, in order."""
    return [(int(a), int(b)) for a, b in kb.store.chunk_spans(path)]


# ----------------------------------------------------------------- session
class Session:
    """KBs, LLM and agent for one surface. Thread-safe for one run at a time plus
    searches from other threads (KB refresh never closes a store in use)."""

    def __init__(self, settings: Settings, kb_names: list[str] | None = None, *,
                 mode: AskMode = AskMode.AUTO, tools: ToolSet = ToolSet.KNOWLEDGE,
                 max_steps: int | None = None,
                 token_budget: int | None = None, time_limit: float | None = None,
                 llm: LLM | None = None, principal: Principal = ANONYMOUS) -> None:
        self.settings = settings
        self.principal = principal  # who is asking: every search, tool and answer obeys it
        self.kb_names = list(kb_names or [])
        self.mode, self.tools = mode, tools
        self.max_steps, self.token_budget, self.time_limit = max_steps, token_budget, time_limit
        self.kbs: list[KbReader] = []
        self.failed_kbs: dict[str, str] = {}
        self._llm = llm
        self._owns_llm = False  # loaded here (closed by close()), not handed in
        self._llm_lock = threading.Lock()
        self._searcher: HybridSearcher | None = None
        self.embedder_load_s = 0.0  # spent loading query embedders (not searching)
        self._token: CancelToken | None = None  # the current or prepared run's token
        self._prepared: CancelToken | None = None  # made by prepare_run, not yet started
        self._lock = threading.Lock()
        self._conversation: Conversation | None = None  # the last run's turns (ask)

    # --- KBs ----------------------------------------------------------------
    def open_kbs(self, *, required: bool = True) -> OpenedKbs:
        """Open the session's KBs (all when none were named). With ``required`` False
        a session with no KB at all is allowed (direct mode, an empty home)."""
        try:
            opened = open_kbs(self.settings, self.kb_names)
        except NotFoundError:
            if required or self.kb_names:
                raise
            opened = OpenedKbs([], {})
        for kb in self.kbs:
            kb.close()
        self.kbs, self.failed_kbs = opened.kbs, opened.failed
        self._searcher = None
        return opened

    @property
    def searcher(self) -> HybridSearcher:
        from kbagent.kb.search import HybridSearcher

        if self._searcher is None:
            from kbagent.kb.rerank import reranker_from

            st = self.settings  # the reranker is None unless rerank_url / rerank_model is set
            reranker = reranker_from(st.rerank_url, st.rerank_model, st.rerank_top_n,
                                     st.rerank_timeout)
            self._searcher = HybridSearcher(self.kbs, embedder_for=self._embedder,
                                            reranker=reranker)
        return self._searcher

    def _embedder(self, space: str) -> Embedder:
        """The query embedder of a KB's vector space (loaded once per process); the
        time it takes is counted in ``embedder_load_s``, apart from searching."""
        from kbagent.kb.embedder import embedder_for_space

        started = time.perf_counter()
        embedder = embedder_for_space(space, self.settings.embedding_runtime, self.settings)
        self.embedder_load_s += time.perf_counter() - started
        return embedder

    def search(self, query: str, k: int = 10, mode: str = "hybrid",
               kbs: list[str] | None = None) -> SearchResult:
        """Search the open KBs, or only those named in ``kbs`` (no LLM), as the
        session's principal, reranked when the settings name a reranker; failures of
        single KBs are in ``result.failed_kbs`` with the ones that did not open."""
        if not self.kbs:
            raise NotFoundError("no knowledge base is open; ingest a folder first")
        searcher = self.searcher
        if kbs:
            from kbagent.kb.search import HybridSearcher

            chosen = [self.kb(name) for name in dict.fromkeys(kbs)]
            if len(chosen) < len(self.kbs):
                searcher = HybridSearcher(chosen, embedder_for=self._embedder,
                                          reranker=self.searcher.reranker)
        result = searcher.search(query, k=k, mode=mode, principal=self.principal)
        result.failed_kbs = {**self.failed_kbs, **result.failed_kbs}
        return result

    def for_principal(self, principal: Principal) -> Session:
        """This session for another caller: the same open KBs, searcher and LLM (one
        model serves every client of a server), its own principal and cancel tokens.
        The view must not open or close KBs: the session it came from owns them."""
        import copy

        self.searcher  # noqa: B018  (built once here, so every view shares it)
        view = copy.copy(self)
        view.principal = principal
        view._token = view._prepared = None
        view._conversation = None  # a caller's turns are its own
        view._lock = threading.Lock()
        return view

    def kb(self, name: str) -> KbReader:
        for kb in self.kbs:
            if kb.name == name:
                kb.refresh()  # follow a generation published since (ingest, --watch)
                return kb
        raise NotFoundError(f"KB '{name}' is not open in this session")

    # --- LLM and agent ------------------------------------------------------
    @property
    def llm_loaded(self) -> bool:
        return self._llm is not None

    def load_llm(self) -> LLM:
        """Load (once) the LLM the settings ask for; safe to call from a worker."""
        with self._llm_lock:
            if self._llm is None:
                from kbagent.agent.llm import load_llm

                self._llm = load_llm(self.settings)
                self._owns_llm = True
            return self._llm

    def set_llm(self, llm: LLM | None, *, owned: bool = False) -> LLM | None:
        """Use ``llm`` from now on (``owned``: :meth:`close` closes it). The LLM it replaces
        is returned when this session had loaded it, for the caller to close; else None."""
        with self._llm_lock:
            old = self._llm if self._owns_llm and self._llm is not llm else None
            self._llm, self._owns_llm = llm, owned
        return old

    def llm_description(self) -> str:
        if self._llm is not None:
            return str(getattr(self._llm, "name", "llm"))
        from kbagent.models.store import display_name

        return self.settings.llm_url or display_name(self.settings.llm_model, self.settings.home)

    def agent(self, llm: LLM | None = None) -> Agent:
        """A fresh agent over the session's KBs (``llm``: e.g. a tracing wrapper)."""
        from kbagent.agent.run.loop import Agent
        from kbagent.agent.run.state import AgentConfig

        config = AgentConfig.from_settings(self.settings, mode=self.mode, tools=self.tools,
                                           max_steps=self.max_steps,
                                           token_budget=self.token_budget,
                                           time_limit=self.time_limit)
        return Agent(llm or self.load_llm(), self.kbs, config,
                     searcher=self.searcher if self.kbs else None, principal=self.principal)

    # --- runs and cancel ----------------------------------------------------
    def prepare_run(self) -> CancelToken:
        """Make the next run's token now (before its worker starts) so a cancel
        pressed in between is kept."""
        with self._lock:
            self._prepared = self._token = CancelToken()
            return self._token

    def cancel(self) -> None:
        """Cancel the current run, or the prepared one that has not started yet."""
        with self._lock:
            token = self._token
        if token is not None:
            token.cancel()

    def ask(self, question: str, *, previous: tuple[str, str] | None = None,
            token: CancelToken | None = None, trace_to: Path | None = None) -> Iterator[Event]:
        """Run the agent on ``question``; yield its events. ``previous`` (question,
        answer) of the last turn makes this a follow-up, whose earlier turns are the run's
        context, never glued to the question (:func:`follow_up_context`); ``trace_to``
        records the run (prompts, raw output, events) in that JSONL file."""
        with self._lock:
            token = token or self._prepared or CancelToken()
            self._prepared, self._token = None, token
        context = follow_up_context(self._conversation, previous)
        if trace_to is None:
            yield from self._remembered(context, self.agent().run(question, cancel=token,
                                                                  context=context))
            return
        from kbagent.agent.llm.trace import TraceWriter, TracingLLM

        writer = TraceWriter(trace_to)
        result = None
        try:
            writer.header(question=question, kbs=self.kbs, mode=self.mode, tools=self.tools,
                          settings=self.settings, llm=self.load_llm(), principal=self.principal)
            run = self.agent(TracingLLM(self.load_llm(), writer)).run(
                question, cancel=token, context=context)
            for ev in self._remembered(context, run):
                writer.event(ev)
                result = getattr(ev, "result", result)
                yield ev
        finally:
            writer.end(result, "interrupted")
            writer.close()

    def _remembered(self, context: Conversation | None,
                    events: Iterator[Event]) -> Iterator[Event]:
        """``events``; the run's turn is remembered with its ``context``, so the next
        follow-up of this session carries the turns before its previous one."""
        from kbagent.agent.events import Final
        from kbagent.agent.run.conversation import Conversation

        try:
            for ev in events:
                if isinstance(ev, Final):
                    self._conversation = (context or Conversation()).then(
                        ev.result.question, ev.result.answer)
                yield ev
        finally:  # a run left early (a closed stream) ends now, as with ``yield from``
            close = getattr(events, "close", None)
            if close is not None:
                close()

    def save_last_answer(self, result: AgentResult) -> None:
        save_last_answer(self.settings, result, self.principal)

    def close(self) -> None:
        """Close the KBs, and the model if this session loaded it (a model freed
        explicitly, not by its finaliser at interpreter exit)."""
        for kb in self.kbs:
            kb.close()
        self.kbs = []
        llm = self.set_llm(None) if self._owns_llm else None
        close = getattr(llm, "close", None)
        if close is not None:
            close()


def follow_up_context(remembered: Conversation | None,
                      previous: tuple[str, str] | None) -> Conversation | None:
    """The earlier turns of a follow-up whose previous turn is ``previous`` (None: not
    a follow-up): the agent's search and prompts see them, the question is never glued
    to them. The last run's ``remembered`` turns come along when it was ``previous``."""
    from kbagent.agent.run.conversation import Conversation, Turn

    if not previous or not previous[0]:
        return None
    turn = Turn(*previous)
    if remembered is not None and remembered.last == turn:
        return remembered
    return Conversation((turn,))
