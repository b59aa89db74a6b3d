"""Simulators for preference data.

* :func:`btl_complete_design`: L users, each comparing every pair of m items once under BTL
  (the design of Xu, Sun, Cheng).
* :func:`sample_local_releases`: a fast path that samples the *privatised* sufficient
  statistic of that design directly (a few draws per pair and epsilon group) for debiased and
  classic randomized response, the Laplace baseline and no privacy, with the same distribution
  as randomizing every user's answers; :func:`sample_debiased_release` is its debiased part.
"""
from __future__ import annotations

import numpy as np

from ._rng import as_generator
from .data.comparisons import PairCounts, PairwiseComparisons
from .errors import InputError, check_epsilons
from .guarantees import UNIT_COMPARISON, Guarantee
from .mechanisms.noise import laplace_sum
from .mechanisms.randomized_response import debias, randomize_counts
from .pairwise.local import LAPLACE_NOTE, laplace_variance_factor
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


LOCAL_RELEASES = ("debiased", "classic", "laplace", "none")


def _release_guarantee(mechanism: str, eps_max: float, n_pairs: int, note: str = "") -> Guarantee:
    return Guarantee(epsilon=eps_max, model="local", unit=UNIT_COMPARISON, mechanism=mechanism,
                     epsilon_per_comparison=eps_max, epsilon_per_user=eps_max * n_pairs, note=note)


def sample_local_releases(theta, L: int, epsilon, mechanisms=("debiased",), rng=None, *,
                          weights: str = "uniform") -> dict[str, PairwiseRelease]:
    """Simulate one complete design and release it by several local mechanisms at once.

    Each of ``L`` users answers every pair ``i < j`` under BTL and the answers are released by
    each mechanism in ``mechanisms`` (see :data:`LOCAL_RELEASES`), without simulating users one
    by one: users are grouped by epsilon, and within a group of ``L_g`` users

    * the true number of users preferring i to j is ``Binomial(L_g, P_ij)``;
    * ``"debiased"`` and ``"classic"`` randomize those answers (the number of "i wins" reports is
      drawn by :func:`privrank.mechanisms.randomized_response.randomize_counts`); debiased
      randomized response (Xu, Sun, Cheng eq. 1) debiases the reports, classic randomized
      response fits them as they are. Both share the same reports, as in the real pipeline;
    * ``"laplace"`` adds the sum of ``L_g`` Laplace(1/eps) draws to the true count
      (:func:`privrank.mechanisms.noise.laplace_sum`);
    * ``"none"`` is the true count (not private).

    Every release has exactly the distribution of running the per-user mechanism of
    :mod:`privrank.pairwise.local` on :func:`btl_complete_design` data, and carries that
    mechanism's guarantee: eps-local DP per comparison, ``eps * m(m-1)/2`` per user.

    Parameters
    ----------
    theta : array_like
        True BTL scores.
    L : int
        Number of users.
    epsilon : float or array_like
        Per-comparison epsilon of all users, or one value per user.
    weights : {"uniform", "inverse_variance"}
        Weighting of the debiased reports (:func:`privrank.pairwise.release.record_weights`).
    """
    t = _check_theta(theta)
    gen = as_generator(rng)
    L = int(L)
    if L < 1:
        raise InputError("L must be >= 1")
    unknown = set(mechanisms) - set(LOCAL_RELEASES)
    if unknown:
        raise InputError(f"mechanisms must be among {', '.join(LOCAL_RELEASES)}")
    eps_users = np.broadcast_to(check_epsilons(epsilon), (L,)) if np.ndim(epsilon) else \
        np.full(L, float(check_epsilons([epsilon])[0]))
    m = t.size
    i, j = np.triu_indices(m, 1)
    levels, sizes = np.unique(eps_users, return_counts=True)
    eps_g, L_g = levels[:, None], sizes[:, None]
    true_wins = gen.binomial(L_g, _sigmoid(t[i] - t[j])[None, :])  # one row per epsilon group
    totals = np.full(i.size, float(L))
    per_cmp = float(levels.max())
    out = {}

    def release(wins, totals, guarantee, G, lam):
        counts = PairCounts.from_arrays(m, i, j, wins, totals, items=tuple(range(m)))
        return PairwiseRelease(counts, guarantee, G, lam)

    if "debiased" in mechanisms or "classic" in mechanisms:
        reports = randomize_counts(true_wins, L_g, eps_g, gen)
        if "debiased" in mechanisms:
            w_user, G = record_weights(np.repeat(levels, sizes), weights)
            w_g = np.ones((levels.size, 1)) if w_user is None else w_user[np.cumsum(sizes) - sizes][:, None]
            debiased = L_g * debias(reports / L_g, eps_g)
            out["debiased"] = release((w_g * debiased).sum(0), np.full(i.size, float((w_g * L_g).sum())),
                                      _release_guarantee("debiased randomized response", per_cmp, i.size),
                                      G, paper_lambda(eps_users))
        if "classic" in mechanisms:
            out["classic"] = release(reports.sum(0).astype(float), totals,
                                     _release_guarantee("classic randomized response", per_cmp, i.size),
                                     record_weights(eps_users, "uniform")[1], paper_lambda(eps_users))
    if "laplace" in mechanisms:
        noisy = true_wins + laplace_sum(1.0 / eps_g, L_g, true_wins.shape, gen)
        out["laplace"] = release(noisy.sum(0), totals,
                                 _release_guarantee("local Laplace", per_cmp, i.size, LAPLACE_NOTE),
                                 laplace_variance_factor(eps_users), paper_lambda(eps_users))
    if "none" in mechanisms:
        out["none"] = release(true_wins.sum(0).astype(float), totals, Guarantee.non_private("none"), 1.0, None)
    return {name: out[name] for name in mechanisms}


def sample_debiased_release(theta, L: int, epsilon, rng=None, *, weights: str = "uniform") -> PairwiseRelease:
    """The debiased-RR release of :func:`sample_local_releases` alone."""
    return sample_local_releases(theta, L, epsilon, ("debiased",), rng, weights=weights)["debiased"]
