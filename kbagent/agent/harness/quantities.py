"""Units of measure for the calculation planner: durations, data sizes and percent.

A figure read from a source may carry a unit ("250 ms", "4 KB", "3 weeks", "15%"); two
operands in different units of one dimension are converted before they are combined,
and a question that asks for a unit ("in seconds", "how many bytes", "pages per
second") gets its result in that unit. Data sizes count in powers of 1024 (KB, KiB
and kilobyte alike), as most software documentation does. Money keeps the existing
``$9.80M`` handling of :mod:`~kbagent.agent.harness.decompose` (no unit here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Measure:
    name: str  # how a result is written in it ("ms", "seconds", "KB")
    dim: str  # time | data | percent
    factor: float  # in the dimension's base unit (seconds, bytes, percent)


def _defs() -> dict[str, Measure]:
    table: list[tuple[str, str, float, str]] = [
        ("ns nanosecond nanoseconds", "time", 1e-9, "ns"),
        ("us µs microsecond microseconds", "time", 1e-6, "µs"),
        ("ms msec msecs millisecond milliseconds", "time", 1e-3, "ms"),
        ("s sec secs second seconds", "time", 1.0, "s"),
        ("min mins minute minutes", "time", 60.0, "minutes"),
        ("h hr hrs hour hours", "time", 3600.0, "hours"),
        ("day days", "time", 86400.0, "days"),
        ("week weeks", "time", 604800.0, "weeks"),
        ("b byte bytes", "data", 1.0, "bytes"),
        ("kb kib kilobyte kilobytes", "data", 1024.0, "KB"),
        ("mb mib megabyte megabytes", "data", 1024.0 ** 2, "MB"),
        ("gb gib gigabyte gigabytes", "data", 1024.0 ** 3, "GB"),
        ("tb tib terabyte terabytes", "data", 1024.0 ** 4, "TB"),
        ("% percent", "percent", 1.0, "%"),
    ]
    out: dict[str, Measure] = {}
    for aliases, dim, factor, name in table:
        for alias in aliases.split():
            out[alias] = Measure(name, dim, factor)
    out["per cent"] = out["percent"]
    return out


MEASURES = _defs()
_ALIASES = sorted(MEASURES, key=len, reverse=True)
_ALIAS_RE = "|".join(re.escape(a) for a in _ALIASES)
# a unit right after a number: "250 ms", "4KB", "3 weeks", "15%"
_AFTER_NUMBER = re.compile(rf"\s?(?P<u>{_ALIAS_RE})(?![\w])", re.IGNORECASE)
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
# a counted thing per time: "5 pages every 250 ms", "1,000 requests per second"
_RATE = re.compile(rf"(?P<n>{_NUM})\s+(?P<what>[a-z][\w-]*(?:\s[a-z][\w-]*)?)\s+"
                   rf"(?:every|per|each|a|an|within|in)\s+(?:(?P<m>{_NUM})\s?)?(?P<t>{_ALIAS_RE})"
                   r"(?![\w])",
                   re.IGNORECASE)
# a count of things of a size: "1,000 pages of 4 KB each", "8 buffers of 64 MB"
_PRODUCT = re.compile(rf"(?P<n>{_NUM})\s+(?P<what>[a-z][\w-]*)\s+(?:of|at)\s+"
                      rf"(?P<m>{_NUM})\s?(?P<u>{_ALIAS_RE})(?![\w])(?:\s+each)?", re.IGNORECASE)
# the unit a question asks for
_ASK_IN = re.compile(rf"\b(?:in|into|to|as)\s+(?P<u>{_ALIAS_RE})\s*\??\s*$", re.IGNORECASE)
_ASK_HOW_MANY = re.compile(rf"\bhow many\s+(?P<u>{_ALIAS_RE})\b(?!\s+(?:of|per|every))",
                           re.IGNORECASE)
# "the largest number of journal messages rsyslog will pass on in one hour": a count per
# a span of time; its subject (``s``) names what is counted in its first two words
SPAN_SUBJECT = re.compile(rf"\b(?:how many|number of)\s+(?P<s>.+?)\s+(?:in|within|during|over)\s+"
                          rf"(?:one|a|an|1|a single)\s+(?P<t>{_ALIAS_RE})\b", re.IGNORECASE)
_ASK_RATE = re.compile(rf"\b(?!(?:within|in|during|over|for|than)\b)(?P<what>[a-z][\w-]*)\s+"
                       rf"(?:per|a|each|every)\s+(?P<t>{_ALIAS_RE})\b",
                       re.IGNORECASE)


def measure(alias: str) -> Measure | None:
    """The unit written ``alias`` ("ms", "Seconds", "KiB"), if known. A one-letter
    alias counts only in its own case ("5 s", "16 B": "B" bytes, not "b")."""
    m = MEASURES.get(alias.lower())
    if m is None or (alias.lower() == "b" and alias != "B"):
        return None
    return m


def unit_after(text: str, end: int) -> Measure | None:
    """The unit written right after the number that ends at ``text[end]``."""
    m = unit_match(text, end)
    return measure(m.group("u")) if m else None


def unit_match(text: str, end: int) -> re.Match[str] | None:
    """Where the unit written right after the number ending at ``text[end]`` is."""
    m = _AFTER_NUMBER.match(text, end)
    return m if m and measure(m.group("u")) is not None else None


@dataclass(frozen=True)
class Target:
    """The unit a question asks its result in: a measure ("in seconds"), or a count
    per time ("pages per second": ``what`` "pages", ``per`` seconds)."""

    unit: Measure | None
    what: str = ""
    per: Measure | None = None

    def text(self) -> str:
        if self.per is not None:
            per = {"s": "second", "ms": "millisecond", "µs": "microsecond", "ns": "nanosecond"
                   }.get(self.per.name, self.per.name.rstrip("s"))
            return f"{self.what} per {per}"
        return self.unit.name if self.unit else ""


def asked_unit(question: str) -> Target | None:
    """The unit ``question`` asks for ("... in milliseconds?", "how many bytes ...",
    "how many pages per second ..."), if any."""
    q = question.strip()
    rate = _ASK_RATE.search(q)
    if rate and re.search(r"\bhow many\b", q, re.IGNORECASE):
        per = measure(rate.group("t"))
        if per is not None and per.dim == "time" and measure(rate.group("what")) is None:
            return Target(None, rate.group("what").lower(), per)
    span = SPAN_SUBJECT.search(q)
    what = next((w for w in span.group("s").lower().split()[:2]
                 if re.fullmatch(r"[a-z][\w-]*s", w)), "") if span else ""
    if span and what and (per := measure(span.group("t"))) is not None and \
            per.dim == "time" and measure(what) is None:
        return Target(None, what, per)
    for pattern in (_ASK_IN, _ASK_HOW_MANY):
        m = pattern.search(q)
        if m and (u := measure(m.group("u"))) is not None and u.dim != "percent":
            return Target(u)
    return None


@dataclass(frozen=True)
class Compound:
    """A figure that is a computation in the source's own words: a product ("1,000
    pages of 4 KB each": 1000 * 4 KB) or a rate ("5 pages every 250 ms")."""

    expr: str  # the calculator expression, in ``unit`` (or per ``per``)
    number: float
    text: str  # as written
    unit: Measure | None
    what: str = ""  # the counted thing of a rate ("pages")
    per: Measure | None = None


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def num_text(x: float) -> str:
    """A number for a calculator expression, exact for whole numbers."""
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))  # 1048576, not 1.04858e+06
    return f"{x:.12g}"


def compound_at(text: str, start: int) -> Compound | None:
    """A product or rate starting at the number at ``text[start]``."""
    m = _PRODUCT.match(text, start)
    if m and (u := measure(m.group("u"))) is not None:
        n, v = _num(m.group("n")), _num(m.group("m"))
        return Compound(f"{num_text(n)} * {num_text(v)}", n * v, m.group(), u)
    r = _RATE.match(text, start)
    if r and (t := measure(r.group("t"))) is not None and t.dim == "time":
        n = _num(r.group("n"))
        every = _num(r.group("m")) if r.group("m") else 1.0
        expr = f"{num_text(n)} / {num_text(every)}" if r.group("m") else num_text(n)
        return Compound(expr, n / every, r.group(), None, r.group("what").lower(), t)
    return None


def scale(expr: str, factor: float) -> str:
    """``expr`` multiplied by ``factor``, written as a whole multiplication or
    division where one is ("250 / 1000" rather than "250 * 0.001")."""
    if abs(factor - 1) < 1e-12:
        return expr
    wrapped = expr if re.fullmatch(r"[\d.]+", expr) else f"({expr})"
    if factor >= 1:
        return f"{wrapped} * {num_text(factor)}"
    inverse = 1 / factor
    if abs(inverse - round(inverse)) < 1e-9:
        return f"{wrapped} / {round(inverse)}"
    return f"{wrapped} * {num_text(factor)}"


def best_unit(units: list[Measure], result_base: float) -> Measure:
    """The unit to state a result in when the question names none: the largest of the
    operands' units in which the result is still at least 1."""
    for u in sorted(units, key=lambda x: -x.factor):
        if abs(result_base) / u.factor >= 1:
            return u
    return min(units, key=lambda x: x.factor)


# a unit a sentence measures its figures in, stated apart from them
_STATED_UNIT = re.compile(r"\b(?:number of|in|measured in)\s+([a-z]{2,})\b|<([a-z]{2,})>", re.I)


def stated_unit(text: str) -> Measure | None:
    """The unit ``text`` measures its figures in, stated apart from them: "Number of
    seconds to cache credentials (default: 900)", "--timeout <seconds>"."""
    return next((x for w in _STATED_UNIT.finditer(text)
                 if (x := measure(w.group(1) or w.group(2)))), None)
