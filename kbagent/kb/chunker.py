"""Structure-aware chunking: documents -> :class:`Chunk` spans with true line numbers.

Markdown (and HTML, which arrives with ``#`` headings) is split on headings,
reStructuredText on underlined titles, code on top-level definitions and
blank-line blocks, PDF by page, plain text on paragraphs. Sections longer than
the token budget are packed line by line with a small overlap; a single line
longer than the budget (a one-line abstract) is split at sentence ends and
every piece keeps that line's number, so a citation still resolves.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from kbagent.kb.locations import describe
from kbagent.kb.models import (
    FENCE,
    MD_HEADING,
    Chunk,
    ExtractedDoc,
    Line,
    is_named_heading,
)
from kbagent.settings import default

_TOKEN = re.compile(r"\w+|[^\w\s]")
_RST_ADORN = re.compile(r"^([=\-~^\"'`#*+:.<>_])\1{2,}\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?;。！？])\s+")
_CODE_DEF = {
    "python": re.compile(r"^(async\s+def|def|class)\s+\w"),
    "go": re.compile(r"^(func|type)\s"),
    "javascript": re.compile(
        r"^(export\s+)?(default\s+)?(async\s+)?(function|class)\b"
        r"|^(export\s+)?(const|let)\s+\w+\s*=\s*(async\s*)?\("
    ),
    "typescript": re.compile(
        r"^(export\s+)?(default\s+)?(async\s+)?(function|class|interface|type|enum)\b"
    ),
    "rust": re.compile(r"^(pub(\(\w+\))?\s+)?(async\s+)?(fn|struct|enum|impl|trait|mod)\b"),
    "shell": re.compile(r"^(function\s+\w+|\w[\w-]*\s*\(\)\s*\{?)"),
    "ruby": re.compile(r"^(def|class|module)\s"),
    "yaml": re.compile(r"^[A-Za-z_][\w.-]*\s*:"),
    "toml": re.compile(r"^\s*\["),
    "ini": re.compile(r"^\s*\["),
    "sql": re.compile(r"^(create|alter|insert|select|with)\b", re.IGNORECASE),
}
_CODE_PREAMBLE = re.compile(r"^\s*(#|//|@|/\*|\*|--)")


def estimate_tokens(text: str) -> int:
    """Cheap stand-in for the embedder's word-piece count (words + punctuation)."""
    return len(_TOKEN.findall(text))


@dataclass
class _Section:
    trail: list[str]
    lines: list[Line] = field(default_factory=list)
    heading_only: bool = True  # only heading/blank lines so far
    header: list[Line] = field(default_factory=list)  # repeated atop every chunk (table header)


def _markdown_sections(lines: list[Line]) -> list[_Section]:
    sections = [_Section([])]
    stack: list[tuple[int, str]] = []
    fence: str | None = None
    for i, ln in enumerate(lines):
        text = ln.text
        m_fence = FENCE.match(text)
        if m_fence:
            fence = None if fence == m_fence.group(1) else (fence or m_fence.group(1))
        level, title = 0, ""
        if fence is None and not m_fence:
            m = MD_HEADING.match(text)
            if m:
                level, title = len(m.group(1)), m.group(2).strip()
            elif (
                i + 1 < len(lines)
                and text.strip()
                and re.match(r"^\s{0,3}(=+|-+)\s*$", lines[i + 1].text)
                and not text.lstrip().startswith(("-", "*", "|"))
                and len(lines[i + 1].text.strip()) >= 3
            ):
                level = 1 if lines[i + 1].text.strip()[0] == "=" else 2
                title = text.strip()
        if level:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            sections.append(_Section([t for _, t in stack]))
        sections[-1].lines.append(ln)
        if text.strip() and not level and not _RST_ADORN.match(text):
            sections[-1].heading_only = False
    return sections


def _rst_sections(lines: list[Line]) -> list[_Section]:
    sections = [_Section([])]
    styles: list[tuple[str, bool]] = []
    stack: list[tuple[int, str]] = []
    skip_until = -1
    for i, ln in enumerate(lines):
        if i <= skip_until:
            sections[-1].lines.append(ln)
            continue
        text = ln.text
        title, over = "", False
        nxt = lines[i + 1].text if i + 1 < len(lines) else ""
        m_over = _RST_ADORN.match(text)
        if m_over and i + 2 < len(lines) and lines[i + 1].text.strip() and _RST_ADORN.match(
            lines[i + 2].text
        ):
            title, over, char = lines[i + 1].text.strip(), True, m_over.group(1)
            skip_until = i + 2
        elif text.strip() and not m_over:
            m_under = _RST_ADORN.match(nxt)
            if m_under and len(nxt.strip()) >= len(text.strip()):
                title, char = text.strip(), m_under.group(1)
                skip_until = i + 1
        if title:
            style = (char, over)
            if style not in styles:
                styles.append(style)
            level = styles.index(style) + 1
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            sections.append(_Section([t for _, t in stack]))
        elif text.strip() and not m_over:
            sections[-1].heading_only = False
        sections[-1].lines.append(ln)
    return sections


def _code_sections(lines: list[Line], language: str) -> list[_Section]:
    pattern = _CODE_DEF.get(language)
    sections = [_Section([])]
    for ln in lines:
        if pattern and pattern.match(ln.text):
            # comments/decorators directly above a definition belong to it
            carried: list[Line] = []
            prev = sections[-1].lines
            while prev and prev[-1].text.strip() and _CODE_PREAMBLE.match(prev[-1].text):
                carried.insert(0, prev.pop())
            sig = ln.text.strip().rstrip("{:").strip()
            sections.append(_Section([sig[:100]], carried, heading_only=False))
        sections[-1].lines.append(ln)
        if ln.text.strip():
            sections[-1].heading_only = False
    return sections


def _explicit_sections(doc: ExtractedDoc) -> list[_Section]:
    bounds = [*doc.sections, (len(doc.lines), "")]
    out = []
    for (start, name), (end, _) in itertools.pairwise(bounds):
        n = doc.repeat_header.get(start, 0)
        out.append(_Section([name], doc.lines[start + n:end], heading_only=False,
                            header=doc.lines[start:start + n]))
    return out


def _split_long_line(line: Line, budget: int) -> list[Line]:
    """Split one over-long line at sentence ends (then words); pieces keep the number."""
    pieces: list[str] = []
    cur = ""
    for sent in _SENTENCE_END.split(line.text.strip()):
        candidate = f"{cur} {sent}".strip()
        if cur and estimate_tokens(candidate) > budget:
            pieces.append(cur)
            cur = sent
        else:
            cur = candidate
        while estimate_tokens(cur) > budget:  # a "sentence" longer than the budget
            words = cur.split(" ")
            cut = max(1, len(words) * budget // max(1, estimate_tokens(cur)))
            pieces.append(" ".join(words[:cut]))
            cur = " ".join(words[cut:])
    if cur:
        pieces.append(cur)
    return [Line(line.number, p, line.end) for p in pieces]


def _pack(lines: list[Line], budget: int, overlap: int) -> Iterable[list[Line]]:
    units: list[Line] = []
    for ln in lines:
        units.extend(_split_long_line(ln, budget) if estimate_tokens(ln.text) > budget else [ln])
    cur: list[Line] = []
    cur_tokens = 0
    fresh = 0  # lines in cur that are not overlap carried from the previous chunk
    for u in units:
        t = estimate_tokens(u.text)
        if cur and fresh and cur_tokens + t > budget:
            yield cur
            carry: list[Line] = []
            carry_tokens = 0
            for prev in reversed(cur):
                pt = estimate_tokens(prev.text)
                if carry_tokens + pt > overlap or pt + t > budget:
                    break
                carry.insert(0, prev)
                carry_tokens += pt
            cur, cur_tokens, fresh = carry, carry_tokens, 0
        cur.append(u)
        cur_tokens += t
        if u.text.strip():
            fresh += 1
    if cur and fresh:
        yield cur


def _sections(doc: ExtractedDoc) -> list[_Section]:
    body = doc.lines[doc.body_start :]
    if doc.sections:
        return _explicit_sections(doc)
    if doc.format in ("markdown", "html", "text", "docx", "odt", "epub", "ipynb"):
        return _markdown_sections(body)
    if doc.format == "rst":
        return _rst_sections(body)
    if doc.format == "code":
        return _code_sections(body, doc.language)
    return [_Section([], body, heading_only=False)]


def _trim(group: list[Line]) -> list[Line]:
    while group and not group[0].text.strip():
        group = group[1:]
    while group and not group[-1].text.strip():
        group = group[:-1]
    return group


def _only_trail_headings(group: list[Line], trail: list[str]) -> bool:
    """True when every non-blank line is a Markdown heading already named in ``trail``."""
    return all(is_named_heading(ln.text, trail) for ln in group)


def chunk_document(doc: ExtractedDoc, max_tokens: int = default("chunk_tokens"),
                   overlap: int = default("chunk_overlap")) -> list[Chunk]:
    """Split a document into chunks of at most ~``max_tokens`` with line spans."""
    sections = _sections(doc)
    # a heading directly followed by a sub-heading travels with the sub-section
    merged: list[_Section] = []
    pending: list[Line] = []
    for sec in sections:
        if sec.heading_only:
            pending.extend(sec.lines)
            continue
        if pending:
            sec.lines = pending + sec.lines
            pending = []
        merged.append(sec)
    if pending:
        merged.append(_Section(sections[-1].trail if sections else [], pending, False))

    chunks: list[Chunk] = []
    for sec in merged:
        if sec.header:
            _table_chunks(doc, sec, max_tokens, chunks)
            continue
        groups = [g for g in map(_trim, _pack(sec.lines, max_tokens, overlap)) if g]
        # When the line after a heading is longer than the budget (a one-line abstract),
        # the packer closes a chunk holding only the heading. Every chunk of the section
        # carries the heading in its trail already; a bare heading chunk costs an
        # embedding and wins BM25 on its tiny length alone (NFCorpus: 19% of chunks,
        # nDCG@10 hybrid 0.347 -> 0.354 without them; see BENCHMARKS.md).
        if len(groups) > 1 and _only_trail_headings(groups[0], sec.trail):
            groups = groups[1:]
        for group in groups:
            chunks.append(
                Chunk(
                    path=doc.path,
                    ordinal=len(chunks),
                    start_line=group[0].number,
                    end_line=max(ln.last for ln in group),
                    heading=" > ".join(sec.trail),
                    text="\n".join(ln.text for ln in group),
                )
            )
    if doc.locations:
        for ch in chunks:
            ch.location = describe(doc.locations, ch.start_line, ch.end_line)
    return chunks


_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def _cells(row: str) -> list[str]:
    return [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(row.strip())[1:-1]]


def _record(header: list[str], row: Line) -> Line:
    """A row as a ``Column: value; ...`` record: what search indexes for a sheet. An
    embedder reads a record far better than a pipe table (the sample KB's vendor sheet:
    not in the vector top 5 as a table, see BENCHMARKS.md), and BM25 sees each value
    beside its column name."""
    cells = _cells(row.text)
    names = header + [""] * (len(cells) - len(header))
    pairs = [f"{h}: {v}" if h else v for h, v in zip(names, cells, strict=False) if v]
    return Line(row.number, "; ".join(pairs), row.end)


def _table_chunks(doc: ExtractedDoc, sec: _Section, max_tokens: int, out: list[Chunk]) -> None:
    """Rows packed without overlap, each chunk led by the table's header lines (a row
    means little without its column names). The first chunk's span starts at the header;
    later ones cite their rows only, their header text standing in for the lines above."""
    head = "\n".join(ln.text for ln in sec.header)
    header = _cells(sec.header[0].text)
    by_number = {ln.number: ln for ln in sec.lines}
    # packed by the records' size: they are what the embedder reads
    records = [_record(header, ln) for ln in sec.lines if ln.text.strip()]
    for i, group in enumerate(_pack(records, max_tokens, 0)):
        rows = [by_number[n] for n in dict.fromkeys(r.number for r in group)]
        first = sec.header[0] if i == 0 else rows[0]
        out.append(Chunk(path=doc.path, ordinal=len(out), start_line=first.number,
                         end_line=max(ln.last for ln in rows), heading=" > ".join(sec.trail),
                         text=f"{head}\n" + "\n".join(ln.text for ln in rows),
                         index_body="\n".join(r.text for r in group)))
    if not sec.lines:  # a sheet with a header row only
        out.append(Chunk(doc.path, len(out), sec.header[0].number,
                         max(ln.last for ln in sec.header), " > ".join(sec.trail), head))
