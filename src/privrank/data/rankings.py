"""Complete rankings of labelled items and their pairwise statistic.

:class:`Rankings` holds ``n`` complete strict rankings of ``m`` items as an ``(k, m)`` array of
*orders* (row ``r`` lists item indices best first) with an integer multiplicity per row
(``weights``: a ballot cast by 3 voters is one row of weight 3; ``n`` is the sum of the weights).
Items are indexed ``0 .. m-1`` and carry labels.

The statistic every Kemeny algorithm reads is the pairwise-preference matrix
``w[i, j] = (1/n) #{voters placing i before j}`` (Alabi et al. §2): ``w[i, j] + w[j, i] = 1``
for ``i != j`` and ``w[i, i] = 0``. :meth:`Rankings.pairwise_matrix` builds all of it in
``O(n m^2)``; :meth:`Rankings.preference` answers single entries on demand from the positions,
so an algorithm that reads few entries (KwikSort reads ``O(m log m)``) never builds it.

Footrule aggregation reads the position histogram instead (:func:`position_counts`,
``counts[i, x]`` = voters placing item ``i`` at position ``x``). Orders and positions are
inverse permutations of each other (:func:`positions_of`); :func:`check_permutations` is the one
validation of both.

:class:`RankingTally` holds the same statistics without the rankings -- the integer counts
``N`` and the position counts, or the sum of the voters' local reports -- as the engines of
:mod:`privrank.engines` compute them (``kind="rankings"``); every algorithm that reads only
``w`` takes it in place of a :class:`Rankings`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import InputError, check_labels, index_array, real_array
from ..html_cards import Shown
from .comparisons import first_missing, sorted_labels

# entries of the (rows x pairs) indicator evaluated at once by Rankings.preference
_QUERY_BLOCK = 1 << 22


def _pairwise_matrix(self) -> np.ndarray:
    """The pairwise-preference matrix ``w = N / n`` (Alabi et al. §2)."""
    return self.pairwise_counts() / self.n_voters


def _pair_indices(a, b) -> tuple[np.ndarray, np.ndarray]:
    """The index arrays of a :meth:`Rankings.preference` query, checked."""
    a = np.asarray(a, dtype=np.int64).ravel()
    b = np.asarray(b, dtype=np.int64).ravel()
    if a.shape != b.shape:
        raise InputError("a and b must have the same length")
    return a, b

def check_permutations(rows, *, what: str = "ranking") -> np.ndarray:
    """``rows`` as an ``(k, m)`` int64 array whose every row is a permutation of ``0 .. m-1``.

    A 1-d input is one row. Raises :class:`InputError` naming the first bad row (by index only:
    its content is an individual's preferences).
    """
    o = index_array(rows, name=f"{what}s", what="an (n, m) array of integer indices 0 .. m-1")
    if o.ndim == 1:
        o = o[None, :]
    if o.ndim != 2 or o.shape[0] < 1 or o.shape[1] < 1:
        raise InputError(f"{what}s must be an (n, m) array with n, m >= 1")
    m = o.shape[1]
    bad = np.flatnonzero(np.any(np.sort(o, axis=1) != np.arange(m), axis=1))
    if bad.size:
        raise InputError(f"{what} {int(bad[0])} is not a permutation of the {m} items: every "
                         f"{what} must list each item exactly once (complete, no ties)")
    return o


def check_multiplicities(weights, rows: int) -> np.ndarray:
    """Record multiplicities: one non-negative integer per row, not all zero (``None``: one each)."""
    if weights is None:
        return np.ones(rows, dtype=np.int64)
    w = real_array(weights, name="weights", what="multiplicities, one per ranking")
    if w.shape != (rows,):
        raise InputError("weights must give one multiplicity per ranking")
    if not np.all(np.isfinite(w)) or np.any(w != np.round(w)) or np.any(w < 0):
        raise InputError("weights are multiplicities: non-negative integers, one per ranking")
    if w.sum() < 1:
        raise InputError("the weights sum to zero: there is nothing to aggregate")
    if w.sum() > 2.0 ** 53:
        raise InputError("the weights add up to more than 2^53 voters, which cannot be counted exactly")
    return w.astype(np.int64)


def positions_of(orders) -> np.ndarray:
    """Positions from orders: ``positions[..., i]`` = 0-based position of item ``i``.

    Orders and positions are inverse permutations, so this also turns positions into orders.
    """
    o = np.asarray(orders, dtype=np.int64)
    pos = np.empty_like(o)
    np.put_along_axis(pos, o, np.arange(o.shape[-1]), axis=-1)
    return pos


def position_counts(positions, weights=None) -> np.ndarray:
    """``counts[i, x]``: (weighted) number of rankings placing item ``i`` at position ``x`` (int64).

    ``positions`` is ``(n, m)``, each row a permutation; ``weights`` are non-negative integer
    multiplicities. The sufficient statistic of footrule aggregation (Hillebrand et al. §2).
    """
    pos = check_permutations(positions, what="row of positions")
    w = check_multiplicities(weights, pos.shape[0])
    m = pos.shape[1]
    flat = (np.arange(m)[None, :] * m + pos).ravel()
    return np.bincount(flat, weights=np.repeat(w, m).astype(float),
                       minlength=m * m).reshape(m, m).astype(np.int64)


@dataclass(frozen=True, eq=False)
class Rankings(Shown):
    """Validated complete rankings with item labels and integer multiplicities.

    Build with :meth:`from_orders` or :meth:`from_labels` rather than directly.

    Attributes
    ----------
    items : tuple
        Item labels; item ``k`` internally is ``items[k]``.
    orders : ndarray of int64, shape (k, m)
        Row ``r`` is a permutation of ``0 .. m-1``, best item first.
    weights : ndarray of int64, shape (k,)
        Number of voters who cast row ``r`` (>= 1).
    items_declared : bool
        False when the item labels were read off the ballots and some ballots were completed at
        random (:func:`~privrank.data.io.read_rankings` with ``partial="randomize"`` and no
        ``items``): then which items occur is a fact of the data, and private algorithms refuse
        the profile (:func:`public_items`). Complete strict ballots all rank the same items, so
        their item list is the same in every neighbouring profile.
    selected : bool
        True when ballots were left out for what they hold (``partial="drop"``): the number of
        voters is then a fact of the data, which the private algorithms' noise is calibrated
        to, so they refuse the profile.

    Examples
    --------
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_labels([["b", "a", "c"], ["a", "b", "c"], ["a", "c", "b"]],
    ...                                   weights=[2, 1, 1])
    >>> profile.items, profile.n_voters
    (('a', 'b', 'c'), 4)
    >>> profile.orders
    array([[1, 0, 2],
           [0, 1, 2],
           [0, 2, 1]])
    >>> profile.pairwise_matrix()
    array([[0.  , 0.5 , 1.  ],
           [0.5 , 0.  , 0.75],
           [0.  , 0.25, 0.  ]])
    """

    items: tuple
    orders: np.ndarray
    weights: np.ndarray
    items_declared: bool = True
    selected: bool = False

    @classmethod
    def from_orders(cls, orders, *, items=None, weights=None) -> "Rankings":
        """Build from an ``(k, m)`` array of orders (item indices, best first).

        ``items`` gives the labels (default ``0 .. m-1``); ``weights`` the multiplicity of each
        row (non-negative integers, not all zero, default 1; rows of multiplicity 0 stand for
        nobody and are left out).
        """
        o = np.array(check_permutations(orders))  # a private copy, frozen below
        if np.ndim(orders) != 2:
            raise InputError("rankings must be an (n, m) array of orders with n, m >= 1")
        m = o.shape[1]
        labels = tuple(range(m)) if items is None else check_labels(items)
        if len(labels) != m:
            raise InputError(f"{len(labels)} item labels given for rankings of {m} items")
        if len(set(labels)) != m:
            raise InputError("the item list has a repeated label")
        w = check_multiplicities(weights, o.shape[0])
        if np.any(w == 0):
            o, w = o[w > 0], w[w > 0]
        o.setflags(write=False)
        w.setflags(write=False)
        return cls(labels, o, w)

    def marked(self, *, items_declared: bool = True, selected: bool = False) -> "Rankings":
        """The same profile with its provenance marks (see ``items_declared`` and ``selected``)."""
        return type(self)(self.items, self.orders, self.weights, items_declared, selected)

    @classmethod
    def from_labels(cls, rankings, *, items=None, weights=None) -> "Rankings":
        """Build from rankings given as sequences of item labels, best first.

        ``items`` fixes the item set and its order (default: the labels of the first ranking in
        sorted order).
        """
        if isinstance(rankings, (str, bytes)) or not hasattr(rankings, "__iter__"):
            raise InputError("rankings must be a list of rankings, each a list of item labels, best first")
        rows = [check_labels(r) for r in rankings]
        if not rows:
            raise InputError("no rankings given: the data set is empty")
        labels = sorted_labels(rows[0]) if items is None else check_labels(items)
        missing = first_missing(labels)
        if missing is not None:
            raise InputError("an item label is empty or missing (None, NaN or '')")
        index = {lab: k for k, lab in enumerate(labels)}
        m = len(labels)
        orders = np.empty((len(rows), m), dtype=np.int64)
        for r, row in enumerate(rows):
            if len(row) != m:
                raise InputError(f"ranking {r} has {len(row)} entries, expected {m}: every "
                                 "ranking must list each item exactly once")
            try:
                orders[r] = [index[x] for x in row]
            except KeyError:
                raise InputError(f"ranking {r} names an item outside the item set") from None
        return cls.from_orders(orders, items=labels, weights=weights)

    # ------------------------------------------------------------------ sizes
    @property
    def n_items(self) -> int:
        return int(self.orders.shape[1])

    @property
    def n_voters(self) -> int:
        """Number of voters ``n`` (the sum of the multiplicities)."""
        return int(self.weights.sum())

    def __repr__(self) -> str:  # never print raw preferences
        return f"Rankings({self.n_voters} rankings of {self.n_items} items, {self.orders.shape[0]} stored rows, each with its count)"

    def _card(self) -> dict:  # what the repr says: never raw preferences
        return {"summary": f"{self.n_voters:,} rankings of {self.n_items:,} items",
                "facts": [("stored rows (each with its count)", f"{self.orders.shape[0]:,}")]}

    # ------------------------------------------------------------------ views
    @cached_property
    def positions(self) -> np.ndarray:
        """``positions[r, i]``: 0-based position of item ``i`` in row ``r`` (0 = best)."""
        pos = positions_of(self.orders)
        pos.setflags(write=False)
        return pos

    @cached_property
    def _by_item(self) -> np.ndarray:
        """Positions transposed, ``(m, k)``, in the narrowest integer type: row ``i`` holds item
        ``i``'s position in every row of the profile (contiguous for per-item comparisons)."""
        dtype = np.int16 if self.n_items < 2 ** 15 else np.int32
        return np.ascontiguousarray(self.positions.T.astype(dtype))

    @cached_property
    def _weight_groups(self) -> list:
        """``(multiplicity, row indices)`` per distinct multiplicity (usually very few)."""
        values, inverse = np.unique(self.weights, return_inverse=True)
        if values.size == 1:
            return [(int(values[0]), slice(None))]
        return [(int(v), np.flatnonzero(inverse == k)) for k, v in enumerate(values)]

    def _weighted_count(self, before: np.ndarray) -> np.ndarray:
        """``sum_r weights[r] before[:, r]`` for a boolean ``(q, k)`` array, in exact integers."""
        total = np.zeros(before.shape[0], dtype=np.int64)
        for value, rows in self._weight_groups:  # loop over distinct multiplicities
            total += value * np.count_nonzero(before[:, rows], axis=1)
        return total

    def expanded(self) -> np.ndarray:
        """One order per voter: rows repeated by their multiplicity, shape ``(n, m)``."""
        return np.repeat(self.orders, self.weights, axis=0)

    def labels_of(self, order) -> list:
        """Item labels of an order of item indices."""
        return [self.items[int(k)] for k in order]

    # ------------------------------------------------------------------ pairwise statistic
    def pairwise_counts(self) -> np.ndarray:
        """``N[i, j]``: number of voters placing ``i`` before ``j`` (``N[i, i] = 0``), int64."""
        P = self._by_item
        m = self.n_items
        N = np.empty((m, m), dtype=np.int64)
        for j in range(m):  # one column per item, vectorised over items and rankings
            N[:, j] = self._weighted_count(P < P[j])
        return N

    pairwise_matrix = _pairwise_matrix

    def preference(self, a, b) -> np.ndarray:
        """``w[a[k], b[k]]`` for index arrays ``a``, ``b``, computed from the positions on demand."""
        a, b = _pair_indices(a, b)
        P = self._by_item
        out = np.empty(a.size)
        step = max(1, _QUERY_BLOCK // max(1, P.shape[1]))
        for s in range(0, a.size, step):  # blocks of queries, each vectorised
            out[s:s + step] = self._weighted_count(P[a[s:s + step]] < P[b[s:s + step]])
        return out / self.n_voters


TALLY_STATISTICS = ("pairwise", "positions")


@dataclass(frozen=True, eq=False)
class RankingTally(Shown):
    """Sufficient statistics of ``n`` complete rankings, without the rankings.

    Built by :func:`privrank.sufficient_statistics` (``kind="rankings"``). It answers the
    queries of :class:`Rankings` that need only ``w`` (:meth:`pairwise_counts`,
    :meth:`pairwise_matrix`, :meth:`preference`), so the Kemeny algorithms that read only ``w``
    take it in place of the profile.

    Attributes
    ----------
    items : tuple
        Item labels in index order.
    n_voters : int
        Number of voters ``n`` (public in every guarantee of privrank's ranking aggregation).
    pair_counts : ndarray of int64, shape (m, m), or None
        ``N[i, j]``: voters placing ``i`` before ``j`` (exact, computed from the raw rankings).
    position_counts : ndarray of int64, shape (m, m), or None
        ``counts[q, x]``: voters placing item ``q`` at position ``x`` (0 = best; exact).
    reports : ndarray of int64 or None
        The fixed-point sum of the voters' epsilon-local-DP reports of ``statistic``
        (:func:`~privrank.mechanisms.pairwise_matrix.local_pair_reports` or
        :func:`~privrank.mechanisms.tree.local_footrule_reports`); when set, the tally holds
        nothing exact.
    statistic : {"pairwise", "positions"} or None
        What ``reports`` randomize.
    epsilon : float or None
        Every voter's epsilon for ``reports``.
    kappa : float or None
        Weight growth factor of the binary tree of ``positions`` reports.
    seeded : bool
        The reports were drawn with a seed: research output, not a release.
    items_declared, selected : bool
        The provenance marks of the profile it was computed from (see :class:`Rankings`): a
        private algorithm refuses the tally as it refuses the profile (:func:`releasable`).

    Examples
    --------
    The sufficient statistics of rankings, without the rankings:

    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2], [1, 0, 2], [0, 2, 1]], items=["a", "b", "c"])
    >>> tally = pr.sufficient_statistics(profile, kind="rankings")
    >>> tally.n_voters, tally.items
    (3, ('a', 'b', 'c'))
    >>> tally.pairwise_counts()
    array([[0, 2, 3],
           [1, 0, 2],
           [0, 1, 0]])
    >>> tally.position_counts
    array([[2, 1, 0],
           [1, 1, 1],
           [0, 1, 2]])
    """

    items: tuple
    n_voters: int
    pair_counts: np.ndarray | None = None
    position_counts: np.ndarray | None = None
    reports: np.ndarray | None = None
    statistic: str | None = None
    epsilon: float | None = None
    kappa: float | None = None
    seeded: bool = False
    items_declared: bool = True
    selected: bool = False

    @property
    def n_items(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:  # never print statistics of the raw data
        held = [name for name in ("pair_counts", "position_counts", "reports") if getattr(self, name) is not None]
        return f"RankingTally({self.n_voters} rankings of {self.n_items} items; {', '.join(held)})"

    def _card(self) -> dict:  # what the repr says: never statistics of the raw data
        held = [name for name in ("pair_counts", "position_counts", "reports") if getattr(self, name) is not None]
        return {"summary": f"{self.n_voters:,} rankings of {self.n_items:,} items",
                "facts": [("statistics held", ", ".join(held) or "none")]}

    def labels_of(self, order) -> list:
        """Item labels of an order of item indices."""
        return [self.items[int(k)] for k in order]

    def pairwise_counts(self) -> np.ndarray:
        """``N[i, j]``: number of voters placing ``i`` before ``j`` (int64), as :meth:`Rankings.pairwise_counts`."""
        if self.pair_counts is None:
            raise InputError("this tally holds no exact pairwise counts; compute it with "
                             "statistic='pairwise' (or both statistics) and without epsilon")
        return self.pair_counts

    pairwise_matrix = _pairwise_matrix

    def preference(self, a, b) -> np.ndarray:
        """``w[a[k], b[k]]`` for index arrays ``a``, ``b``."""
        a, b = _pair_indices(a, b)
        return self.pairwise_counts()[a, b] / self.n_voters

    def position_histogram(self) -> np.ndarray:
        """``counts[i, x]``: voters placing item ``i`` at position ``x`` (int64), as :func:`position_counts`."""
        if self.position_counts is None:
            raise InputError("this tally holds no exact position counts; compute it with "
                             "statistic='positions' (or both statistics) and without epsilon")
        return self.position_counts

    def local_reports(self, statistic: str, epsilon: float) -> np.ndarray:
        """The sum of the voters' local reports of ``statistic``, checked to be drawn at ``epsilon``."""
        if self.reports is None or self.statistic != statistic:
            raise InputError(f"this tally holds no local reports of the {statistic} statistic; compute it "
                             f"with sufficient_statistics(..., kind='rankings', statistic='{statistic}', "
                             "epsilon=...)")
        if self.epsilon != epsilon:
            raise InputError(f"the voters randomized their rankings at epsilon {self.epsilon:g}: give that epsilon")
        return self.reports


def releasable(profile):
    """``profile`` for a private algorithm: refused when its items or its size were decided by the data."""
    if getattr(profile, "selected", False):
        raise InputError("these rankings kept only the complete ballots (partial='drop'), so the number of "
                         "voters is a fact of the data and the noise would be calibrated to it; use "
                         "partial='randomize' (CLI: --partial randomize), which keeps every ballot")
    if not getattr(profile, "items_declared", True):
        raise InputError("a private release needs the public item list: these rankings name their items only "
                         "in ballots completed at random, so which items occur is a fact of the data; give "
                         "the item list (read_rankings(..., items=...); CLI: --items FILE)")
    return profile
