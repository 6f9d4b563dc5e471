"""Spreadsheets: .xlsx (openpyxl, read-only streaming) and .csv/.tsv -> Markdown tables.

One section per sheet; the first non-empty row is the header, written once in the
stored text and repeated atop every chunk of the sheet (see the chunker). Each row
line knows its sheet row number, so a chunk is cited as ``Budget!A2:C9``. Empty
rows are left out (their numbers are kept). Cell values are the cached results of
formulas (``data_only``), numbers shown in their cell's format ($84,000, 41.2%), as a
person sees them.
"""

from __future__ import annotations

import contextlib
import csv
import io
import re
from collections.abc import Iterable, Iterator

from kbagent.kb.formats.builder import DocBuilder, ExtractLimits, cell_text, table_row, table_rule
from kbagent.kb.locations import SHEET
from kbagent.kb.models import ExtractedDoc
from kbagent.kb.source_text import Skip, decode_text

PROGRESS_EVERY = 5000  # rows between progress ticks


class TooManyRows(Exception):
    """More rows than the max_sheet_rows setting allows."""


def add_sheet(out: DocBuilder, name: str, label: str, rows: Iterable[tuple[int, list[str]]],
               limits: ExtractLimits, seen: list[int], total: int) -> None:
    """Write one sheet's rows: ``rows`` yields (sheet row number, cell texts)."""
    kept: list[tuple[int, list[str]]] = []
    width = 0
    for number, cells in rows:
        while cells and not cells[-1]:
            cells.pop()
        if not cells:
            continue
        seen[0] += 1
        if seen[0] > limits.max_sheet_rows:
            raise TooManyRows
        if seen[0] % PROGRESS_EVERY == 0:
            limits.tick(seen[0], max(total, seen[0]))
        width = max(width, len(cells))
        kept.append((number, cells))
    if not kept:
        return
    out.section(name, header_lines=2)
    head_row, head = kept[0]
    out.add(table_row(head + [""] * (width - len(head))), SHEET, label, head_row, width)
    out.add(table_rule(width), SHEET, label, head_row, width)
    for number, cells in kept[1:]:
        out.add(table_row(cells + [""] * (width - len(cells))), SHEET, label, number, width)


def too_many(limits: ExtractLimits) -> Skip:
    return Skip(f"more than {limits.max_sheet_rows:,} rows (the max_sheet_rows setting); "
                "raise it to ingest this file")


_DECIMALS = re.compile(r"\.(0+)")


def shown(value: object, fmt: str) -> str:
    """A number as its cell's format shows it, for the common formats: percent
    (0.412 -> 41.2%), thousands separators, a currency sign, fixed decimals. Anything
    else (dates arrive as dates; custom formats) falls back to the plain value."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not fmt:
        return cell_text(value)
    body = fmt.split(";")[0]
    if body in ("General", "@"):
        return cell_text(value)
    m = _DECIMALS.search(body)
    decimals = len(m.group(1)) if m else 0
    pct = "%" in body
    number = float(value) * 100 if pct else float(value)
    text = f"{number:,.{decimals}f}" if "," in body else f"{number:.{decimals}f}"
    sign = next((c for c in "$€£¥" if c in body), "")
    if sign and text.startswith("-"):
        text = "-" + sign + text[1:]
    elif sign:
        text = sign + text
    return text + ("%" if pct else "")


def _xlsx_rows(ws: object) -> Iterator[tuple[int, list[str]]]:
    number = 0
    for row in ws.iter_rows():  # type: ignore[attr-defined]
        cells = [c for c in row if getattr(c, "row", None) is not None]
        number = cells[0].row if cells else number + 1
        yield number, [shown(c.value, getattr(c, "number_format", "")) for c in row]


def extract_xlsx(path: str, data: bytes, stem: str, limits: ExtractLimits) -> ExtractedDoc:
    import openpyxl

    wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    out = DocBuilder()
    seen = [0]
    sheets = [ws for ws in wb.worksheets if hasattr(ws, "iter_rows")]  # not chart sheets
    total = sum(ws.max_row or 0 for ws in sheets)  # from the sheet's dimension, if saved
    try:
        for ws in sheets:
            name = "".join(ch for ch in ws.title if ch.isprintable())  # a name is data too
            add_sheet(out, name, name, _xlsx_rows(ws), limits, seen, total)
    except TooManyRows:
        raise too_many(limits) from None
    finally:
        wb.close()
    if not out.lines:
        raise Skip("workbook has no cell values")
    limits.tick(seen[0], seen[0])
    title = (wb.properties.title or "").strip() if wb.properties else ""
    return out.build(path, "xlsx", title or stem, explicit=True)


def extract_csv(path: str, data: bytes, stem: str, limits: ExtractLimits) -> ExtractedDoc:
    text = decode_text(data)
    delimiter = "\t" if path.lower().endswith(".tsv") else ","
    if delimiter == ",":
        with contextlib.suppress(csv.Error):
            delimiter = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)

    def rows() -> Iterator[tuple[int, list[str]]]:
        # numbered as a spreadsheet shows them (a quoted cell may span several lines)
        for number, record in enumerate(reader, start=1):
            yield number, [cell_text(v) for v in record]

    out = DocBuilder()
    seen = [0]
    try:
        add_sheet(out, stem, "", rows(), limits, seen, text.count("\n"))
    except TooManyRows:
        raise too_many(limits) from None
    except csv.Error as e:
        from kbagent.kb.source_text import ExtractError

        raise ExtractError(f"malformed CSV at line {reader.line_num}: {e}") from e
    if not out.lines:
        raise Skip("no text content")
    limits.tick(seen[0], seen[0])
    return out.build(path, "csv", stem, explicit=True)
