"""Audit registrations of the exact-noise count releases (:mod:`privrank.mechanisms.counts`).

The output of :func:`~privrank.mechanisms.counts.noisy_counts` on one count is an integer with
a known distribution, so the audit is exact: the pmfs of the discrete Laplace and discrete
Gaussian samplers (:func:`~privrank.mechanisms.noise.discrete_laplace_pmf`,
:func:`~privrank.mechanisms.noise.discrete_gaussian_pmf`, with the samplers' own rounding) at
the scale the release reports, on counts ``0`` and ``1`` (sensitivity 1). The outputs the public
function actually draws on both counts must follow those pmfs (a chi-square test), so a release
that draws less noise than it reports is a violation.
The Gaussian entry's named control calibrates with the zCDP conversion printed without its
factor 2 (Hillebrand et al. Thm B.2, notes E1).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from ..mechanisms.counts import noisy_counts
from ..mechanisms.noise import discrete_gaussian_pmf, discrete_laplace_pmf
from .registry import Exact, Mechanism, register

UNIT = "one unit that changes one count by at most 1"
#: the widest exact law tabulated (two rows of float64: 0.3 GB)
MAX_SUPPORT = 20_000_000


def _pmfs(pmf, releases, width: float) -> Exact:
    """The exact laws on counts 0 and 1 at the scale the releases state, and what they drew."""
    scale = releases[0].scale
    if width > MAX_SUPPORT:
        raise InputError(f"the exact law at this epsilon spans more than {MAX_SUPPORT:,} outputs; audit the count "
                         "releases at epsilon >= 1e-4 (the same code runs at every epsilon)")
    half = math.ceil(width) + 2
    x = np.arange(-half, half + 2)
    rows = np.array([pmf(x, scale), pmf(x - 1, scale)])
    draws = {k: rel.counts - x[0] for k, rel in enumerate(releases)}
    return Exact(rows, ("count 0", "count 1"), tuple(f"output {k}" for k in x), draws)


def _released(trials, rng, **calibration):
    """``trials`` releases of count 0 and of count 1, in one public call each."""
    return [noisy_counts(np.full(trials, c), unit=UNIT, rng=rng, **calibration) for c in (0, 1)]


def _laplace(epsilon, delta, trials, rng) -> Exact:
    releases = _released(trials, rng, epsilon=epsilon)
    return _pmfs(discrete_laplace_pmf, releases, 690 * releases[0].scale)  # exp(-690) is still normal


def _gaussian_run(calibration):
    def run(epsilon, delta, trials, rng) -> Exact:
        releases = _released(trials, rng, delta=delta, **calibration(epsilon, delta))
        return _pmfs(discrete_gaussian_pmf, releases, 40 * releases[0].scale + 40)
    return run


def _paper_rho(epsilon: float, delta: float) -> float:
    """rho from epsilon = rho + sqrt(rho ln(1/delta)): the conversion without its factor 2."""
    quarter = math.log(1.0 / delta) / 4.0
    return (math.sqrt(quarter + epsilon) - math.sqrt(quarter)) ** 2


register(Mechanism(
    name="discrete-laplace-counts",
    description="integer counts with exact discrete Laplace noise (central, epsilon-DP)",
    unit=UNIT, covers=("privrank.mechanisms.counts.noisy_counts",), run=_laplace))

register(Mechanism(
    name="discrete-gaussian-counts",
    description="integer counts with exact discrete Gaussian noise (central, zCDP)",
    unit=UNIT, covers=("privrank.mechanisms.counts.noisy_counts",), approximate=True,
    run=_gaussian_run(lambda e, d: {"epsilon": e}),
    controls={"zcdp-without-factor-2":
              _gaussian_run(lambda e, d: {"rho": _paper_rho(e, d)})},
    note="the zCDP conversion is loose for one count: the exact epsilon at delta is below the "
         "claim (0.78 for epsilon = 1, delta = 1e-6); half the noise still shows"))
