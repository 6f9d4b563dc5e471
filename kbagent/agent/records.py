"""The typed records of a finished run (:class:`~kbagent.agent.events.AgentResult`):
its references, its sentences and the grounding check's repairs.

Each writes, with ``to_json()``, exactly the JSON the run's ``--json`` output,
traces, history and the last-answer file have always held (the same keys in the
same order), and reads it back with ``from_json()``; records written by an older
kbagent, without the keys added since, read with their defaults.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from kbagent.agent.kinds import RepairAction
from kbagent.text import shorten

# provenance stamps (kbagent.kb.provenance.stamp_references): written only once set
STAMPS = ("text_sha", "doc_hash", "generation")


@dataclass
class ReferenceChunk:
    """One cited chunk: badge number, where it lies, how it was found, what it says."""

    n: int
    kb: str
    path: str
    start_line: int
    end_line: int
    score: float | None  # retrieval score; None for text read by kb_cat or kb_grep
    tool: str
    heading: str
    excerpt: str
    supported: bool | None  # does it back the sentences that cite it (None: not checked)
    location: str = ""  # in the source's own terms: "p.2 l.3-9", "slide 3", "Budget!A2:C9"
    # what the KB said when the answer was made (stamped once the run ends)
    text_sha: str | None = None
    doc_hash: str | None = None
    generation: str | None = None

    @property
    def where(self) -> str:
        """``path:start-end``."""
        return f"{self.path}:{self.start_line}-{self.end_line}"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in STAMPS:
            if data[key] is None:
                del data[key]
        return data

    @classmethod
    def from_json(cls, d: dict[str, Any], doc: dict[str, Any] | None = None) -> ReferenceChunk:
        doc = doc or {}
        return cls(n=int(d["n"]), kb=str(d.get("kb", doc.get("kb", ""))),
                   path=str(d.get("path", doc.get("path", ""))),
                   start_line=int(d["start_line"]), end_line=int(d["end_line"]),
                   score=d.get("score"), tool=str(d.get("tool", "")),
                   heading=str(d.get("heading", "")), excerpt=str(d.get("excerpt", "")),
                   supported=d.get("supported"), location=str(d.get("location") or ""),
                   **{k: d[k] for k in STAMPS if k in d})


@dataclass
class DocumentReferences:
    """The cited chunks of one document (the references payload groups by document)."""

    kb: str
    path: str
    chunks: list[ReferenceChunk] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"kb": self.kb, "path": self.path, "chunks": [c.to_json() for c in self.chunks]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> DocumentReferences:
        return cls(str(d.get("kb", "")), str(d.get("path", "")),
                   [ReferenceChunk.from_json(c, d) for c in d.get("chunks") or []])


class References(list[DocumentReferences]):
    """A run's references, grouped by document (first-cited document first)."""

    def chunks(self) -> list[ReferenceChunk]:
        """Every chunk, document by document."""
        return [c for d in self for c in d.chunks]

    def reference(self, n: int) -> ReferenceChunk | None:
        """Reference ``[n]``, or None when these references have no ``[n]``."""
        return next((c for c in self.chunks() if c.n == n), None)

    def numbers(self) -> list[int]:
        """The reference numbers, in order."""
        return sorted(c.n for c in self.chunks())

    def to_json(self) -> list[dict[str, Any]]:
        return [d.to_json() for d in self]

    @classmethod
    def from_json(cls, data: Iterable[dict[str, Any]] | None) -> References:
        return cls(DocumentReferences.from_json(d) for d in data or [])


@dataclass
class SentenceRecord:
    """One sentence of the answer: its text, the numbers it cites, whether the
    harness placed the marker (``auto``), its support score and verdict, its role
    and the numbers its cited chunks do not contain."""

    text: str
    cited: list[int] = field(default_factory=list)
    auto: bool = False
    support: float | None = None
    supported: bool | None = None
    role: str = ""
    numbers_missing: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SentenceRecord:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass(frozen=True)
class Repair:
    """What the grounding check did to one model sentence: ``missing`` the facts not
    in its source; ``with_`` the citation quoted (replaced) or cited (recited)."""

    sentence: str
    missing: tuple[str, ...]
    action: RepairAction
    with_: int | None = None  # "with" in JSON

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"sentence": self.sentence, "missing": list(self.missing),
                                "action": self.action}
        if self.with_ is not None:
            data["with"] = self.with_
        return data

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Repair:
        w = d.get("with")
        return cls(str(d.get("sentence", "")), tuple(str(m) for m in d.get("missing") or []),
                   RepairAction(d["action"]), None if w is None else int(w))


def describe_repairs(repairs: list[Repair]) -> list[str]:
    """What the grounding check did to the model's sentences, one line each."""
    out = []
    for r in repairs:
        said = shorten(r.sentence, 90, at_word=True)
        missing = ", ".join(r.missing)
        if r.action is RepairAction.REPLACED:
            out.append(f"corrected: \u201c{said}\u201d ({missing}: not in its source); the "
                       f"source sentence [{r.with_}] is quoted instead")
        elif r.action is RepairAction.RECITED:
            out.append(f"re-cited: \u201c{said}\u201d to [{r.with_}], the source that "
                       f"says it")
        else:
            out.append(f"removed: \u201c{said}\u201d ({missing}: in no source found)")
    return out
