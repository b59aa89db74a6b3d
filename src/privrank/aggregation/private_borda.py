"""Noisy Borda: every item's Borda score released with noise, and the order of the noisy scores.

A ranking gives item ``i`` the points ``m - 1 - pos(i)`` (the number of items it beats); the
statistic is the mean points per item, ``s_i = (1/n) sum over rankings``, which is also the row
sum of the pairwise matrix ``w``. Replacing one ranking moves the vector by its items'
displacements: an l1 distance of at most ``floor(m^2 / 2)`` (the largest Spearman footrule
distance, reached by the reverse order) and an l2 distance of at most ``sqrt((m^3 - m) / 3)``
(the reverse again: ``sum_k (m - 1 - 2k)^2``), each divided by the public ``n``. Laplace noise of
scale ``floor(m^2 / 2) / (n epsilon)`` on each of the ``m`` scores is therefore epsilon-DP for one
ranking, and discrete Gaussian noise of sd ``sqrt((m^3 - m) / 3) / (n mu(epsilon, delta))``
(epsilon, delta)-DP, both drawn exactly on the integer point totals.

Why it is here: the noisy pairwise matrix releases ``m (m - 1) / 2`` numbers at l1 sensitivity
``m (m - 1) / (2 n)`` each, so Borda computed from it sums ``m - 1`` noisy entries and carries
about ``sqrt(m)`` times the noise of the direct release. On the utility frontier
(``docs/frontier.md``) the direct release is the most accurate central method from about 20
items on, by a wide margin at 50-200 items.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .._rng import as_generator
from ..mechanisms.pairwise_matrix import Budget
from ..release import charge, private_release
from ..data.rankings import Rankings, RankingTally
from ..data.tabular import TableLike
from .private_kemeny import AggregateResult, _pairwise_profile, labelled

if TYPE_CHECKING:
    from ..guarantees import Accountant
    from ..ledger import Ledger


def borda_sensitivities(m: int) -> tuple[int, float]:
    """The l1 and l2 distances, in points, between the Borda vectors of two rankings of ``m``
    items at their largest (the module docstring): ``floor(m^2 / 2)`` and ``sqrt((m^3 - m) / 3)``."""
    return m * m // 2, math.sqrt((m ** 3 - m) / 3.0)


@dataclass(frozen=True)
class BordaRelease:
    """The released noisy mean Borda points per item, the noise and its scale (in mean points)."""

    scores: np.ndarray
    noise: str
    scale: float
    n_voters: int


@labelled
@private_release
def noisy_borda(profile: Rankings | RankingTally | ArrayLike | TableLike, *, epsilon: float, delta: float = 0.0,
                rng: int | np.random.Generator | None = None, ledger: Ledger | str | os.PathLike[str] | None = None,
                accountant: Accountant | None = None, new_data: str | None = None) -> AggregateResult:
    """Every item's mean Borda points released with noise, and the items ordered by the noisy scores.

    Laplace noise (discrete Gaussian with ``delta > 0``) of the score vector's exact sensitivity
    (module docstring).

    Parameters
    ----------
    profile
        :class:`~privrank.data.rankings.Rankings`, an ``(n, m)`` array of orders, or a
        :class:`~privrank.data.rankings.RankingTally` with the pairwise counts (the Borda points
        are their row sums).
    epsilon, delta
        Total budget protecting one ranking (``delta > 0``: discrete Gaussian noise).
    rng
        Noise randomness.

    Returns
    -------
    AggregateResult
        The order (ties between noisy scores broken by item index), with ``release`` the
        :class:`BordaRelease` of the noisy scores.

    Examples
    --------
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   items=["a", "b", "c", "d"], weights=[3000, 2000, 2500, 2500])
    >>> res = pr.noisy_borda(profile, epsilon=1.0, rng=0)
    >>> res.ranking, res.details["noise_scale"]
    (['a', 'b', 'c', 'd'], 0.0008)
    """
    R = _pairwise_profile(profile)
    budget = Budget(epsilon, delta)
    gen = as_generator(rng)
    m, n = R.n_items, R.n_voters
    l1, l2 = borda_sensitivities(m)
    scale = budget.scale(1.0, l1 / n, l2 / n)
    guarantee = budget.guarantee("noisy Borda scores")
    charge(guarantee)
    scores = budget.release(np.asarray(R.pairwise_counts(), dtype=float).sum(axis=1) / n, n, scale, gen)
    order = np.argsort(-scores, kind="stable")
    return AggregateResult(order, guarantee, {"noise": budget.noise, "noise_scale": scale},
                           BordaRelease(scores, budget.noise, scale, n))
