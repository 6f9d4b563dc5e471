"""Extractors for documents that are not plain text: PDF, Word, PowerPoint, Excel and
CSV, EPUB and Jupyter notebooks.

Each turns a file's bytes into numbered lines (Markdown-flavoured: ``#`` headings,
``- `` list items, ``| a | b |`` table rows) plus the place of every line in the
source (:mod:`kbagent.kb.locations`), so a citation can say ``p.2``, ``slide 3`` or
``Budget!A2:C9``. A library error never escapes: :func:`extract_rich` turns it into
:class:`~kbagent.kb.extract.ExtractError` with a reason for the ingest report.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field

from kbagent.kb.locations import Locator
from kbagent.kb.models import ExtractedDoc, Line

ProgressFn = Callable[[int, int], None]  # (pages or rows done, total)

SHEET_EXT = {".xlsx", ".xlsm", ".csv", ".tsv"}
OFFICE_EXT = {".docx", ".pptx", ".xlsx", ".xlsm"}
RICH_FORMATS = {".pdf": "pdf", ".docx": "docx", ".pptx": "pptx", ".xlsx": "xlsx",
                ".xlsm": "xlsx", ".csv": "csv", ".tsv": "csv", ".epub": "epub",
                ".ipynb": "ipynb"}
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # compound file: how Office stores encrypted files


@dataclass(frozen=True)
class ExtractLimits:
    """Size limits past which a file is reported and skipped (settings ``max_pdf_pages``,
    ``max_sheet_rows``), and where big-file progress goes."""

    max_pdf_pages: int = 2000
    max_sheet_rows: int = 200_000
    progress: ProgressFn | None = None

    def tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total)


@dataclass
class DocBuilder:
    """Accumulates lines (numbered from 1), their locations and explicit sections."""

    lines: list[Line] = field(default_factory=list)
    where: Locator = field(default_factory=Locator)
    sections: list[tuple[int, str]] = field(default_factory=list)
    repeat_header: dict[int, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, text: str, unit: str, label: str, sub: int = 0, cols: int = 0) -> None:
        """One line per call; embedded line breaks become further lines at the same place
        (``sub`` grows with them, as a PDF page's lines do)."""
        for i, part in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")):
            n = len(self.lines) + 1
            self.lines.append(Line(n, part.rstrip()))
            self.where.mark(n, unit, label, sub + i if unit == "page" else sub, cols)

    def section(self, name: str, header_lines: int = 0) -> None:
        self.sections.append((len(self.lines), name))
        if header_lines:
            self.repeat_header[len(self.lines)] = header_lines

    def build(self, path: str, fmt: str, title: str, *, explicit: bool) -> ExtractedDoc:
        return ExtractedDoc(path, fmt, self.lines, title=title,
                            sections=self.sections if explicit else [],
                            locations=self.where.segments, repeat_header=self.repeat_header,
                            notes=self.notes)


def cell_text(value: object) -> str:
    """A table cell as one Markdown-safe line."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    if hasattr(value, "isoformat"):
        text = str(value.isoformat()).removesuffix("T00:00:00")
    else:
        text = str(value)
    return " ".join(text.split()).replace("|", "\\|")


def table_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def table_rule(n: int) -> str:
    return "|" + "---|" * max(1, n)


def check_container(ext: str, data: bytes) -> None:
    """Office files are zip archives; say plainly what else they turned out to be."""
    from kbagent.kb.extract import ExtractError, Skip

    if ext not in OFFICE_EXT and ext != ".epub":
        return
    if data.startswith(_OLE_MAGIC):
        raise Skip("password-protected (encrypted) Office file, or a legacy binary one "
                   "saved with a new extension; save it without a password to ingest it")
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise ExtractError(f"corrupt {ext} file (not a valid zip archive)")


def extract_rich(fmt: str, path: str, data: bytes, stem: str,
                 limits: ExtractLimits) -> ExtractedDoc:
    """Dispatch to the format's extractor; any library error becomes ExtractError."""
    from pathlib import PurePosixPath

    from kbagent.kb.extract import ExtractError, Skip

    check_container(PurePosixPath(path).suffix.lower(), data)
    try:
        if fmt == "pdf":
            from kbagent.kb.formats.pdf import extract_pdf

            return extract_pdf(path, data, stem, limits)
        if fmt == "docx":
            from kbagent.kb.formats.office import extract_docx

            return extract_docx(path, data, stem)
        if fmt == "pptx":
            from kbagent.kb.formats.office import extract_pptx

            return extract_pptx(path, data, stem)
        if fmt in ("xlsx", "csv"):
            from kbagent.kb.formats.sheets import extract_csv, extract_xlsx

            fn = extract_xlsx if fmt == "xlsx" else extract_csv
            return fn(path, data, stem, limits)
        if fmt == "epub":
            from kbagent.kb.formats.books import extract_epub

            return extract_epub(path, data, stem)
        from kbagent.kb.formats.books import extract_ipynb

        return extract_ipynb(path, data, stem)
    except (Skip, ExtractError):
        raise
    except Exception as e:
        detail = " ".join(str(e).split())[:160] or type(e).__name__
        raise ExtractError(f"unreadable {fmt} file: {detail}") from e
