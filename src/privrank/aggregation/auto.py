"""``method="auto"``: the private aggregation method with the smallest expected error, chosen from public parameters.

The choice (:func:`privrank.plan.choose_aggregation`) reads the number of items, the number of
rankings (public: every private method here calibrates its noise to it), epsilon and delta, and
compares every method's expected Kendall distance to the truth on the utility frontier
(``docs/frontier.md``). It never reads the rankings, so it costs no privacy; the method chosen
then charges its own spend as usual.
"""
from __future__ import annotations

import importlib

import numpy as np
from numpy.typing import ArrayLike

from ..data.rankings import Rankings, RankingTally
from ..data.tabular import TableLike
from ..errors import InputError
from ..mechanisms.pairwise_matrix import Budget
from ..plan import AGGREGATION_METHODS, PURE_ONLY, choose_aggregation
from .private_kemeny import AggregateResult, _pairwise_profile

#: the function (``module:function`` of privrank.aggregation) that runs each method of
#: :data:`privrank.plan.AGGREGATION_METHODS`, and its fixed arguments
RUNS = {
    "noisy-borda": ("private_borda:noisy_borda", {}),
    "noisy-matrix": ("private_kemeny:private_kemeny", {}),
    "noisy-matrix+borda": ("private_kemeny:private_kemeny", {"solver": "borda"}),
    "noisy-matrix+copeland": ("private_kemeny:private_kemeny", {"solver": "copeland"}),
    "noisy-matrix+kwiksort": ("private_kemeny:private_kemeny", {"solver": "kwiksort"}),
    "hay-quicksort": ("private_kemeny:hay_quicksort", {}),
    "dp-kwiksort": ("private_kemeny:dp_kwiksort", {}),
    "exponential": ("private_kemeny:exponential_kemeny", {}),
    "dp-footrule": ("private_footrule:dp_footrule", {}),
    "dp-ptas": ("private_footrule:dp_ptas", {}),
    "ldp-matrix": ("private_kemeny:ldp_matrix", {}),
    "ldp-kwiksort": ("private_kemeny:ldp_kwiksort", {}),
    "ldp-footrule": ("private_footrule:ldp_footrule", {}),
}


def run_method(name: str, profile, *, epsilon, delta: float = 0.0, rng=None) -> AggregateResult:
    """Run the aggregation method ``name`` (a key of :data:`RUNS`) with its default options."""
    where, fixed = RUNS[name]
    module, function = where.split(":")
    kwargs = dict(fixed) if name in PURE_ONLY else {**fixed, "delta": delta}
    return getattr(importlib.import_module(f".{module}", __package__), function)(profile, epsilon=epsilon, rng=rng,
                                                                                  **kwargs)


def private_aggregate(profile: Rankings | RankingTally | ArrayLike | TableLike, *, epsilon: float, delta: float = 0.0,
                      method: str = "auto", trust: str = "central",
                      rng: int | np.random.Generator | None = None) -> AggregateResult:
    """A private consensus order of full rankings, by the method with the smallest expected error.

    ``method="auto"`` (the default) runs the method with the smallest expected Kendall distance
    to the truth for these public parameters; a method's name runs that one.

    Parameters
    ----------
    profile
        :class:`~privrank.data.rankings.Rankings` or an ``(n, m)`` array of orders.
    epsilon, delta
        Total budget protecting one ranking.
    method
        ``"auto"`` or a method of :data:`privrank.plan.AGGREGATION_METHODS` (``"noisy-matrix"``,
        ``"hay-quicksort"``, ...).
    trust
        ``"central"`` (the curator holds the rankings) or ``"local"`` (each ranking is randomized
        by its owner): ``auto`` chooses within it.
    rng
        Noise and solver randomness.

    Returns
    -------
    AggregateResult
        The chosen method's result; ``details["method"]`` names the method and, with ``auto``,
        ``details["chosen_because"]`` says why (:class:`privrank.plan.Choice`).

    Raises
    ------
    InputError
        On an unknown method or trust model, or bad arguments of the method run.

    Examples
    --------
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   items=["a", "b", "c", "d"], weights=[3000, 2000, 2500, 2500])
    >>> res = pr.private_aggregate(profile, epsilon=1.0, rng=0)
    >>> res.ranking, res.details["method"] in pr.plan.AGGREGATION_METHODS["central"]
    (['a', 'b', 'c', 'd'], True)
    """
    if not isinstance(trust, str) or trust not in AGGREGATION_METHODS:
        raise InputError("trust must be 'central' or 'local'")
    if not isinstance(method, str) or (method != "auto" and method not in AGGREGATION_METHODS[trust]):
        raise InputError(f"method must be 'auto' or one of the {trust} methods: "
                         f"{', '.join(AGGREGATION_METHODS[trust])}")
    Budget(epsilon, delta)  # refused before anything is chosen or charged
    reason = None
    if method == "auto":
        profile = _pairwise_profile(profile)  # read and checked once: the method chosen runs on it
        choice = choose_aggregation(profile.n_items, profile.n_voters, epsilon, delta=delta, trust=trust)
        method, reason = choice.method, choice.reason
    result = run_method(method, profile, epsilon=epsilon, delta=delta, rng=rng)
    result.details["method"] = method
    if reason is not None:
        result.details["chosen_because"] = reason
    return result
