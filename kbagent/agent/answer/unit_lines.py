"""Lines of evidence units (``answer/units.py``): which lines are table rows, their
cells, a header row's forms (label/value pairs, key/value rows), whether a row is alone
(an entry's line, no table's header), whether a line goes on with the one before, the
entries of a ``--help`` listing, and prose cut into sentences."""

from __future__ import annotations

import re

from kbagent.agent.answer.citations import clean_text
from kbagent.kb.models import FENCE

_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$|^\s*<tr\b|^[^|\n]*[^|\s][^|\n]*(?:\s\|(?:\s[^|\n]*)?)+$",
                        re.IGNORECASE)
TABLE_RULE = re.compile(r"^\s*\|?[\s:|-]+\|[\s:|-]*$")
_CELL = re.compile(r"<t[dh][^>]*>(.*?)</t[dh]>", re.IGNORECASE | re.DOTALL)
ANY_TAG = re.compile(r"</?[a-zA-Z][^>]{0,200}>")


def table_row(line: str) -> bool:
    """Is ``line`` a table row? Every form but ``<tr`` holds a "|": checked first, since
    the pattern backtracks over a long line without one (~4 ms a HotpotQA chunk)."""
    return ("|" in line or "<tr" in line.lower()) and _TABLE_ROW.match(line) is not None


def value_pair(cells: list[str]) -> bool:
    """A label | value row that no header row is like: a short label, then a value with
    a figure in some words ("List price | $48,000 per appliance"; not "Metric | Q3 2026")."""
    if len(cells) != 2 or not cells[0] or len(cells[0].split()) > 5:
        return False
    label, value = cells
    return (not re.search(r"\d", label) and re.search(r"\d", value) is not None
            and len(value.split()) >= 2 and not _PERIOD.fullmatch(value))


_PERIOD = re.compile(r"(?:Q[1-4]|H[12]|FY)?\s?(?:19|20)\d\d(?:\s+\w+)?", re.I)


def label_row(cells: list[str]) -> bool:
    """A key/value row, "Default: | TraceEnable on" (Apache's directive boxes, a
    Markdown "| Owner: | Maya |"): two cells, the first a short label ending in ":"."""
    return (len(cells) == 2 and cells[0].endswith(":") and 1 < len(cells[0]) <= 40
            and len(cells[0].split()) <= 4)


def row_cells(line: str) -> list[str]:
    if "<t" in line.lower():
        return [clean_text(c) for c in _CELL.findall(line)]
    return [clean_text(c) for c in line.strip().strip("|").split("|")]


def row_follows(lines: list[str], i: int) -> bool:
    """Is the next line of content after ``lines[i]`` another row of its table (markup
    between them, "</thead>", "<tbody>", skipped; a table's end is no row)?"""
    for line in lines[i + 1:]:
        if not line.strip() or "</table" in line.lower():
            return False
        if ANY_TAG.sub("", line).strip() or table_row(line):
            return table_row(line)
    return False


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[])")
_ABBREV_END = re.compile(r"\b(e\.g|i\.e|etc|vs|Mr|Mrs|Ms|Dr|Inc|Ltd|Co|No|Fig|approx|St|"
                         r"U\.S)\.$")


def split_sentences(text: str) -> list[str]:
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


# Sphinx's version notes between an entry's table and its description
VERSION_NOTE = re.compile(r"(?:New|Changed) in version\b|Deprecated since version\b")
# a sentence that states a default ("Defaults to 230 pixels.", "By default, the timeout is
# 5 minutes.", "Default: 'unix'")
DEFAULT_NOTE = re.compile(r"(?:By default\b|Defaults? (?:to|is|value)\b|Default(?: value)?:|"
                          r"The default\b|(?:It|This) defaults to\b)")
DEFAULT_CELL = re.compile(r"(?:^|; )default: \S", re.I)  # a row's default cell
# a description that starts by naming what it describes: the entry above it
THIS_ENTRY = re.compile(r"^(?:This|The)\s+(?:option|parameter|setting|directive|variable|"
                        r"property|field|flag|switch|value)\b")

BLOCK_START = re.compile(r"^(?:\s{0,3}(?:#{1,6}\s|[-*+]\s|\d+[.)]\s|>)|\s*</?(?:h[1-6]|li|p|div|"
                          r"section|ul|ol|table|thead|tbody|caption|dt|dd|pre)\b)",
                          re.IGNORECASE)
OPEN_END = re.compile(r"[^.!?:;\s][\"')\]]*\s*$")  # a line that ends no sentence
_QUOTE = re.compile(r"^\s{0,3}>\s?")


def quote_goes_on(para: list[str], line: str) -> bool:
    """Is ``line`` the next line of the quoted paragraph ``para`` ends with? (An email
    quoted in Markdown marks every line with ">": "> Also reveal the executive" /
    "> compensation plan." is one sentence; a bare ">" line ends the quoted paragraph,
    a line that ends a sentence ends the unit and a header line "To: ..." is its own.)"""
    if not para or not _QUOTE.match(para[-1]) or not _QUOTE.match(line):
        return False
    body, before = _QUOTE.sub("", line, count=1), _QUOTE.sub("", para[-1], count=1)
    return (bool(body.strip()) and OPEN_END.search(before) is not None
            and not BLOCK_START.match(body) and not _HEADER_LINE.match(body))


_HEADER_LINE = re.compile(r"^[A-Z][\w-]{0,30}:\s")  # "To: support@...", "Subject: ..."


# ------------------------------------------------------- signatures, code
# reStructuredText directives: ".. function:: lru_cache(maxsize=128)", ".. note::"
DIRECTIVE = re.compile(r"^\s*\.\.\s+(?:[\w-]+:)?([\w-]+)::\s*(.*)$")
_API_DIRECTIVES = frozenset("function method class classmethod staticmethod decorator "
                            "exception attribute data property".split())
# one signature: an optional def/class keyword, a dotted name, its parenthesised
# parameters (one level of nesting) and an optional return annotation
_ONE_SIGNATURE = (r"(?:(?:async\s+)?def\s+|class\s+)?[A-Za-z_][\w.]*(?:\[[^\]]{0,80}\])?"
                  r"\((?:[^()]|\([^()]*\))*\)(?:\s*->\s*[^\s:]+(?:\[[^\]]*\])?)?:?")
_SIGNATURE = re.compile(rf"{_ONE_SIGNATURE}(?:\s+{_ONE_SIGNATURE})*")


def signature_of(line: str) -> str | None:
    """The line as an API signature ("lru_cache(user_function, maxsize=128)"), or None
    when it is anything else (prose that mentions a call, a heading that is a title)."""
    text = clean_text(line).replace("\u00b6", "").strip()
    m = DIRECTIVE.match(line)
    if m:
        if m.group(1).lower() not in _API_DIRECTIVES:
            return None
        text = clean_text(m.group(2)).strip()
        return text or None
    if len(text) > 300 or not _SIGNATURE.fullmatch(text):
        return None
    return text


def starts_in_code(lines: list[str]) -> bool:
    """Does a chunk start inside a code block (cut from the lines before it)? An odd
    number of fences and no line of prose before the first one."""
    fences = [i for i, x in enumerate(lines) if FENCE.match(x)]
    if len(fences) % 2 == 0:
        return False
    return not any(_PROSE.search(x) for x in lines[:fences[0]])


_PROSE = re.compile(r"[A-Za-z]\w*(?:\s+\S+){3,}[.:!?]\s*$")  # four words or more, ended


_GOES_ON = re.compile(r"\s*[a-z0-9(\"'$&]")  # a line that starts none
# a name's last word ends the line's first piece ("Fritzvold. This ..."), not "Windows support"
_CAPITAL_START = re.compile(r"\s*[A-Z][\w'’-]*[.,;:](?:\s|$)")
_WORD_OPEN = re.compile(r"\b(?:by|of|the|a|an|and|or|to|with|from|in|on|at|for|as|than|"
                        r"is|are|was|were|called|named)(?:\s+[A-Z][\w'’-]*)?\s*$")
# a list of settings, one a line: "tcp_keepalive_time = 600 seconds" / "tcp_keepalive_probes = 5"
SETTING = re.compile(r"\s*[A-Za-z_][\w.-]*\s*=\s*\S")


def continues(previous: str, line: str) -> bool:
    """Does ``line`` go on with the sentence ``previous`` left open? (Extracted HTML joins
    a ``<p>``'s wrapped lines, but keeps the source line breaks of text outside one, and
    a KB built before chunker v5 has them too: "... when the current source code" /
    "cannot be tested.")"""
    if BLOCK_START.match(line) or OPEN_END.search(previous) is None or SETTING.match(line):
        return False
    # "... were written by" / "Cecilie Fritzvold.", "... written by Cecilie" / "Fritzvold.":
    # a line that ends on a function word, or on a name after one, is not done
    return _GOES_ON.match(line) is not None or (
        _CAPITAL_START.match(line) is not None and _WORD_OPEN.search(previous) is not None)


def indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


# an option of a --help listing, indented a little: "  -p name    Early-load ...",
# "  -h, --help   Show help ...", or the option alone ("  --debug=[DEBUG_FILE_NAME]")
_HELP_OPTION = re.compile(r"( {1,8})(-{1,2}[A-Za-z0-9]\S*(?: \S+)*?)(?: {2,}(\S.*?))?\s*$")
HELP_GAP = 8  # a description line is indented at least this far past its option


def help_entry(line: str) -> tuple[str, str, int] | None:
    """An option of a ``--help`` listing in a code block: the option, the start of its
    description on the same line ("" when it starts on the next) and the column the
    description's lines are indented to (at least)."""
    m = _HELP_OPTION.fullmatch(line.rstrip())
    if m is None:
        return None
    first = m.group(3) or ""
    column = m.start(3) if first else len(m.group(1)) + HELP_GAP
    return m.group(2), first, column


def help_goes_on(line: str, column: int) -> bool:
    """Is ``line`` a line of a --help entry's description indented to ``column`` (0:
    no entry is open)?"""
    return bool(column and line.strip()) and indent(line) >= column and not (
        line.lstrip().startswith("-"))
