"""What the PostgreSQL BM25 top-k keeps while it reads blocks (kbagent.kb.pg.bm25_seen),
against a plain dictionary: no server needed."""

from __future__ import annotations

import numpy as np
import pytest

from kbagent.kb.pg.bm25_seen import Dense, Left, OutsideSpan, Seen

N_TERMS = 3


def batches(rng: np.random.Generator, lo: int, span: int, n: int):
    """Batches of postings (id, term, group, score); a (chunk, term) pair at most once
    over all batches, a chunk's group fixed; a chunk often in one batch several times."""
    pairs = rng.permutation(span * N_TERMS)[:n]
    ids, terms = lo + pairs // N_TERMS, pairs % N_TERMS
    group_of = rng.integers(0, 3, size=span)
    cuts = [c for c in (5, 20, 100, 1_000, 5_000, 20_000) if c < n]  # growing batches
    for part in np.split(np.arange(n), cuts):
        yield (ids[part], terms[part], group_of[ids[part] - lo],
               rng.random(len(part)) + 0.1)


def expected(all_batches) -> dict[int, tuple[list[float], list[bool], int]]:
    out: dict[int, tuple[list[float], list[bool], int]] = {}
    for ids, terms, groups, scores in all_batches:
        for i, t, g, s in zip(ids, terms, groups, scores, strict=True):
            vals, read, _ = out.setdefault(int(i), ([0.0] * N_TERMS, [False] * N_TERMS, 0))
            vals[t], read[t] = float(s), True
            out[int(i)] = (vals, read, int(g))
    return out


def as_dict(seen: Seen) -> dict[int, tuple[list[float], list[bool], int]]:
    ids, vals, read, group = seen.view()
    assert len(set(ids.tolist())) == len(ids)  # one row a chunk
    return {int(i): (v.tolist(), r.tolist(), int(g))
            for i, v, r, g in zip(ids, vals, read, group, strict=True)}


@pytest.mark.parametrize("grow", [4, Dense.GROW])
def test_dense_and_sorted_keep_every_posting_once(monkeypatch, grow):
    monkeypatch.setattr(Dense, "GROW", grow)  # small: the arrays grow several times
    rng = np.random.default_rng(3)
    lo, span = 1_000, 30_000
    got = list(batches(rng, lo, span, 60_000))
    dense, ordered = Dense(N_TERMS, lo, span), Seen(N_TERMS)
    for b in got:
        dense.add(*b)
        ordered.add(*b)
    want = expected(got)
    assert as_dict(dense) == want == as_dict(ordered)
    assert ordered.view()[0].tolist() == sorted(want)  # the sorted one in id order


def test_an_id_outside_the_span_is_refused_and_the_sorted_copy_goes_on():
    rng = np.random.default_rng(5)
    got = list(batches(rng, 50, 400, 700))
    dense = Dense(N_TERMS, 50, 300)  # ids reach 449: beyond this span
    kept = None
    for b in got:
        if kept is None:
            try:
                dense.add(*b)
                continue
            except OutsideSpan:
                kept = dense.sorted()
        kept.add(*b)
    assert kept is not None and as_dict(kept) == expected(got)
    with pytest.raises(OutsideSpan):
        Dense(N_TERMS, 100, 10).add(np.array([99]), np.array([0]), np.array([0]),
                                    np.array([1.0]))


def test_left_is_the_best_bound_a_chain_has_not_read():
    rng = np.random.default_rng(8)
    chains = rng.integers(0, 4, size=200)
    bounds = np.sort(rng.random(200))[::-1]  # blocks in read order: best bound first
    c_group, c_term = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    left = Left(chains, bounds, c_group, c_term, 2, 2)
    for pos in (0, 1, 17, 100, 199, 200):
        want = np.zeros((2, 2))
        for c in range(4):
            rest = bounds[pos:][chains[pos:] == c]
            want[c_group[c], c_term[c]] = rest.max() if len(rest) else 0.0
        assert np.array_equal(left.after(pos), want)
