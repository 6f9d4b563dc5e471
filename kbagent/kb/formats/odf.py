"""OpenDocument (LibreOffice's own formats) -> lines with places, from the XML itself.

A package (.odt/.ods/.odp) is a zip holding ``content.xml``, ``styles.xml`` and
``meta.xml``; a flat file (.fodt/.fods/.fodp) is one XML document holding all three.
Text (.odt) reads like Word: ``#`` headings by outline level, list items with the
marker the list style shows (``3.``, ``b)``, ``- ``), tables as Markdown tables,
footnotes and endnotes cited ``[^1]`` and their text after the paragraph; a line's
place is its section. Spreadsheets (.ods) are sheets as :mod:`.sheets` writes them,
cited by cells (``Inventory!A1:D6``), each cell as LibreOffice displays it. Slides
(.odp): :mod:`.odf_slides`.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from typing import Any, NamedTuple

from kbagent.kb.formats.builder import DocBuilder, ExtractLimits, table_row, table_rule
from kbagent.kb.formats.numbering import Counters, counter_text
from kbagent.kb.formats.sheets import TooManyRows, add_sheet, too_many
from kbagent.kb.formats.word_parts import parse_xml
from kbagent.kb.locations import SECTION
from kbagent.kb.models import ExtractedDoc
from kbagent.kb.source_text import ExtractError, Skip

NS = {"office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
       "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
       "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
       "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
       "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
       "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
       "svg": "urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0",
       "dc": "http://purl.org/dc/elements/1.1/",
       "xml": "http://www.w3.org/XML/1998/namespace"}
MAX_COLUMNS = 16384  # LibreOffice's widest sheet; a repeat past it is formatting


def q(name: str) -> str:
    prefix, local = name.split(":")
    return f"{{{NS[prefix]}}}{local}"


_SKIP = {q(n) for n in ("text:tracked-changes", "office:annotation", "text:bookmark-ref",
                        "text:sequence-decls", "text:variable-decls", "office:forms",
                        "text:table-of-content", "text:alphabetical-index",
                        "text:illustration-index", "text:table-index", "text:soft-page-break")}
_ROWS = {q(n) for n in ("table:table-header-rows", "table:table-rows", "table:table-row-group")}
_CELLS = {q("table:table-cell"), q("table:covered-table-cell")}
_LIST_STYLES = {q("text:list-level-style-number"): "number",
                q("text:list-level-style-bullet"): "bullet",
                q("text:list-level-style-image"): "bullet"}


class _Level(NamedTuple):
    """One level of a list style."""

    kind: str = "bullet"  # number | bullet
    fmt: str = ""  # style:num-format: 1, a, A, i, I ('' shows no number)
    prefix: str = ""
    suffix: str = ""
    start: int = 1
    shown: int = 1  # text:display-levels: 2 shows "1.2"


class Package:
    """content/styles/meta roots of a zipped package or a flat file."""

    def __init__(self, data: bytes, ext: str) -> None:
        if ext.startswith(".f"):  # flat XML: one document holds every part
            self.content = self.styles = self.meta = parse_xml(data)
            return
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = set(zf.namelist())
            if "META-INF/manifest.xml" in names and b"encryption-data" in zf.read(
                    "META-INF/manifest.xml"):
                raise Skip("password-protected OpenDocument file; save it without a password "
                           "to ingest it")
            if "content.xml" not in names:
                raise ExtractError(f"corrupt {ext} file (no content.xml)")
            self.content = parse_xml(zf.read("content.xml"))
            self.styles = parse_xml(zf.read("styles.xml")) if "styles.xml" in names else None
            self.meta = parse_xml(zf.read("meta.xml")) if "meta.xml" in names else None

    def title(self, stem: str) -> str:
        el = self.meta.find(f".//{q('dc:title')}") if self.meta is not None else None
        text = " ".join((el.text or "").split()) if el is not None else ""
        return text or stem

    def body(self, kind: str) -> Any:
        body = self.content.find(f"{q('office:body')}/{q('office:' + kind)}")
        if body is None:
            raise ExtractError(f"not an OpenDocument {kind} file (no office:{kind} body)")
        return body

    def list_styles(self) -> dict[str, dict[int, _Level]]:
        """list style name -> level (1-based) -> how that level is numbered."""
        out: dict[str, dict[int, _Level]] = {}
        for root in (self.styles, self.content):
            if root is None:
                continue
            for ls in root.iter(q("text:list-style")):
                levels = {}
                for el in ls:
                    kind = _LIST_STYLES.get(el.tag)
                    if kind is None:
                        continue
                    levels[_int(el.get(q("text:level")), 1)] = _Level(
                        kind, el.get(q("style:num-format"), "1" if kind == "number" else ""),
                        el.get(q("style:num-prefix"), ""), el.get(q("style:num-suffix"), ""),
                        _int(el.get(q("text:start-value")), 1),
                        _int(el.get(q("text:display-levels")), 1))
                out[ls.get(q("style:name"), "")] = levels
        return out


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


class TextWalker:
    """Walks text content: paragraph text with note citations, list markers."""

    def __init__(self, pkg: Package) -> None:
        self.styles = pkg.list_styles()
        self.lists: dict[str, Counters] = {}  # xml:id -> counts, for text:continue-list
        self.last: Counters | None = None
        self.notes: list[tuple[str, str]] = []  # (label, text) cited since last taken
        self.in_table = 0  # tables entered: notes cited in a cell wait for the table's end

    def inline(self, el: Any) -> str:
        """The text of a paragraph-like element as a reader sees it."""
        parts = [el.text or ""]
        for child in el:
            tag = child.tag
            if tag == q("text:s"):
                parts.append(" " * _int(child.get(q("text:c")), 1))
            elif tag in (q("text:tab"), q("text:line-break")):
                parts.append(" ")
            elif tag == q("text:number"):  # a numbered heading's number as last shown
                parts.append((child.text or "").strip() + " ")
            elif tag == q("text:note"):
                cite = child.find(q("text:note-citation"))
                label = " ".join((cite.text or "").split()) if cite is not None else ""
                label = label or str(len(self.notes) + 1)
                body = child.find(q("text:note-body"))
                text = " ".join(self.inline(p) for p in body.iter(q("text:p"), q("text:h"))
                                ) if body is not None else ""
                parts.append(f"[^{label}]")
                self.notes.append((label, " ".join(text.split())))
            elif tag in _SKIP or tag == q("draw:frame"):
                pass
            else:
                parts.append(self.inline(child))
            parts.append(child.tail or "")
        return "".join(parts)

    def take_notes(self) -> list[str]:
        """The cited notes' lines, to follow the paragraph (in a table: the table)."""
        if self.in_table:
            return []
        lines = [f"[^{label}]: {text}" for label, text in self.notes if text]
        self.notes = []
        return lines

    def list_lines(self, lst: Any, style: str, level: int, counts: Counters | None,
                   ) -> Iterator[str]:
        """Lines of a ``text:list`` at ``level`` (1-based) with their markers."""
        style = lst.get(q("text:style-name")) or style
        if counts is None:  # a top-level list: new numbering unless it continues one
            cont = lst.get(q("text:continue-list"))
            if cont and cont in self.lists:
                counts = self.lists[cont]
            elif lst.get(q("text:continue-numbering")) == "true" and self.last is not None:
                counts = self.last
            else:
                counts = Counters()
            self.last = counts
        xml_id = lst.get(q("xml:id"))
        if xml_id:
            self.lists[xml_id] = counts
        levels = self.styles.get(style, {})
        own = levels.get(level, _Level())
        for item in lst:
            if item.tag not in (q("text:list-item"), q("text:list-header")):
                continue
            marker = ""
            if item.tag == q("text:list-item"):
                if item.get(q("text:start-value")):
                    counts.restart(level, _int(item.get(q("text:start-value")), own.start))
                counts.step(level, own.start)
                number = item.find(q("text:number"))  # the number as last displayed
                if number is not None and (number.text or "").strip():
                    marker = (number.text or "").strip() + " "
                elif own.kind == "number" and own.fmt:
                    nums = [counter_text(counts.at(k, levels.get(k, own).start),
                                         levels.get(k, own).fmt or "1")
                            for k in range(max(1, level - own.shown + 1), level + 1)]
                    marker = f"{own.prefix}{'.'.join(nums)}{own.suffix} "
                elif own.kind == "bullet":
                    marker = "- "
            indent = "  " * (level - 1)
            first_par = True
            for child in item:
                if child.tag == q("text:list"):
                    yield from self.list_lines(child, style, level + 1, counts)
                elif child.tag in (q("text:p"), q("text:h")):
                    text = " ".join(self.inline(child).split())
                    if text:
                        yield indent + (marker if first_par else "  ") + text
                        first_par = False
                    yield from self.take_notes()
                else:
                    yield from self.block(child)

    def table(self, tbl: Any) -> list[str]:
        self.in_table += 1
        try:
            rows = self._rows(tbl)
        finally:
            self.in_table -= 1
        rows = [r for r in rows if any(r)]
        if not rows:
            return self.take_notes()
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        return ["", table_row(rows[0]), table_rule(width), *(table_row(r) for r in rows[1:]),
                "", *self.take_notes()]

    def _rows(self, tbl: Any) -> list[list[str]]:
        rows = []
        for row in _rows(tbl):
            cells = []
            for cell in row:
                if cell.tag not in _CELLS:
                    continue
                # its paragraphs, lists, a table in it: one line (a comment is left out)
                text = " ".join(" ".join(ln.split()) for child in cell
                                for ln in self.block(child) if ln.strip() and ln[0] != "|")
                repeat = min(_int(cell.get(q("table:number-columns-repeated")), 1), 64)
                cells.extend([text.replace("|", "\\|")] * (repeat if text else min(repeat, 1)))
            rows.append(cells)
        return rows

    def block(self, el: Any) -> Iterator[str]:
        """Lines of a body-level element other than a heading."""
        if el.tag == q("text:p"):
            text = " ".join(self.inline(el).split())
            if text:
                yield text
            yield from self.take_notes()
        elif el.tag == q("text:list"):
            yield from self.list_lines(el, "", 1, None)
        elif el.tag == q("table:table"):
            yield from self.table(el)
        elif el.tag not in _SKIP:  # text:section, text:div and the like: their content
            for child in el:
                yield from self.block(child) if child.tag != q("text:h") else ()


def _rows(tbl: Any) -> Iterator[Any]:
    for el in tbl:
        if el.tag == q("table:table-row"):
            yield el
        elif el.tag in _ROWS:
            yield from _rows(el)


def extract_odt(path: str, data: bytes, stem: str, ext: str) -> ExtractedDoc:
    pkg = Package(data, ext)
    walker = TextWalker(pkg)
    out = DocBuilder()
    heading = ""

    def walk(parent: Any) -> None:
        nonlocal heading
        for el in parent:
            if el.tag == q("text:h"):
                text = " ".join(walker.inline(el).split())
                if text:
                    level = min(6, max(1, _int(el.get(q("text:outline-level")), 1)))
                    heading = text
                    out.add(f"{'#' * level} {text}", SECTION, heading)
                for line in walker.take_notes():
                    out.add(line, SECTION, heading)
            elif el.tag in (q("text:section"), q("text:div")):
                walk(el)
            else:
                for line in walker.block(el):
                    out.add(line, SECTION, heading)

    walk(pkg.body("text"))
    if not any(ln.text.strip() for ln in out.lines):
        raise Skip("OpenDocument text has no text")
    return out.build(path, "odt", pkg.title(stem), explicit=False)


def _sheet_rows(tbl: Any, walker: TextWalker) -> Iterator[tuple[int, list[str]]]:
    number = 0
    for row in _rows(tbl):
        cells: list[str] = []
        blanks = 0  # empty cells seen since the last value: kept only if one follows
        for cell in row:
            if cell.tag not in _CELLS:
                continue
            repeat = _int(cell.get(q("table:number-columns-repeated")), 1)
            # the value as displayed (a comment, office:annotation, is left out)
            text = " ".join(" ".join(walker.inline(p).split()) for p in cell.findall(q("text:p")))
            text = text.replace("|", "\\|")
            if not text:
                blanks += repeat
                continue
            room = MAX_COLUMNS - len(cells) - blanks
            if room <= 0:
                break
            cells.extend([""] * blanks + [text] * min(repeat, room))
            blanks = 0
        repeat = _int(row.get(q("table:number-rows-repeated")), 1)
        if not cells:  # a run of empty rows (often a million of them): only counted
            number += repeat
            continue
        for _ in range(repeat):
            number += 1
            yield number, list(cells)


def extract_ods(path: str, data: bytes, stem: str, ext: str,
                limits: ExtractLimits) -> ExtractedDoc:
    pkg = Package(data, ext)
    walker = TextWalker(pkg)
    out = DocBuilder()
    seen = [0]
    try:
        for tbl in pkg.body("spreadsheet").findall(q("table:table")):
            raw = tbl.get(q("table:name"), "")
            name = "".join(ch for ch in raw if ch.isprintable())
            add_sheet(out, name, name, _sheet_rows(tbl, walker), limits, seen, 0)
    except TooManyRows:
        raise too_many(limits) from None
    if not out.lines:
        raise Skip("spreadsheet has no cell values")
    limits.tick(seen[0], seen[0])
    return out.build(path, "ods", pkg.title(stem), explicit=True)
