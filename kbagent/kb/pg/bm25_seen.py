"""What an exact top-k BM25 search (:mod:`kbagent.kb.pg.bm25`) knows as it reads blocks:
the best bound each chain has left (:class:`Left`), and the chunks read so far with
their per-term scores (:class:`Seen`, :class:`Dense`)."""

from __future__ import annotations

import numpy as np


class Left:
    """The best bound a chain has left as its blocks are read in order: a chain's blocks
    come in decreasing bound order, so it is the bound of its first one not read yet."""

    def __init__(self, chains: np.ndarray, bounds: np.ndarray, c_group: np.ndarray,
                 c_term: np.ndarray, n_groups: int, n_terms: int) -> None:
        self.at = [np.flatnonzero(chains == c) for c in range(len(c_group))]
        self.bounds = [bounds[a] for a in self.at]
        self.where = list(zip(c_group.tolist(), c_term.tolist(), strict=True))
        self.shape = (n_groups, n_terms)

    def after(self, pos: int) -> np.ndarray:
        """(group, term) -> the best bound of the blocks from place ``pos`` on (0 when
        none is left)."""
        rest = np.zeros(self.shape)
        for at, bounds, (g, t) in zip(self.at, self.bounds, self.where, strict=True):
            i = int(np.searchsorted(at, pos))
            if i < len(at):
                rest[g, t] = bounds[i]
        return rest


class Seen:
    """The chunks read so far: each one's id, its score per query term (0 until read),
    which terms were read, and its group set (a chunk is in one group set, so a (chunk,
    term) posting is read once). This one keeps them in id order (any chunk ids)."""

    def __init__(self, n_terms: int) -> None:
        self.ids = np.empty(0, dtype=np.int64)
        self.vals = np.empty((0, n_terms))
        self.seen = np.empty((0, n_terms), dtype=bool)
        self.group = np.empty(0, dtype=np.int64)

    def add(self, ids: np.ndarray, terms: np.ndarray, groups: np.ndarray,
            scores: np.ndarray) -> None:
        new, first = np.unique(ids, return_index=True)
        at = np.searchsorted(self.ids, new)
        known = at < len(self.ids)
        known[known] = self.ids[at[known]] == new[known]
        if not known.all():  # new chunks, inserted in id order
            where, new, first = at[~known], new[~known], first[~known]
            self.ids = np.insert(self.ids, where, new)
            self.vals = np.insert(self.vals, where, 0.0, axis=0)
            self.seen = np.insert(self.seen, where, False, axis=0)
            self.group = np.insert(self.group, where, groups[first])
        row = np.searchsorted(self.ids, ids)
        self.vals[row, terms] = scores
        self.seen[row, terms] = True

    def view(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(ids, per-term scores, per-term read, group set) of every chunk read."""
        return self.ids, self.vals, self.seen, self.group


class OutsideSpan(Exception):
    """A chunk id outside the span a :class:`Dense` was made for."""


class Dense(Seen):
    """:class:`Seen` for a KB whose chunk ids span at most ``bm25.DENSE_SPAN``: a
    chunk's row is found through an array over the span (no sorting or searching; the
    rows in the order first read). At a million chunks this is a third of a frequent-term
    search's time saved."""

    GROW = 1 << 14  # rows made room for at least, growing

    def __init__(self, n_terms: int, lo: int, span: int) -> None:
        super().__init__(n_terms)
        self.lo = lo
        self.row = np.zeros(span, dtype=np.int32)  # 1 + a chunk's row; 0: not read yet
        self.n = 0

    def add(self, ids: np.ndarray, terms: np.ndarray, groups: np.ndarray,
            scores: np.ndarray) -> None:
        off = ids - self.lo
        if len(off) and (off.min() < 0 or off.max() >= len(self.row)):  # never wrap around
            raise OutsideSpan(f"chunk ids {int(ids.min())}-{int(ids.max())} outside "
                              f"{self.lo}-{self.lo + len(self.row) - 1}")
        new = np.flatnonzero(self.row[off] == 0)
        if len(new):  # each new chunk's first posting here (no sort: written, read back)
            self.row[off[new]] = np.arange(1, len(new) + 1)
            first = new[self.row[off[new]] == np.arange(1, len(new) + 1)]
            fresh = off[first]
            end = self.n + len(fresh)
            if end > len(self.ids):  # room for four times as many
                room = max(4 * end, self.GROW)
                self.ids = np.resize(self.ids, room)
                self.group = np.resize(self.group, room)
                # np.zeros: pages zeroed as first touched, not all now
                vals, seen = np.zeros((room, self.vals.shape[1])), np.zeros(
                    (room, self.seen.shape[1]), dtype=bool)
                vals[:self.n], seen[:self.n] = self.vals[:self.n], self.seen[:self.n]
                self.vals, self.seen = vals, seen
            self.row[fresh] = np.arange(self.n + 1, end + 1)
            self.ids[self.n:end] = fresh + self.lo
            self.group[self.n:end] = groups[first]
            self.n = end
        row = self.row[off] - 1
        self.vals[row, terms] = scores
        self.seen[row, terms] = True

    def view(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        n = self.n
        return self.ids[:n], self.vals[:n], self.seen[:n], self.group[:n]

    def sorted(self) -> Seen:
        """The same chunks in a :class:`Seen` (id order), for ids outside the span."""
        ids, vals, seen, group = self.view()
        order = np.argsort(ids, kind="stable")
        out = Seen(vals.shape[1])
        out.ids, out.vals, out.seen, out.group = (ids[order], vals[order], seen[order],
                                                  group[order])
        return out
