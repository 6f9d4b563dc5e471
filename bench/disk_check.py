"""Check that a reference's lines *on disk* contain its excerpt, independently of
kbagent's own extraction: raw file lines for text formats, tags stripped from the raw
HTML source lines, pypdf's text for PDFs; compared as word sequences."""

from __future__ import annotations

import html
import re
from functools import lru_cache
from pathlib import Path

_WORD = re.compile(r"\w+")
_INLINE_TAG = re.compile(
    r"</?(?:a|abbr|b|blockquote|br|code|dd|del|details|div|dl|dt|em|h[1-6]|hr|i|img|ins|kbd|"
    r"li|mark|ol|p|pre|q|s|small|span|strong|sub|summary|sup|table|tbody|td|th|thead|tr|u|ul)"
    r"\b[^>]{0,200}>", re.IGNORECASE)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@lru_cache(maxsize=512)
def disk_lines(path: str) -> tuple[str, ...]:
    p = Path(path)
    if p.suffix.lower() == ".pdf":
        from pypdf import PdfReader

        out: list[str] = []
        for page in PdfReader(str(p)).pages:
            out.extend((page.extract_text() or "").replace("\r\n", "\n").split("\n"))
        return tuple(out)
    text = p.read_text(encoding="utf-8-sig")
    lines = text.replace("\r\n", "\n").split("\n")
    if p.suffix.lower() in (".html", ".htm"):
        return tuple(html.unescape(re.sub(r"<[^>]*>", " ", ln)) for ln in lines)
    return tuple(_INLINE_TAG.sub(" ", ln) for ln in lines)  # inline HTML in Markdown


def contains(haystack: list[str], needle: list[str]) -> bool:
    if not needle:
        return True
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def resolves(source_root: str, ref: dict) -> bool:
    """True if lines start..end of the file contain the reference's excerpt."""
    lines = disk_lines(str(Path(source_root) / ref["path"]))
    window = " ".join(lines[ref["start_line"] - 1 : ref["end_line"]])
    needle = words(ref["excerpt"])
    if len(needle) > 1:
        needle = needle[:-1]  # the excerpt may end inside a word
    return contains(words(window), needle)
