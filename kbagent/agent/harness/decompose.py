"""Questions taken apart by the harness, for models too small to plan.

* :func:`parts_of` splits a multi-part question into parts answered one by one:
  clauses joined by "and how/what/why ..." ("What caused X and how long did it
  last?"), and comparisons of parallel items ("Compare Q2 and Q3 gross margin",
  "from Q1 to Q2", "the Business tier ... than the Team tier"). Each part carries
  a search query that keeps the subject of the question (a later clause's "it").
* :func:`~kbagent.agent.harness.calc_plan.calc_plan_of` (re-exported here) recognises
  the arithmetic a question asks for; :func:`find_operand` reads an operand's value
  from the evidence units ("Q2 2026: $9.80M" in a table row, "gross margin of
  70.0%" or "managers get 25 days" in prose), with its unit or the product or rate
  written after it; :func:`arithmetic` writes the calculator expression, operands
  converted to one unit.

Everything here is a heuristic over English questions; when it does not
recognise a question it returns one part and no plan, and the answer is the
model's, checked as always.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kbagent.agent.answer.citations import content_tokens
from kbagent.agent.answer.evidence import QUESTION_WORDS, Unit
from kbagent.agent.answer.focus import focus_of
from kbagent.agent.harness.calc_plan import (
    INVERSE,
    ITEM,
    CalcPlan,
    Operand,
    calc_plan_of,
    metric_of,
)
from kbagent.agent.harness.clauses import clauses as _clauses
from kbagent.agent.harness.clauses import which_one
from kbagent.agent.harness.quantities import (
    Compound,
    Measure,
    best_unit,
    compound_at,
    num_text,
    scale,
    stated_unit,
    unit_after,
    unit_match,
)
from kbagent.agent.harness.quantities import measure as unit_of
from kbagent.agent.harness.short import spans

__all__ = ["CalcPlan", "Operand", "Part", "Value", "calc_plan_of", "expression",
           "find_operand", "metric_of", "parse_value", "parts_of"]

# An item that can be compared: a period (Q2, H1, FY2026, 2025, Q3 2026), or a short
# capitalised name (Business, Team).
_ITEM = ITEM
# compared items split a question into parts; "from A to B" (a change) and "A than B" (a
# difference) are one thing to explain or compute, not two parts
_PAIR = re.compile(rf"\b(?:between\s+)?(?:the\s+)?(?P<a>{_ITEM})\s+(?P<noun>[a-z]+\s+)?"
                   rf"(?:and|vs\.?|versus)\s+(?:the\s+)?(?P<b>{_ITEM})\b")
_LEAD_VERB = re.compile(r"^\s*(?:please\s+)?(?:compare|contrast|explain|describe|list)\s+",
                        re.IGNORECASE)


@dataclass
class Part:
    question: str  # the part, as a question of its own
    query: str  # what the harness searches for it
    label: str = ""  # how the answer names it ("Q2", "what caused ...")
    item: str = ""  # a compared item ("Q2"), whose figure can be read like an operand


def _key_terms(text: str) -> str:
    words = [w for w in re.findall(r"[\w$%.-]+", text)
             if content_tokens(w) and not content_tokens(w) <= QUESTION_WORDS]
    return " ".join(words)


_COMPARE = re.compile(r"\b(?:compare|comparison|versus|vs\.?|difference between|differ)\b",
                      re.IGNORECASE)


def _pair(text: str, wording: str = "") -> re.Match[str] | None:
    """Two compared items: periods of one kind (Q2 and Q3, 2024 and 2025) anywhere;
    names (Business and Team) only when the wording compares them, since "Kiss and
    Tell" may be one title and "Were A and B ...?" one yes/no question."""
    names_compared = bool(_COMPARE.search(wording or text))
    for m in _PAIR.finditer(text):
        a, b = m.group("a"), m.group("b")
        same_shape = (re.fullmatch(r"Q[1-4].*", a) and re.fullmatch(r"Q[1-4].*", b)) or (
            re.fullmatch(r"H[12].*", a) and re.fullmatch(r"H[12].*", b)) or (
            re.fullmatch(r"(FY)?\s?20\d\d", a) and re.fullmatch(r"(FY)?\s?20\d\d", b)) or (
            names_compared and a[0].isupper() and b[0].isupper()
            and not re.match(r"[QH]\d", a + b))
        if same_shape and a != b:
            return m
    return None


def parts_of(question: str) -> list[Part]:
    """The parts of ``question`` (one part: not a multi-part question)."""
    clauses = [c.strip(" ?.,") for c in _clauses(question) if c.strip(" ?.,")]
    if not clauses:
        return [Part(question, question)]
    subject = _key_terms(_LEAD_VERB.sub("", clauses[0]))
    clauses = which_one(clauses)
    parts: list[Part] = []
    for i, clause in enumerate(clauses):
        body = _LEAD_VERB.sub("", clause)
        query = body if i == 0 else f"{body} {subject}"
        m = _pair(body, clause)
        if m is not None:
            year = re.search(r"\b20\d\d\b", body)
            for item in (m.group("a"), m.group("b")):
                one = body[: m.start()] + " " + item + " " + (m.group("noun") or "") + \
                    body[m.end():]
                one = " ".join(one.split())
                if year and year.group() not in one:
                    one += f" {year.group()}"
                q = one if i == 0 else f"{one} {subject}"
                parts.append(Part(one + "?", q, label=item, item=item.strip()))
            continue
        parts.append(Part(clause + "?", query, label=clause if i else ""))
    return parts if len(parts) > 1 else [Part(question, question)]


# ------------------------------------------------------------------ arithmetic
@dataclass
class Value:
    number: float
    text: str  # as written in the source ("$9.80M", "71.4%", "250 ms")
    unit: Unit = field(repr=False)
    measure: Measure | None = None  # its unit of measure, if one is written
    compound: Compound | None = None  # a product or rate in the source's words


_LABELLED = re.compile(r"(?P<label>[A-Za-z][\w ()/&'.-]{0,40}?)\s*:\s*(?P<val>\(?[-−+]?[$€£]?"
                       r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\(?[-−+]?[$€£]?\d+(?:\.\d+)?)"
                       r"(?P<suffix>\s?(?:[%MKB]|pts?)?\)?)(?![\w.])")
_NUMBER_AFTER = re.compile(r"(?<![\w.])[-−+]?[$€£]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
                           r"(?:\s?[%MKB](?![\w]))?(?![\w.,]\d)")
_CELL_PAIR = re.compile(r"(?:^|;\s*)(?P<label>[^:;]{1,60}):\s*(?P<value>[^;]+)")
SYNONYMS = {"cost": {"price", "fee"}, "price": {"cost", "fee"}, "fee": {"cost", "price"},
            "revenu": {"sale"}, "sale": {"revenu"}}


def parse_value(text: str) -> float | None:
    m = re.search(r"\d[\d,]*(?:\.\d+)?", text)
    if not m:
        return None
    value = float(m.group().replace(",", ""))
    return -value if re.match(r"\s*[(−-]", text) else value


def _tokens(text: str) -> set[str]:
    return content_tokens(text.replace("_", " "))  # "retry_cap" names the retry cap


def _with_synonyms(tokens: set[str]) -> set[str]:
    out = set(tokens)
    for t in tokens:
        out |= SYNONYMS.get(t, set())
    return out


_MONTH_BEFORE = re.compile(r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?\s*$")


def _kind(text: str) -> str:
    """What a written value measures: money, a percentage, a duration, a data size, or
    a plain number."""
    if re.search(r"[$€£]", text):
        return "money"
    n = re.search(r"\d(?:[\d,]*\d)?(?:\.\d+)?", text)
    u = unit_after(text, n.end()) if n else None
    return u.dim if u else "percent" if "%" in text else "number"


kind_of = _kind


def _is_date_part(text: str, start: int, end: int) -> bool:
    """Is the number at ``text[start:end]`` a day of a date ("Dec 31", "31, 2026")?"""
    return bool(_MONTH_BEFORE.search(text[:start]) or re.match(r",\s*(?:19|20)\d\d\b",
                                                                 text[end:]))


def answer_value(question: str, units: list[Unit]) -> Value | None:
    """The figure the first of ``units`` (best first) that states one gives for
    ``question`` (its short answer), with its unit: the operand of a conversion whose
    subject no operand reading found ("how many minutes does the cache keep
    credentials": "(default: 900)" of "Number of seconds to cache credentials")."""
    f = focus_of(question)
    for u in units:
        for span in spans(f, u.text)[:1]:
            n = _NUMBER_AFTER.search(u.text, span.start)
            number = parse_value(n.group()) if n else None
            if n is None or number is None or n.start() - span.start > 2:
                continue
            shown, measure, compound = _value(n.start(), n.end(), u.text)
            if measure is None and compound is None:  # told before the figure, not after
                measure = stated_unit(u.text[:n.start()])
                shown = f"{shown} {measure.name}" if measure else shown
            return Value(number, shown.strip(), u, measure, compound)
    return None


def _value(start: int, end: int, text: str
           ) -> tuple[str, Measure | None, Compound | None]:
    """The figure at ``text[start:end]`` as written, with the unit or product/rate
    written after it."""
    if re.match(r"\(?[-−+]?[$€£]", text[start:end]):
        return text[start:end], None, None  # money: "$9.80M", "$2B" keep their scale
    compound = compound_at(text, start)
    if compound is not None:
        return compound.text, compound.unit, compound
    digits = re.match(r"[-−+(]*\d[\d,]*(?:\.\d+)?", text[start:end])
    end = start + digits.end() if digits else end
    um = unit_match(text, end)
    if um is None:
        return text[start:end], None, None
    return text[start:um.end()], unit_after(text, end), None


_PREP_BEFORE = re.compile(r"\s+(?:in|for|at|during|on|by)\s+(?:the\s+)?$", re.IGNORECASE)


def _near_item(op: Operand, text: str, metric_t: set[str]) -> re.Match[str] | None:
    """The number that belongs to the item named in ``text``: "71.4% in Q2" (a number
    right before "in/for <item>"), else the first number after the item ("managers get
    25 days", "the retry cap is 30 s") before any other number's item."""
    low = text.lower()
    words = [w for w in re.findall(r"[\w-]+", op.item.lower()) if len(w) > 1]
    spots = [m.start() for w in words[:1] for m in re.finditer(rf"\b{re.escape(w[:6])}", low)]
    for at in spots:
        before = _PREP_BEFORE.search(text[:at])
        if before:
            prev = [n for n in _NUMBER_AFTER.finditer(text[:before.start()])]
            if prev and before.start() - prev[-1].end() < 3:
                return prev[-1]
        end = at + len(op.item)
        after = [n for n in _NUMBER_AFTER.finditer(text, end) if n.start() - end < 80
                 and not _is_date_part(text, n.start(), n.end())]
        # "costs $199 per month and includes 25 seats": the number the metric follows
        named = [n for n in after if _tokens(" ".join(text[n.end():].split()[:2]))
                 & metric_t]
        if named or after:
            return (named or after)[0]
    return None


def find_operand(op: Operand, units: list[Unit], like: str = "") -> Value | None:
    """The value of ``op`` in ``units`` (best first), from, in order of trust: a table
    cell or ``label: value`` whose label names the item (a period column) in a row
    about the metric; a row naming the item whose cell is labelled by the metric (a
    price column in the item's row); in prose naming the item, the number that belongs
    to it ("25 days" after "managers"); the first number after the metric's words (not
    a day of a date) in prose that names the item (or whose file does). A value of
    another kind than ``like`` (money, percent, a duration, a size, plain) ranks lower.
    An operand without a metric ("retry cap") is its own metric."""
    itself = not op.metric.strip()  # the item is the quantity ("retry cap")
    if itself:
        op = Operand(op.item, op.item)
    item_t, metric_t = _tokens(op.item), _with_synonyms(_tokens(op.metric))
    core = {t for t in item_t if not re.fullmatch(r"(19|20)\d\d", t)} or item_t
    need = max(1, min(len(_tokens(op.metric)), 2)) * 0.5
    best: tuple[float, Value] | None = None

    def offer(score: float, m: re.Match[str] | None, text: str, u: Unit,
              group: int | str = 0, header: str = "") -> None:
        nonlocal best
        if m is None:
            return
        number = parse_value(m.group(group))
        shown, measure, compound = _value(m.start(group), m.end(group), text)
        if measure is None and compound is None and not re.search(r"[$€£%]", shown):
            # a column's unit: "PTO days: 25", "Timeout (ms): 250"
            measure = next((x for w in re.findall(r"[A-Za-z%]+", header)
                            if (x := unit_of(w)) is not None and len(w) > 1
                            and w.lower() not in ("min", "hr", "h")), None)
            shown = f"{shown} {measure.name}" if measure else shown
        if group == "val" and measure is None:
            shown = m.group("val") + m.group("suffix")
        if like and _kind(shown) != _kind(like):
            score -= 1.5  # an operand measured like the other operand is the likelier one
        if number is not None and (best is None or score > best[0]):
            best = (score, Value(number, shown.strip(), u, measure, compound))

    for rank, u in enumerate(units):
        pairs = [(m.group("label").strip(), m.group("value").strip())
                 for m in _CELL_PAIR.finditer(u.text)]
        values_t = _tokens(" ".join(v for _, v in pairs)) if pairs else _tokens(u.text)
        about = len(metric_t & values_t)
        context_t = _tokens(u.context)
        # a period column: "Q2 2026: $9.80M" in the row about the metric
        if about >= need:
            for m in _LABELLED.finditer(u.text):
                label_t = _tokens(m.group("label"))
                if core <= label_t and item_t <= label_t | _tokens(u.text) | context_t:
                    offer(3 + about - rank * 0.01, m, u.text, u, "val")
        # the item's row: "Tier: Team; Price: $499 per month"
        if pairs and any(core <= _tokens(v) and len(_tokens(v)) <= len(core) + 2
                         for _, v in pairs):
            numbered = [(label, value) for label, value in pairs
                        if not core <= _tokens(value) and _NUMBER_AFTER.search(value)]
            for label, value in pairs:
                if metric_t & _tokens(label):
                    n = _NUMBER_AFTER.search(value)
                    offer(2.5 - rank * 0.01, n, value, u, header=label)
            if itself and numbered:  # "Setting: retry_cap; Default: 30 s": its value
                label, value = numbered[0]
                offer(2.4 - rank * 0.01, _NUMBER_AFTER.search(value), value, u,
                      header=label)
        # prose naming the item (or in the item's file): the number after the metric
        path_t = _tokens(u.context.split("  ")[0]) if "  " in u.context else context_t
        in_text = item_t <= _tokens(u.text)
        if about >= need and in_text and not pairs:
            offer(1.6 + about * 0.5 - rank * 0.01, _near_item(op, u.text, metric_t), u.text, u)
        if about >= need and item_t <= _tokens(u.text) | path_t:
            low = u.text.lower()
            positions = [low.find(w.lower()) for w in op.metric.split() if w.lower() in low]
            if positions:
                n = _NUMBER_AFTER.search(u.text, min(positions))
                while n is not None and _is_date_part(u.text, n.start(), n.end()):
                    n = _NUMBER_AFTER.search(u.text, n.end())
                if n is not None and n.start() - min(positions) < 60:
                    offer(1 + about * 0.5 + (0.5 if in_text else 0) - rank * 0.01, n,
                          u.text, u)
    return best[1] if best else None


def _in(v: Value) -> tuple[str, float, Measure | None]:
    """A value as a calculator term: its expression, number and unit."""
    c = v.compound
    if c is not None and c.per is None:
        return c.expr, c.number, c.unit
    if c is not None:
        return c.expr, c.number, None
    return num_text(v.number), v.number, v.measure


def _wrap(expr: str) -> str:
    return expr if re.fullmatch(r"-?[\d.]+", expr) else f"({expr})"


def arithmetic(plan: CalcPlan, values: list[Value]) -> tuple[str, Measure | None]:
    """The calculator expression for ``plan`` over ``values`` and the unit its result
    is in (operands in different units of one dimension converted to one unit: the
    asked one, else the largest in which the result is at least 1)."""
    terms = [_in(v) for v in values]
    nums = [e for e, _, _ in terms]
    target = plan.unit
    if plan.op == "pct_change":
        return f"({nums[1]} - {nums[0]}) / {nums[0]} * 100", None
    if plan.op == "pp_change":
        return f"{nums[0]} - {nums[1]}", None
    if plan.op == "convert":
        v, (expr, _, u) = values[0], terms[0]
        c = v.compound
        if c is not None and c.per is not None and target is not None and target.per:
            return scale(expr, target.per.factor / c.per.factor), None
        if u is not None and target is not None and target.unit and target.unit.dim == u.dim:
            return scale(expr, u.factor / target.unit.factor), target.unit
        return expr, u
    measures = [u for _, _, u in terms if u is not None]
    out: Measure | None = None
    if measures and len({u.dim for u in measures}) == 1 and len(measures) == len(terms):
        base = [n * u.factor for _, n, u in terms if u is not None]
        if target is not None and target.unit and target.unit.dim == measures[0].dim:
            out = target.unit
        elif plan.op in ("ratio", "share", "compare"):
            out = min(measures, key=lambda x: x.factor)
        else:
            result = base[0] - sum(base[1:]) if plan.op == "difference" else sum(base)
            out = best_unit(measures, result)
        nums = [scale(e, u.factor / out.factor) for e, _, u in terms if u is not None]
    if inverted(plan, out or (measures[0] if measures else None)):
        nums = nums[::-1]
    if plan.op in ("difference", "compare"):
        return f"{nums[0]} - {_wrap(nums[1])}", out
    if plan.op == "ratio":
        return f"{_wrap(nums[0])} / {_wrap(nums[1])}", None
    if plan.op == "share":
        return f"{_wrap(nums[0])} / {_wrap(nums[1])} * 100", None
    return " + ".join(nums), out


def inverted(plan: CalcPlan, unit: Measure | None) -> bool:
    """Does the question's comparative ask for the second operand less (or over) the
    first ("how much lower is A than B", "how many times faster" of durations)?"""
    timed = unit is not None and unit.dim == "time"
    return plan.wording in INVERSE or (plan.wording == "faster" and timed) or (
        plan.wording == "slower" and not timed)


def expression(plan: CalcPlan, values: list[Value]) -> str:
    """The calculator expression for ``plan`` over ``values``."""
    return arithmetic(plan, values)[0]
