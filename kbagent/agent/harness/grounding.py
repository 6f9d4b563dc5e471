"""Grounded answers: what the answer processor does with each model sentence when
``AgentConfig.grounded`` is on (the default), and when the harness abstains.

* A sentence keeps its place when every fact it states (numbers, names, quoted
  terms: :func:`~kbagent.agent.answer.evidence.facts_of`) is in the chunks it cites and
  its words are supported by them. Otherwise it is *repaired*: replaced by the
  source sentence (or table row) that best matches it and the question, quoted
  and cited, so a wrong figure gives way to the right one; or, when no source
  sentence matches, *removed*. A sentence that cites nothing is checked against
  everything the tools returned, and cited if a source carries it.
* :meth:`Grounding.answerable` decides, before any answer is written, whether
  the gathered evidence covers the question at all (coverage of the best unit,
  :mod:`~kbagent.agent.answer.evidence`); when it does not, the harness says that the
  knowledge base does not say it and shows the closest sources, instead of
  letting the model invent an answer.

Every repair is recorded (``AgentResult.repairs``), so the CLI and JSON say what
was done. Thresholds are calibrated on the sample questions (BENCHMARKS.md,
"Grounded answers").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from kbagent.agent.answer.citations import CitationLedger, content_tokens
from kbagent.agent.answer.evidence import (
    VALUE_TYPES,
    Scored,
    SentenceVectors,
    Unit,
    best_evidence,
    facts_of,
    is_number,
    meaning_cover,
    missing_facts,
    numbers_in,
    score_units,
    units_of,
)
from kbagent.agent.answer.focus import MEASURE_UNIT, asking_sentence, focus_of
from kbagent.agent.answer.named import is_code_term, named_things, plain_name
from kbagent.agent.answer.phrasing import tool_names
from kbagent.agent.answer.processor import SupportCheck
from kbagent.agent.answer.sentences import MARKER, ProcessedSentence, insert_marker
from kbagent.agent.harness.span_rules import own_release
from kbagent.agent.kinds import RepairAction
from kbagent.agent.records import Repair
from kbagent.agent.run.state import RunState
from kbagent.text import shorten

# The best unit must cover this share of the question's (rarity-weighted) words for
# the question to count as answered by the knowledge base. Calibrated both ways on the
# five development sets (git-doc, SQLite, Apache, Postfix, Varnish; no model): at 0.3,
# 9 of 143 answerable questions were refused (a user's long story around a terse
# manual entry: "-T <seconds>: Defaults to 120 seconds."), at 0.12 7; no unanswerable
# one of 15 was answered at either (those are told by a thing never mentioned, a value
# of the kind asked for that no unit holds, a number the question names).
ANSWERABLE_COVERAGE = 0.15
# A question word no readable chunk holds counts as a paraphrase only in a unit at least
# this close in meaning to the question (cosine, the KB's sentence embedder); a unit
# SAME_MEANING close covers the question whatever its words. Among the best COVER_TOP.
PARAPHRASE_SIMILARITY = 0.53
SAME_MEANING = 0.8
COVER_TOP = 3
LONG_QUESTION_TERMS = 8  # above this many content words the threshold scales down
REPAIR_MIN_OVERLAP = 0.34  # share of the sentence's words a replacement must share
EVIDENCE_UNITS = 5  # source sentences the harness's final turn shows (and its test reads)
QUOTE_CHARS = 260
_YEAR = re.compile(r"(?:19|20)\d\d")
_MULTI_NAME = re.compile(r"[A-Z][\w'’.&-]*(?: [A-Z][\w'’.&-]*)+")
_ACRONYMS = re.compile(r"\b([A-Z]{2,})s\b")
_WORD_IN_CAPITALS = re.compile(r"[A-Z]{2,}s?")  # "DMZ", "LANs": an acronym, written as no code


def doc_name(path: str) -> str:
    return PurePosixPath(path).name


def quote(unit: Unit, path: str) -> str:
    """A source unit as an answer sentence: quoted, named and cited."""
    body = shorten(unit.text.strip(), QUOTE_CHARS, at_word=True, mark="…", fold=False)
    return f"{doc_name(path)} says: \u201c{body}\u201d [{unit.n}]"


@dataclass
class Grounding:
    question: str
    ledger: CitationLedger
    extra_numbers: set[str] = field(default_factory=set)  # calculator results
    repairs: list[Repair] = field(default_factory=list)
    used: set[tuple[int, int]] = field(default_factory=set)  # units quoted so far
    threshold: float = ANSWERABLE_COVERAGE
    # does a chunk the caller may read contain this word? (set by the loop: KB lookups)
    mentioned: Callable[[str], bool] | None = None
    # is a word one token of the embedder's vocabulary (None: it cannot say)
    is_word: Callable[[str], bool | None] | None = None
    # the KB's sentence embedder (set by the loop), vectors kept for the run
    vectors: SentenceVectors = field(default_factory=lambda: SentenceVectors(None))
    # the answer is one chunk's fact, so a name of several words the question gives is in
    # that chunk (False on the multi-hop path: each hop's document names one of them)
    one_source: bool = True

    # ----------------------------------------------------------- evidence
    def evidence(self, question: str | None = None, limit: int = 6,
                 prefer: list[int] | None = None, meaning: bool = True) -> list[Scored]:
        """The best units for ``question`` (default: the whole question) over every
        chunk gathered; ``prefer`` (citation numbers) are ranked first; ``meaning``:
        closeness of meaning to the question counts (off, only words and the kind of
        answer do: on a multi-hop question the sentence closest in meaning is the first
        hop's, which restates the question, not the one holding the answer)."""
        cites = list(self.ledger)
        if prefer:
            first = [c for c in cites if c.n in prefer]
            cites = first + [c for c in cites if c.n not in prefer]
        return best_evidence(question or self.question, cites, limit=limit,
                             vectors=self.vectors if meaning else None)

    def answerable(self, evidence: list[Scored]) -> bool:
        return bool(evidence) and evidence[0].coverage >= self.threshold

    def silent_reason(self, evidence: list[Scored]) -> str | None:
        """Why the knowledge base does not answer the question ("" for no particular
        reason), or None when the evidence may answer it. Judged on what is asked, not
        on the question's words:

        * a thing it asks about that no readable chunk mentions (:meth:`unmentioned`):
          "it never mentions ..."; a lower-case word where a tool's name goes ("with
          certbot") that is no ordinary word of the embedder's vocabulary and that no
          readable chunk holds, likewise; a year it names that nothing gathered holds;
        * else one of the best units must cover the question: hold an answer of the
          kind asked for (a number, a name, a date...), come from a chunk holding the
          identifying numbers the question names ("ticket 58817", "Edge OS 3.3"), and
          cover its words (those the sources hold, rarity-weighted, the focus weighing
          more). A word of the asking sentence that no readable chunk holds (the story
          before it need not be in the sources: "We're in Germany...") is a paraphrase
          ("roll over" for "carry over") only where the unit is close in meaning to the
          question (the sentence embedder); otherwise it is what the sources do not
          cover ("dental" in "which dental insurance provider"), unless such words are
          at most one in ``LONG_QUESTION_TERMS`` of the question's ("... with its
          parameters shuffled is cached once?"). A unit very close in meaning covers
          the question whatever its words."""
        if not evidence:
            return ""
        f = focus_of(self.question)
        pool_text = self._pool_text()
        pool = pool_text.lower()
        missing = self._unmentioned(self.question, pool)
        if missing:
            return f"it never mentions \u201c{missing}\u201d"
        for word in tool_names(self.question):  # "with certbot": a name, in lower case
            if self._unknown_name(word.lower(), pool):
                return f"it never mentions \u201c{word}\u201d"
        for year in dict.fromkeys(re.findall(r"\b(?:19|20)\d\d\b", self.question)):
            if year not in pool:
                return f"nothing found is about {year}"
        tokens = content_tokens(pool_text.replace("_", " ").replace("/", " "))
        # the noun a "how many" counts may be the user's word for the sources' ("how
        # many iterations" for "hash rounds"): a unit that gives a number answers it
        counted = content_tokens(f.unit) if f.answer_type in VALUE_TYPES else set()
        # (only the sentence that asks: "We're in Germany and the PDF is not A4. What
        # page format ...?" tells a story the sources need not hold, then asks)
        unknown = [w for w in dict.fromkeys(re.findall(r"[A-Za-z][A-Za-z'-]{2,}",
                                                       asking_sentence(self.question)))
                   if {t for t in content_tokens(w) & f.terms if len(t) > 1} - tokens - counted
                   and (self.mentioned is None or not self.mentioned(w))]
        # identifying numbers: a ticket, a model, a version ("58817", "KE-400", "3.3")
        # (not a year: the rule above checks those against everything gathered, and a
        # multi-hop question's years sit in different chunks: "born 18 October 1992 won
        # the Rip Curl Pro Portugal")
        numbers = {x for x in numbers_in(self.question) if (len(x) >= 3 or "." in x)
                   and not _YEAR.fullmatch(x)} - own_release(f, self.ledger)
        threshold = self.threshold * min(1.0, LONG_QUESTION_TERMS / max(1, len(f.terms)))
        # a value (a number, a date...) has a form to find; a name, a path or a default
        # is told by words, and the unit next to the one naming it may well cover it
        need_type = f.answer_type in VALUE_TYPES
        # a name of several capitalised words ("GitHub Team"): its chunk has each word
        # (not an owner's: "Kestrel's Lumen Ledger" is in a table of Kestrel's vendors)
        multi = [n for n in f.named if _MULTI_NAME.fullmatch(n)]
        names = {w.lower() for n in multi[:1] if len(multi) == 1  # one subject, not a relation
                 for w in n.split() if not re.search(r"['’]s$", w)}
        for s in evidence[:COVER_TOP]:
            if (need_type and not s.typed) or not numbers <= self._numbers_of_chunk(s.unit.n):
                continue
            if names and self.one_source and not all(
                    w in self._text_of_chunk(s.unit.n) for w in names):
                continue
            if s.similarity >= SAME_MEANING:
                return None
            if unknown and s.similarity < PARAPHRASE_SIMILARITY and (
                    len(unknown) * LONG_QUESTION_TERMS > len(f.terms)):
                continue
            if s.present + meaning_cover(s.similarity) >= threshold:
                return None
        return ""

    def unmentioned(self, *questions: str) -> str:
        """A thing one of ``questions`` names and asks about (a product, an API, a
        setting, a place) that no chunk the caller may read mentions, or "" (a part is
        judged on its own: "Is there a build for Apple Silicon, and since which version?")."""
        pool = self._pool_text().lower()
        return next((m for q in questions if (m := self._unmentioned(q, pool))), "")

    def _pool_text(self) -> str:
        return " ".join(f"{c.text} {c.path} {c.heading}" for c in self.ledger)

    def _unmentioned(self, question: str, pool: str) -> str:
        asked = named_things(asking_sentence(question))
        for name in focus_of(question).named:
            if name not in asked and (not is_code_term(name) or _WORD_IN_CAPITALS.fullmatch(name)):
                continue  # "We're in Germany and the PDF ...", "one on the DMZ": the story
            missing = self._never_mentioned(plain_name(name), pool)
            if missing:
                return missing
        return ""

    def _unknown_name(self, word: str, pool: str) -> bool:
        """Is ``word`` (a tool's name in the question) no unit, no ordinary word of the
        embedder's vocabulary, in its singular neither, and held by no readable chunk?"""
        if MEASURE_UNIT.fullmatch(word) or self.is_word is None or self.mentioned is None:
            return False
        forms = dict.fromkeys([word, word[:-1] if word.endswith("s") else word])
        return all(f not in pool and self.is_word(f) is False and not self.mentioned(f)
                   for f in forms)

    def _never_mentioned(self, name: str, pool: str) -> str:
        """``name`` (or the word of it) that no chunk the caller may read mentions; ""
        when each is mentioned ("Kestrel's Lumen Ledger": each word is somewhere)."""
        if not name or self.mentioned is None:
            return ""
        # "RPMs" is the plural of the acronym a document writes "RPM"
        one = _ACRONYMS.sub(r"\1", name)
        if one.lower() in pool or self.mentioned(name) or self.mentioned(one):
            return ""
        words = [w for w in re.split(r"[\s-]+", name) if len(w) > 1]
        if len(words) < 2:
            return name
        for w in words:
            one = _ACRONYMS.sub(r"\1", w)
            if one.lower() not in pool and not self.mentioned(w) and not self.mentioned(one):
                return w
        return ""

    def _text_of_chunk(self, n: int) -> str:
        c = self.ledger.get(n)
        return f"{c.text} {c.path} {c.heading}".lower() if c else ""

    def _numbers_of_chunk(self, n: int) -> set[str]:
        c = self.ledger.get(n)
        return numbers_in(f"{c.text} {c.path} {c.heading}") if c else set()

    def take(self, scored: list[Scored]) -> Scored | None:
        """The best unit not quoted yet (and marks it quoted)."""
        for s in scored:
            key = (s.unit.n, s.unit.position)
            if key not in self.used:
                self.used.add(key)
                return s
        return None

    # -------------------------------------------------------------- checks
    def check(self, sent: ProcessedSentence, plain: str, support: SupportCheck
              ) -> ProcessedSentence | None:
        """Keep, re-cite, repair or remove one model sentence (None: removed)."""
        if sent.role != "claim":
            return sent
        words = content_tokens(plain)
        facts = facts_of(plain)
        if not sent.cited:
            if not facts and len(words) < 4:
                return sent  # "Yes." or a short connective: nothing to check
            missing = facts or ["no source carries this sentence"]
        else:
            missing = missing_facts(plain, self.cited_text(sent.cited), self.extra_numbers)
            if not missing:
                missing = self._numbers_out_of_context(plain, words, sent.cited)
            if not missing and sent.supported is not False:
                return sent
            if not missing:
                missing = ["its words are not in the cited source"]
        recited = self._recite(sent, plain, words, facts, missing, support)
        if recited is not None:
            return recited
        return self._repair(sent, plain, words, missing, support)

    def _numbers_out_of_context(self, plain: str, words: set[str], cited: list[int]
                                ) -> list[str]:
        """Numbers the cited chunks hold, but only in sentences that share no word with
        this one (a small model copies a figure from the wrong row: "The hit rate was
        24.0%" where 24 is a count of hours elsewhere in the chunk)."""
        nums = [f for f in facts_of(plain) if is_number(f)]
        if not nums:
            return []
        words = {w for w in words if not w[:1].isdigit()}
        units = [u for n in cited if (c := self.ledger.get(n)) for u in units_of(c)]
        out = []
        for f in nums:
            ok = False
            for u in units:
                if missing_facts(f, u.text, self.extra_numbers):
                    continue
                if not words or words & content_tokens(f"{u.text} {u.context}"):
                    ok = True
                    break
            if not ok:
                out.append(f)
        return out

    def cited_text(self, numbers: list[int]) -> str:
        """What a sentence citing ``numbers`` may draw on: the chunks, their paths and
        headings (a report's quarter is often only in its file name)."""
        cites = [c for n in numbers if (c := self.ledger.get(n))]
        return " ".join(f"{c.text} {c.path.replace('_', ' ')} {c.heading}" for c in cites)

    def _recite(self, sent: ProcessedSentence, plain: str, words: set[str], facts: list[str],
                missing: list[str], support: SupportCheck) -> ProcessedSentence | None:
        """A sentence that is right but cites the wrong chunk (small models often cite
        [1] for everything) is cited to the gathered chunk that carries all its facts."""
        if not facts:
            return None
        for c in self.ledger:
            if c.n in sent.cited:
                continue
            if missing_facts(plain, self.cited_text([c.n]), self.extra_numbers):
                continue
            checked = support(plain, [c.n])
            if checked is None or not checked[1]:
                continue

            self.repairs.append(Repair(plain, tuple(missing), RepairAction.RECITED, c.n))
            out = replace(sent, text=insert_marker(MARKER.sub("", sent.text).rstrip() +
                                                    sent.text[len(sent.text.rstrip()):],
                                                    f"[{c.n}]"),
                          cited=[c.n], support=checked[0], supported=True)
            return out
        return None

    def _repair(self, sent: ProcessedSentence, plain: str, words: set[str],
                missing: list[str], support: SupportCheck) -> ProcessedSentence | None:
        units = [u for c in self.ledger for u in units_of(c)
                 if (u.n, u.position) not in self.used]
        cited = set(sent.cited)
        best: tuple[float, Unit] | None = None
        for scored in score_units(self.question, units, vectors=self.vectors):
            u = scored.unit
            overlap = len(words & content_tokens(u.text)) / max(1, len(words))
            if overlap < REPAIR_MIN_OVERLAP:
                continue
            score = overlap + scored.score + (0.1 if u.n in cited else 0.0)
            if best is None or score > best[0]:
                best = (score, u)
        if best is None:
            self.repairs.append(Repair(plain, tuple(missing), RepairAction.REMOVED))
            return None
        unit = best[1]
        c = self.ledger.get(unit.n)
        self.used.add((unit.n, unit.position))
        self.repairs.append(Repair(plain, tuple(missing), RepairAction.REPLACED, unit.n))

        text = quote(unit, c.path if c else "")
        trail = sent.text[len(sent.text.rstrip()):] or " "
        out = ProcessedSentence(text + trail, [unit.n], role="quote")
        checked = support(unit.text, [unit.n])
        out.support = checked[0] if checked else None
        out.supported = True
        return out


def closest_sources(ledger: CitationLedger, evidence: list[Scored], limit: int = 3
                    ) -> list[tuple[int, str]]:
    """(citation number, "path lines a-b") of the chunks nearest the question."""
    out: list[tuple[int, str]] = []
    for s in evidence:
        c = ledger.get(s.unit.n)
        if c is not None and c.n not in [n for n, _ in out]:
            out.append((c.n, f"{c.path} lines {c.start_line}-{c.end_line}"))
        if len(out) >= limit:
            break
    return out


def grounding_of(s: RunState) -> Grounding:
    """The run's grounding (the grounded final turns run only with one)."""
    g = s.processor.grounding
    assert isinstance(g, Grounding)
    return g


def abstention_reason(s: RunState, vectors: SentenceVectors, one_source: bool) -> str | None:
    """The abstention test over what ``s`` gathered, for the model policy's choice
    (:class:`~kbagent.agent.run.decline.EvidenceTest`): the loop passes it in."""
    g = Grounding(s.question, s.ledger, mentioned=s.ctx.mentions,
                  is_word=getattr(s.ctx.searcher, "is_word", None), vectors=vectors,
                  one_source=one_source)
    return g.silent_reason(g.evidence(limit=EVIDENCE_UNITS))
