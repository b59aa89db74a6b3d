"""Simulators for preference data.

* :func:`btl_complete_design`: L users, each comparing every pair of m items once under BTL
  (the design of Xu, Sun, Cheng).
* :func:`sample_debiased_release`: a fast path that samples the *privatised* sufficient
  statistic of that design directly (one binomial per pair and epsilon group) with the same
  distribution as randomizing every user's answers and debiasing them.
* :func:`sample_mallows`: complete rankings from the Mallows model around a central order.
"""
from __future__ import annotations

import numpy as np

from ._rng import as_generator
from .data.comparisons import PairCounts, PairwiseComparisons
from .data.rankings import Rankings
from .errors import InputError, check_epsilons
from .guarantees import UNIT_COMPARISON, Guarantee
from .pairwise.release import PairwiseRelease, paper_lambda, record_weights


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _check_theta(theta) -> np.ndarray:
    t = np.asarray(theta, dtype=float)
    if t.ndim != 1 or t.size < 2 or not np.all(np.isfinite(t)):
        raise InputError("theta must be a finite vector of at least two scores")
    return t


def btl_complete_design(theta, L: int, rng=None) -> PairwiseComparisons:
    """Every one of ``L`` users compares every pair ``i < j`` once; ``P(i beats j) = sigmoid(theta_i - theta_j)``."""
    t = _check_theta(theta)
    gen = as_generator(rng)
    m = t.size
    if int(L) < 1:
        raise InputError("L must be >= 1")
    i, j = np.triu_indices(m, 1)
    p = _sigmoid(t[i] - t[j])
    wins = gen.random((int(L), i.size)) < p
    a = np.broadcast_to(i, wins.shape).ravel()
    b = np.broadcast_to(j, wins.shape).ravel()
    user = np.repeat(np.arange(int(L)), i.size)
    return PairwiseComparisons.from_indices(tuple(range(m)), a, b, np.where(wins.ravel(), 1, -1), user=user)


def sample_debiased_release(theta, L: int, epsilon, rng=None, *, weights: str = "uniform") -> PairwiseRelease:
    """Sample the debiased-RR release of the complete design without simulating each user.

    ``epsilon`` is a scalar (all users) or one value per user. Users are grouped by epsilon;
    within a group of size ``L_g`` the number of reported wins of i over j is
    ``Binomial(L_g, q_ij)`` with ``q_ij = 1/2 + tanh(eps/2) (P_ij - 1/2)``, and the debiased sum is
    ``((e^eps + 1) * count - L_g) / (e^eps - 1)``. The guarantee is that of the real mechanism.
    """
    t = _check_theta(theta)
    gen = as_generator(rng)
    L = int(L)
    eps_users = np.broadcast_to(check_epsilons(epsilon), (L,)) if np.ndim(epsilon) else \
        np.full(L, float(check_epsilons([epsilon])[0]))
    m = t.size
    i, j = np.triu_indices(m, 1)
    P = _sigmoid(t[i] - t[j])
    levels, group_sizes = np.unique(eps_users, return_counts=True)
    w_user, G = record_weights(np.repeat(levels, group_sizes), weights)
    wins = np.zeros(i.size)
    totals = np.zeros(i.size)
    start = 0
    for eps, Lg in zip(levels, group_sizes):
        wg = 1.0 if w_user is None else float(w_user[start])
        start += Lg
        q = 0.5 + np.tanh(eps / 2.0) * (P - 0.5)
        count = gen.binomial(Lg, q)
        em1 = np.expm1(eps)
        wins += wg * ((em1 + 2.0) * count - Lg) / em1
        totals += wg * Lg
    pc = PairCounts.from_arrays(m, i, j, wins, totals, items=tuple(range(m)))
    per_cmp = float(levels.max())
    g = Guarantee(epsilon=per_cmp, model="local", unit=UNIT_COMPARISON,
                  mechanism="debiased randomized response", epsilon_per_comparison=per_cmp,
                  epsilon_per_user=per_cmp * i.size)
    return PairwiseRelease(pc, g, G, paper_lambda(eps_users))


def sample_mallows(center, *, phi: float, n: int, rng=None) -> Rankings:
    """``n`` rankings from the Mallows model: ``P(pi) proportional to phi^K(pi, center)``.

    Parameters
    ----------
    center
        The central order (item indices, best first), or an int ``m`` for ``0, 1, ..., m-1``.
    phi
        Dispersion in ``[0, 1]``: 0 gives ``center`` every time, 1 the uniform distribution.
    n
        Number of rankings.

    Notes
    -----
    Repeated insertion (Doignon, Pekec, Regenwetter 2004): the ``j``-th item of ``center``
    (``j = 0, 1, ...``) is inserted into the list of the first ``j`` items, ``k`` places above
    the bottom with probability proportional to ``phi^k`` (``k = 0 .. j``), creating exactly
    ``k`` inversions. The truncated geometric ``k`` is drawn by inversion of its CDF,
    vectorised over the ``n`` rankings; total cost ``O(n m^2)``.
    """
    c = np.arange(int(center)) if np.ndim(center) == 0 else np.asarray(center, dtype=np.int64)
    m = c.size
    if m < 1 or np.any(np.sort(c) != np.arange(m)):
        raise InputError("center must be a permutation of 0 .. m-1 (or the number of items m)")
    phi = float(phi)
    if not 0.0 <= phi <= 1.0:
        raise InputError("phi must lie in [0, 1]")
    n = int(n)
    if n < 1:
        raise InputError("n must be >= 1")
    gen = as_generator(rng)
    dtype = np.int16 if m < 2 ** 15 else np.int32
    pos = np.zeros((n, m), dtype=dtype)  # pos[:, j]: current position of center's j-th item
    u = gen.random((n, m))
    for j in range(1, m):
        if phi == 0.0:
            k = np.zeros(n, dtype=np.int32)
        elif phi == 1.0:
            k = np.floor(u[:, j] * (j + 1)).astype(np.int32)
        else:  # P(k) = phi^k (1 - phi) / (1 - phi^(j+1)), k = 0..j
            k = np.floor(np.log1p(-u[:, j] * (1.0 - phi ** (j + 1))) / np.log(phi)).astype(np.int32)
        k = np.minimum(k, j)
        slot = (j - k).astype(dtype)[:, None]
        pos[:, :j] += pos[:, :j] >= slot
        pos[:, j] = slot[:, 0]
    orders = np.empty((n, m), dtype=np.int64)
    np.put_along_axis(orders, pos.astype(np.int64), np.broadcast_to(c, (n, m)), axis=1)
    return Rankings.from_orders(orders)
