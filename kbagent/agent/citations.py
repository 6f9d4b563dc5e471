"""Citations you can trust: badge -> chunk -> document -> lines on disk.

* :class:`CitationLedger` numbers every chunk any KB tool returns, once, in the
  order first seen; the same file with an overlapping line span keeps its
  number (the span widens to the union). Text is cleaned of markup before it
  is stored or matched. A cap bounds the ledger deterministically (first come).
* :class:`AnswerProcessor` post-processes the answer sentence by sentence, so
  it can stream: marker variants are normalised to ``[n]``, numbers the
  ledger does not know are dropped, a sentence the model left uncited gets a
  marker placed at its end when it matches a chunk (longest common substring
  above a minimum length, or strong word overlap for paraphrases), and every
  cited sentence gets a lexical support score against its chunks.
"""

from __future__ import annotations

import html
import math
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Any

import snowballstemmer

from kbagent.text import shorten

DEFAULT_CAP = 100
MIN_LCS = 20  # characters (CJK characters count 2.5) for a copied-sentence match
PARAPHRASE_OVERLAP = 0.6  # share of the sentence's content words found in a chunk
SUPPORT_THRESHOLD = 0.5

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
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
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
    return _stemmer().stemWord(tok)


_local = threading.local()


def _stemmer() -> Any:
    """This thread's stemmer (a stemmer object keeps state between words)."""
    if not hasattr(_local, "stemmer"):
        _local.stemmer = snowballstemmer.stemmer("english")
    return _local.stemmer


def _weighted_len(text: str) -> float:
    cjk = len(_CJK.findall(text))
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

    def excerpt(self, width: int = 240) -> str:
        return shorten(self.text, width, at_word=True, mark="", fold=False)


Resolver = Callable[[str, str, int, int], str | None]  # (kb, path, start, end) -> raw text


class CitationLedger:
    """Per-question numbering of every chunk the tools have shown the model."""

    def __init__(self, cap: int = DEFAULT_CAP, resolver: Resolver | None = None) -> None:
        self.cap = cap
        self.resolver = resolver
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
                if score is not None and (c.score is None or score > c.score):
                    c.score = score
                return c.n
        if len(self._items) >= self.cap:
            self.dropped += 1
            return None
        c = Citation(len(self._items) + 1, kb, path, start, end, cleaned, score, tool, heading)
        self._items.append(c)
        return c.n

    def references(self, numbers: set[int] | None,
                   support: dict[int, bool | None] | None = None) -> list[dict[str, Any]]:
        """References grouped by document (first-cited document first)."""
        support = support or {}
        groups: dict[tuple[str, str], dict[str, Any]] = {}
        for c in self._items:
            if numbers is not None and c.n not in numbers:
                continue
            g = groups.setdefault((c.kb, c.path), {"kb": c.kb, "path": c.path, "chunks": []})
            g["chunks"].append({
                "n": c.n, "kb": c.kb, "path": c.path, "start_line": c.start_line,
                "end_line": c.end_line, "score": c.score, "tool": c.tool,
                "heading": c.heading, "excerpt": c.excerpt(), "supported": support.get(c.n),
            })
        return list(groups.values())


# ---------------------------------------------------------------- markers
_VARIANT = re.compile(
    r"(?P<ws>[ \t]*)(?:"
    r"【\s*(?P<a>[\d\s,，、;；\-–]+?)\s*】"
    r"|\[\^(?P<b>\d+)\]"
    r"|\[\s*(?:(?:source|sources|ref|refs|citation|chunk|doc)\s*)?#?\s*"
    r"(?P<c>\d+(?:\s*[,，、;；\-–]\s*#?\d+)*)\s*\])",
    re.IGNORECASE,
)
_MARKER = re.compile(r"\[(\d+)\]")
_ENDED = re.compile(r"[.!?。！？…][\"'”’)\]」』）]*$")  # text that ends a sentence
_RESTART = re.compile(
    r"(?:^|\n)[ \t]*(?:the\s+)?final\s+answer(?:\s+is)?\s*:[ \t]*|(?:^|\n)[ \t]*"
    r"(?:thought|question|observation|action)\s*:",
    re.IGNORECASE,
)


def _expand(group: str) -> list[int]:
    nums: list[int] = []
    for part in re.split(r"[,，、;；]", group):
        part = part.strip().lstrip("#")
        m = re.match(r"^(\d+)\s*[\-–]\s*#?(\d+)$", part)
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            nums.extend(range(a, b + 1) if 0 <= b - a <= 10 else [a, b])
        elif part.isdigit():
            nums.append(int(part))
    return nums


def normalize_markers(text: str, valid: set[int]) -> str:
    """Rewrite marker variants as ``[n][m]``; drop numbers not in ``valid``."""

    def repl(m: re.Match[str]) -> str:
        group = m.group("a") or m.group("b") or m.group("c") or ""
        seen: list[int] = []
        for n in _expand(group):
            if n in valid and n not in seen:
                seen.append(n)
        # a dropped marker takes its leading space with it
        return m.group("ws") + "".join(f"[{n}]" for n in seen) if seen else ""

    out = _VARIANT.sub(repl, text)
    return re.sub(r"(\[\d+\])(?:\s*\1)+", r"\1", out)  # [1] [1] -> [1]


def cited_numbers(text: str) -> list[int]:
    return [int(n) for n in _MARKER.findall(text)]


# --------------------------------------------------------------- sentences
_ABBREV = {"e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "inc", "ltd", "co", "no", "fig",
           "approx", "st", "jr", "sr", "u.s", "dept", "est"}
_END = re.compile(
    r"(?:[.!?]+[\"'”’)\]]*(?:[ \t]*\[\d+\])*(?=\s|$)"
    r"|[。！？]+[」』）)]*(?:\[\d+\])*"
    r"|\n+)"
)


def _is_abbreviation(text: str, dot: int) -> bool:
    if text[dot] != ".":
        return False
    m = re.search(r"([A-Za-z][A-Za-z.]*)$", text[:dot])
    if not m:
        return False
    word = m.group(1).lower().rstrip(".")
    return word in _ABBREV or len(word) == 1


def sentence_spans(text: str, final: bool = True) -> tuple[list[str], str]:
    """Split off complete sentences (trailing whitespace included); return (sentences, rest).
    With ``final=False`` a boundary only counts once text follows it that cannot be
    a citation marker belonging to the sentence."""
    out: list[str] = []
    start = 0
    for m in _END.finditer(text):
        end = m.end()
        if m.start() < start or _is_abbreviation(text, m.start()):
            continue
        while end < len(text) and text[end] in " \t":
            end += 1
        if end < len(text) and text[end] == "\n":
            nl = re.match(r"\n+", text[end:])
            end += nl.end() if nl else 0
        rest = text[end:]
        if not final and (not rest.strip() or rest.lstrip().startswith(("[", "【"))):
            break
        out.append(text[start:end])
        start = end
    tail = text[start:]
    if final and tail:
        out.append(tail)
        tail = ""
    return out, tail


# ----------------------------------------------------------- post-processing
@dataclass
class ProcessedSentence:
    text: str
    cited: list[int]
    auto: bool = False  # a marker was placed by the harness
    support: float | None = None
    supported: bool | None = None


def _insert_marker(sentence: str, marker: str) -> str:
    """Place a marker at the end of the sentence, before its terminal punctuation."""
    body = sentence.rstrip()
    trail = sentence[len(body):]
    m = re.search(r"([.!?。！？]+[\"'”’)\]」』）]*)$", body)
    if m:
        core = body[: m.start()]
        sep = "" if _CJK.search(core[-1:] or "") else " "
        return f"{core.rstrip()}{sep}{marker}{m.group(1)}{trail}"
    sep = "" if _CJK.search(body[-1:] or "") else " "
    return f"{body}{sep}{marker}{trail}"


@dataclass
class AnswerProcessor:
    """Streaming post-processor: feed raw answer text, get finished sentences."""

    ledger: CitationLedger
    threshold: float = SUPPORT_THRESHOLD
    auto_cite: bool = True
    _buffer: str = ""
    used_auto: set[int] = field(default_factory=set)
    sentences: list[ProcessedSentence] = field(default_factory=list)
    _matchers: dict[int, SequenceMatcher] = field(default_factory=dict)

    def feed(self, delta: str) -> list[ProcessedSentence]:
        self._buffer += delta
        done, self._buffer = sentence_spans(self._buffer, final=False)
        return [self._process(s) for s in done]

    def cut_restart(self) -> bool:
        """A small model often restarts its answer ("The final answer is: ...") or the
        protocol ("Thought:") after answering. Drop such a restart; True if one was cut.
        The same phrase at the very start of the answer is only stripped."""
        if not self.sentences:
            lead = _RESTART.match(self._buffer)
            if lead and lead.start() == 0 and self._buffer[lead.end():].strip():
                self._buffer = self._buffer[lead.end():].lstrip()
        m = _RESTART.search(self._buffer, 0 if self.sentences else 1)
        if m is None or (not self.sentences and not self._buffer[: m.start()].strip()):
            return False
        self._buffer = self._buffer[: m.start()].rstrip()
        return True

    def trim_repetition(self, window: int = 24) -> bool:
        """Detect a degenerate loop in the unfinished text (a small model repeating
        itself); cut it back to one copy of the repeated part. Returns True if cut."""
        buf = self._buffer
        if len(buf) < 3 * window:
            return False
        # citation numbers do not make a repeat new ("Source: [1] Source: [2] ..."):
        # compare with their digits masked (same length, so positions carry over)
        norm = _MARKER.sub(lambda m: "[" + "#" * (len(m.group()) - 2) + "]", buf)
        tail = norm[-window:]
        first = norm.find(tail)
        second = norm.find(tail, first + 1)
        if second == -1 or norm.count(tail) < 3:
            return False
        self._buffer = buf[: second].rstrip()
        return True

    def drop_repeat(self) -> bool:
        """If the newest finished sentence repeats an earlier one (citation markers,
        case and spacing aside), drop it and return True."""
        if len(self.sentences) < 2:
            return False
        norm = " ".join(_MARKER.sub("", self.sentences[-1].text).lower().split())
        if norm and any(norm == " ".join(_MARKER.sub("", s.text).lower().split())
                        for s in self.sentences[:-1]):
            self.sentences.pop()
            return True
        return False

    def drop_unfinished(self) -> str:
        """Drop an unfinished trailing sentence (generation hit its token limit
        mid-sentence), if at least one sentence is finished. Returns what was dropped."""
        pieces, _ = sentence_spans(self._buffer, final=True)
        if not pieces or not (self.sentences or len(pieces) > 1):
            return ""
        last = _MARKER.sub("", pieces[-1]).rstrip()
        if not last or _ENDED.search(last):
            return ""
        self._buffer = "".join(pieces[:-1])
        return pieces[-1]

    def finish(self) -> list[ProcessedSentence]:
        done, self._buffer = sentence_spans(self._buffer, final=True)
        return [self._process(s) for s in done]

    @property
    def answer(self) -> str:
        return "".join(s.text for s in self.sentences).strip()

    def cited(self) -> set[int]:
        return {n for s in self.sentences for n in s.cited}

    def support_by_number(self) -> dict[int, bool | None]:
        out: dict[int, bool | None] = {}
        for s in self.sentences:
            for n in s.cited:
                if s.supported:
                    out[n] = True
                elif n not in out or out[n] is None:
                    out[n] = s.supported
        return out

    def _process(self, raw: str) -> ProcessedSentence:
        text = normalize_markers(raw, self.ledger.numbers())
        cited = list(dict.fromkeys(cited_numbers(text)))
        sent = ProcessedSentence(text, cited)
        plain = _MARKER.sub("", text).strip()
        if not cited and self.auto_cite and plain:
            n = self._best_match(plain)
            if n is not None:
                self.used_auto.add(n)
                sent.text = _insert_marker(text, f"[{n}]")
                sent.cited, sent.auto = [n], True
        if sent.cited:
            sent.support = self._support(plain, sent.cited)
            if sent.support is not None:
                sent.supported = sent.support >= self.threshold
        self.sentences.append(sent)
        return sent

    def _support(self, plain: str, numbers: list[int]) -> float | None:
        words = content_tokens(plain)
        if not words:
            return None
        evidence: set[str] = set()
        for n in numbers:
            c = self.ledger.get(n)
            if c is not None:
                evidence |= content_tokens(c.text)
        return len(words & evidence) / len(words)

    def _best_match(self, plain: str) -> int | None:
        norm = " ".join(clean_text(plain).lower().split())
        if _weighted_len(norm) < 12:
            return None
        words = content_tokens(norm)
        best: tuple[float, int, int] | None = None  # (lcs, chunk length, -n)
        for c in sorted(self.ledger, key=lambda c: (-len(c.text), c.n)):
            if c.n in self.used_auto:
                continue
            sm = self._matchers.get(c.n)
            if sm is None or sm.b != c.text.lower():
                sm = SequenceMatcher(None, autojunk=False)
                sm.set_seq2(c.text.lower())
                self._matchers[c.n] = sm
            sm.set_seq1(norm)
            m = sm.find_longest_match(0, len(norm), 0, len(sm.b))
            lcs = _weighted_len(norm[m.a : m.a + m.size])
            ok = lcs >= MIN_LCS
            if not ok and len(words) >= 3:
                shared = len(words & content_tokens(c.text))
                ok = shared >= 3 and shared / len(words) >= PARAPHRASE_OVERLAP
            if ok:
                key = (lcs, len(c.text), -c.n)
                if best is None or key > best:
                    best = key
        return -best[2] if best else None
