"""List numbers as a reader sees them: ``3.``, ``b)``, ``iv.`` (Word and OpenDocument).

Word (``w:numFmt``) and OpenDocument (``style:num-format``) name the same few counter
styles differently; :func:`counter_text` renders either. :class:`Counters` keeps one
list's count per level: an item at a level counts up and restarts every deeper level.
"""

from __future__ import annotations

_ROMAN = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
          (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))
# Word's numFmt and ODF's num-format -> one kind
_KINDS = {"decimal": "1", "1": "1", "decimalZero": "01", "lowerLetter": "a", "a": "a",
          "upperLetter": "A", "A": "A", "lowerRoman": "i", "i": "i", "upperRoman": "I",
          "I": "I", "ordinal": "1.", "cardinalText": "1", "ordinalText": "1."}
BULLET_KINDS = {"bullet", "none", ""}


def roman(n: int) -> str:
    if n <= 0:
        return str(n)
    out = ""
    for value, digits in _ROMAN:
        while n >= value:
            out += digits
            n -= value
    return out


def letters(n: int) -> str:
    """1 -> a, 26 -> z, 27 -> aa (as Word and LibreOffice count past z)."""
    if n <= 0:
        return str(n)
    out = ""
    while n > 0:
        n, rem = divmod(n - 1, 26)
        out = chr(97 + rem) + out
    return out


def counter_text(n: int, fmt: str) -> str:
    """``n`` in the counter style ``fmt`` (Word numFmt or ODF num-format); unknown
    styles (Chinese counting, Hebrew, ...) fall back to decimal."""
    kind = _KINDS.get(fmt, "1")
    if kind == "a":
        return letters(n)
    if kind == "A":
        return letters(n).upper()
    if kind == "i":
        return roman(n)
    if kind == "I":
        return roman(n).upper()
    if kind == "01":
        return f"{n:02d}"
    return str(n)


class Counters:
    """One list's counts per level (0-based)."""

    def __init__(self) -> None:
        self.count: dict[int, int] = {}

    def step(self, level: int, start: int = 1) -> None:
        """An item at ``level``: count it, and restart every deeper level."""
        self.count[level] = self.count.get(level, start - 1) + 1
        for deeper in [k for k in self.count if k > level]:
            del self.count[deeper]

    def restart(self, level: int, start: int) -> None:
        self.count[level] = start - 1

    def at(self, level: int, start: int = 1) -> int:
        return self.count.get(level, start)
