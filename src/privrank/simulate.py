"""Simulators for preference data.

* :func:`btl_complete_design`: L users, each comparing every pair of m items once under BTL
  (the design of Xu, Sun, Cheng).
* :func:`sample_local_releases`: a fast path that samples the *privatised* sufficient
  statistic of that design directly (a few draws per pair and epsilon group) for debiased and
  classic randomized response, the Laplace baseline and no privacy, with the same distribution
  as randomizing every user's answers; :func:`sample_debiased_release` is its debiased part.
* :func:`release_complete_answers`: the same fast path for given (real) answers of a complete
  design.
* :func:`sample_mallows`: complete rankings from the Mallows model around a central order.
* :func:`sample_polarized`: complete rankings split between one order, its reverse and uniform
  noise -- a profile full of near-ties, hard for private aggregation.
* :func:`erdos_renyi_pairs` and :func:`erdos_renyi_comparisons`: the random comparison design
  of Cai, Chakraborty and Wang (each pair observed with probability p, L comparisons per
  observed pair) under any link of :mod:`privrank.pairwise.links`;
  :func:`erdos_renyi_counts` samples its per-pair counts directly.
* :func:`separated_top_k_scores`: the scores of their simulations (§4.1).
"""
from __future__ import annotations

import numpy as np

from ._rng import as_generator
from .data.comparisons import PairwiseComparisons
from .data.pair_counts import PairCounts
from .data.rankings import Rankings
from .errors import InputError, check_epsilons
from .guarantees import UNIT_COMPARISON, Guarantee
from .mechanisms.noise import laplace_sum
from .mechanisms.randomized_response import added_variance, debias, randomize_counts
from .pairwise.links import LOGISTIC, as_link
from .pairwise.local import LAPLACE_NOTE, laplace_variance_factor
from .pairwise.release import TIE_NOTE, PairwiseRelease, paper_lambda, record_weights


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


LOCAL_RELEASES = ("debiased", "classic", "laplace", "none")


def _complete_design_releases(m, pairs, wins, ties, sizes, levels, mechanisms, gen, weights) -> dict:
    """Releases of a complete design from its true answer counts (one row per epsilon group).

    ``wins[g, k]`` and ``ties[g, k]`` count the users of group ``g`` (``sizes[g]`` users at
    epsilon ``levels[g]``) who preferred ``i`` to ``j`` and who had no preference, for the k-th
    pair ``(i, j) = (pairs[0][k], pairs[1][k])``, ``i < j``. Every release also carries the
    per-pair variance the mechanism added (for confidence intervals; None for classic
    randomized response, which is biased).
    """
    unknown = set(mechanisms) - set(LOCAL_RELEASES)
    if unknown:
        raise InputError(f"mechanisms must be among {', '.join(LOCAL_RELEASES)}")
    i, j = pairs
    eps_g, L_g = levels[:, None], sizes[:, None]
    eps_users = np.repeat(levels, sizes)
    totals = np.full(i.size, float(sizes.sum()))
    per_cmp = float(levels.max())
    truth = wins + 0.5 * ties  # a tie is half a win to each item

    def release(w, tot, mechanism, G, note="", weight_sq=None, noise=None):
        guarantee = (Guarantee.non_private("none") if mechanism == "none" else
                     Guarantee(epsilon=per_cmp, model="local", unit=UNIT_COMPARISON, mechanism=mechanism,
                               epsilon_per_comparison=per_cmp, epsilon_per_user=per_cmp * i.size, note=note))
        lam = None if mechanism == "none" else paper_lambda(eps_users)
        return PairwiseRelease(PairCounts.from_arrays(m, i, j, w, tot, items=tuple(range(m))), guarantee, G, lam,
                               weight_sq, noise)

    out = {}
    if "debiased" in mechanisms or "classic" in mechanisms:
        reports = randomize_counts(wins, L_g, eps_g, gen, ties=ties)
        note = TIE_NOTE if np.any(ties) else ""
        if "debiased" in mechanisms:
            w_users, G = record_weights(eps_users, weights)
            w_g = np.ones_like(eps_g) if w_users is None else w_users[np.cumsum(sizes) - sizes][:, None]
            debiased = L_g * debias(reports / L_g, eps_g)
            out["debiased"] = release(
                (w_g * debiased).sum(0), np.full(i.size, float((w_g * L_g).sum())), "debiased randomized response",
                G, note, None if w_users is None else np.full(i.size, float((w_g ** 2 * L_g).sum())),
                np.full(i.size, float((w_g ** 2 * L_g * added_variance(eps_g)).sum())))
        if "classic" in mechanisms:
            out["classic"] = release(reports.sum(0).astype(float), totals, "classic randomized response",
                                     record_weights(eps_users, "uniform")[1], note)
    if "laplace" in mechanisms:
        noisy = truth + laplace_sum(1.0 / eps_g, L_g, truth.shape, gen)
        out["laplace"] = release(noisy.sum(0), totals, "local Laplace", laplace_variance_factor(eps_users),
                                 LAPLACE_NOTE, noise=np.full(i.size, float((L_g * 2.0 / eps_g ** 2).sum())))
    if "none" in mechanisms:
        out["none"] = release(truth.sum(0), totals, "none", 1.0, noise=np.zeros(i.size))
    return {name: out[name] for name in mechanisms}


def sample_local_releases(theta, L: int, epsilon, mechanisms=("debiased",), rng=None, *,
                          weights: str = "uniform", pairs=None) -> dict[str, PairwiseRelease]:
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
    pairs : tuple of two int arrays, optional
        Restrict the design to these pairs ``(i, j)``, ``i < j``, each compared by every user
        (default: all pairs).
    """
    t = _check_theta(theta)
    gen = as_generator(rng)
    L = int(L)
    if L < 1:
        raise InputError("L must be >= 1")
    eps_users = np.broadcast_to(check_epsilons(epsilon), (L,)) if np.ndim(epsilon) else \
        np.full(L, float(check_epsilons([epsilon])[0]))
    i, j = np.triu_indices(t.size, 1) if pairs is None else (np.asarray(pairs[0]), np.asarray(pairs[1]))
    levels, sizes = np.unique(eps_users, return_counts=True)
    wins = gen.binomial(sizes[:, None], LOGISTIC.cdf(t[i] - t[j])[None, :])
    return _complete_design_releases(t.size, (i, j), wins, np.zeros_like(wins), sizes, levels, mechanisms, gen,
                                     weights)


def sample_debiased_release(theta, L: int, epsilon, rng=None, *, weights: str = "uniform",
                            pairs=None) -> PairwiseRelease:
    """The debiased-RR release of :func:`sample_local_releases` alone."""
    return sample_local_releases(theta, L, epsilon, ("debiased",), rng, weights=weights, pairs=pairs)["debiased"]


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
    return _complete_design_releases(m, np.triu_indices(m, 1), wins, ties, np.array([y.shape[0]]), levels,
                                     mechanisms, as_generator(rng), "uniform")


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


def sample_polarized(m: int, *, n: int, share: float = 0.35, rng=None) -> Rankings:
    """``n`` rankings of ``m`` items: a share one random order, the same share its reverse, the rest uniform.

    Two opposed camps make the consensus nearly tied everywhere, so private aggregation errs
    even at moderate noise; on well-separated profiles the excess cost of a private method
    collapses to 0 and tests nothing (Hillebrand et al. notes §7.2). ``share`` must lie in
    ``[0, 1/2]``; each ranking's kind is drawn independently.
    """
    m, n, share = int(m), int(n), float(share)
    if m < 1 or n < 1:
        raise InputError("m and n must be >= 1")
    if not 0.0 <= share <= 0.5:
        raise InputError("share must lie in [0, 1/2]")
    gen = as_generator(rng)
    centre = gen.permutation(m)
    orders = np.argsort(gen.random((n, m)), axis=1)
    kind = gen.random(n)
    orders[kind < share] = centre
    orders[(kind >= share) & (kind < 2 * share)] = centre[::-1]
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


def erdos_renyi_counts(theta, p: float = 1.0, L: int = 1, link="logistic", rng=None) -> PairCounts:
    """The per-pair counts of :func:`erdos_renyi_comparisons`, sampled directly.

    Each pair ``i < j`` is observed with probability ``p`` and then won by ``i`` in
    ``Binomial(L, F(theta_i - theta_j))`` of its ``L`` comparisons: exactly the distribution of
    ``erdos_renyi_comparisons(theta, p, L, link).pair_counts()``, without building one record
    per comparison. Unlike it, an empty design is returned as it is (no pairs).
    """
    t = _check_theta(theta)
    if int(L) < 1:
        raise InputError("L must be >= 1")
    gen = as_generator(rng)
    i, j = erdos_renyi_pairs(t.size, p, gen)
    wins = gen.binomial(int(L), as_link(link).cdf(t[i] - t[j]))
    return PairCounts.from_arrays(t.size, i, j, wins, np.full(i.size, float(L)), items=tuple(range(t.size)))


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
