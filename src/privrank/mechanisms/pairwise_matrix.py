"""Private releases of the pairwise-preference matrix ``w`` of a ranking profile.

``w[i, j]`` is the fraction of the ``n`` voters who put ``i`` before ``j``. Neighbouring
profiles have the same (public) ``n`` and differ in one ranking; replacing a ranking changes
``n w[i, j]`` by one on exactly the pairs the two rankings order differently, so the upper
triangle ``(w_ij)_{i<j}`` (``M = m(m-1)/2`` entries) has L1 sensitivity ``M/n`` and L2
sensitivity ``sqrt(M)/n``, a single entry ``1/n`` (Alabi et al. notes §1.3; reversing a ranking
attains both). Noise is drawn for the upper triangle only and the lower triangle is derived
as ``1 - w~``: drawing both triangles independently would double the sensitivity.

* :class:`Budget` splits a total budget over several noisy stages: pure epsilon-DP stages
  (Laplace) add their epsilons, Gaussian stages add their Gaussian-DP ``mu^2`` (Dong, Roth,
  Su 2022), with ``mu`` from the exact analytic calibration of (epsilon, delta).
* :func:`noisy_pairwise_matrix` is the central release (Alabi et al. Corollaries 3 and 4 with
  exact constants: Laplace scale ``M/(eps n)``, Gaussian ``sigma = sqrt(M)/(n mu)``), optionally
  clipped to ``[0, 1]`` (post-processing that restores the probability constraints).
* :func:`local_pairwise_matrix` is the one-round local release (Alabi et al. Theorem 8,
  Lemma 17): every voter randomizes their own vector of pair indicators with the Duchi et al.
  l2 randomizer.
* :class:`MatrixRelease` keeps a released matrix with the law of its noise, which is all that
  post-processing (solvers, the bootstrap of :func:`privrank.inference.aggregate_intervals`)
  needs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._rng import as_generator
from ..errors import InputError, check_delta, check_epsilon
from ..guarantees import UNIT_RANKING, Guarantee
from .local_vectors import duchi_l2, duchi_l2_scale
from .noise import gaussian, gaussian_mu, laplace

# voters randomized per vectorised block by local_pairwise_matrix
_LOCAL_BLOCK = 1 << 21


class Budget:
    """A total budget split into fractions: Laplace epsilons add, Gaussian ``mu^2`` add."""

    def __init__(self, epsilon, delta):
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.noise = "gaussian" if self.delta > 0 else "laplace"
        self.mu = gaussian_mu(self.epsilon, self.delta) if self.noise == "gaussian" else None

    def scale(self, fraction: float, l1: float, l2: float) -> float:
        """Laplace scale or Gaussian sd of a stage with this budget fraction and sensitivities."""
        if self.noise == "laplace":
            return l1 / (self.epsilon * fraction)
        return l2 / (self.mu * math.sqrt(fraction))

    def draw(self, scale: float, size, rng) -> np.ndarray:
        return laplace(scale, size, rng) if self.noise == "laplace" else gaussian(scale, size, rng)

    def guarantee(self, mechanism: str, note: str = "") -> Guarantee:
        kind = "Laplace" if self.noise == "laplace" else "analytic Gaussian"
        return Guarantee(epsilon=self.epsilon, delta=self.delta, model="central", unit=UNIT_RANKING,
                         mechanism=f"{mechanism} ({kind})", note=note)


@dataclass(frozen=True)
class MatrixRelease:
    """A private release of the pairwise-preference matrix ``w``.

    Attributes
    ----------
    matrix
        The released ``w~`` as released: noise on the upper triangle, not clipped, lower
        triangle ``1 - w~``.
    noise
        ``"laplace"`` or ``"gaussian"`` (central), or ``"local"`` (mean of Duchi et al. reports).
    scale
        Laplace scale, or standard deviation, of the noise on each upper-triangle entry
        (:func:`local_pairwise_sd` for local releases).
    """

    matrix: np.ndarray
    noise: str
    scale: float


def matrix_from_upper(upper: np.ndarray, m: int) -> np.ndarray:
    """The ``m x m`` matrix with upper triangle ``upper`` (row-major), ``W[j, i] = 1 - W[i, j]``.

    ``upper`` may be a stack ``(..., M)``; the result is then ``(..., m, m)``.
    """
    iu = np.triu_indices(m, 1)
    upper = np.asarray(upper, dtype=float)
    W = np.zeros(upper.shape[:-1] + (m, m))
    W[..., iu[0], iu[1]] = upper
    W[..., iu[1], iu[0]] = 1.0 - upper
    return W


def clip_pairs(W) -> np.ndarray:
    """l1 projection onto ``{w in [0,1]^(m x m): w_uv + w_vu = 1}`` (Hillebrand et al. App. B.4).

    On a matrix already built by :func:`matrix_from_upper` it clips the upper triangle to
    ``[0, 1]`` (Alabi et al. footnote 2); it never moves an entry away from a true ``w``.
    """
    W = np.asarray(W, dtype=float)
    a = np.clip((W + 1.0 - W.T) / 2.0, 0.0, 1.0)
    out = np.triu(a, 1)
    out = out + np.tril(1.0 - out.T, -1)
    np.fill_diagonal(out, 0.0)
    return out


def noisy_pairwise_matrix(W, n: float, budget: Budget, fraction: float = 1.0, rng=None,
                          clip: bool = False) -> tuple[np.ndarray, float]:
    """Central release of ``w``: noise on the upper triangle, lower triangle ``1 - w~``.

    Spends ``fraction`` of ``budget``: Laplace scale ``M/(n eps fraction)`` or Gaussian sd
    ``sqrt(M)/(n mu sqrt(fraction))`` with ``M = m(m-1)/2``. Returns ``(w~, scale)``; ``w~`` is
    unbiased when ``clip`` is False.
    """
    W = np.asarray(W, dtype=float)
    m = W.shape[0]
    M = m * (m - 1) // 2
    scale = budget.scale(fraction, M / n, math.sqrt(M) / n)
    upper = W[np.triu_indices(m, 1)] + budget.draw(scale, M, rng)
    Wt = matrix_from_upper(upper, m)
    return (clip_pairs(Wt) if clip else Wt), scale


def local_pairwise_matrix(orders, epsilon, rng=None) -> np.ndarray:
    """One-round epsilon-local-DP estimate of ``w`` from one order per voter (Alabi et al. Thm 8).

    Voter ``k`` holds the vector ``v_k = (1[i before j] - 1/2)_{i<j}`` (norm exactly
    ``r = sqrt(M)/2``; centring halves the radius of the paper's 0/1 vector and with it the
    noise) and sends the Duchi et al. l2 report ``Z_k`` (:func:`privrank.mechanisms.local_vectors.duchi_l2`,
    unbiased, epsilon-local DP for the whole ranking). The analyst's estimate
    ``w~_ij = 1/2 + mean_k Z_k`` is unbiased and not clipped; the lower triangle is ``1 - w~``.

    Parameters
    ----------
    orders
        ``(n, m)`` array, one order (best first) per voter.
    epsilon
        Each voter's privacy parameter.
    """
    eps = check_epsilon(epsilon)
    gen = as_generator(rng)
    o = np.asarray(orders, dtype=np.int64)
    n, m = o.shape
    if n < 1:
        raise InputError("local aggregation needs at least one ranking")
    if m < 2:
        return np.zeros((m, m))
    iu, ju = np.triu_indices(m, 1)
    M = iu.size
    radius = math.sqrt(M) / 2.0
    total = np.zeros(M)
    step = max(1, _LOCAL_BLOCK // M)
    for s in range(0, n, step):  # blocks of voters, each block vectorised
        pos = np.argsort(o[s:s + step], axis=1)
        v = (pos[:, iu] < pos[:, ju]) - 0.5
        total += duchi_l2(v, radius=radius, epsilon=eps, rng=gen).sum(axis=0)
    return matrix_from_upper(0.5 + total / n, m)


def local_pairwise_sd(m: int, n: int, epsilon) -> float:
    """Standard deviation of the noise on each entry of :func:`local_pairwise_matrix`'s estimate.

    A Duchi et al. report ``Z`` has norm ``B`` (:func:`~privrank.mechanisms.local_vectors.duchi_l2_scale`)
    and a direction uniform up to its sign, so ``E[Z Z'] = B^2/M I`` whatever the input; with
    ``E Z = v`` and every entry of the centred indicator vector ``v`` equal to ``+-1/2``, each
    entry of one report has variance ``B^2/M - 1/4``, and of the mean over ``n`` voters
    ``(B^2/M - 1/4)/n``: the same for every profile. (Entries are correlated through
    ``-v v'/n``, a data-dependent term at most ``1/(4n)``.)
    """
    m, n = int(m), int(n)
    M = m * (m - 1) // 2
    if M == 0:
        return 0.0
    B = duchi_l2_scale(M, math.sqrt(M) / 2.0, epsilon)
    return math.sqrt((B * B / M - 0.25) / n)
