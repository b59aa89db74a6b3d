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


def randomize_counts(wins, n, epsilon, rng=None, *, ties=0) -> np.ndarray:
    """Number of reports "yes" when ``n`` answers, ``wins`` of them "yes", are randomized.

    ``ties`` of the other answers are ties, answered as a fair coin first (as in
    :func:`randomize_bits`). Each answer is then kept with probability ``e^eps/(1+e^eps)`` and
    flipped otherwise, independently, so with ``y = wins + Binomial(ties, 1/2)`` the count is
    ``Binomial(y, 1 - p) + Binomial(n - y, p)``, ``p`` the flip probability: exactly the
    distribution of summing :func:`randomize_bits` over those answers, in three draws however
    many answers there are. Arguments broadcast; ``epsilon`` is the same for the ``n`` answers
    behind one count. Used to simulate many respondents at once.
    """
    gen = as_generator(rng)
    w = np.asarray(wins, dtype=np.int64)
    t = np.asarray(ties, dtype=np.int64)
    total = np.asarray(n, dtype=np.int64)
    if np.any(w < 0) or np.any(t < 0) or np.any(w + t > total):
        raise InputError("wins and ties must be >= 0 and add up to at most n")
    p = flip_probability(check_epsilons(epsilon))
    yes = w + gen.binomial(t, 0.5)
    return gen.binomial(yes, 1.0 - p) + gen.binomial(total - yes, p)


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

    ``reports01`` are reports in {0, 1}, or fractions in [0, 1] of "1" reports among answers
    randomized at the same epsilon (the transform is affine, so debiasing their mean is the mean
    of their debiased values); ``epsilon`` scalar or one per report. Values are
    ``-1/(e^eps - 1)`` for a 0 and ``e^eps/(e^eps - 1)`` for a 1.
    """
    try:
        y = np.asarray(reports01, dtype=float)
    except (TypeError, ValueError):
        raise InputError("reports must be 0 or 1") from None
    if not np.all((y >= 0) & (y <= 1)):
        raise InputError("reports must be 0 or 1, or fractions of 1-reports in [0, 1] "
                         "(map a report of -1 to 0 first)")
    eps = check_epsilons(epsilon)
    with np.errstate(over="ignore"):  # e^eps = inf for huge eps: the report is the answer
        return y + (2.0 * y - 1.0) / np.expm1(eps)


def variance_inflation(epsilon) -> np.ndarray:
    """``coth(eps/2)^2``: the worst-case variance of a debiased report divided by 1/4."""
    eps = check_epsilons(epsilon)
    return 1.0 / np.tanh(eps / 2.0) ** 2


def added_variance(epsilon) -> np.ndarray:
    """Variance debiasing adds to one answer: ``(coth^2(eps/2) - 1)/4 = 1 / (4 sinh^2(eps/2))``.

    Lemma 2 of Xu, Sun, Cheng gives ``Var z = coth^2(eps/2)/4 - (P - 1/2)^2``; subtracting the
    answer's own variance ``P(1 - P)`` leaves a term that does not depend on ``P``.
    """
    return 0.25 * (variance_inflation(epsilon) - 1.0)


def report_probability(p, epsilon) -> np.ndarray:
    """Probability that a randomized report says "first item wins" when the truth does w.p. ``p``.

    ``1/2 + tanh(eps/2) (p - 1/2)`` (Xu, Sun, Cheng Lemma 1).
    """
    return 0.5 + np.tanh(np.asarray(epsilon, dtype=float) / 2.0) * (np.asarray(p, dtype=float) - 0.5)
