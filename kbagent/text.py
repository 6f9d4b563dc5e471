"""Text helpers shared by every layer (standard library only)."""

from __future__ import annotations


def shorten(text: str, width: int, *, at_word: bool = False, mark: str = "…",
            fold: bool = True, strip: bool = False) -> str:
    """``text`` cut to ``width`` characters with ``mark`` where it was cut.

    ``fold`` first folds runs of white space into one space. By default the cut
    keeps ``width - len(mark)`` characters (``strip``: without the space they may
    end with), so the result is at most ``width`` long. ``at_word`` cuts instead
    at the last space before ``width`` (if it lies past half of it) and puts
    ``mark`` after that, so the result may be longer than ``width`` by the mark.
    """
    if fold:
        text = " ".join(text.split())
    if len(text) <= width:
        return text
    if at_word:
        cut = text.rfind(" ", 0, width)
        return text[: cut if cut > width // 2 else width] + mark
    head = text[: width - len(mark)]
    return (head.rstrip() if strip else head) + mark
