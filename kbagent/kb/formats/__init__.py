"""Extractors for documents that are not plain text: PDF, Word, PowerPoint, Excel and
CSV, OpenDocument (LibreOffice), EPUB and Jupyter notebooks.

Each turns a file's bytes into numbered lines (Markdown-flavoured: ``#`` headings,
``- `` list items, ``| a | b |`` table rows) plus the place of every line in the
source (:mod:`kbagent.kb.locations`), so a citation can say ``p.2``, ``slide 3`` or
``Budget!A2:C9``. A library error never escapes: :func:`extract_rich` turns it into
:class:`~kbagent.kb.extract.ExtractError` with a reason for the ingest report.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import PurePosixPath

from kbagent.kb.formats.builder import ExtractLimits
from kbagent.kb.models import ExtractedDoc
from kbagent.kb.source_text import ExtractError, Skip

SHEET_EXT = {".xlsx", ".xlsm", ".csv", ".tsv", ".ods", ".fods"}
OFFICE_EXT = {".docx", ".pptx", ".xlsx", ".xlsm", ".odt", ".ods", ".odp"}
# binary formats of old: no extractor here; the report says what to save them as
# (.pot and .key are left out: gettext templates and key files share those names)
LEGACY = {".doc": "Word 97-2003", ".dot": "Word 97-2003", ".xls": "Excel 97-2003",
          ".xlt": "Excel 97-2003", ".ppt": "PowerPoint 97-2003", ".pps": "PowerPoint 97-2003",
          ".wps": "Works", ".wpd": "WordPerfect"}
_SAVE_AS = {"Word 97-2003": ".docx", "Works": ".docx", "WordPerfect": ".docx",
            "Excel 97-2003": ".xlsx", "PowerPoint 97-2003": ".pptx"}
_OPEN_DOCUMENT = {".docx": ".odt", ".xlsx": ".ods", ".pptx": ".odp"}
RICH_FORMATS = {".pdf": "pdf", ".docx": "docx", ".pptx": "pptx", ".xlsx": "xlsx",
                ".xlsm": "xlsx", ".csv": "csv", ".tsv": "csv", ".epub": "epub",
                ".ipynb": "ipynb", ".odt": "odt", ".fodt": "odt", ".ods": "ods",
                ".fods": "ods", ".odp": "odp", ".fodp": "odp",
                **dict.fromkeys(LEGACY, "legacy")}
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # compound file: how Office stores encrypted files


def legacy_hint(ext: str) -> str:
    """Why a legacy binary document is skipped, and what to save it as."""
    kind = LEGACY[ext]
    modern = _SAVE_AS[kind]
    return (f"{kind} file ({ext}) is not read; save it as {modern} (or "
            f"{_OPEN_DOCUMENT[modern]}) to ingest it")


def check_container(ext: str, data: bytes) -> None:
    """Office files are zip archives; say plainly what else they turned out to be."""
    if ext in LEGACY:
        raise Skip(legacy_hint(ext))
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
        if fmt in ("odt", "ods"):
            from kbagent.kb.formats.odf import extract_ods, extract_odt

            ext = PurePosixPath(path).suffix.lower()
            if fmt == "ods":
                return extract_ods(path, data, stem, ext, limits)
            return extract_odt(path, data, stem, ext)
        if fmt == "odp":
            from kbagent.kb.formats.odf_slides import extract_odp

            return extract_odp(path, data, stem, PurePosixPath(path).suffix.lower())
        from kbagent.kb.formats.books import extract_ipynb

        return extract_ipynb(path, data, stem)
    except (Skip, ExtractError):
        raise
    except Exception as e:
        detail = " ".join(str(e).split())[:160] or type(e).__name__
        raise ExtractError(f"unreadable {fmt} file: {detail}") from e
