"""Text from documents is data: never let it drive a terminal.

Documents, file names, model output and error messages that quote them may hold
terminal control sequences: ``ESC ]52;c;…`` writes the clipboard, ``ESC ]0;…``
sets the window title, ``ESC [2J`` clears the screen, a bare ``CR`` overwrites
the line. :func:`clean` removes every such sequence and every other C0/C1 control
character (newline and tab stay), so what reaches a screen is plain text. It is
the one sanitiser: the CLI's consoles apply it to every piece of text they write
(:mod:`kbagent.cli.common`), the TUI to every document-derived string it shows
(:mod:`kbagent.tui.format`), the HTML report to every cell. Markup (Rich's
``[bold]``, Textual's ``[link=…]``) is a separate matter, escaped by each surface
in its own syntax.

Standard library only: every layer may import it.
"""

from __future__ import annotations

import json
import re
from typing import Any

# ECMA-48 / ISO 6429, in both their 7-bit (ESC x) and 8-bit (C1) spellings:
#  - control strings OSC, DCS, SOS, PM, APC: up to the terminator (BEL or ST), or to
#    the end of the text when unterminated (a terminal would swallow what follows)
#  - CSI: parameter bytes, intermediate bytes, one final byte
#  - other escape sequences: intermediates then one final byte
_SEQUENCE = re.compile(
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c|(?=\x1b)|$)"
    r"|(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
# what is left: C0 controls but tab and newline, DEL, C1 controls
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# JSON escapes C0 (\u001b); DEL, C1 and lone surrogates it writes raw (ensure_ascii off)
_JSON_RAW = re.compile(r"[\x7f-\x9f\ud800-\udfff]")


def clean(text: str) -> str:
    """``text`` without terminal control sequences or control characters (``\\n``
    and ``\\t`` kept; ``\\r\\n`` becomes ``\\n``). Lone surrogates (undecodable
    bytes of a file name or argument) become U+FFFD so the text can be encoded."""
    if _CONTROL.search(text) is None:
        return _valid(text)
    text = text.replace("\r\n", "\n")
    return _valid(_CONTROL.sub("", _SEQUENCE.sub("", text)))


def _valid(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return valid_unicode(text)
    return text


def valid_unicode(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD. A command-line argument or a
    file name holding bytes that are not UTF-8 arrives in Python as such surrogates
    (``surrogateescape``), and no encoder, tokenizer or index accepts them; undecodable
    bytes become one U+FFFD each, as if decoded with ``errors="replace"``."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    raw = text.encode("utf-8", "surrogateescape" if _only_escapes(text) else "surrogatepass")
    return raw.decode("utf-8", "replace")


def _only_escapes(text: str) -> bool:
    """Are all surrogates in ``text`` the U+DC80..U+DCFF ones surrogateescape makes?"""
    return all(not ("\ud800" <= ch <= "\udfff") or "\udc80" <= ch <= "\udcff" for ch in text)


def json_text(obj: Any, **kwargs: Any) -> str:
    """``json.dumps(obj, ensure_ascii=False, **kwargs)`` with DEL, the C1 controls
    (``\\u009b`` is CSI to some terminals) and lone surrogates (which no UTF-8 stream
    can write) escaped too: the same JSON value, safe to print."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}",
                                 json.dumps(obj, ensure_ascii=False, **kwargs))
