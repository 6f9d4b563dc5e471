"""The KBs of a session: opening several at once (a missing or corrupted one is
reported while the others are served), and example questions made from what a
principal may read in them. UI-neutral, like :mod:`kbagent.session`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kbagent.errors import KbagentError, NotFoundError
from kbagent.kb.access import ANONYMOUS, Principal, may_read

if TYPE_CHECKING:
    from kbagent.kb.store_protocol import KbReader
    from kbagent.settings import Settings


@dataclass
class OpenedKbs:
    """The KBs that opened, and why the others did not (name -> one-line reason)."""

    kbs: list[KbReader]
    failed: dict[str, str] = field(default_factory=dict)


def open_kbs(settings: Settings, names: list[str] | None) -> OpenedKbs:
    """Open the named KBs, or every KB when none is named. A KB that is unknown,
    unreadable or corrupted is reported in ``failed`` and the others are served;
    when none opens the first failure is raised (so its exit code is kept)."""
    from kbagent.kb.stores import list_all_kbs, open_kb

    failed: dict[str, str] = {}
    if not names:
        infos = list_all_kbs(settings)
        names = [k.name for k in infos if not k.error]
        failed.update({k.name: k.error for k in infos if k.error})
        if not names and not failed:
            raise NotFoundError("no knowledge bases yet; run 'kbagent ingest PATH' first")
    kbs: list[KbReader] = []
    first_error: KbagentError | None = None
    for name in dict.fromkeys(names):
        try:
            kbs.append(open_kb(settings, name))
        except KbagentError as e:
            failed[name] = str(e)
            first_error = first_error or e
    if not kbs:
        if first_error is not None:
            raise first_error
        raise KbagentError("no knowledge base could be opened: " + "; ".join(
            f"{n}: {r}" for n, r in failed.items()))
    return OpenedKbs(kbs, failed)


def example_questions(kbs: list[KbReader], principal: Principal = ANONYMOUS
                      ) -> list[tuple[str, str]]:
    """Up to four example tasks built from the titles and headings of the documents
    ``principal`` may read: (kind, question) for a lookup, a problem analysis, a
    topic summary and a comparison (none when every title is the same). A question
    never names a document as its own subject and object. Deterministic (documents in
    path order)."""
    docs: list[tuple[str, str]] = []  # (title, first heading)
    for kb in kbs:
        for title, path, heading, access in kb.store.first_headings():
            if not may_read(principal, access):
                continue
            name = (title or Path(path).stem.replace("_", " ").replace("-", " ")).strip()
            last = (heading or "").split(" > ")[-1].strip()
            docs.append((name, re.sub(r"^\d+[.)]\s*", "", last)))  # "1. Q3" -> "Q3"
    if not docs:
        return []
    pick = [docs[(i * max(1, len(docs) // 4)) % len(docs)] for i in range(4)]
    cards = [
        ("lookup", _lookup(docs)),
        ("problem analysis", f"What problems are described in {pick[1][0]}, and what caused "
                             "them?"),
        ("topic summary", f"Summarize {pick[2][0]}."),
    ]
    # never "Compare X and X": another title, or no comparison (one document)
    others = [d for d in (pick[3], *reversed(docs)) if _words(d[0]) != _words(pick[2][0])]
    if others:
        cards.append(("comparison", f"Compare {pick[2][0]} and {others[0][0]}."))
    return cards


def _words(text: str) -> list[str]:
    words = re.findall(r"\w+", text.casefold())
    return words[1:] if words[:1] in (["the"], ["a"], ["an"]) else words


def _lookup(docs: list[tuple[str, str]]) -> str:
    """A lookup question about a topic of a document: the first document whose first
    heading is not its own title (a document titled "The Ardmore Lighthouse" whose
    heading is "Ardmore Lighthouse" has no topic apart from itself: "What does X say
    about X?"); when none has one, a question about the first document."""
    for title, topic in docs:
        if topic and _words(topic) != _words(title):
            return f"What does {title} say about {topic}?"
    return f"What are the key facts in {docs[0][0]}?"
