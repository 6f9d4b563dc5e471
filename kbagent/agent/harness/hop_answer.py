"""The short answer of a bridge question that asks for a thing by its class: "What
screenwriter ...", "voiced what hedgehog?", "Which country music star ...", "What is
the name of the fight song of ...". Such a question names the class of the answer (its
*head*: "screenwriter", "hedgehog", "fight song"), and a source states the answer next
to that class:

* **the document's own subject**: a paragraph that begins by defining its title thing
  as one of the class ("David Weissman is a screenwriter and director.", "Kansas Song
  is a fight song of ...") answers with that thing;
* **a name that carries the class**: "Sonic the Hedgehog" for "what hedgehog" (the
  class words the question writes in lower case are dropped from the name: "Sonic";
  a class the question capitalises is part of the name: "International Boxing Hall of
  Fame" for "what larger Hall of Fame");
* **a name in apposition**: "American country music artist Blake Shelton" for "which
  country music star".

A name the question itself gives is never the answer. Pure functions over the
question and source sentences; nothing here knows a document set.
"""

from __future__ import annotations

import re

from kbagent.agent.answer.citations import STOPWORDS, content_tokens
from kbagent.agent.answer.evidence import Unit
from kbagent.agent.answer.focus import in_question
from kbagent.agent.harness.short import Span
from kbagent.agent.run.hops import names_in

MAX_HEAD = 4  # words of a class ("country music star")
# "What is the name of the fight song ...", "What's the name of the fantasy film ..."
_NAME_OF = re.compile(r"\bwhat(?:'s|’s| is| was| are| were)\s+the\s+(?:name|title)\s+(?:of|for)\s+"
                      r"(?:the\s+|a\s+|an\s+)?(?P<h>[^?,]+)", re.I)
_WHAT_X = re.compile(r"\b(?:what|which)\s+(?P<h>[^?,]+)", re.I)
# words that end a class: verbs, and what follows the class in a question
_STOP = STOPWORDS | frozenset(
    "did does do co-wrote wrote voiced played starred starring featuring based located "
    "released known named called born".split())
_WORD = re.compile(r"\w(?:[\w'’&/-]|\.(?=\w))*|&")  # as hops.names_in counts words
_DEFINES = re.compile(r"\b(?:is|was|are|were)\s+(?:an?|the|one of the)\b", re.I)


def head_of(question: str) -> list[str]:
    """The words of the class a "what/which X" question asks for, as written ([] when
    it asks for none: "What year ...", "What is ...")."""
    m = _NAME_OF.search(question) or _WHAT_X.search(question)
    if m is None:
        return []
    words: list[str] = []
    found = re.findall(r"[\w'’-]+", m.group("h"))
    for i, w in enumerate(found):
        low = w.lower()
        if not words and not w[:1].islower():
            return []  # "which Bill Cosby ...": a clause, not a class
        joins = (low in ("of", "the", "and") and bool(words) and words[-1][:1].isupper()
                 and i + 1 < len(found) and found[i + 1][:1].isupper())  # "Hall of Fame"
        if (low in _STOP and not joins) or (words and low.endswith(("ing", "ed"))
                                             and len(low) > 5):
            break
        words.append(w)
        if len(words) >= MAX_HEAD:
            break
    return words


def _stems(words: list[str]) -> set[str]:
    return content_tokens(" ".join(w.replace("'s", "") for w in words))


def _defines(unit: Unit, noun: set[str]) -> bool:
    """Does ``unit`` (a paragraph's first sentence) define its subject as one of the
    class ("X is a 2008 American fantasy film")?"""
    m = _DEFINES.search(unit.text)
    return m is not None and bool(content_tokens(unit.text[m.end():m.end() + 120]) & noun)


def _trimmed(name: str, drop: set[str]) -> str:
    words = name.split()
    while words and (content_tokens(words[-1]) & drop or words[-1].lower() in STOPWORDS):
        words.pop()
    while words and (content_tokens(words[0]) & drop or words[0].lower() in STOPWORDS):
        words.pop(0)
    return " ".join(words)


def head_answer(question: str, units: list[Unit], firsts: dict[int, Unit]
                ) -> tuple[str, Unit] | None:
    """The thing of the class the question asks for, in the first of ``units`` that
    states one (``firsts``: each cited chunk's first sentence, by citation number), with
    the unit; None when the question names no class or no unit states one."""
    head = head_of(question)
    if not head:
        return None
    noun = _stems(head[-1:])  # the class noun itself ("star" of "country music star")
    words = _stems(head)
    lower = {s for w in head if w[:1].islower() for s in _stems([w])}
    for u in units:
        first = firsts.get(u.n)
        if first is not None and _defines(first, noun):
            names = [n for n, pos in names_in(first.text) if pos == 0]
            if names and not in_question(names[0], question):
                return names[0], first
        for name, _ in names_in(u.text):
            toks = content_tokens(name)
            if toks & noun:
                short = _trimmed(name, lower)
                if short and not in_question(short, question) and not (
                        content_tokens(short) <= content_tokens(question)):
                    return short, u
        text_words = [w.group() for w in _WORD.finditer(u.text)]
        for name, pos in names_in(u.text):
            # "American country music artist Blake Shelton"
            before = text_words[max(0, pos - 2):pos]
            if before and _stems(before) & words and not in_question(name, question) and not (
                    content_tokens(name) & content_tokens(question)):
                return name, u
    return None


CLAUSE = 0.3  # a span's score gains this for each question word in its own clause
NEAR = 80  # ... counted this many characters either side of the span at most
_CLAUSE_END = re.compile(r",(?!\d{3})|[;:()–—]|\b(?:while|whereas|but|and then|although)\b")


def by_clause(question: str, sentence: str, found: list[Span]) -> list[Span]:
    """``found`` (spans of ``sentence``) re-ranked by the question words in each span's
    own clause: "... a total population of 66,900, ... while the town itself had a
    population of 35,124 at the 2001 census" answers "population ... 2001 census" with
    the second number."""
    q = content_tokens(question)
    cuts = [0, *(m.start() for m in _CLAUSE_END.finditer(sentence)), len(sentence)]

    def clause(at: int) -> str:  # within NEAR characters of the span
        lo = max(max(c for c in cuts if c <= at), at - NEAR)
        hi = min(min((c for c in cuts if c > at), default=len(sentence)), at + NEAR)
        return sentence[lo:hi]

    ranked = [(x.score + CLAUSE * len(content_tokens(clause(x.start)) & q), x) for x in found]
    return [x for _, x in sorted(ranked, key=lambda p: (-p[0], p[1].start))]


__all__ = ["by_clause", "head_answer", "head_of"]
