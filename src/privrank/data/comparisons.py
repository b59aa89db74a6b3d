"""Pairwise comparisons and their sufficient statistic.

:class:`PairwiseComparisons` holds records ``(user, item_a, item_b, outcome)`` with outcome
``1`` (item_a preferred), ``-1`` (item_b preferred) or ``0`` (tie / no preference), and
optionally a per-record ``epsilon``: a record with an epsilon is a *randomized report* that a
respondent already privatised on their own device (outcome then in {1, -1}); privrank debiases
such reports and never randomizes them again.

:class:`PairCounts` is the sufficient statistic every BTL-type estimator needs: for each
observed unordered pair ``i < j`` the (weighted) number of records ``totals`` and the
(weighted) sum of the record values for "i beats j" ``wins``. A tie contributes half a win
to each side. Record values may lie outside [0, 1] (debiased randomized response), so
``wins`` is real-valued.

:class:`ComparisonTally` is the exact form of the same statistic: integer counts of records
and of half-wins per privacy level (the epsilon of randomized reports) and pair. Integer counts
add up exactly in any order, so a tally computed in one piece, in batches or on the partitions
of a cluster is identical, and every release derived from it is identical too.

Items are indexed 0..m-1 in sorted label order (so the same input gives the same indices
whatever order the records arrive in); results are mapped back to labels.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import NamedTuple

import numpy as np

from ..errors import InputError
from .tabular import label_indices

OUTCOME_A = 1
OUTCOME_B = -1
OUTCOME_TIE = 0


def sorted_labels(values) -> tuple:
    labels = set(values)
    try:
        return tuple(sorted(labels))
    except TypeError:  # mixed types: order by string form
        return tuple(sorted(labels, key=str))


def first_missing(labels) -> int | None:
    """Position of the first missing label (None, NaN or an empty string), or None."""
    return next((k for k, x in enumerate(labels) if x is None or x == "" or x != x), None)  # x != x: NaN


def label_codes(columns, items=None, name: str = "item") -> tuple[tuple, list]:
    """``(labels, codes)``: the labels (``items``, or every label of ``columns`` in
    :func:`sorted_labels` order) and each column as int64 indices into them. Columns of one Arrow
    type are encoded by Arrow (:func:`~privrank.data.tabular.label_indices`: strings, integers,
    10x faster than a dict); anything else (mixed types, missing labels) by a dict. A label not in
    ``items`` is an :class:`InputError` (``KeyError`` on the dict path), and so is a missing
    label (None, NaN or an empty string), named ``name`` in the message."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        if all(isinstance(c, list) and c and isinstance(c[0], str) for c in columns):
            # Python strings straight into dictionary arrays: hashed while converted (1.4x
            # faster than converting, then encoding); a non-string raises and takes the dict path
            arrays = [pa.array(c, type=pa.dictionary(pa.int32(), pa.string())) for c in columns]
            kind = pa.string()
            seen = [x for a in arrays for x in a.dictionary.to_pylist()]
        else:
            arrays = [pa.array(c) for c in columns]
            kind = arrays[0].type
            encoded = pc.dictionary_encode(pa.chunked_array(arrays))  # one dictionary shared by the chunks
            arrays = encoded.chunks
            seen = arrays[-1].dictionary.to_pylist()  # the last chunk's holds every label (the memo only grows)
        if any(x.type != arrays[0].type or x.null_count for x in arrays) or not (
                pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_integer(kind)):
            raise TypeError
        if "" in seen:
            raise TypeError  # the dict path finds the record
        labels = sorted_labels(seen) if items is None else tuple(items)
        pa.array(labels, type=kind)  # the item list takes the columns' type, or the dict path reads it
    except (TypeError, ValueError, OverflowError, pa.ArrowException):
        values = [list(c) for c in columns]
        for c in values:
            missing = first_missing(c)
            if missing is not None:
                raise InputError(f"record {missing + 1}: empty or missing {name} (None, NaN or '')")
        labels = sorted_labels([x for c in values for x in c]) if items is None else tuple(items)
        index = {lab: k for k, lab in enumerate(labels)}
        return labels, [np.fromiter((index[x] for x in c), dtype=np.int64, count=len(c)) for c in values]
    return labels, [label_indices(x, labels) for x in arrays]


@dataclass(frozen=True, eq=False)
class PairwiseComparisons:
    """Validated pairwise comparisons with item labels and optional user ids.

    Build with :meth:`from_labels` (labels in, validated) rather than directly.

    Attributes
    ----------
    items : tuple
        Item labels; item ``k`` internally is ``items[k]``.
    item_a, item_b : ndarray of int64
        Internal indices of the two items of each record (never equal).
    outcome : ndarray of int8
        1 if item_a was preferred, -1 if item_b, 0 for a tie.
    user : ndarray of int64 or None
        Internal user index per record, into ``users``.
    users : tuple or None
        User labels.
    epsilon : ndarray of float or None
        Per-record epsilon of randomized reports (see module docstring), else None.
    items_declared : bool
        True when the caller gave the item list; False when it was read off the labels that
        occur in the data. Central mechanisms refuse undeclared items: which items occur is a
        fact of the data (one person's only comparison naming an item would decide whether it
        appears in the output).
    levels : EpsilonLevels or None
        The distinct values of ``epsilon`` and each record's index into them, when the code that
        made the reports knew them (the randomizers do): the tally then reads them instead of
        hashing the epsilon column.
    seeded : bool
        Randomized reports drawn with a seed: research output, not a release (whatever is
        computed from them says so in its guarantee).
    pairs_from_ratings : bool
        The pairs were drawn from the items each user rated
        (:func:`~privrank.data.ratings.comparisons_from_ratings`): which items a user rated is
        part of the data, and a local release, which randomizes answers and sends the pairs as
        they are, says that it does not hide it.
    max_answers : int or None
        The declared quota of randomized reports per respondent (a public parameter, e.g. of the
        survey that collected them; see :meth:`with_quota`): every respondent sent at most this
        many, so each is protected at ``max_answers`` times the largest epsilon. None: no quota
        declared (a per-comparison guarantee only).
    """

    items: tuple
    item_a: np.ndarray
    item_b: np.ndarray
    outcome: np.ndarray
    user: np.ndarray | None = None
    users: tuple | None = None
    epsilon: np.ndarray | None = None
    items_declared: bool = True
    levels: "EpsilonLevels | None" = field(default=None, repr=False)
    seeded: bool = False
    pairs_from_ratings: bool = False
    max_answers: int | None = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_labels(cls, item_a, item_b, outcome, *, user=None, epsilon=None, items=None):
        """Validate labelled records and build the container.

        Parameters
        ----------
        item_a, item_b : sequence of hashable labels
        outcome : sequence of int in {1, -1, 0}
        user : sequence of hashable user ids, optional
        epsilon : sequence of float, optional
            Per-record epsilon: marks the records as randomized reports (outcome in {1, -1}).
        items : sequence of labels, optional
            The full item set (default: every label that occurs, sorted). Items listed here but
            never compared are allowed in the container; estimators refuse them.
        """
        item_a, item_b = (x if hasattr(x, "__len__") else list(x) for x in (item_a, item_b))
        user = user if user is None or hasattr(user, "__len__") else list(user)
        n = len(item_a)
        if n == 0:
            raise InputError("no comparisons given: the data set is empty")
        if len(item_b) != n:
            raise InputError("item_a and item_b must have the same length")
        out = _as_outcome(outcome, n)
        if items is not None and len(set(items)) != len(tuple(items)):
            raise InputError("the item list has a repeated label")
        try:
            labels, (a, b) = label_codes([item_a, item_b], items)
        except KeyError:
            raise InputError("a comparison names an item that is not in the given item list") from None
        u = users = None
        if user is not None:
            if len(user) != n:
                raise InputError("user must have one id per comparison")
            users, (u,) = label_codes([user], None, "user")
        return cls._checked(labels, a, b, out, u, users, epsilon, items is not None)

    @classmethod
    def from_indices(cls, items, item_a, item_b, outcome, *, user=None, users=None, epsilon=None,
                     items_declared: bool = True):
        """Build from internal indices (fast path for simulation and readers)."""
        a = np.asarray(item_a, dtype=np.int64)
        b = np.asarray(item_b, dtype=np.int64)
        out = _as_outcome(outcome, a.size)
        u = None if user is None else np.asarray(user, dtype=np.int64)
        if u is not None and users is None:
            users = tuple(range(int(u.max()) + 1)) if u.size else ()
        return cls._checked(tuple(items), a, b, out, u, users, epsilon, items_declared)

    @classmethod
    def _checked(cls, labels, a, b, out, u, users, epsilon, items_declared=True, records_checked=False,
                 levels=None):
        """Validate and build; ``records_checked``: the items and users are those of a checked
        data set (new outcomes for its records), so only the outcomes and epsilons are checked;
        ``levels``: the :class:`EpsilonLevels` that ``epsilon`` was made from (its values checked)."""
        m = len(labels)
        n = a.size
        if out.size != n:
            raise InputError("item_a, item_b and outcome must have the same length")
        if not records_checked:
            if n == 0:
                raise InputError("no comparisons given: the data set is empty")
            if m < 2:
                raise InputError("at least two distinct items are needed to rank anything")
            if b.size != n:
                raise InputError("item_a, item_b and outcome must have the same length")
            if a.min() < 0 or b.min() < 0 or a.max() >= m or b.max() >= m:
                raise InputError("an item index is out of range")
            same = np.flatnonzero(a == b)
            if same.size:
                raise InputError(f"record {int(same[0])} compares an item with itself")
            if u is not None:
                if u.size != n:
                    raise InputError("user must have one id per comparison")
                if users is None or (u.size and (u.min() < 0 or u.max() >= len(users))):
                    raise InputError("a user index is out of range")
        eps = None
        if epsilon is not None:
            eps = np.asarray(epsilon, dtype=float)
            if eps.shape != (n,):
                raise InputError("epsilon must give one value per comparison")
            shared = eps.strides == (0,)  # one epsilon for every record (a broadcast view): check it once
            values = levels.values if levels is not None else eps[:1] if shared else eps
            bad = np.flatnonzero(~np.isfinite(values) | (values <= 0))
            if bad.size:
                raise InputError(f"record {int(bad[0])}: epsilon must be finite and > 0" if values is eps
                                 else "epsilon must be finite and > 0")
            ties = np.flatnonzero(out == OUTCOME_TIE)
            if ties.size:
                raise InputError(f"record {int(ties[0])}: a randomized report must be 1 or -1, "
                                 "not a tie (randomized response never outputs a tie)")
        for arr in (a, b, out) + ((u,) if u is not None else ()) + ((eps,) if eps is not None else ()):
            arr.setflags(write=False)
        return cls(labels, a, b, out, u, users, eps, bool(items_declared), None if eps is None else levels)

    # ------------------------------------------------------------------ properties
    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_records(self) -> int:
        return int(self.item_a.size)

    @property
    def n_users(self) -> int | None:
        return None if self.users is None else len(self.users)

    @property
    def is_randomized(self) -> bool:
        """True when the records are randomized reports carrying their own epsilon."""
        return self.epsilon is not None

    def records_per_user(self) -> np.ndarray:
        """Number of records of each user (requires user ids)."""
        if self.user is None:
            raise InputError("the data have no user ids")
        u = self.user
        if u.size and bool(np.all(u[1:] >= u[:-1])):  # records grouped by user, in order: count by boundaries
            return np.diff(np.searchsorted(u, np.arange(len(self.users) + 1)))
        return np.bincount(u, minlength=len(self.users))

    def select_users(self, users) -> "PairwiseComparisons":
        """The records of the users at internal indices ``users`` (distinct), renumbered in that order."""
        if self.user is None:
            raise InputError("the data have no user ids")
        idx = np.asarray(users, dtype=np.int64).ravel()
        n = len(self.users)
        if idx.size == 0 or idx.min() < 0 or idx.max() >= n or np.unique(idx).size != idx.size:
            raise InputError(f"users must be distinct indices between 0 and {n - 1}")
        new = np.full(n, -1, dtype=np.int64)
        new[idx] = np.arange(idx.size)
        keep = new[self.user] >= 0
        eps = None if self.epsilon is None else self.epsilon[keep]
        return self._derived(type(self)._checked(self.items, self.item_a[keep], self.item_b[keep], self.outcome[keep],
                                                 new[self.user[keep]], tuple(self.users[k] for k in idx), eps,
                                                 self.items_declared))

    def first_answers(self, max_answers) -> "PairwiseComparisons":
        """Each user's first ``max_answers`` records in data order: a declared per-user bound applied.

        Which records are kept depends on each user's own records only, so the selection is
        applied user by user and a per-user guarantee covers it.
        """
        if self.user is None:
            raise InputError("a bound on answers per user needs user ids in the data")
        try:
            m = int(max_answers)
        except (TypeError, ValueError, OverflowError):
            raise InputError("max_answers must be a whole number >= 1") from None
        if m != max_answers or m < 1:
            raise InputError("max_answers must be a whole number >= 1")
        order = np.argsort(self.user, kind="stable")
        u = self.user[order]
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size) - np.searchsorted(u, u, side="left")
        keep = rank < m
        if keep.all():
            return self
        eps = None if self.epsilon is None else self.epsilon[keep]
        return self._derived(type(self)._checked(self.items, self.item_a[keep], self.item_b[keep], self.outcome[keep],
                                                 self.user[keep], self.users, eps, self.items_declared))

    def with_quota(self, max_answers) -> "PairwiseComparisons":
        """These randomized reports with the declared quota ``max_answers`` of reports per respondent.

        In the local model the collector sees how many reports each respondent sent, so the
        quota is checked here: a respondent with more reports, or a quota other than one already
        declared, is refused (the message names no respondent and no count).
        """
        if not self.is_randomized:
            raise InputError("a quota of answers per respondent (max_answers) is declared with randomized "
                             "reports; raw comparisons take it when they are randomized")
        if isinstance(max_answers, bool) or not isinstance(max_answers, (int, np.integer)) or max_answers < 1:
            raise InputError("max_answers must be a whole number >= 1")
        k = int(max_answers)
        if self.max_answers is not None and self.max_answers != k:
            raise InputError("the declared quota of answers per respondent differs from the one the reports "
                             "carry (their max_answers column); give the same number")
        if self.user is None:
            raise InputError("a quota of answers per respondent needs the respondents' ids (a user column)")
        if int(self.records_per_user().max()) > k:
            raise InputError("a respondent sent more reports than the declared quota of answers per respondent "
                             "(max_answers): the per-respondent guarantee would not hold")
        return replace(self, max_answers=k)

    def _derived(self, new: "PairwiseComparisons") -> "PairwiseComparisons":
        """``new``, made from these records, with their marks (seeded, pairs from ratings, quota)."""
        return replace(new, seeded=self.seeded, pairs_from_ratings=self.pairs_from_ratings,
                       max_answers=self.max_answers if new.is_randomized else None)

    def preference_values(self) -> np.ndarray:
        """Value of each record for "item_a beats item_b": 1, 0, or 1/2 for a tie."""
        return (self.outcome.astype(float) + 1.0) / 2.0

    def with_outcomes(self, outcome, epsilon, levels=None) -> "PairwiseComparisons":
        """Same records and users with new outcomes and per-record epsilons (randomized reports);
        ``levels``: the :class:`EpsilonLevels` the epsilons were made from, when known."""
        return self._derived(type(self)._checked(self.items, self.item_a, self.item_b,
                                                 _as_outcome(outcome, self.n_records), self.user, self.users, epsilon,
                                                 self.items_declared, records_checked=True, levels=levels))

    def pair_counts(self, values=None, weights=None) -> "PairCounts":
        """The per-pair sufficient statistic of record ``values`` (default: the outcomes)."""
        if values is None:
            values = self.preference_values()
        return PairCounts.from_records(self.n_items, self.item_a, self.item_b, values, weights, items=self.items,
                                       items_declared=self.items_declared)

    def tally(self) -> "ComparisonTally":
        """The exact integer tally of the records (see :class:`ComparisonTally`)."""
        tally = ComparisonTally.from_records(self.items, self.item_a, self.item_b, self.outcome + 1,
                                             epsilon=self.epsilon if self.levels is None else self.levels)
        return replace(tally, seeded=self.seeded, items_declared=self.items_declared)

    def __repr__(self) -> str:  # never print raw preferences
        users = "" if self.users is None else f", {len(self.users)} users"
        kind = "randomized reports" if self.is_randomized else "comparisons"
        return f"PairwiseComparisons({self.n_records} {kind}, {self.n_items} items{users})"


def _as_outcome(outcome, n) -> np.ndarray:
    given = np.asarray(outcome) if isinstance(outcome, np.ndarray) else None
    if given is not None and np.issubdtype(given.dtype, np.integer) and given.shape == (n,):
        bad = np.flatnonzero((given < -1) | (given > 1))  # integers: two comparisons, no float copy
        if bad.size:
            raise InputError(f"record {int(bad[0])}: outcome must be 1, -1 or 0")
        return given.astype(np.int8)
    try:
        arr = np.asarray(outcome, dtype=float)
    except (TypeError, ValueError):
        raise InputError("outcome must be numeric: 1 (item_a preferred), -1 (item_b), 0 (tie)") from None
    if arr.shape != (n,):
        raise InputError("outcome must give one value per comparison")
    bad = np.flatnonzero(~np.isin(arr, (1.0, -1.0, 0.0)))
    if bad.size:
        raise InputError(f"record {int(bad[0])}: outcome must be 1, -1 or 0")
    return arr.astype(np.int8)


@dataclass(frozen=True, eq=False)
class PairCounts:
    """Per-pair sufficient statistic for BTL-type likelihoods.

    For each observed unordered pair ``(i[k], j[k])`` with ``i < j``: ``totals[k]`` is the
    (weighted) number of records and ``wins[k]`` the (weighted) sum of the record values for
    "i beats j". The count-weighted BTL negative log-likelihood is
    ``sum_k totals[k] * log(1 + exp(theta_i - theta_j)) - wins[k] * (theta_i - theta_j)``.
    ``items_declared``: False when the counts come from comparisons whose item list was read off
    the data (see :class:`PairwiseComparisons`); central releases refuse such counts.
    """

    n_items: int
    i: np.ndarray
    j: np.ndarray
    wins: np.ndarray
    totals: np.ndarray
    items: tuple = field(default=())
    items_declared: bool = True

    @classmethod
    def from_records(cls, m: int, a, b, values, weights=None, items=(), items_declared: bool = True) -> "PairCounts":
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        v = np.asarray(values, dtype=float)
        w = np.ones(a.size) if weights is None else np.asarray(weights, dtype=float)
        swap = a > b
        lo = np.where(swap, b, a)
        hi = np.where(swap, a, b)
        val = np.where(swap, 1.0 - v, v) * w
        keys, (tot, win) = group_sums(lo * m + hi, m * m, w, val)
        return cls(int(m), keys // m, keys % m, win, tot, tuple(items), items_declared)

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
        tally's are), else None."""
        if self.i.size == 0 or row_order(self.i) is not None:
            return None
        start = np.flatnonzero(np.concatenate(([True], self.i[1:] != self.i[:-1])))
        return start, self.i[start]

    def row_sums(self, values) -> np.ndarray:
        """``bincount(i, values, n_items)``: summed by runs when the pairs are sorted by ``i``
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
        """Number of connected components of the comparison graph."""
        from scipy.sparse.csgraph import connected_components

        g = grouped_csr(self.i, self.j, self.n_items, order=row_order(self.i))
        return int(connected_components(g, directed=False)[0])


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


def shared_epsilon(epsilon) -> float | None:
    """The epsilon every record shares, or None when they differ: a broadcast view (one value for
    all, as the local pipeline makes it) is read once, any other array compared min to max."""
    eps = np.asarray(epsilon, dtype=float)
    if eps.size and (eps.strides == (0,) or eps.min() == eps.max()):
        return float(eps.flat[0])
    return None


class EpsilonLevels(NamedTuple):
    """An epsilon column as its distinct values in increasing order and each record's index into
    them (the scalar 0 when all records share one value)."""

    values: np.ndarray
    index: np.ndarray

    @classmethod
    def of_groups(cls, group_epsilon, group, group_records=None) -> "EpsilonLevels":
        """The levels of records whose epsilon is that of their group (``group_epsilon[group]``,
        e.g. users), found among the groups that have records (``group_records``: how many each
        has, counted here when not given), not among the records."""
        group_epsilon = np.asarray(group_epsilon, dtype=float)
        if group_records is None:
            group_records = np.bincount(group, minlength=group_epsilon.size)
        present = np.asarray(group_records) > 0
        values, inverse = np.unique(group_epsilon[present], return_inverse=True)
        if values.size == 1:
            return cls(values, np.int64(0))
        code = np.zeros(group_epsilon.size, dtype=np.int8 if values.size <= 127 else np.int16
                        if values.size <= 32767 else np.int64)
        code[present] = inverse
        return cls(values, code[group])

    def column(self, n: int) -> np.ndarray:
        """One epsilon per record (a broadcast view when all share one)."""
        if np.ndim(self.index) == 0:
            return np.broadcast_to(self.values[int(self.index)], (n,))
        return self.values[self.index]


def epsilon_levels(epsilon, n: int) -> EpsilonLevels:
    """Distinct epsilons in increasing order and each record's index into them.

    ``epsilon`` is one value per record, a scalar shared by all ``n`` records (then the index
    is the scalar 0, it broadcasts, and nothing is sorted) or already :class:`EpsilonLevels`.
    """
    if isinstance(epsilon, EpsilonLevels):
        return epsilon
    if np.ndim(epsilon) == 0:
        return EpsilonLevels(np.array([float(epsilon)]), np.int64(0))
    eps = np.asarray(epsilon, dtype=float)
    one = shared_epsilon(eps)
    if one is not None:  # one level: nothing to hash or sort
        return EpsilonLevels(np.array([one]), np.int64(0))
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(pa.array(eps))  # hashing, not sorting the records: O(n)
    distinct = encoded.dictionary.to_numpy()
    order = np.argsort(distinct)
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return EpsilonLevels(distinct[order], rank[encoded.indices.to_numpy()])


def record_codes(m: int, a, b, values2, level=0) -> np.ndarray:
    """The code of each record, in ``[0, n_levels * m * m * 3)`` (the map step of every tally).

    A record comparing items ``a`` and ``b`` (indices) at privacy level ``level`` with
    ``values2`` (2 x its value for "a beats b", see :meth:`ComparisonTally.from_records`) has
    code ``((level * m + lo) * m + hi) * 3 + v``, where ``lo < hi`` are its two items and ``v``
    its doubled value for "lo beats hi".
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    v = np.asarray(values2, dtype=np.int8)
    code = np.minimum(a, b)
    code *= 3 * m
    hi = np.maximum(a, b)
    hi *= 3
    code += hi
    code += v + (a > b).view(np.int8) * (np.int8(2) - 2 * v)  # 2 - v where swapped (int8 arithmetic: 20x np.where)
    if np.any(level):
        code += np.asarray(level) * np.int64(3 * m * m)  # small level codes widen in the product
    return code


#: records per step of a per-record computation whose temporaries should stay in the CPU cache
CACHE_CHUNK = 1 << 16


def folds(size: int, n_records: int) -> bool:
    """Whether :func:`folded_counts` suits ``n_records`` records over ``size`` codes: the fold costs
    a few passes over the table, the canonical swap it saves a few passes over the records."""
    return 4 * size <= max(n_records, 1 << 14)


def folded_counts(m: int, a, b, values2, level, size: int) -> np.ndarray:
    """The dense count (length ``size``) of the :func:`record_codes` of the records, computed by
    counting each record under its items in the order given, ``((level * m + a) * m + b) * 3 + v``,
    and folding the count of ``(b, a, 2 - v)`` onto ``(a, b, v)`` afterwards: three passes per
    record instead of the swap's seven, the fold on the small table."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    v, level = np.asarray(values2, dtype=np.int8), np.asarray(level)
    total = np.zeros(size, dtype=np.int64)
    # chunks whose temporaries stay in cache (2x one pass over all), unless the table is too
    # large to count again per chunk
    step = CACHE_CHUNK if 4 * size <= CACHE_CHUNK else max(a.size, 1)
    for s in range(0, a.size, step):
        code = a[s:s + step] * (3 * m)
        code += b[s:s + step] * 3
        code += np.broadcast_to(v, a.shape)[s:s + step]
        if level.ndim:
            code += level[s:s + step] * np.int64(3 * m * m)  # small level codes widen in the product
        elif level:
            code += int(level) * 3 * m * m
        total += np.bincount(code, minlength=size)
    per = total.reshape(-1, m, m, 3)
    folded = per + per.transpose(0, 2, 1, 3)[..., ::-1]
    folded *= np.triu(np.ones((m, m), dtype=np.int64), 1)[None, :, :, None]  # lo < hi only
    return folded.reshape(-1)


@dataclass(frozen=True, eq=False)
class ComparisonTally:
    """Exact integer tally of comparison records, per privacy level and pair.

    For each observed unordered pair ``(i[k], j[k])``, ``i < j``, at privacy level ``level[k]``:
    ``n[k]`` records and ``wins2[k]``, twice the summed record values for "i beats j" (a win
    counts 2, a tie 1). Entries are sorted by ``(level, i, j)``.

    Attributes
    ----------
    items : tuple
        Item labels (index order).
    epsilons : ndarray or None
        For randomized reports, the distinct per-record epsilons in increasing order (``level``
        indexes them); None for raw answers (one level, 0).
    level, i, j, n, wins2 : ndarray of int64
    seeded : bool
        The reports were drawn with a seed: research output, not a release (the releases read
        from the tally say so in their guarantee).
    items_declared : bool
        As for :class:`PairwiseComparisons`: False when the item list was read off the data.
    """

    items: tuple
    epsilons: np.ndarray | None
    level: np.ndarray
    i: np.ndarray
    j: np.ndarray
    n: np.ndarray
    wins2: np.ndarray
    seeded: bool = False
    items_declared: bool = True

    @classmethod
    def from_records(cls, items, a, b, values2, *, epsilon=None) -> "ComparisonTally":
        """Tally records ``(a, b)`` (item indices) with ``values2`` = 2 x value for "a beats b".

        ``values2`` is 2 (a preferred), 0 (b preferred) or 1 (tie); for randomized reports
        ``epsilon`` gives each record's epsilon (or one for all) and ``user`` (integer codes)
        its user.
        """
        m = len(items)
        levels, level = (None, 0) if epsilon is None else epsilon_levels(epsilon, np.size(a))
        size = (1 if levels is None else levels.size) * m * m * 3
        if folds(size, np.size(a)):
            return cls.from_dense(items, levels, folded_counts(m, a, b, values2, level, size))
        return cls.from_codes(items, levels, record_codes(m, a, b, values2, level))

    @classmethod
    def from_dense(cls, items, epsilons, counts) -> "ComparisonTally":
        """Build from the dense count of every record code (``counts[c]`` records have code ``c``)."""
        m = len(items)
        per = np.asarray(counts).reshape(-1, 3)
        total = per.sum(axis=1)
        cells = np.flatnonzero(total)
        return cls(tuple(items), epsilons, cells // (m * m), cells // m % m, cells % m, total[cells],
                   per[cells, 1] + 2 * per[cells, 2])

    @classmethod
    def from_codes(cls, items, epsilons, codes, counts=None) -> "ComparisonTally":
        """Build from record codes (:func:`record_codes`) and how many records each stands for
        (default one); codes may repeat and come in any order."""
        m = len(items)
        codes = np.asarray(codes, dtype=np.int64)
        levels = 1 if epsilons is None else len(epsilons)
        size = levels * m * m * 3
        if counts is None and size <= max(4 * codes.size, 1 << 16):  # one dense count of (cell, value)
            return cls.from_dense(items, epsilons, np.bincount(codes, minlength=size))
        if counts is None and codes.size:  # sorted, the records of a cell are one run
            if size < (1 << 31) and codes.size < (1 << 30):
                codes = codes.astype(np.int32)  # numpy sorts and divides 32-bit keys 2x faster
            codes = np.sort(codes)
            cell = codes // 3
            new = np.empty(cell.size, dtype=bool)
            new[0] = True
            np.not_equal(cell[1:], cell[:-1], out=new[1:])
            start = np.flatnonzero(new)
            cells, n = cell[start], np.diff(start, append=codes.size)
            codes -= 3 * cell  # each record's value 0, 1 or 2 (codes is the sorted copy)
            wins2 = np.add.reduceat(codes, start)
        else:
            value = codes % 3
            cells, (n, wins2) = group_sums(codes // 3, levels * m * m, counts,
                                           value if counts is None else counts * value)
        level = cells // (m * m) if levels > 1 else np.zeros(cells.size, dtype=np.int64)
        pair = cells - (m * m) * level if levels > 1 else cells
        i = pair // m
        return cls(tuple(items), epsilons, level.astype(np.int64), i.astype(np.int64), (pair - m * i).astype(np.int64),
                   np.asarray(n).astype(np.int64), np.asarray(wins2).astype(np.int64))

    @property
    def is_randomized(self) -> bool:
        """True for a tally of randomized reports."""
        return self.epsilons is not None

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_records(self) -> int:
        return int(self.n.sum())

    def level_records(self) -> np.ndarray:
        """Number of records at each privacy level."""
        size = 1 if self.epsilons is None else self.epsilons.size
        return np.bincount(self.level, self.n, size).astype(np.int64)

    def pair_sums(self, *values) -> tuple[np.ndarray, list]:
        """Pair keys ``i * m + j`` (increasing) and, per pair, the sum over levels of each array of
        entry values; each pair's levels are added in increasing level, so the sums are a
        function of the tally alone."""
        m = self.n_items
        if self.epsilons is None or self.epsilons.size == 1:  # one level: the entries are the pairs, in order
            return self.i * m + self.j, [np.ones(self.i.size, dtype=np.int64) if v is None else np.asarray(v) + 0.0
                                         for v in values]
        return group_sums(self.i * m + self.j, m * m, *values)

    def pair_counts(self, wins=None, totals=None) -> PairCounts:
        """Per-pair sums of entry values (default: the record values ``wins2 / 2`` and the
        record counts), as :class:`PairCounts` (see :meth:`pair_sums`)."""
        m = self.n_items
        win = self.wins2 / 2.0 if wins is None else wins
        tot = self.n.astype(float) if totals is None else totals
        if self.epsilons is None or self.epsilons.size == 1:  # one level: the entries are the pairs, in order
            return PairCounts(m, self.i, self.j, np.asarray(win, dtype=float), np.asarray(tot, dtype=float), self.items,
                              self.items_declared)
        keys, (win, tot) = self.pair_sums(win, tot)
        return PairCounts(m, keys // m, keys % m, win, tot, self.items, self.items_declared)

    def __repr__(self) -> str:  # never print counts
        kind = "randomized reports" if self.is_randomized else "comparisons"
        return f"ComparisonTally({kind}, {self.n_items} items, {self.i.size} entries)"
