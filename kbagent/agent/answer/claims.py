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
  computed: a cited figure times the calendar factor of a period the sentence names
  ("$360 a year" from "$30 a month"), or two figures the same sentence states and its
  sources bear out, combined by one sum, difference, product or ratio, or a percentage
  for a figure written as one ("$216 more per year ($360 vs $144)"). A computed figure
  is accepted with its derivation recorded; a year is never computed;
* every name, quoted or code term and identifier (``R_LIBS_USER``, ``--max-conn``,
  ``pkg.log``) in it is in a cited chunk, as whole words.

Nothing here changes a sentence. The policy feeds :func:`feedback` to the model once and
shows what still fails flagged (DESIGN.md, Answers).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from kbagent.agent.answer.citations import clean_text
from kbagent.agent.answer.evidence import facts_of, is_number, same_text
from kbagent.agent.answer.figures import (
    ANY_DIGITS,
    VERSION,
    Quantity,
    close,
    is_unit,
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
# factors a reader applies to a rate without a source stating them, each allowed when the
# sentence names its period: months, weeks and days of a year, days of a week, hours of
# a day, minutes of an hour
_PERIOD_FACTORS = ((12, ("year", "annual")), (52, ("year", "annual")),
                   (365, ("year", "annual")), (7, ("week",)), (24, ("day", "daily")),
                   (60, ("hour", "minute")))
_IDENTIFIER = re.compile(r"(?<![\w./-])(?:--?[a-z][\w-]+|[A-Za-z]\w*_\w+|"
                         r"[\w-]+\.(?:log|conf|cfg|ini|toml|ya?ml|json|txt|py|sh|md))(?![\w-])")
_ANY_MARKER = set(range(1, 10_000))  # every marker kept for the check to judge
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
    # names of the question it states that no document the asker may read mentions
    unmentioned: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


def _number_text(v: float) -> str:
    return f"{v:g}" if abs(v) < 1e15 else str(v)


def _periods(body: str) -> tuple[int, ...]:
    """The calendar factors the periods a sentence names allow ("a year": 12, 52, 365)."""
    low = body.lower()
    return tuple(f for f, words in _PERIOD_FACTORS if any(w in low for w in words))


def _scaled(operands: Iterable[float], factors: Sequence[int]) -> Iterable[tuple[float, str]]:
    """Every figure one of ``factors`` makes of ``operands``, with how: a month's rate
    over the year the sentence names. Only upwards (dividing would make every small
    number of a big one: "5" from a "60" in the chunk), never of 0 or 1 (that would make
    the factors themselves)."""
    for a in operands:
        if a in (0, 1):
            continue
        for f in factors:
            yield a * f, f"{_number_text(a)} x {f}"


def _combined(operands: Sequence[float], percent: bool = False
              ) -> Iterable[tuple[float, str]]:
    """Every figure one operation makes of two of ``operands``, with how; a share or a
    change in per cent only for a figure written as a percentage."""
    for a, b in itertools.permutations(operands, 2):
        sa, sb = _number_text(a), _number_text(b)
        yield a + b, f"{sa} + {sb}"
        yield a - b, f"{sa} - {sb}"
        yield a * b, f"{sa} x {sb}"
        if b:
            yield a / b, f"{sa} / {sb}"
            if percent:
                yield a / b * 100, f"{sa} / {sb} x 100"
                yield (a - b) / b * 100, f"({sa} - {sb}) / {sb} x 100"


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
        # any other run of digits (the 2 of "HTTP/2"), versions left out
        plain = VERSION.sub(" ", raw)
        self.digits = {v for d in ANY_DIGITS.findall(plain)
                       if math.isfinite(v := float(d.replace(",", "")))}

    def states(self, q: Quantity) -> bool:
        return (any(same_quantity(q, s) for s in self.quantities)
                or (not q.worded and not q.dimension and q.value in self.digits))


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


def _whole(word: str) -> re.Pattern[str]:
    """``word`` as a whole word or words, in any case (``R_LIBS`` is not in ``R_LIBS_USER``,
    nor ``core`` in ``core-dump``)."""
    return re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w-])", re.I)


def _holds(evidence: _Evidence, term: str) -> bool:
    """Is ``term`` in the evidence, as a whole word or words (``R_LIBS`` is not in
    ``R_LIBS_USER``)? A quotation abridged with ``;`` or an ellipsis (a table row with a
    column left out) is, when each of its parts is."""
    parts = [p.strip() for p in _ABRIDGED.split(same_text(term)) if p.strip(" .")]
    return bool(parts) and all(_whole(p).search(evidence.text) for p in parts)


def _terms(body: str) -> list[str]:
    """The names, quoted or code terms and identifiers a sentence claims (an identifier:
    a word with an underscore, an option with two dashes, a file name with its
    extension); units of measure are figures' units, not names."""
    names = [f for f in facts_of(body) if not is_number(f) and not is_unit(f)]
    return list(dict.fromkeys(names + _IDENTIFIER.findall(body)))


def check_answer(answer: str, sources: Mapping[int, str], question: str = "",
                 never: Collection[str] = ()) -> list[SentenceCheck]:
    """Check every sentence of ``answer`` against ``sources`` (citation number ->
    the chunk's text). A figure or name the question itself states may be restated in a
    sentence that also states something its cited chunks hold ("Since version 3, the
    cap is 120 seconds"), never stand alone as the sentence's claim; and a name of
    ``never``, the question's names that no document the asker may read contains, is
    not to be stated at all ("The default of core.fsyncTimeout is 1000 ms [1]", where
    nothing mentions core.fsyncTimeout, states what no source does).

    A computed figure must come from figures in view: one its cited chunks hold times
    the calendar factor of a period the sentence names, or two figures the same
    sentence states (each borne out) combined by one operation. So "it fell 3 points"
    alone is sent back, and "it fell 3 points, from 45% to 42%" passes."""
    given = _Evidence([question])
    out = []
    for raw in _sentences(answer):
        s = normalize_markers(raw.rstrip(), _ANY_MARKER) + raw[len(raw.rstrip()):]
        cites = tuple(dict.fromkeys(cited_numbers(s)))
        body = MARKER.sub(" ", s)
        figures = _claimed(body)
        placed = False
        if not cites and (n := _holder(body, figures, sources)):
            s, cites, placed = _placed(s, n), (n,), True
        out.append(replace(_check(s, cites, body, figures, sources, given, never),
                           placed=placed))
    return out


def _placed(sentence: str, n: int) -> str:
    """The sentence with ``[n]`` placed at its end, its trailing whitespace kept."""
    core = sentence.rstrip()
    return insert_marker(core, f"[{n}]") + sentence[len(core):]


def _sentences(answer: str) -> list[str]:
    """The answer's sentences, each with the whitespace that follows it (line breaks
    and lists are shown as written); a citation written after the full stop ("GPUs.
    [1]") belongs to the sentence before it."""
    out: list[str] = []
    for piece in sentence_spans(answer)[0]:
        if out and piece.strip() and not MARKER.sub("", piece).strip(" .;,\n\t"):
            core = out[-1].rstrip()
            out[-1] = core + " " + piece.strip() + out[-1][len(core):]
        elif piece.strip():
            out.append(piece)
        elif out:
            out[-1] += piece
    return out


def _holder(body: str, figures: list[Quantity], sources: Mapping[int, str]) -> int | None:
    """The first source (in the order given: best first) that states every figure and
    term of an uncited sentence that has some, as the harness places a marker the
    model left out (DESIGN.md, Citations); None when no one source holds them all."""
    terms = _terms(body)
    if not figures and not terms:
        return None
    for n, text in sources.items():
        evidence = _Evidence([text])
        if all(evidence.states(q) for q in figures) and all(_holds(evidence, t)
                                                          for t in terms):
            return n
    return None


def _check(sentence: str, cites: tuple[int, ...], body: str, figures: list[Quantity],
           sources: Mapping[int, str], given: _Evidence, never: Collection[str] = ()
           ) -> SentenceCheck:
    terms = _terms(body)
    if same_text(body).startswith(same_text(NOT_IN_KB).rstrip(".")) and all(
            given.states(q) for q in figures) and all(_holds(given, t) for t in terms):
        return SentenceCheck(sentence, cites)  # it says the KB does not say, and no more
    if not figures and not terms and not re.search(r"\w", body):
        return SentenceCheck(sentence, cites)  # punctuation, a code fence: states nothing
    problems: list[str] = []
    # a name of the question that no document mentions, stated here
    unknown = tuple(w for w in never if _whole(w).search(body))
    absent = [n for n in cites if n not in sources]
    problems += [f"it cites [{n}], which is not one of the sources" for n in absent]
    known = [n for n in cites if n in sources]
    where = ", ".join(f"[{n}]" for n in known)
    in_none = f"its cited sources {where}" if known else "the sources"
    problems += [f"\u201c{w}\u201d is in none of {in_none}: no document of the knowledge "
                 "base mentions it" for w in unknown]
    if not known:
        if not absent:
            problems.append("it cites no source")
        return SentenceCheck(sentence, cites, tuple(problems), unmentioned=unknown)
    evidence = _Evidence(sources[n] for n in known)
    held = [q for q in figures if evidence.states(q)]
    held_terms = [t for t in terms if _holds(evidence, t)]
    # the question's own figures and names ride along only beside a claim the sources hold
    ride = bool(held or held_terms)
    periods = _periods(body)
    scaled = {i: made for i, q in enumerate(figures) if q not in held
              and (made := _derive(q, _scaled((v.value for v in evidence.quantities),
                                              periods)))}
    operands = [q.value for q in held] + [figures[i].value for i in scaled]
    derived = list(scaled.values())
    for i, q in enumerate(figures):
        if q in held or i in scaled or (ride and given.states(q)):
            continue
        made = _derive(q, _combined([v for v in operands if v != q.value],
                                    percent=q.dimension == "percent"))
        if made is not None:
            derived.append(made)
        else:
            problems.append(f"the figure {q.text} is in none of its cited sources {where}")
    for term in terms:
        if term not in held_terms and not any(_whole(w).search(term) for w in unknown) \
                and not (ride and _holds(given, term)):
            problems.append(f"'{term}' is in none of its cited sources {where}")
    return SentenceCheck(sentence, cites, tuple(problems), tuple(derived),
                         unmentioned=unknown)


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
