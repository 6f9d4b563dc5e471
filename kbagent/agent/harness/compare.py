"""Comparison questions of the multi-hop path (:mod:`kbagent.agent.harness.bridge`): which
gathered chunks are about each compared thing, and what the documents settle: an
order ("Who is older, A or B?", "Who was born first ...?") by the first date each
document gives, a nationality both share ("What nationality were A and B?"). Pure
functions over the question and the texts."""

from __future__ import annotations

import re

from kbagent.agent.answer.citations import Citation
from kbagent.agent.run.hops import covered, title_of

YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_MONTHS = ("january february march april may june july august september october november "
           "december").split()
_DATE = re.compile(
    r"\b(?:(?P<d1>\d{1,2})\s+(?P<m1>[A-Z][a-z]+)\s+(?P<y1>\d{4})|"
    r"(?P<m2>[A-Z][a-z]+)\s+(?P<d2>\d{1,2}),?\s+(?P<y2>\d{4})|(?P<y3>1[0-9]{3}|20[0-9]{2}))\b")
_EARLIER = re.compile(r"\b(?:older|oldest|first|earlier|earliest|before|sooner)\b", re.I)
_LATER = re.compile(r"\b(?:younger|youngest|later|latest|more recent(?:ly)?|most recent(?:ly)?|"
                    r"newer|newest|last)\b", re.I)
_NATIONALITY = re.compile(r"\bnationalit(?:y|ies)\b", re.I)
NATIONS = frozenset(
    "american british english french german italian spanish canadian australian irish "
    "scottish welsh japanese chinese korean indian russian mexican dutch swedish danish "
    "norwegian finnish polish greek turkish brazilian argentine argentinian portuguese "
    "austrian swiss belgian egyptian israeli iranian pakistani nigerian south-african "
    "new-zealand filipino thai vietnamese indonesian ukrainian czech hungarian romanian "
    "serbian croatian cuban chilean colombian peruvian venezuelan".split())


def entity_chunks(entity: str, cites: list[Citation]) -> list[Citation]:
    """The gathered chunks about ``entity``: its own document (the title is the name),
    else chunks that name it."""
    own = [c for c in cites if covered(entity, [title_of(c.path, c.heading)])]
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
            year = YEAR.search(m.group())
            if year:
                return int(year.group()), 0, 0
            continue
        day = int(m.group("d1") or m.group("d2"))
        return int(m.group("y1") or m.group("y2")), _MONTHS.index(month) + 1, day
    return None


def nationality(text: str) -> str:
    """The first nationality word in ``text`` ("American"), "" if none."""
    for m in re.finditer(r"[A-Z][a-z]+", text):
        if m.group().lower() in NATIONS:
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
