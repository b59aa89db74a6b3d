"""Noise samplers.

The continuous Laplace and Gaussian samplers here use floating point and are meant for
simulation speed and for local mechanisms on real-valued records; they are not hardened
against floating-point side channels.
"""
from __future__ import annotations

import numpy as np

from .._rng import as_generator


def laplace(scale, size=None, rng=None) -> np.ndarray:
    """Continuous Laplace(0, scale) noise (floating point; see module docstring)."""
    return as_generator(rng).laplace(0.0, scale, size)


def gaussian(sigma, size=None, rng=None) -> np.ndarray:
    """Continuous Normal(0, sigma^2) noise (floating point; see module docstring)."""
    return as_generator(rng).normal(0.0, sigma, size)
