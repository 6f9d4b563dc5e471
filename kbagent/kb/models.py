"""Records shared across the KB layer: extracted documents, chunks, hits, reports."""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from kbagent.kb.locations import Segment


class SearchMode(StrEnum):
    """Which retrievers a search uses (``--mode`` of ``kbagent search``)."""

    HYBRID = "hybrid"  # BM25 and vectors fused by RRF
    BM25 = "bm25"
    VECTOR = "vector"


MD_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
# a Markdown code fence (extracted HTML fences a <pre> block with ```): lines between
# two are code, never headings
FENCE = re.compile(r"^\s{0,3}(```|~~~)")


def is_named_heading(line: str, names: set[str] | list[str]) -> bool:
    """True if ``line`` is blank or a Markdown heading whose title is in ``names``
    (a heading the chunk's trail already carries)."""
    if not line.strip():
        return True
    m = MD_HEADING.match(line)
    return m is not None and m.group(2).strip() in names


@dataclass
class Line:
    """One line of a document's stored text and its true line number on disk.

    For plain formats ``number`` is the line's position in the file. For HTML
    it is the source line where the text appears (tags removed). For PDF it is
    the line of the extracted text (PDFs have no lines on disk)."""

    number: int
    text: str
    end: int = 0  # last source line when the text spans several (HTML); 0 = same line

    @property
    def last(self) -> int:
        return max(self.number, self.end)


@dataclass
class ExtractedDoc:
    """A file turned into lines of clean text plus metadata."""

    path: str  # KB-relative, forward slashes
    format: str  # markdown, text, rst, html, code, pdf
    lines: list[Line]
    title: str = ""
    access: list[str] = field(default_factory=list)  # ACL from front-matter; [] = everyone
    access_declared: bool = False  # front-matter has an ``access`` key (it then wins)
    access_error: str = ""  # why the declaration could not be read (access is then hidden)
    body_start: int = 0  # index into ``lines`` where the body starts (after front-matter)
    language: str = ""  # for code: python, go, ...
    sections: list[tuple[int, str]] = field(default_factory=list)  # explicit (line index, heading)
    # where lines lie in the source (page, slide, sheet cells...), see kb/locations.py
    locations: list[Segment] = field(default_factory=list)
    # explicit section start index -> leading lines (a table's header) repeated in every chunk
    repeat_header: dict[int, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # for the ingest report (scanned pages...)


@dataclass
class Chunk:
    """A span of a document that is indexed and cited as one unit."""

    path: str
    ordinal: int
    start_line: int
    end_line: int
    heading: str  # heading trail, " > " joined
    text: str
    location: str = ""  # in the source's own terms: "p.2 l.3-9", "slide 3", "Budget!A2:C9"
    index_body: str = ""  # what search indexes instead of ``text`` (sheet rows as records)

    def index_text(self, title: str = "") -> str:
        """The text that BM25 and the embedder see: title and headings give context.

        Leading ``# Heading`` lines that the trail already names are left out, so
        BM25 does not count a heading twice and the embedder does not spend tokens
        reading it twice (the stored text and the line span keep them)."""
        trail = self.heading
        if title and not trail.startswith(title):
            trail = f"{title} > {trail}" if trail else title
        body = self.index_body or self.text
        if not trail:
            return body
        named = set(trail.split(" > "))
        lines = body.split("\n")
        skip = 0
        while skip < len(lines) and is_named_heading(lines[skip], named):
            skip += 1
        text = "\n".join(lines[skip:])
        return f"{trail}\n{text}" if text else trail


@dataclass
class Hit:
    """One search result with the evidence of why it ranked where it did."""

    kb: str
    chunk_id: int
    path: str
    start_line: int
    end_line: int
    heading: str
    text: str
    score: float
    bm25_rank: int | None = None
    bm25_score: float | None = None
    vector_rank: int | None = None
    vector_score: float | None = None
    title: str = ""
    rerank_score: float | None = None  # set when a reranker reordered the fused hits
    location: str = ""  # page/slide/sheet cells/notebook cell (kb/locations.py); '' = lines only

    @property
    def public_id(self) -> str:
        """The chunk's id as shown to callers: a hash of what the caller already sees
        (KB, path, lines, text), stable while the chunk is unchanged. The store's
        integer ``chunk_id`` is sequential over every chunk, hidden ones included, so
        its gaps would count the chunks a caller may not read; it never leaves the
        process."""
        key = "\0".join((self.kb, self.path, str(self.start_line), str(self.end_line),
                          self.text))
        return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["chunk_id"] = self.public_id
        return out


@dataclass
class FileReport:
    """What ingest did with one file."""

    path: str
    status: str  # added, updated, removed, skipped, unchanged, failed
    reason: str = ""
    chunks: int = 0
    hidden: bool = False  # stored readable by nobody: its access declaration is malformed

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if not self.hidden:  # the key appears only where it is true
            del out["hidden"]
        return out


@dataclass
class IngestReport:
    """Summary of one ingest run."""

    kb: str
    source: str
    files: list[FileReport] = field(default_factory=list)
    chunks_total: int = 0
    chunks_embedded: int = 0  # chunks that needed the embedding model this run
    seconds: float = 0.0
    committed: bool = False  # False when nothing changed (no new generation written)
    repaired: list[str] = field(default_factory=list)  # indexes rebuilt (kb/repair.py)

    def count(self, status: str) -> int:
        return sum(1 for f in self.files if f.status == status)

    def summary(self) -> dict[str, int]:
        keys = ("added", "updated", "removed", "unchanged", "skipped", "failed")
        out = {k: self.count(k) for k in keys}
        hidden = sum(1 for f in self.files if f.hidden)
        if hidden:  # also counted above as added/updated/unchanged
            out["hidden"] = hidden
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "kb": self.kb,
            "source": self.source,
            "summary": self.summary(),
            "chunks_total": self.chunks_total,
            "chunks_embedded": self.chunks_embedded,
            "seconds": round(self.seconds, 3),
            "committed": self.committed,
            "repaired": self.repaired,
            "files": [f.to_dict() for f in self.files],
        }
