"""Private footrule aggregation and the improved private Kemeny algorithms.

Hillebrand, Manurangsi, Suppakitpaisarn, Vajanopath, "Improved differentially private algorithms
for rank aggregation". Neighbouring profiles have the same (public) number of rankings ``n`` and
differ in one ranking; every guarantee below protects one ranking.

Footrule (Algorithm 2, Theorems 4.1 and 4.2)
    :func:`dp_footrule` releases the footrule cost matrix with the m-parallel binary-tree
    mechanism (:func:`privrank.mechanisms.tree.footrule_cost_release`) and returns the
    minimum-cost assignment: a ``(1, beta)``-approximation of footrule aggregation and a
    ``(2, beta)``-approximation of Kemeny aggregation with ``beta = O(m^3 log m/(eps n))``
    (Laplace, epsilon-DP) or ``O(m^2.5 sqrt(log m log 1/delta)/(eps n))`` (Gaussian,
    (epsilon, delta)-DP). :func:`ldp_footrule` is the one-round epsilon-local DP version
    (``beta = O(m^2.5 sqrt(log m)/(eps sqrt n))``). Per run, the footrule excess is at most
    ``2 m max|C~ - C|`` (Appendix E.1).

Kemeny through a private pairwise matrix (Section 5, Algorithms 3 and 4, Lemma B.11)
    :func:`dp_ptas`; every variant releases a noisy version of the pairwise-preference matrix
    ``w`` and hands it to a Kemeny / weighted-feedback-arc-set solver
    (:mod:`privrank.aggregation.kemeny`; post-processing). The paper's non-private solver is the
    Kenyon-Mathieu--Schudy PTAS, which is not practical; with the exact solver the formal
    approximation ratio is 1, with a heuristic solver the privacy guarantee is unchanged but the
    ratio guarantee is void. Variants:

    ``"one-release"``
        One release of the upper triangle ``(w_uv)_{u<v}`` with Laplace noise
        (``Delta_1 = M/n``, ``M = m(m-1)/2``) or Gaussian noise (``Delta_2 = sqrt(M)/n``),
        *not clipped*, ``w~_vu = 1 - w~_uv``. Exact WFAS accepts any real weights, so the
        unbiased noisy matrix gives ``(1, 2 gamma)`` w.h.p. with
        ``gamma = O(m^2.5 sqrt(log m)/(n sqrt rho))`` (paper Section 1.2). Keeps the full
        epsilon-DP / (epsilon, delta)-DP guarantee; simplest and usually best.
    ``"lopsided"`` (Algorithm 4 inside the Lemma B.11 wrapper)
        Budget split three ways (epsilon/3 each; Gaussian: the Gaussian-DP parameter ``mu``
        split so that ``mu_1^2 + mu_2^2 + mu_3^2 = mu^2``):

        1. Algorithm 4 (its third split again, 1/4 to classification and 3/4 to values): a
           first noisy copy of ``w`` classifies each pair as lopsided (noisy
           ``w_uv > 5/6`` or ``< 1/6``) or balanced; a second, independent noisy copy ``w^``
           gives the values -- lopsided ``(a, b)`` (``a`` the majority) gets
           ``w~_ab = w^_ab - w^_ba = 2 w^_ab - 1`` and ``w~_ba = 0``, balanced pairs keep
           ``(w^_uv, 1 - w^_uv)``. Both copies are plain noisy releases of the upper triangle
           calibrated to its exact sensitivity (the paper's printed scales overspend zCDP by
           up to 25%). If ``w~`` is a bounded instance (entries ``>= 0``, pair sums in
           ``[1/2, 2]``) it is solved, otherwise a uniformly random order is returned.
        2. The baseline of Alabi et al.: noisy upper triangle, clipped to ``[0, 1]``, solved.
        3. Selection: ``cost_w(pi_1) - cost_w(pi_2)`` plus noise calibrated to its exact
           sensitivity ``2 K(pi_1, pi_2)/n`` (the two candidates are already public); the
           cheaper candidate is returned.

        Guarantee: epsilon-DP (Laplace) or (epsilon, delta)-DP (Gaussian), the sum of the
        three stages.
    ``"buckets"`` (Algorithm 3, for small ``n``)
        Positions are cut into ``B`` contiguous buckets (``numpy.array_split`` sizes).
        ``w = s + t`` with ``s_uv`` the fraction placing ``u`` before ``v`` in the same bucket
        and ``t_uv`` the fraction placing ``u`` in an earlier bucket. Half the budget noises
        ``s`` with its exact sensitivity ``Delta_1 = 2 S_B/n``, ``Delta_2 = sqrt(2 S_B)/n``
        (``S_B = sum_b C(|b|, 2)``; **the paper prints a Laplace scale about 4x too small**).
        The other half releases the two-way marginals Algorithm 3 reads -- for every item
        pair ``u < v`` the fraction of rankings with ``u`` in bucket ``b`` and ``v`` in bucket
        ``b' != b`` -- by the simplest valid method: one noisy release of those cells with
        ``Delta_1 = 2 (M - S_B)/n``, ``Delta_2 = sqrt(2 (M - S_B))/n`` (each ranking has exactly
        ``M - S_B`` such ones). When one part is empty (``B = 1``: no cross-bucket pairs;
        ``B = m``: no same-bucket pairs) the other gets the whole budget. The paper's rate needs the projection mechanisms of Dwork,
        Nikolov and Talwar (2015) or Nikolov (2022) instead, which are not implemented, so this
        variant keeps the paper's privacy guarantee but not its error rate. ``t~_uv`` sums the
        cells with ``b < b'``; ``clip(s~ + t~)`` (the l1 projection onto
        ``w_uv + w_vu = 1``, ``w in [0, 1]``) is solved. ``B`` defaults to the paper's choice
        ``ceil(m^(3/7)/(n eps)^(1/7))`` (Laplace) or ``ceil(m^(3/11)/(n^2 rho)^(1/11))``
        (Gaussian, ``rho = mu^2/2``), from public quantities only.
    ``"auto"``
        The paper's dispatch (Theorem 5.1) with a practical threshold: ``"lopsided"`` when the
        Algorithm 4 noise is small enough that every noisy entry stays within ``0.04`` of its
        mean with probability ``>= 1 - 1/m`` (Gaussian: ``sigma sqrt(2 ln(2 m^3)) <= 0.04``,
        Laplace: ``b ln(2 m^3) <= 0.04``), else ``"buckets"``. Depends only on public
        ``n, m, epsilon, delta``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._rng import as_generator
from ..data.rankings import Rankings
from ..errors import InputError, check_delta
from ..guarantees import Guarantee
from ..mechanisms.pairwise_matrix import Budget, clip_pairs, noisy_pairwise_matrix
from ..mechanisms.tree import footrule_cost_release
from ..metrics import kemeny_cost, kendall_tau_distance
from .footrule import assignment_order, positions_of, profile_arrays
from .kemeny import wfas_solver

PTAS_VARIANTS = ("auto", "one-release", "lopsided", "buckets")


# --------------------------------------------------------------------------------------------
# solvers (post-processing)
# --------------------------------------------------------------------------------------------

def _solver(solver, rng):
    """Resolve ``solver`` to a callable ``W -> order`` (real weights allowed)."""
    return solver if callable(solver) else wfas_solver(solver, rng=rng)


@dataclass(frozen=True)
class PTASRelease:
    """Private output of :func:`dp_ptas`.

    Attributes
    ----------
    order
        Consensus order, best first (item indices).
    variant
        Variant actually run (``"auto"`` resolved).
    guarantee
        What it protects (the whole pipeline).
    details
        Public diagnostics: budget split, noise scales, bucket count, which candidate was
        selected, whether the Algorithm 4 instance was bounded -- all functions of released
        values and public parameters only.
    """

    order: np.ndarray
    variant: str
    guarantee: Guarantee
    details: dict = field(default_factory=dict)


def _lopsided_instance(W, n, budget, fraction, rng):
    """Algorithm 4 with its own budget ``fraction``: returns (w~', bounded?, scales)."""
    m = W.shape[0]
    M = m * (m - 1) // 2
    iu = np.triu_indices(m, 1)
    exact = W[iu]
    s_theta = budget.scale(fraction / 4.0, M / n, math.sqrt(M) / n)
    s_r = budget.scale(3.0 * fraction / 4.0, M / n, math.sqrt(M) / n)
    classify = exact + budget.draw(s_theta, M, rng)
    values = exact + budget.draw(s_r, M, rng)
    hi, lo = classify > 5 / 6, classify < 1 / 6
    out = np.zeros((m, m))
    # balanced pairs
    bal = ~(hi | lo)
    out[iu[0][bal], iu[1][bal]] = values[bal]
    out[iu[1][bal], iu[0][bal]] = 1.0 - values[bal]
    # lopsided pairs: u majority (hi) -> w_uv - w_vu = 2 w_uv - 1, v majority (lo) -> 1 - 2 w_uv
    out[iu[0][hi], iu[1][hi]] = 2.0 * values[hi] - 1.0
    out[iu[1][lo], iu[0][lo]] = 1.0 - 2.0 * values[lo]
    sums = out + out.T
    off = ~np.eye(m, dtype=bool)
    bounded = bool(np.all(out[off] >= 0) and np.all((sums[off] >= 0.5) & (sums[off] <= 2.0)))
    return out, bounded, s_theta, s_r, int(hi.sum() + lo.sum())


def _bucket_sizes(m: int, B: int) -> np.ndarray:
    return np.array([len(a) for a in np.array_split(np.arange(m), B)])


def same_bucket_pairs(m: int, B: int) -> int:
    """``S_B = sum_b C(|b|, 2)``: same-bucket item pairs every ranking has."""
    k = _bucket_sizes(m, B)
    return int(np.sum(k * (k - 1) // 2))


def default_buckets(m: int, n: int, budget: Budget) -> int:
    """The paper's bucket count (Lemmas F.5 / F.6), clamped to ``[1, m]``."""
    if budget.noise == "laplace":
        raw = m ** (3 / 7) / (n * budget.epsilon) ** (1 / 7)
    else:
        rho = budget.mu ** 2 / 2.0
        raw = m ** (3 / 11) / (n ** 2 * rho) ** (1 / 11)
    return int(min(m, max(1, math.ceil(raw))))


def _bucket_instance(orders, w, budget, B, rng):
    """Algorithm 3 with the corrected scale; returns (clip(s~ + t~), scales)."""
    n_tot = w.sum()
    m = orders.shape[1]
    M = m * (m - 1) // 2
    sizes = _bucket_sizes(m, B)
    bucket_of_pos = np.repeat(np.arange(B), sizes)
    pos = positions_of(orders)
    bkt = bucket_of_pos[pos]  # (n, m) bucket of every item
    S_B = same_bucket_pairs(m, B)
    # s: same bucket, u before v (ordered pairs)
    s = np.zeros((m, m))
    for v in range(m):
        mask = (bkt == bkt[:, [v]]) & (pos < pos[:, [v]])
        s[:, v] = mask.T.astype(float) @ w
    s /= n_tot
    K = M - S_B  # cross-bucket pairs per ranking
    # half the budget each; a part that releases nothing (B = 1 or B = m) costs nothing
    frac_s = 0.0 if S_B == 0 else (1.0 if K == 0 else 0.5)
    frac_t = 1.0 - frac_s
    off = ~np.eye(m, dtype=bool)
    scale_s = budget.scale(frac_s, 2.0 * S_B / n_tot, math.sqrt(2.0 * S_B) / n_tot) if S_B else 0.0
    s_noisy = s.copy()
    if S_B:
        s_noisy[off] += budget.draw(scale_s, m * (m - 1), rng)
    # two-way marginals: for u < v, cells (b_u, b_v) with b_u != b_v
    iu = np.triu_indices(m, 1)
    cells = bkt[:, iu[0]] * B + bkt[:, iu[1]]  # (n, M) cell index per pair
    flat = (np.arange(M)[None, :] * B * B + cells).ravel()
    q = np.bincount(flat, weights=np.repeat(w, M), minlength=M * B * B).reshape(M, B, B) / n_tot
    cross = ~np.eye(B, dtype=bool)
    scale_t = budget.scale(frac_t, 2.0 * K / n_tot, math.sqrt(2.0 * K) / n_tot) if K else 0.0
    q_noisy = q.copy()
    if K and B > 1:
        q_noisy[:, cross] += budget.draw(scale_t, (M, int(cross.sum())), rng)
    upper_mask = np.triu(np.ones((B, B), dtype=bool), 1)
    t = np.zeros((m, m))
    t[iu] = q_noisy[:, upper_mask].sum(axis=1)                 # u in an earlier bucket
    t[(iu[1], iu[0])] = q_noisy[:, upper_mask.T].sum(axis=1)   # v in an earlier bucket
    return clip_pairs(s_noisy + t), float(scale_s), float(scale_t), S_B


def dp_ptas(profile, *, epsilon, delta: float = 0.0, variant: str = "auto", solver="exact",
            buckets: int | None = None, weights=None, rng=None) -> PTASRelease:
    """Private Kemeny aggregation through a privately released pairwise matrix (Section 5).

    Parameters
    ----------
    profile
        :class:`privrank.Rankings` or an ``(n, m)`` array of complete orders (best first).
    epsilon, delta
        Total budget. ``delta = 0``: Laplace noise, epsilon-DP. ``delta > 0``: Gaussian noise
        calibrated exactly (Gaussian DP), (epsilon, delta)-DP.
    variant
        ``"auto"``, ``"one-release"``, ``"lopsided"`` or ``"buckets"`` (module docstring, which
        also states which guarantee each keeps).
    solver
        Kemeny / WFAS solver name understood by :mod:`privrank.aggregation.kemeny`, or a callable
        ``W -> order``. Privacy never depends on it.
    buckets
        Number of position buckets for ``"buckets"`` (default: the paper's formula).
    weights
        Non-negative integer multiplicities of the rankings (a ranking of weight 3 counts as 3).

    Returns
    -------
    PTASRelease
    """
    if variant not in PTAS_VARIANTS:
        raise InputError(f"variant must be one of {', '.join(PTAS_VARIANTS)}")
    orders, w = profile_arrays(profile, weights)
    if np.any(w != np.round(w)):
        raise InputError("private aggregation needs integer weights (ranking multiplicities)")
    budget = Budget(epsilon, delta)
    gen = as_generator(rng)
    n = float(w.sum())
    m = orders.shape[1]
    solve = _solver(solver, gen)
    M = m * (m - 1) // 2
    details = {"noise": budget.noise}
    if m == 1:
        return PTASRelease(np.zeros(1, dtype=np.int64), variant, budget.guarantee("dp-ptas"), details)
    if variant == "auto":
        # Algorithm 4 gets 1/3 of the budget: 1/12 classifies, 1/4 gives the values
        s_th = budget.scale(1 / 12, M / n, math.sqrt(M) / n)
        s_r = budget.scale(1 / 4, M / n, math.sqrt(M) / n)
        worst = max(s_th, s_r)
        tail = worst * (math.log(2 * m ** 3) if budget.noise == "laplace"
                        else math.sqrt(2 * math.log(2 * m ** 3)))
        variant = "lopsided" if tail <= 0.04 else "buckets"
        details["auto_tail"] = tail
    W = Rankings.from_orders(orders, weights=w).pairwise_matrix()
    if variant == "one-release":
        Wt, scale = noisy_pairwise_matrix(W, n, budget, 1.0, gen)
        details["noise_scale"] = scale
        order = np.asarray(solve(Wt))
    elif variant == "lopsided":
        inst, bounded, s_th, s_r, n_lop = _lopsided_instance(W, n, budget, 1 / 3, gen)
        order1 = np.asarray(solve(inst)) if bounded else gen.permutation(m)
        W2, scale2 = noisy_pairwise_matrix(W, n, budget, 1 / 3, gen, clip=True)
        order2 = np.asarray(solve(W2))
        k12 = kendall_tau_distance(order1, order2)
        scale3 = budget.scale(1 / 3, 2.0 * k12 / n, 2.0 * k12 / n)
        diff = kemeny_cost(order1, W) - kemeny_cost(order2, W)
        noisy_diff = diff + (float(budget.draw(scale3, None, gen)) if k12 else 0.0)
        pick2 = noisy_diff > 0
        order = order2 if pick2 else order1
        details.update(bounded=bounded, lopsided_pairs=n_lop, classify_scale=s_th,
                       value_scale=s_r, baseline_scale=scale2, selection_scale=scale3,
                       selected="baseline" if pick2 else "algorithm 4")
    else:
        B = default_buckets(m, int(n), budget) if buckets is None else int(buckets)
        if not 1 <= B <= m:
            raise InputError("buckets must be between 1 and the number of items")
        Wt, scale_s, scale_t, S_B = _bucket_instance(orders, w, budget, B, gen)
        order = np.asarray(solve(Wt))
        details.update(buckets=B, same_bucket_pairs=S_B, s_scale=scale_s, marginal_scale=scale_t)
    return PTASRelease(order=order.astype(np.int64), variant=variant,
                       guarantee=budget.guarantee(f"dp-ptas/{variant}"), details=details)


# --------------------------------------------------------------------------------------------
# footrule (Algorithm 2)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FootruleRelease:
    """Private footrule aggregation: the order and the release it was computed from."""

    order: np.ndarray
    release: object  # privrank.mechanisms.tree.TreeRelease
    guarantee: Guarantee


def _integer_weights(w):
    if np.any(w != np.round(w)):
        raise InputError("private aggregation needs integer weights (ranking multiplicities)")
    return w.astype(np.int64)


def dp_footrule(profile, *, epsilon, delta: float = 0.0, kappa: float | None = None,
                weights=None, rng=None) -> FootruleRelease:
    """Central-DP footrule aggregation (Hillebrand et al. Algorithm 2).

    Laplace noise (``delta = 0``, epsilon-DP) or analytic Gaussian noise (``delta > 0``,
    (epsilon, delta)-DP) on the binary-tree release of the footrule cost matrix, then the
    minimum-cost assignment (post-processing). The order is a ``(1, beta)``-approximation of
    the footrule optimum and a ``(2, beta)``-approximation of the Kemeny optimum (module
    docstring). Protects one ranking; ``n`` is public.
    """
    orders, w = profile_arrays(profile, weights)
    rel = footrule_cost_release(positions_of(orders), epsilon=epsilon, delta=delta,
                                noise="laplace" if check_delta(delta) == 0 else "gaussian",
                                kappa=kappa, weights=_integer_weights(w), rng=rng)
    return FootruleRelease(order=assignment_order(rel.costs), release=rel,
                           guarantee=rel.guarantee)


def ldp_footrule(profile, *, epsilon, kappa: float | None = None, weights=None,
                 rng=None) -> FootruleRelease:
    """One-round epsilon-local-DP footrule aggregation (Hillebrand et al. §4, Theorem 4.1).

    Every ranking's weighted tree vector is randomized by the Duchi et al. l2 randomizer
    before aggregation; the analyst averages and solves the assignment. epsilon-local DP per
    ranking.
    """
    orders, w = profile_arrays(profile, weights)
    rel = footrule_cost_release(positions_of(orders), epsilon=epsilon, noise="local",
                                kappa=kappa, weights=_integer_weights(w), rng=rng)
    return FootruleRelease(order=assignment_order(rel.costs), release=rel,
                           guarantee=rel.guarantee)
