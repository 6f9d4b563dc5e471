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
    """Four example tasks built from the titles and headings of the documents
    ``principal`` may read: (kind, question) for a lookup, a problem analysis, a
    topic summary and a comparison. Deterministic (documents in path order)."""
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
    lookup = pick[0][1] or pick[0][0]
    other = pick[3] if pick[3] != pick[2] else docs[-1]
    return [
        ("lookup", f"What does {pick[0][0]} say about {lookup}?"),
        ("problem analysis", f"What problems are described in {pick[1][0]}, and what caused "
                             "them?"),
        ("topic summary", f"Summarize {pick[2][0]}."),
        ("comparison", f"Compare {pick[2][0]} and {other[0]}."),
    ]
