"""OpenDocument slides (.odp, .fodp) -> lines with places, as PowerPoint decks are read:
one section per slide titled ``slide N: <title>`` (its ``presentation:class="title"``
frame), the other frames top to bottom then left to right (text boxes, lists, tables,
groups), speaker notes last. A line's place is its slide number. Page numbers,
headers, footers and dates (the same on every slide) are left out.
"""

from __future__ import annotations

from typing import Any

from kbagent.kb.formats.builder import DocBuilder
from kbagent.kb.formats.odf import NS, Package, TextWalker, q
from kbagent.kb.locations import SLIDE
from kbagent.kb.models import ExtractedDoc
from kbagent.kb.source_text import Skip

_FURNITURE = {"page-number", "header", "footer", "date-time", "page"}


def _length(value: str | None) -> float:
    """An ODF length (``2.5cm``, ``12mm``, ``1in``, ``72pt``) in centimetres."""
    if not value:
        return 0.0
    for unit, factor in (("cm", 1.0), ("mm", 0.1), ("in", 2.54), ("pt", 2.54 / 72),
                         ("pc", 2.54 / 6), ("px", 2.54 / 96)):
        if value.endswith(unit):
            try:
                return float(value[: -len(unit)]) * factor
            except ValueError:
                return 0.0
    return 0.0


def _shape_lines(shape: Any, walker: TextWalker) -> list[str]:
    """Text of one frame, shape or group, in the order the slide shows it."""
    if shape.tag == q("draw:g"):
        return [ln for sub in _reading_order(shape) for ln in _shape_lines(sub, walker)]
    lines: list[str] = []
    holders = [shape, *[c for c in shape if c.tag == q("draw:text-box")]]
    for holder in holders:
        for el in holder:
            if el.tag == q("table:table"):
                lines.extend(walker.table(el))
            elif el.tag in (q("text:p"), q("text:h"), q("text:list")):
                lines.extend(walker.block(el) if el.tag != q("text:h") else
                             [" ".join(walker.inline(el).split())])
    return [ln for ln in lines if ln.strip() or ln == ""]


def _reading_order(parent: Any) -> list[Any]:
    """Top to bottom, then left to right (to the millimetre), as python-pptx's path does."""
    shapes = [el for el in parent if el.tag.startswith(f"{{{NS['draw']}}}")
              and el.tag != q("draw:page-thumbnail")
              and el.get(q("presentation:class")) not in _FURNITURE]
    return [s for _, s in sorted(enumerate(shapes), key=lambda p: (
        round(_length(p[1].get(q("svg:y"))) * 10), _length(p[1].get(q("svg:x"))), p[0]))]


def extract_odp(path: str, data: bytes, stem: str, ext: str) -> ExtractedDoc:
    pkg = Package(data, ext)
    walker = TextWalker(pkg)
    out = DocBuilder()
    pages = pkg.body("presentation").findall(q("draw:page"))
    for number, page in enumerate(pages, start=1):
        label = str(number)
        shapes = _reading_order(page)
        title_shape = next((s for s in shapes
                            if s.get(q("presentation:class")) == "title"), None)
        title = " ".join(" ".join(_shape_lines(title_shape, walker)).split()
                         ) if title_shape is not None else ""
        out.section(f"slide {number}: {title}" if title else f"slide {number}")
        if title:
            out.add(title, SLIDE, label)
        for shape in shapes:
            if shape is not title_shape:
                for line in _shape_lines(shape, walker):
                    out.add(line, SLIDE, label)
        notes = page.find(q("presentation:notes"))
        if notes is not None:
            text = "\n".join(ln for s in _reading_order(notes)
                             for ln in _shape_lines(s, walker) if ln.strip())
            if text.strip():
                out.add("Speaker notes:", SLIDE, label)
                out.add(text, SLIDE, label)
        if out.sections[-1][0] == len(out.lines):  # an empty slide: nothing to cite
            out.sections.pop()
    if not any(ln.text.strip() for ln in out.lines):
        raise Skip("presentation has no text")
    return out.build(path, "odp", pkg.title(stem), explicit=True)
