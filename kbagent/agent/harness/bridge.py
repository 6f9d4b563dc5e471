"""The multi-hop path of ``--mode auto`` (grounded runs): bridge and comparison
questions (:func:`~kbagent.agent.run.router.multi_hop`) answered by the harness's own
searches, each a visible step, with no ReAct step of the model.

* **Searches.** The question first; then the follow-ups
  :mod:`~kbagent.agent.run.hops` proposes from the hits so far (a bridge: the name in
  the first-hop document that the question lacks, with the question's remaining
  words, "Shirley Temple government position held"; a comparison: each compared
  thing no hit's title names yet), at most :data:`MAX_HOPS`, within the run's step
  and time limits and its cancel token.
* **Bridge answer.** The answer leads with the *second hop's* fact: the sentence of
  the document a follow-up found (the bridge entity's own document first) that best
  answers the question's words the first hop did not, quoted and cited; then the
  first-hop sentence that names the bridge (why that document), then the sentence
  that best covers the whole question if it lies elsewhere. The model writes no
  free text here: on HotpotQA the bundled model's sentences added no fact the
  quotes lacked, and its turn was most of the time of a question (BENCHMARKS).
* **Comparison answer.** Each compared thing's best sentence, quoted; a question of
  order ("Who is older, A or B?", "Who was born first ...?") is decided by the first
  dates of their documents, and a question for a shared attribute ("What nationality
  were A and B?") by the nationality both documents give; the decision leads the
  answer and is the short answer ("Terry Richardson [2]"). Otherwise the model
  answers from the quoted sentences.

A question whose follow-ups find nothing new is answered as the one-search path
answers it (:func:`~kbagent.agent.harness.final_turn.grounded_final`).
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field

from kbagent.agent.answer.citations import Citation, content_tokens
from kbagent.agent.answer.evidence import Unit, score_units, units_of
from kbagent.agent.answer.focus import AnswerType, focus_of
from kbagent.agent.cancel import CancelToken
from kbagent.agent.events import Event
from kbagent.agent.harness.compare import (
    NATIONS,
    YEAR,
    decide,
    entity_chunks,
    shared_nationality,
)
from kbagent.agent.harness.final_turn import (
    EVIDENCE_UNITS,
    AnswerTurn,
    ShortPick,
    abstain,
    grounded_final,
)
from kbagent.agent.harness.grounding import doc_name, quote
from kbagent.agent.harness.grounding import grounding_of as _g
from kbagent.agent.harness.hop_answer import by_clause, head_answer
from kbagent.agent.harness.name_spans import name_part
from kbagent.agent.harness.second_hop import HopScored, first_hop, rank_second_hop
from kbagent.agent.harness.short import spans, yes_no
from kbagent.agent.harness.short_turn import picker
from kbagent.agent.llm.base import LLM
from kbagent.agent.run import prompts
from kbagent.agent.run.endings import cancelled
from kbagent.agent.run.gather import MAX_HOPS  # the model policy makes as many
from kbagent.agent.run.harness_steps import say as _say
from kbagent.agent.run.harness_steps import search_step
from kbagent.agent.run.hops import names_in
from kbagent.agent.run.router import HopKind, pair
from kbagent.agent.run.search_memory import pending_followups
from kbagent.agent.run.state import AgentConfig, RunState

SECOND_HOP_QUOTES = 2  # sentences quoted from the second hop's document

_YEAR_Q = re.compile(r"\b(?:what|which|in what|in which) year\b|\bwhat year\b", re.I)
_ASKS_NAME = re.compile(r"\b(?:what|which|who|whom)\b", re.I)
SHORT_FROM = 3  # quoted sentences looked at for the short answer
# an amount or a name is told apart from the others in its sentence by the question's
# words in its clause ("a population of 35,124 at the 2001 census"); a date by the event
# next to it ("born 7 October 1978"), which the spans' own ranking reads
_BY_CLAUSE = (AnswerType.NUMBER, AnswerType.PRICE, AnswerType.PERCENT, AnswerType.DURATION,
              AnswerType.NAME)


@dataclass
class Hop:
    """One search of the path: its query and the citations it added to the run."""

    query: str
    new: list[int] = field(default_factory=list)


def hop_run(s: RunState, cfg: AgentConfig, cancel: CancelToken, kind: HopKind,
            answer_turn: AnswerTurn, llm: LLM) -> Generator[Event, None, bool]:
    """Search the question and its follow-ups, then answer (the ``Final`` event is the
    caller's); True when the run already ended (a cancel, a failed model call). The
    short answer is stated as ``cfg.short_answer`` says (the model picks a span, or
    the harness's first span stands: :mod:`~kbagent.agent.harness.short_turn`)."""
    pick = picker(llm, cfg.short_answer, cancel)
    hops: list[Hop] = []
    step = 0
    query: str | None = s.query
    while query is not None:
        if cancel.is_set():
            yield from cancelled(s)
            return True
        step += 1
        before = {c.n for c in s.ledger}
        thought = (prompts.RAG_THOUGHT if not hops else
                   prompts.second_document_thought(query))
        out = yield from search_step(s, step, query, thought, cfg.rag_top_k)
        hops.append(Hop(query, [n for n in out.citations if n not in before]))
        pending = pending_followups(s)
        query = None
        if (pending and len(hops) <= MAX_HOPS and step + 1 < cfg.max_steps
                and s.clock.perf_counter() < s.deadline):
            query = pending[0]
    if cancel.is_set():
        yield from cancelled(s)
        return True
    step += 1
    second = [n for h in hops[1:] for n in h.new]
    if kind == "comparison":
        return (yield from _comparison(s, step, cfg.rag_top_k, answer_turn, pick))
    if not second:
        return (yield from grounded_final(s, step, True, top_k=cfg.rag_top_k,
                                          answer_turn=answer_turn, pick=pick))
    return (yield from _bridge(s, hops))


# ------------------------------------------------------------------ bridge
def _quote(s: RunState, unit: Unit) -> Event:
    _g(s).used.add((unit.n, unit.position))
    c = s.ledger.get(unit.n)
    return _say(s, quote(unit, c.path if c else "") + " ", "quote")


def second_hop_units(question: str, hops: list[Hop], cites: list[Citation],
                     units: dict[int, list[Unit]] | None = None) -> list[HopScored]:
    """The sentences of the second hop's document, best first. The first hop is what the
    question names (documents whose title it holds; else the question's best hit); the
    second is the gathered document, not a first-hop one, that best answers what the
    first hop leaves open, linked to it or searched for by a follow-up
    (:func:`~kbagent.agent.harness.second_hop.rank_second_hop`)."""
    first = first_hop(question, hops[0].new, cites)
    followed = {n: h.query for h in hops[1:] for n in h.new}
    ranked = rank_second_hop(question, followed, first, cites, units)
    return ranked[0] if ranked else []


def bridge_unit(hops: list[Hop], cites: list[Citation], first: set[int]) -> Unit | None:
    """The first-hop sentence that names the second hop's document (why it was
    searched): a unit of a first-hop chunk holding the follow-up's leading name."""
    if len(hops) < 2:
        return None
    names = names_in(hops[1].query)
    if not names:
        return None
    name = names[0][0].casefold()
    for c in cites:
        if c.n in first:
            for u in units_of(c):
                if name in u.text.casefold():
                    return u
    return None


def _bridge(s: RunState, hops: list[Hop]) -> Generator[Event, None, bool]:
    g = _g(s)
    evidence = g.evidence(limit=EVIDENCE_UNITS)
    reason = g.silent_reason(evidence)
    if reason is not None:
        yield from abstain(s, evidence, reason)
        return False
    cites = list(s.ledger)
    units = {c.n: units_of(c) for c in cites}
    second = second_hop_units(s.question, hops, cites, units)
    lead: list[Unit] = []
    for x in second:
        if len(lead) >= SECOND_HOP_QUOTES:
            break
        if lead and x.unit.n != lead[0].n:
            continue
        lead.append(x.unit)
    first = {n for n in hops[0].new}
    via = bridge_unit(hops, cites, first)
    shown = [*lead, *([via] if via else [])]
    # and the sentence that best covers the whole question, wherever it is (what the
    # one-search path leads with), when the second hop's document is not it
    top = next((e.unit for e in g.evidence(limit=EVIDENCE_UNITS, meaning=False)
                if e.unit.n not in {u.n for u in shown}), None)
    if top is not None:
        shown.append(top)
    # the harness's span: a model pick costs a question most of its time on the bundled
    # model under load, and the bridge path is there to answer without model steps
    firsts = {n: us[0] for n, us in units.items() if us}
    found = short_of(s.question, shown, firsts)
    if found is not None:
        short, unit = found
        s.short_answer = f"{short} [{unit.n}]"
        yield _say(s, f"{s.short_answer}. ", "quote", [unit.n])
    for u in shown:
        yield _quote(s, u)
    return False


def short_of(question: str, units: list[Unit], firsts: dict[int, Unit] | None = None
             ) -> tuple[str, Unit] | None:
    """The short answer, with the unit that states it: for a question that asks for a
    thing by its class ("What screenwriter ...", "what hedgehog"), the thing of that
    class any of ``units`` states (:func:`~kbagent.agent.harness.hop_answer.head_answer`;
    ``firsts``: each citation's first sentence); else the first of the first
    :data:`SHORT_FROM` units that holds one: a span of the kind the question asks for
    (:mod:`~kbagent.agent.harness.short`; an amount or a name whose own clause holds
    more of the question first), else, for a question that asks for a thing by name ("What
    government position ...", "Which tribe ..."), the name in the sentence the question
    does not give. "What year"/"which year" keeps the year of a date."""
    focus = focus_of(question)
    if focus.answer_type in (AnswerType.NAME, AnswerType.OTHER) and (
            found := head_answer(question, units, firsts or {})):
        return name_part(question, found[0]), found[1]
    for u in units[:SHORT_FROM]:
        # a possessive ("Hollywood's") qualifies the thing named after it
        ranked = spans(focus, u.text)
        if focus.answer_type in _BY_CLAUSE:
            ranked = by_clause(question, u.text, ranked)
        candidates = [x.text for x in ranked
                      if not x.text.endswith(("'s", "’s"))] if focus.wants_fact else []
        said = yes_no(focus, u.text) if focus.wants_fact else None
        short = said or (candidates[0] if candidates else "")
        if not short and focus.answer_type in (AnswerType.NAME, AnswerType.OTHER) and (
                _ASKS_NAME.search(question)):
            short = name_answer(question, u.text)
        if short:
            if _YEAR_Q.search(question) and (year := YEAR.search(short)):
                short = year.group()
            return name_part(question, short), u
    return None


def _sources_message(s: RunState, units: list[Unit]) -> str:
    by_chunk: dict[int, list[str]] = {}
    for u in units:
        by_chunk.setdefault(u.n, []).append(u.text)
    sources = []
    for n, texts in by_chunk.items():
        c = s.ledger.get(n)
        sources.append((n, f"({doc_name(c.path) if c else ''}) " + " ".join(texts)))
    return prompts.sources_message(s.question, sources, s.notes)


def name_answer(question: str, sentence: str) -> str:
    """A name in ``sentence`` that the question does not give, nearest the question's
    words in it ("Chief of Protocol", "YG Entertainment"): the short answer of a bridge
    question asking "what/which/who ..." for a thing by name; "" when none."""
    q = content_tokens(question)
    words = [m.group() for m in re.finditer(r"\w(?:[\w'’&/-]|\.(?=\w))*", sentence)]
    anchors = [i for i, w in enumerate(words) if content_tokens(w) & q]
    best: tuple[float, str] | None = None
    for name, pos in names_in(sentence):
        toks = content_tokens(name)
        if not toks or toks & q or name.split()[-1].lower() in NATIONS:
            continue
        distance = min((abs(pos - a) for a in anchors), default=20)
        score = distance + (0 if len(toks) > 1 else 2) + pos / 100
        if best is None or score < best[0]:
            best = (score, name)
    return best[1] if best else ""


# -------------------------------------------------------------- comparison
def _comparison(s: RunState, step: int, top_k: int, answer_turn: AnswerTurn,
                pick: ShortPick | None) -> Generator[Event, None, bool]:
    g = _g(s)
    names = pair(s.question)
    cites = list(s.ledger)
    things: list[tuple[str, str]] = []
    best: list[Unit] = []
    rest_words = " ".join(w for w in s.question.split()
                          if not content_tokens(w) & content_tokens(" ".join(names)))
    for name in names:
        chunks = entity_chunks(name, cites)
        things.append((name, " ".join(c.text for c in chunks)))
        units = [u for c in chunks for u in units_of(c)]
        scored = score_units(f"{name} {rest_words}", units)
        if scored:
            best.append(scored[0].unit)
    if len(best) < len(names) or not all(text for _, text in things):
        return (yield from grounded_final(s, step, True, top_k=top_k,
                                          answer_turn=answer_turn, pick=pick))
    chosen = decide(s.question, things)
    common = shared_nationality(s.question, things)
    yield from _decision(s, names, best, chosen, common)
    for u in best:
        yield _quote(s, u)
    if chosen is not None or common:
        return False
    evidence = g.evidence(limit=EVIDENCE_UNITS)
    return (yield from answer_turn(s, step, True, _sources_message(
        s, [*best, *[e.unit for e in evidence if e.unit not in best]][:EVIDENCE_UNITS])))


def _decision(s: RunState, names: list[str], best: list[Unit], pick: int | None,
              common: str) -> Iterator[Event]:
    """The decided answer first, as the short answer: the picked thing, or the shared
    nationality."""
    if pick is not None:
        n = best[pick].n
        s.short_answer = f"{names[pick]} [{n}]"
        yield _say(s, f"{names[pick]} [{n}]. ", "claim", [n])
    elif common:
        marks = "".join(f"[{n}]" for n in dict.fromkeys(u.n for u in best))
        s.short_answer = f"{common} {marks}"
        yield _say(s, f"{common} {marks}. ", "claim", [u.n for u in best])


__all__ = ["MAX_HOPS", "Hop", "bridge_unit", "hop_run", "name_answer", "second_hop_units",
           "short_of"]
