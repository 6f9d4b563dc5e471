"""Citations you can trust: badge -> chunk -> document -> lines on disk.

* :class:`CitationLedger` numbers every chunk any KB tool returns, once, in the
  order first seen; the same file with an overlapping line span keeps its
  number (the span widens to the union). Text is cleaned of markup before it
  is stored or matched. A cap bounds the ledger deterministically (first come).
* The text helpers both it and :mod:`kbagent.agent.answer.processor` (the answer
  processor) match with: markup-free text, stemmed content words.
"""

from __future__ import annotations

import html
import math
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import snowballstemmer

from kbagent.agent.records import DocumentReferences, ReferenceChunk, References
from kbagent.text import shorten

DEFAULT_CAP = 100
MIN_LCS = 20  # characters (CJK characters count 2.5) for a copied-sentence match
PARAPHRASE_OVERLAP = 0.6  # share of the sentence's content words found in a chunk

# Known HTML elements only: "<tenant_id>" in a Markdown code sample is content, not a tag.
HTML_TAGS = ("a|abbr|b|blockquote|br|code|dd|del|details|div|dl|dt|em|h[1-6]|hr|i|img|ins|kbd|"
             "li|mark|ol|p|pre|q|s|small|span|strong|sub|summary|sup|table|tbody|td|th|thead|"
             "tr|u|ul")
_TAG = re.compile(rf"</?(?:{HTML_TAGS})\b[^>]{{0,200}}>", re.IGNORECASE)
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
# Markup only: list numbers, underscores (code identifiers like __init__) and every word
# stay, so an excerpt can still be found in the lines on disk.
_MD_PREFIX = re.compile(r"^\s{0,3}(?:#{1,6}\s+|>\s?|[-*+]\s+)")
_MD_EMPH = re.compile(r"(\*\*|~~|`+)")
_SINGLE_EMPH = re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])")
_RULE = re.compile(r"^\s*([-=*_|:+\s])\1{2,}\s*$|^[\s|:+-]+$")
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_TOKEN = re.compile(
    r"\d+(?:[.,:]\d+)*%?|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|\w+"
)
STOPWORDS = frozenset(
    (
        "a an the and or but if then than of to in on at by for from with without into onto "
        "as is are was were be been being it its this that these those there here which who "
        "whom whose what when where why how do does did done have has had having not no nor "
        "so such can could will would shall should may might must also about above below over "
        "under again further very just only own same other some any each few more most both "
        "all i you he she we they me him her us them my your his our their per via "
    ).split()
)


def clean_text(text: str) -> str:
    """Markup-free, whitespace-collapsed text of a chunk or tool output."""
    out = []
    for line in html.unescape(_TAG.sub(" ", text)).split("\n"):
        if _RULE.match(line):
            continue
        line = _MD_PREFIX.sub("", line)
        line = _MD_LINK.sub(r"\1", line)
        line = _MD_EMPH.sub("", line)
        line = _SINGLE_EMPH.sub(r"\1", line)
        line = line.replace("|", " ")
        line = " ".join(line.split())
        if line:
            out.append(line)
    return " ".join(out)


def content_tokens(text: str) -> set[str]:
    """The stemmed content words and normalized numbers of ``text`` (a set)."""
    return {_stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS}


@lru_cache(maxsize=65536)
def _stem(tok: str) -> str:
    """A number without grouping commas and ``%``; a word by the English Snowball
    stemmer (the pure-Python one is slow: words repeat, so they are cached)."""
    if tok[0].isdigit():
        return tok.replace(",", "").rstrip("%")
    stem: str = _stemmer().stemWord(tok)
    return stem


_local = threading.local()


def _stemmer() -> Any:
    """This thread's stemmer (a stemmer object keeps state between words)."""
    if not hasattr(_local, "stemmer"):
        _local.stemmer = snowballstemmer.stemmer("english")
    return _local.stemmer


def weighted_len(text: str) -> float:
    cjk = len(CJK.findall(text))
    return len(text) - cjk + 2.5 * cjk


def normalize_score(score: Any) -> float | None:
    try:
        value = float(score)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) or math.isinf(value) else round(value, 6)


@dataclass
class Citation:
    n: int
    kb: str
    path: str
    start_line: int
    end_line: int
    text: str  # cleaned
    score: float | None
    tool: str
    heading: str = ""
    raw: str = ""  # the chunk's text as read, line breaks and markup kept (evidence units)

    def excerpt(self, width: int = 240) -> str:
        return shorten(self.text, width, at_word=True, mark="", fold=False)


Resolver = Callable[[str, str, int, int], str | None]  # (kb, path, start, end) -> raw text
Locator = Callable[[str, str, int, int], str]  # (kb, path, start, end) -> "p.2 l.3-9" or ''


class CitationLedger:
    """Per-question numbering of every chunk the tools have shown the model."""

    def __init__(self, cap: int = DEFAULT_CAP, resolver: Resolver | None = None) -> None:
        self.cap = cap
        self.resolver = resolver
        self.locator: Locator | None = None  # page/slide/cells of a span (kb/locations.py)
        self._items: list[Citation] = []
        self.dropped = 0  # chunks not numbered because the cap was reached

    def __iter__(self) -> Iterator[Citation]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def get(self, n: int) -> Citation | None:
        return self._items[n - 1] if 1 <= n <= len(self._items) else None

    def numbers(self) -> set[int]:
        return {c.n for c in self._items}

    def add(self, *, kb: str, path: str, start_line: int, end_line: int, text: str,
            score: Any = None, tool: str = "", heading: str = "") -> int | None:
        """Number a chunk (or return the number it already has); None if empty or capped."""
        cleaned = clean_text(text)
        if not cleaned:
            return None
        start, end = int(start_line), int(max(end_line, start_line))
        score = normalize_score(score)
        for c in self._items:
            if c.kb == kb and c.path == path and c.start_line <= end and start <= c.end_line:
                if start < c.start_line or end > c.end_line:
                    c.start_line, c.end_line = min(start, c.start_line), max(end, c.end_line)
                    raw = (self.resolver(kb, path, c.start_line, c.end_line)
                           if self.resolver else None)
                    c.text = clean_text(raw) if raw else f"{c.text} {cleaned}"
                    c.raw = raw if raw else f"{c.raw}\n{text}"
                if score is not None and (c.score is None or score > c.score):
                    c.score = score
                return c.n
        if len(self._items) >= self.cap:
            self.dropped += 1
            return None
        c = Citation(len(self._items) + 1, kb, path, start, end, cleaned, score, tool, heading,
                     raw=text)
        self._items.append(c)
        return c.n

    def references(self, numbers: set[int] | None,
                   support: dict[int, bool | None] | None = None) -> References:
        """References grouped by document (first-cited document first): those of
        ``numbers`` (None: every chunk), each with its support verdict."""
        support = support or {}
        groups: dict[tuple[str, str], DocumentReferences] = {}
        for c in self._items:
            if numbers is not None and c.n not in numbers:
                continue
            g = groups.setdefault((c.kb, c.path), DocumentReferences(c.kb, c.path))
            g.chunks.append(ReferenceChunk(
                n=c.n, kb=c.kb, path=c.path, start_line=c.start_line, end_line=c.end_line,
                score=c.score, tool=c.tool, heading=c.heading, excerpt=c.excerpt(),
                supported=support.get(c.n),
                location=self.locator(c.kb, c.path, c.start_line, c.end_line)
                if self.locator else ""))
        return References(groups.values())
