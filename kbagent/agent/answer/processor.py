"""The answer, post-processed sentence by sentence so that it can stream
(:class:`AnswerProcessor`): marker variants are normalised to ``[n]``, numbers
the ledger does not know are dropped, a sentence the model left uncited gets a
marker placed at its end when it matches a chunk (longest common substring above
a minimum length, or strong word overlap for paraphrases), and every cited
sentence gets a support verdict against its chunks (:mod:`kbagent.agent.answer.support`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Protocol

from kbagent.agent.answer.citations import (
    MIN_LCS,
    PARAPHRASE_OVERLAP,
    CitationLedger,
    clean_text,
    content_tokens,
    weighted_len,
)
from kbagent.agent.answer.sentences import (
    MARKER,
    ProcessedSentence,
    cited_numbers,
    insert_marker,
    normalize_markers,
    repeat_key,
    sentence_spans,
)
from kbagent.agent.answer.support import support
from kbagent.agent.records import Repair

# a sentence's support against the chunks it cites: (score, supported), None unchecked
SupportCheck = Callable[[str, list[int]], "tuple[float, bool] | None"]


class SentenceRepair(Protocol):
    """The small-model policy's grounding check (:class:`~kbagent.agent.harness.grounding.
    Grounding`), passed in by the loop: this room never imports the harness."""

    extra_numbers: set[str]  # calculator results, which a sentence may state
    repairs: list[Repair]  # what it did to the model's sentences

    def check(self, sent: ProcessedSentence, plain: str, support: SupportCheck
              ) -> ProcessedSentence | None: ...

    def cited_text(self, numbers: list[int]) -> str: ...

_QUOTED = re.compile(r"\u201c(.+)\u201d")
_ENDED = re.compile(r"[.!?。！？…][\"'”’)\]」』）]*$")  # text that ends a sentence
_RESTART = re.compile(
    r"(?:^|\n)[ \t]*(?:the\s+)?final\s+answer(?:\s+is)?\s*:[ \t]*|(?:^|\n)[ \t]*"
    r"(?:thought|question|observation|action)\s*:",
    re.IGNORECASE,
)


@dataclass
class AnswerProcessor:
    """Streaming post-processor: feed raw answer text, get finished sentences."""

    ledger: CitationLedger
    auto_cite: bool = True
    _buffer: str = ""
    used_auto: set[int] = field(default_factory=set)
    sentences: list[ProcessedSentence] = field(default_factory=list)
    # chunk number -> (its lowered text, a matcher holding it as seq2); the text is
    # kept beside the matcher because SequenceMatcher's ``b`` is not public API
    _matchers: dict[int, tuple[str, SequenceMatcher[str]]] = field(default_factory=dict)
    # grounded answers (kbagent.agent.harness.grounding): every model sentence's facts must
    # be in what it cites, or it is replaced by the source sentence that supports it, or
    # removed
    grounding: SentenceRepair | None = None
    harness_text: bool = False  # what is fed now is the harness's notice, not the model's
    seen: int = 0  # sentences processed, kept or not
    repeat_seen: bool = False  # a repeated sentence was dropped (see drop_repeat)
    # the model's sentences the grounding check removed or replaced, as the model wrote
    # them: saying one again is a repeat too (a looping model is stopped, and the repair
    # is made and reported once, not once per repetition)
    _repaired: set[str] = field(default_factory=set)

    def feed(self, delta: str) -> list[ProcessedSentence]:
        self._buffer += delta
        done, self._buffer = sentence_spans(self._buffer, final=False)
        return [p for p in map(self._process, done) if p is not None]

    def emit(self, text: str, role: str, cited: list[int] | None = None,
             pieces: bool = False, verdict: tuple[float, bool] | None = None
             ) -> ProcessedSentence:
        """Add a sentence the harness wrote (a quote, a calculation, a notice): no marker
        is placed and nothing is repaired; a quote or calculation is support-checked.
        ``pieces``: the sentence lists short answers ("20 days [3]; Yes [3]."), each
        checked against its own citation. ``verdict``: (support, supported) as a check
        of its own found them (the model policy's), and no check is run here."""
        sent = ProcessedSentence(text, list(cited or cited_numbers(text)), role=role)
        if verdict is not None:
            sent.support, sent.supported = verdict
        elif pieces:
            listed = [(MARKER.sub("", piece).strip(" ."), cited_numbers(piece))
                     for piece in text.split(";")]
            # a "Yes" or "No" is read from the quoted sentence that follows, checked there
            checks = [self._support(words, numbers) for words, numbers in listed
                      if words.lower() not in ("yes", "no")]
            done = [c for c in checks if c is not None]
            if done:
                sent.support = min(score for score, _ in done)
                sent.supported = all(ok for _, ok in done)
        elif sent.cited and role != "notice":
            plain = MARKER.sub("", text).strip()
            quoted = _QUOTED.search(plain)  # 'doc.md says: "…"': the quote is the claim
            checked = self._support(quoted.group(1) if quoted else plain, sent.cited)
            if checked is not None:
                sent.support, sent.supported = checked
        self.sentences.append(sent)
        return sent

    def cut_restart(self) -> bool:
        """A small model often restarts its answer ("The final answer is: ...") or the
        protocol ("Thought:") after answering. Drop such a restart; True if one was cut.
        The same phrase at the very start of the answer is only stripped."""
        if not self.sentences:
            lead = _RESTART.match(self._buffer)
            if lead and lead.start() == 0 and self._buffer[lead.end():].strip():
                self._buffer = self._buffer[lead.end():].lstrip()
        m = _RESTART.search(self._buffer, 0 if self.sentences else 1)
        if m is None or (not self.sentences and not self._buffer[: m.start()].strip()):
            return False
        self._buffer = self._buffer[: m.start()].rstrip()
        return True

    def trim_repetition(self, window: int = 24) -> bool:
        """Detect a degenerate loop in the unfinished text (a small model repeating
        itself); cut it back to one copy of the repeated part. Returns True if cut."""
        buf = self._buffer
        if len(buf) < 3 * window:
            return False
        # citation numbers do not make a repeat new ("Source: [1] Source: [2] ..."):
        # compare with their digits masked (same length, so positions carry over)
        norm = MARKER.sub(lambda m: "[" + "#" * (len(m.group()) - 2) + "]", buf)
        tail = norm[-window:]
        first = norm.find(tail)
        second = norm.find(tail, first + 1)
        if second == -1 or norm.count(tail) < 3:
            return False
        self._buffer = buf[: second].rstrip()
        return True

    def _repeats(self, text: str) -> bool:
        key = repeat_key(text)
        return bool(key) and (key in self._repaired
                              or any(key == repeat_key(s.text) for s in self.sentences))

    def drop_repeat(self) -> bool:
        """Was a sentence dropped since the last call because it repeated an earlier
        one (citation markers, case and spacing aside)? A model that repeats itself is
        looping: the caller stops it."""
        seen, self.repeat_seen = self.repeat_seen, False
        return seen

    def drop_unfinished(self) -> str:
        """Drop an unfinished trailing sentence (generation hit its token limit
        mid-sentence), if at least one sentence was finished (kept or not). Returns what
        was dropped."""
        pieces, _ = sentence_spans(self._buffer, final=True)
        if not pieces or not (self.seen or len(pieces) > 1):
            return ""
        last = MARKER.sub("", pieces[-1]).rstrip()
        if not last or _ENDED.search(last):
            return ""
        self._buffer = "".join(pieces[:-1])
        return pieces[-1]

    def finish(self) -> list[ProcessedSentence]:
        done, self._buffer = sentence_spans(self._buffer, final=True)
        return [p for p in map(self._process, done) if p is not None]

    @property
    def answer(self) -> str:
        return "".join(s.text for s in self.sentences).strip()

    def cited(self) -> set[int]:
        return {n for s in self.sentences for n in s.cited}

    def support_by_number(self) -> dict[int, bool | None]:
        out: dict[int, bool | None] = {}
        for s in self.sentences:
            for n in s.cited:
                if s.supported:
                    out[n] = True
                elif n not in out or out[n] is None:
                    out[n] = s.supported
        return out

    def _process(self, raw: str) -> ProcessedSentence | None:
        self.seen += 1
        text = normalize_markers(raw, self.ledger.numbers())
        cited = list(dict.fromkeys(cited_numbers(text)))
        sent = ProcessedSentence(text, cited)
        plain = MARKER.sub("", text).strip()
        if not cited and self.auto_cite and plain:
            n = self._best_match(plain)
            if n is not None:
                self.used_auto.add(n)
                sent.text = insert_marker(text, f"[{n}]")
                sent.cited, sent.auto = [n], True
        if sent.cited:
            checked = self._support(plain, sent.cited)
            if checked is not None:
                sent.support, sent.supported = checked
        if self._repeats(sent.text):
            self.repeat_seen = True
            return None  # never the same sentence twice in one answer
        if self.harness_text:
            sent.role = "notice"  # the harness's own words: nothing to check or repair
        elif self.grounding is not None and plain:
            key = repeat_key(sent.text)
            kept = self.grounding.check(sent, plain, self._support)
            if kept is None or repeat_key(kept.text) != key:
                self._repaired.add(key)
            if kept is None:
                return None
            sent = kept
        self.sentences.append(sent)
        return sent

    def _support(self, plain: str, numbers: list[int]) -> tuple[float, bool] | None:
        """(score, supported) of a sentence against the chunks it cites
        (:func:`kbagent.agent.answer.support.support`: its best single sentence or table row,
        and its numbers); None when the sentence has no content words."""
        if not content_tokens(plain):
            return None
        cites = [c for n in numbers if (c := self.ledger.get(n))]
        return support(plain, [c.raw or c.text for c in cites],
                       [f"{c.path.replace('_', ' ')} {c.heading}" for c in cites])

    def _best_match(self, plain: str) -> int | None:
        norm = " ".join(clean_text(plain).lower().split())
        if weighted_len(norm) < 12:
            return None
        words = content_tokens(norm)
        best: tuple[float, int, int] | None = None  # (lcs, chunk length, -n)
        for c in sorted(self.ledger, key=lambda c: (-len(c.text), c.n)):
            if c.n in self.used_auto:
                continue
            text = c.text.lower()
            cached = self._matchers.get(c.n)
            if cached is None or cached[0] != text:
                sm: SequenceMatcher[str] = SequenceMatcher(None, autojunk=False)
                sm.set_seq2(text)
                self._matchers[c.n] = (text, sm)
            else:
                sm = cached[1]
            sm.set_seq1(norm)
            m = sm.find_longest_match(0, len(norm), 0, len(text))
            lcs = weighted_len(norm[m.a : m.a + m.size])
            ok = lcs >= MIN_LCS
            if not ok and len(words) >= 3:
                shared = len(words & content_tokens(c.text))
                ok = shared >= 3 and shared / len(words) >= PARAPHRASE_OVERLAP
            if ok:
                key = (lcs, len(c.text), -c.n)
                if best is None or key > best:
                    best = key
        return -best[2] if best else None
