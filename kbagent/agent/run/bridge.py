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
answers it (:func:`~kbagent.agent.run.final_turn.grounded_final`).
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field

from kbagent.agent.answer.citations import Citation, content_tokens
from kbagent.agent.answer.evidence import Scored, Unit, score_units, units_of
from kbagent.agent.answer.grounding import Grounding, doc_name, quote
from kbagent.agent.cancel import CancelToken
from kbagent.agent.events import AnswerDelta, Event
from kbagent.agent.run import prompts
from kbagent.agent.run.endings import cancelled
from kbagent.agent.run.final_turn import EVIDENCE_UNITS, AnswerTurn, abstain, grounded_final
from kbagent.agent.run.harness_steps import search_step
from kbagent.agent.run.hops import covered, names_in, title_of
from kbagent.agent.run.router import HopKind, pair
from kbagent.agent.run.search_memory import pending_followups
from kbagent.agent.run.state import AgentConfig, RunState

MAX_HOPS = 2  # follow-up searches after the question's own
SECOND_HOP_QUOTES = 2  # sentences quoted from the second hop's document
LINKED = 0.5  # a second-hop document the first hop names (or that names it) ranks higher
SEARCHED = 0.3  # ... and one a follow-up searched for by name

_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_MONTHS = ("january february march april may june july august september october november "
           "december").split()
_DATE = re.compile(
    r"\b(?:(?P<d1>\d{1,2})\s+(?P<m1>[A-Z][a-z]+)\s+(?P<y1>\d{4})|"
    r"(?P<m2>[A-Z][a-z]+)\s+(?P<d2>\d{1,2}),?\s+(?P<y2>\d{4})|(?P<y3>1[0-9]{3}|20[0-9]{2}))\b")
_EARLIER = re.compile(r"\b(?:older|oldest|first|earlier|earliest|before|sooner)\b", re.I)
_LATER = re.compile(r"\b(?:younger|youngest|later|latest|more recent(?:ly)?|most recent(?:ly)?|"
                    r"newer|newest|last)\b", re.I)
_NATIONALITY = re.compile(r"\bnationalit(?:y|ies)\b", re.I)
_NATIONS = frozenset(
    "american british english french german italian spanish canadian australian irish "
    "scottish welsh japanese chinese korean indian russian mexican dutch swedish danish "
    "norwegian finnish polish greek turkish brazilian argentine argentinian portuguese "
    "austrian swiss belgian egyptian israeli iranian pakistani nigerian south-african "
    "new-zealand filipino thai vietnamese indonesian ukrainian czech hungarian romanian "
    "serbian croatian cuban chilean colombian peruvian venezuelan".split())


@dataclass
class Hop:
    """One search of the path: its query and the citations it added to the run."""

    query: str
    new: list[int] = field(default_factory=list)


def hop_run(s: RunState, cfg: AgentConfig, cancel: CancelToken, kind: HopKind,
            answer_turn: AnswerTurn) -> Generator[Event, None, bool]:
    """Search the question and its follow-ups, then answer (the ``Final`` event is the
    caller's); True when the run already ended (a cancel, a failed model call)."""
    hops: list[Hop] = []
    step = 0
    query: str | None = s.question
    while query is not None:
        if cancel.is_set():
            yield from cancelled(s)
            return True
        step += 1
        before = {c.n for c in s.ledger}
        thought = (prompts.RAG_THOUGHT if not hops else
                   f'The question turns on a second document: I will search "{query}".')
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
        return (yield from _comparison(s, step, cfg.rag_top_k, answer_turn))
    if not second:
        return (yield from grounded_final(s, step, True, top_k=cfg.rag_top_k,
                                          answer_turn=answer_turn))
    return (yield from _bridge(s, hops))


# ------------------------------------------------------------------ bridge
def _g(s: RunState) -> Grounding:
    g = s.processor.grounding
    assert g is not None
    return g


def _say(s: RunState, text: str, role: str, cited: list[int] | None = None) -> Event:
    sent = s.processor.emit(text, role, cited)
    return AnswerDelta(sent.text, sent.supported)


def _quote(s: RunState, unit: Unit) -> Event:
    _g(s).used.add((unit.n, unit.position))
    c = s.ledger.get(unit.n)
    return _say(s, quote(unit, c.path if c else "") + " ", "quote")


def _title(c: Citation) -> str:
    return title_of(c.path, c.heading)


def _bare(title: str) -> str:
    return re.sub(r"\(.*?\)", "", title).strip()


def second_hop_units(question: str, hops: list[Hop], cites: list[Citation]) -> list[Scored]:
    """The sentences of the second hop's document, best first. The first hop is what the
    question names (documents whose title it holds; else the question's best hit); the
    second is the gathered document, not a first-hop one, that best answers the
    question (its best sentence's score, answer type included), with a bonus when it
    is linked to the first hop (one names the other's title) and when a follow-up
    searched for it (its title is in the follow-up's query)."""
    q = content_tokens(question)
    named = {c.n for c in cites if (t := content_tokens(_bare(_title(c)))) and t <= q}
    first = [c for c in cites if c.n in named] or [c for c in cites if c.n in hops[0].new[:1]]
    first_text = " ".join(c.text for c in first).casefold()
    first_titles = [_bare(_title(c)).casefold() for c in first]
    followed = {n: h.query for h in hops[1:] for n in h.new}
    best: tuple[float, list[Scored]] | None = None
    for c in cites:
        if c in first:
            continue
        title = _bare(_title(c))
        query = followed.get(c.n, "")
        scored = score_units(f"{question} {query}" if query else question, units_of(c))
        if not scored:
            continue
        linked = (len(title) > 2 and title.casefold() in first_text) or any(
            len(x) > 2 and x in c.text.casefold() for x in first_titles)
        searched = bool(query) and content_tokens(title) <= content_tokens(query)
        total = scored[0].score + LINKED * linked + SEARCHED * searched
        if best is None or total > best[0]:
            best = (total, scored)
    return best[1] if best else []


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
    second = second_hop_units(s.question, hops, cites)
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
    top = next((e.unit for e in evidence if e.unit.n not in {u.n for u in shown}), None)
    if top is not None:
        shown.append(top)
    for u in shown:
        yield _quote(s, u)
    return False


def _sources_message(s: RunState, units: list[Unit]) -> str:
    by_chunk: dict[int, list[str]] = {}
    for u in units:
        by_chunk.setdefault(u.n, []).append(u.text)
    sources = []
    for n, texts in by_chunk.items():
        c = s.ledger.get(n)
        sources.append((n, f"({doc_name(c.path) if c else ''}) " + " ".join(texts)))
    return prompts.sources_message(s.question, sources, s.notes)


# -------------------------------------------------------------- comparison
def entity_chunks(entity: str, cites: list[Citation]) -> list[Citation]:
    """The gathered chunks about ``entity``: its own document (the title is the name),
    else chunks that name it."""
    own = [c for c in cites if covered(entity, [_title(c)])]
    if own:
        return own
    low = entity.casefold()
    return [c for c in cites if low in c.text.casefold()]


def first_date(text: str) -> tuple[int, int, int] | None:
    """The first date in ``text`` as (year, month, day), a bare year as (year, 0, 0)."""
    for m in _DATE.finditer(text):
        if m.group("y3"):
            return int(m.group("y3")), 0, 0
        month = (m.group("m1") or m.group("m2") or "").lower()
        if month not in _MONTHS:
            year = _YEAR.search(m.group())
            if year:
                return int(year.group()), 0, 0
            continue
        day = int(m.group("d1") or m.group("d2"))
        return int(m.group("y1") or m.group("y2")), _MONTHS.index(month) + 1, day
    return None


def nationality(text: str) -> str:
    """The first nationality word in ``text`` ("American"), "" if none."""
    for m in re.finditer(r"[A-Z][a-z]+", text):
        if m.group().lower() in _NATIONS:
            return m.group()
    return ""


def decide(question: str, things: list[tuple[str, str]]) -> int | None:
    """Which of the compared ``things`` ((name, text of its document)) the question
    picks: by the first dates for "older/first/earlier" and "younger/later"; None
    when the texts do not settle it."""
    earlier, later = _EARLIER.search(question), _LATER.search(question)
    if bool(earlier) == bool(later):
        return None
    dates = [first_date(text) for _, text in things]
    if any(d is None for d in dates) or len(set(dates)) < len(dates):
        return None
    keyed = [(d, i) for i, d in enumerate(dates) if d is not None]
    return (min(keyed) if earlier else max(keyed))[1]


def shared_nationality(question: str, things: list[tuple[str, str]]) -> str:
    """The nationality both things' documents give, for "What nationality were A and
    B?" ("" when the question does not ask it or they differ)."""
    if not _NATIONALITY.search(question) or re.match(r"\s*(?:are|were|is|was)\b", question,
                                                      re.I):
        return ""
    found: set[str] = {nationality(text) for _, text in things}
    return found.pop() if len(found) == 1 else ""


def _comparison(s: RunState, step: int, top_k: int, answer_turn: AnswerTurn
                ) -> Generator[Event, None, bool]:
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
                                          answer_turn=answer_turn))
    pick = decide(s.question, things)
    common = shared_nationality(s.question, things)
    yield from _decision(s, names, best, pick, common)
    for u in best:
        yield _quote(s, u)
    if pick is not None or common:
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


__all__ = ["MAX_HOPS", "Hop", "bridge_unit", "decide", "entity_chunks", "first_date",
           "hop_run", "nationality", "second_hop_units", "shared_nationality"]
