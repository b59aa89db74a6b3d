"""Special functions for the paths that start small: the sigmoid in numpy, the rest from scipy on first call.

Importing :mod:`scipy.special` costs about a quarter of a second of CPU, more than ranking a
file of ten thousand comparisons. :func:`expit` is written in numpy (randomized response's flip
probability and the logistic link need only it); :func:`log_ndtr` imports scipy when it is first
called (the probit link, the Gaussian calibrations).
"""
from __future__ import annotations

import numpy as np


def expit(x):
    """The logistic sigmoid ``1 / (1 + e^-x)``, elementwise (scipy.special.expit's formula: it agrees
    with it within one unit in the last place; 0 without a warning where ``e^-x`` overflows).

    Examples
    --------
    >>> from privrank.special import expit
    >>> float(expit(0.0)), float(expit(-800.0))
    (0.5, 0.0)
    """
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-np.asarray(x)))


def log_ndtr(x):
    """``log Phi(x)``, the log of the standard normal CDF (:func:`scipy.special.log_ndtr`)."""
    from scipy.special import log_ndtr

    return log_ndtr(x)


def ndtr(x):
    """``Phi(x)``, the standard normal CDF (:func:`scipy.special.ndtr`)."""
    from scipy.special import ndtr

    return ndtr(x)
