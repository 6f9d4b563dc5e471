"""Numbers as a reader compares them: digits or words, with a unit or without.

The check stage of the model-authored answer policy (:mod:`~kbagent.agent.answer.claims`)
asks whether a number a model wrote stands in the chunks it cites. A reader counts "five
seconds" and "5 s" as the same figure, and "the 2-minute cap" as the sources' "120
seconds"; so :func:`quantities` reads every number of a text as a :class:`Quantity`
(its value, and its unit's dimension and factor to that dimension's base when a unit
follows it), and :func:`same_quantity` compares two the way a reader does.

The tables below are English number words and units of time, size and percent: the
general vocabulary of figures, not any one question's phrasing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_SMALL = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate(
    "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_NUMBER_WORDS = {**_SMALL, **_TENS, **_SCALES, "dozen": 12}

# unit word (lower case, no trailing s) -> (dimension, factors to the base unit); a size
# unit in K/M/G may mean either 1000 or 1024 steps, so both are kept
_UNITS: dict[str, tuple[str, tuple[float, ...]]] = {
    "ms": ("time", (0.001,)), "millisecond": ("time", (0.001,)), "msec": ("time", (0.001,)),
    "s": ("time", (1,)), "sec": ("time", (1,)), "second": ("time", (1,)),
    "min": ("time", (60,)), "minute": ("time", (60,)),
    "h": ("time", (3600,)), "hr": ("time", (3600,)), "hour": ("time", (3600,)),
    "day": ("time", (86400,)), "week": ("time", (604800,)),
    "b": ("size", (1,)), "byte": ("size", (1,)),
    "kb": ("size", (1e3, 1024)), "kib": ("size", (1024,)), "kilobyte": ("size", (1e3, 1024)),
    "mb": ("size", (1e6, 1024**2)), "mib": ("size", (1024**2,)),
    "megabyte": ("size", (1e6, 1024**2)),
    "gb": ("size", (1e9, 1024**3)), "gib": ("size", (1024**3,)),
    "gigabyte": ("size", (1e9, 1024**3)),
    "tb": ("size", (1e12, 1024**4)), "tib": ("size", (1024**4,)),
    "terabyte": ("size", (1e12, 1024**4)),
    "%": ("percent", (1,)), "percent": ("percent", (1,)), "per cent": ("percent", (1,)),
}
_WORD_ALT = "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
_UNIT_ALT = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
# digits (grouping commas, decimals; a unit may follow at once, "500ms") or a run of
# number words ("twenty five", "two hundred"), not a digit inside a word ("Q3", "v2")
# or a version ("1.3.8")
_NUM = re.compile(
    rf"(?<![\w.,/])(?P<d>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    rf"(?:(?!\w)|(?=(?:{_UNIT_ALT})s?\b))(?![.,]\d)"
    rf"(?:[ -](?P<s>hundred|thousand|million|billion)\b)?"
    rf"|\b(?P<w>(?:{_WORD_ALT})(?:[ -](?:and[ -])?(?:{_WORD_ALT}))*)\b", re.IGNORECASE)
_UNIT_AFTER = re.compile(rf"[ -]?(?P<u>{_UNIT_ALT})(?:e?s)?\b|[ -]?(?P<p>%)", re.IGNORECASE)
VERSION = re.compile(r"(?<![\w.])v?\d+(?:\.\d+){2,}(?:[-+.]?[a-z]+\d*)?(?![\w.])", re.I)
# any run of digits not led by a letter (the 2 of "HTTP/2", not the 3 of "Q3")
ANY_DIGITS = re.compile(r"(?<![A-Za-z\d_])\d+(?:,\d{3})*(?:\.\d+)?")


@dataclass(frozen=True)
class Quantity:
    """A number as written (``text``), its value, how many decimals it was written
    with, and its unit (``dimension`` and the factors to that dimension's base)."""

    text: str
    value: float
    decimals: int = 0
    dimension: str = ""
    factors: tuple[float, ...] = ()
    worded: bool = False  # written in words ("five")


def words_value(text: str) -> float | None:
    """The value of a run of number words ("two hundred and five" -> 205)."""
    total, current = 0, 0
    for w in re.split(r"[ -]+", text.lower()):
        if w == "and":
            continue
        if w == "dozen":
            current = (current or 1) * 12
        elif w in _SMALL or w in _TENS:
            current += _SMALL.get(w, _TENS.get(w, 0))
        elif w == "hundred":
            current = (current or 1) * 100
        elif w in _SCALES:
            total += (current or 1) * _SCALES[w]
            current = 0
        else:
            return None
    return float(total + current)


def quantities(text: str) -> list[Quantity]:
    """Every number of ``text``, with the unit that follows it."""
    out: list[Quantity] = []
    for m in _NUM.finditer(text):
        if m.group("d"):
            raw = m.group("d")
            value = float(raw.replace(",", ""))
            if not math.isfinite(value):
                continue
            decimals = len(raw.split(".")[1]) if "." in raw else 0
            worded = False
            if m.group("s"):  # "5 million", "2.5 thousand": one figure, precise as written
                scale = _SCALES[m.group("s").lower()]
                raw, value = m.group(0), value * scale
                decimals -= round(math.log10(scale))
        else:
            raw = m.group("w")
            v = words_value(raw)
            if v is None:
                continue
            value, decimals, worded = v, 0, True
        unit = _UNIT_AFTER.match(text, m.end())
        dim, factors = "", tuple[float, ...]()
        if unit:
            dim, factors = _UNITS.get((unit.group("u") or unit.group("p") or "").lower(),
                                      ("", ()))
        out.append(Quantity(raw, value, decimals, dim, factors, worded))
    return out


def is_unit(word: str) -> bool:
    """Is ``word`` a unit of time, size or percent ("KB", "ms", "hours")?"""
    low = word.lower()
    return low in _UNITS or (low.endswith("s") and low[:-1] in _UNITS)


def close(written: float, decimals: int, value: float) -> bool:
    """Is ``written`` (with ``decimals`` decimals) ``value`` rounded as a reader rounds
    it ("33.3" or "33" for 33.33; an integer for an integer only itself), and no more
    than 5% off ("1 hour" is not 90 minutes, though 1.5 rounds to it)?"""
    diff = abs(written - value)
    return diff <= 1e-9 * max(1.0, abs(value)) or (
        diff <= 0.5 * 10.0 ** -decimals and diff <= 0.05 * abs(value))


def same_quantity(claim: Quantity, source: Quantity) -> bool:
    """Does ``source`` state the figure ``claim`` states: the same number (either of
    them without a unit), or the same amount in a unit of the same dimension ("2
    minutes" = "120 seconds"; "120 ms" is not "120 seconds")?"""
    if not (claim.dimension and source.dimension):
        return close(claim.value, claim.decimals, source.value)
    if claim.dimension != source.dimension:
        return False
    return any(close(claim.value, claim.decimals, source.value * sf / cf)
               for cf in claim.factors for sf in source.factors)
