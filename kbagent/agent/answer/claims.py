"""The check stage of the model-authored answer policy (issue 44).

The model writes the answer; this module reads it sentence by sentence and says, in
words meant for the model, what in each sentence its cited chunks do not bear out:

* a sentence that states something cites a source (the policy's abstention sentence,
  :data:`NOT_IN_KB`, needs none), and every number it cites is a source. Where the model
  cited nothing but one shown source states every figure and name of the sentence, the
  check places that source's marker at the sentence's end, as the harness always has
  (DESIGN.md, Citations); the sentence's words stay as written;
* every figure in it stands in a cited chunk as a reader compares figures: digits or
  number words ("five seconds" = "5 s"), any unit of the same dimension ("the 2-minute
  cap" = "120 seconds"), rounding to the precision written ("33%" for 33.33), or
  computed: a cited figure times one calendar factor ("$360 a year" from "$30 a
  month"), or two figures the answer states and its sources bear out, combined by one
  sum, difference, product, ratio or percentage ("$216 more per year ($360 vs $144)").
  A computed figure is accepted with its derivation recorded; a year is never computed;
* every name and quoted or code term in it is in a cited chunk.

Nothing here changes a sentence. The policy feeds :func:`feedback` to the model once and
shows what still fails flagged (DESIGN.md, Answers).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from kbagent.agent.answer.citations import clean_text
from kbagent.agent.answer.evidence import facts_of, is_number, same_text
from kbagent.agent.answer.figures import (
    ANY_DIGITS,
    VERSION,
    Quantity,
    close,
    quantities,
    same_quantity,
)
from kbagent.agent.answer.sentences import (
    MARKER,
    cited_numbers,
    insert_marker,
    normalize_markers,
    sentence_spans,
)

NOT_IN_KB = "The knowledge base does not say."
# factors a reader applies to a rate without a source stating them: months, weeks and
# days of a year, days of a week, hours of a day, minutes of an hour
FACTORS = (12, 52, 365, 7, 24, 60)
_ABRIDGED = re.compile(r";|\.\.\.|…|\[\.\.\.\]")  # where a quotation leaves text out


@dataclass(frozen=True)
class SentenceCheck:
    """One answer sentence as checked: the sources it cites, what its cited chunks do
    not bear out (``problems``, worded for the model), and each figure it computed
    (``derived``, as "216 = 360 - 144")."""

    text: str
    cites: tuple[int, ...]
    problems: tuple[str, ...] = ()
    derived: tuple[str, ...] = ()
    placed: bool = False  # the model cited nothing; the marker is the check's

    @property
    def ok(self) -> bool:
        return not self.problems


def _number_text(v: float) -> str:
    return f"{v:g}" if abs(v) < 1e15 else str(v)


def _scaled(operands: Iterable[float]) -> Iterable[tuple[float, str]]:
    """Every figure one calendar factor makes of ``operands``, with how: a month's rate
    over a year, a day's over a week. Only upwards (dividing would make every small
    number of a big one: "5" from a "60" in the chunk), never of 0 or 1 (that would make
    the factors themselves), never by 100 or 1000 (a "1" in the chunk made "room for 100
    entries" pass; units are converted by their names instead, :mod:`figures`)."""
    for a in operands:
        if a in (0, 1):
            continue
        for f in FACTORS:
            yield a * f, f"{_number_text(a)} x {f}"


def _combined(operands: Sequence[float]) -> Iterable[tuple[float, str]]:
    """Every figure one operation makes of two of ``operands``, with how."""
    for a, b in itertools.permutations(operands, 2):
        sa, sb = _number_text(a), _number_text(b)
        yield a + b, f"{sa} + {sb}"
        yield a - b, f"{sa} - {sb}"
        yield a * b, f"{sa} x {sb}"
        if b:
            yield a / b, f"{sa} / {sb}"
            yield a / b * 100, f"{sa} / {sb} x 100"
            yield (a - b) / b * 100, f"({sa} - {sb}) / {sb} x 100"
        for f in FACTORS[:3]:  # a rate's difference over a year: (30 - 12) x 12
            yield (a - b) * f, f"({sa} - {sb}) x {f}"


def _derive(q: Quantity, candidates: Iterable[tuple[float, str]]) -> str | None:
    if not q.decimals and q.value.is_integer() and 1900 <= q.value <= 2100:
        return None  # a year is stated, never computed
    for value, how in candidates:
        if close(q.value, q.decimals, value):
            return f"{q.text} = {how}"
    return None


class _Evidence:
    """The figures and text of a set of chunks, read once."""

    def __init__(self, texts: Iterable[str]) -> None:
        raw = "\n".join(texts)
        self.text = same_text(raw) + "\n" + same_text(clean_text(raw))
        self.quantities = quantities(raw) + quantities(clean_text(raw))
        self.digits = {float(d.replace(",", "")) for d in ANY_DIGITS.findall(raw)}

    def states(self, q: Quantity) -> bool:
        return (any(same_quantity(q, s) for s in self.quantities)
                or (not q.worded and q.value in self.digits))


def _claimed(body: str) -> list[Quantity]:
    """The figures a sentence claims: not a pronoun "one" ("one hour" is a figure), not
    part of a version."""
    versions = [m.span() for m in VERSION.finditer(body)]
    out = []
    for q in quantities(body):
        if q.worded and q.text.lower() == "one" and not q.dimension:
            continue
        if any(q.text in body[s:e] for s, e in versions):
            continue
        out.append(q)
    return out


def _holds(evidence: _Evidence, term: str) -> bool:
    """Is ``term`` in the evidence? A quotation abridged with ``;`` or an ellipsis (a
    table row with a column left out) is, when each of its parts is."""
    parts = [p for p in _ABRIDGED.split(same_text(term)) if p.strip(" .")]
    return bool(parts) and all(p.strip() in evidence.text for p in parts)


def _terms(body: str) -> list[str]:
    """The names and quoted or code terms a sentence claims."""
    return [f for f in facts_of(body) if not is_number(f)]


def check_answer(answer: str, sources: Mapping[int, str], question: str = ""
                 ) -> list[SentenceCheck]:
    """Check every sentence of ``answer`` against ``sources`` (citation number ->
    the chunk's text); figures the question itself states count as given.

    A computed figure must come from figures in view: one its cited chunks hold, scaled
    by a calendar factor, or two the answer states (itself borne out) combined
    by one operation. So "it fell 3 points" alone is sent back, and "it fell 3 points,
    from 45% to 42%" passes."""
    given = _Evidence([question])
    parsed: list[tuple[str, tuple[int, ...], str, _Evidence, list[Quantity]]] = []
    placed: set[int] = set()
    for s in _sentences(answer):
        s = normalize_markers(s, set(range(1, 10_000)))
        cites = tuple(dict.fromkeys(cited_numbers(s)))
        body = MARKER.sub(" ", s)
        figures = _claimed(body)
        if not cites and (n := _holder(body, figures, sources, given)):
            s, cites = insert_marker(s, f"[{n}]"), (n,)
            placed.add(len(parsed))
        evidence = _Evidence(sources[n] for n in cites if n in sources)
        parsed.append((s, cites, body, evidence, figures))
    # the figures the answer states that its sources bear out, as written or scaled
    stated: list[float] = []
    how: dict[tuple[int, int], str] = {}
    for i, (_, _, _, evidence, figures) in enumerate(parsed):
        for j, q in enumerate(figures):
            if evidence.states(q) or given.states(q):
                stated.append(q.value)
                continue
            scaled = _derive(q, _scaled(v.value for v in evidence.quantities))
            if scaled is not None:
                how[i, j] = scaled
                stated.append(q.value)
    pairs = list(dict.fromkeys(stated))[:24]
    return [replace(_check(i, p, how, pairs, sources, given), placed=i in placed)
            for i, p in enumerate(parsed)]


def _sentences(answer: str) -> list[str]:
    """The answer's sentences; a citation written after the full stop ("GPUs. [1]")
    belongs to the sentence before it."""
    out: list[str] = []
    for piece in (p.strip() for p in sentence_spans(answer)[0]):
        if out and piece and not MARKER.sub("", piece).strip(" .;,"):
            out[-1] += " " + piece
        elif piece:
            out.append(piece)
    return out


def _holder(body: str, figures: list[Quantity], sources: Mapping[int, str],
            given: _Evidence) -> int | None:
    """The first source (in the order given: best first) that states every figure and
    term of an uncited sentence that has some, as the harness places a marker the
    model left out (DESIGN.md, Citations); None when no one source holds them all."""
    terms = _terms(body)
    if not figures and not terms:
        return None
    for n, text in sources.items():
        evidence = _Evidence([text])
        if (all(evidence.states(q) or given.states(q) for q in figures)
                and all(_holds(evidence, t) or _holds(given, t) for t in terms)):
            return n
    return None


def _check(i: int, parsed: tuple[str, tuple[int, ...], str, _Evidence, list[Quantity]],
           how: Mapping[tuple[int, int], str], pairs: Sequence[float],
           sources: Mapping[int, str], given: _Evidence) -> SentenceCheck:
    sentence, cites, body, evidence, figures = parsed
    if same_text(body).startswith(same_text(NOT_IN_KB).rstrip(".")):
        return SentenceCheck(sentence, cites)
    problems: list[str] = []
    unknown = [n for n in cites if n not in sources]
    problems += [f"it cites [{n}], which is not one of the sources" for n in unknown]
    known = [n for n in cites if n in sources]
    if not known:
        if not unknown:
            problems.append("it cites no source")
        return SentenceCheck(sentence, cites, tuple(problems))
    where = ", ".join(f"[{n}]" for n in known)
    derived = []
    for j, q in enumerate(figures):
        if evidence.states(q) or given.states(q):
            continue
        made = how.get((i, j)) or _derive(q, _combined([v for v in pairs if v != q.value]))
        if made is not None:
            derived.append(made)
        else:
            problems.append(f"the figure {q.text} is in none of its cited sources {where}")
    for term in _terms(body):
        if not (_holds(evidence, term) or _holds(given, term)):
            problems.append(f"'{term}' is in none of its cited sources {where}")
    return SentenceCheck(sentence, cites, tuple(problems), tuple(derived))


def feedback(checks: Sequence[SentenceCheck]) -> str:
    """The one message that tells the model what failed and why, sentence by sentence;
    empty when every sentence passed."""
    failed = [c for c in checks if not c.ok]
    if not failed:
        return ""
    lines = ["These sentences of your answer are not borne out by the sources they cite:"]
    lines += [f'- "{c.text}": ' + "; ".join(c.problems) + "." for c in failed]
    lines.append("Write the whole answer again. Keep each sentence the sources support as "
                 "it is. For each sentence listed, cite the source that states it, state "
                 "the figures a computed number comes from, or leave the claim out. If "
                 f"the sources do not answer the question, write: {NOT_IN_KB}")
    return "\n".join(lines)
