"""Simulators for preference data.

* :func:`btl_complete_design`: L users, each comparing every pair of m items once under BTL
  (the design of Xu, Sun, Cheng).
* :func:`sample_debiased_release`: a fast path that samples the *privatised* sufficient
  statistic of that design directly (one binomial per pair and epsilon group) with the same
  distribution as randomizing every user's answers and debiasing them.
"""
from __future__ import annotations

import numpy as np

from ._rng import as_generator
from .data.comparisons import PairCounts, PairwiseComparisons
from .errors import InputError, check_epsilons
from .guarantees import UNIT_COMPARISON, Guarantee
from .mechanisms.randomized_response import debias
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
    w_level, G = record_weights(levels, weights, group_sizes)
    wins = np.zeros(i.size)
    totals = np.zeros(i.size)
    for k, (eps, Lg) in enumerate(zip(levels, group_sizes)):
        wg = 1.0 if w_level is None else float(w_level[k])
        q = 0.5 + np.tanh(eps / 2.0) * (P - 0.5)
        wins += wg * debias(gen.binomial(Lg, q), eps, Lg)
        totals += wg * Lg
    pc = PairCounts.from_arrays(m, i, j, wins, totals, items=tuple(range(m)))
    per_cmp = float(levels.max())
    g = Guarantee(epsilon=per_cmp, model="local", unit=UNIT_COMPARISON,
                  mechanism="debiased randomized response", epsilon_per_comparison=per_cmp,
                  epsilon_per_user=per_cmp * i.size)
    return PairwiseRelease(pc, g, G, paper_lambda(levels, group_sizes))
