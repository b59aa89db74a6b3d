"""Local randomizers for real vectors.

Duchi, Jordan and Wainwright ("Minimax optimal procedures for locally private estimation",
JASA 2018, l2-ball mechanism): a user holding ``V`` with ``||V||_2 <= r`` reports a single
vector ``Z`` of norm ``B`` such that ``E[Z] = V`` and the report is epsilon-local DP.

1. Round ``V`` to the sphere of radius ``r``: ``X = +r V/||V||`` with probability
   ``1/2 + ||V||/(2r)``, else ``-r V/||V||`` (a uniformly random direction when ``V = 0``);
   then ``E[X] = V``.
2. With probability ``e^eps/(e^eps + 1)`` draw ``Z`` uniformly from the hemisphere of radius
   ``B`` pointing towards ``X`` (``<Z, X> > 0``), otherwise from the opposite hemisphere.
3. ``B = r (e^eps + 1)/(e^eps - 1) * sqrt(pi) Gamma((D+1)/2) / Gamma(D/2)`` makes ``Z``
   unbiased: for ``U`` uniform on the unit sphere, ``E|U_1| = Gamma(D/2)/(sqrt(pi)
   Gamma((D+1)/2))``. (Some statements print a constant twice as large, which is biased.)

Privacy: the density of ``Z`` given any input is a mixture of the two hemisphere densities
``2p/A`` and ``2(1-p)/A`` (``A`` the sphere's area), so the ratio between any two inputs is at
most ``p/(1-p) = e^eps``. The per-coordinate standard deviation of a report is about
``r (e^eps+1)/(e^eps-1) sqrt(pi/2)``, independent of the dimension.

Two ways to draw the randomness:

* :func:`duchi_l2` takes ``rng`` and returns real reports.
* :func:`duchi_l2_records` draws record ``r``'s randomness from the counter-based stream of
  :func:`~privrank.mechanisms.randomized_response.record_uniforms` (``2 + 2D`` uniforms per
  record, keyed by the record's index), so a report depends only on the key, the record's index
  and its vector: the same whether the records are randomized at once, in batches or on the
  partitions of a cluster. The report is returned in *fixed point*: each coordinate ``Z_k``
  becomes the integer ``floor(Z_k / u + U_k)`` with ``U_k`` uniform (stochastic rounding) and
  ``u = B 2^-FIXED_POINT_BITS`` (:func:`report_unit`). Its expectation is ``Z_k / u``, so
  ``u`` times it is still an unbiased report; the rounding is post-processing of the private
  report (the guarantee is unchanged) and adds a variance of at most ``u^2/4``, about
  ``D 2^-62`` times the report's own. Integer reports add up exactly in any order and
  grouping: every coordinate is at most ``2^FIXED_POINT_BITS + 1`` in absolute value, so the
  sum of fewer than ``MAX_REPORTS = 2^32`` reports fits in int64.
"""
from __future__ import annotations

import math

import numpy as np

from .._rng import as_generator
from ..errors import InputError, check_epsilon
from ..draws import before_draw, noise_factor
from .randomized_response import record_uniforms

FIXED_POINT_BITS = 30
#: reports whose fixed-point sum is exact in int64
MAX_REPORTS = 1 << (62 - FIXED_POINT_BITS)
# uniforms drawn per vectorised block of duchi_l2_records
_BLOCK = 1 << 22


def duchi_l2_scale(dim: int, radius: float, epsilon: float) -> float:
    """Norm ``B`` of every report of the l2 randomizer (unbiasedness constant)."""
    from scipy.special import gammaln  # scipy is imported where it is used: the commands that never call it start fast

    eps = check_epsilon(epsilon)
    dim = int(dim)
    if dim < 1:
        raise InputError("dimension must be >= 1")
    ratio = 1.0 / math.tanh(eps / 2.0)  # (e^eps + 1) / (e^eps - 1)
    return float(radius) * ratio * math.exp(0.5 * math.log(math.pi)
                                            + gammaln((dim + 1) / 2.0) - gammaln(dim / 2.0))


def report_unit(dim: int, radius: float, epsilon) -> float:
    """Value of one unit of a fixed-point report of :func:`duchi_l2_records`: ``B 2^-FIXED_POINT_BITS``."""
    return duchi_l2_scale(dim, radius, epsilon) / 2.0 ** FIXED_POINT_BITS


def _checked(vectors, radius, epsilon):
    eps = check_epsilon(epsilon)
    V = np.asarray(vectors, dtype=float)
    if V.ndim != 2 or V.shape[1] < 1:
        raise InputError("vectors must be an (n, D) array with D >= 1")
    r = float(radius)
    if not (r > 0 and math.isfinite(r)):
        raise InputError("radius must be finite and > 0")
    if not np.all(np.isfinite(V)):
        raise InputError("vectors must be finite")
    norms = np.linalg.norm(V, axis=1)
    if np.any(norms > r * (1 + 1e-9)):
        raise InputError("a vector exceeds the stated radius; the guarantee would not hold")
    return V, r, eps, norms


def _reports(V, norms, r, eps, keep_u, towards_u, G) -> np.ndarray:
    """The reports of rows ``V`` from their uniforms ``keep_u``, ``towards_u`` and Gaussians ``G``.

    Step 1 keeps the direction ``V/||V||`` with probability ``1/2 + ||V||/(2r)`` and reverses it
    otherwise; for ``V = 0`` the direction is ``G`` itself, which makes the report uniform on
    the sphere as the mechanism prescribes. Step 2 draws the report uniformly on the sphere
    (``G / ||G||``) and flips it into the hemisphere towards the direction with probability
    ``e^eps/(e^eps + 1)``, into the other one otherwise.
    """
    direction = np.where(norms[:, None] > 0, V / np.where(norms > 0, norms, 1.0)[:, None], G)
    direction *= np.where(keep_u < 0.5 + np.minimum(norms, r) / (2.0 * r), 1.0, -1.0)[:, None]
    G = G / np.linalg.norm(G, axis=1, keepdims=True)
    side = np.sign(np.einsum("ij,ij->i", G, direction))
    side[side == 0] = 1.0
    want = np.where(towards_u < 1.0 / (1.0 + math.exp(-eps / noise_factor())), 1.0, -1.0)
    return G * (duchi_l2_scale(V.shape[1], r, eps) * side * want)[:, None]


def duchi_l2(vectors, *, radius: float, epsilon, rng=None) -> np.ndarray:
    """Randomize each row of ``vectors`` (``||row||_2 <= radius``) with the Duchi et al. l2 mechanism.

    Parameters
    ----------
    vectors
        ``(n, D)`` array, one user's vector per row.
    radius
        Public bound ``r`` on every row's l2 norm (rows above it are rejected).
    epsilon
        Per-user local privacy parameter.

    Returns
    -------
    numpy.ndarray
        ``(n, D)`` reports; each is epsilon-local DP with respect to its own row and unbiased.
    """
    V, r, eps, norms = _checked(vectors, radius, epsilon)
    before_draw()
    gen = as_generator(rng)
    n, D = V.shape
    return _reports(V, norms, r, eps, gen.random(n), gen.random(n), gen.standard_normal((n, D)))


def duchi_l2_records(vectors, *, radius: float, epsilon, key, first_record: int = 0) -> np.ndarray:
    """Fixed-point Duchi et al. reports of records ``first_record, first_record + 1, ...``.

    Row ``k`` of ``vectors`` is record ``first_record + k``; its report is drawn from that
    record's counter-based uniforms under ``key`` (module docstring) and returned as int64 in
    units of :func:`report_unit`. Each report is epsilon-local DP for its own row; ``u`` times
    it is an unbiased estimate of the row.
    """
    from scipy.special import ndtri

    V, r, eps, norms = _checked(vectors, radius, epsilon)
    before_draw()
    n, D = V.shape
    unit = report_unit(D, r, eps)
    out = np.empty((n, D), dtype=np.int64)
    step = max(1, _BLOCK // (2 + 2 * D))
    for s in range(0, n, step):  # blocks of records, each vectorised
        rows = slice(s, min(n, s + step))
        u = record_uniforms(key, int(first_record) + s, rows.stop - s, 2 + 2 * D)
        # uniforms k 2^-53 shifted to the middle of their cell lie in (0, 1): finite normal quantiles
        G = ndtri(u[:, 2:2 + D] + 2.0 ** -54)
        Z = _reports(V[rows], norms[rows], r, eps, u[:, 0], u[:, 1], G)
        out[rows] = np.floor(Z / unit + u[:, 2 + D:])
    return out
