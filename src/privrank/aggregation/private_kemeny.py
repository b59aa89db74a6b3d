"""Private Kemeny aggregation of complete rankings (Alabi, Ghazi, Kumar, Manurangsi, AAAI 2022).

Neighbouring profiles have the same, public number of voters ``n`` and differ in one ranking
(substitution). Every guarantee here protects one ranking. The constants are those of the
implementer's notes (``alabi.md``), which correct the paper's printed scales; they are quoted
in each docstring. All solvers run on private values only (:mod:`privrank.aggregation.kemeny`,
post-processing).

Central model
    :func:`private_kemeny` -- noisy-matrix reduction (Theorem 1, Corollaries 3 and 4).
    :func:`dp_kwiksort` -- KwikSort asking a capped noisy query oracle, with a private fallback
    (Algorithm 1, Theorem 5, Corollaries 6 and 7).
    :func:`exponential_kemeny` -- the exponential mechanism over all ``m!`` orders (baseline).
    :func:`hay_quicksort` -- Hay et al.'s budgeted private quicksort (baseline).
Local model
    :func:`ldp_matrix` -- one-round Duchi et al. estimate of ``w``, then a solver (Theorem 8,
    Corollary 9).
    :func:`ldp_kwiksort` -- KwikSort asking the adaptive local oracle of Algorithm 2, with a
    one-round fallback (Algorithm 3, rebuilt in the notes §2.7; Theorem 11, Corollary 12).

Solvers are named as in :func:`privrank.aggregation.kemeny.wfas_solver`. With ``exact`` the
reductions are ``(1, beta)``-approximations, better than the paper's ``1 + xi`` (its PTAS is not
practical, notes §6.1); with ``kwiksort`` or ``local-search`` the guarantee on privacy is
unchanged and the approximation ratio is the solver's.
"""
from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ParamSpec

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import bdtrc

from .._rng import as_generator
from ..release import charge, private_release
from ..data.ranking_files import as_rankings
from ..data.rankings import Rankings, RankingTally, releasable
from ..data.arrow_columns import is_table
from ..data.tabular import TableLike
from ..display import Displayed
from ..errors import InputError, check_epsilon, check_flag, check_fraction, check_positive, check_whole
from ..guarantees import UNIT_RANKING, Guarantee
from ..mechanisms.exponential import exponential_mechanism, exponential_probabilities
from ..mechanisms.pairwise_matrix import (Budget, MatrixRelease, clip_pairs, local_pairwise_matrix,
                                          local_pairwise_sd, noisy_pairwise_matrix, pairwise_from_reports)
from ..mechanisms.query_oracle import LocalPairOracle, NoisyPairOracle, QueryCapExceeded
from ..metrics import kemeny_cost
from .kemeny import AUTO_EXACT_MAX, wfas_solver
from .kemeny_exact import CERTIFY_SECONDS, certify
from .kemeny_heuristics import kwiksort, kwiksort_query_cap

if TYPE_CHECKING:
    from ..guarantees import Accountant
    from ..ledger import Ledger

EXPONENTIAL_MAX_ITEMS = 8


@dataclass(frozen=True, repr=False)
class AggregateResult(Displayed):
    """A private consensus order.

    Attributes
    ----------
    order
        Item indices, best first.
    guarantee
        What the whole computation protects.
    details
        Public parameters (noise scales, caps, budget split) and facts about the run that are
        functions of private values only (queries asked, whether the fallback ran).
    release
        The private release the order was computed from, where the method has one worth
        keeping (the noisy pairwise matrix of :func:`private_kemeny` and :func:`ldp_matrix`, a
        :class:`~privrank.mechanisms.pairwise_matrix.MatrixRelease`; the footrule cost matrix of
        :func:`~privrank.dp_footrule` and :func:`~privrank.ldp_footrule`, a
        :class:`~privrank.mechanisms.tree.TreeRelease`), else None.
    items
        Item labels (the profile's; item indices for a bare array of orders).

    Examples
    --------
    A consensus order of 10,000 voters' rankings, released by :func:`private_kemeny`:

    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   items=["a", "b", "c", "d"], weights=[3000, 2000, 2500, 2500])
    >>> res = pr.private_kemeny(profile, epsilon=1.0, rng=0)
    >>> res.ranking, res.order
    (['a', 'b', 'c', 'd'], array([0, 1, 2, 3]))
    >>> res.guarantee.model, res.guarantee.unit, res.guarantee.epsilon
    ('central', 'one ranking', 1.0)
    >>> type(res.release).__name__
    'MatrixRelease'
    """

    order: np.ndarray
    guarantee: Guarantee
    details: dict = field(default_factory=dict)
    release: object = None
    items: tuple = field(default=(), kw_only=True)

    @property
    def ranking(self) -> list:
        """Item labels from best to worst."""
        return [self.items[k] for k in self.order]

    def _rows(self) -> list[dict]:
        return [{"rank": r + 1, "item": self.items[k]} for r, k in enumerate(self.order)]

    def plot(self, path=None, *, force: bool = False, title: str | None = None, **options):
        """Plot of the rank intervals (a :class:`matplotlib.figure.Figure`, shown inline in a notebook;
        also saved to ``path`` if given): :func:`privrank.aggregate_intervals` of this result, with
        ``options`` (``level``, ``n_bootstrap``, ``rng``, ...) passed on; post-processing only."""
        from ..inference import aggregate_intervals

        return aggregate_intervals(self, **options).plot(path, force=force, title=title)


_P = ParamSpec("_P")


def labelled(fn: Callable[_P, AggregateResult]) -> Callable[_P, AggregateResult]:
    """A public aggregation function that also takes a DataFrame of rankings and returns its
    :class:`AggregateResult` with the profile's item labels."""
    @functools.wraps(fn)
    def run(profile, *args, **kwargs):
        if is_table(profile):
            profile = as_rankings(profile)
        result = fn(profile, *args, **kwargs)
        items = getattr(profile, "items", None)
        return replace(result, items=tuple(items) if items is not None else tuple(range(len(result.order))))
    return run  # type: ignore[return-value]  # run takes what fn takes (a table as the profile too)


def _pairwise_profile(profile) -> Rankings | RankingTally:
    """``profile`` of an algorithm that reads only ``w``: a :class:`RankingTally` as it is, anything
    else through :func:`~privrank.data.ranking_files.as_rankings`; either checked by :func:`releasable`."""
    return releasable(profile if isinstance(profile, RankingTally) else as_rankings(profile))


def _kwiksort_asking(oracle, m, rng, details):
    """KwikSort asking ``oracle``, or None when the oracle refuses (the run is discarded)."""
    try:
        return kwiksort(m, oracle.prefers, rng).order
    except QueryCapExceeded:
        return None
    finally:
        details["queries"] = oracle.queries


def _solver_details(solver, best_of) -> dict:
    """The solver of a released matrix, by name (``"custom"`` for a callable), for re-solving it."""
    return {"solver": solver if isinstance(solver, str) else "custom", "best_of": int(best_of)}


#: above this many items only the closed-form bound is computed (each round searches m^3 triangles)
GAP_LP_MAX_ITEMS = 300


def certified(solve, W, order, seconds, rng) -> tuple[np.ndarray, dict]:
    """The order a solver ``solve`` (of :func:`~privrank.aggregation.kemeny.wfas_solver`) found on the
    released (noisy) matrix ``W``, and its certificate: which algorithm ran (``solver_ran``), the
    order's Kemeny cost on that matrix, a lower bound on every order's cost there, their difference
    (a certified optimality gap) and whether the order is proved optimal. An exact solve is its own
    proof; after a heuristic (local search, KwikSort, Borda, Copeland) the order is
    :func:`~privrank.aggregation.kemeny_exact.certify`-ed for ``seconds`` -- for local search the
    certificate's order, never costlier, else the heuristic's own. Post-processing of the release
    (never a cost on the raw rankings). A custom callable gets no certificate."""
    ran = getattr(solve, "ran", None)
    if ran is None:
        return order, {}
    if ran == "exact":
        cost = float(kemeny_cost(order, W))
        return order, {"solver_ran": ran, "noisy_cost": cost, "noisy_cost_lower_bound": cost, "optimality_gap": 0.0,
                       "proved_optimal": True}
    m = W.shape[0]
    c = certify(W, order, time_limit=seconds if m <= GAP_LP_MAX_ITEMS else 0.0,
                improve=ran == "local-search", rng=rng)
    return c.order, {"solver_ran": ran, "noisy_cost": c.cost, "noisy_cost_lower_bound": c.lower_bound,
                     "optimality_gap": c.gap, "proved_optimal": c.proved_optimal}


def _clip_default(clip, solver, m) -> bool:
    """Clip unless an exact solver or a positional rule runs (they accept any weights, and clipping
    would bias Borda's sums; notes §6.1)."""
    if clip is not None:
        return check_flag(clip, name="clip")
    return not (solver in ("exact", "borda", "copeland") or (solver == "auto" and m <= AUTO_EXACT_MAX))


# --------------------------------------------------------------------------------------------
# central model
# --------------------------------------------------------------------------------------------

@labelled
@private_release
def private_kemeny(profile: Rankings | RankingTally | ArrayLike | TableLike, *, epsilon: float, delta: float = 0.0,
                   solver: str | Callable[[np.ndarray], ArrayLike] = "auto", clip: bool | None = None, best_of: int = 1,
                   certify_seconds: float = CERTIFY_SECONDS, rng: int | np.random.Generator | None = None,
                   ledger: Ledger | str | os.PathLike[str] | None = None, accountant: Accountant | None = None,
                   new_data: str | None = None) -> AggregateResult:
    """Noisy-matrix reduction: privately release ``w``, then solve (Alabi et al. Theorem 1).

    The upper triangle of ``w`` gets Laplace noise of scale ``M/(eps n)`` (``delta = 0``,
    epsilon-DP, Corollary 3; the paper prints the looser ``m^2/(eps n)``) or Gaussian noise of
    sd ``sqrt(M)/(n mu(eps, delta))`` (``delta > 0``, (epsilon, delta)-DP, Corollary 4; exact
    discrete Gaussian on the counts, ``mu`` from the tight zCDP conversion), ``M = m(m-1)/2``; the lower triangle is ``1 - w~``. The solver sees
    only ``w~``. With an exact solver the expected cost is at most ``OPT + 2 E sum_{i<j} |w~ - w|``
    (``<= OPT + 2 M E|noise|``).

    Parameters
    ----------
    profile
        :class:`~privrank.data.rankings.Rankings`, an ``(n, m)`` array of orders, or a
        :class:`~privrank.data.rankings.RankingTally` with the pairwise counts (from
        :func:`privrank.sufficient_statistics`, ``kind="rankings"``; likewise in
        :func:`dp_kwiksort`, :func:`exponential_kemeny` and :func:`hay_quicksort`, which read
        only ``w``).
    epsilon, delta
        Total budget (central model, one ranking).
    solver
        Solver name or a callable ``W -> order``.
    clip
        Clip ``w~`` to ``[0, 1]`` before solving (restores the probability constraints that
        KwikSort-type solvers need). Default: no clipping for exact solvers, whose additive
        error is smaller on the unbiased matrix, clipping otherwise.
    best_of
        KwikSort runs inside the heuristic solvers.
    certify_seconds
        Seconds spent, after a heuristic solver, on a lower bound on the released matrix
        (:func:`certified`; default ``CERTIFY_SECONDS`` = 10; 0 keeps the closed-form bound and
        local search's order). Unless 0, local search's order is first improved by a seeded search
        of a fixed amount of work, not counted in these seconds: the order of a seeded run does not
        depend on the machine, only the bound does. Post-processing: no privacy cost.
    rng
        Noise and solver randomness.

    Examples
    --------
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   items=["a", "b", "c", "d"], weights=[3000, 2000, 2500, 2500])
    >>> res = pr.private_kemeny(profile, epsilon=1.0, rng=0)
    >>> res.ranking, res.details["noise"], res.details["noise_scale"]
    (['a', 'b', 'c', 'd'], 'laplace', 0.0006)
    >>> print(res.guarantee.describe())
    1-DP, central model, protecting one ranking [noisy pairwise matrix (Laplace)]. SEEDED RUN: reproducible
    research output, not a private release (whoever knows the seed can remove the noise); leave the seed out
    for a real release.
    """
    R = _pairwise_profile(profile)
    budget = Budget(epsilon, delta)
    seconds = check_positive(certify_seconds, name="certify_seconds", allow_zero=True)
    gen = as_generator(rng)
    m = R.n_items
    solve = wfas_solver(solver, rng=gen, best_of=best_of)  # checks the solver's arguments before the charge
    do_clip = _clip_default(clip, solver, m)
    guarantee = budget.guarantee("noisy pairwise matrix")
    charge(guarantee)
    Wt, scale = noisy_pairwise_matrix(R.pairwise_matrix(), R.n_voters, budget, 1.0, gen)
    solved = clip_pairs(Wt) if do_clip else Wt
    order, gap = certified(solve, solved, np.asarray(solve(solved), dtype=np.int64), seconds, gen)
    return AggregateResult(order, guarantee,
                           {"noise": budget.noise, "noise_scale": scale, "clipped": do_clip,
                            **_solver_details(solver, best_of), **gap},
                           MatrixRelease(Wt, budget.noise, scale, R.n_voters))


@labelled
@private_release
def dp_kwiksort(profile: Rankings | RankingTally | ArrayLike | TableLike, *, epsilon: float, delta: float = 0.0,
                queries: int | None = None, fail_probability: float | None = None, fallback_fraction: float = 0.5,
                fallback_solver: str | Callable[[np.ndarray], ArrayLike] = "auto",
                rng: int | np.random.Generator | None = None, ledger: Ledger | str | os.PathLike[str] | None = None,
                accountant: Accountant | None = None, new_data: str | None = None) -> AggregateResult:
    """DPKwikSort (Alabi et al. Algorithm 1, Theorem 5, Corollaries 6 and 7).

    KwikSort asks a :class:`~privrank.mechanisms.query_oracle.NoisyPairOracle` for at most
    ``q`` comparisons. If the run needs more, it is discarded (nothing of it is output) and
    the fallback releases a fresh noisy matrix (:func:`private_kemeny`'s release, clipped)
    and solves it.

    Budget. Phase 1 gets ``1 - kappa`` of the budget and the fallback ``kappa``
    (``fallback_fraction``; the paper's split is 1/2). Pure (``delta = 0``): Laplace scale
    ``q/(eps (1 - kappa) n)`` per answer (the paper prints ``q/(eps n)`` for the half budget,
    which spends ``1.5 eps`` in total) and ``M/(eps kappa n)`` for the fallback: epsilon-DP by
    basic composition. Approximate (``delta > 0``): Gaussian answers of sd
    ``sqrt(q)/(n mu sqrt(1 - kappa))`` and a Gaussian fallback of sd
    ``sqrt(M)/(n mu sqrt(kappa))`` with ``mu = mu(eps, delta)``: the two stages compose to
    ``mu``-Gaussian DP, hence (epsilon, delta)-DP (the paper gives the fallback a pure
    ``eps/2`` instead; composing in Gaussian DP leaves more budget to the queries).
    When ``q >= m(m-1)/2`` KwikSort can never exceed the cap, no fallback exists and phase 1
    gets the whole budget (notes §6.3).

    Parameters
    ----------
    queries
        The cap ``q``. Default: :func:`~privrank.aggregation.kemeny_heuristics.kwiksort_query_cap`, the
        Chernoff bound with which the fallback runs with probability at most
        ``fail_probability`` (default ``m^-4``); about ``3.1 m ln m`` for large ``m``.
    fallback_solver
        Solver of the fallback matrix.

    Returns
    -------
    AggregateResult
        ``details``: the cap, the noise scales, the budget split, the queries asked and
        whether the fallback ran (both functions of noisy answers only).

    Examples
    --------
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   items=["a", "b", "c", "d"], weights=[3000, 2000, 2500, 2500])
    >>> res = pr.dp_kwiksort(profile, epsilon=1.0, rng=0)
    >>> res.ranking, res.details["queries"], res.details["fallback"]
    (['a', 'b', 'c', 'd'], 4, False)
    >>> print(res.guarantee.describe())
    1-DP, central model, protecting one ranking [DPKwikSort (Laplace)]. At most 6 noisy comparisons. SEEDED
    RUN: reproducible research output, not a private release (whoever knows the seed can remove the noise);
    leave the seed out for a real release.
    """
    R = _pairwise_profile(profile)
    budget = Budget(epsilon, delta)
    gen = as_generator(rng)
    m, n = R.n_items, R.n_voters
    D = m * (m - 1) // 2
    if fail_probability is not None:
        check_fraction(fail_probability, name="fail_probability")
    fraction = check_fraction(fallback_fraction, name="fallback_fraction")
    q = kwiksort_query_cap(m, fail_probability) if queries is None else check_whole(queries, name="queries", minimum=0)
    kappa = 0.0 if q >= D else fraction
    details = {"noise": budget.noise, "query_cap": q, "fallback_fraction": kappa, "queries": 0,
               "fallback": False}
    guarantee = budget.guarantee("DPKwikSort", note=f"At most {q} noisy comparisons.")
    charge(guarantee)
    if m == 1:
        return AggregateResult(np.zeros(1, dtype=np.int64), guarantee, details)
    if q >= 1:
        oracle = NoisyPairOracle(R.preference, m=m, n=n, cap=q, budget=budget, fraction=1.0 - kappa,
                                 rng=gen)
        details["query_noise_scale"] = oracle.scale
        order = _kwiksort_asking(oracle, m, gen, details)
        if order is not None:
            return AggregateResult(order, guarantee, details)
    Wt, scale = noisy_pairwise_matrix(R.pairwise_matrix(), n, budget, kappa, gen, clip=True)
    details.update(fallback=True, fallback_noise_scale=scale)
    order = np.asarray(wfas_solver(fallback_solver, rng=gen)(Wt), dtype=np.int64)
    return AggregateResult(order, guarantee, details)


def _exponential_utilities(R: Rankings | RankingTally):
    """All ``m!`` orders, their utilities and the utility's sensitivity.

    Utility ``-n K(order, w) = -sum_k K(order, pi_k)`` (minus the total Kendall tau distance to
    the voters); one ranking moves it by at most ``M = m(m-1)/2``.
    """
    m = R.n_items
    if m > EXPONENTIAL_MAX_ITEMS:
        raise InputError(f"the exponential mechanism enumerates all m! orders; it needs "
                         f"m <= {EXPONENTIAL_MAX_ITEMS} (use dp-kwiksort or noisy-matrix)")
    perms = np.array(list(itertools.permutations(range(m))), dtype=np.int64)
    return perms, -kemeny_cost(perms, R.pairwise_counts()), max(1, m * (m - 1) // 2)


def exponential_distribution(profile, *, epsilon) -> tuple[np.ndarray, np.ndarray]:
    """All ``m!`` orders and their probabilities under :func:`exponential_kemeny`."""
    perms, utility, sensitivity = _exponential_utilities(_pairwise_profile(profile))
    return perms, exponential_probabilities(utility, sensitivity, epsilon)


@labelled
@private_release
def exponential_kemeny(profile: Rankings | RankingTally | ArrayLike | TableLike, *, epsilon: float,
                       rng: int | np.random.Generator | None = None,
                       ledger: Ledger | str | os.PathLike[str] | None = None, accountant: Accountant | None = None,
                       new_data: str | None = None) -> AggregateResult:
    """The exponential mechanism over all orders (McSherry and Talwar; Hay et al. 2017).

    Releases order ``s`` with probability proportional to ``exp(-eps n K(s, w) / (2 M))``,
    ``M = m(m-1)/2`` the sensitivity of ``n K``: epsilon-DP, and
    ``E K <= OPT + (2M/(eps n)) (ln m! + 1)`` (Alabi et al. Table 2, last row). Exact sampling
    enumerates the ``m!`` orders: ``m <= 8``.

    Examples
    --------
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   items=["a", "b", "c", "d"], weights=[3000, 2000, 2500, 2500])
    >>> res = pr.exponential_kemeny(profile, epsilon=1.0, rng=0)
    >>> res.ranking, res.details["orders"]
    (['a', 'b', 'c', 'd'], 24)
    >>> print(res.guarantee.describe())
    1-DP, central model, protecting one ranking [exponential mechanism over all orders]. SEEDED RUN:
    reproducible research output, not a private release (whoever knows the seed can remove the noise); leave
    the seed out for a real release.
    """
    perms, utility, sensitivity = _exponential_utilities(_pairwise_profile(profile))
    g = Guarantee(epsilon=check_epsilon(epsilon), model="central", unit=UNIT_RANKING,
                  mechanism="exponential mechanism over all orders")
    charge(g)
    k = exponential_mechanism(utility, sensitivity, epsilon, rng)
    return AggregateResult(perms[k], g, {"orders": int(perms.shape[0])})


@labelled
@private_release
def hay_quicksort(profile: Rankings | RankingTally | ArrayLike | TableLike, *, epsilon: float, delta: float = 0.0,
                  queries: int | None = None, rng: int | np.random.Generator | None = None,
                  ledger: Ledger | str | os.PathLike[str] | None = None, accountant: Accountant | None = None,
                  new_data: str | None = None) -> AggregateResult:
    """Hay et al.'s budgeted private quicksort (the baseline Alabi et al. §1.2 improve on).

    KwikSort with all of the budget on at most ``q`` noisy comparisons (Laplace scale
    ``q/(eps n)``, or Gaussian sd ``sqrt(q)/(n mu(eps, delta))``); when the next recursion level
    no longer fits, the sub-problems that do not fit stay unsorted, in a uniformly random order.
    The result is a partial order: ``details["unresolved"]`` lists the groups left unsorted
    (item indices). Epsilon-DP (or (epsilon, delta)-DP) for one ranking; its expected cost does
    not tend to the optimum as ``n`` grows, because unresolved pairs stay random.

    ``queries`` defaults to the expected comparison count of QuickSort,
    ``2 (m + 1) H_m - 4 m``: the budget of a method planned for the average run (Hay et al. fix
    a budget without a tail bound).

    Examples
    --------
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   items=["a", "b", "c", "d"], weights=[3000, 2000, 2500, 2500])
    >>> res = pr.hay_quicksort(profile, epsilon=1.0, rng=0)
    >>> res.ranking, res.details["query_cap"], res.details["unresolved"]
    (['a', 'b', 'c', 'd'], 5, [])
    >>> res.guarantee.epsilon, res.guarantee.unit
    (1.0, 'one ranking')
    """
    R = _pairwise_profile(profile)
    budget = Budget(epsilon, delta)
    gen = as_generator(rng)
    m, n = R.n_items, R.n_voters
    if queries is None:
        harmonic = float(np.sum(1.0 / np.arange(1, m + 1)))
        q = max(1, int(round(2 * (m + 1) * harmonic - 4 * m)))
    else:
        q = check_whole(queries, name="queries")
    guarantee = budget.guarantee("budgeted private quicksort (Hay et al.)",
                                 note=f"At most {q} noisy comparisons.")
    charge(guarantee)
    oracle = NoisyPairOracle(R.preference, m=m, n=n, cap=q, budget=budget, rng=gen)
    run = kwiksort(m, oracle.prefers, gen, max_queries=q)
    return AggregateResult(run.order, guarantee,
                           {"noise": budget.noise, "query_cap": q, "query_noise_scale": oracle.scale,
                            "queries": run.queries,
                            "unresolved": [g.tolist() for g in run.unresolved]})


# --------------------------------------------------------------------------------------------
# local model
# --------------------------------------------------------------------------------------------

def _local_guarantee(epsilon, mechanism, note) -> Guarantee:
    return Guarantee(epsilon=epsilon, model="local", unit=UNIT_RANKING, mechanism=mechanism,
                     note=note)


@labelled
@private_release
def ldp_matrix(profile: Rankings | RankingTally | ArrayLike | TableLike, *, epsilon: float,
               solver: str | Callable[[np.ndarray], ArrayLike] = "auto", clip: bool | None = None, best_of: int = 1,
               certify_seconds: float = CERTIFY_SECONDS, rng: int | np.random.Generator | None = None,
               ledger: Ledger | str | os.PathLike[str] | None = None, accountant: Accountant | None = None,
               new_data: str | None = None) -> AggregateResult:
    """One-round epsilon-local-DP Kemeny aggregation (Alabi et al. Theorem 8, Corollary 9).

    Every voter sends one Duchi et al. l2 report of their centred pair-indicator vector
    (:func:`~privrank.mechanisms.pairwise_matrix.local_pairwise_matrix`; the key of the
    voters' randomness is the first draw of ``rng``); the analyst averages the reports into an
    unbiased ``w~`` and solves it. Each voter's whole ranking is epsilon-local DP; the expected
    additive error is ``O(m^3/(eps sqrt n))``.

    ``profile`` is the rankings (:class:`~privrank.data.rankings.Rankings` or an array of
    orders) or a :class:`~privrank.data.rankings.RankingTally` whose voters already sent their
    reports at ``epsilon`` (:func:`privrank.sufficient_statistics` with ``kind="rankings"``,
    ``statistic="pairwise"``). The reports of a profile are keyed by the first draw of
    ``as_generator(rng)``, so an engine fed a Generator ``g`` followed by this function fed the
    tally and ``g`` gives what this function fed the rankings and an equally seeded Generator
    gives. ``certify_seconds`` is as in :func:`private_kemeny`.
    Examples
    --------
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   items=["a", "b", "c", "d"], weights=[3000, 2000, 2500, 2500])
    >>> res = pr.ldp_matrix(profile, epsilon=1.0, rng=0)
    >>> res.ranking
    ['a', 'b', 'c', 'd']
    >>> print(res.guarantee.describe())
    1-DP, local model, protecting one ranking [one-round Duchi et al. l2 randomizer of the pairwise vector].
    Every voter sends one report. SEEDED RUN: reproducible research output, not a private release (whoever
    knows the seed can remove the noise); leave the seed out for a real release.
    """
    R = _pairwise_profile(profile)
    eps = check_epsilon(epsilon)
    seconds = check_positive(certify_seconds, name="certify_seconds", allow_zero=True)
    gen = as_generator(rng)
    solve = wfas_solver(solver, rng=gen, best_of=best_of)  # checks the solver's arguments before the charge
    do_clip = _clip_default(clip, solver, R.n_items)
    g = _local_guarantee(eps, "one-round Duchi et al. l2 randomizer of the pairwise vector",
                         "Every voter sends one report.")
    if isinstance(R, RankingTally):  # the voters' reports, drawn and charged where they were tallied
        Wt = pairwise_from_reports(R.local_reports("pairwise", eps), R.n_voters, R.n_items, eps)
        g = replace(g, seeded=R.seeded)
    else:
        charge(g)
        Wt = local_pairwise_matrix(R.expanded(), eps, gen)
    solved = clip_pairs(Wt) if do_clip else Wt
    order, gap = certified(solve, solved, np.asarray(solve(solved), dtype=np.int64), seconds, gen)
    sd = local_pairwise_sd(R.n_items, R.n_voters, eps)
    return AggregateResult(order, g, {"noise": "local", "noise_scale": sd, "clipped": do_clip,
                                      **_solver_details(solver, best_of), **gap},
                           MatrixRelease(Wt, "local", sd, R.n_voters))


def local_group_cap(m: int, queries: int, fail_probability: float | None = None) -> int:
    """Per-group cap ``tau`` of LDPKwikSort (notes §6.4).

    The smallest ``tau`` with ``m P[Bin(q, 1/m) > tau] <= p`` (default ``p = m^-4``): when
    KwikSort asks at most ``q`` queries, each new pair's group is a fresh uniform draw, so a
    group's load is ``Bin(q, 1/m)`` and no group passes ``tau`` except with probability ``p``.
    Capped at ``m(m-1)/2``, the most queries any group can receive.
    """
    m, q = int(m), int(queries)
    D = m * (m - 1) // 2
    p = float(m) ** -4 if fail_probability is None else check_fraction(fail_probability, name="fail_probability")
    if m <= 1:
        return max(D, 1)
    tail = m * bdtrc(np.arange(q + 1), q, 1.0 / m)  # P[Bin(q, 1/m) > k]
    tau = int(np.argmax(tail <= p)) if np.any(tail <= p) else q
    return max(1, min(tau, D))


@labelled
@private_release
def ldp_kwiksort(profile: Rankings | ArrayLike | TableLike, *, epsilon: float, tau: int | None = None,
                 fail_probability: float | None = None, fallback_fraction: float = 0.5,
                 fallback_solver: str | Callable[[np.ndarray], ArrayLike] = "auto",
                 rng: int | np.random.Generator | None = None, ledger: Ledger | str | os.PathLike[str] | None = None,
                 accountant: Accountant | None = None, new_data: str | None = None) -> AggregateResult:
    """LDPKwikSort (Alabi et al. Algorithm 3 as rebuilt in the notes §2.7; Theorem 11).

    KwikSort asks a :class:`~privrank.mechanisms.query_oracle.LocalPairOracle`: voters are
    split at random into ``m`` groups, every pair is answered by its (random, public) group
    with randomized response at ``eps_0 = eps (1 - kappa) / tau`` per voter, and no group
    answers more than ``tau`` queries. If a comparison would take a group past ``tau`` the run
    is discarded and every voter sends one Duchi et al. report of their ranking at
    ``eps kappa`` (:func:`ldp_matrix`'s round), which is clipped and solved. Every voter thus
    spends at most ``tau eps_0 + eps kappa = eps``: epsilon-local DP per ranking, by
    construction. ``kappa`` is ``fallback_fraction`` (the paper's split is 1/2); when ``tau``
    reaches ``m(m-1)/2`` no group can pass it, no fallback exists and ``kappa = 0``.

    The voters' reports use the tight binary randomized response (the paper's randomizer on
    {0, 1} inputs spends only about half of ``eps_0``; notes §2.5), debiased and averaged over
    the group. Requires ``n >= m``.

    Parameters
    ----------
    tau
        Per-group cap; default :func:`local_group_cap` of
        :func:`~privrank.aggregation.kemeny_heuristics.kwiksort_query_cap` (both at ``fail_probability``,
        default ``m^-4``), ``Theta(log m)``.

    Examples
    --------
    Each voter answers a few comparisons at a small share of epsilon, so LDPKwikSort needs many voters
    (100,000 here):

    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   items=["a", "b", "c", "d"], weights=[30000, 20000, 25000, 25000])
    >>> res = pr.ldp_kwiksort(profile, epsilon=1.0, rng=0)
    >>> res.ranking, res.details["tau"], res.details["fallback"]
    (['a', 'b', 'c', 'd'], 5, False)
    >>> print(res.guarantee.describe())
    1-DP, local model, protecting one ranking [LDPKwikSort (randomized response per comparison)]. Each voter
    answers at most 5 comparisons at epsilon 0.1 each and sends at most one fallback report at epsilon 0.5.
    SEEDED RUN: reproducible research output, not a private release (whoever knows the seed can remove the
    noise); leave the seed out for a real release.
    """
    R = releasable(as_rankings(profile))
    eps = check_epsilon(epsilon)
    gen = as_generator(rng)
    m = R.n_items
    D = m * (m - 1) // 2
    if fail_probability is not None:
        check_fraction(fail_probability, name="fail_probability")
    fraction = check_fraction(fallback_fraction, name="fallback_fraction")
    if tau is None:
        tau = local_group_cap(m, kwiksort_query_cap(m, fail_probability), fail_probability)
    tau = check_whole(tau, name="tau")
    kappa = 0.0 if tau >= D else fraction
    orders = R.expanded()
    note = (f"Each voter answers at most {tau} comparisons at epsilon {eps * (1 - kappa) / tau:.4g} each"
            + (f" and sends at most one fallback report at epsilon {eps * kappa:.4g}" if kappa else "") + ".")
    g = _local_guarantee(eps, "LDPKwikSort (randomized response per comparison)", note)
    if m > 1 and len(orders) < m:  # the oracle's own refusal came after the charge: a spend without a release
        raise InputError(f"LDPKwikSort needs at least as many rankings as items (n >= m = {m}): every item pair is "
                         "answered by a group of n/m voters")
    charge(g)
    details = {"tau": tau, "fallback_fraction": kappa, "fallback": False}
    if m == 1:
        return AggregateResult(np.zeros(1, dtype=np.int64), g, details)
    oracle = LocalPairOracle(orders, epsilon=eps * (1 - kappa), tau=tau, rng=gen)
    details["epsilon_per_answer"] = oracle.epsilon_per_answer
    order = _kwiksort_asking(oracle, m, gen, details)
    if order is not None:
        return AggregateResult(order, g, details)
    details["fallback"] = True
    Wt = clip_pairs(local_pairwise_matrix(orders, eps * kappa, gen))
    return AggregateResult(np.asarray(wfas_solver(fallback_solver, rng=gen)(Wt), dtype=np.int64), g, details)
