"""Central releases of integer counts with exact integer noise.

A count statistic (wins, Copeland scores, pairwise tallies, histogram cells) is an integer
vector; :func:`noisy_counts` adds exact discrete noise to it
(:func:`~privrank.mechanisms.noise.discrete_laplace` or
:func:`~privrank.mechanisms.noise.discrete_gaussian`), so the release is integer-valued, has no
floating-point side channel, and carries its :class:`~privrank.guarantees.Guarantee`.

The caller states the sensitivity: how much one protected unit (``unit``) can change the
count vector, in l1 (Laplace) and l2 (Gaussian) norm. Calibration:

* ``delta = 0``: discrete Laplace with scale ``Delta_1 / epsilon`` -- epsilon-DP, since the pmf
  ratio at distance ``d`` is exactly ``exp(d / b)``.
* ``delta > 0``: discrete Gaussian with ``sigma = Delta_2 / sqrt(2 rho)``, which is rho-zCDP
  (Canonne, Kamath, Steinke 2020, Thm 14), and ``rho`` the largest value whose conversion
  ``rho + 2 sqrt(rho ln(1/delta))`` (Bun and Steinke 2016, Prop. 1.3) equals ``epsilon``. A zCDP
  budget can be given directly with ``rho=`` instead of ``epsilon``.

The zCDP route is what makes the discrete Gaussian provably private; it costs some noise: at
``epsilon = 1, delta = 1e-6`` it gives ``sigma = 5.35 Delta_2`` where the exact analytic
calibration of the *continuous* Gaussian (which does not carry over to the integers) gives
``4.22 Delta_2``.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..errors import MAX_WHOLE, RHO_MINIMUM, InputError, check_delta, check_epsilon, check_positive, index_array
from ..guarantees import Guarantee, zcdp_epsilon, zcdp_rho
from ..html_cards import Rows, Shown
from ..release import charge, private_release
from .noise import discrete_gaussian, discrete_laplace

if TYPE_CHECKING:
    from ..guarantees import Accountant
    from ..ledger import Ledger


@dataclass(frozen=True, repr=False)
class CountRelease(Shown):
    """Noisy integer counts and what they protect.

    Attributes
    ----------
    counts
        The released integer vector (same shape as the input counts).
    noise
        ``"discrete-laplace"`` or ``"discrete-gaussian"``.
    scale
        Laplace scale ``b`` or Gaussian ``sigma`` (before the samplers' upward rounding).
    guarantee
        epsilon-DP (Laplace) or (epsilon, delta)-DP from rho-zCDP (Gaussian), protecting ``unit``.

    Examples
    --------
    >>> import numpy as np
    >>> import privrank as pr
    >>> rel = pr.noisy_counts(np.array([120, 45, 300]), epsilon=1.0, unit="one ranking", rng=1)
    >>> rel.counts, rel.noise, rel.scale
    (array([119,  45, 299]), 'discrete-laplace', 1.0)
    >>> print(rel.guarantee.describe())
    1-DP, central model, protecting one ranking [noisy counts (discrete Laplace)]. SEEDED RUN: reproducible
    research output, not a private release (whoever knows the seed can remove the noise); leave the seed out
    for a real release.
    """

    counts: np.ndarray
    noise: str
    scale: float
    guarantee: Guarantee

    def __repr__(self) -> str:  # short: the counts are for code, not for a notebook cell
        return f"CountRelease({self.counts.size} counts, {self.noise} noise; {self.guarantee.plain()})"

    def _card(self) -> dict:  # the released counts, flattened, first and last
        flat = self.counts.reshape(-1)
        shape = " x ".join(str(n) for n in self.counts.shape)
        return {"summary": f"{flat.size:,} counts", "guarantee": self.guarantee,
                "facts": [("shape", shape if self.counts.ndim > 1 else None), ("noise", self.noise),
                          ("scale", f"{self.scale:.4g}")],
                "rows": Rows(flat.size, lambda k: {"index": k, "released count": int(flat[k])}),
                "more": "all of them: .counts"}


def _check_counts(counts) -> np.ndarray:
    c = index_array(counts, name="counts", what="integers (use the continuous samplers for real values)")
    if c.size == 0:
        raise InputError("no counts to release")
    if np.any((c > MAX_WHOLE) | (c < -MAX_WHOLE)):  # not np.abs: the abs of int64's minimum is negative
        raise InputError("counts must be at most 2^53 in absolute value")
    return c


@private_release
def noisy_counts(counts: ArrayLike, *, epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
                 l1_sensitivity: float = 1, l2_sensitivity: float | None = None, unit: str,
                 mechanism: str = "noisy counts", rng: int | np.random.Generator | None = None,
                 ledger: Ledger | str | os.PathLike[str] | None = None, accountant: Accountant | None = None,
                 new_data: str | None = None) -> CountRelease:
    """Release integer counts with exact discrete Laplace or discrete Gaussian noise.

    Parameters
    ----------
    counts
        Integer array (any shape).
    epsilon, delta
        Budget. ``delta = 0``: discrete Laplace, epsilon-DP. ``delta > 0``: discrete Gaussian,
        (epsilon, delta)-DP through zCDP (module docstring).
    rho
        A zCDP budget instead of ``epsilon`` (discrete Gaussian); ``delta > 0`` then only sets
        the (epsilon, delta) statement reported in the guarantee.
    l1_sensitivity, l2_sensitivity
        Largest change of the count vector, in l1 and l2 norm, when one ``unit`` changes; at
        least 1 (integer vectors differ by at least 1). ``l2_sensitivity`` defaults to
        ``l1_sensitivity`` (always a valid bound).
    unit
        The protected unit (e.g. :data:`privrank.guarantees.UNIT_RANKING`).
    mechanism
        Name recorded in the guarantee.
    rng
        None (OS entropy), an int seed or a numpy Generator; seeds are for research and tests.

    Returns
    -------
    CountRelease

    Examples
    --------
    >>> import numpy as np
    >>> import privrank as pr
    >>> laplace = pr.noisy_counts(np.array([120, 45, 300]), epsilon=1.0, unit="one ranking", rng=1)
    >>> laplace.counts, laplace.guarantee.epsilon
    (array([119,  45, 299]), 1.0)
    >>> gauss = pr.noisy_counts(np.array([120, 45, 300]), epsilon=1.0, delta=1e-6, unit="one ranking", rng=1)
    >>> gauss.counts, gauss.noise, round(gauss.scale, 3)
    (array([121,  48, 303]), 'discrete-gaussian', 5.35)
    >>> gauss.guarantee.epsilon, gauss.guarantee.delta, round(gauss.guarantee.rho, 4)
    (1.0, 1e-06, 0.0175)
    """
    c = _check_counts(counts)
    d1 = check_positive(l1_sensitivity, name="l1_sensitivity")
    d2 = d1 if l2_sensitivity is None else check_positive(l2_sensitivity, name="l2_sensitivity")
    if d1 < 1 or d2 < 1:  # integer vectors that differ at all differ by at least 1 in every norm
        raise InputError("the counts are integers, so any change of them is at least 1: l1_sensitivity and "
                         "l2_sensitivity must be >= 1")
    dlt = check_delta(delta)
    if not isinstance(unit, str) or not unit:
        raise InputError("unit must name the protected unit")
    if (epsilon is None) == (rho is None):
        raise InputError("give exactly one of epsilon or rho")
    if rho is None and dlt == 0:
        eps = check_epsilon(epsilon)
        scale = d1 / eps
        g = Guarantee(epsilon=eps, model="central", unit=unit,
                      mechanism=f"{mechanism} (discrete Laplace)")
        charge(g)
        noise = discrete_laplace(scale, c.shape, rng)
        return CountRelease(c + noise, "discrete-laplace", scale, g)
    if dlt == 0:
        raise InputError("a zCDP release states its (epsilon, delta) guarantee at a delta > 0")
    r = (check_epsilon(rho, name="rho", minimum=RHO_MINIMUM) if rho is not None
         else zcdp_rho(check_epsilon(epsilon), dlt))
    scale = d2 / math.sqrt(2.0 * r)
    eps = zcdp_epsilon(r, dlt) if rho is not None else check_epsilon(epsilon)
    g = Guarantee(epsilon=eps, delta=dlt, model="central", unit=unit, rho=r,
                  mechanism=f"{mechanism} (discrete Gaussian)")
    charge(g)
    noise = discrete_gaussian(scale, c.shape, rng)
    return CountRelease(c + noise, "discrete-gaussian", scale, g)
