"""The supported-check (issue 13): small cases, the check before reproduced exactly, and
the chosen check against the hand-labelled answer sentences of the bundled model
(tests/data/support_labels.jsonl, cited text read from sample_kb)."""

from __future__ import annotations

from bench.bench_support import prf
from bench.support_labels import load_labels
from kbagent.agent.answer.citations import CitationLedger, content_tokens
from kbagent.agent.answer.processor import AnswerProcessor
from kbagent.agent.answer.support import overlap, support, unit_overlap

REPORT = """## Headcount

Headcount was 182 on September 30, 2026 (Q2: 173; Q1: 164). The plan is 195 by
December 31, 2026, including two engineers for the Caching team.

| Tier | Price | Requests per month |
|------|-------|--------------------|
| Team | $499/month | 5,000,000 |
| Business | $2,400/month | 50,000,000 |
"""


def test_a_sentence_stated_by_one_source_sentence_is_supported() -> None:
    score, ok = support("Headcount was 182 on September 30, 2026.", [REPORT])
    assert ok and score == 1.0


def test_a_table_row_supports_its_own_figures() -> None:
    assert support("The Business tier costs $2,400/month.", [REPORT])[1]


def test_a_wrong_figure_is_not_supported() -> None:
    score, ok = support("Headcount was 190 on September 30, 2026.", [REPORT])
    assert not ok
    assert score < 1.0


def test_words_scattered_over_the_chunk_are_not_a_claim_it_states() -> None:
    # every content word is somewhere in the chunk (the check before says yes), but no
    # sentence or row of it says this
    sentence = "The Caching team plan is the Business tier price."
    assert overlap(sentence, [REPORT]) == 1.0
    score, ok = support(sentence, [REPORT])
    assert not ok
    assert score == unit_overlap(sentence, [REPORT]) and score < 0.7


def test_invented_words_are_not_supported() -> None:
    assert not support("Kestrel was acquired by a bank in 2024.", [REPORT])[1]


def test_a_sentence_without_content_words_claims_nothing() -> None:
    assert support("It is.", [REPORT]) == (1.0, True)
    assert overlap("It is.", [REPORT]) is None


def test_cleaned_text_works_too_and_several_chunks_count() -> None:
    other = "Revenue was $9.80M in Q2 2026."
    assert support("Revenue was $9.80M in Q2 2026.", [REPORT, other])[1]
    assert not support("Revenue was $9.80M in Q2 2026.", [REPORT])[1]


def test_overlap_is_the_check_before_and_the_processor_uses_support() -> None:
    ledger = CitationLedger()
    n = ledger.add(kb="kb", path="finance/q3.md", start_line=1, end_line=9, text=REPORT)
    assert n == 1
    proc = AnswerProcessor(ledger)
    cite = ledger.get(1)
    assert cite is not None
    for sentence in ("Headcount was 182 on September 30, 2026.",
                     "The Caching team plan is the Business tier price.",
                     "Kestrel was acquired by a bank in 2024.", "It is."):
        words = content_tokens(sentence)
        # the check before: share of the sentence's words anywhere in the cited text
        before = len(words & content_tokens(cite.text)) / len(words) if words else None
        assert overlap(sentence, [cite.text]) == before
        assert proc._support(sentence, [1]) == (support(sentence, [cite.raw])
                                                if words else None)


def test_labels_read_their_cited_text_from_sample_kb() -> None:
    labels = load_labels()
    assert len(labels) >= 120
    assert all(x.cited_texts and all(t.strip() for t in x.cited_texts) for x in labels)
    assert len({x.id for x in labels}) == len(labels)


def test_the_check_against_hand_labels() -> None:
    labels = load_labels()
    gold = [x.supported for x in labels]
    assert 15 <= sum(gold) <= len(gold) - 15  # both labels represented
    chosen = [support(x.sentence, x.cited_texts)[1] for x in labels]
    before = [(overlap(x.sentence, x.cited_texts) or 1.0) >= 0.5 for x in labels]
    acc = sum(g == p for g, p in zip(gold, chosen, strict=True)) / len(gold)
    acc_before = sum(g == p for g, p in zip(gold, before, strict=True)) / len(gold)
    precision_sup, recall_sup, _ = prf(gold, chosen, True)
    _, recall_not, f1_not = prf(gold, chosen, False)
    # floors a little below what bench/bench_support.py measured on these labels
    # (BENCHMARKS.md: accuracy 0.80 vs 0.33 before, recall of "not" 0.86, F1 of "not"
    # 0.88, precision / recall of "supported" 0.33 / 0.41)
    assert acc >= 0.75 and acc >= acc_before + 0.3
    assert recall_not >= 0.80 and f1_not >= 0.83
    assert precision_sup >= 0.28 and recall_sup >= 0.35
