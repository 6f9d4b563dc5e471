"""Small text helpers for the TUI (no widgets)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from kbagent.safe_text import clean
from kbagent.text import shorten


def plain(text: object, style: str = "") -> Text:
    """Text from documents, file names, the model or an error message, for a widget:
    shown as written (``[bold]`` or ``[link=…]`` stay text, a Rich Text is never
    parsed as markup) and without terminal control sequences (kbagent/safe_text.py)."""
    return Text(clean(str(text)), style=style)


def literal(text: object) -> str:
    """The same for the Textual APIs that take a markup string (collapsible titles,
    the header): control sequences removed, markup escaped."""
    from textual.markup import escape

    return escape(clean(str(text)))


def excerpt(text: str, width: int = 160) -> str:
    return shorten(text or "", width)


def located(path: str, location: str, start: int, end: int) -> str:
    """``path p.2 l.3-9:10-16``: a span of extracted lines with the place in the source
    a person checks (page, slide, sheet cells; kb/locations.py), as ``kbagent ref``
    writes it; ``path:10-16`` when the format has no places."""
    place = f" {location}" if location else ""
    return f"{path}{place}:{start}-{end}"


def ref_location(ref: dict[str, Any]) -> str:
    """``path:start-end`` of a reference, with its page/slide/cells when known."""
    return located(ref["path"], ref.get("location") or "", ref["start_line"], ref["end_line"])


def check_note(check: Any) -> str:
    """A reference's state since the answer, for people ("" when unchanged)."""
    if check is None or str(check.state) == "unchanged":
        return ""
    diff = "  ".join(check.diff)
    return f"⚠ {check.detail}" + (f"\n  {diff}" if diff else "")


def reference_detail(ref: dict[str, Any], lines: list[Any] | None,
                     check: Any = None) -> str:
    """What selecting a badge shows: location, score, whether the source changed
    since the answer (``check``: a kb.provenance.RefCheck), and the cited lines."""
    head = (f"[{ref['n']}] {ref['kb']}:{ref_location(ref)} · score {ref.get('score') or 0:.3f}"
            + (" · not supported by the answer's claim" if ref.get("supported") is False
               else ""))
    if note := check_note(check):
        head += "\n" + note
    if not lines:
        return head + "\n" + excerpt(ref.get("excerpt", ""), 400)
    width = len(str(max(ln.number for ln in lines)))
    body = "\n".join(f"{ln.number:>{width}}│ {ln.text}" for ln in lines[:40])
    more = f"\n… {len(lines) - 40} more lines" if len(lines) > 40 else ""
    return f"{head}\n{body}{more}"
