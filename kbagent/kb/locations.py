"""Where a span of extracted text lies in its source, in the source's own terms.

Extracted lines are numbered 1..n, but a person checks a citation in the
original: page 2 of a PDF, slide 3 of a deck, cells ``Budget!A2:C9`` of a
workbook, cell 4 of a notebook, a chapter of an EPUB, a section of a Word
file. Extractors record a :class:`Segment` per run of lines that share a
place; :func:`describe` turns any line span (a chunk, or the union of cited
spans) into a short label such as ``p.2 l.3-13`` or ``slides 3-4``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

PAGE, SLIDE, SHEET, CELL, CHAPTER, SECTION = "page", "slide", "sheet", "cell", "chapter", "section"


@dataclass
class Segment:
    """Lines ``first``..``last`` (extracted numbering) lie at ``unit`` ``label``;
    ``sub`` is the first line's position inside it (line within a PDF page, row of a
    sheet) and grows by one per line; ``cols`` is a sheet's column count."""

    first: int
    last: int
    unit: str
    label: str
    sub: int = 0
    cols: int = 0

    def to_list(self) -> list[Any]:
        return [self.first, self.last, self.unit, self.label, self.sub, self.cols]


class Locator:
    """Collects one segment per run of lines as an extractor emits them."""

    def __init__(self) -> None:
        self.segments: list[Segment] = []

    def mark(self, line: int, unit: str, label: str, sub: int = 0, cols: int = 0) -> None:
        """Line ``line`` lies at (unit, label, sub); extends the last segment if it fits."""
        last = self.segments[-1] if self.segments else None
        if (last is not None and last.unit == unit and last.label == label and last.cols == cols
                and last.last == line - 1 and last.sub + (line - last.first) == sub):
            last.last = line
            return
        self.segments.append(Segment(line, line, unit, label, sub, cols))


def dumps(segments: list[Segment]) -> str | None:
    return json.dumps([s.to_list() for s in segments], separators=(",", ":")) if segments else None


def loads(raw: str | None) -> list[Segment]:
    if not raw:
        return []
    try:
        return [Segment(int(a), int(b), str(u), str(lab), int(s), int(c))
                for a, b, u, lab, s, c in json.loads(raw)]
    except (ValueError, TypeError):  # a damaged map costs the label, never the read
        return []


def column_letters(n: int) -> str:
    """1 -> A, 26 -> Z, 27 -> AA (spreadsheet column names)."""
    out = ""
    while n > 0:
        n, rem = divmod(n - 1, 26)
        out = chr(65 + rem) + out
    return out or "A"


def _sheet_ref(name: str) -> str:
    if not name:
        return ""
    plain = name.replace("_", "").isalnum()
    return (name if plain else "'" + name.replace("'", "''") + "'") + "!"


def _range(lo: int, hi: int, one: str, many: str) -> str:
    return f"{one} {lo}" if lo == hi else f"{many} {lo}-{hi}"


def describe(segments: list[Segment], start: int, end: int) -> str:
    """The location of extracted lines ``start``..``end``; '' when nothing is known."""
    hit = [s for s in segments if s.first <= end and start <= s.last]
    if not hit:
        return ""
    unit = hit[0].unit
    same = [s for s in hit if s.unit == unit]
    if unit == PAGE:
        if len({s.label for s in same}) == 1:
            s0, s1 = same[0], same[-1]
            a = s0.sub + max(0, start - s0.first)
            b = s1.sub + (min(end, s1.last) - s1.first)
            return f"p.{s0.label} l.{a}" + (f"-{b}" if b != a else "")
        return f"pp.{same[0].label}-{same[-1].label}"
    if unit == SHEET:
        parts: dict[str, tuple[int, int, int]] = {}
        for s in same:
            lo = s.sub + max(0, start - s.first)
            hi = s.sub + (min(end, s.last) - s.first)
            old = parts.get(s.label)
            parts[s.label] = ((min(old[0], lo), max(old[1], hi), max(old[2], s.cols)) if old
                              else (lo, hi, s.cols))
        return ", ".join(f"{_sheet_ref(name)}A{lo}:{column_letters(cols)}{hi}"
                         for name, (lo, hi, cols) in parts.items())
    if unit in (SLIDE, CELL, CHAPTER):
        nums = [int(s.label) for s in same if s.label.isdigit()]
        if nums:
            return _range(min(nums), max(nums), unit, unit + "s")
        if unit == CHAPTER:  # an EPUB chapter is named by its title
            titles = list(dict.fromkeys(s.label for s in same))
            return (f"chapter “{titles[0]}”" if len(titles) == 1
                    else f"chapters “{titles[0]}” – “{titles[-1]}”")
        return f"{unit} {same[0].label}"
    labels = [s.label for s in same if s.label]
    if not labels:
        return ""
    return f"§ {labels[0]}" + (" …" if len(set(labels)) > 1 else "")
