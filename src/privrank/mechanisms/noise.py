"""Noise samplers and their calibration.

The continuous Laplace and Gaussian samplers here use floating point and are meant for
simulation speed and for local mechanisms on real-valued records; they are not hardened
against floating-point side channels.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

from .._rng import as_generator
from ..errors import InputError, check_delta, check_epsilon


def laplace(scale, size=None, rng=None) -> np.ndarray:
    """Continuous Laplace(0, scale) noise (floating point; see module docstring)."""
    return as_generator(rng).laplace(0.0, scale, size)


def laplace_sum(scale, n, size=None, rng=None) -> np.ndarray:
    """Sum of ``n`` independent Laplace(0, scale) draws, sampled exactly in one step.

    A Laplace(0, b) variable is the difference of two independent Exponential(b) variables, so
    the sum of ``n`` of them is ``Gamma(n, b) - Gamma(n, b)``. ``scale`` and ``n`` broadcast.
    """
    gen = as_generator(rng)
    k = np.asarray(n, dtype=float)
    if np.any(k < 0):
        raise InputError("n must be >= 0")
    return gen.gamma(k, scale, size) - gen.gamma(k, scale, size)


def gaussian(sigma, size=None, rng=None) -> np.ndarray:
    """Continuous Normal(0, sigma^2) noise (floating point; see module docstring)."""
    return as_generator(rng).normal(0.0, sigma, size)


def _gaussian_delta(mu: float, epsilon: float) -> float:
    """delta(epsilon) of a Gaussian mechanism with sensitivity/sigma ratio ``mu``."""
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    return float(ndtr(a) - math.exp(epsilon + log_ndtr(b)))


def gaussian_mu(epsilon: float, delta: float) -> float:
    """Largest ``mu = Delta_2 / sigma`` for which the Gaussian mechanism is (epsilon, delta)-DP.

    Exact analytic calibration (Balle and Wang 2018, Thm 8):
    ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) <= delta``, solved by bisection. Gaussian
    releases with ratios ``mu_1, mu_2, ...`` compose to ``sqrt(sum mu_k^2)`` (Gaussian DP,
    Dong, Roth and Su 2022), which the multi-stage algorithms use to split a budget.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    if dlt <= 0:
        raise InputError("the Gaussian mechanism needs delta > 0; use Laplace noise for delta = 0")
    hi = 1.0
    while _gaussian_delta(hi, eps) < dlt:
        hi *= 2.0
        if hi > 1e6:  # pragma: no cover - absurd parameters
            raise InputError("epsilon/delta out of the range the Gaussian calibration supports")
    return float(brentq(lambda mu: _gaussian_delta(mu, eps) - dlt, 1e-12, hi, xtol=1e-14,
                        rtol=1e-12)) * (1 - 1e-9)


def gaussian_sigma(l2_sensitivity: float, epsilon: float, delta: float) -> float:
    """Noise standard deviation of the (epsilon, delta)-DP analytic Gaussian mechanism."""
    return float(l2_sensitivity) / gaussian_mu(epsilon, delta)
