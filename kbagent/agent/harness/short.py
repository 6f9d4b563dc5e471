"""The short answer: the fact a question asks for, in a few words, copied from a source.

For a question that asks for a fact (:attr:`Focus.wants_fact`), :func:`spans` lists the
spans of one source sentence that could be the answer, best first: the spans of the kind
asked for (a number with its unit, a duration, a date, a name, an error name, a path, a
version, a price, a percentage, the value a default is given, one of the options of a
choice), never a span the question itself contains, ranked by how close they sit to the
question's focus in the sentence. :func:`yes_no` answers a yes/no question from a
sentence. The answer turn (agent/harness/final_turn.py) puts the best span first, cited
("128 [1]"), before the quoted source sentence; ``AgentResult.short_answer`` has it.

Every span is a substring of the source sentence, so a short answer states nothing the
source does not (the model, when it picks, picks among these spans under a grammar:
:func:`span_grammar`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from kbagent.agent.answer.citations import content_tokens
from kbagent.agent.answer.focus import (
    MEASURE_UNIT,
    MONTH,
    SIZE_UNITS,
    TIME_UNITS,
    TYPE_PATTERNS,
    AnswerType,
    Focus,
    in_question,
)
from kbagent.agent.answer.phrasing import WITHOUT, is_there_class
from kbagent.agent.harness.defaults import (
    BY_DEFAULT_NUMBER,
    DEFAULT_STATED,
    NO_OPTIONS,
    asks_default,
    stated_defaults,
)
from kbagent.agent.harness.name_spans import (
    IDENTIFIER,
    NAME_PART,
    class_term,
    heading_name,
    is_name,
    part_of_name,
    trim_name,
)
from kbagent.agent.harness.span_rules import (
    DOTTED,
    ISO_DATE,
    NAMED_AS,
    SHOUTED,
    STANDARD,
    WORD,
    bound_bonus,
    cell_bonus,
    class_members,
    class_near,
    defined_subject,
    no_figure,
    number_span,
    option_flag,
    other_bound,
    path_kind,
    qualified,
    range_release,
    stems,
    stems_of,
)

MAX_WORDS = 8  # a short answer is at most this many words
# kinds of answer known by their form (a default's value must have it too)
_FORMED = (AnswerType.VERSION, AnswerType.DATE, AnswerType.PATH, AnswerType.ERROR)
QUALIFIED = 2 * DEFAULT_STATED + 0.5  # the value under the question's condition
TIME_FOR_COUNT = 1.0  # a time ("18000s") where a count of something else is asked for
_NUMERIC = (AnswerType.NUMBER, AnswerType.DURATION, AnswerType.PRICE, AnswerType.PERCENT,
            AnswerType.DEFAULT)
_NUMBER_UNIT = re.compile(
    rf"(?<![\w.])(?<![A-Za-z]-)(?<![A-Za-z]\d-)(?<!\w\()(?:[$€£]\s?)?\d[\d,]*(?:\.\d+)?(?:\s?(?:%|percent\b|{TIME_UNITS}\b|"
    rf"{SIZE_UNITS}\b|[a-zA-Z][a-zA-Z-]{{1,15}}\b(?:\s(?:a|per|each|every)\s[a-z]+\b)?))?",
    re.IGNORECASE)
_CALENDAR = re.compile(rf"{MONTH}(?!\w)|(?:Monday|Tuesday|Wednesday|Thursday|Friday|"
                       r"Saturday|Sunday)\b")
_QUALIFIER = re.compile(r"\b(more than|fewer than|less than|over|under|about|around|nearly|"
                        r"almost|approximately|up to|at least|at most)\s+$", re.I)
_DEMONYM = re.compile(r"[A-Z][a-z]+(?:-[A-Z][a-z]+)*(?:an|ese|ish|i|ch)$")
_OFF = re.compile(r"\b(?:disables?|disabled|disabling|turns? off|turned off|switch(?:es|ed)? off|"
                  r"deactivate[sd]?)\b", re.I)
_NEGATION = re.compile(r"\b(?:not|no|never|none|cannot|without|neither|nor)\b|n't\b", re.I)
# where a sentence's clauses part (a yes/no is read from one of them)
_CLAUSES = re.compile(r",?(?<!\s)\s+(?:but|although|though|whereas|however|except that)\s+|"
                      r";\s+|(?<!\s)\s+[-–—]\s+|(?<=[a-z0-9)][.!?])\s+(?=[A-Z])", re.I)
# an option's value after it: a number ("-s 256"), a key=value ("-p name=val")
_OPTION_ARG = re.compile(r"\s+(?:\d[\w.,]*|[\w.-]+=[\w.,-]+)(?=[\s,;)]|[.:]?$)")
_TRAIL = re.compile(r"[\s.,;:!?\"'”’)\]]+$")
_LEAD = re.compile(r"^[\s\"'“‘(\[]+")
# a span right after these is what the fact is not ("INTEGER affinity, not REAL")
_NOT_BEFORE = re.compile(r"\b(?:not|instead of|rather than|other than|different (?:than|from)|"
                         r"except|unlike)\s+(?:the\s+|an?\s+)?$", re.I)
# a definition entry whose sentence is about its term ("ort: This is the default ...")
_TERM_IS = re.compile(r"([^\s:][^:]{0,38}):\s+(?:This|It)\s+(?:is|was|becomes)\b")


@dataclass(frozen=True)
class Span:
    text: str
    start: int  # offset in the sentence
    score: float  # higher is better


def _clean(span: str) -> str:
    span = _LEAD.sub("", _TRAIL.sub("", span))
    span = re.sub(r"^(?:(?:is|are|was|were|set|to|be|of|at(?!\s+(?:least|most)\b)|as|the|an?)"
                  r"\s+)+", "", span, flags=re.I)  # ("at least 300s" keeps its "at")
    if span.count("(") > span.count(")"):
        span = span.split("(")[0].rstrip()
    return span.strip("`")


def _anchors(focus: Focus, sentence: str) -> list[int]:
    """Offsets in ``sentence`` of what the question asks about: its words other than the
    named subject first ("CEO" in "Who is the CEO of Kestrel?": the subject is in every
    sentence about it), else the named things, else any of its words."""
    named = set()
    for n in focus.named:
        if re.fullmatch(r"[A-Z]{2,5}s?", n):
            continue  # an acronym ("GPU", "TTL") is a common noun here, not the subject
        named |= content_tokens(n.replace("_", " ")) | content_tokens(n)
    for wanted in (focus.terms - named, focus.focus, focus.terms):
        out = [m.start() for m in WORD.finditer(sentence)
               if stems(m.group()) & wanted]
        if out:
            return out
    return []


def _named_at(focus: Focus, sentence: str) -> list[tuple[int, int]]:
    """(start, end) of the question's named things in ``sentence`` ("Q3", "Edge OS")."""
    low = sentence.lower()
    out = []
    for n in focus.named:
        for m in re.finditer(rf"(?<!\w){re.escape(n.lower())}(?!\w)", low):
            out.append((m.start(), m.end()))
    return out


def _raw_spans(focus: Focus, sentence: str, defined: list[tuple[str, int, float]]
               ) -> list[tuple[str, int, float]]:
    """(span, offset, bonus) of the kind asked for, before ranking; ``defined``: the
    subject the sentence defines (:func:`defined_subject`), for a name question."""
    t = focus.answer_type
    out: list[tuple[str, int, float]] = []
    asks = asks_default(focus, sentence)
    if t in _NUMERIC and t is not AnswerType.DEFAULT:
        for m in BY_DEFAULT_NUMBER.finditer(sentence):  # "by default up to 4 attempts"
            out.append((number_span(m.group("v"), focus), m.start("v"),
                        1.0 + DEFAULT_STATED * asks))
        if asks and (case := NO_OPTIONS.match(sentence)):  # "If run with no options, ...
            for m in _NUMBER_UNIT.finditer(sentence, case.end()):  # more than 30 days old"
                if not DOTTED.match(sentence, m.start()):
                    out.append((number_span(m.group(), focus), m.start(), 1.0 + DEFAULT_STATED))
    if t is AnswerType.DEFAULT or asks:
        out += stated_defaults(focus, sentence, asks)
        if t is AnswerType.DEFAULT:
            # a default is often a number: those spans count too, a little less
            for m in _NUMBER_UNIT.finditer(sentence):
                out.append((number_span(m.group(), focus), m.start(), 0.0))
            return out
        if t in _NUMERIC:  # a number (or a duration...) is asked for: the value must be one
            out = [(number_span(n.group(), focus), start + n.start(), bonus)  # "127.0.0.1
                   for text, start, bonus in out if (n := next((x for x in _NUMBER_UNIT.finditer(
                       text) if not DOTTED.match(text, x.start())), None))]  # 783": 783
        elif t in _FORMED:  # "since which release ... by default": a default that is no
            kind = TYPE_PATTERNS[t]  # version ("the default is >=TLSv1") is not the answer
            out = [(n.group(), start + n.start(), bonus)
                   for text, start, bonus in out if (n := kind.search(text))]
    if t in (AnswerType.NUMBER, AnswerType.DURATION, AnswerType.PRICE, AnswerType.PERCENT):
        kind = TYPE_PATTERNS[t]
        dates = [d.span() for d in ISO_DATE.finditer(sentence)]
        for m in _NUMBER_UNIT.finditer(sentence):
            text = m.group()
            if any(a <= m.start() < b for a, b in dates):
                continue  # "2022-02-22": a date, none of its numbers a figure
            if option_flag(sentence, m.start()) or STANDARD.search(sentence[:m.start()]) or (
                    DOTTED.match(sentence, m.start())):  # "2.4.10" is a version, not 2.4
                continue  # "-2: Use SHA-256 ...", "RFC 5077": a name's number, no figure
            if no_figure(focus, sentence, m.start(), m.end()):
                continue  # "12*60*60 seconds": a factor; "port 514": a port's name
            bonus = 0.0
            if t is not AnswerType.NUMBER and kind.search(text):
                bonus += 1.0
            elif t is AnswerType.DURATION:
                bonus -= 1.0  # a bare number is not a duration
            elif t is not AnswerType.NUMBER:
                bonus -= 0.5
            unit = re.escape(focus.unit.rstrip("s"))
            if unit and (more := re.match(rf"\s+{unit}\w*", sentence[m.end():], re.I)):
                text += more.group()  # "33 paid days": the unit after one more word
            span, at = number_span(text, focus), m.start()
            if unit and re.search(rf"\b{unit}", span, re.I):
                bonus += 1.0
            qual = _QUALIFIER.search(sentence[:at])
            if qual:  # "more than 70 countries", "up to 5 days"
                span, at = f"{qual.group(1)} {span}", qual.start(1)
            out.append((span, at, bonus))
        if t is AnswerType.PRICE:
            out += [(m.group(), m.start(), 1.2) for m in kind.finditer(sentence)]
        return out
    pattern = TYPE_PATTERNS.get(t)
    if t in (AnswerType.NAME, AnswerType.DEFAULT) and (term := _TERM_IS.match(sentence)):
        # "octopus: This is the default merge strategy ...": the term is what it says
        out.append((term.group(1), 0, 0.5))

    if t is AnswerType.CHOICE:
        low = sentence.lower()
        for o in focus.options:
            i = low.find(o.lower())
            if i >= 0:
                out.append((o, i, 0.0))
        return out
    if t is AnswerType.NAME:
        out += class_members(focus, sentence) + defined
        out += [(m.group("n"), m.start("n"), 0.5) for m in NAMED_AS.finditer(sentence)]
    if pattern is not None:
        year_only = t is AnswerType.DATE and re.search(
            r"\b(?:what|which|in what|since what)\s+year\b|\bborn in what\b", focus.question, re.I)
        for m in pattern.finditer(sentence):
            text = m.group()
            if t is AnswerType.NAME and m.start() == 0 and " " not in text.strip() and not (
                    IDENTIFIER.fullmatch(text.strip())):
                continue  # a sentence's first word is capitalised anyway (an identifier,
                # "PYTEST_THEME: Sets a pygment style ...", is a name wherever it stands)
            if t is AnswerType.NAME and _CALENDAR.match(text):
                continue  # "April 23, 1928" is a date, not a name
            if t is AnswerType.NAME and SHOUTED.fullmatch(text.strip().rstrip(".,;:")):
                continue  # "it is NOT installed", "each with a maximum size of 50 MB"
            if year_only:
                year = re.search(r"\b(?:1[5-9]|20)\d\d\b", text)
                if year is None:
                    continue
                text = year.group()
            if t is AnswerType.VERSION and not re.search(r"\d", text):
                continue  # "at least version 3.12.0": the word says one follows, no answer
            if t is AnswerType.PATH and not path_kind(focus, text):
                continue  # "-p" is no directory, "/var/spool" no option
            if t is AnswerType.PATH and text.startswith("-") and (
                    arg := _OPTION_ARG.match(sentence, m.end())):
                text += arg.group()  # "ulimit -s 256": the option with its value
            out.append((text, m.start(), 0.0))
    return out


def spans(focus: Focus, sentence: str, common: frozenset[str] = frozenset(),
          context: str = "") -> list[Span]:
    """Candidate short answers in ``sentence`` for the question, best first (empty when
    the question wants no fact, or the sentence holds none of the kind asked for).
    ``common``: names every cited document uses (:func:`common_names`), ranked down;
    ``context``: the unit's heading words (a person's full name in a "who is who")."""
    if not focus.wants_fact or focus.answer_type is AnswerType.YESNO:
        return []
    anchors = _anchors(focus, sentence)
    named = _named_at(focus, sentence)
    t = focus.answer_type
    q = focus.question.lower()
    seen: set[str] = set()
    out: list[Span] = []
    qwords = content_tokens(focus.question)
    after = qualified(focus.question, sentence)
    off_bound = other_bound(focus, sentence) if t in _NUMERIC else 0.0
    # "How many errors will it put up with?" counts errors: a time ("18000s") is no count
    counted = t is AnswerType.NUMBER and bool(focus.unit) and not MEASURE_UNIT.fullmatch(
        focus.unit)
    subject = (defined_subject(focus, sentence) + class_term(focus, sentence, context)
               + heading_name(focus, sentence, context) if t is AnswerType.NAME else [])
    defined = {x for x, _, _ in subject}
    for raw, start, bonus in _raw_spans(focus, sentence, subject):
        text = _clean(raw)
        quoted = raw[:1] in "\"“"
        if quoted and _GLOSS.search(sentence[max(0, start - 30):start]):
            continue  # "Leo Eric Varadkar ( ; Irish: "Leo de Varad" ; born ...)": a gloss
        term = raw in defined or (start == 0 and _TERM_IS.match(sentence) is not None)
        if t is AnswerType.NAME and not term and not is_name(raw, sentence, start):
            continue
        if t is AnswerType.NAME and not quoted and raw not in defined:  # a quoted literal,
            # a defined subject ("Tromeo and Juliet is a film") are copied whole
            text, bonus = trim_name(text, qwords, bonus)
        words = text.split()
        if not text or len(words) > MAX_WORDS or not re.search(r"\w", text):
            continue
        if t is not AnswerType.CHOICE and in_question(text, focus.question):
            continue
        lead_number = re.match(r"(?:[a-z]+ )*[$€£]?\s?(\d[\d,.]*\d|\d)", text)  # "around 90"
        if t in _NUMERIC and lead_number and in_question(lead_number.group(1), focus.question):
            continue  # "2026 gross" for a question about 2026
        key = text.lower()
        if key in seen:
            continue
        seen.add(key)
        # closer to the focus is better; words before the span count a little more
        # ("X defaults to 10": the subject comes first)
        near = min((abs(start - a) + (0 if a <= start else 10) for a in anchors), default=200)
        score = bonus - near / 120.0 - 0.02 * len(words) + cell_bonus(focus, sentence, start) \
            + bound_bonus(focus, sentence, start) - off_bound
        if counted and TYPE_PATTERNS[AnswerType.DURATION].fullmatch(text):
            score -= TIME_FOR_COUNT
        end = start + len(raw)
        if t in _NUMERIC and re.search(r"(?:=|\btotal(?: of| is)?:?)\s*$", sentence[:start], re.I):
            score += 0.3  # "20 + 11 + 2 = 33 paid days": the result the sentence states
        if _NOT_BEFORE.search(sentence[max(0, start - 20):start]):
            score -= 0.6  # "INTEGER affinity, not REAL affinity": REAL is not the answer
        score -= range_release(focus, sentence, start + len(raw))  # "2.6 and earlier"
        if any(0 <= start - e <= 8 for e in after):
            # "(default: 300s; before Postfix 2.4: 1000s)" for "... before 2.4": the value
            # under the question's condition, over the value the source states first
            score += QUALIFIED
        # next to a thing the question names ("38.5% in Q3" for "in Q3")
        if any(0 <= s - end <= 12 or 0 <= start - e <= 12 for s, e in named):
            score += 0.3
        # "Maya Okafor (CEO)": a span labelled with what is asked about
        label = re.match(r"\s*\*{0,2}\s*\(([^()]{1,40})\)", sentence[end:])
        if label and stems_of(label.group(1)) & (focus.terms | focus.focus):
            score += 0.6
        if t in (AnswerType.NUMBER, AnswerType.DEFAULT) and re.fullmatch(
                r"(?:1[89]|20)\d\d", text):
            score -= 0.7  # a year is seldom a count
        if "%" in text and re.search(r"\b(?:rate|percent|percentage|share|ratio)\b", q):
            score += 0.5
        if t is AnswerType.NAME and _DEMONYM.fullmatch(text) and not re.search(
                r"national|countr|language|ethnic|origin", q):
            score -= 0.5  # "American", "Bangladeshi-British": an adjective, not a name
        if t is AnswerType.NAME and text.lower() in common:
            score -= 0.8  # "Apache" in the Apache manual: the folder's subject
        if t is AnswerType.NAME and class_near(focus, sentence, start, end):
            score += 0.5  # "MD5 hashing" for "which hash"
        if t is AnswerType.NAME and q.lstrip().startswith("who") and re.fullmatch(
                r"[A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’.-]+){1,3}", text):
            score += 0.4  # a person's name
        if t in _NUMERIC and label and re.search(r"\d", label.group(1)) and len(
                label.group(1).split()) <= 3 and not re.search(r"[*×]", label.group(1)):
            text = f"{text} ({label.group(1).strip()})"  # "3,600 seconds (1 hour)"
        out.append(Span(text, start, score))
    out.sort(key=lambda s: (-s.score, s.start))
    part = NAME_PART.search(q) if t is AnswerType.NAME else None
    return [Span(part_of_name(x.text, part.group(1)), x.start, x.score) for x in out] \
        if part else out


# a name in another language, in parentheses after the one the sentence uses
_GLOSS = re.compile(r"\([^()]{0,20}\b[A-Z][a-z]+:\s*$")


def yes_no(focus: Focus, sentence: str) -> str | None:
    """"Yes" or "No" for a yes/no question from one source sentence that covers it (a
    negation in the sentence that the question lacks, or the reverse, says "No");
    None when the question is not a yes/no question."""
    if focus.answer_type is not AnswerType.YESNO:
        # "Is there a function that ...?" against "... has no built-in function to ...":
        # no such thing, whatever names the sentence holds
        there = is_there_class(focus.question)
        if there and re.search(rf"\b(?:no|not\s+(?:a|an|any))\s+(?:[\w-]+\s+){{0,3}}"
                               rf"{re.escape(there)}s?\b", sentence, re.I):
            return "No"
        return None
    # the clause that says what is asked decides ("X is still supported on NFS, but
    # there is no promise ...": yes): the one sharing most of the question's words
    # unless another clause negates a thing asked that it lacks ("includes email support
    # but no SSO": no)
    clauses = [c for c in _CLAUSES.split(sentence) if c.strip()] or [sentence]
    said = max(clauses, key=lambda c: len(stems_of(c) & focus.terms))
    asked = stems_of(said) & focus.terms
    negated = _NEGATION.search(said) is not None or any(
        _NEGATION.search(c) and (stems_of(c) & focus.terms) - asked
        for c in clauses if c is not said)
    # "Recent releases disable checksum validation by default" for "Does it verify
    # checksums?": switched off is a no, unless the question asks whether it is off
    if _OFF.search(said) and not _OFF.search(focus.question):
        negated = not negated
    without = WITHOUT.search(focus.question)
    asked_negative = focus.negated or bool(
        without and stems_of(without.group(1)) & stems_of(said))
    return "No" if negated != asked_negative else "Yes"


def short_answer(focus: Focus, sentence: str, common: frozenset[str] = frozenset()
                 ) -> str | None:
    """The best short answer in ``sentence`` (None: none there)."""
    said = yes_no(focus, sentence)
    if said is not None:
        return said
    found = spans(focus, sentence, common)
    return found[0].text if found else None


def span_grammar(candidates: list[str]) -> str:
    """A GBNF grammar whose only sentences are ``candidates`` (the model picks one)."""
    alts = " | ".join(json.dumps(c) for c in candidates)
    return f"root ::= {alts}\n"
