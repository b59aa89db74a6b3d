"""Simulators for preference data.

* :func:`btl_complete_design`: L users, each comparing every pair of m items once under BTL
  (the design of Xu, Sun, Cheng).
* :func:`sample_local_releases`: a fast path that samples the *privatised* sufficient
  statistic of that design directly (a few draws per pair and epsilon group) for debiased and
  classic randomized response, the Laplace baseline and no privacy, with the same distribution
  as randomizing every user's answers; :func:`sample_debiased_release` is its debiased part.
* :func:`release_complete_answers`: the same fast path for given (real) answers of a complete
  design.
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
from .pairwise.release import TIE_NOTE, PairwiseRelease, paper_lambda, record_weights


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


def _complete_design_releases(m, wins, ties, sizes, levels, mechanisms, gen, weights) -> dict:
    """Releases of a complete design from its true answer counts (one row per epsilon group).

    ``wins[g, k]`` and ``ties[g, k]`` count the users of group ``g`` (``sizes[g]`` users at
    epsilon ``levels[g]``) who preferred ``i`` to ``j`` and who had no preference, for the k-th
    pair ``i < j`` in :func:`numpy.triu_indices` order.
    """
    unknown = set(mechanisms) - set(LOCAL_RELEASES)
    if unknown:
        raise InputError(f"mechanisms must be among {', '.join(LOCAL_RELEASES)}")
    i, j = np.triu_indices(m, 1)
    eps_g, L_g = levels[:, None], sizes[:, None]
    eps_users = np.repeat(levels, sizes)
    totals = np.full(i.size, float(sizes.sum()))
    per_cmp = float(levels.max())
    truth = wins + 0.5 * ties  # a tie is half a win to each item

    def release(w, tot, mechanism, G, note=""):
        guarantee = (Guarantee.non_private("none") if mechanism == "none" else
                     Guarantee(epsilon=per_cmp, model="local", unit=UNIT_COMPARISON, mechanism=mechanism,
                               epsilon_per_comparison=per_cmp, epsilon_per_user=per_cmp * i.size, note=note))
        lam = None if mechanism == "none" else paper_lambda(eps_users)
        return PairwiseRelease(PairCounts.from_arrays(m, i, j, w, tot, items=tuple(range(m))), guarantee, G, lam)

    out = {}
    if "debiased" in mechanisms or "classic" in mechanisms:
        reports = randomize_counts(wins, L_g, eps_g, gen, ties=ties)
        note = TIE_NOTE if np.any(ties) else ""
        if "debiased" in mechanisms:
            w_users, G = record_weights(eps_users, weights)
            w_g = np.ones_like(eps_g) if w_users is None else w_users[np.cumsum(sizes) - sizes][:, None]
            debiased = L_g * debias(reports / L_g, eps_g)
            out["debiased"] = release((w_g * debiased).sum(0), np.full(i.size, float((w_g * L_g).sum())),
                                      "debiased randomized response", G, note)
        if "classic" in mechanisms:
            out["classic"] = release(reports.sum(0).astype(float), totals, "classic randomized response",
                                     record_weights(eps_users, "uniform")[1], note)
    if "laplace" in mechanisms:
        noisy = truth + laplace_sum(1.0 / eps_g, L_g, truth.shape, gen)
        out["laplace"] = release(noisy.sum(0), totals, "local Laplace", laplace_variance_factor(eps_users),
                                 LAPLACE_NOTE)
    if "none" in mechanisms:
        out["none"] = release(truth.sum(0), totals, "none", 1.0)
    return {name: out[name] for name in mechanisms}


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
    eps_users = np.broadcast_to(check_epsilons(epsilon), (L,)) if np.ndim(epsilon) else \
        np.full(L, float(check_epsilons([epsilon])[0]))
    i, j = np.triu_indices(t.size, 1)
    levels, sizes = np.unique(eps_users, return_counts=True)
    wins = gen.binomial(sizes[:, None], _sigmoid(t[i] - t[j])[None, :])
    return _complete_design_releases(t.size, wins, np.zeros_like(wins), sizes, levels, mechanisms, gen, weights)


def sample_debiased_release(theta, L: int, epsilon, rng=None, *, weights: str = "uniform") -> PairwiseRelease:
    """The debiased-RR release of :func:`sample_local_releases` alone."""
    return sample_local_releases(theta, L, epsilon, ("debiased",), rng, weights=weights)["debiased"]


def release_complete_answers(answers, epsilon=None, mechanisms=("debiased",), rng=None) -> dict[str, PairwiseRelease]:
    """Release real answers of a complete design by local mechanisms, drawn from their counts.

    ``answers`` is an ``(L, m(m-1)/2)`` array: row ``l`` holds user l's answer to every pair
    ``i < j`` (:func:`numpy.triu_indices` order), 1 if i is preferred, -1 if j, 0 for no
    preference. The mechanisms are those of :func:`sample_local_releases` at one
    ``epsilon`` (not needed for ``"none"``); ties are answered as a fair coin by randomized
    response and count half a win otherwise, as in :mod:`privrank.pairwise.local`. Only the
    per-pair counts are used, so each release has exactly the distribution of randomizing
    every answer, at a cost that does not grow with L. Guarantee: eps-local DP per comparison,
    ``eps * m(m-1)/2`` per user.
    """
    y = np.asarray(answers)
    n_pairs = y.shape[-1] if y.ndim == 2 else 0
    m = int(round((1 + np.sqrt(1 + 8 * n_pairs)) / 2))
    if y.ndim != 2 or y.shape[0] < 1 or n_pairs < 1 or m * (m - 1) // 2 != n_pairs or \
            not np.all(np.isin(y, (-1, 0, 1))):
        raise InputError("answers must be an (L, m(m-1)/2) array of 1, -1 and 0, one row per user")
    if epsilon is None:
        if set(mechanisms) - {"none"}:
            raise InputError("epsilon is needed for a private mechanism")
        epsilon = 1.0
    levels = np.array([check_epsilons([epsilon])[0]])
    wins = (y == 1).sum(0)[None, :]
    ties = (y == 0).sum(0)[None, :]
    return _complete_design_releases(m, wins, ties, np.array([y.shape[0]]), levels, mechanisms, as_generator(rng),
                                     "uniform")
