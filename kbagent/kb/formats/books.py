"""EPUB (ebooklib) and Jupyter notebooks (nbformat) -> lines with places.

EPUB: the spine's documents in reading order, each HTML chapter turned into lines
by :mod:`kbagent.kb.html_text` (its headings become ``#`` lines); a line's place
is its chapter, named by its title in the book's table of contents (else its first
heading), so a citation reads ``chapter “The Storm”``. Notebooks: markdown cells as
written, code cells fenced (so a ``#`` comment is never a heading) and followed by
their text outputs; a line's place is its cell number (1-based, as Jupyter's cell
list counts).
"""

from __future__ import annotations

import io
import json
from typing import Any
from urllib.parse import unquote

from kbagent.kb.formats.builder import DocBuilder
from kbagent.kb.html_text import html_to_lines
from kbagent.kb.locations import CELL, CHAPTER
from kbagent.kb.models import MD_HEADING, ExtractedDoc
from kbagent.kb.source_text import ExtractError, Skip, decode_text

MAX_OUTPUT_LINES = 40  # of one cell's outputs; a long log is not knowledge
MAX_TITLE = 80  # characters of a chapter title in a citation


def _toc_titles(toc: Any) -> list[tuple[str, str]]:
    """(file, title) of every table-of-contents entry, depth first (the book's order)."""
    out: list[tuple[str, str]] = []
    for entry in toc or ():
        if isinstance(entry, tuple) and len(entry) == 2:
            out.extend(_toc_titles([entry[0]]))
            out.extend(_toc_titles(entry[1]))
            continue
        href, title = getattr(entry, "href", None), getattr(entry, "title", None)
        if href and title:
            out.append((unquote(str(href).split("#")[0]), " ".join(str(title).split())))
    return out


def _chapter_names(book: Any) -> dict[str, str]:
    """Spine file name -> the title its first table-of-contents entry gives it. A nav
    entry names the file as the book does; an EPUB 2 NCX one relative to the NCX."""
    names = [item.get_name() for item in book.get_items()]
    titles: dict[str, str] = {}
    for href, title in _toc_titles(book.toc):
        name = next((n for n in names if n == href or n.endswith("/" + href.lstrip("./"))),
                    None)
        if name is not None and title and name not in titles:
            titles[name] = title
    return titles


def _short(title: str) -> str:
    return title if len(title) <= MAX_TITLE else title[: MAX_TITLE - 1].rstrip() + "…"


def extract_epub(path: str, data: bytes, stem: str) -> ExtractedDoc:
    import ebooklib
    from ebooklib import epub

    book = epub.read_epub(io.BytesIO(data), options={"ignore_ncx": True})
    titles = _chapter_names(book)
    out = DocBuilder()
    chapter = 0
    for idref, _linear in book.spine:
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        html = item.get_content().decode("utf-8", errors="replace")
        lines, _title = html_to_lines(html)
        if not any(ln.text.strip() for ln in lines):
            continue
        chapter += 1
        # named as the reader knows it: its table-of-contents title, else its first
        # heading; its number in the spine only when it has neither (a title page
        # and a cover count in the spine, so "chapter 3" is often not Chapter 3)
        heading = next((m.group(2).strip() for ln in lines if (m := MD_HEADING.match(ln.text))),
                       "")
        label = _short(titles.get(item.get_name()) or heading) or str(chapter)
        for ln in lines:
            out.add(ln.text, CHAPTER, label)
        out.add("", CHAPTER, label)
    if not out.lines:
        raise Skip("EPUB has no text")
    meta = book.get_metadata("DC", "title")
    title = str(meta[0][0]).strip() if meta else ""
    return out.build(path, "epub", title or stem, explicit=False)


def _source(cell: Any) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _output_text(output: Any) -> str:
    kind = output.get("output_type", "")
    if kind == "stream":
        text = output.get("text", "")
    elif kind in ("execute_result", "display_data"):
        text = output.get("data", {}).get("text/plain", "")
    elif kind == "error":
        text = f"{output.get('ename', '')}: {output.get('evalue', '')}"
    else:
        return ""
    return "".join(text) if isinstance(text, list) else str(text)


def extract_ipynb(path: str, data: bytes, stem: str) -> ExtractedDoc:
    import nbformat

    text = decode_text(data)
    try:
        nb = nbformat.reads(text, as_version=4)
    except (json.JSONDecodeError, nbformat.reader.NotJSONError) as e:
        raise ExtractError(f"not a Jupyter notebook (invalid JSON): {e}") from e
    lang = str(nb.metadata.get("language_info", {}).get("name", "") or "python")
    out = DocBuilder()
    for number, cell in enumerate(nb.cells, start=1):
        label = str(number)
        source = _source(cell).strip("\n")
        if not source.strip():
            continue
        kind = cell.get("cell_type", "")
        if kind == "markdown":
            out.add(source, CELL, label)
        elif kind == "code":
            count = cell.get("execution_count")
            out.add(f"In [{count if count is not None else ' '}]:", CELL, label)
            out.add(f"```{lang}", CELL, label)
            out.add(source, CELL, label)
            out.add("```", CELL, label)
            shown = "\n".join(t.strip("\n") for t in map(_output_text, cell.get("outputs", []))
                              if t.strip())
            if shown:
                lines = shown.split("\n")
                more = len(lines) - MAX_OUTPUT_LINES
                body = "\n".join(lines[:MAX_OUTPUT_LINES]).replace("```", "'''")
                out.add("Output:", CELL, label)
                out.add("```text", CELL, label)
                out.add(body + (f"\n… {more} more output lines" if more > 0 else ""), CELL, label)
                out.add("```", CELL, label)
        else:  # raw cells
            out.add(source, CELL, label)
        out.add("", CELL, label)
    if not any(ln.text.strip() for ln in out.lines):
        raise Skip("notebook has no cells with text")
    title = str(nb.metadata.get("title", "") or "").strip()
    return out.build(path, "ipynb", title or stem, explicit=False)
