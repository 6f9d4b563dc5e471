"""Evidence for grounded answers.

A chunk is cut into *units*: the sentences of its prose and the rows of its tables
(a row reads "header: value; ..." when the table has a header row). For a question,
each unit is scored by how much of the question it covers: the question's content
words weighted by their rarity among the units gathered (a word that no gathered unit
holds weighs most), with the chunk's path and heading counting at half weight (a
quarterly report's "q3" is in its file name, not in every sentence). The best units
are what the final-answer turn shows the model (compact evidence), what the harness
quotes when a model sentence cannot be kept, and the coverage of the best one decides
whether the knowledge base answers the question at all (abstention).

:func:`facts_of` lists what a sentence asserts that must be copied, not invented:
numbers, dates, capitalised names, quoted and code terms. :func:`missing_facts` says
which of them the cited text does not contain.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import numpy as np

from kbagent.agent.answer.citations import Citation, content_tokens
from kbagent.agent.answer.focus import QUESTION_WORDS as QUESTION_WORDS  # re-exported
from kbagent.agent.answer.focus import TYPE_PATTERNS, AnswerType, exact, focus_of
from kbagent.agent.answer.units import Unit as Unit
from kbagent.agent.answer.units import units_of as units_of


@dataclass(frozen=True)
class Scored:
    unit: Unit
    score: float  # question coverage, 0..1 (plus small preferences)
    coverage: float  # question coverage alone (focus words weigh more)
    similarity: float = 0.0  # cosine of the unit's meaning to the question's (embedder)
    typed: bool = True  # holds an answer of the kind asked for (a number, a name...)
    # coverage of the question's words that some gathered unit holds, and the weight
    # share of those none does (a paraphrase word, or what the sources do not cover)
    present: float = 0.0
    absent: float = 0.0


def question_terms(question: str) -> set[str]:
    return set(focus_of(question).terms)


# A "why" question is answered by a sentence that gives a cause (the explanation kind of
# answer has no value of its own for :meth:`Focus.type_match` to find).
_WHY = re.compile(r"\b(?:why|explain|cause[ds]?|reason)\b", re.I)
_BECAUSE = re.compile(r"\b(?:because|due to|driven by|caused|as a result|owing to|led to|"
                      r"reason|so that|in order to)\b", re.I)
# a unit stating a yes/no question's answer negates, limits or affirms it outright
_POLARITY = re.compile(r"\b(?:not|never|no|only|always|cannot|can't|won't|doesn't|don't|isn't|"
                       r"aren't|unless|except|must|may|can|yes)\b|n't\b", re.I)


def kind_of_answer(question: str, text: str) -> bool | None:
    """Does ``text`` hold the kind of answer ``question`` asks for? None when any text
    may (an explanation without a cause word, a yes/no without a polarity word)."""
    f = focus_of(question)
    t = f.answer_type
    if t is AnswerType.OTHER:
        return True if _WHY.search(question) and _BECAUSE.search(text) else None
    if t is AnswerType.YESNO:
        return bool(_POLARITY.search(text)) or None
    if t is AnswerType.DURATION and f.unit:  # "how many days": the unit may be in a heading
        return f.type_match(text) or bool(TYPE_PATTERNS[AnswerType.NUMBER].search(text))
    return f.type_match(text)


# (texts) -> their sentence-embedder vectors (L2-normalised rows), or None when the KB
# cannot embed: the KB's own embedder, passed in by the loop
Embed = Callable[[list[str]], "np.ndarray | None"]
SEMANTIC_WEIGHT = 0.6  # how much a unit's meaning-closeness to the question adds
FOCUS_BOOST = 1.0  # a focus word (the thing asked about) weighs this much more
TYPE_WEIGHT = 0.5  # a unit of the kind of answer asked for, in rarest-word weights
# taken from a unit with no value of the kind asked for; a third of it where the kind
# is told by words more than by form (a name, a path, a default)
TYPE_MISS = 0.9
# only the units best by their words are embedded (the embedder is most of the ranking's
# time): a unit outside them shares too little with the question to lead
EMBED_TOP = 16
BOILERPLATE_CHUNKS = 3  # a unit repeated word for word in this many chunks is boilerplate
BOILERPLATE_PENALTY = 0.5
# a unit under an "Example" heading that does not say "default" sets a value of its own:
# no answer to what a default is
EXAMPLE_PENALTY = 0.25
_EXAMPLE = re.compile(r"\bExamples?\b")
VALUE_TYPES = frozenset({AnswerType.NUMBER, AnswerType.DURATION, AnswerType.DATE,
                         AnswerType.PRICE, AnswerType.PERCENT, AnswerType.VERSION})


SIMILARITY_COVER = 0.5  # what closeness of meaning adds to word coverage, above
MEANING_FLOOR = 0.3  # the cosine of sentences that only share a topic


def meaning_cover(similarity: float) -> float:
    """What a unit's closeness of meaning to a question adds to its word coverage when
    judging whether it covers the question (a paraphrase shares few words)."""
    return SIMILARITY_COVER * max(0.0, similarity - MEANING_FLOOR)


class SentenceVectors:
    """The sentence embedder's vectors of questions and units for one run: every text
    not embedded yet is embedded in one batched call, then kept (the final turn ranks
    the same units several times: the whole question, its parts, the repairs)."""

    def __init__(self, embed: Embed | None) -> None:
        self.embed = embed
        self.vectors: dict[str, np.ndarray] = {}
        self.calls = 0  # batched embedder calls made
        self.texts = 0  # texts embedded
        self.seconds = 0.0  # spent embedding
        self.failed = False  # the embedder failed once: words alone rank from then on

    def cosines(self, question: str, texts: list[str]) -> list[float] | None:
        if self.embed is None or self.failed:
            return None
        todo = [t for t in dict.fromkeys([question, *texts]) if t not in self.vectors]
        if todo:
            started = time.perf_counter()
            try:
                vecs = self.embed(todo)
            except Exception:  # an embedder failure must not cost the answer
                vecs = None
            self.seconds += time.perf_counter() - started
            self.calls += 1
            self.texts += len(todo)
            if vecs is None or len(vecs) != len(todo):
                self.failed = True
                return None
            self.vectors.update(zip(todo, vecs, strict=True))
        q = self.vectors[question]
        return [float(self.vectors[t] @ q) for t in texts]


def same_text(text: str) -> str:
    """``text`` as compared for "the same words": lower case, whitespace collapsed."""
    return " ".join(text.lower().split())


def _words(stems: Iterable[str]) -> set[str]:
    return {x for t in stems for x in content_tokens(t.replace("_", " "))}


def score_units(question: str, units: list[Unit], ranks: dict[int, int] | None = None,
                vectors: SentenceVectors | None = None) -> list[Scored]:
    """Units best first, by question coverage (rarity-weighted words, the words of the
    question's focus weighing more, plus the kind of answer asked for), closeness of
    meaning to the question (the sentence embedder: a paraphrase shares no word) and
    small preferences: an earlier retrieval rank, a shorter unit."""
    f = focus_of(question)
    # identifiers read as words, as in the units (memo_cache: "memo", "cache"); not the
    # s of "Kestrel's" (a CJK character is a word)
    terms = {t for t in _words(f.terms) if len(t) > 1 or not (t.isascii() and t.isalpha())}
    # a default is not what an example sets ('interval="600"' under "Examples")
    wants_default = "default" in terms
    if f.answer_type is AnswerType.DEFAULT and len(terms) > 1:
        # "default" says the kind of answer, which the kind's own weight counts (a
        # manual's "line_length_limit (2048)" states a default without the word)
        terms.discard("default")
    focus = _words(f.focus)
    named = [exact(n.lower()) for n in f.named if len(n) > 2]
    if not terms or not units:
        return []
    # identifiers read as words: MAX_DELAY_S holds "delay"
    tokens = [content_tokens(u.text.replace("_", " ")) for u in units]
    ctx_tokens = [content_tokens(u.context.replace("_", " ")) for u in units]
    n = len(units)
    df = {t: sum(1 for tok in tokens if t in tok) for t in terms}
    rarity = {t: math.log((n + 1) / (df[t] + 0.5)) + 1.0 for t in terms}
    idf = {t: w * (1.0 + FOCUS_BOOST * (t in focus)) for t, w in rarity.items()}
    kind_weight = 2 * TYPE_WEIGHT * max(rarity.values())
    # the kind of answer asked for adds to a unit that gives one, but a question is not
    # less covered for asking it ("Explain retries" is answered by what retries do)
    total = sum(idf.values())
    ctx_pool = set().union(*ctx_tokens)
    gone = sum(w for t, w in idf.items() if not df[t] and t not in ctx_pool)
    ranks = ranks or {}
    # a unit that three or more chunks repeat word for word is boilerplate (a page footer,
    # a licence line, a navigation bar), never the one that states a fact
    keys = [same_text(u.text) for u in units]
    chunks_of: dict[str, set[int]] = {}
    for u, key in zip(units, keys, strict=True):
        chunks_of.setdefault(key, set()).add(u.n)
    phrases = _phrases(f.question)
    lexical = []
    for u, tok, ctx, key in zip(units, tokens, ctx_tokens, keys, strict=True):
        own = sum(idf[t] for t in terms if t in tok)
        extra = sum(0.5 * idf[t] for t in terms if t not in tok and t in ctx)
        kind = kind_of_answer(question, u.text)
        low = u.text.lower()
        own += kind_weight * sum(1 for x in named if x.search(low))  # "memo_cache" verbatim
        raw = (own + extra + (kind_weight if kind else 0.0)) / total
        coverage = min(1.0, raw)
        present = (own + extra) / (total - gone) if total > gone else 0.0
        score = raw + 0.04 / (1 + ranks.get(u.n, 10))
        # the question's own phrasing, word for word ("merging more than one branch"),
        # tells apart entries that share all its words ("merging one branch")
        said = f" {' '.join(_PHRASE_WORD.findall(low))} "
        score += PHRASE_WEIGHT * min(PHRASE_CAP, sum(1 for x in phrases if f" {x} " in said))
        score -= 0.1 * max(0, len(u.text) - 200) / 200  # a long unit covers by chance
        if len(chunks_of[key]) >= BOILERPLATE_CHUNKS:
            score -= BOILERPLATE_PENALTY
        if wants_default and _EXAMPLE.search(f"{u.trail} {u.context}") and \
                "default" not in low:
            score -= EXAMPLE_PENALTY
        if kind is False:  # no value of the kind asked for: it cannot state the fact
            score -= TYPE_MISS if f.answer_type in VALUE_TYPES else TYPE_MISS / 3
        lexical.append(Scored(u, score, coverage, 0.0, kind is not False, present, gone / total))
    top = sorted(range(n), key=lambda i: -lexical[i].score)[:EMBED_TOP]
    sims = ((vectors.cosines(question, [units[i].meaning for i in top]) if vectors else None)
            or [0.0] * len(top))
    out = list(lexical)
    for i, sim in zip(top, sims, strict=True):
        out[i] = replace(lexical[i], score=lexical[i].score + SEMANTIC_WEIGHT * max(0.0, sim),
                         similarity=sim)
    out.sort(key=lambda s: (-s.score, s.unit.n, s.unit.position))
    return out


_PHRASE_WORD = re.compile(r"[a-z0-9]+")
PHRASE_WEIGHT = 0.15  # per three-word run of the question a unit says word for word
PHRASE_CAP = 3
_ARTICLES = frozenset({"the", "a", "an"})


def _phrases(question: str) -> set[str]:
    """The question's runs of three words with a content word among them, as a unit's
    words are compared (lower case, punctuation dropped), padded to match whole words.
    Not a run with an article: "the audit log" names the subject every sentence about it
    repeats; "cannot be tested", "string or blob" say what is asked of it."""
    words = _PHRASE_WORD.findall(question.lower())
    out = set()
    for i in range(len(words) - 2):
        run = words[i:i + 3]
        if content_tokens(" ".join(run)) and not _ARTICLES & set(run):
            out.add(" ".join(run))
    return out


def gather_units(citations: Iterable[Citation]) -> list[Unit]:
    return [u for c in citations for u in units_of(c)]


def best_evidence(question: str, citations: list[Citation], limit: int = 6,
                  per_chunk: int = 3, vectors: SentenceVectors | None = None
                  ) -> list[Scored]:
    """The ``limit`` best units for ``question`` (at most ``per_chunk`` from a chunk)."""
    ranks = {c.n: i for i, c in enumerate(citations)}
    picked: list[Scored] = []
    count: dict[int, int] = {}
    seen: set[str] = set()
    for s in score_units(question, gather_units(citations), ranks, vectors):
        key = same_text(s.unit.text)
        if count.get(s.unit.n, 0) >= per_chunk or key in seen:
            continue
        picked.append(s)
        seen.add(key)
        count[s.unit.n] = count.get(s.unit.n, 0) + 1
        if len(picked) >= limit:
            break
    return picked


# ------------------------------------------------------------------- facts
_MARKER = re.compile(r"\[\d+\]")
# a number standing alone (not the 3 of "Q3" or the 2 of "H2"), with its grouping commas,
# decimals and a trailing % sign; not the head of one written with a suffix ("$7,414K":
# its "$7" is no figure of its own, and the sources' "7,414" would never match it)
_NUMBER = re.compile(r"(?<![\w.])[$€£]?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?(?![\w])|"
                     r"(?<![\w.])[$€£]?\d+(?:\.\d+)?%?(?![\w]|[.,]\d)")
_ANY_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_QUOTED = re.compile(r"[\"“`']([^\"”`']{2,60})[\"”`']")
_NAME = re.compile(r"(?<![\w])([A-Z][a-zA-Z]+(?:[ -][A-Z][a-zA-Z]+)*)")
COMMON_CAPITALISED = frozenset(
    "The A An This That These Those It Its In On At For From With By To Of And Or But If "
    "When Where What Which Who Why How Yes No Not According Source Sources Answer Note "
    "However Also Each Every All Some Both Then There Here They We You I He She Our Their "
    "Your January February March April May June July August September October November "
    "December Monday Tuesday Wednesday Thursday Friday Saturday Sunday Q Based As After "
    "Before During Since Until While Because So Therefore Thus First Second Third Finally "
    "Overall In Total Per".split())


def _norm_number(tok: str) -> str:
    tok = tok.lstrip("$€£").rstrip("%").replace(",", "")
    if "." in tok:
        tok = tok.rstrip("0").rstrip(".")
    return tok or "0"


def numbers_in(text: str) -> set[str]:
    """Every number in ``text``, normalised (commas, currency, % and trailing zeros
    dropped), including those inside identifiers ("Q3", "8s")."""
    return {_norm_number(m.group()) for m in _ANY_NUMBER.finditer(text)}


def facts_of(sentence: str) -> list[str]:
    """What ``sentence`` asserts that must come from a source: standalone numbers,
    quoted or code terms, and capitalised names (not at the sentence start, not
    common words)."""
    plain = _MARKER.sub(" ", sentence)
    facts = [m.group().strip() for m in _NUMBER.finditer(plain)]
    facts += [m.group(1).strip() for m in _QUOTED.finditer(plain)]
    start = len(plain) - len(plain.lstrip())
    for m in _NAME.finditer(plain):
        words = re.split(r"[ -]", m.group(1))
        if m.start() == start:
            words = words[1:]  # a sentence's first word is capitalised anyway
        facts += [w for w in words if w not in COMMON_CAPITALISED and len(w) > 1]
    return list(dict.fromkeys(f for f in facts if f))


def is_number(fact: str) -> bool:
    """Is this fact (from :func:`facts_of`) a number, not a name or a quoted term?"""
    return bool(_NUMBER.fullmatch(fact))


def missing_facts(sentence: str, evidence: str, extra_numbers: set[str] | None = None
                  ) -> list[str]:
    """The facts of ``sentence`` that ``evidence`` (the cited text) does not contain;
    ``extra_numbers`` are numbers the harness computed (calculator results)."""
    have_numbers = numbers_in(evidence) | (extra_numbers or set())
    low = same_text(evidence)
    missing = []
    for f in facts_of(sentence):
        if _NUMBER.fullmatch(f):
            if _norm_number(f) not in have_numbers:
                missing.append(f)
        elif same_text(f) not in low:
            missing.append(f)
    return missing
