"""What every document extractor builds with: the limits it honours, the
:class:`DocBuilder` that numbers lines and records where each came from, and the
table helpers. Below :mod:`kbagent.kb.formats`' dispatcher and every extractor."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kbagent.kb.locations import Locator
from kbagent.kb.models import ExtractedDoc, Line

ProgressFn = Callable[[int, int], None]  # (pages or rows done, total)


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
