"""The harness's calculation (the grounded final turn's arithmetic path).

For a :class:`~kbagent.agent.harness.calc_plan.CalcPlan`, each operand is searched and
read from the sources (:func:`~kbagent.agent.harness.decompose.find_operand`), the
``calculate`` tool computes the expression (a visible step), and the answer leads
with the result: its first sentence states it ("Retry cap vs connect timeout: 25 s
longer [1][2]."), and ``RunState.short_answer`` holds it in a few words with the
operands' markers ("25 s [1][2]"). Then each operand is quoted with its citation,
then the computation.
"""

from __future__ import annotations

import re
from collections.abc import Generator

from kbagent.agent.answer.citations import content_tokens
from kbagent.agent.answer.evidence import Unit, missing_facts, numbers_in, units_of
from kbagent.agent.answer.support import overlap
from kbagent.agent.events import AnswerDelta, Event
from kbagent.agent.harness.decompose import (
    CalcPlan,
    Value,
    answer_value,
    arithmetic,
    find_operand,
    kind_of,
    parse_value,
)
from kbagent.agent.harness.grounding import grounding_of as _g
from kbagent.agent.harness.quantities import Measure, compound_at, unit_after
from kbagent.agent.run.harness_steps import calculate_step, search_step
from kbagent.agent.run.harness_steps import say as _say
from kbagent.agent.run.state import RunState

RATE_UNITS = 6  # best units a rate asked for is read from
ANSWER_UNITS = 3  # best units read for a conversion's figure when no operand reading finds it
OPERAND_TOP_K = 15  # hits per operand search: a figure often sits in a table row, which
# the lexical index ranks first and the embedding last (q1 2026 ARR: bm25 #1, vector #50)


def calculation(s: RunState, step: int, plan: CalcPlan) -> Generator[Event, None, bool]:
    """Search each operand, read its value, compute; True if the answer is written."""
    g = _g(s)
    values: list[Value] = []
    pools: list[list[Unit]] = []
    for op in plan.operands:
        if op.literal:  # "more than 10 seconds": the question's own figure
            values.append(literal_value(op.item))
            pools.append([])
            continue
        what = op.metric or op.item
        query = f"{op.metric} {op.item}".strip()
        thought = (f"I need the {op.metric} for {op.item}." if op.metric else
                   f"I need the value of {op.item}.")
        out = yield from search_step(s, step, query, thought, OPERAND_TOP_K)
        found = out.citations
        step += 1
        cites = [c for c in s.ledger if c.n in found] + [c for c in s.ledger
                                                           if c.n not in found]
        pools.append([u for c in cites for u in units_of(c)])
        # (a rate is read from the units best for the whole question)
        value = (_rate(plan, [e.unit for e in g.evidence(limit=RATE_UNITS)])
                 if plan.op == "convert" else None) or find_operand(
            op, pools[-1], like=values[0].text if values else "")
        if plan.op == "convert" and (value is None or (value.measure is None
                                                      and value.compound is None)):
            # a figure without a unit converts to nothing: the answer's figure, if it has one
            best = answer_value(s.question, [e.unit for e in g.evidence(limit=ANSWER_UNITS)])
            value = best if best is not None and best.measure is not None else value
        if value is None or not what:
            return False
        values.append(value)
    if len(values) > 1 and kind_of(values[0].text) != kind_of(values[1].text) and pools[0]:
        # the first operand was read with nothing to be like: read it again like the
        # second ("$11.20M", not "11,200" from a table in thousands)
        again = find_operand(plan.operands[0], pools[0], like=values[1].text)
        if again is not None and kind_of(again.text) == kind_of(values[1].text):
            values[0] = again
    if plan.op == "convert" and not _needs_conversion(plan, values[0]):
        return False  # the figure is already in the unit asked: a plain answer
    expr, unit = arithmetic(plan, values)
    result = yield from calculate_step(s, step, expr)
    if result is None:
        return False
    shown = result_text(plan, values, result, unit)
    g.extra_numbers |= numbers_in(result) | numbers_in(expr) | numbers_in(shown)
    cited = list(dict.fromkeys(v.unit.n for v in values if v.unit.n))
    markers = "".join(f"[{n}]" for n in cited)
    s.short_answer = f"{shown} {markers}"
    yield result_lead(s, f"{lead_text(plan, values, shown)} {markers}. ", cited)
    for op, v in zip(plan.operands, values, strict=True):
        if op.literal:
            continue
        g.used.add((v.unit.n, v.unit.position))
        metric = " ".join(dict.fromkeys(op.metric.split()))
        name = f"{metric[:1].upper()}{metric[1:]} for {op.item}" if metric else \
            f"{op.item[:1].upper()}{op.item[1:]}"
        yield _say(s, f"{name}: {v.text} [{v.unit.n}]. ", "quote")
    yield _say(s, f"Calculation: {expr.replace('*', '×')} = {result} (calculated). ",
               "calculation")
    return True


def _rate(plan: CalcPlan, units: list[Unit]) -> Value | None:
    """A count per a span of time asked for ("messages ... in one hour"): the first rate
    of the thing counted the sources state ("20,000 messages within 10 minutes")."""
    target = plan.unit
    if target is None or target.per is None or not target.what:
        return None
    for u in units:
        for m in re.finditer(r"(?<![\w.,])\d", u.text):
            c = compound_at(u.text, m.start())
            if c is not None and c.per is not None and \
                    c.what.split()[-1].rstrip("s") == target.what.rstrip("s"):
                return Value(c.number, c.text, u, None, c)
    return None


def literal_value(text: str) -> Value:
    """A figure written in the question, as an operand (cited nowhere: citation 0)."""
    digits = re.match(r"[$€£]?\d[\d,]*(?:\.\d+)?", text)
    end = digits.end() if digits else 0
    return Value(parse_value(text) or 0.0, text, Unit(0, text, "", 0),
                 unit_after(text, end))


def result_lead(s: RunState, text: str, cited: list[int]) -> Event:
    """The result sentence: supported when its facts are the cited figures' names and
    the calculator's numbers, and its words are the cited chunks' (the same checks as a
    model's sentence, with the calculator's results counted as evidence)."""
    g = _g(s)
    sent = s.processor.emit(text, "calculation", cited)
    plain = re.sub(r"\[\d+\]", "", text).strip()
    cited_text = g.cited_text(cited)
    share = overlap(plain, [cited_text])
    sent.supported = not missing_facts(plain, cited_text, g.extra_numbers) and (
        share is None or share >= 0.5)
    sent.support = share
    return AnswerDelta(sent.text, sent.supported)


def _needs_conversion(plan: CalcPlan, v: Value) -> bool:
    target = plan.unit
    if target is None:
        return False
    if v.compound is not None:
        return True
    return v.measure is not None and target.unit is not None and \
        v.measure.dim == target.unit.dim and v.measure.name != target.unit.name


def _number(x: float, decimals: int = 2) -> str:
    text = f"{round(x, decimals):,.{decimals}f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text


def _names(plan: CalcPlan) -> tuple[str, str]:
    a, b = plan.operands[0].item, plan.operands[-1].item
    return a, b


def lead_text(plan: CalcPlan, values: list[Value], shown: str) -> str:
    """The answer's first sentence, without its markers: the result, first."""
    a, b = _names(plan)
    metric = " ".join(dict.fromkeys(plan.metric.split()))
    first, last = plan.operands[0], plan.operands[-1]
    if first.metric != last.metric:  # "Q3 2026 revenue" of "FY2026 revenue plan"
        a, b, metric = f"{a} {first.metric}".strip(), f"{b} {last.metric}".strip(), ""
    of = f" {metric}" if metric else ""
    if plan.op == "compare":
        verb = plan.wording if shown == "Yes" else f"not {plan.wording}"
        if last.literal:
            return f"{shown}: {a}{of} ({values[0].text}) is {verb} than {b}"
        return (f"{shown}: {a}{of} ({values[0].text}) is {verb} than {b}{of} "
                f"({values[-1].text})")
    if plan.op == "convert":
        return f"{a[:1].upper()}{a[1:]}: {shown}"
    if plan.op == "ratio" and plan.wording == "to":
        return f"Ratio of {a} to {b}{of}: {shown}"
    named = f"{metric} for {a} vs {b}" if metric else f"{a} vs {b}"
    named = named[:1].upper() + named[1:]
    if plan.op == "ratio":
        return f"{named}: {shown} {plan.wording}"
    if plan.op == "share":
        return f"{a[:1].upper()}{a[1:]} as a share of {b}{of}: {shown}"
    if plan.op == "difference" and plan.wording:
        return f"{named}: {shown} {plan.wording}"
    return {"pct_change": f"Change in{of} from {a} to {b}: {shown}",
            "pp_change": f"Change in{of} from {a} to {b}: {shown}",
            "difference": f"Difference in{of} between {a} and {b}: {shown}",
            "sum": f"Total{of} for {', '.join(o.item for o in plan.operands)}: {shown}",
            }.get(plan.op, shown)


def result_text(plan: CalcPlan, values: list[Value], result: str,
                unit: Measure | None = None) -> str:
    """The result as a reader states it: "14.3%", "5.2 percentage points", "$1,901",
    "25 s", "4,096,000 bytes", "15 times", "25%", "Yes"."""
    try:
        number = float(result.replace(",", ""))
    except ValueError:
        return result
    one = f"{abs(number) if plan.op == 'pp_change' else number:.1f}".rstrip("0").rstrip(".")
    if plan.op == "pct_change":
        return f"{one}%"
    if plan.op == "pp_change":
        return f"{one} percentage points"
    if plan.op == "compare":
        return "Yes" if number > 0 else "No"
    if plan.op == "ratio":
        times = _number(number, 0 if abs(number) >= 10 and abs(number - round(number)) < 0.05
                        else 1 if abs(number) >= 1 else 2)
        return f"{times} to 1" if plan.wording == "to" else f"{times} times"
    if plan.op == "share":
        return f"{_number(number, 1)}%"
    if plan.unit is not None and (plan.op == "convert" or (
            plan.unit.per is not None and plan.op in ("difference", "sum"))):
        return f"{_number(number)} {plan.unit.text()}"
    if unit is not None and unit.dim == "percent":
        return (f"{_number(number)} percentage points" if plan.op == "difference" else
                f"{_number(number)}%")
    if unit is not None:
        return f"{_number(number)} {unit.name}"
    text = _number(number)
    first = values[0].text
    prefix = first[0] if first[:1] in "$€£" else ""
    suffix = first.rstrip(")")[-1] if first.rstrip(")")[-1:] in "MKB%" else ""
    return f"{prefix}{text}{suffix}{_counted(values[0], plan)}"


def _counted(v: Value, plan: CalcPlan) -> str:
    """What a plain figure counts, when the source names it right after the figure
    and the question asks about it ("25 seats": " seats")."""
    at = v.unit.text.find(v.text)
    if at < 0 or not re.fullmatch(r"[\d,.]+", v.text):
        return ""
    m = re.match(r"\s+([A-Za-z][\w-]*)", v.unit.text[at + len(v.text):])
    if m and content_tokens(m.group(1)) & content_tokens(plan.metric):
        return f" {m.group(1)}"
    return ""
