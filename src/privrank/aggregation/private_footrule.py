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
           (:func:`~privrank.mechanisms.pairwise_matrix.noisy_pairwise_matrix`) calibrated to
           its exact sensitivity (the paper's printed scales overspend zCDP by up to 25%). If
           ``w~`` is a bounded instance (entries ``>= 0``, pair sums in ``[1/2, 2]``) it is
           solved, otherwise a uniformly random order is returned.
        2. The baseline of Alabi et al.: noisy upper triangle, clipped to ``[0, 1]``, solved.
        3. Selection: ``cost_w(pi_1) - cost_w(pi_2)`` plus noise calibrated to its exact
           sensitivity ``2 K(pi_1, pi_2)/n``
           (:func:`~privrank.mechanisms.pairwise_matrix.noisy_cost_difference`); the cheaper
           candidate is returned.

        Guarantee: epsilon-DP (Laplace) or (epsilon, delta)-DP (Gaussian), the sum of the
        three stages.
    ``"buckets"`` (Algorithm 3, for small ``n``)
        Positions are cut into ``B`` contiguous buckets and ``w = s + t`` (same-bucket and
        earlier-bucket fractions) is released in two halves with exact sensitivities
        (:func:`privrank.mechanisms.pairwise_matrix.bucket_release`, which also states the
        paper's printed Laplace scale for ``s``, about 4x too small). The two-way marginals are
        released by the simplest valid method, one noisy vector of cells; the paper's rate
        needs the projection mechanisms of Dwork, Nikolov and Talwar (2015) or Nikolov (2022)
        instead, which are not implemented, so this variant keeps the paper's privacy guarantee
        but not its error rate. ``clip(s~ + t~)`` (the l1 projection onto ``w_uv + w_vu = 1``,
        ``w in [0, 1]``) is solved. ``B`` defaults to the paper's choice
        ``ceil(m^(3/7)/(n eps)^(1/7))`` (Laplace) or ``ceil(m^(3/11)/(n^2 rho)^(1/11))``
        (Gaussian, ``rho = mu^2/2``, the zero-concentrated DP of a ``mu``-Gaussian-DP release),
        from public quantities only. Guarantee: epsilon-DP or (epsilon, delta)-DP.
    ``"auto"``
        The paper's dispatch (Theorem 5.1) with a practical threshold: ``"lopsided"`` when the
        Algorithm 4 noise is small enough that every noisy entry stays within ``0.04`` of its
        mean with probability ``>= 1 - 1/m`` (Gaussian: ``sigma sqrt(2 ln(2 m^3)) <= 0.04``,
        Laplace: ``b ln(2 m^3) <= 0.04``), else ``"buckets"``. Depends only on public
        ``n, m, epsilon, delta``.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .. import limits
from .._rng import as_generator
from ..release import charge, private_release
from ..data.ranking_files import as_rankings
from ..data.rankings import Rankings, RankingTally, releasable
from ..data.tabular import TableLike
from ..errors import InputError, check_delta, check_epsilon, check_whole
from ..mechanisms.pairwise_matrix import (Budget, bucket_release, clip_pairs, noisy_cost_difference,
                                          noisy_pairwise_matrix, same_bucket_pairs, upper_triangle)
from ..mechanisms.tree import (check_kappa, footrule_cost_release, footrule_counts_release,
                               local_footrule_release, tree_layout)
from ..metrics import kemeny_cost, kendall_tau_distance
from .footrule import assignment_order
from .kemeny import wfas_solver
from .private_kemeny import AggregateResult, labelled

if TYPE_CHECKING:
    from ..guarantees import Accountant
    from ..ledger import Ledger

PTAS_VARIANTS = ("auto", "one-release", "lopsided", "buckets")
#: Algorithm 4's noise must keep every noisy entry within this of its mean (notes E8)
LOPSIDED_MARGIN = 0.04


def _lopsided_instance(W, n, budget, fraction, rng):
    """Algorithm 4 with its own budget ``fraction``: ``(w~', bounded?, scales, lopsided pairs)``."""
    m = W.shape[0]
    iu = upper_triangle(m)
    classify, s_theta = noisy_pairwise_matrix(W, n, budget, fraction / 4.0, rng)
    values, s_r = noisy_pairwise_matrix(W, n, budget, 3.0 * fraction / 4.0, rng)
    c, v = classify[iu], values[iu]
    hi, lo = c > 5 / 6, c < 1 / 6
    bal = ~(hi | lo)
    out = np.zeros((m, m))
    out[iu[0][bal], iu[1][bal]] = v[bal]
    out[iu[1][bal], iu[0][bal]] = 1.0 - v[bal]
    # lopsided pairs: u majority (hi) -> w_uv - w_vu = 2 w_uv - 1, v majority (lo) -> 1 - 2 w_uv
    out[iu[0][hi], iu[1][hi]] = 2.0 * v[hi] - 1.0
    out[iu[1][lo], iu[0][lo]] = 1.0 - 2.0 * v[lo]
    sums = out + out.T
    off = ~np.eye(m, dtype=bool)
    bounded = bool(np.all(out[off] >= 0) and np.all((sums[off] >= 0.5) & (sums[off] <= 2.0)))
    return out, bounded, s_theta, s_r, int(hi.sum() + lo.sum())


def default_buckets(m: int, n: int, budget: Budget) -> int:
    """The paper's bucket count (Lemmas F.5 / F.6), clamped to ``[1, m]``."""
    if budget.noise == "laplace":
        raw = m ** (3 / 7) / (n * budget.epsilon) ** (1 / 7)
    else:
        assert budget.mu is not None  # Gaussian noise
        rho = budget.mu ** 2 / 2.0
        raw = m ** (3 / 11) / (n ** 2 * rho) ** (1 / 11)
    return int(min(m, max(1, math.ceil(raw))))


def _auto_variant(m: int, n: int, budget: Budget) -> tuple[str, float]:
    """Theorem 5.1's dispatch from public quantities: Algorithm 4 when its noise is small."""
    M = m * (m - 1) // 2
    # Algorithm 4 gets 1/3 of the budget: 1/12 classifies, 1/4 gives the values
    worst = max(budget.scale(1 / 12, M / n, math.sqrt(M) / n), budget.scale(1 / 4, M / n, math.sqrt(M) / n))
    tail = worst * (math.log(2 * m ** 3) if budget.noise == "laplace" else math.sqrt(2 * math.log(2 * m ** 3)))
    return ("lopsided" if tail <= LOPSIDED_MARGIN else "buckets"), tail


@labelled
@private_release
def dp_ptas(profile: Rankings | ArrayLike | TableLike, *, epsilon: float, delta: float = 0.0, variant: str = "auto",
            solver: str | Callable[[np.ndarray], ArrayLike] = "exact", buckets: int | None = None,
            weights: ArrayLike | None = None, rng: int | np.random.Generator | None = None,
            ledger: Ledger | str | os.PathLike[str] | None = None, accountant: Accountant | None = None,
            new_data: str | None = None) -> AggregateResult:
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
    AggregateResult
        ``details``: the variant run (``"auto"`` resolved), the budget split and noise scales,
        the bucket count, whether the Algorithm 4 instance was bounded and which candidate was
        selected -- public parameters and functions of released values only.

    Examples
    --------
    Hillebrand et al. Section 5: a private pairwise matrix, then an exact Kemeny solve; central
    epsilon-DP (Laplace) for one ranking, ``n`` public:

    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   items=["a", "b", "c", "d"], weights=[3000, 2000, 2500, 2500])
    >>> res = pr.dp_ptas(profile, epsilon=1.0, rng=0)
    >>> res.ranking, res.details["variant"]
    (['a', 'b', 'c', 'd'], 'lopsided')
    >>> res.guarantee.epsilon, res.guarantee.model, res.guarantee.unit
    (1.0, 'central', 'one ranking')
    """
    if not isinstance(variant, str) or variant not in PTAS_VARIANTS:
        raise InputError(f"variant must be one of {', '.join(PTAS_VARIANTS)}")
    R = releasable(as_rankings(profile, weights))
    budget = Budget(epsilon, delta)
    gen = as_generator(rng)
    n, m = R.n_voters, R.n_items
    if buckets is not None and not 1 <= check_whole(buckets, name="buckets") <= m:
        raise InputError("buckets must be between 1 and the number of items")
    solve = wfas_solver(solver, rng=gen)
    details: dict[str, Any] = {"variant": variant, "noise": budget.noise}
    if m == 1:
        guarantee = budget.guarantee("dp-ptas")
        charge(guarantee)
        return AggregateResult(np.zeros(1, dtype=np.int64), guarantee, details)
    if variant == "auto":
        variant, details["auto_tail"] = _auto_variant(m, n, budget)
        details["variant"] = variant
    guarantee = budget.guarantee(f"dp-ptas/{variant}")
    charge(guarantee)
    if variant == "one-release":
        Wt, details["noise_scale"] = noisy_pairwise_matrix(R.pairwise_matrix(), n, budget, 1.0, gen)
        order = np.asarray(solve(Wt))
    elif variant == "lopsided":
        W = R.pairwise_matrix()
        inst, bounded, s_th, s_r, n_lop = _lopsided_instance(W, n, budget, 1 / 3, gen)
        order1 = np.asarray(solve(inst)) if bounded else gen.permutation(m)
        W2, scale2 = noisy_pairwise_matrix(W, n, budget, 1 / 3, gen, clip=True)
        order2 = np.asarray(solve(W2))
        noisy_diff, scale3 = noisy_cost_difference(float(kemeny_cost(order1, W) - kemeny_cost(order2, W)),
                                                   kendall_tau_distance(order1, order2), n, budget, 1 / 3, gen)
        order = order2 if noisy_diff > 0 else order1
        details.update(bounded=bounded, lopsided_pairs=n_lop, classify_scale=s_th,
                       value_scale=s_r, baseline_scale=scale2, selection_scale=scale3,
                       selected="baseline" if noisy_diff > 0 else "algorithm 4")
    else:
        B = default_buckets(m, n, budget) if buckets is None else int(buckets)
        Wt, scale_s, scale_t = bucket_release(R, B, budget, gen)
        order = np.asarray(solve(clip_pairs(Wt)))
        details.update(buckets=B, same_bucket_pairs=same_bucket_pairs(m, B), s_scale=scale_s,
                       marginal_scale=scale_t)
    return AggregateResult(order.astype(np.int64), guarantee, details)


# --------------------------------------------------------------------------------------------
# footrule (Algorithm 2)
# --------------------------------------------------------------------------------------------

def _footrule_result(release) -> AggregateResult:
    details = {"noise": release.noise, "noise_scale": release.noise_scale, "kappa": release.kappa}
    return AggregateResult(assignment_order(release.costs), release.guarantee, details, release)


def _check_size(m: int) -> None:
    """Refuse, before anything is charged, a footrule aggregation too large to finish (m is public)."""
    limits.check("FOOTRULE_ITEMS", m, "the number of items of a footrule aggregation",
                 advice="use dp-kwiksort or noisy-matrix, which scale to many more items")


def _tally(profile, weights) -> RankingTally | None:
    """``profile`` when it is a :class:`RankingTally` (which carries its own multiplicities), checked by
    :func:`releasable`, else None."""
    if not isinstance(profile, RankingTally):
        return None
    if weights is not None:
        raise InputError("a tally already counts every voter: give no weights")
    return releasable(profile)


@labelled
@private_release
def dp_footrule(profile: Rankings | RankingTally | ArrayLike | TableLike, *, epsilon: float, delta: float = 0.0,
                kappa: float | None = None, weights: ArrayLike | None = None,
                rng: int | np.random.Generator | None = None, ledger: Ledger | str | os.PathLike[str] | None = None,
                accountant: Accountant | None = None, new_data: str | None = None) -> AggregateResult:
    """Central-DP footrule aggregation (Hillebrand et al. Algorithm 2).

    Laplace noise (``delta = 0``, epsilon-DP) or discrete Gaussian noise (``delta > 0``,
    (epsilon, delta)-DP) on the binary-tree release of the footrule cost matrix, then the
    minimum-cost assignment (post-processing). The order is a ``(1, beta)``-approximation of
    the footrule optimum and a ``(2, beta)``-approximation of the Kemeny optimum (module
    docstring). Protects one ranking; ``n`` is public.

    ``profile`` is the rankings, or a :class:`~privrank.data.rankings.RankingTally` with their
    exact position counts (:func:`privrank.sufficient_statistics`, ``kind="rankings"``): the
    release reads nothing else (:func:`~privrank.mechanisms.tree.footrule_counts_release`), so
    both give the same output for the same ``rng``.

    Returns
    -------
    AggregateResult
        ``release`` is the :class:`~privrank.mechanisms.tree.TreeRelease` of the cost matrix;
        ``details`` holds its public noise parameters.

    Examples
    --------
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   items=["a", "b", "c", "d"], weights=[3000, 2000, 2500, 2500])
    >>> res = pr.dp_footrule(profile, epsilon=1.0, rng=0)
    >>> res.ranking, pr.footrule_optimal_order(profile)
    (['a', 'b', 'c', 'd'], array([0, 1, 2, 3]))
    >>> res.details["noise"], res.guarantee.unit
    ('laplace', 'one ranking')
    """
    noise = "laplace" if check_delta(delta) == 0 else "gaussian"
    tally = _tally(profile, weights)
    if tally is not None:
        _check_size(tally.n_items)
        return _footrule_result(footrule_counts_release(tally.position_histogram(), tally.n_voters,
                                                        epsilon=epsilon, delta=delta, noise=noise,
                                                        kappa=kappa, rng=rng))
    R = releasable(as_rankings(profile, weights))
    _check_size(R.n_items)
    rel = footrule_cost_release(R.positions, epsilon=epsilon, delta=delta, noise=noise,
                                kappa=kappa, weights=R.weights, rng=rng)
    return _footrule_result(rel)


@labelled
@private_release
def ldp_footrule(profile: Rankings | RankingTally | ArrayLike | TableLike, *, epsilon: float,
                 kappa: float | None = None, weights: ArrayLike | None = None,
                 rng: int | np.random.Generator | None = None, ledger: Ledger | str | os.PathLike[str] | None = None,
                 accountant: Accountant | None = None, new_data: str | None = None) -> AggregateResult:
    """One-round epsilon-local-DP footrule aggregation (Hillebrand et al. §4, Theorem 4.1).

    Every ranking's weighted tree vector is randomized by the Duchi et al. l2 randomizer
    before aggregation; the analyst averages and solves the assignment. epsilon-local DP per
    ranking. Returns an :class:`AggregateResult` as :func:`dp_footrule` does.

    ``profile`` is the rankings (ranking ``i`` draws its report as record ``i`` under the key
    :func:`~privrank.mechanisms.randomized_response.record_key` derives from ``rng``), or a
    :class:`~privrank.data.rankings.RankingTally` of reports the voters already sent at
    ``epsilon`` (:func:`privrank.sufficient_statistics` with ``kind="rankings"``,
    ``statistic="positions"``; its ``kappa`` is the one they used), which the analyst averages.

    Examples
    --------
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   items=["a", "b", "c", "d"], weights=[3000, 2000, 2500, 2500])
    >>> res = pr.ldp_footrule(profile, epsilon=1.0, rng=0)
    >>> res.ranking, res.details["noise"]
    (['a', 'b', 'c', 'd'], 'local')
    >>> print(res.guarantee.describe())
    1-DP, local model, protecting one ranking [binary-tree footrule costs (Duchi et al. l2 randomizer)].
    SEEDED RUN: reproducible research output, not a private release (whoever knows the seed can remove the
    noise); leave the seed out for a real release.
    """
    tally = _tally(profile, weights)
    if tally is not None:
        _check_size(tally.n_items)
        if kappa is not None and check_kappa(kappa) != tally.kappa:
            raise InputError(f"the voters' tree vectors have kappa {tally.kappa:g}: give that kappa or none")
        eps = check_epsilon(epsilon)
        rel = local_footrule_release(tally.local_reports("positions", eps), tally.n_voters,
                                     tree_layout(tally.n_items, tally.kappa), eps)
        return _footrule_result(replace(rel, guarantee=replace(rel.guarantee, seeded=tally.seeded)))
    R = releasable(as_rankings(profile, weights))
    _check_size(R.n_items)
    rel = footrule_cost_release(R.positions, epsilon=epsilon, noise="local", kappa=kappa,
                                weights=R.weights, rng=rng)
    return _footrule_result(rel)
