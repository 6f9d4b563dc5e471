"""The second hop of a bridge question: which gathered document answers it, and its
sentences best first (:mod:`~kbagent.agent.harness.bridge` quotes them).

The first hop is what the question names or describes (the film "Kiss and Tell" for
"the woman who portrayed Corliss Archer in Kiss and Tell"); the second hop is the
document the first leads to (Shirley Temple), and it is what the answer must come from.
A document that restates the question ("a film starring Shirley Temple as Corliss
Archer") shares most of its words and holds no answer the first hop lacks, so the
documents are compared on the question's words *the first hop does not hold* (the
"government position" the first hop leaves open), weighted by their rarity across all
the candidate documents (one scale for all of them, unlike a ranking inside one
document), with the kind of answer asked for (a year, a number, a name) and the links
between the hops: the first hop names the document (a document that only names the first
hop is linked less: the first hop does not lead to it), or a follow-up searched for it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from kbagent.agent.answer.citations import Citation, content_tokens
from kbagent.agent.answer.evidence import Unit, kind_of_answer, units_of
from kbagent.agent.answer.focus import focus_of
from kbagent.agent.run.hops import bare, title_of

OPEN_WEIGHT = 1.0  # coverage of the question's words the first hop leaves open
ALL_WEIGHT = 0.3  # coverage of all the question's words
KIND = 0.3  # a sentence holding an answer of the kind asked for
KIND_MISS = 0.3  # ... taken from one that holds none
LINKED = 0.7  # the first hop names the document
BACK = 0.3  # ... a share of it when only the document names the first hop
SEARCHED = 0.5  # a follow-up searched for the document by name
LONG = 250  # characters from which a sentence covers words by chance


@dataclass(frozen=True)
class HopScored:
    unit: Unit
    score: float


def title(c: Citation) -> str:
    return title_of(c.path, c.heading)


def first_hop(question: str, first_new: list[int], cites: list[Citation]) -> list[Citation]:
    """The documents the question names (their title's words are all in it), else the
    question's best hit."""
    q = content_tokens(question)
    named = [c for c in cites if (t := content_tokens(bare(title(c)))) and t <= q]
    return named or [c for c in cites if c.n in first_new[:1]]


def plain(text: str) -> str:
    """``text`` as casefolded words between single spaces ("Boston, Lincolnshire" and
    "Boston_Lincolnshire" read alike)."""
    return " " + " ".join(re.findall(r"\w+", text.casefold().replace("_", " "))) + " "


def _names(text: str, name: str) -> bool:
    """Does ``text`` (:func:`plain`) hold the title ``name`` as words?"""
    low = plain(name)
    return len(low) > 4 and low in text


def bridge_of(question: str, query: str) -> str:
    """The name a follow-up searched for: its leading words that the question does not
    hold ("Boston" in "Boston According 2001 census population"), else the query."""
    q = content_tokens(question)
    words = query.split()
    lead = []
    for w in words:
        if content_tokens(w) and content_tokens(w) <= q:
            break
        lead.append(w)
    return " ".join(lead) or query


def searched_for(name: str, bridge: str) -> bool:
    """Is the document titled ``name`` what a follow-up for ``bridge`` looked for: the
    same name, or the name with a qualifier ("Boston Lincolnshire" for "Boston")?"""
    t, b = plain(name).split(), plain(bridge).split()
    return bool(b) and (t == b or (len(t) > len(b) and t[:len(b)] == b))


def rank_second_hop(question: str, followups: dict[int, str], first: list[Citation],
                    cites: list[Citation], units: dict[int, list[Unit]] | None = None
                    ) -> list[list[HopScored]]:
    """Each candidate document's sentences best first, the documents best first (by
    their best sentence's score and the links between the hops); ``units``: the
    citations' units when the caller has them (cutting a chunk into units is not free)."""
    f = focus_of(question)
    terms = {t for t in content_tokens(" ".join(f.terms)) if len(t) > 1}
    first_words = content_tokens(" ".join(f"{c.text} {title(c)}" for c in first))
    open_terms = {t for t in terms if t not in first_words}
    first_text = plain(" ".join(c.text for c in first))
    first_titles = [plain(bare(title(c))) for c in first]
    docs = [c for c in cites if c not in first]
    units = {c.n: units[c.n] if units and c.n in units else units_of(c) for c in docs}
    tokens = {id(u): content_tokens(u.text) for us in units.values() for u in us}
    n = len(tokens)
    df = {t: sum(1 for tok in tokens.values() if t in tok) for t in terms}
    weight = {t: math.log((n + 1) / (df[t] + 0.5)) + 1.0 for t in terms}
    total_all = sum(weight.values()) or 1.0
    total_open = sum(weight[t] for t in open_terms)
    out: list[tuple[float, list[HopScored]]] = []
    for c in docs:
        if not units[c.n]:
            continue
        name = bare(title(c))
        query = followups.get(c.n, "")
        named_by = _names(first_text, name)
        text = plain(c.text)
        names_back = any(_names(text, x) for x in first_titles)
        searched = bool(query) and searched_for(name, bridge_of(question, query))
        ctx = content_tokens(name)
        scored = []
        for u in units[c.n]:
            tok = tokens[id(u)]
            own_open = sum(weight[t] for t in open_terms if t in tok)
            own_open += sum(0.5 * weight[t] for t in open_terms if t not in tok and t in ctx)
            own_all = sum(weight[t] for t in terms if t in tok)
            s = ALL_WEIGHT * own_all / total_all
            if total_open:
                s += OPEN_WEIGHT * own_open / total_open
            kind = kind_of_answer(question, u.text)
            s += KIND if kind else (-KIND_MISS if kind is False else 0.0)
            s -= 0.1 * max(0, len(u.text) - LONG) / LONG
            scored.append(HopScored(u, s))
        scored.sort(key=lambda x: (-x.score, x.unit.position))
        link = LINKED if named_by else BACK * LINKED if names_back else 0.0
        out.append((scored[0].score + link + SEARCHED * searched, scored))
    out.sort(key=lambda x: -x[0])
    return [s for _, s in out]


__all__ = ["HopScored", "first_hop", "rank_second_hop"]
