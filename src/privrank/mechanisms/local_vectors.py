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
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from .._rng import as_generator
from ..errors import InputError, check_epsilon


def duchi_l2_scale(dim: int, radius: float, epsilon: float) -> float:
    """Norm ``B`` of every report of the l2 randomizer (unbiasedness constant)."""
    eps = check_epsilon(epsilon)
    dim = int(dim)
    if dim < 1:
        raise InputError("dimension must be >= 1")
    ratio = 1.0 / math.tanh(eps / 2.0)  # (e^eps + 1) / (e^eps - 1)
    return float(radius) * ratio * math.exp(0.5 * math.log(math.pi)
                                            + gammaln((dim + 1) / 2.0) - gammaln(dim / 2.0))


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
    eps = check_epsilon(epsilon)
    V = np.asarray(vectors, dtype=float)
    if V.ndim != 2 or V.shape[1] < 1:
        raise InputError("vectors must be an (n, D) array with D >= 1")
    r = float(radius)
    if not (r > 0 and math.isfinite(r)):
        raise InputError("radius must be finite and > 0")
    if not np.all(np.isfinite(V)):
        raise InputError("vectors must be finite")
    gen = as_generator(rng)
    n, D = V.shape
    norms = np.linalg.norm(V, axis=1)
    if np.any(norms > r * (1 + 1e-9)):
        raise InputError("a vector exceeds the stated radius; the guarantee would not hold")
    # step 1: direction on the sphere (random direction for zero vectors)
    direction = np.empty_like(V)
    nz = norms > 0
    direction[nz] = V[nz] / norms[nz, None]
    if np.any(~nz):
        g0 = gen.standard_normal((int(np.sum(~nz)), D))
        direction[~nz] = g0 / np.linalg.norm(g0, axis=1, keepdims=True)
    keep = gen.random(n) < 0.5 + np.minimum(norms, r) / (2.0 * r)
    direction *= np.where(keep, 1.0, -1.0)[:, None]
    # step 2: hemisphere towards (prob e^eps/(e^eps+1)) or away from the direction
    towards = gen.random(n) < 1.0 / (1.0 + math.exp(-eps))
    G = gen.standard_normal((n, D))
    G /= np.linalg.norm(G, axis=1, keepdims=True)
    side = np.sign(np.einsum("ij,ij->i", G, direction))
    side[side == 0] = 1.0
    want = np.where(towards, 1.0, -1.0)
    return G * (duchi_l2_scale(D, r, eps) * side * want)[:, None]
