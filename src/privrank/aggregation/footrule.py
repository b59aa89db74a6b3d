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
from scipy.optimize import linear_sum_assignment

from ..errors import InputError


def profile_arrays(profile, weights=None) -> tuple[np.ndarray, np.ndarray]:
    """``(orders, weights)`` of a ranking profile.

    ``profile`` is a :class:`privrank.Rankings`-like object (``orders`` n x m best first,
    ``weights``) or an ``(n, m)`` integer array of orders. Weights default to 1 per ranking.
    """
    if hasattr(profile, "orders"):
        orders = np.asarray(profile.orders)
        if weights is None:
            weights = getattr(profile, "weights", None)
    else:
        orders = np.asarray(profile)
    if orders.ndim != 2 or orders.shape[0] < 1 or orders.shape[1] < 1:
        raise InputError("rankings must be an (n, m) array of orders with n, m >= 1")
    m = orders.shape[1]
    if not np.issubdtype(orders.dtype, np.integer):
        raise InputError("orders must hold integer item indices 0 .. m-1")
    if np.any(np.sort(orders, axis=1) != np.arange(m)):
        raise InputError("every ranking must be complete and strict: a permutation of the "
                         "items (footrule aggregation does not handle ties or partial lists)")
    if weights is None:
        w = np.ones(orders.shape[0])
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != (orders.shape[0],) or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise InputError("weights must be finite, non-negative and one per ranking")
        if w.sum() <= 0:
            raise InputError("weights sum to zero: no rankings to aggregate")
    return orders.astype(np.int64), w


def positions_of(orders: np.ndarray) -> np.ndarray:
    """Positions from orders: ``positions[i, q]`` = 0-based position of item ``q`` in ranking ``i``."""
    return np.argsort(orders, axis=-1, kind="stable")


def footrule_cost_matrix(profile, weights=None) -> np.ndarray:
    """Exact footrule cost matrix ``C[q, j] = (weighted mean over rankings) |pi_i(q) - j|``."""
    orders, w = profile_arrays(profile, weights)
    n, m = orders.shape
    pos = positions_of(orders)
    flat = (np.arange(m)[None, :] * m + pos).ravel()
    return costs_from_position_counts(np.bincount(flat, weights=np.repeat(w, m), minlength=m * m).reshape(m, m),
                                      w.sum())


def costs_from_position_counts(counts, n) -> np.ndarray:
    """The footrule cost matrix from position counts: ``C[q, j] = (1/n) sum_x counts[q, x] |x - j|``.

    ``counts[q, x]`` is the (weighted) number of the ``n`` rankings placing item ``q`` at
    position ``x`` (:func:`privrank.mechanisms.tree.position_counts`), the whole statistic
    footrule aggregation needs.
    """
    m = np.shape(counts)[0]
    dist = np.abs(np.arange(m)[:, None] - np.arange(m)[None, :]).astype(float)
    return (np.asarray(counts) / n) @ dist


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
    return np.argsort(position, kind="stable")


def footrule_optimal_order(profile, weights=None) -> np.ndarray:
    """An exact footrule-optimal consensus order (best first) of the profile (not private)."""
    return assignment_order(footrule_cost_matrix(profile, weights))


def assignment_cost(costs, order) -> float:
    """``sum_q C[q, position(q)]`` of an order under a cost matrix."""
    C = np.asarray(costs, dtype=float)
    order = np.asarray(order)
    return float(C[order, np.arange(order.size)].sum())
