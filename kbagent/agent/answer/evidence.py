"""Evidence for grounded answers.

A chunk is cut into *units*: the sentences of its prose and the rows of its tables
(a row reads "header: value; ..." when the table has a header row). For a question,
each unit is scored by how much of the question it covers: the question's content
words weighted by their rarity among the units gathered (a word that no gathered unit
holds weighs most), with the chunk's path and heading counting at half weight (a
quarterly report's "q3" is in its file name, not in every sentence). The best units
are what the final-answer turn shows the model (compact evidence), what the harness
quotes when a model sentence cannot be kept, and the coverage of the best one decides
whether the knowledge base answers the question at all (abstention).

:func:`facts_of` lists what a sentence asserts that must be copied, not invented:
numbers, dates, capitalised names, quoted and code terms. :func:`missing_facts` says
which of them the cited text does not contain.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from kbagent.agent.answer.citations import Citation, clean_text, content_tokens
from kbagent.agent.answer.focus import QUESTION_WORDS as QUESTION_WORDS  # re-exported

_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$|^\s*<tr\b|^[^|\n]*[^|\s][^|\n]*(?:\s\|(?:\s[^|\n]*)?)+$",
                        re.IGNORECASE)
_TABLE_RULE = re.compile(r"^\s*\|?[\s:|-]+\|[\s:|-]*$")
_CELL = re.compile(r"<t[dh][^>]*>(.*?)</t[dh]>", re.IGNORECASE | re.DOTALL)
_BLOCK_START = re.compile(r"^(?:\s{0,3}(?:#{1,6}\s|[-*+]\s|\d+[.)]\s|>)|\s*</?(?:h[1-6]|li|p|div|"
                          r"section|ul|ol|table|thead|tbody|caption|dt|dd|pre)\b)",
                          re.IGNORECASE)
_HEADING = re.compile(r"\s*(?:#{1,6}\s|<h[1-6]\b|<caption\b)", re.IGNORECASE)
_ANY_TAG = re.compile(r"</?[a-zA-Z][^>]{0,200}>")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[])")
_ABBREV_END = re.compile(r"\b(e\.g|i\.e|etc|vs|Mr|Mrs|Ms|Dr|Inc|Ltd|Co|No|Fig|approx|St|"
                         r"U\.S)\.$")


CODE_SUFFIXES = frozenset(".py .go .js .ts .tsx .jsx .rs .java .c .h .cc .cpp .hpp .sh .rb .kt "
                          ".swift .cs .php .scala .lua .sql .yaml .yml .toml .ini .cfg".split())


@dataclass(frozen=True)
class Unit:
    """One sentence or table row of a cited chunk."""

    n: int  # the chunk's citation number
    text: str  # cleaned, as it can be quoted
    context: str  # path and heading words (and a row's table header)
    position: int  # order within the chunk


@dataclass(frozen=True)
class Scored:
    unit: Unit
    score: float  # question coverage, 0..1 (plus small preferences)
    coverage: float  # question coverage alone


def _cells(line: str) -> list[str]:
    if "<t" in line.lower():
        return [clean_text(c) for c in _CELL.findall(line)]
    return [clean_text(c) for c in line.strip().strip("|").split("|")]


def _split_sentences(text: str) -> list[str]:
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        piece = text[start:m.start()].strip()
        if _ABBREV_END.search(text[:m.start()].rstrip("\"')]")):
            continue
        if piece:
            out.append(piece)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def units_of(c: Citation, raw: str | None = None) -> list[Unit]:
    """The units of citation ``c`` (from ``raw``, its text with line breaks, if known)."""
    base = c.path.replace("/", " ").replace("_", " ").replace("-", " ")
    heading = c.heading
    lines = (raw if raw is not None else c.raw or c.text).splitlines()
    units: list[str] = []
    contexts: list[str] = []
    para: list[str] = []
    header: list[str] = []

    code = PurePosixPath(c.path).suffix.lower() in CODE_SUFFIXES

    def flush() -> None:
        if para:
            # in source code every line is a unit ("MAX_DELAY_S = 8.0  # backoff cap")
            pieces = ([clean_text(x) for x in para] if code else
                      _split_sentences(clean_text("\n".join(para)).strip()))
            for piece in pieces:
                units.append(piece)
                contexts.append(heading)
            para.clear()

    for line in lines:
        if not line.strip():
            flush()
            header = []
            continue
        if not _ANY_TAG.sub("", line).strip():  # markup only: <thead>, </p>, <table>
            if _BLOCK_START.match(line):
                flush()
            if "</table" in line.lower():
                header = []
            continue
        if _TABLE_ROW.match(line):
            flush()
            if _TABLE_RULE.match(line):
                continue
            cells = _cells(line)
            if not any(cells):
                continue
            if not header:
                header = cells
                continue
            if len(header) == len(cells):
                text = "; ".join(f"{h}: {v}" if h else v
                                 for h, v in zip(header, cells, strict=True) if v)
            else:
                text = "; ".join(x for x in cells if x)
            units.append(text)
            contexts.append(heading + " " + " ".join(header))
            continue
        if not line.lstrip().startswith("<caption"):
            header = []
        if _BLOCK_START.match(line):
            flush()
            cleaned = clean_text(line)
            if _HEADING.match(line):
                heading = _ANY_TAG.sub(" ", cleaned).strip()  # context for what follows
                continue
        para.append(line)
    flush()
    return [Unit(c.n, t, f"{base} {x}", i) for i, (t, x) in enumerate(zip(units, contexts,
                                                                            strict=True))
            if len(t) >= 3 and re.search(r"\w", t)]


def question_terms(question: str) -> set[str]:
    return content_tokens(question) - QUESTION_WORDS


# What kind of answer a question asks for, and what a unit that gives one looks like: a
# unit of that kind counts as holding one more question term (as rare as the rarest), so
# a duration answers "how long" though it shares no word with the question.
ANSWER_TYPES: list[tuple[re.Pattern[str], re.Pattern[str]]] = [
    (re.compile(r"\bhow long\b", re.I),
     re.compile(r"\d+\s*(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?|ms|s|h)\b",
                re.I)),
    (re.compile(r"\bhow long did\b", re.I), re.compile(r"\b(?:duration|lasted|lasting)\b",
                                                         re.I)),
    (re.compile(r"\bwhen\b|\bwhat (?:date|day|year)\b", re.I),
     re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October|"
                r"November|December|Q[1-4]|20\d\d-\d\d-\d\d|(?:19|20)\d\d)\b")),
    (re.compile(r"\bhow much\b|\bcost\b|\bprice\b|\bpay\b|\brevenue\b", re.I),
     re.compile(r"[$€£]\s?\d")),
    (re.compile(r"\bpercent|\bmargin\b|\brate\b|%", re.I), re.compile(r"\d%")),
    (re.compile(r"\bhow many\b", re.I), re.compile(r"\d")),
    (re.compile(r"\b(?:why|explain|cause[ds]?|reason)\b", re.I), re.compile(
        r"\b(?:because|due to|driven by|caused|as a result|owing to|led to|reason)\b", re.I)),
    (re.compile(r"^\s*who\b", re.I), re.compile(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b")),
]


def answer_types(question: str) -> list[re.Pattern[str]]:
    return [unit for q, unit in ANSWER_TYPES if q.search(question)]


def score_units(question: str, units: list[Unit], ranks: dict[int, int] | None = None
                ) -> list[Scored]:
    """Units best first, by question coverage (rarity-weighted words, plus the kind of
    answer asked for) with small preferences: an earlier retrieval rank, a shorter
    unit."""
    terms = question_terms(question)
    if not terms or not units:
        return []
    # identifiers read as words: MAX_DELAY_S holds "delay"
    tokens = [content_tokens(u.text.replace("_", " ")) for u in units]
    ctx_tokens = [content_tokens(u.context) for u in units]
    n = len(units)
    df = {t: sum(1 for tok in tokens if t in tok) for t in terms}
    idf = {t: math.log((n + 1) / (df[t] + 0.5)) + 1.0 for t in terms}
    kinds = answer_types(question)
    kind_weight = max(idf.values())
    # the kind of answer asked for adds to a unit that gives one, but a question is not
    # less covered for asking it ("Explain retries" is answered by what retries do)
    total = sum(idf.values())
    ranks = ranks or {}
    out = []
    for u, tok, ctx in zip(units, tokens, ctx_tokens, strict=True):
        own = sum(idf[t] for t in terms if t in tok)
        extra = sum(0.5 * idf[t] for t in terms if t not in tok and t in ctx)
        kind = kind_weight * sum(1 for k in kinds if k.search(u.text))
        raw = (own + extra + kind) / total
        coverage = min(1.0, raw)
        score = raw + 0.04 / (1 + ranks.get(u.n, 10))
        score -= 0.1 * max(0, len(u.text) - 200) / 200  # a long unit covers by chance
        out.append(Scored(u, score, coverage))
    out.sort(key=lambda s: (-s.score, s.unit.n, s.unit.position))
    return out


def gather_units(citations: Iterable[Citation]) -> list[Unit]:
    return [u for c in citations for u in units_of(c)]


def best_evidence(question: str, citations: list[Citation], limit: int = 6,
                  per_chunk: int = 2) -> list[Scored]:
    """The ``limit`` best units for ``question`` (at most ``per_chunk`` from a chunk)."""
    ranks = {c.n: i for i, c in enumerate(citations)}
    picked: list[Scored] = []
    count: dict[int, int] = {}
    seen: set[str] = set()
    for s in score_units(question, gather_units(citations), ranks):
        key = " ".join(s.unit.text.lower().split())
        if count.get(s.unit.n, 0) >= per_chunk or key in seen:
            continue
        picked.append(s)
        seen.add(key)
        count[s.unit.n] = count.get(s.unit.n, 0) + 1
        if len(picked) >= limit:
            break
    return picked


# ------------------------------------------------------------------- facts
_MARKER = re.compile(r"\[\d+\]")
# a number standing alone (not the 3 of "Q3" or the 2 of "H2"), with its grouping commas,
# decimals and a trailing % sign
_NUMBER = re.compile(r"(?<![\w.])[$€£]?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?(?![\w])|"
                     r"(?<![\w.])[$€£]?\d+(?:\.\d+)?%?(?![\w]|\.\d)")
_ANY_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_QUOTED = re.compile(r"[\"“`']([^\"”`']{2,60})[\"”`']")
_NAME = re.compile(r"(?<![\w])([A-Z][a-zA-Z]+(?:[ -][A-Z][a-zA-Z]+)*)")
COMMON_CAPITALISED = frozenset(
    "The A An This That These Those It Its In On At For From With By To Of And Or But If "
    "When Where What Which Who Why How Yes No Not According Source Sources Answer Note "
    "However Also Each Every All Some Both Then There Here They We You I He She Our Their "
    "Your January February March April May June July August September October November "
    "December Monday Tuesday Wednesday Thursday Friday Saturday Sunday Q Based As After "
    "Before During Since Until While Because So Therefore Thus First Second Third Finally "
    "Overall In Total Per".split())


def _norm_number(tok: str) -> str:
    tok = tok.lstrip("$€£").rstrip("%").replace(",", "")
    if "." in tok:
        tok = tok.rstrip("0").rstrip(".")
    return tok or "0"


def numbers_in(text: str) -> set[str]:
    """Every number in ``text``, normalised (commas, currency, % and trailing zeros
    dropped), including those inside identifiers ("Q3", "8s")."""
    return {_norm_number(m.group()) for m in _ANY_NUMBER.finditer(text)}


def facts_of(sentence: str) -> list[str]:
    """What ``sentence`` asserts that must come from a source: standalone numbers,
    quoted or code terms, and capitalised names (not at the sentence start, not
    common words)."""
    plain = _MARKER.sub(" ", sentence)
    facts = [m.group().strip() for m in _NUMBER.finditer(plain)]
    facts += [m.group(1).strip() for m in _QUOTED.finditer(plain)]
    start = len(plain) - len(plain.lstrip())
    for m in _NAME.finditer(plain):
        words = re.split(r"[ -]", m.group(1))
        if m.start() == start:
            words = words[1:]  # a sentence's first word is capitalised anyway
        facts += [w for w in words if w not in COMMON_CAPITALISED and len(w) > 1]
    return list(dict.fromkeys(f for f in facts if f))


def is_number(fact: str) -> bool:
    """Is this fact (from :func:`facts_of`) a number, not a name or a quoted term?"""
    return bool(_NUMBER.fullmatch(fact))


def missing_facts(sentence: str, evidence: str, extra_numbers: set[str] | None = None
                  ) -> list[str]:
    """The facts of ``sentence`` that ``evidence`` (the cited text) does not contain;
    ``extra_numbers`` are numbers the harness computed (calculator results)."""
    have_numbers = numbers_in(evidence) | (extra_numbers or set())
    low = " ".join(evidence.lower().split())
    missing = []
    for f in facts_of(sentence):
        if _NUMBER.fullmatch(f):
            if _norm_number(f) not in have_numbers:
                missing.append(f)
        elif " ".join(f.lower().split()) not in low:
            missing.append(f)
    return missing
