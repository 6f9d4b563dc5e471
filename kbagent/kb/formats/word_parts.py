"""The parts of a Word file python-docx leaves alone: list numbering and notes.

:class:`WordNumbering` turns a paragraph's ``w:numPr`` (its own, or its style's) into
the marker Word shows: ``3.``, ``b)``, ``iv.`` from ``word/numbering.xml`` (``numFmt``,
``lvlText``, ``start``), counted as Word counts: per abstract list, a deeper level
restarting under each new item, and a list instance with a ``startOverride`` (how
pandoc and LibreOffice begin a new list) starting again. :class:`WordNotes` reads
``word/footnotes.xml`` and ``word/endnotes.xml``; a note is cited in its paragraph as
``[^1]`` (endnotes ``[^i]``, Word's default numbering) and its text follows as
``[^1]: text``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kbagent.kb.formats.numbering import BULLET_KINDS, Counters, counter_text, roman

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_PLACEHOLDER = re.compile(r"%([1-9])")
FOOTNOTE_REF, ENDNOTE_REF = W + "footnoteReference", W + "endnoteReference"


def parse_xml(blob: bytes) -> Any:
    """An XML part, never resolving entities or fetching anything."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                             huge_tree=False)
    return etree.fromstring(blob, parser)


def _val(el: Any, tag: str) -> str | None:
    child = el.find(W + tag) if el is not None else None
    return child.get(W + "val") if child is not None else None


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


@dataclass
class _Level:
    fmt: str = "decimal"
    text: str = "%1."
    start: int = 1


def _level(lvl: Any) -> _Level:
    return _Level(_val(lvl, "numFmt") or "decimal", _val(lvl, "lvlText") or "",
                  _int(_val(lvl, "start"), 1))


@dataclass
class _Num:
    abstract: str
    starts: dict[int, int] = field(default_factory=dict)  # lvlOverride/startOverride
    levels: dict[int, _Level] = field(default_factory=dict)  # lvlOverride/lvl


def part_blobs(document: Any, reltype: str) -> list[bytes]:
    return [rel.target_part.blob for rel in document.part.rels.values()
            if rel.reltype == reltype and not rel.is_external]


class WordNumbering:
    """List markers for the paragraphs of one document, in reading order."""

    def __init__(self, document: Any) -> None:
        from docx.opc.constants import RELATIONSHIP_TYPE as RT

        self.abstract: dict[str, dict[int, _Level]] = {}
        self.nums: dict[str, _Num] = {}
        self.counters: dict[str, Counters] = {}
        self.unstyled = Counters()  # "List Number" paragraphs without a numbering definition
        self.started: set[tuple[str, int]] = set()  # (numId, level) whose override applied
        self.style_num: dict[str, tuple[str | None, str | None]] = {}
        self.style_base: dict[str, str] = {}
        links: dict[str, str] = {}  # abstractNum -> the list style it takes its levels from
        for blob in part_blobs(document, RT.NUMBERING)[:1]:
            root = parse_xml(blob)
            for ab in root.iter(W + "abstractNum"):
                key = ab.get(W + "abstractNumId") or ""
                self.abstract[key] = {_int(lv.get(W + "ilvl"), 0): _level(lv)
                                      for lv in ab.iter(W + "lvl")}
                link = _val(ab, "numStyleLink")
                if link:
                    links[key] = link
            for num in root.iter(W + "num"):
                entry = _Num(_val(num, "abstractNumId") or "")
                for ov in num.iter(W + "lvlOverride"):
                    ilvl = _int(ov.get(W + "ilvl"), 0)
                    start = _val(ov, "startOverride")
                    if start is not None:
                        entry.starts[ilvl] = _int(start, 1)
                    lvl = ov.find(W + "lvl")
                    if lvl is not None:
                        entry.levels[ilvl] = _level(lvl)
                self.nums[num.get(W + "numId") or ""] = entry
        for style in document.styles.element.iter(W + "style"):
            sid = style.get(W + "styleId") or ""
            num_pr = style.find(f"{W}pPr/{W}numPr")
            if num_pr is not None:
                self.style_num[sid] = (_val(num_pr, "numId"), _val(num_pr, "ilvl"))
            base = _val(style, "basedOn")
            if base:
                self.style_base[sid] = base
        for key, link in links.items():  # a list style's levels live in its own list
            num_id, _ = self._style_numpr(link)
            target = self.nums.get(num_id or "")
            if target is not None and target.abstract != key:
                self.abstract[key] = self.abstract.get(target.abstract, {})

    def _style_numpr(self, style_id: str) -> tuple[str | None, str | None]:
        for _ in range(10):  # a basedOn chain (a cycle in a damaged file ends here)
            if style_id in self.style_num:
                return self.style_num[style_id]
            style_id = self.style_base.get(style_id, "")
            if not style_id:
                break
        return None, None

    def marker(self, p: Any, style_id: str) -> str | None:
        """The list marker of paragraph element ``p`` (``"  1. "``), ``""`` for a list
        level that shows nothing, None when the paragraph is not in a list."""
        num_pr = p.pPr.numPr if p.pPr is not None else None
        num_id = _val(num_pr, "numId") if num_pr is not None else None
        ilvl = _val(num_pr, "ilvl") if num_pr is not None else None
        if num_id is None:
            num_id, style_lvl = self._style_numpr(style_id)
            ilvl = ilvl if ilvl is not None else style_lvl
        num = self.nums.get(num_id or "")
        if num is None:  # numId 0 (numbering switched off) or a missing definition
            return None
        level = min(8, max(0, _int(ilvl, 0)))
        levels = self.abstract.get(num.abstract, {})
        fmt = num.levels.get(level) or levels.get(level) or _Level()
        counters = self.counters.setdefault(num.abstract, Counters())
        if (num_id or "", level) not in self.started and level in num.starts:
            counters.restart(level, num.starts[level])
        self.started.add((num_id or "", level))
        counters.step(level, fmt.start)
        indent = "  " * level
        if fmt.fmt in BULLET_KINDS:
            return indent + "- " if fmt.fmt == "bullet" else ""

        def shown(m: re.Match[str]) -> str:
            k = int(m.group(1)) - 1
            other = num.levels.get(k) or levels.get(k) or _Level()
            return counter_text(counters.at(k, other.start), other.fmt)

        text = _PLACEHOLDER.sub(shown, fmt.text).strip()
        return indent + text + " " if text else ""


class WordNotes:
    """Footnote and endnote texts by id; each note gets its label when first cited."""

    def __init__(self, document: Any) -> None:
        from docx.opc.constants import RELATIONSHIP_TYPE as RT

        self.text: dict[tuple[str, str], str] = {}
        for kind, reltype in (("footnote", RT.FOOTNOTES), ("endnote", RT.ENDNOTES)):
            for blob in part_blobs(document, reltype)[:1]:
                for note in parse_xml(blob).iter(W + kind):
                    if note.get(W + "type") in ("separator", "continuationSeparator",
                                                "continuationNotice"):
                        continue
                    text = _note_text(note)
                    if text:
                        self.text[(kind, note.get(W + "id") or "")] = text
        self.labels: dict[tuple[str, str], str] = {}
        self.count = {"footnote": 0, "endnote": 0}

    def cite(self, ref: Any) -> str:
        """The label of a ``w:footnoteReference``/``w:endnoteReference``, '' if empty."""
        kind = "footnote" if ref.tag == FOOTNOTE_REF else "endnote"
        key = (kind, ref.get(W + "id") or "")
        if key not in self.text:
            return ""
        if key not in self.labels:
            self.count[kind] += 1
            n = self.count[kind]
            self.labels[key] = str(n) if kind == "footnote" else roman(n)
        return self.labels[key]

    def lines(self, labels: list[str]) -> list[str]:
        by_label = {label: self.text[key] for key, label in self.labels.items()}
        return [f"[^{label}]: {by_label[label]}" for label in dict.fromkeys(labels)]


def _note_text(note: Any) -> str:
    paragraphs = []
    for p in note.iter(W + "p"):
        parts = []
        for el in p.iter(W + "t", W + "tab", W + "br"):
            parts.append(el.text or "" if el.tag == W + "t" else " ")
        paragraphs.append(" ".join("".join(parts).split()))
    return " ".join(t for t in paragraphs if t)


def paragraph_text(par: Any, notes: WordNotes) -> tuple[str, list[str]]:
    """A paragraph's text with ``[^n]`` where a note is cited, and the labels cited."""
    from docx.text.hyperlink import Hyperlink

    parts: list[str] = []
    labels: list[str] = []
    for item in par.iter_inner_content():
        parts.append(item.text)
        runs = item.runs if isinstance(item, Hyperlink) else [item]
        for run in runs:
            for ref in run._r.iter(FOOTNOTE_REF, ENDNOTE_REF):
                label = notes.cite(ref)
                if label:
                    parts.append(f"[^{label}]")
                    labels.append(label)
    return "".join(parts), labels


def element_notes(element: Any, notes: WordNotes) -> list[str]:
    """The labels of the notes cited anywhere inside ``element`` (a table), in order."""
    return [label for ref in element.iter(FOOTNOTE_REF, ENDNOTE_REF)
            if (label := notes.cite(ref))]
