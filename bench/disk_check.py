"""Check that a reference's lines *on disk* contain its excerpt, independently of
kbagent's own extraction: raw file lines for text formats, tags stripped from the raw
HTML source lines, pypdf's text for PDFs; compared as word sequences. Office files have
no lines on disk: their reference's location is checked instead, read with the format's
library (the cells of ``Sheet!A2:C9`` plus the sheet's header row, as a word sequence;
every word of the excerpt on slide N; in the Word document)."""

from __future__ import annotations

import html
import re
from functools import lru_cache
from pathlib import Path

_WORD = re.compile(r"\w+")
_INLINE_TAG = re.compile(
    r"</?(?:a|abbr|b|blockquote|br|code|dd|del|details|div|dl|dt|em|h[1-6]|hr|i|img|ins|kbd|"
    r"li|mark|ol|p|pre|q|s|small|span|strong|sub|summary|sup|table|tbody|td|th|thead|tr|u|ul)"
    r"\b[^>]{0,200}>", re.IGNORECASE)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@lru_cache(maxsize=512)
def disk_lines(path: str) -> tuple[str, ...]:
    p = Path(path)
    if p.suffix.lower() == ".pdf":
        from pypdf import PdfReader

        out: list[str] = []
        for page in PdfReader(str(p)).pages:
            out.extend((page.extract_text() or "").replace("\r\n", "\n").split("\n"))
        return tuple(out)
    text = p.read_text(encoding="utf-8-sig")
    lines = text.replace("\r\n", "\n").split("\n")
    if p.suffix.lower() in (".html", ".htm"):
        return tuple(html.unescape(re.sub(r"<[^>]*>", " ", ln)) for ln in lines)
    return tuple(_INLINE_TAG.sub(" ", ln) for ln in lines)  # inline HTML in Markdown


def contains(haystack: list[str], needle: list[str]) -> bool:
    if not needle:
        return True
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def _office_words(path: Path, location: str) -> tuple[list[str], bool]:
    """(words at the location, whether their order is the file's)."""
    import io

    data = path.read_bytes()
    if path.suffix.lower() == ".xlsx":
        import openpyxl

        from kbagent.kb.formats.sheets import shown

        sheet, _, cells = location.rpartition("!")
        ws = openpyxl.load_workbook(io.BytesIO(data), data_only=True)[sheet.strip("'")]
        first, last = cells.split(":")
        lo, hi = int(re.sub(r"\D", "", first)), int(re.sub(r"\D", "", last))
        rows = [next(ws.iter_rows(min_row=1, max_row=1))] if lo > 1 else []
        rows += list(ws.iter_rows(min_row=lo, max_row=hi))
        return words(" ".join(shown(c.value, c.number_format) for r in rows for c in r)), True
    if path.suffix.lower() == ".pptx":
        from pptx import Presentation

        slide = Presentation(io.BytesIO(data)).slides[int(location.split()[-1]) - 1]
        texts = [sh.text_frame.text for sh in slide.shapes if sh.has_text_frame]
        texts += [c.text for sh in slide.shapes if sh.has_table
                  for row in sh.table.rows for c in row.cells]
        if slide.has_notes_slide:
            texts.append(slide.notes_slide.notes_text_frame.text)
        return words(" ".join(texts)), False
    import docx

    d = docx.Document(io.BytesIO(data))
    texts = [p.text for p in d.paragraphs] + [c.text for t in d.tables for r in t.rows
                                              for c in r.cells]
    return words(" ".join(texts)), False


def resolves(source_root: str, ref: dict) -> bool:
    """True if lines start..end of the file contain the reference's excerpt."""
    path = Path(source_root) / ref["path"]
    if path.suffix.lower() in (".docx", ".pptx", ".xlsx"):
        found, ordered = _office_words(path, ref.get("location", ""))
        needle = words(ref["excerpt"])[:-1] or words(ref["excerpt"])
        # "Speaker notes:" is kbagent's label above a slide's notes, not the file's text
        return contains(found, needle) if ordered else set(needle) - {"speaker", "notes"} <= set(
            found)
    lines = disk_lines(str(Path(source_root) / ref["path"]))
    window = " ".join(lines[ref["start_line"] - 1 : ref["end_line"]])
    needle = words(ref["excerpt"])
    if len(needle) > 1:
        needle = needle[:-1]  # the excerpt may end inside a word
    return contains(words(window), needle)
