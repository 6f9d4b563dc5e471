"""Word (.docx, python-docx) and PowerPoint (.pptx, python-pptx) -> lines with places.

Word: headings (``Heading N``/``Title`` styles) become ``#`` lines, so the chunker's
heading trail follows the document's outline; list paragraphs keep the marker Word
shows (``-``, ``3.``, ``b)``, see :mod:`kbagent.kb.formats.word_parts`) indented by
level; footnotes and endnotes follow the paragraph that cites them (``[^1]: text``);
tables become Markdown tables. A line's place is
the section (heading) it sits under. PowerPoint: one section per slide, titled
``slide N: <title>``; text frames, tables (also inside groups) and speaker notes
in reading order. A line's place is its slide number.
"""

from __future__ import annotations

import io
import re
from typing import Any

from kbagent.kb.formats.builder import DocBuilder, cell_text, table_row, table_rule
from kbagent.kb.formats.word_parts import (
    WordNotes,
    WordNumbering,
    element_notes,
    paragraph_text,
)
from kbagent.kb.locations import SECTION, SLIDE
from kbagent.kb.models import ExtractedDoc
from kbagent.kb.source_text import Skip

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


def _heading_level(style_name: str) -> int:
    name = style_name.strip()
    if name.lower() == "title":
        return 1
    m = _HEADING_STYLE.match(name)
    return min(6, int(m.group(1))) if m else 0


def _list_marker(numbering: WordNumbering, par: Any, style_id: str, style: str) -> str:
    """The marker Word shows (``1. ``, ``  b) ``, ``- ``) indented by level; a list
    style without a numbering definition gets ``- ``; '' outside lists."""
    marker = numbering.marker(par._p, style_id)
    if marker is not None:
        return marker
    if not style.lower().startswith("list"):
        numbering.unstyled.count.clear()
        return ""
    if "number" in style.lower():
        numbering.unstyled.step(0)
        return f"{numbering.unstyled.at(0)}. "
    return "- "


def _table_lines(rows: list[list[str]]) -> list[str]:
    rows = [r for r in rows if any(c for c in r)]
    if not rows:
        return []
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    return [table_row(rows[0]), table_rule(width), *(table_row(r) for r in rows[1:])]


def _docx_table(table: Any, notes: WordNotes) -> list[str]:
    """The table's rows, then the notes its cells cite (``[^1]`` in the cell)."""
    rows = []
    for row in table.rows:
        cells: list[str] = []
        last: Any = None
        for cell in row.cells:  # a merged cell repeats: show it once
            text = "\n".join(paragraph_text(p, notes)[0] for p in cell.paragraphs)
            cells.append("" if cell._tc is last else cell_text(text))
            last = cell._tc
        rows.append(cells)
    return _table_lines(rows) + notes.lines(element_notes(table._tbl, notes))


def extract_docx(path: str, data: bytes, stem: str) -> ExtractedDoc:
    import docx
    from docx.enum.style import WD_STYLE_TYPE
    from docx.table import Table

    document = docx.Document(io.BytesIO(data))
    # style id -> name, once: Paragraph.style scans every style per call (38x slower)
    names = {s.style_id: s.name or "" for s in document.styles}
    base = document.styles.default(WD_STYLE_TYPE.PARAGRAPH)
    default = (base.name or "") if base is not None else ""
    default_id = base.style_id if base is not None else ""
    numbering, notes = WordNumbering(document), WordNotes(document)
    out = DocBuilder()
    heading = ""
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            lines = _docx_table(block, notes)
            if lines:
                out.add("", SECTION, heading)
                for line in lines:
                    out.add(line, SECTION, heading)
                out.add("", SECTION, heading)
            continue
        raw, cited = paragraph_text(block, notes)
        text = raw.strip()
        if not text:
            continue
        style_id = block._p.style or default_id or ""
        style = names.get(style_id, default)
        marker = _list_marker(numbering, block, style_id, style)
        level = _heading_level(style)
        if level:  # a numbered heading keeps its number ("2.1 Scope")
            heading = " ".join((marker.strip() + " " + text if marker.strip(" -") else text)
                               .split())
            out.add(f"{'#' * level} {heading}", SECTION, heading)
        else:
            out.add(marker + text, SECTION, heading)
        for line in notes.lines(cited):
            out.add(line, SECTION, heading)
    if not any(ln.text.strip() for ln in out.lines):
        raise Skip("Word document has no text")
    title = (document.core_properties.title or "").strip()
    return out.build(path, "docx", title or stem, explicit=False)


def _shape_lines(shape: Any) -> list[str]:
    """Text of one shape (groups recursively) in the order PowerPoint stores it."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        return [ln for sub in shape.shapes for ln in _shape_lines(sub)]
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [[cell_text(c.text) for c in row.cells] for row in shape.table.rows]
        return ["", *_table_lines(rows), ""]
    if not getattr(shape, "has_text_frame", False) or not shape.has_text_frame:
        return []
    lines = []
    for par in shape.text_frame.paragraphs:
        text = par.text.strip()
        if text:
            lines.append("  " * par.level + ("- " if par.level else "") + text)
    return lines


def _reading_order(shapes: Any) -> list[Any]:
    """Top to bottom, then left to right (placeholders without a position keep theirs)."""
    indexed = list(enumerate(shapes))
    return [s for _, s in sorted(indexed, key=lambda p: (
        (p[1].top if p[1].top is not None else 0) // 91440,  # to the tenth of an inch
        p[1].left if p[1].left is not None else 0, p[0]))]


def extract_pptx(path: str, data: bytes, stem: str) -> ExtractedDoc:
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    out = DocBuilder()
    for number, slide in enumerate(deck.slides, start=1):
        label = str(number)
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text.split()) if title_shape is not None else ""
        out.section(f"slide {number}: {title}" if title else f"slide {number}")
        if title:
            out.add(title, SLIDE, label)
        for shape in _reading_order(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            for line in _shape_lines(shape):
                out.add(line, SLIDE, label)
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                out.add("Speaker notes:", SLIDE, label)
                out.add(notes, SLIDE, label)
        if out.sections[-1][0] == len(out.lines):  # an empty slide: nothing to cite
            out.sections.pop()
    if not any(ln.text.strip() for ln in out.lines):
        raise Skip("PowerPoint deck has no text")
    title = (deck.core_properties.title or "").strip()
    return out.build(path, "pptx", title or stem, explicit=True)
