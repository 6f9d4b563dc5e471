"""Totals a question describes in words and the sources state in two settings: a count
times an amount per each of what it counts.

"How many seconds in total does the daemon keep retrying to bind the socket?" is
answered by two entries of a reference: ``daemon_startup_retries`` (Default: 9, "the
number of retries") and ``daemon_startup_sleep`` (Default: 30s, "the time to wait
between retries"): 9 × 30 s = 270 seconds. The question names neither; what ties the
two figures is the thing counted ("retries") that the amount is per ("between
retries", "in each pool", "per attempt").

:func:`wants_total` says whether a question asks for such a total (a quantity, and a
word for "in all": "in total", "altogether", "keep trying before it defers"); the
grounded final turn then calls :func:`total_of` over the best evidence units. It
returns None (and the answer is written as for any question) unless it finds a count
and an amount that fit: each in its own unit, each stated as a default or a setting's
value, the amount's "per" noun among the count's nouns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from kbagent.agent.answer.evidence import Scored
from kbagent.agent.answer.focus import focus_of
from kbagent.agent.harness.quantities import Measure, Target, asked_unit, measure, num_text
from kbagent.agent.harness.span_rules import stems_of

_ASKS = re.compile(r"\bhow (?:many|much|long)\b|\bwhat is the (?:total|maximum|largest)\b",
                   re.IGNORECASE)
_TOTAL = re.compile(
    r"\b(?:in total|total|altogether|in all|all told|all together|combined|at most in total|"
    r"keeps? (?:on )?(?:trying|retrying)|before (?:it|\w+) (?:gives? up|defers?|fails?|stops?"
    r"|reports?|bounces?))\b", re.IGNORECASE)
# a value stated as a default or a setting: "Default: 3s", "(default: 60s)", "default
# is 9", "Default: 120.000"
_STATED = re.compile(r"\bdefault(?:\s+value)?\s*(?::|is|=|of)?\s*(?P<v>\d[\d,]*(?:\.\d+)?)"
                     r"(?P<u>\s?[A-Za-z]+)?", re.IGNORECASE)
# "a number of seconds; ... (default 3)": the unit told before the figure
_UNIT_TOLD = re.compile(r"\b(?:number of|in|as)\s+(?P<u>seconds|minutes|hours|days|"
                        r"milliseconds|bytes|kilobytes|megabytes)\b", re.IGNORECASE)
_PER = re.compile(r"\b(?:between|each|per|every|for each|in each)\s+(?:the\s+)?(?:\w+\s+)?"
                  r"(?P<n>[a-z]+)", re.IGNORECASE)
_COUNTED = re.compile(r"\bnumber of\s+(?P<n>(?:[a-z-]+\s+){0,3}[a-z-]+)|"
                      r"\b(?P<t>retries|attempts|tries|times|pools|probes|rounds|passes)\b",
                      re.IGNORECASE)
_UNITS_WORD = re.compile(r"\bUnits:\s*(?P<u>[a-z]+)", re.IGNORECASE)
_BARE = re.compile(r"\s*Default:\s*\S+\s*$")  # a value line that says nothing else
MIN_COVERAGE = 0.15  # each of the two units must be about the question this much
TOP = 15  # evidence units looked at


@dataclass(frozen=True)
class Figure:
    scored: Scored
    number: float
    text: str  # as written ("3s", "9", "120.000 seconds")
    measure: Measure | None  # its unit of measure (a duration, a size), if one
    label: str  # the setting's name (a row's first cell), or ""
    counts_in: str = ""  # the noun it counts in, where no measure ("Units: threads")
    about: str = ""  # the words that say what it is (its unit, gloss, section)

    @property
    def n(self) -> int:
        return self.scored.unit.n


@dataclass(frozen=True)
class Total:
    count: Figure
    amount: Figure
    expression: str
    unit: Measure | None  # the result's unit (the asked one when it converts)


def wants_total(question: str) -> bool:
    """Does ``question`` ask for a total that may combine two stated figures?"""
    return bool(_ASKS.search(question) and _TOTAL.search(question))


def _figure(e: Scored, entry: str = "") -> Figure | None:
    """The value ``e`` states, if it states one; ``entry``: the text of the section it
    is the bare "Default: 5000" line of (a reference's one-setting section)."""
    text = f"{e.unit.text} {e.unit.gloss} {entry}"
    m = _STATED.search(e.unit.text)
    if m is None:
        return None
    number = float(m.group("v").replace(",", ""))
    word = (m.group("u") or "").strip()
    unit = measure(word) if word else None
    counts_in = ""
    if unit is None and (w := _UNITS_WORD.search(text)):
        unit = measure(w.group("u"))
        counts_in = "" if unit is not None else w.group("u").lower()
    if unit is None and (w := _UNIT_TOLD.search(text)):
        unit = measure(w.group("u"))
    shown = f"{m.group('v')}{m.group('u') or ''}".strip()
    if unit is not None and not m.group("u"):
        shown = f"{shown} {unit.name}"
    # a setting's name: a row's first cell, a definition's term ("-retries: ...")
    label = (e.unit.text.split(";")[0].strip() if e.unit.kind == "row" else
             e.unit.text.split(":")[0].strip() if e.unit.kind == "definition" else "")
    if not re.fullmatch(r"[\w.-]+", label):
        # "Default: 5000" under the heading "thread_pool_max¶": the section's name
        heading = e.unit.context.replace("\u00b6", " ").split()
        label = heading[-1] if entry and heading and "_" in heading[-1] else ""
    return Figure(e, number, shown, unit, label, counts_in, text)


def _counted(f: Figure) -> set[str]:
    """What a figure counts: the nouns after "number of", a count word, its name's parts
    ("daemon_startup_retries")."""
    if f.counts_in:  # "Units: pools": what it counts, whatever its name says
        return stems_of(f.counts_in)
    out: set[str] = set()
    for m in _COUNTED.finditer(f.about):
        out |= stems_of(m.group("n") or m.group("t"))
    if f.label:
        out |= stems_of(f.label) & {"retri", "retry", "attempt", "tri", "try", "time", "pool",
                                  "probe", "round", "pass", "window", "count"}
    return out


def _per(f: Figure, evidence: list[Scored]) -> set[str]:
    """What an amount is per: "between attempts", "in each pool", in its own words or
    where another unit speaks of it by name ("daemon_startup_sleep defines the length of
    time to wait between retries")."""
    out = {s for m in _PER.finditer(f.about) for s in stems_of(m.group("n"))}
    if f.label:
        for e in evidence:
            other = f"{e.unit.text} {e.unit.gloss}"
            for at in (m.end() for m in re.finditer(rf"\b{re.escape(f.label)}\b", other)):
                clause = re.split(r"[,;.]\s", other[at:at + 80], maxsplit=1)[0]
                out |= {s for m in _PER.finditer(clause) for s in stems_of(m.group("n"))}
    return out


_MOST = re.compile(r"\b(?:at most|maximum|max|largest|upper limit|highest)\b", re.I)
_LEAST = re.compile(r"\b(?:at least|minimum|min|smallest|lower limit|lowest)\b", re.I)
BOUND = 0.5  # for a figure that is the bound the question asks for (maximum, minimum)


def _bound(question: str, f: Figure) -> float:
    """"at most ... in total": the maximum of a pair of settings, not the minimum."""
    name = f.label.replace("_", " ")  # its name says it first ("thread_pool_max")
    words = name if _MOST.search(name) or _LEAST.search(name) else f.about
    for asked, other in ((_MOST, _LEAST), (_LEAST, _MOST)):
        if asked.search(question):
            return BOUND * (bool(asked.search(words)) - bool(other.search(words)))
    return 0.0


def _in_asked_unit(amount: Figure, target: Target | None, noun: set[str]) -> bool:
    """Is the amount in what the question asks a number of (seconds, worker threads)?"""
    if target is not None and target.unit is not None:
        return amount.measure is not None and amount.measure.dim == target.unit.dim
    if noun:
        name = amount.counts_in or (amount.measure.name if amount.measure else "")
        return bool(noun & stems_of(name)) or (amount.measure is not None and measure(
            next(iter(noun))) is not None)
    return True


def total_of(question: str, evidence: list[Scored],
             section: Callable[[Scored], str] | None = None) -> Total | None:
    """The count and the per-each amount among ``evidence`` (best first) whose product
    the question asks for, with the calculator expression; None when no pair fits.
    ``section``: the text of the section a unit belongs to (for a bare "Default: 2")."""
    if not wants_total(question):
        return None
    figures = [f for e in evidence[:TOP] if e.coverage >= MIN_COVERAGE and (f := _figure(
        e, section(e) if section and _BARE.match(e.unit.text) else "")) is not None]
    best: tuple[float, Figure, Figure] | None = None
    asked = stems_of(question)
    target = asked_unit(question)
    noun = stems_of(focus_of(question).unit)  # "how many worker threads": threads
    for amount in figures:
        if not _in_asked_unit(amount, target, noun):
            continue
        if amount.measure is None and not amount.counts_in:
            continue  # an amount has a unit: "30s", "Units: threads"
        per = _per(amount, evidence[:TOP])
        if not per or per & stems_of(amount.counts_in):
            continue  # "Units: pools" ... "each pool": the count of pools, no amount per pool
        for count in figures:
            if count.scored.unit == amount.scored.unit or count.measure is not None \
                    or count.number < 1:
                continue
            counted = _counted(count)
            # what is counted, and is per each, is what the question speaks of
            # ("keep retrying", "worker threads"), not merely two settings of one page
            if not (per & counted) or not (counted & asked) or \
                    count.number != int(count.number):
                continue
            score = count.scored.score + amount.scored.score + _bound(question, amount) + \
                _bound(question, count)
            if best is None or score > best[0]:
                best = (score, count, amount)
    if best is None:
        return None
    _, count, amount = best
    unit = amount.measure
    factor = 1.0
    if unit is not None and target is not None and target.unit is not None \
            and target.unit.dim == unit.dim:
        factor, unit = unit.factor / target.unit.factor, target.unit
    value = num_text(amount.number * factor)
    return Total(count, amount, f"{num_text(count.number)} * {value}", unit)
