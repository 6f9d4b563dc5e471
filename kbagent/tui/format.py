"""Small text helpers for the TUI (no widgets)."""

from __future__ import annotations

from typing import Any

from kbagent.text import shorten


def excerpt(text: str, width: int = 160) -> str:
    return shorten(text or "", width)


def ref_location(ref: dict[str, Any]) -> str:
    """``path:start-end`` of a reference, with its page/slide/cells when known."""
    place = f" {ref['location']}" if ref.get("location") else ""
    return f"{ref['path']}{place}:{ref['start_line']}-{ref['end_line']}"


def reference_detail(ref: dict[str, Any], lines: list[Any] | None) -> str:
    """What selecting a badge shows: location, score, and the cited lines."""
    head = (f"[{ref['n']}] {ref['kb']}:{ref_location(ref)} · score {ref.get('score') or 0:.3f}"
            + (" · not supported by the answer's claim" if ref.get("supported") is False
               else ""))
    if not lines:
        return head + "\n" + excerpt(ref.get("excerpt", ""), 400)
    width = len(str(max(ln.number for ln in lines)))
    body = "\n".join(f"{ln.number:>{width}}│ {ln.text}" for ln in lines[:40])
    more = f"\n… {len(lines) - 40} more lines" if len(lines) > 40 else ""
    return f"{head}\n{body}{more}"
