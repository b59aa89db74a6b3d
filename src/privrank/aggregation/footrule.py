"""Footrule rank aggregation by minimum-cost assignment (non-private core).

The Spearman footrule objective of a consensus ranking ``psi`` over a profile of complete
rankings is ``F(psi) = (1/n) sum_i sum_q |psi(q) - pi_i(q)|`` (positions 0-based). It is
separable: ``F(psi) = sum_q C[q, psi(q)]`` with the footrule cost matrix
``C[q, j] = (1/n) sum_i |pi_i(q) - j|``, so the optimum is a minimum-cost perfect matching of
items to positions (Dwork, Kumar, Naor, Sivakumar 2001), solved exactly by
:func:`scipy.optimize.linear_sum_assignment` in ``O(m^3)``.

Because Kendall tau ``K`` and footrule satisfy ``K <= F <= 2K`` (Diaconis and Graham), the
footrule optimum -- and any ``(1, beta)``-approximation of it -- is a ``(2, beta)``-approximation
of Kemeny aggregation (Hillebrand et al. Theorem 4.2, Lemma C.4).

Everything here is post-processing of a cost matrix: with the exact matrix it is the
non-private optimum, with a privately released matrix (:mod:`privrank.mechanisms.tree`) it is
Hillebrand et al. Algorithm 2.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import linear_sum_assignment

from ..data.ranking_files import as_rankings
from ..data.rankings import Rankings, RankingTally, position_counts, positions_of
from ..data.tabular import TableLike
from ..errors import InputError


def footrule_cost_matrix(profile: Rankings | RankingTally | ArrayLike | TableLike,
                         weights: ArrayLike | None = None) -> np.ndarray:
    """Exact footrule cost matrix ``C[q, j] = (1/n) sum_i |pi_i(q) - j|`` (rows items, columns positions).

    ``profile`` is :class:`~privrank.data.rankings.Rankings` or an ``(n, m)`` array of orders;
    ``weights`` are ranking multiplicities.

    Examples
    --------
    >>> import numpy as np
    >>> import privrank as pr
    >>> np.round(pr.footrule_cost_matrix([[0, 1, 2], [1, 0, 2], [0, 2, 1]]), 3)
    array([[0.333, 0.667, 1.667],
           [1.   , 0.667, 1.   ],
           [1.667, 0.667, 0.333]])
    """
    if isinstance(profile, RankingTally):
        return costs_from_position_counts(profile.position_histogram(), profile.n_voters)
    R = as_rankings(profile, weights)
    return costs_from_position_counts(position_counts(R.positions, R.weights), R.n_voters)


def costs_from_position_counts(counts, n) -> np.ndarray:
    """The footrule cost matrix from position counts: ``C[q, j] = (1/n) sum_x counts[q, x] |x - j|``.

    ``counts[q, x]`` is the (weighted) number of the ``n`` rankings placing item ``q`` at
    position ``x`` (:func:`privrank.data.rankings.position_counts`), the whole statistic
    footrule aggregation needs.
    """
    m = np.shape(counts)[0]
    dist = np.abs(np.arange(m)[:, None] - np.arange(m)[None, :]).astype(float)
    return np.asarray(counts) @ dist / n


def assignment_order(costs) -> np.ndarray:
    """Order (best first) of the minimum-cost assignment of items (rows) to positions (columns).

    Any real costs are allowed (noisy matrices may be negative). Ties are broken by the
    solver's deterministic rule; with continuous noise they occur with probability 0.
    """
    C = np.asarray(costs, dtype=float)
    if C.ndim != 2 or C.shape[0] != C.shape[1] or C.shape[0] < 1:
        raise InputError("the cost matrix must be square (items x positions)")
    if not np.all(np.isfinite(C)):
        raise InputError("the cost matrix must be finite")
    rows, cols = linear_sum_assignment(C)
    position = np.empty(C.shape[0], dtype=np.int64)
    position[rows] = cols
    return positions_of(position)  # the order is the inverse permutation of the positions


def footrule_optimal_order(profile: Rankings | RankingTally | ArrayLike | TableLike,
                           weights: ArrayLike | None = None) -> np.ndarray:
    """An exact footrule-optimal consensus order (best first) of the profile (not private).

    Examples
    --------
    >>> import privrank as pr
    >>> pr.footrule_optimal_order([[0, 1, 2], [1, 0, 2], [0, 2, 1]])
    array([0, 1, 2])
    """
    return assignment_order(footrule_cost_matrix(profile, weights))
