"""Ranking and answer metrics, written to their published definitions.

Ranking (BEIR / TREC conventions, as ``pytrec_eval`` computes them):

* nDCG@k: graded gains (the qrels grade itself), discount ``log2(rank + 1)``,
  ideal ranking built from every judged document of the query with grade > 0.
* recall@k: judged-relevant documents (grade > 0) in the top k, over all of them.
* MRR@k: 1 / rank of the first relevant document in the top k, else 0.

Answers (SQuAD v1.1 evaluation script): lower-case, drop punctuation, drop the
articles a/an/the, collapse white space; exact match and token F1 take the best
over the gold answers. Punctuation is every Unicode punctuation character, not
only ASCII's: kbagent's answers quote sources in curly quotes, and a gold answer
at the end of a quote (“... New York City.”) must still match.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence

Qrels = Mapping[str, int]  # document id -> relevance grade


def ndcg_at_k(ranked: Sequence[str], qrels: Qrels, k: int = 10) -> float:
    dcg = sum(qrels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: Sequence[str], qrels: Qrels, k: int) -> float:
    relevant = {d for d, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mrr_at_k(ranked: Sequence[str], qrels: Qrels, k: int = 10) -> float:
    for i, d in enumerate(ranked[:k]):
        if qrels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), ``nan`` when empty."""
    if not values:
        return float("nan")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def _punct(ch: str) -> bool:
    return ch in _PUNCT or unicodedata.category(ch).startswith("P")


def normalize_answer(text: str) -> str:
    text = "".join(ch for ch in text.lower() if not _punct(ch))
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in golds))


def _f1(prediction: str, gold: str) -> float:
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = Counter(p) & Counter(g)
    same = sum(common.values())
    if not p or not g:
        return float(p == g)
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, golds: Sequence[str]) -> float:
    return max((_f1(prediction, g) for g in golds), default=0.0)


def contains_gold(prediction: str, golds: Sequence[str]) -> bool:
    """True if a normalised gold answer occurs, on word boundaries, in the
    normalised prediction (for short answers inside a longer sentence)."""
    pred = f" {normalize_answer(prediction)} "
    return any(normalize_answer(g) and f" {normalize_answer(g)} " in pred for g in golds)
