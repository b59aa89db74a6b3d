"""Binary randomized response on pairwise comparisons (local model).

Each comparison is one bit ``y`` = 1 if item_a is preferred. Randomized response keeps it
with probability ``e^eps / (1 + e^eps)`` and flips it with probability
``p_eps = 1 / (1 + e^eps)`` (Xu, Sun, Cheng §2.1), so for either output the likelihood ratio
between the two inputs is exactly ``e^eps``: eps-local DP for one comparison.

Ties. A tie (no preference) is first replaced by a fair coin, then randomized like any other
answer. The report space stays {1, -1}; for every input in {a, b, tie} the probability of each
report lies in ``[1/(1+e^eps), e^eps/(1+e^eps)]``, so the guarantee is the same eps over the
three-valued answer, and the debiased value has expectation 1/2 for a tie: half a win to each
item, the same as in the non-private likelihood.

Debiasing (eq. 1) maps a report ``y~`` in {0, 1} to ``z = ((e^eps + 1) y~ - 1) / (e^eps - 1)``,
an unbiased estimate of ``y`` (Lemma 2) with variance ``coth(eps/2)^2 / 4 - (P - 1/2)^2``.
Debiasing is post-processing and costs no privacy.
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from .._rng import as_generator
from ..errors import InputError, check_epsilon, check_epsilons


def flip_probability(epsilon) -> np.ndarray | float:
    """Probability ``1 / (1 + e^eps)`` that randomized response flips a comparison."""
    p = expit(-check_epsilons(epsilon))
    return float(p) if p.ndim == 0 else p


def randomize_bits(bits, epsilon, rng=None) -> np.ndarray:
    """Randomized response on an array of answers in {0, 1/2, 1} (1/2 = tie).

    ``epsilon`` is a scalar or one value per answer. Returns reports in {0, 1}.
    """
    gen = as_generator(rng)
    y = np.asarray(bits, dtype=float)
    eps = np.broadcast_to(check_epsilons(epsilon), y.shape) if np.ndim(epsilon) else \
        np.full(y.shape, check_epsilon(epsilon))
    tie = y == 0.5
    if not np.all((y == 0) | (y == 1) | tie):
        raise InputError("answers must be 0, 1 or 1/2 (tie)")
    u = gen.random(y.shape)
    coin = gen.random(y.shape) < 0.5
    truth = np.where(tie, coin, y == 1)
    flip = u < flip_probability(eps)
    return (truth ^ flip).astype(np.int8)


def randomize_answer(outcome: int, epsilon: float, rng=None) -> int:
    """Respondent-side randomized response for one answer.

    Parameters
    ----------
    outcome : int
        1 if item_a is preferred, -1 if item_b, 0 for no preference.
    epsilon : float
        The respondent's privacy parameter for this answer.

    Returns
    -------
    int
        The report to send, 1 or -1. It satisfies ``epsilon``-local DP for this answer; send
        ``epsilon`` along with it so the collector can debias.
    """
    if outcome not in (1, -1, 0):
        raise InputError("outcome must be 1, -1 or 0")
    bit = randomize_bits(np.array([(outcome + 1) / 2]), epsilon, rng)[0]
    return 1 if bit else -1


def debias(reports01, epsilon) -> np.ndarray:
    """Debiasing transform of Xu, Sun, Cheng eq. (1): unbiased estimates of the true answers.

    ``reports01`` in {0, 1}; ``epsilon`` scalar or one per report. Values are
    ``-1/(e^eps - 1)`` for a 0 and ``e^eps/(e^eps - 1)`` for a 1.
    """
    try:
        y = np.asarray(reports01, dtype=float)
    except (TypeError, ValueError):
        raise InputError("reports must be 0 or 1") from None
    if not np.all((y == 0) | (y == 1)):
        raise InputError("reports must be 0 or 1 (map a report of -1 to 0 first)")
    eps = check_epsilons(epsilon)
    with np.errstate(over="ignore"):  # e^eps = inf for huge eps: the report is the answer
        return y + (2.0 * y - 1.0) / np.expm1(eps)


def variance_inflation(epsilon) -> np.ndarray:
    """``coth(eps/2)^2``: the worst-case variance of a debiased report divided by 1/4."""
    eps = check_epsilons(epsilon)
    return 1.0 / np.tanh(eps / 2.0) ** 2
