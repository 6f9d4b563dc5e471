"""References that know their source: stamp a cited passage with hashes when an
answer is made, and later tell whether the knowledge base still says it.

A stamped reference (a chunk of an answer's references payload) carries:

* ``text_sha``: sha256 of the cited lines' stored text (joined by ``\\n``),
* ``doc_hash``: the document's content hash (the file's sha256) at answer time,
* ``generation``: the KB generation the answer read.

:func:`check_reference` compares one with the live KB and says *unchanged*
(same lines, same text), *moved* (the same text found at other lines, or in
another file after a rename), *changed* (the lines now say something else) or
*gone* (the file was deleted, or the cited lines no longer exist). A reference
recorded before hashes is *unchecked*. UI-neutral; every surface renders it.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from kbagent.kb.access import ANONYMOUS, Principal, may_read
from kbagent.kb.models import Line
from kbagent.text import shorten

if TYPE_CHECKING:
    from kbagent.settings import Settings

_WORD = re.compile(r"\w{4,}")  # words of an excerpt that find a renamed file's text
NOW_SAYS_CHARS = 200
MAX_DIFF_WORDS = 12  # words shown on each side of a change


class RefState(StrEnum):
    UNCHANGED = "unchanged"
    MOVED = "moved"
    CHANGED = "changed"
    GONE = "gone"
    UNCHECKED = "unchecked"  # recorded before hashes: nothing to compare


# worst first: an answer is as stale as its stalest reference
SEVERITY = {RefState.UNCHANGED: 0, RefState.UNCHECKED: 1, RefState.MOVED: 2,
            RefState.CHANGED: 3, RefState.GONE: 4}


class _Kb(Protocol):  # what a check needs of a KnowledgeBase (tests may pass a real one)
    name: str
    generation: str

    @property
    def store(self) -> Any: ...


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def span_lines(lines: list[Line], start: int, end: int) -> list[Line]:
    """The stored lines a reference ``start``-``end`` shows (as ``FileViews.cat``)."""
    return [ln for ln in lines if ln.last >= start and ln.number <= end]


def printable(text: str) -> str:
    """``text`` on one line, without control characters (document text is data:
    an escape sequence in a file must not drive the terminal that shows it)."""
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def joined(lines: list[Line]) -> str:
    return "\n".join(ln.text for ln in lines)


# ----------------------------------------------------------------- stamping
class Cited(Protocol):
    """A cited chunk as stamping sees it (the agent's ``ReferenceChunk``)."""

    kb: str
    path: str
    start_line: int
    end_line: int
    text_sha: str | None
    doc_hash: str | None
    generation: str | None


def stamp_references(kbs: Mapping[str, _Kb], chunks: Iterable[Cited]) -> None:
    """Set ``text_sha``, ``doc_hash`` and ``generation`` on every cited chunk of an
    answer, in place. A chunk whose KB or document cannot be read now is left
    unstamped."""
    cache: dict[tuple[str, str], tuple[str, list[Line]] | None] = {}
    for c in chunks:
        kb = kbs.get(c.kb)
        if kb is None:
            continue
        key = (kb.name, c.path)
        if key not in cache:
            loaded = kb.store.document_lines(key[1])
            cache[key] = None if loaded is None else (loaded[0].content_hash, loaded[1])
        got = cache[key]
        if got is None:
            continue
        c.text_sha = text_sha(joined(span_lines(got[1], c.start_line, c.end_line)))
        c.doc_hash = got[0]
        c.generation = kb.generation


# ----------------------------------------------------------------- checking
@dataclass
class RefCheck:
    """What became of one reference. ``path``/``start_line``/``end_line`` say where
    its text is now for *moved*; ``now_says`` is the text at the cited lines now for
    *changed*; ``diff`` a short word diff (``-old`` / ``+new``)."""

    n: int
    kb: str
    path: str
    start_line: int
    end_line: int
    state: RefState
    detail: str  # one line for people
    now_path: str = ""
    now_start: int = 0
    now_end: int = 0
    now_says: str = ""
    diff: list[str] = field(default_factory=list)

    @property
    def stale(self) -> bool:
        return self.state in (RefState.CHANGED, RefState.GONE, RefState.MOVED)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "state": str(self.state)}


def check_reference(kb: _Kb | None, ref: dict[str, Any],
                    principal: Principal = ANONYMOUS) -> RefCheck:
    """Compare a stamped reference with ``kb`` (None: the KB no longer exists)."""
    n, path = int(ref.get("n", 0)), str(ref.get("path", ""))
    start, end = int(ref.get("start_line", 0)), int(ref.get("end_line", 0))
    kb_name = str(ref.get("kb", ""))

    def result(state: RefState, detail: str, **kw: Any) -> RefCheck:
        return RefCheck(n, kb_name, path, start, end, state, printable(detail), **kw)

    sha = ref.get("text_sha")
    if not sha:
        return result(RefState.UNCHECKED, "cannot check: recorded before hashes")
    if kb is None:
        return result(RefState.GONE, f"KB '{kb_name}' no longer exists")
    loaded = kb.store.document_lines(path)
    if loaded is not None and not may_read(principal, loaded[0].access):
        loaded = None  # a document one may not read is as good as gone
    if loaded is None:
        elsewhere = _find_in_other_documents(kb, ref, end - start, principal, exclude=path)
        if elsewhere is not None:
            p, a, b = elsewhere
            return result(RefState.MOVED, f"moved since the answer: now {p}:{a}-{b}",
                          now_path=p, now_start=a, now_end=b)
        return result(RefState.GONE, f"gone since the answer: {path} was deleted")
    doc, lines = loaded
    if ref.get("doc_hash") == doc.content_hash:
        return result(RefState.UNCHANGED, "unchanged since the answer")
    if text_sha(joined(span_lines(lines, start, end))) == sha:
        return result(RefState.UNCHANGED, "unchanged since the answer (the file changed "
                      "elsewhere)")
    found = _find_span(lines, sha, end - start, near=start)
    if found is not None:
        a, b = found
        return result(RefState.MOVED, f"moved since the answer: now lines {a}-{b}",
                      now_path=path, now_start=a, now_end=b)
    now = span_lines(lines, start, end)
    if not now:
        total = max((ln.last for ln in lines), default=0)
        return result(RefState.GONE, f"gone since the answer: {path} has {total} lines now "
                      f"and the cited text is not in it")
    now_text = printable(joined(now))
    old = printable(str(ref.get("excerpt", "")))
    return result(RefState.CHANGED,
                  "changed since the answer: now says " + shorten(now_text, NOW_SAYS_CHARS),
                  now_path=path, now_start=start, now_end=end,
                  now_says=shorten(now_text, NOW_SAYS_CHARS), diff=word_diff(old, now_text))


def _find_span(lines: list[Line], sha: str, width: int, near: int) -> tuple[int, int] | None:
    """Lines ``a``-``a+width`` whose text hashes to ``sha`` (the match nearest to
    ``near``), or None. Windows are taken by line number, as a reference is."""
    hits: list[tuple[int, int]] = []
    j = 0  # one past the window's last line
    for i, first in enumerate(lines):
        a = first.number
        j = max(j, i)
        while j < len(lines) and lines[j].number <= a + width:
            j += 1
        if j > i and text_sha(joined(lines[i:j])) == sha:
            hits.append((a, a + width))
    return min(hits, key=lambda h: abs(h[0] - near)) if hits else None


def _find_in_other_documents(kb: _Kb, ref: dict[str, Any], width: int, principal: Principal,
                             exclude: str) -> tuple[str, int, int] | None:
    """A readable document holding the text (a renamed file): (path, start, end)."""
    for other in _candidates(kb, ref, exclude):
        loaded = kb.store.document_lines(other)
        if loaded is None or not may_read(principal, loaded[0].access):
            continue
        found = _find_span(loaded[1], str(ref["text_sha"]), width, near=0)
        if found is not None:
            return other, found[0], found[1]
    return None


def _candidates(kb: _Kb, ref: dict[str, Any], exclude: str) -> list[str]:
    """Documents that may hold the cited text, without reading them all: the ones
    with the old content hash (a pure rename) first, then the ones whose stored
    text has the longest words of the reference's excerpt (at most 50)."""
    words = sorted(set(_WORD.findall(str(ref.get("excerpt", "")))), key=lambda w: (-len(w), w))
    found: tuple[list[str], list[str]] = kb.store.text_candidates(
        str(ref.get("doc_hash", "")), words[:3], exclude)  # the local or PostgreSQL store
    same, having = found
    return same + [p for p in having if p not in same]


def word_diff(old: str, new: str) -> list[str]:
    """A short word diff of ``old`` -> ``new``: ``-removed words`` / ``+added words``
    for each change (at most a few, each cut to :data:`MAX_DIFF_WORDS` words).
    ``old`` may be an excerpt (cut short), so ``new`` is compared over as many words."""
    a, b = old.split(), new.split()
    if old.endswith("…") or len(b) > len(a) + MAX_DIFF_WORDS:
        b = b[: len(a) + 2]
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            out.append("-" + " ".join(a[i1:i2][:MAX_DIFF_WORDS]))
        if j2 > j1:
            out.append("+" + " ".join(b[j1:j2][:MAX_DIFF_WORDS]))
        if len(out) >= 6:
            break
    return out


# ----------------------------------------------------------------- answers
@dataclass
class AnswerCheck:
    """Every cited reference of one answer, checked; ``state`` is the worst."""

    question: str
    refs: list[RefCheck]

    @property
    def state(self) -> RefState:
        if not self.refs:
            return RefState.UNCHANGED
        return max((r.state for r in self.refs), key=lambda s: SEVERITY[s])

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "state": str(self.state),
                "references": [r.to_dict() for r in self.refs]}


def cited_chunks(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The cited chunks of an answer dict (``AgentResult.to_dict()`` form)."""
    return [{"kb": d.get("kb", ""), "path": d.get("path", ""), **c}
            for d in answer.get("references") or [] for c in d.get("chunks", [])]


class ReferenceChecker:
    """Checks references against the live KBs of one data home, opening each KB
    once (and re-reading ``CURRENT`` before each answer, for long-lived readers)."""

    def __init__(self, settings: Settings, principal: Principal = ANONYMOUS,
                 kbs: Mapping[str, Any] | None = None) -> None:
        self.settings = settings
        self.principal = principal
        self._kbs: dict[str, Any] = dict(kbs or {})  # ``kbs``: opened by the caller
        self._owned: set[str] = set()  # the ones this checker opened (and closes)

    def _kb(self, name: str) -> Any:
        from kbagent.errors import NotFoundError
        from kbagent.kb.stores import open_kb

        if name not in self._kbs:
            try:
                self._kbs[name] = open_kb(self.settings, name)
                self._owned.add(name)
            except NotFoundError:
                self._kbs[name] = None
        kb = self._kbs[name]
        if kb is not None:
            try:
                kb.refresh()
            except Exception:  # removed or broken since it was opened: checked as gone
                if name in self._owned:
                    kb.close()
                self._kbs[name] = kb = None
        return kb

    def check(self, ref: dict[str, Any]) -> RefCheck:
        return check_reference(self._kb(str(ref.get("kb", ""))), ref, self.principal)

    def check_answer(self, answer: dict[str, Any]) -> AnswerCheck:
        return AnswerCheck(str(answer.get("question", "")),
                           [self.check(c) for c in cited_chunks(answer)])

    def close(self) -> None:
        for name, kb in self._kbs.items():
            if kb is not None and name in self._owned:
                kb.close()
        self._kbs.clear()
        self._owned.clear()
