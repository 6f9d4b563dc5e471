"""HTML -> clean text lines that keep their *source* line numbers.

Tags never reach the index or the model: scripts, styles, navigation and
other non-content elements are dropped, headings become ``#`` lines, list
items ``-`` lines, table rows ``a | b`` lines, and a ``<p>`` wrapped over several
source lines one line, as a browser shows it (a sentence does not end where its
source line does: "... conforms to Semantic" / "Versioning 2.0.0"). Each output
line remembers the source lines it came from (``number`` to ``end``), so a
citation into an HTML file points at the lines a person sees in their editor.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from kbagent.kb.models import Line

_SKIP = {"script", "style", "noscript", "template", "svg", "nav", "head", "iframe", "object",
         "canvas", "button", "select", "math"}
# ARIA landmarks that hold no content of the page: navigation, the search box, the footer
_SKIP_ROLES = frozenset({"navigation", "search", "contentinfo"})
# DocBook XSL's chunked output (the Wireshark guides, many GNU and Debian manuals) marks
# its per-page "Prev | Up | Next | Home" bars with these classes and no role: the same
# links on every page, whose section numbers ("Next: 6.2. Coding Style") read as facts
_SKIP_CLASSES = frozenset({"navheader", "navfooter"})
_BLOCK = {"p", "div", "section", "article", "main", "header", "footer", "aside", "ul", "ol",
          "table", "thead", "tbody", "tfoot", "blockquote", "dl", "figure", "form", "hr",
          "address", "details", "summary", "body", "html", "fieldset", "caption"}
# Elements whose text is joined into one output line even when wrapped in the source.
_JOINED = {"h1", "h2", "h3", "h4", "h5", "h6", "li", "tr", "dt", "dd", "figcaption", "title",
           "caption", "summary"}
_VOID = {"br", "img", "input", "meta", "link", "hr", "wbr", "col", "area", "base", "source"}
_WS = re.compile(r"\s+")
_FENCE_LINE = "```"  # the line before and after a <pre> block's lines, as Markdown fences code


def _boilerplate(attrs: list[tuple[str, str | None]]) -> bool:
    """An element that holds the site's navigation, not the page's content: an ARIA
    landmark role of :data:`_SKIP_ROLES` or a class of :data:`_SKIP_CLASSES`."""
    for k, v in attrs:
        if k == "role" and (v or "").strip().lower() in _SKIP_ROLES:
            return True
        if k == "class" and _SKIP_CLASSES.intersection((v or "").lower().split()):
            return True
    return False


class _Converter(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[Line] = []
        self.title = ""
        self._parts: list[str] = []
        self._start = 0
        self._end = 0
        self._skip_depth = 0
        self._skip_stack: list[str] = []
        self._skip_roots: set[str] = set()  # tags skipped for their role: nested ones count
        self._joined: list[str] = []
        self._pre = 0
        self._prefix = ""
        self._in_title = False
        self._list_depth = 0  # open ul/ol elements
        self._cells = 0
        self._row = False  # inside a <tr> (its end tag may be left out)
        self._para = False  # inside a <p>: its source line breaks are wrapping, no lines

    # --- line buffer -------------------------------------------------------
    def _flush(self) -> None:
        text = "".join(self._parts)
        if not self._pre:
            text = _WS.sub(" ", text).strip()
        else:
            text = text.rstrip()
        self._parts = []
        if not text.strip():
            return  # a <p> opening inside an <li> keeps the item's "- " for its text
        self.lines.append(Line(self._start, self._prefix + text, self._end))
        self._prefix = ""
        self._cells = 0

    def _emit(self, text: str, line: int, last: int = 0) -> None:
        if not self._parts:
            self._start = self._end = line
        self._parts.append(text)
        self._end = max(self._end, line, last)

    # --- parser callbacks --------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip_depth:
            if (tag in _SKIP or tag in self._skip_roots) and tag not in _VOID:
                self._skip_stack.append(tag)
                self._skip_depth += 1
            return
        if tag not in _VOID and _boilerplate(attrs):
            # a Sphinx page's sidebar, related-links bars and footer are <div>s marked
            # role="navigation" / "search" / "contentinfo": the same on every page
            self._skip_roots.add(tag)
            self._skip_stack.append(tag)
            self._skip_depth += 1
            return
        if tag in _SKIP:
            if tag == "head":  # still want <title>
                return
            self._skip_stack.append(tag)
            self._skip_depth += 1
            return
        if tag == "title":
            self._in_title = True
            return
        if tag == "br":
            if not self._joined:
                self._flush()
            else:
                self._emit(" ", self.getpos()[0])
            return
        if tag in ("td", "th"):
            if self._cells:
                self._emit(" | ", self.getpos()[0])
            self._cells += 1
            return
        if tag == "pre":
            # a code block is fenced, its lines kept as they are (inside a <dd> or an
            # <li> too): a "# comment" line is no heading, code no run of prose
            self._flush()
            if not self._pre:
                self._prefix = ""
                self.lines.append(Line(self.getpos()[0], _FENCE_LINE))
            self._pre += 1
            return
        if tag in ("ul", "ol"):
            self._flush()
            self._para = False
            self._list_depth += 1
            return
        if tag in _JOINED:
            self._flush()
            self._para = False
            if tag == "tr":  # a new row ends one whose </tr> was left out
                self._joined = [t for t in self._joined if t != "tr"]
                self._row = True
            self._joined.append(tag)
            if tag[0] == "h" and tag[1:].isdigit():
                self._prefix = "#" * int(tag[1]) + " "
            elif tag == "li":
                # "- " for ordered lists too: a generated "3." is not text on disk, and a
                # citation's excerpt must be findable in the cited lines
                self._prefix = "  " * max(0, self._list_depth - 1) + "- "
            return
        if tag in _BLOCK:
            self._block()
            self._para = tag == "p"

    def _block(self) -> None:
        """A block starts or ends. Inside a table row a cell's paragraphs (Sphinx writes
        ``<td><p>200</p></td>``) are no lines of their own: the row stays one ``a | b``
        line, its paragraphs a space apart."""
        if self._row:
            if self._parts:
                self._emit(" ", self.getpos()[0])
        else:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if self._skip_depth:
            if self._skip_stack and self._skip_stack[-1] == tag:
                self._skip_stack.pop()
                self._skip_depth -= 1
                if not self._skip_depth:
                    self._skip_roots.clear()
            return
        if tag == "title":
            self._in_title = False
            return
        if tag == "pre":
            self._flush()
            self._pre = max(0, self._pre - 1)
            if not self._pre:
                self.lines.append(Line(self.getpos()[0], _FENCE_LINE))
            return
        if tag in ("ul", "ol"):
            self._flush()
            self._list_depth = max(0, self._list_depth - 1)
            return
        if tag in _JOINED:
            if self._joined and self._joined[-1] == tag:
                self._joined.pop()
            elif tag in self._joined:  # an element inside it left open (an <li>)
                del self._joined[len(self._joined) - 1 - self._joined[::-1].index(tag):]
            if tag == "tr":
                self._row = False
            self._flush()
            self._prefix = ""  # an empty item's "- " is no prefix of the next line
            self._cells = 0
            return
        if tag == "table":
            self._row = False  # a row left open ends with its table
            self._joined = [t for t in self._joined if t != "tr"]
        if tag in _BLOCK:
            self._block()
            self._para = False

    def handle_data(self, data: str) -> None:
        if self._skip_depth:
            return
        line = self.getpos()[0]
        if self._in_title:
            self.title = _WS.sub(" ", (self.title + " " + data)).strip()
            return
        if ((self._joined or self._para) and not self._pre) or "\n" not in data:
            if data.strip() or self._parts:
                self._emit(data.replace("\n", " "), line, line + data.count("\n"))
            return
        pieces = data.split("\n")
        for i, piece in enumerate(pieces):
            if i:
                self._flush()
            if piece.strip() or (self._pre and i):
                self._emit(piece, line + i)

    def close(self) -> None:
        super().close()
        self._flush()


def html_to_lines(text: str) -> tuple[list[Line], str]:
    """Convert HTML source to clean lines (with source line numbers) and the page title."""
    conv = _Converter()
    conv.feed(text)
    conv.close()
    return conv.lines, conv.title
