"""The final-answer turn of a grounded run (``AgentConfig.grounded``, the default).

The harness carries what a small model cannot:

1. **Parts.** A multi-part question (:func:`~kbagent.agent.decompose.parts_of`)
   gets one search per part, and the arithmetic a question asks for
   (:func:`~kbagent.agent.decompose.calc_plan_of`) one search per operand. Each
   search is a visible step.
2. **Calculation.** When every operand is found in the sources, the harness calls
   the ``calculate`` tool (a visible step) and writes the answer: the operands,
   quoted with their citations, then the computation and its result.
3. **Part by part.** A multi-part question is answered one part at a time, each
   with the source sentence that answers it, quoted and cited, or "the
   knowledge base does not say" for a part nothing covers.
4. **Abstention.** When the evidence does not cover the question
   (:meth:`~kbagent.agent.grounding.Grounding.answerable`), the answer says that
   the knowledge base does not say it and lists the closest sources; the model
   is not asked to invent one.
5. **Compact evidence.** Otherwise the model answers from the best sentences of
   the sources (not whole chunks), and every sentence it writes is checked and
   repaired by :class:`~kbagent.agent.grounding.Grounding`. If nothing it wrote
   survives, the best source sentence is quoted instead.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING

from kbagent.agent import prompts
from kbagent.agent.answer import ProcessedSentence
from kbagent.agent.calculator import format_number
from kbagent.agent.decompose import (
    CalcPlan,
    Value,
    calc_plan_of,
    expression,
    find_operand,
    parts_of,
)
from kbagent.agent.events import AnswerDelta, Event
from kbagent.agent.evidence import Scored, numbers_in
from kbagent.agent.grounding import Grounding, closest_sources, doc_name, quote
from kbagent.agent.state import RunState

if TYPE_CHECKING:
    from kbagent.agent.loop import Agent

EVIDENCE_UNITS = 5  # source sentences the model is shown


def _say(s: RunState, text: str, role: str, cited: list[int] | None = None) -> Event:
    sent: ProcessedSentence = s.processor.emit(text, role, cited)
    return AnswerDelta(sent.text, sent.supported)


def _g(s: RunState) -> Grounding:
    g = s.processor.grounding
    assert g is not None
    return g


def abstain(s: RunState, evidence: list[Scored], what: str = "") -> Iterator[Event]:
    """Say the knowledge base does not say it, and show the closest sources."""
    s.abstained = True
    subject = f" {what}" if what else ""
    yield _say(s, f"The knowledge base does not say{subject}: none of the sources found "
                  "answers this question. ", "notice")
    near = closest_sources(s.ledger, evidence)
    if near:
        listed = "; ".join(f"{where} [{n}]" for n, where in near)
        yield _say(s, f"Closest sources: {listed}.", "notice", [n for n, _ in near])


def grounded_final(agent: Agent, s: RunState, step: int, rag: bool
                   ) -> Generator[Event, None, bool]:
    """The grounded final turn (steps numbered from ``step``). Ends without the
    ``Final`` event (the caller finishes the run); True if the run already ended (the
    model failed or the user cancelled)."""
    g = _g(s)
    plan = calc_plan_of(s.question)
    parts = parts_of(s.question) if plan is None else []
    if plan is not None:
        done = yield from _calculation(agent, s, step, plan)
        if done:
            return False
        step = len(s.steps) + 1
    elif len(parts) > 1:
        cites: list[list[int]] = []
        for part in parts:
            found = yield from agent.search_step(s, step, part.query,
                                                 f"I will search for: {part.question}")
            cites.append(found)
            step += 1
        answered = 0
        for part, prefer in zip(parts, cites, strict=True):
            ev = g.evidence(part.question, prefer=prefer)
            best = g.take(ev) if g.answerable(ev) else None
            if best is None:
                yield _say(s, f"{part.question} The knowledge base does not say. ", "notice")
                continue
            answered += 1
            lead = f"{part.label}: " if part.label and part.label not in part.question else (
                f"{part.question} " if part.label else "")
            c = s.ledger.get(best.unit.n)
            yield _say(s, lead + quote(best.unit, c.path if c else "") + " ", "quote")
        if not answered:
            s.processor.sentences.clear()
            yield from abstain(s, g.evidence())
        return False
    evidence = g.evidence(limit=EVIDENCE_UNITS)
    if not g.answerable(evidence):
        yield from abstain(s, evidence)
        return False
    ended = yield from agent.answer_turn(s, step, rag, _evidence_message(s, evidence))
    return ended


def _evidence_message(s: RunState, evidence: list[Scored]) -> str:
    by_chunk: dict[int, list[str]] = {}
    for e in evidence:
        by_chunk.setdefault(e.unit.n, []).append(e.unit.text)
    sources = []
    for n, texts in by_chunk.items():
        c = s.ledger.get(n)
        name = doc_name(c.path) if c else ""
        sources.append((n, f"({name}) " + " ".join(texts)))
    return prompts.sources_message(s.question, sources, s.notes)


def ensure_answer(s: RunState) -> Iterator[Event]:
    """After the model's answer: if none of its sentences survived the checks, quote
    the best source sentence (or abstain when nothing covers the question)."""
    if any(x.role in ("claim", "quote", "calculation") for x in s.processor.sentences):
        return
    g = _g(s)
    evidence = g.evidence()
    best = g.take(evidence) if g.answerable(evidence) else None
    if best is None:
        yield from abstain(s, evidence)
        return
    c = s.ledger.get(best.unit.n)
    yield _say(s, quote(best.unit, c.path if c else ""), "quote")


def _calculation(agent: Agent, s: RunState, step: int, plan: CalcPlan
                 ) -> Generator[Event, None, bool]:
    """Search each operand, read its value, compute; True if the answer is written."""
    g = _g(s)
    values: list[Value] = []
    for op in plan.operands:
        found = yield from agent.search_step(s, step, f"{op.metric} {op.item}",
                                             f"I need the {op.metric} for {op.item}.")
        step += 1
        cites = [c for c in s.ledger if c.n in found] + [c for c in s.ledger
                                                           if c.n not in found]
        units = [e.unit for e in g.evidence(f"{op.metric} {op.item}", limit=12,
                                            prefer=[c.n for c in cites[:len(found)]])]
        value = find_operand(op, units)
        if value is None:
            return False
        values.append(value)
    expr = expression(plan, values)
    result = yield from agent.calculate_step(s, step, expr)
    if result is None:
        return False
    shown = _result_text(plan, values, result)
    g.extra_numbers |= numbers_in(result) | numbers_in(expr) | numbers_in(shown)
    for op, v in zip(plan.operands, values, strict=True):
        g.used.add((v.unit.n, v.unit.position))
        yield _say(s, f"{op.metric.capitalize()} for {op.item}: {v.text} [{v.unit.n}]. ",
                   "quote")
    yield _say(s, f"{_op_name(plan)}: {expr.replace('*', '×')} = {shown} (calculated). ",
               "calculation")
    return True


def _op_name(plan: CalcPlan) -> str:
    a, b = plan.operands[0].item, plan.operands[-1].item
    return {"pct_change": f"Change from {a} to {b}",
            "pp_change": f"Change from {a} to {b}, in percentage points",
            "difference": f"Difference between {a} and {b}",
            "sum": f"Total for {', '.join(o.item for o in plan.operands)}"}[plan.op]


def _result_text(plan: CalcPlan, values: list[Value], result: str) -> str:
    try:
        number = float(result.replace(",", ""))
    except ValueError:
        return result
    if plan.op == "pct_change":
        return f"{number:.1f}%"
    if plan.op == "pp_change":
        return f"{abs(number):.1f} percentage points"
    text = format_number(round(number, 2))
    first = values[0].text
    prefix = first[0] if first[:1] in "$€£" else ""
    suffix = first.rstrip(")")[-1] if first.rstrip(")")[-1:] in "MKB%" else ""
    return f"{prefix}{text}{suffix}"
