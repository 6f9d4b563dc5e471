"""Evidence units: a cited chunk cut into the pieces an answer can quote.

A unit is one of

* a **sentence** of prose (a list item is prose of its own: it never runs on into
  the next item);
* a table **row**, read "header: value; ..." when the table has a header row; a
  table of label/value rows ("Default: | TraceEnable on": two cells, the first a short
  label ending in ":") has none, each row read "Default: TraceEnable on";
* a **definition** entry: a Markdown definition list (``term`` then ``: definition``),
  a reStructuredText one (a term line, its definition indented below it) and an HTML
  ``<dt>``/``<dd>`` pair (extracted HTML puts each on a line of its own) read as one
  unit "term: definition" (a long definition: one per sentence, each with its term
  and, as context and gloss, its first sentence),
  so the unit says what it is about;
* an API **signature** such as ``lru_cache(user_function, maxsize=128)`` (a line, a
  heading, a ``.. function::`` directive or an HTML ``<dt>`` holding only
  signatures), kept whole, with its description's first sentence as its ``gloss``:
  context for ranking, not part of the quote;
* a **line** of source code ("MAX_DELAY_S = 8.0  # backoff cap").

Each unit keeps the words that say what it is about without being in it: the
chunk's path and heading (``context``), a row's table header, a definition's term.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePosixPath

from kbagent.agent.answer.citations import Citation, clean_text
from kbagent.agent.answer.unit_lines import (
    ANY_TAG,
    BLOCK_START,
    DEFAULT_CELL,
    DEFAULT_NOTE,
    DIRECTIVE,
    SETTING,
    TABLE_RULE,
    THIS_ENTRY,
    VERSION_NOTE,
    continues,
    help_entry,
    help_goes_on,
    indent,
    label_row,
    quote_goes_on,
    row_cells,
    row_follows,
    signature_of,
    split_sentences,
    starts_in_code,
    table_row,
    value_pair,
)
from kbagent.kb.models import FENCE

_HEADING = re.compile(r"\s*(?:#{1,6}\s|<h[1-6]\b|<caption\b)", re.IGNORECASE)
# Markdown "term\n: definition"
_MD_DEFINITION = re.compile(r"^\s{0,3}:\s+(\S.*)$")
_RST_FIELD = re.compile(r"^\s*:([\w][\w .-]{0,40}):\s+(\S.*)$")
_TERM_END = re.compile(r"[.!?;,:]$")
# a short sentence that goes on with the one before ("The optional user argument
# specifies which user to use. It defaults to varnish."): one unit with it
_FOLLOW_UP = re.compile(r"(?:It|Its|This|That|They|These|There)\b")
FOLLOW_UP_WORDS = 8
LIST_ITEM_WORDS = 12  # a longer unit after a lead-in sentence is prose again, no item
# a command-line option as a definition's term ("-h critbit" / "self-scaling tree ..."):
# its description may start in lower case
_OPTION_TERM = re.compile(r"\s*--?[A-Za-z][\w-]*(?:[ =][^\s.]+)?\s*$")
TERM_MAX_CHARS = 80
DEFINITION_MAX_CHARS = 240  # a longer definition is a unit per sentence, each with its term
TERM_MAX_WORDS = 8


CODE_SUFFIXES = frozenset(".py .go .js .ts .tsx .jsx .rs .java .c .h .cc .cpp .hpp .sh .rb .kt "
                          ".swift .cs .php .scala .lua .sql .yaml .yml .toml .ini .cfg".split())
HTML_SUFFIXES = frozenset(".html .htm .xhtml".split())


class UnitKind(StrEnum):
    SENTENCE = "sentence"
    ROW = "row"
    DEFINITION = "definition"
    SIGNATURE = "signature"
    LINE = "line"  # of source code


_IDENT_JOIN = re.compile(r"(?<=[A-Za-z0-9])_(?=[A-Za-z0-9])")


@dataclass(frozen=True)
class Unit:
    """One sentence, table row, definition entry, signature or code line of a chunk."""

    n: int  # the chunk's citation number
    text: str  # cleaned, as it can be quoted
    context: str  # path and heading words (and a row's table header)
    position: int  # order within the chunk
    kind: UnitKind = UnitKind.SENTENCE
    gloss: str = ""  # a signature's description (its first sentence): ranks, never quoted
    trail: str = ""  # the chunk's heading trail ("impstats > Examples > Load module")

    @property
    def meaning(self) -> str:
        """What the sentence embedder reads for this unit: its text and gloss, an
        identifier's parts as words ("message_size_limit" is about a message's size)."""
        return _IDENT_JOIN.sub(" ", f"{self.text} {self.gloss}").strip()


def _is_term(text: str) -> bool:
    """Could this line be the term of a definition ("server.listen", "Timeout")?"""
    text = text.strip()
    return (0 < len(text) <= TERM_MAX_CHARS and len(text.split()) <= TERM_MAX_WORDS
            and not _TERM_END.search(text) and not BLOCK_START.match(text)
            and not SETTING.match(text))  # "tcp_keepalive_time = 600 seconds" says a value


class _Cutter:
    """Walks a chunk's lines once, collecting units and their contexts."""

    def __init__(self, heading: str, code: bool, entries: bool) -> None:
        self.heading = heading
        self.code = code
        self.units: list[tuple[str, str, UnitKind, str]] = []  # text, context, kind, gloss
        self.para: list[str] = []
        self.term = ""  # the definition the current paragraph belongs to
        self.defined = ""  # the last one defined: its version notes follow it
        self.about = ""  # its term and the first sentence of its definition
        self.entries = entries  # its description may go on for paragraphs (an HTML <dd>)
        self.glossless: list[int] = []  # signatures waiting for their description
        self.lead = ""  # a sentence that leads into a list ("... are set to:")

    def add(self, text: str, kind: UnitKind, context: str = "", gloss: str = "") -> None:
        self.units.append((text, f"{self.heading} {context}".strip(), kind, gloss))

    def signature(self, text: str) -> None:
        self.flush()
        self.defined = ""  # a note after it is the signature's
        self.add(text, UnitKind.SIGNATURE)
        self.glossless.append(len(self.units) - 1)

    def flush(self) -> None:
        if not self.para:
            self.term = ""
            return
        if self.code:  # in source code every line is a unit
            for x in self.para:
                self.add(clean_text(x), UnitKind.LINE)
            self.para.clear()
            return
        pieces = split_sentences(clean_text("\n".join(self.para)).strip())
        if pieces and self.glossless:
            for i in self.glossless:
                text, context, kind, _ = self.units[i]
                self.units[i] = (text, f"{context} {pieces[0]}", kind, pieces[0])
            self.glossless = []
        merged: list[str] = []
        joined = False  # one follow-up a sentence: a run of them is prose of its own
        for piece in pieces:
            if (merged and not joined and _FOLLOW_UP.match(piece)
                    and len(piece.split()) <= FOLLOW_UP_WORDS):
                merged[-1] = f"{merged[-1]} {piece}"
                joined = True
            else:
                merged.append(piece)
                joined = False
        pieces = merged
        entry = ""  # the header row of the entry this paragraph describes
        row = self._entry_row(pieces[0]) if pieces else None
        if row is not None:
            # "message_size_limit | Use: main | Type: string | Default: 50M" / "This option
            # limits the maximum size of message ...": the row is read with what it is
            # (its gloss), the description knows the name and default it is about
            text, context, kind, gloss = self.units[row]
            if not gloss:
                self.units[row] = (text, f"{context} {pieces[0]}", kind, pieces[0])
            entry = text
        if self.term and sum(len(p) for p in pieces) <= DEFINITION_MAX_CHARS:
            pieces = [" ".join(pieces)]  # "retention_days: Days records are kept. Default: 90."
        for i, piece in enumerate(pieces):
            # the items of a list a sentence leads into ("the defaults are set to:" /
            # "tcp_keepalive_time = 600 seconds") are read with it
            # (a full sentence after the list is prose again: "The queue is on disk.")
            item = len(piece.split()) <= LIST_ITEM_WORDS and (
                SETTING.match(piece) is not None or not piece.rstrip().endswith("."))
            lead = self.lead if item else ""
            self.lead = lead
            if not self.term and self.defined and VERSION_NOTE.match(piece):
                # "html_theme" / "The theme to use ..." / "New in version 0.6.": the
                # note is the entry's (a Sphinx <dd> ends with it)
                self.add(piece, UnitKind.SENTENCE, self.defined, self.defined)
                continue
            if not self.term and self.defined and DEFAULT_NOTE.match(piece):
                # "sidebarwidth: Width of the sidebar in pixels." / "Defaults to 230
                # pixels.": a later paragraph of the entry states its default
                self.add(piece, UnitKind.SENTENCE, self.about, self.about)
                continue
            if self.term:  # a later sentence keeps what the definition is about
                first = pieces[0] if i else ""  # ("gc.auto: The default value is 6700.")
                self.add(f"{self.term}: {piece}", UnitKind.DEFINITION,
                         f"{self.term} {first}".strip(), first)
            else:
                self.add(piece, UnitKind.SENTENCE, f"{lead} {entry}".strip())
        if pieces[-1:] and pieces[-1].rstrip().endswith(":"):
            self.lead = pieces[-1]
        self.para.clear()
        note = bool(pieces) and VERSION_NOTE.match(pieces[0]) is not None
        self.about = f"{self.term} {pieces[0]}" if self.term and pieces else self.about
        # an HTML <dd> of several paragraphs ends with the next term or heading
        self.defined = self.term or (self.defined if note or self.entries else "")
        self.term = ""

    def _entry_row(self, first: str) -> int | None:
        """The row of the entry a paragraph starting with ``first`` describes, if any: a
        row just above it (a "New in version 8.38.0." note between them aside) that an
        entry's description follows ("This option ..."), or the one row of values of a
        reference entry's table, with its default ("type: integer; default: 10000;
        mandatory: no" under the heading "confirmTimeout", then "Specifies how long ...")."""
        i = len(self.units) - 1
        if self.term or i < 0 or VERSION_NOTE.match(first):
            return None
        if i and self.units[i][2] is UnitKind.SENTENCE and VERSION_NOTE.match(self.units[i][0]):
            i -= 1
        text, context, kind, gloss = self.units[i]
        if kind is not UnitKind.ROW:
            return None
        if THIS_ENTRY.match(first):
            return i
        alone = not (i and self.units[i - 1][2] is UnitKind.ROW
                     and self.units[i - 1][1] == context)
        return i if alone and not gloss and DEFAULT_CELL.search(text) else None

    def define(self, term: str, first_line: str) -> None:
        """``term`` is defined by a paragraph starting with ``first_line``."""
        self.para.clear()
        self.term = clean_text(term)
        self.para.append(first_line)


def units_of(c: Citation, raw: str | None = None) -> list[Unit]:
    """The units of citation ``c`` (from ``raw``, its text with line breaks, if known)."""
    base = c.path.replace("/", " ").replace("_", " ").replace("-", " ")
    # (a Sphinx heading's or term's link mark, "MaxSessions¶", is no part of its words)
    lines = (raw if raw is not None else c.raw or c.text).replace("\u00b6", "").splitlines()
    suffix = PurePosixPath(c.path).suffix.lower()
    # extracted HTML puts every block (<p>, <li>, <dt>, <dd>) on a line of its own
    html = suffix in HTML_SUFFIXES
    cut = _Cutter(c.heading, suffix in CODE_SUFFIXES, html)
    header: list[str] = []
    pairs = False  # the table's rows are label | value pairs (its first row no header)
    pending_term = ""  # an HTML line that may be a <dt> (if a description follows)
    # inside a fenced code block: each line a unit, a "# comment" no heading
    fenced = starts_in_code(lines)
    help_column = 0  # in a --help listing: how far its description lines are indented

    for i, line in enumerate(lines):
        if FENCE.match(line):
            cut.flush()
            fenced, pending_term = not fenced, ""
            continue
        # a --help listing (in a code block, or a chunk cut from one): an option and its
        # description's lines under it are one entry ("--debug=FILE" / "Default: x.log.")
        if help_goes_on(line, help_column):
            if cut.term:
                cut.para.append(line.strip())
            else:  # the option alone on its line: its description starts here
                cut.define(cut.para[0].strip(), line.strip())
            continue
        entry = None if cut.code else help_entry(line)  # (source code: a line a unit)
        if entry is not None and (fenced or help_column or (
                i + 1 < len(lines) and help_goes_on(lines[i + 1], entry[2]))):
            cut.flush()
            help_column = entry[2]
            if entry[1]:
                cut.define(entry[0], entry[1])
            else:
                cut.para.append(line)
            continue
        help_column = 0
        if fenced:
            cut.flush()
            if line.strip():
                cut.para.append(line)
            continue
        if not line.strip():
            cut.flush()
            cut.lead = ""  # a blank line ends the list a sentence led into
            header = []
            continue
        if not ANY_TAG.sub("", line).strip():  # markup only: <thead>, </p>, <table>
            if BLOCK_START.match(line):
                cut.flush()
            if "</table" in line.lower():
                header = []
            continue
        if table_row(line):
            cut.flush()
            if TABLE_RULE.match(line):
                continue
            cells = row_cells(line)
            if not any(cells):
                continue
            if not header:
                header = cells  # a label/value table's first row is a row of its own
                # an HTML table of label | value rows has no header row ("List price |
                # $48,000 per appliance"): a Markdown header is followed by its rule
                nxt = lines[i + 1] if i + 1 < len(lines) else ""
                pairs = value_pair(cells) and not TABLE_RULE.match(nxt)
                if not row_follows(lines, i) and not label_row(cells) and not pairs:
                    # a row alone is no table's header: an entry's line ("message_size_limit
                    # | Use: main | Type: string | Default: 50M"), read as its cells
                    cut.add("; ".join(x for x in cells if x), UnitKind.ROW, cells[0])
                    header = []
                    continue
                if not label_row(cells) and not pairs:
                    continue
            if pairs and len(cells) == 2:
                cut.add(f"{cells[0]}: {cells[1]}", UnitKind.ROW, cells[0])
                continue
            if label_row(header):  # "Default: | TraceEnable on" -> "Default: TraceEnable on"
                text = (f"{cells[0]} {cells[1]}".strip() if label_row(cells)
                        else "; ".join(x for x in cells if x))
                # every row is about the thing the first one describes: its words rank
                # the others ("Default: LimitRequestFieldSize 8190" is about header size)
                gloss = header[1] if cells is not header else ""
                cut.add(text, UnitKind.ROW, f"{cells[0].rstrip(':')} {gloss}".strip(), gloss)
                continue
            if len(header) == len(cells):
                text = "; ".join(f"{h}: {v}" if h else v
                                 for h, v in zip(header, cells, strict=True) if v)
            else:
                text = "; ".join(x for x in cells if x)
            cut.add(text, UnitKind.ROW, " ".join(header))
            continue
        if not line.lstrip().startswith("<caption"):
            header = []
        if cut.code:  # each line a unit; a "# comment" block is context
            if BLOCK_START.match(line):
                cut.flush()
                if _HEADING.match(line):
                    cut.heading = ANY_TAG.sub(" ", clean_text(line)).strip()
                    continue
            cut.para.append(line)
            continue
        sig = signature_of(line)
        if _HEADING.match(line):
            cut.flush()
            cut.glossless, cut.defined = [], ""
            cut.heading = ANY_TAG.sub(" ", clean_text(line)).strip()  # context for what follows
            cut.lead = ""
            if sig is not None:
                cut.signature(sig)
            continue
        if sig is not None:
            cut.signature(sig)
            continue
        field = _RST_FIELD.match(line)
        if field:  # ":Owner: Marco Bellini"
            cut.flush()
            cut.add(f"{field.group(1)}: {clean_text(field.group(2))}", UnitKind.DEFINITION,
                    field.group(1))
            continue
        directive = DIRECTIVE.match(line)
        if directive:  # ".. code-block:: yaml", ".. note::": markup, not text
            cut.flush()
            continue
        md_def = _MD_DEFINITION.match(line)
        if md_def and len(cut.para) == 1 and _is_term(clean_text(cut.para[0])):
            cut.define(cut.para[0], md_def.group(1))
            continue
        if (len(cut.para) == 1 and not cut.term and indent(line) > indent(cut.para[0])
                and _is_term(cut.para[0]) and not html):  # reST: term, indented definition
            cut.define(cut.para[0], line)
            continue
        if html:
            if cut.para and not pending_term and continues(cut.para[-1], line):
                cut.para.append(line)  # a paragraph wrapped in the source: one text
                continue
            cut.flush()
            if pending_term and not _is_term(line):
                cut.define(pending_term, line)
                pending_term = ""
                continue
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if _is_term(line) and nxt.strip() and not _is_term(nxt) and not BLOCK_START.match(
                    nxt) and not table_row(nxt) and signature_of(nxt) is None and (
                    not continues(line, nxt) or _OPTION_TERM.match(line)):
                pending_term = line
                continue
            pending_term = ""
        elif BLOCK_START.match(line) and not quote_goes_on(cut.para, line):
            cut.flush()
        cut.para.append(line)
    cut.flush()
    return [Unit(c.n, t, f"{base} {x}", i, kind, gloss, c.heading or "")
            for i, (t, x, kind, gloss) in enumerate(cut.units)
            if len(t) >= 3 and re.search(r"\w", t)]
