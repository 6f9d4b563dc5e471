"""Is an answer sentence supported by the chunks it cites? (issue 13)

:func:`support` is the check; the other functions are the pieces it is made of and
the candidates ``bench/bench_support.py`` measured against hand-labelled sentences
(``tests/data/support_labels.jsonl``, BENCHMARKS.md "The supported-check against hand
labels"):

* :func:`overlap`: the share of the sentence's stemmed content words found anywhere in
  the cited text; at >= 0.5 this was the check before (``AnswerProcessor._support``).
  A small model's wrong sentences reuse the source's words ("The headcount at the end of
  Q2 2026 was 195" against "Headcount 182 at quarter end (Q2: 173); plan is 195"), and a
  long chunk holds most words of almost anything near its topic, so it says "supported"
  to most of them.
* :func:`unit_overlap`: the same share within the best single *unit* (a sentence or a
  table row, :func:`kbagent.agent.answer.evidence.units_of`) of one cited chunk: a claim must
  be stated in one place, not assembled from words scattered over the chunk.
* :func:`facts_ok`: every number, name and quoted term of the sentence
  (:func:`kbagent.agent.answer.evidence.facts_of`) is in the cited text; :func:`numbers_ok`:
  every number.
"""

from __future__ import annotations

from kbagent.agent.answer.citations import Citation, clean_text, content_tokens
from kbagent.agent.answer.evidence import missing_facts, units_of

BASELINE_THRESHOLD = 0.5  # the check before: overlap with the whole cited text
UNIT_THRESHOLD = 0.7  # share of the sentence's content words in its best unit


def _evidence_tokens(cited_texts: list[str]) -> set[str]:
    out: set[str] = set()
    for t in cited_texts:
        out |= content_tokens(clean_text(t))
    return out


def overlap(sentence: str, cited_texts: list[str]) -> float | None:
    """Share of the sentence's content words found anywhere in the cited text (the
    check before); None when the sentence has no content words."""
    words = content_tokens(sentence)
    if not words:
        return None
    return len(words & _evidence_tokens(cited_texts)) / len(words)


def unit_texts(cited_texts: list[str]) -> list[list[str]]:
    """Each chunk's units (sentences, table rows), in order. A chunk's raw text (line
    breaks and markup kept, ``Citation.raw``) gives table rows their own units; cleaned
    text (``Citation.text``) is split into sentences only."""
    out = []
    for i, raw in enumerate(cited_texts):
        c = Citation(i + 1, "", "", 1, raw.count("\n") + 1, clean_text(raw), None, "", raw=raw)
        out.append([u.text for u in units_of(c)] or [c.text])
    return out


def unit_overlap(sentence: str, cited_texts: list[str], window: int = 1,
                 contexts: list[str] | None = None) -> float | None:
    """Share of the sentence's content words found in the best run of ``window``
    consecutive units of one cited chunk (with the words of that chunk's context, its
    path and heading, if given); None when it has no content words."""
    words = content_tokens(sentence)
    if not words:
        return None
    best = 0.0
    for k, units in enumerate(unit_texts(cited_texts)):
        toks = [content_tokens(u) for u in units]
        around = content_tokens(contexts[k]) if contexts and k < len(contexts) else set()
        for i in range(len(toks)):
            span: set[str] = around.union(*toks[i:i + window])
            best = max(best, len(words & span) / len(words))
    return best


def missing(sentence: str, cited_texts: list[str]) -> list[str]:
    """The facts of the sentence (numbers, names, quoted terms) the cited text lacks."""
    return missing_facts(sentence, " ".join(clean_text(t) for t in cited_texts))


def facts_ok(sentence: str, cited_texts: list[str]) -> bool:
    """Every number, name and quoted term of the sentence is in the cited text."""
    return not missing(sentence, cited_texts)


def numbers_ok(sentence: str, cited_texts: list[str]) -> bool:
    """Every standalone number of the sentence is in the cited text."""
    return not any(any(ch.isdigit() for ch in f) for f in missing(sentence, cited_texts))


def support(sentence: str, cited_texts: list[str],
            contexts: list[str] | None = None) -> tuple[float, bool]:
    """(score, supported) of an answer ``sentence`` (citation markers removed) against
    ``cited_texts``, the text of each chunk it cites (``Citation.raw`` preferred: its
    line breaks make table rows units of their own; ``Citation.text`` works too).

    ``score`` is :func:`unit_overlap`, the share of the sentence's content words found
    in the best sentence or table row of one cited chunk (0..1); ``supported`` is
    ``score >= UNIT_THRESHOLD`` and every standalone number of the sentence in the cited
    text (:func:`numbers_ok`: a wrong figure in otherwise copied words is the commonest
    error of a small model). Names and quoted terms are not required here: on the hand
    labels that lost supported sentences ("325 USD" against "$325") and caught no wrong
    one more; the grounding checks all facts on its own
    (:func:`kbagent.agent.answer.evidence.missing_facts`). A sentence without content words
    claims nothing: ``(1.0, True)`` (a caller that wants "not checked" tests
    ``content_tokens`` first, as ``AnswerProcessor._support`` does). ``contexts`` (one
    per chunk: its path and heading) count for every unit of their chunk: "the default
    TTL for prompt cache entries" is said by "Default TTL: 1 hour" under
    prompt_caching.md's TTL heading.
    """
    score = unit_overlap(sentence, cited_texts, contexts=contexts)
    if score is None:
        return 1.0, True
    return score, score >= UNIT_THRESHOLD and numbers_ok(sentence, cited_texts)
