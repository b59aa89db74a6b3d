"""Rank intervals of private Kemeny and footrule aggregates: a bootstrap over the released statistic."""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .._rng import as_generator
from ..errors import InputError, check_labels, check_whole
from ..display import Displayed
from ..guarantees import Guarantee
from ..draws import simulating
from ..mechanisms.noise import gaussian, laplace
from ..mechanisms.pairwise_matrix import MatrixRelease, count_noise, matrix_from_upper
from ..mechanisms.tree import TreeRelease, tree_layout
from .cost import BOOTSTRAP_CHUNK, check_interval_cost, check_level, warn_if_indistinguishable

KEMENY_TARGET = "ranks in the Kemeny aggregate of the raw rankings"
FOOTRULE_TARGET = "ranks in the footrule-optimal aggregate of the raw rankings"
AGGREGATE_BOOTSTRAP_MIN = 100


class Aggregate(Protocol):
    """What :func:`aggregate_intervals` reads of a private aggregate: an
    :class:`~privrank.aggregation.private_kemeny.AggregateResult` (not imported here: the
    aggregation package imports this one)."""

    @property
    def order(self) -> np.ndarray: ...
    @property
    def guarantee(self) -> Guarantee: ...
    @property
    def details(self) -> dict: ...


@dataclass(frozen=True, repr=False)
class RankIntervals(Displayed):
    """Rank intervals and "i ahead of j" probabilities of a private consensus ranking.

    Attributes
    ----------
    items : tuple
        Item labels.
    order : ndarray
        The released order (item indices, best first).
    rank_lower, rank_upper : ndarray of int
        Per-item rank interval (1 = best) at ``level``.
    ahead : ndarray
        ``ahead[i, j]``: the share of bootstrap orders with item ``i`` ahead of item ``j`` (NaN on
        the diagonal); ``ahead[i, j] + ahead[j, i] = 1``.
    rank_shares : ndarray
        ``rank_shares[i, r]``: the share of bootstrap orders placing item ``i`` at rank ``r + 1``.
    level : float
    n_bootstrap : int
    target : str
        What the rank intervals cover.
    guarantee : Guarantee
        The guarantee of the release: intervals are post-processing.

    Examples
    --------
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   items=["a", "b", "c", "d"], weights=[3000, 2000, 2500, 2500])
    >>> res = pr.private_kemeny(profile, epsilon=1.0, rng=0)
    >>> ri = pr.aggregate_intervals(res, n_bootstrap=200, rng=0)
    >>> ri.order, ri.rank_lower, ri.rank_upper
    (array([0, 1, 2, 3]), array([1, 2, 3, 4]), array([1, 2, 3, 4]))
    >>> ri.target
    'ranks in the Kemeny aggregate of the raw rankings'
    """

    items: tuple
    order: np.ndarray
    rank_lower: np.ndarray
    rank_upper: np.ndarray
    ahead: np.ndarray
    rank_shares: np.ndarray
    level: float
    n_bootstrap: int
    target: str
    guarantee: Guarantee

    def entry(self, k: int) -> dict:
        """Interval columns of item ``k``: ``rank_lower, rank_upper``."""
        return {"rank_lower": int(self.rank_lower[k]), "rank_upper": int(self.rank_upper[k])}

    def _rows(self) -> list[dict]:
        return [{"rank": r + 1, "item": self.items[k], **self.entry(k)} for r, k in enumerate(self.order)]

    def describe(self) -> str:
        """The intervals in words."""
        return (f"{100 * self.level:g}% intervals for the {self.target}, from {self.n_bootstrap} re-solved "
                "releases with the privacy noise drawn again; they cover the privacy noise, not the sampling of "
                "the voters")

    def plot(self, path=None, *, force: bool = False, title: str | None = None):
        """Plot of the rank intervals: :func:`~privrank.inference.plot_intervals`."""
        from .plot import plot_intervals

        return plot_intervals(self, path, force=force, title=title)


def aggregate_intervals(result: Aggregate, *, items: Sequence[Hashable] | None = None, level: float = 0.95,
                        n_bootstrap: int = 1000, solver: str | None = None,
                        rng: int | np.random.Generator | None = None) -> RankIntervals:
    """Rank intervals and "i ahead of j" probabilities of a private Kemeny or footrule aggregate.

    Post-processing of the release only (the raw rankings are never read), so the intervals
    cost no privacy and carry the result's guarantee. A parametric bootstrap over the noisy
    statistic: the released statistic ``s~`` -- the upper triangle of the noisy pairwise matrix
    (:func:`~privrank.aggregation.private_kemeny.private_kemeny`, Alabi et al. Theorem 1;
    :func:`~privrank.aggregation.private_kemeny.ldp_matrix`, Theorem 8) or the noisy tree
    aggregates (:func:`~privrank.aggregation.private_footrule.dp_footrule` and
    ``ldp_footrule``, Hillebrand et al. Algorithm 2) -- gets fresh noise of the mechanism's law,
    ``s~ + e_b``, and every replicate is solved as the release was (the same clipping and solver;
    the minimum-cost assignment). Central noise is redrawn exactly (Laplace or Gaussian of the
    release's scale). The noise of a local release, a mean of ``n`` Duchi et al. reports, is
    redrawn as Gaussian with the per-entry standard deviation of that mean (exact for the
    pairwise matrix, :func:`~privrank.mechanisms.pairwise_matrix.local_pairwise_sd`; an upper
    bound for the tree), independently per entry: a normal approximation over the voters.

    What they cover: the ranks of the *non-private* aggregate of the same rankings (the
    release's solver on the exact pairwise matrix; the footrule optimum) against the privacy
    noise alone. The voters are taken as given, not as a sample from a population: the sampling
    of voters is not included. With an exact solver the target is the Kemeny optimum; a
    randomised solver (KwikSort, local search) adds its own randomness to both.

    The intervals are decided pair by pair (the papers are silent here). ``ahead[i, j]``, the
    share of bootstrap orders with ``i`` ahead of ``j``, is a one-sided p-value: when ``i`` is
    behind ``j`` in the non-private aggregate, ``ahead[i, j] >= 1 - a`` has probability about
    ``a`` or less (exactly ``a`` when the two tie and their order flips with the noise of one
    linear statistic). For each item, its ``m - 1`` pairs are tested by Holm's step-down rule at
    ``1 - level``: sorted by ``p = min(ahead[i, j], ahead[j, i])``, the ``k``-th smallest is
    decided (``j`` surely ahead of ``i``, or surely behind, whichever the bootstrap favours)
    while ``p <= (1 - level)/(m - k)``. The rank interval is ``[1 + #surely ahead, m - #surely
    behind]``, widened to contain the released rank; it misses the true rank only when some
    decision is wrong, so it covers with probability at least ``level`` per item. An item whose
    rank hinges on one near tie is covered about ``level`` of the time; clear ranks, and items
    among several near ties, more often. (Percentile intervals of the bootstrap rank
    distribution are narrower but miss the first and last ranks when many items are within the
    noise of each other: the bootstrap world's best item is ahead by more than the true one.)

    Parameters
    ----------
    result : AggregateResult
        A result whose ``release`` is the noisy matrix or tree it was computed from (see above).
    items : sequence, optional
        Item labels (default: the result's own, else ``0 .. m-1``).
    level : float
        Confidence level of every rank interval, in (0, 1).
    n_bootstrap : int
        Replicates, at least 100 (tail shares are resolved to ``1/n_bootstrap``). Each is one solve:
        the exact solver runs all of them at once up to 14 items, one integer program each
        beyond. Bounded by :func:`check_interval_cost` (module docstring).
    solver : str, optional
        Kemeny solver of the replicates (:func:`~privrank.aggregation.kemeny.wfas_solver` names);
        default the release's own. Needed when the release was solved by a custom callable.
    rng : None, int or Generator
        Bootstrap randomness (not privacy noise).

    Returns
    -------
    RankIntervals

    Examples
    --------
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   items=["a", "b", "c", "d"], weights=[3000, 2000, 2500, 2500])
    >>> res = pr.dp_footrule(profile, epsilon=1.0, rng=0)
    >>> ri = pr.aggregate_intervals(res, level=0.9, n_bootstrap=200, rng=0)
    >>> res.ranking, ri.rank_lower, ri.rank_upper
    (['a', 'b', 'c', 'd'], array([1, 2, 3, 4]), array([1, 2, 3, 4]))
    >>> ri.guarantee == res.guarantee
    True
    """
    check_level(level)
    B = check_whole(n_bootstrap, name="n_bootstrap")
    if B < AGGREGATE_BOOTSTRAP_MIN:
        raise InputError(f"n_bootstrap must be at least {AGGREGATE_BOOTSTRAP_MIN}")
    gen = as_generator(rng)
    release = getattr(result, "release", None)
    if not isinstance(release, (MatrixRelease, TreeRelease)):
        raise InputError("rank intervals re-draw the noise of the release an order was computed from: they need "
                         "the result of private_kemeny (noisy-matrix), ldp_matrix, dp_footrule or ldp_footrule")
    order = np.asarray(result.order, dtype=np.int64)
    m = order.size
    if items is None:
        items = getattr(result, "items", ()) or range(m)
    labels = check_labels(items)
    if len(labels) != m:
        raise InputError(f"{len(labels)} item labels for an aggregate of {m} items")
    if len(set(labels)) != m:
        raise InputError("the item list has a repeated label")
    name = (result.details.get("solver") if solver is None else solver) if isinstance(release, MatrixRelease) \
        else None
    from ..aggregation.kemeny_exact import DP_MAX_ITEMS  # the solvers import scipy.optimize: only where aggregates are
    heavy = name in ("local-search", "exact", "auto") and m > DP_MAX_ITEMS
    check_interval_cost(m, n_bootstrap=B, pairs=release.aggregates.size if isinstance(release, TreeRelease)
                        else None, cubic=heavy,
                        advice="use fewer replicates (Python: n_bootstrap=) or fewer items"
                               + (", or the KwikSort solver (solver='kwiksort'; CLI: --solver kwiksort)" if heavy
                                  else ""))
    if isinstance(release, MatrixRelease):
        statistic, solve, target = _kemeny_replicates(release, result.details, solver, gen)
    else:
        statistic, solve, target = _footrule_replicates(release, m)
    noise = release.noise
    scale = release.scale if isinstance(release, MatrixRelease) else release.noise_scale

    @simulating()  # replicates of the released statistic: post-processing, no privacy spent
    def redraw(b):
        if scale == 0:  # one item: no pair was released, nothing varies
            return np.zeros((b, statistic.size))
        if noise != "laplace":
            return gaussian(scale, (b, statistic.size), gen)
        if isinstance(release, MatrixRelease):  # exact Laplace on the counts, as released
            return count_noise(scale, release.n, (b, statistic.size), gen) / release.n
        return laplace(scale, (b, statistic.size), gen)

    step = max(1, BOOTSTRAP_CHUNK // max(statistic.size, m * m))
    ranks = np.concatenate([  # chunks of replicates bound the memory
        np.argsort(solve(statistic + redraw(b)), axis=1) + 1
        for b in (min(step, B - start) for start in range(0, B, step))])
    shares = np.bincount((np.arange(m) * m + ranks - 1).ravel(), minlength=m * m).reshape(m, m) / B
    ahead = np.zeros((m, m))
    for start in range(0, B, step):
        r = ranks[start:start + step]
        ahead += np.sum(r[:, :, None] < r[:, None, :], axis=0)
    ahead /= B
    np.fill_diagonal(ahead, np.nan)
    released = np.empty(m, dtype=np.int64)
    released[order] = np.arange(1, m + 1)
    lower, upper = _holm_bounds(ahead, level)
    lower, upper = np.minimum(lower, released), np.maximum(upper, released)
    warn_if_indistinguishable(lower, upper, level)
    return RankIntervals(labels, order, lower, upper, ahead, shares,
                         float(level), B, target, result.guarantee)


def _holm_bounds(ahead, level) -> tuple[np.ndarray, np.ndarray]:
    """Per-item rank bounds from pairwise Holm decisions on the ahead shares (:func:`aggregate_intervals`)."""
    m = ahead.shape[0]
    a = np.where(np.eye(m, dtype=bool), 0.5, ahead)
    p = np.minimum(a, a.T)
    np.fill_diagonal(p, np.inf)  # an item is not compared with itself
    by_p = np.argsort(p, axis=1, kind="stable")[:, :m - 1]
    thresholds = (1.0 - level) / (m - 1 - np.arange(m - 1))
    decided = np.cumprod(np.take_along_axis(p, by_p, axis=1) <= thresholds, axis=1).astype(bool)
    sure = np.zeros((m, m), dtype=bool)  # sure[i, j]: the order of i and j is decided
    np.put_along_axis(sure, by_p, decided, axis=1)
    ahead_of_i = np.sum(sure & (a.T > a), axis=1)  # j surely ahead of i
    behind_i = np.sum(sure & (a > a.T), axis=1)
    return 1 + ahead_of_i, m - behind_i


def _kemeny_replicates(release: MatrixRelease, details: dict, solver, gen):
    """Released upper triangle, the solve of replicates as the release was solved, and the target."""
    from ..aggregation.kemeny import solve_many

    m = release.matrix.shape[0]
    name = details.get("solver") if solver is None else solver
    if name is None or name == "custom":
        raise InputError("the release was solved by a custom solver: pass solver= (a solver name) for its replicates")
    clipped, best_of = bool(details.get("clipped")), int(details.get("best_of", 1))

    def solve(upper):
        return solve_many(matrix_from_upper(np.clip(upper, 0.0, 1.0) if clipped else upper, m), name, rng=gen,
                          best_of=best_of)
    return release.matrix[np.triu_indices(m, 1)], solve, KEMENY_TARGET


def _footrule_replicates(release: TreeRelease, m: int):
    """Released tree aggregates, the read-off and assignment of replicates, and the target."""
    from ..aggregation.footrule import assignment_order

    layout = tree_layout(m, release.kappa)

    def solve(flat):
        costs = layout.read_off(flat.reshape(flat.shape[0], m, layout.size))
        return np.stack([assignment_order(c) for c in costs])  # one assignment per replicate
    return release.aggregates.ravel(), solve, FOOTRULE_TARGET
