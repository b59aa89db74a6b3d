"""The per-pair sufficient statistic of comparisons, and the sparse grouping helpers it is built with.

:class:`PairCounts` is the sufficient statistic every BTL-type estimator needs: for each
observed unordered pair ``i < j`` the (weighted) number of records ``totals`` and the
(weighted) sum of the record values for "i beats j" ``wins``. A tie contributes half a win
to each side. Record values may lie outside [0, 1] (debiased randomized response), so
``wins`` is real-valued.

:func:`row_order`, :func:`grouped_csr` and :func:`group_sums` group records by a key: the
sorted order of a row index, the sparse matrix of pairs, and per-key sums in input order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .. import kernels
from ..errors import InputError, check_flag, check_labels, check_whole, index_array, real_array
from ..html_cards import Shown

#: the most items :meth:`PairCounts.from_records` takes: a pair ``i < j`` is keyed by ``i * m + j`` in 64 bits
MAX_ITEMS = 3_037_000_499  # floor(sqrt(2^63 - 1))
RUNS_MIN_PAIRS = 512  # below this many pairs one bincount beats the set-up of summing by runs
DENSE_GRAPH_ITEMS = 600  # up to this many items a graph search is dense (as the BTL fits' Newton system is)


@dataclass(frozen=True, eq=False)
class PairCounts(Shown):
    """Per-pair sufficient statistic for BTL-type likelihoods.

    For each observed unordered pair ``(i[k], j[k])`` with ``i < j``: ``totals[k]`` is the
    (weighted) number of records and ``wins[k]`` the (weighted) sum of the record values for
    "i beats j". The count-weighted BTL negative log-likelihood is
    ``sum_k totals[k] * log(1 + exp(theta_i - theta_j)) - wins[k] * (theta_i - theta_j)``.
    ``items_declared``: False when the counts come from comparisons whose item list was read off
    the data (see :class:`~privrank.data.comparisons.PairwiseComparisons`); central releases refuse such counts.
    ``max_answers``: the per-respondent bound declared for counts computed elsewhere (each respondent's
    first ``max_answers`` comparisons counted; :func:`~privrank.data.pair_count_files.read_pair_counts`),
    None when none is declared.

    Examples
    --------
    >>> import privrank as pr
    >>> comps = pr.PairwiseComparisons.from_labels(["a", "a", "b", "c"], ["b", "c", "c", "a"], [1, 1, 0, 1])
    >>> counts = comps.pair_counts()
    >>> counts.i, counts.j, counts.wins, counts.totals
    (array([0, 0, 1]), array([1, 2, 2]), array([1. , 1. , 0.5]), array([1., 2., 1.]))
    >>> counts.n_pairs, counts.n_components()
    (3, 1)
    """

    n_items: int
    i: np.ndarray
    j: np.ndarray
    wins: np.ndarray
    totals: np.ndarray
    items: tuple = field(default=())
    items_declared: bool = True
    max_answers: int | None = None

    def _card(self) -> dict:  # sizes only: the per-pair sums are for code
        return {"summary": f"{self.n_pairs:,} pairs of {self.n_items:,} items",
                "facts": [("items declared", "yes" if self.items_declared else "no (read off the data)")]}

    @classmethod
    def from_records(cls, m: int, a, b, values, weights=None, items=(), items_declared: bool = True) -> "PairCounts":
        """Sum records into per-pair statistics.

        Parameters
        ----------
        m : int
            Number of items (at least 2).
        a, b : sequence of int
            Item indices of each record, in ``0 .. m-1``; never equal.
        values : sequence of float
            Value of each record for "``a`` beats ``b``" (1, 0, 1/2 for a tie, or a debiased
            value), finite.
        weights : sequence of float, optional
            Weight of each record, finite and >= 0 (default 1: the totals are counts).
        items : sequence of labels, optional
            The ``m`` item labels (default none).
        items_declared : bool
            False when the item list was read off the data (see the class docstring).

        Raises
        ------
        InputError
            For records of different lengths, an item index out of range, a record comparing an
            item with itself, a value or weight that is not a finite number (or a negative weight).

        Examples
        --------
        >>> from privrank.data.pair_counts import PairCounts
        >>> counts = PairCounts.from_records(3, [0, 2, 1], [1, 0, 2], [1.0, 0.0, 0.5])
        >>> counts.i, counts.j, counts.wins, counts.totals
        (array([0, 0, 1]), array([1, 2, 2]), array([1. , 1. , 0.5]), array([1., 1., 1.]))
        """
        m = check_whole(m, name="m (the number of items)", minimum=2)
        if m > MAX_ITEMS:
            raise InputError(f"m (the number of items) must be at most {MAX_ITEMS:,}: pairs are keyed by i * m + j "
                             "in 64 bits")
        a = index_array(a, name="a", what="item indices")
        b = index_array(b, name="b", what="item indices")
        v = real_array(values, name="values", what="one number per record")
        n = a.size
        if a.shape != (n,) or b.shape != (n,) or v.shape != (n,):
            raise InputError("a, b and values must be 1-d arrays of the same length, one entry per record")
        if n and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= m):
            raise InputError("an item index is out of range: indices run from 0 to m - 1")
        if np.any(a == b):
            raise InputError("a record compares an item with itself")
        if not np.all(np.isfinite(v)):
            raise InputError("every value must be a finite number")
        items = check_labels(items)
        if items and len(items) != m:
            raise InputError(f"{len(items)} item labels given for m = {m} items")
        if len(set(items)) != len(items):
            raise InputError("the item list has a repeated label")
        items_declared = check_flag(items_declared, name="items_declared")
        w = None
        if weights is not None:
            w = real_array(weights, name="weights", what="one number per record")
            if w.shape != (n,):
                raise InputError("weights must give one number per record")
            if not np.all(np.isfinite(w) & (w >= 0)):
                raise InputError("every weight must be a finite number >= 0")
        key, swap = _pair_keys(m, a, b)
        val = np.where(swap, 1.0 - v, v)
        keys: np.ndarray
        if w is None:  # unit weights: the totals are the counts
            keys, (tot, win) = group_sums(key, m * m, None, val)
            tot = tot.astype(float)
        else:
            keys, (tot, win) = group_sums(key, m * m, w, val * w)
        i = keys // m
        return cls(m, i, keys - i * m, win, tot, items, items_declared)

    @classmethod
    def of_outcomes(cls, m: int, a, b, outcome, items=(), items_declared: bool = True) -> "PairCounts":
        """:meth:`from_records` of raw outcomes already checked (int8: 1 ``a`` preferred, -1 ``b``,
        0 a tie; int64 indices in range, never equal), as a validated data set holds them: the same
        statistic, exact. Each record counts ``v = 1 + outcome`` for the first item of its pair
        (twice its value: 2 a win, 1 a tie), and ``wins = sum(v) / 2``. When the pair keys are
        dense, one ``bincount`` adds ``2^shift + v`` per record, ``2^shift`` above twice the
        records, so that each pair's sum ``2^shift * records + sum(v)`` (exact below 2^53) splits
        back into both by a shift and a mask of its integer."""
        n = outcome.size
        dense = n < 1 << 25 and m * m <= max(4 * n, 1 << 16)
        if dense and kernels.compiled is not None:  # the same sums, counted in one pass over the records
            i, j, wins, count = (np.frombuffer(column, dtype=dtype) for column, dtype in zip(
                kernels.compiled.outcome_counts(m, np.ascontiguousarray(a, dtype=np.int64),
                                                np.ascontiguousarray(b, dtype=np.int64),
                                                np.ascontiguousarray(outcome, dtype=np.int8)),
                (np.int64, np.int64, float, float)))
            return cls(m, i, j, wins, count, items, items_declared)
        key, swap = _pair_keys(m, a, b)
        doubled = np.where(swap, -outcome, outcome).astype(float)  # the first item's outcome
        if dense:
            shift = n.bit_length() + 1
            doubled += float(2 ** shift) + 1.0
            total = np.bincount(key, doubled, m * m)
            keys = np.flatnonzero(total.astype(bool))  # every record adds at least 2^shift > 0
            packed = total[keys].astype(np.int64)  # sum(v) <= 2 records < 2^shift
            count, wins2 = (packed >> shift).astype(float), (packed & ((1 << shift) - 1)).astype(float)
        else:
            doubled += 1.0
            keys, (count, wins2) = group_sums(key, m * m, None, doubled)
            count = count.astype(float)
        i, j = np.divmod(keys, m)
        return cls(m, i, j, wins2 * 0.5, count, items, items_declared)

    @classmethod
    def from_arrays(cls, m, i, j, wins, totals, items=()) -> "PairCounts":
        """Build from per-pair arrays (``i < j`` required)."""
        i = np.asarray(i, dtype=np.int64)
        j = np.asarray(j, dtype=np.int64)
        if np.any(i >= j):
            raise InputError("pair arrays must have i < j")
        return cls(int(m), i, j, np.asarray(wins, dtype=float), np.asarray(totals, dtype=float), tuple(items))

    @property
    def n_pairs(self) -> int:
        return int(self.i.size)

    @cached_property
    def _runs(self):
        """``(start, row)`` of each run of equal ``i`` when the pairs are sorted by ``i`` (a
        tally's are), else None; None too below ``RUNS_MIN_PAIRS`` pairs."""
        if self.i.size < RUNS_MIN_PAIRS or row_order(self.i) is not None:
            return None
        start = np.flatnonzero(np.concatenate(([True], self.i[1:] != self.i[:-1])))
        return start, self.i[start]

    def row_sums(self, values) -> np.ndarray:
        """``bincount(i, values, n_items)``: summed by runs when many pairs are sorted by ``i``
        (10x faster: bincount stalls on runs of one key)."""
        if self._runs is None:
            return np.bincount(self.i, values, self.n_items)
        start, row = self._runs
        out = np.zeros(self.n_items)
        out[row] = np.add.reduceat(np.asarray(values, dtype=float), start)
        return out

    def items_compared(self) -> np.ndarray:
        """Total weight of records each item appears in."""
        return self.row_sums(self.totals) + np.bincount(self.j, self.totals, self.n_items)

    def borda(self) -> np.ndarray:
        """Borda score of each item: its total (weighted) wins over all opponents."""
        return self.row_sums(self.wins) + np.bincount(self.j, self.totals - self.wins, self.n_items)

    def to_dense(self) -> tuple[np.ndarray, np.ndarray]:
        """Dense ``(W, N)``: ``W[i, j]`` wins of i over j, ``N`` symmetric record counts."""
        m = self.n_items
        W = np.zeros((m, m))
        N = np.zeros((m, m))
        W[self.i, self.j] = self.wins
        W[self.j, self.i] = self.totals - self.wins
        N[self.i, self.j] = self.totals
        N[self.j, self.i] = self.totals
        return W, N

    def n_components(self) -> int:
        """Number of connected components of the comparison graph (up to :data:`DENSE_GRAPH_ITEMS`
        items by a dense search, one step per row read: scipy's sparse graphs cost more to import than
        a small graph takes to search)."""
        m = self.n_items
        if m <= DENSE_GRAPH_ITEMS:
            edges = np.eye(m, dtype=bool)  # an item reaches itself
            edges[self.i, self.j] = edges[self.j, self.i] = True
            unseen, count = np.ones(m, dtype=bool), 0
            while unseen.any():
                count += 1
                reached = np.zeros(m, dtype=bool)
                reached[unseen.argmax()] = True
                while True:  # the items one step further, until none is new
                    grown = np.asarray(edges[reached].any(axis=0))
                    if grown.sum() == reached.sum():
                        break
                    reached = grown
                unseen &= ~reached
            return count
        from scipy.sparse.csgraph import connected_components

        g = grouped_csr(self.i, self.j, self.n_items, order=row_order(self.i))
        return int(connected_components(g, directed=False)[0])


def _pair_keys(m: int, a, b) -> tuple[np.ndarray, np.ndarray]:
    """``(key, swap)``: each record's pair key ``min * m + max`` and whether its items come in
    decreasing order."""
    key = np.minimum(a, b) * m
    key += np.maximum(a, b)
    return key, a > b


def row_order(rows) -> np.ndarray | None:
    """A stable order that groups equal ``rows`` in increasing order, or None when they already are."""
    rows = np.asarray(rows)
    if rows.size < 2 or bool(np.all(rows[1:] >= rows[:-1])):
        return None
    small = rows.astype(np.int16) if rows.max() < (1 << 15) else rows  # numpy sorts 16-bit keys by radix
    return np.argsort(small, kind="stable")


def grouped_csr(rows, cols, m: int, data=None, order=None):
    """The ``m x m`` CSR matrix with entry ``(rows[k], cols[k])`` = ``data[k]`` (default 1), its
    rows grouped by ``order`` (:func:`row_order`) and its columns left in input order: products
    and graph searches need no sorted columns, so scipy's sort is skipped."""
    from scipy.sparse import csr_matrix

    if order is not None:
        rows, cols = rows[order], cols[order]
        data = None if data is None else data[order]
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=m), out=indptr[1:])
    return csr_matrix((np.ones(rows.size) if data is None else data, cols, indptr), shape=(m, m))


def group_sums(key, size: int, *weights):
    """Sorted distinct ``key`` values in ``[0, size)`` and, per key, the sum of each weight array.

    A weight of ``None`` counts the records of each key (int64). Dense ``bincount`` when the key
    space is small relative to the number of keys, ``unique`` otherwise. Each sum adds its
    terms in input order, so the result depends only on the input, never on the path taken.
    """
    key = np.asarray(key, dtype=np.int64)
    if size <= max(4 * key.size, 1 << 16):
        count = np.bincount(key, minlength=size)
        keys = np.flatnonzero(count.astype(bool))  # numpy scans booleans 3x faster than int64
        return keys, [count[keys] if w is None else np.bincount(key, w, size)[keys] for w in weights]
    keys, inv = np.unique(key, return_inverse=True)
    return keys, [np.bincount(inv, w, keys.size) for w in weights]

