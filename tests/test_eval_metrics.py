"""Metric functions against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from kbagent.evaluation.metrics import (
    contains_gold,
    exact_match,
    mrr_at_k,
    ndcg_at_k,
    normalize_answer,
    percentile,
    recall_at_k,
    token_f1,
)

QRELS = {"d1": 1, "d3": 2, "d4": 1, "d9": 0}


def test_ndcg_with_graded_qrels():
    # DCG = 1/log2(2) + 0 + 2/log2(4) = 2; ideal gains [2, 1, 1]:
    # 2 + 1/log2(3) + 1/log2(4) = 3.130930
    assert ndcg_at_k(["d1", "d2", "d3"], QRELS, 10) == pytest.approx(2 / 3.1309297535714578)
    assert ndcg_at_k(["d3", "d1", "d4"], QRELS, 10) == pytest.approx(1.0)
    # the cut-off applies to the ranking and to the ideal
    assert ndcg_at_k(["d2", "d3"], QRELS, 1) == 0.0
    assert ndcg_at_k(["d3"], QRELS, 1) == pytest.approx(1.0)
    # grade 0 counts as not relevant, and a query without relevant docs scores 0
    assert ndcg_at_k(["d9"], QRELS, 10) == 0.0
    assert ndcg_at_k(["d1"], {"d1": 0}, 10) == 0.0


def test_recall_and_mrr():
    assert recall_at_k(["d1", "d2", "d3"], QRELS, 2) == pytest.approx(1 / 3)
    assert recall_at_k(["d1", "d2", "d3", "d4"], QRELS, 100) == pytest.approx(1.0)
    assert recall_at_k(["d9"], QRELS, 10) == 0.0
    assert mrr_at_k(["d1", "d3"], QRELS) == 1.0
    assert mrr_at_k(["d2", "d9", "d3"], QRELS) == pytest.approx(1 / 3)
    assert mrr_at_k(["d2", "d9", "d3"], QRELS, k=2) == 0.0


def test_percentile_interpolates_like_numpy():
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([10.0, 20.0, 30.0, 40.0, 50.0], 95) == pytest.approx(48.0)
    assert math.isnan(percentile([], 50))


def test_squad_normalisation_em_and_f1():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("An apple, a pear") == "apple pear"
    assert exact_match("the Eiffel Tower.", ["Eiffel Tower"]) == 1.0
    assert exact_match("Eiffel", ["Eiffel Tower"]) == 0.0
    # pred [paris, is, in, france] vs gold [paris, france]: P 0.5, R 1, F1 2/3
    assert token_f1("Paris is in France", ["Paris, France"]) == pytest.approx(2 / 3)
    assert token_f1("Paris is in France", ["Lyon", "France"]) == pytest.approx(0.4)
    assert token_f1("", ["x"]) == 0.0
    assert token_f1("", [""]) == 1.0


def test_contains_gold_needs_whole_words():
    assert contains_gold("It opened in 1889, in Paris.", ["1889"])
    assert contains_gold("The answer is the Eiffel Tower.", ["Eiffel Tower"])
    assert not contains_gold("It opened in 18890.", ["1889"])
    assert not contains_gold("anything", [""])
