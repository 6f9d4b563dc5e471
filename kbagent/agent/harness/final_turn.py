"""The final-answer turn of a grounded run (``AgentConfig.grounded``, the default).

The harness carries what a small model cannot:

1. **Parts.** A multi-part question (:func:`~kbagent.agent.harness.decompose.parts_of`)
   gets one search per part, and the arithmetic a question asks for
   (:func:`~kbagent.agent.harness.decompose.calc_plan_of`) one search per operand. Each
   search is a visible step.
2. **Calculation.** When every operand is found in the sources, the harness calls
   the ``calculate`` tool (a visible step) and writes the answer
   (:mod:`~kbagent.agent.harness.calculation`): the result first, then the operands,
   quoted with their citations, then the computation.
3. **Part by part.** A multi-part question is answered one part at a time, each
   with the source sentence that answers it, quoted and cited, or "the
   knowledge base does not say" for a part nothing covers. When no part is covered,
   the question is judged whole (a split never makes it less answerable).
4. **Abstention.** When the evidence does not cover the question
   (:meth:`~kbagent.agent.harness.grounding.Grounding.answerable`), the answer says that
   the knowledge base does not say it and lists the closest sources; the model
   is not asked to invent one.
5. **Compact evidence.** Otherwise the model answers from the best sentences of
   the sources (not whole chunks), and every sentence it writes is checked and
   repaired by :class:`~kbagent.agent.harness.grounding.Grounding`. If nothing it wrote
   survives, the best source sentence is quoted instead.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import replace

from kbagent.agent.answer.evidence import Scored, meaning_cover, missing_facts, numbers_in, units_of
from kbagent.agent.answer.focus import AnswerType, Focus, focus_of
from kbagent.agent.answer.sentences import cited_numbers
from kbagent.agent.answer.units import Unit
from kbagent.agent.events import Event
from kbagent.agent.harness.calculation import OPERAND_TOP_K, calculation, result_lead
from kbagent.agent.harness.decompose import (
    Operand,
    Part,
    calc_plan_of,
    find_operand,
    metric_of,
    parts_of,
)
from kbagent.agent.harness.grounding import EVIDENCE_UNITS as EVIDENCE_UNITS  # re-exported
from kbagent.agent.harness.grounding import closest_sources, doc_name, quote
from kbagent.agent.harness.grounding import grounding_of as _g
from kbagent.agent.harness.short import short_answer, spans, yes_no
from kbagent.agent.harness.span_rules import cited_common_names
from kbagent.agent.harness.totals import total_of, wants_total
from kbagent.agent.harness.unit_links import description_of, entry_of, led_item
from kbagent.agent.run import prompts
from kbagent.agent.run.harness_steps import calculate_step, search_step
from kbagent.agent.run.harness_steps import say as _say
from kbagent.agent.run.state import AnswerTurn as AnswerTurn  # re-exported
from kbagent.agent.run.state import RunState

# The model's short answer (kbagent/agent/harness/short_turn.py): from the question's focus,
# the answer sentence, the harness's candidate spans and the best evidence; None: the
# harness's first span stands
ShortPick = Callable[[RunState, Focus, str, list[str], str], "str | None"]
# (run, evidence) -> the evidence re-ordered by the model's judgment (judge.judge)
Rejudge = Callable[[RunState, list[Scored]], list[Scored]]

PART_COVERAGE = 0.4  # a later part's query carries the subject's words too: less to match
SHORT_FROM = 3  # units looked at for a short answer
TOTAL_UNITS = 15  # best units a total's two figures are looked for in
YESNO_COVERAGE = 0.6  # the unit's question coverage a yes/no short answer needs
YESNO_SIMILARITY = 0.55  # or a third of it, in a unit this close in meaning
UNIT_WEIGHT = 2.0  # a unit's evidence score against its span's (short.spans) score
# a short answer comes from a unit covering at least this share of what the best covers
# (a unit sharing one heavy word, "Default: 8 MB", must not outbid the question's topic)
SHORT_COVERAGE = 0.5


def abstain(s: RunState, evidence: list[Scored], reason: str = "") -> Iterator[Event]:
    """Say the knowledge base does not say it (and why, when known), and show the
    closest sources."""
    s.abstained = True
    why = reason or "none of the sources found answers this question"
    yield _say(s, f"The knowledge base does not say: {why}. ", "notice")
    yield from _closest(s, evidence)


def _closest(s: RunState, evidence: list[Scored]) -> Iterator[Event]:
    near = closest_sources(s.ledger, evidence)
    if near:
        listed = "; ".join(f"{where} [{n}]" for n, where in near)
        yield _say(s, f"Closest sources: {listed}.", "notice", [n for n, _ in near])


def decomposable(question: str) -> bool:
    """Will the grounded final turn take ``question`` apart (parts or arithmetic)?"""
    return (calc_plan_of(question) is not None or wants_total(question)
            or len(parts_of(question)) > 1)


def grounded_final(s: RunState, step: int, rag: bool, *, top_k: int,
                   answer_turn: AnswerTurn, pick: ShortPick | None = None,
                   rejudge: Rejudge | None = None) -> Generator[Event, None, bool]:
    """The grounded final turn (steps numbered from ``step``). Ends without the
    ``Final`` event (the caller finishes the run); True if the run already ended (the
    model failed or the user cancelled)."""
    g = _g(s)
    plan = calc_plan_of(s.question)
    parts = parts_of(s.question) if plan is None else []
    if plan is not None:
        done = yield from calculation(s, step, plan)
        if done:
            return False
        step = len(s.steps) + 1
    elif wants_total(s.question):
        done = yield from _total(s, step)
        if done:
            return False
        step = len(s.steps) + 1
    if plan is None and len(parts) > 1:
        cites: list[list[int]] = []
        for part in parts:
            out = yield from search_step(s, step, part.query,
                                         f"I will search for: {part.question}",
                                         top_k)
            found = out.citations
            cites.append(found)
            step += 1
        said: list[str | None] = []
        clause_fact = False  # a part asked as a clause has a short answer
        for part, prefer in zip(parts, cites, strict=True):
            before = s.short_answer
            said.append(_part_answer(s, part, prefer))
            clause_fact |= not part.item and s.short_answer != before
        # (with no part answered on its own the question may still be, as a whole: "Do
        # small lines get compressed, or is there a size below which ...? How big is
        # that?" asks one fact, split in two; it is judged like any other below)
        if any(x is not None for x in said):
            yield from _parts_said(s, parts, said, clause_fact)
            return False
    evidence = g.evidence(limit=EVIDENCE_UNITS)
    # a calculation whose operands were not all found is not evidence that the KB is
    # silent: each operand may be there in words the reader did not match
    # (a unit asked of one figure is a plain question once no conversion is needed)
    reason = g.silent_reason(evidence) if plan is None or plan.op == "convert" else None
    if reason is not None:
        yield from abstain(s, evidence, reason)
        return False
    if rejudge is not None:  # the model reads the best units (kbagent/agent/harness/judge.py)
        evidence = rejudge(s, evidence)
    # the fact leads: in a few words when the question asks for one ("128 [1]."), then
    # the source sentence that says it, quoted, then the model's answer (checked)
    lead, short = _answer_unit(s, evidence, pick)
    if lead is not None:
        c = s.ledger.get(lead.unit.n)
        if short:
            s.short_answer = f"{short} [{lead.unit.n}]"
            yield _say(s, f"{s.short_answer}. ", "quote", [lead.unit.n])
        near = units_of(c) if c is not None else []  # the lead's chunk, cut once
        # "This option limits ..." is quoted with the entry it describes (its name, type
        # and default): the row first
        entry = entry_of(lead.unit, near)
        if entry is not None and (entry.n, entry.position) not in g.used:
            g.used.add((entry.n, entry.position))
            yield _say(s, quote(entry, c.path if c else "") + " ", "quote")
        shown = lead.unit
        item = led_item(lead.unit, near)
        if item is not None and (item.n, item.position) not in g.used:
            # "... under [Service] add:" is quoted with the line it leads into
            g.used.add((item.n, item.position))
            shown = replace(lead.unit, text=f"{lead.unit.text} {item.text}")
        yield _say(s, quote(shown, c.path if c else "") + " ", "quote")
        # an entry's row ("type: integer; default: 10000") is quoted with what it is about
        about = description_of(lead.unit, near)
        if about is not None and (about.n, about.position) not in g.used:
            g.used.add((about.n, about.position))
            yield _say(s, quote(about, c.path if c else "") + " ", "quote")
    ended = yield from answer_turn(s, step, rag, _evidence_message(s, evidence))
    return ended


def _parts_said(s: RunState, parts: list[Part], said: list[str | None],
                clause_fact: bool) -> Iterator[Event]:
    """A multi-part answer: the facts first, in a few words each ("critbit [5]; 2.1
    [9]."), when a part asked as a clause has one; then each part with the source
    sentence that says it (a compared item's line already starts with its figure), or
    "does not say" for that part alone."""
    if clause_fact:
        yield _say(s, f"{s.short_answer}. ", "quote", cited_numbers(s.short_answer),
                   pieces=True)
    for part, sentence in zip(parts, said, strict=True):
        if sentence is None:
            yield _say(s, f"{_lead(part)}The knowledge base does not say. ", "notice")
        else:
            yield _say(s, sentence + " ", "quote")


def _total(s: RunState, step: int) -> Generator[Event, None, bool]:
    """A total of a count and an amount per each (:mod:`~kbagent.agent.harness.totals`):
    searched, computed with the calculator, written with both figures cited; True if
    the answer is written."""
    g = _g(s)
    yield from search_step(s, step, s.query, "I will look up the figures that make up "
                           "the total.", OPERAND_TOP_K)
    cut: dict[int, list[Unit]] = {}  # each chunk's units, cut once

    def section(e: Scored) -> str:  # the units of its chunk under the same heading
        if e.unit.n not in cut:
            c = s.ledger.get(e.unit.n)
            cut[e.unit.n] = units_of(c) if c else []
        return " ".join(u.text for u in cut[e.unit.n] if u.context.startswith(e.unit.context)
                        and u.position != e.unit.position)

    found = total_of(s.question, g.evidence(limit=TOTAL_UNITS), section)
    if found is None:
        return False
    result = yield from calculate_step(s, step + 1, found.expression)
    if result is None:
        return False
    shown = f"{result} {found.unit.name}" if found.unit is not None else result
    g.extra_numbers |= numbers_in(result) | numbers_in(found.expression) | numbers_in(shown)
    cited = list(dict.fromkeys([found.count.n, found.amount.n]))
    marks = "".join(f"[{n}]" for n in cited)
    s.short_answer = f"{shown} {marks}"
    names = [f.label or "it" for f in (found.count, found.amount)]
    yield result_lead(s, f"{shown} {marks}: {names[0]} ({found.count.text}) × {names[1]} "
                         f"({found.amount.text}). ", cited)
    for f in (found.count, found.amount):
        g.used.add((f.scored.unit.n, f.scored.unit.position))
        c = s.ledger.get(f.n)
        yield _say(s, quote(f.scored.unit, c.path if c else "") + " ", "quote")
    yield _say(s, f"Calculation: {found.expression.replace('*', '×')} = {result} "
                  "(calculated). ", "calculation")
    return True


def _answer_unit(s: RunState, evidence: list[Scored], pick: ShortPick | None
                 ) -> tuple[Scored | None, str | None]:
    """The unit the answer leads with, and the short answer in it: the best unit, or
    the next best (of the first ``SHORT_FROM``) that holds a fact of the kind the
    question asks for when the best one holds none. The model, when ``pick`` is given,
    picks the span (or writes the phrase, checked against the evidence). Marks the
    unit quoted."""
    g = _g(s)
    focus = focus_of(s.question)
    fresh = [e for e in evidence if (e.unit.n, e.unit.position) not in g.used]
    if not focus.wants_fact:
        return g.take(fresh), None
    if fresh and (said := _yes_no(focus, fresh[0])) is not None:
        return g.take(fresh[:1]), said
    # the best span of the first units, weighed with how well its unit answers
    best: tuple[float, int, list[str]] | None = None
    # (the names every cited document uses: the folder's subject, no answer)
    common = cited_common_names(s.ledger) if focus.answer_type is AnswerType.NAME else frozenset()
    top = fresh[0].unit if fresh else None
    for i, e in enumerate(fresh[:SHORT_FROM]):
        # the sentences right after the best one go on with its topic ("you must reduce
        # the maximum stack size. Reduce it by adding ulimit -s 256"): it need not repeat
        # the question's words
        follows = top is not None and e.unit.n == top.n and 0 < e.unit.position - top.position <= 2
        if e.coverage < SHORT_COVERAGE * fresh[0].coverage and not follows:
            continue
        ranked = spans(focus, e.unit.text, common, e.unit.context)
        score = ranked[0].score + UNIT_WEIGHT * (e.score - fresh[0].score) if ranked else 0.0
        if ranked and (best is None or score > best[0]):
            best = (score, i, [x.text for x in ranked])
    if best is None:
        return g.take(fresh), None
    e, found = fresh[best[1]], best[2]
    short = found[0]
    if pick is not None:
        text = " ".join(f"[{x.unit.n}] {x.unit.text}" for x in fresh[:SHORT_FROM])
        chosen = pick(s, focus, e.unit.text, found, text)
        if chosen and (chosen in found or not missing_facts(chosen, e.unit.text)):
            short = chosen
    return g.take([e]), short


def _yes_no(focus: Focus, best: Scored) -> str | None:
    """"Yes" or "No" from the best unit, only when it covers the question well: a
    sentence that shares a few of its words says nothing about yes or no."""
    if best.coverage < YESNO_COVERAGE and not (
            best.similarity >= YESNO_SIMILARITY and best.coverage >= YESNO_COVERAGE / 3):
        return None  # (a sentence close in meaning says it in its own words)
    return yes_no(focus, best.unit.text)


def _lead(part: Part) -> str:
    """How a part's answer starts: "Q2 gross margin: " for a compared item, the
    clause as a question for a clause ("How long did it last? ")."""
    text = part.question.strip()
    text = text[:1].upper() + text[1:]
    return f"{text.rstrip('?')}: " if part.item else f"{text} "


def _part_answer(s: RunState, part: Part, prefer: list[int]) -> str | None:
    """One part's answer: a compared item's figure read from the sources (the way an
    operand is), else the source sentence that best answers the part, quoted."""
    g = _g(s)
    if part.item:
        cites = [c for c in s.ledger if c.n in prefer] + [c for c in s.ledger
                                                            if c.n not in prefer]
        metric = metric_of(part.question, [part.item])
        value = find_operand(Operand(part.item, metric), [u for c in cites
                                                          for u in units_of(c)])
        if value is not None:  # two items are often two cells of one row: no "used"
            mark = f"{value.text} [{value.unit.n}]"
            s.short_answer = f"{s.short_answer}; {mark}" if s.short_answer else mark
            return f"{_lead(part)}{mark}."
    if g.unmentioned(part.question, part.query):
        return None  # "... for Apple Silicon Macs?": the sources never mention it
    # the part's own words count twice: the subject it inherits ("days PTO employees" in
    # "does it roll over days PTO employees get") is context, not what this part asks
    ev = g.evidence(f"{part.question} {part.query}", prefer=prefer)
    # (closeness of meaning counts as in the whole question's judgement: "the default up
    # to 2.4.53" / "In 2.4.53 and earlier, the default value was 0")
    best = g.take(ev) if ev and ev[0].coverage + meaning_cover(ev[0].similarity) >= \
        PART_COVERAGE else None
    if best is None:
        return None
    c = s.ledger.get(best.unit.n)
    focus = focus_of(part.question)
    short = _yes_no(focus, best) or (short_answer(focus, best.unit.text)
                                     if focus.answer_type is not AnswerType.YESNO else None)
    if short:
        mark = f"{short} [{best.unit.n}]"
        s.short_answer = f"{s.short_answer}; {mark}" if s.short_answer else mark
        return f"{_lead(part)}{mark}. {quote(best.unit, c.path if c else '')}"
    return _lead(part) + quote(best.unit, c.path if c else "")


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
    if s.abstained or any(x.role in ("claim", "quote", "calculation")
                          for x in s.processor.sentences):
        return
    g = _g(s)
    evidence = g.evidence()
    best = g.take(evidence) if g.answerable(evidence) else None
    if best is None:
        yield from abstain(s, evidence)
        return
    c = s.ledger.get(best.unit.n)
    yield _say(s, quote(best.unit, c.path if c else ""), "quote")
