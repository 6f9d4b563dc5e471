"""PDF -> lines, one explicit section per page, each line placed at (page, line in page).

The text comes from PDFium (pypdfium2); pypdf is kept as the fallback for a file
PDFium cannot open. BENCHMARKS.md ("PDF extractors") has the comparison that
chose it. Pages are read one at a time and released, so a 300-page file costs
one page's objects at a time beside the bytes and the text. A page with no text
layer (a scan) is counted and reported; a file with none at all is skipped as a
scan, and an encrypted one as encrypted.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

from kbagent.kb.formats.builder import DocBuilder, ExtractLimits
from kbagent.kb.locations import PAGE
from kbagent.kb.models import ExtractedDoc
from kbagent.kb.source_text import ExtractError, Skip

BIG_PDF_PAGES = 50  # from this many pages a PDF reports progress page by page


def _page_list(pages: list[int]) -> str:
    shown = ", ".join(map(str, pages[:8]))
    return shown + (f" and {len(pages) - 8} more" if len(pages) > 8 else "")


def pdfium_pages(data: bytes, limits: ExtractLimits) -> tuple[int, Iterator[str], str]:
    """(page count, each page's text, title) with PDFium."""
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as e:
        if "password" in str(e).lower():
            raise Skip("encrypted PDF (a password is needed to read it)") from e
        raise ExtractError(f"unreadable PDF: {e}") from e
    n = len(pdf)
    _check_pages(n, limits)
    title = str(pdf.get_metadata_dict().get("Title", "") or "").strip()

    def texts() -> Iterator[str]:
        try:
            for i in range(n):
                page = pdf[i]
                textpage = page.get_textpage()
                try:
                    yield textpage.get_text_bounded()
                finally:
                    textpage.close()
                    page.close()
        finally:
            pdf.close()

    return n, texts(), title


def pypdf_pages(data: bytes, limits: ExtractLimits) -> tuple[int, Iterator[str], str]:
    """The same with pypdf (pure Python)."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        try:
            ok = reader.decrypt("")
        except Exception as e:
            raise Skip("encrypted PDF (a password is needed to read it)") from e
        if not ok:
            raise Skip("encrypted PDF (a password is needed to read it)")
    n = len(reader.pages)
    _check_pages(n, limits)
    title = str(reader.metadata.title or "").strip() if reader.metadata else ""
    return n, (p.extract_text() or "" for p in reader.pages), title


def _check_pages(n: int, limits: ExtractLimits) -> None:
    if n > limits.max_pdf_pages:
        raise Skip(f"{n:,} pages, more than the max_pdf_pages setting ({limits.max_pdf_pages:,});"
                   " raise it to ingest this file")


def extract_pdf(path: str, data: bytes, stem: str, limits: ExtractLimits,
                backend: str = "pdfium") -> ExtractedDoc:
    if not data.startswith(b"%PDF"):
        raise ExtractError("not a PDF (missing %PDF header)")
    try:
        n, pages, title = (pdfium_pages if backend == "pdfium" else pypdf_pages)(data, limits)
    except ImportError:  # pragma: no cover - both are declared dependencies
        n, pages, title = pypdf_pages(data, limits)
    out = DocBuilder()
    blank: list[int] = []
    for number, text in enumerate(pages, start=1):
        label = str(number)
        out.section(f"page {number}")
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
        if not text.strip():
            blank.append(number)
        for i, raw in enumerate(text.split("\n"), start=1):
            out.add(raw.rstrip(), PAGE, label, i)
        if n >= BIG_PDF_PAGES:
            limits.tick(number, n)
    if n and len(blank) == n:
        raise Skip(f"scanned PDF: no text layer on any of its {n} pages (run OCR on it first)")
    if blank:
        out.notes.append(f"no text layer on page{'s' if len(blank) > 1 else ''} "
                         f"{_page_list(blank)} (scanned?)")
    return out.build(path, "pdf", title or stem, explicit=True)
