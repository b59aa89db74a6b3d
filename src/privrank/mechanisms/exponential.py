"""The exponential mechanism over a finite set of candidates (McSherry and Talwar 2007).

Candidate ``k`` with utility ``u_k`` is released with probability proportional to
``exp(eps u_k / (2 Delta))``, where ``Delta`` bounds how much any utility changes between
neighbouring data sets. For any output the probability ratio between neighbours is at most
``e^eps``: epsilon-DP. Exact sampling needs every utility, so it is for small candidate sets
(e.g. all ``m!`` orders of ``m <= 8`` items).
"""
from __future__ import annotations

import numpy as np

from .._rng import as_generator
from ..errors import InputError, check_epsilon, check_positive
from ..draws import before_draw, noise_factor


def exponential_probabilities(utility, sensitivity: float, epsilon) -> np.ndarray:
    """Output distribution ``p_k proportional to exp(eps u_k / (2 Delta))`` (computed stably)."""
    eps = check_epsilon(epsilon)
    delta_u = check_positive(sensitivity, name="sensitivity")
    u = np.asarray(utility, dtype=float)
    if u.ndim != 1 or u.size < 1 or not np.all(np.isfinite(u)):
        raise InputError("utilities must be a non-empty finite vector")
    with np.errstate(over="ignore", invalid="ignore"):
        logits = eps * u / (2.0 * delta_u)
        p = np.exp(logits - logits.max())
    if not np.all(np.isfinite(p)):  # eps * u overflowed (an epsilon near 1e308): the limit, the best candidates
        p = (u == u.max()).astype(float)
    return p / p.sum()


def exponential_mechanism(utility, sensitivity: float, epsilon, rng=None) -> int:
    """Index of the candidate released by the exponential mechanism (epsilon-DP)."""
    p = exponential_probabilities(utility, sensitivity, check_epsilon(epsilon) / noise_factor())
    before_draw()
    return int(as_generator(rng).choice(p.size, p=p))
