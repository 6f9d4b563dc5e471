"""Where a question's second question starts (:func:`clauses`, for
:func:`~kbagent.agent.harness.decompose.parts_of`): "..., and how long did it last?", "?
How ...", not a second predicate of a relative clause ("... that was inspired by ...
and was the first track on ...") nor a statement that says more about the question
("...? I mean the built-in limit when I have not configured anything.")."""

from __future__ import annotations

import re

from kbagent.agent.answer.phrasing import WH_WORD

_WH = r"(?:how|what|when|why|who|which|where|is|are|was|were|does|do|did|can|should)"
# "..., and over what time window ...": a preposition may open the next question
_CLAUSE_SPLIT = re.compile(rf",?\s+and\s+(?=(?:(?:over|in|for|at|from|to|by|with|on|under|"
                           rf"after|before|since|until|within|during)\s+)?{_WH}\b|explain\b|"
                           rf"describe\b)|\?\s+(?=\S)", re.IGNORECASE)


# "... this song that was inspired by words on a tombstone and was the first track on
# Back to Mono?": a second predicate of the relative clause (a copula or "has" with no
# subject of its own), not a second question ("and is it ...", "and does the cache ...")
_RELATIVE = re.compile(r"\b(?:who|that|which|whose|whom)\s+\w", re.IGNORECASE)
_SECOND_PREDICATE = re.compile(r"(?:was|were|is|are|has|had|have)\s+(?!(?:it|they|he|she|"
                               r"this|that|these|those|there|we|you|i)\b)\w", re.IGNORECASE)


# "What is the biggest message Exim will take in? I mean the built-in limit when I have
# not configured anything.": a statement after the question says more about it
_STATEMENT = re.compile(r"^[^?]*[.!]?\s*$")
_ASKS = re.compile(rf"^\s*(?:{_WH}|could|would|will|has|have|had|may|must|shall|tell|"
                   r"give|show|list|explain|describe)\b", re.IGNORECASE)


# "A cached page came with no expiry date and was last changed 5 days ago. With the
# default settings, how long ...?": a sentence before "and" that asks nothing (no
# question word, no asking verb first) states the case; "and was ..." goes on with it


# "... and was last changed": a second predicate of the statement, not a question (a
# question word after "and" asks one: "I need the default timeout and how can I raise it?")
_GOES_ON = re.compile(r"(?:is|are|was|were|does|do|did|can|could|should|has|have|had)\b",
                      re.IGNORECASE)
_BIDS = re.compile(r"^\s*(?:please\s+)?(?:compare|contrast|summari[sz]e|name|state|find|"
                   r"identify|calculate|compute|work out)\b", re.IGNORECASE)


def _states(before: str) -> bool:
    """Is the sentence that ``before`` ends with a statement (it asks nothing, and bids
    nothing: "Compare Q2 and Q3 ..." asks)?"""
    sentence = re.split(r"(?<=[.!?])\s+", before.strip())[-1]
    return not (WH_WORD.search(sentence) or _ASKS.match(sentence)
                or _BIDS.match(sentence))


def clauses(question: str) -> list[str]:
    """``question`` cut where a second question starts (not where a sentence that only
    says more about the first one does)."""
    out, start = [], 0
    for m in _CLAUSE_SPLIT.finditer(question):
        before, after = question[start:m.start()], question[m.end():]
        if "and" in m.group().lower() and _RELATIVE.search(before) and \
                _SECOND_PREDICATE.match(after):
            continue
        if "and" in m.group().lower() and _states(before) and _GOES_ON.match(after):
            continue
        rest = re.split(r"(?<=[?])\s+", after, maxsplit=1)[0]
        if "?" in m.group() and _STATEMENT.match(rest) and not _ASKS.match(rest):
            continue
        out.append(before)
        start = m.end()
    out.append(question[start:])
    return out


# "which switch ..., and which one ...?": the later clause's "one" is the first's noun
_WHICH_NOUN = re.compile(r"\b(?:which|what)\s+(?P<n>[a-z][\w-]+(?:\s+[a-z][\w-]+){0,2}?)\s+"
                         r"(?:does|do|did|is|are|was|were|can|could|will|would|should|has|"
                         r"have|makes?|gets?|sets?|runs?|turns?|skips?|controls?|decides?)\b",
                         re.IGNORECASE)
_WHICH_ONE = re.compile(r"^(?P<w>(?:and\s+)?(?:which|what))\s+one\b", re.IGNORECASE)
_NO_NOUN = frozenset("one ones kind sort type of".split())


def which_one(parts: list[str]) -> list[str]:
    """``parts`` (a question's clauses) with a later clause's "which one" naming the
    thing the first clause asks about: "which switch makes it run silently", "and which
    one skips the CRC check" -> "which switch skips the CRC check"."""
    noun = _WHICH_NOUN.search(parts[0]) if parts else None
    if noun is None or set(noun.group("n").lower().split()) & _NO_NOUN:
        return parts
    return parts[:1] + [_WHICH_ONE.sub(rf"\g<w> {noun.group('n')}", c) for c in parts[1:]]
