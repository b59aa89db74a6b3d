"""Simulators for preference data.

* :func:`btl_complete_design`: L users, each comparing every pair of m items once under BTL
  (the design of Xu, Sun, Cheng).
* :func:`sample_debiased_release`: a fast path that samples the *privatised* sufficient
  statistic of that design directly (one binomial per pair and epsilon group) with the same
  distribution as randomizing every user's answers and debiasing them.
* :func:`sample_mallows`: complete rankings from the Mallows model around a central order.
* :func:`erdos_renyi_pairs` and :func:`erdos_renyi_comparisons`: the random comparison design
  of Cai, Chakraborty and Wang (each pair observed with probability p, L comparisons per
  observed pair) under any link of :mod:`privrank.pairwise.links`.
* :func:`separated_top_k_scores`: the scores of their simulations (§4.1).
"""
from __future__ import annotations

import numpy as np

from ._rng import as_generator
from .data.comparisons import PairCounts, PairwiseComparisons
from .data.rankings import Rankings
from .errors import InputError, check_epsilons
from .guarantees import UNIT_COMPARISON, Guarantee
from .mechanisms.randomized_response import debias
from .pairwise.links import LOGISTIC, as_link
from .pairwise.release import PairwiseRelease, paper_lambda, record_weights


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
    p = LOGISTIC.cdf(t[i] - t[j])
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
    P = LOGISTIC.cdf(t[i] - t[j])
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


def erdos_renyi_pairs(n: int, p: float, rng=None) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(i, j)``, ``i < j``, of an Erdos-Renyi graph G(n, p): each pair kept independently."""
    if int(n) < 2:
        raise InputError("n must be >= 2")
    if not 0.0 < float(p) <= 1.0:
        raise InputError("p must lie in (0, 1]")
    i, j = np.triu_indices(int(n), 1)
    keep = as_generator(rng).random(i.size) < float(p)
    return i[keep], j[keep]


def erdos_renyi_comparisons(theta, p: float = 1.0, L: int = 1, link="logistic", rng=None) -> PairwiseComparisons:
    """Comparisons on an Erdos-Renyi design (Cai, Chakraborty, Wang §1.1 and §4.1).

    Each pair ``i < j`` is observed with probability ``p``; an observed pair is compared ``L``
    times independently, ``i`` winning each time with probability ``F(theta_i - theta_j)`` for
    the link ``F`` (``"logistic"``: BTL; ``"probit"``: Thurstone, ``F`` the normal CDF). The
    paper's design is ``L = 1``. Records carry no respondent ids. The design is drawn first,
    then the outcomes, from the same ``rng``.
    """
    t = _check_theta(theta)
    if int(L) < 1:
        raise InputError("L must be >= 1")
    gen = as_generator(rng)
    i, j = erdos_renyi_pairs(t.size, p, gen)
    if i.size == 0:
        raise InputError("the sampled design has no comparisons: increase p")
    prob = as_link(link).cdf(t[i] - t[j])
    wins = gen.random((i.size, int(L))) < prob[:, None]
    a = np.repeat(i, int(L))
    b = np.repeat(j, int(L))
    return PairwiseComparisons.from_indices(tuple(range(t.size)), a, b, np.where(wins.ravel(), 1, -1))


def separated_top_k_scores(n: int, rng=None) -> tuple[np.ndarray, int]:
    """Scores of Cai, Chakraborty, Wang's simulations (§4.1, as the authors' code draws them).

    ``k = round(n / 4)`` (half to even); the first ``n - k`` items get ``log U``, ``U`` uniform
    on (0.2, 0.7), the last ``k`` get 0, and the vector is centred. The true top-k set is the
    last ``k`` items, tied among themselves and at least ``log(1/0.7) = 0.357`` above the rest.
    Returns ``(theta, k)``.
    """
    n = int(n)
    if n < 3:
        raise InputError("n must be >= 3 (so that k >= 1)")
    k = int(round(n / 4))
    theta = np.concatenate([np.log(as_generator(rng).uniform(0.2, 0.7, n - k)), np.zeros(k)])
    return theta - theta.mean(), k
