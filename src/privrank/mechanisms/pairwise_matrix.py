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
  l2 randomizer. It is :func:`local_pair_reports` (the voters' side: randomize and add, per
  record, exactly; the map step of the engines) followed by :func:`pairwise_from_reports`.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import InputError, check_delta, check_epsilon
from ..guarantees import UNIT_RANKING, Guarantee
from .local_vectors import MAX_REPORTS, duchi_l2_records, report_unit
from .noise import gaussian, gaussian_mu, laplace
from .randomized_response import record_key

# voters randomized per vectorised block by local_pair_reports
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


def matrix_from_upper(upper: np.ndarray, m: int) -> np.ndarray:
    """The ``m x m`` matrix with upper triangle ``upper`` (row-major), ``W[j, i] = 1 - W[i, j]``."""
    iu = np.triu_indices(m, 1)
    W = np.zeros((m, m))
    W[iu] = upper
    W[(iu[1], iu[0])] = 1.0 - upper
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


def local_pair_reports(orders, epsilon, key, first_record: int = 0) -> np.ndarray:
    """Sum of the voters' fixed-point reports of their centred pair vectors (Alabi et al. Thm 8).

    Row ``k`` of ``orders`` (best first) is voter ``first_record + k``. Voter ``k`` holds
    ``v_k = (1[i before j] - 1/2)_{i<j}`` (norm exactly ``r = sqrt(M)/2``; centring halves the
    radius of the paper's 0/1 vector and with it the noise) and sends the Duchi et al. l2 report
    of it, drawn from the voter's own counter-based randomness under ``key``
    (:func:`privrank.mechanisms.local_vectors.duchi_l2_records`): epsilon-local DP for the
    whole ranking. Returns the int64 sum of the reports (length ``M = m(m-1)/2``), which adds
    up exactly over any split of the voters; :func:`pairwise_from_reports` turns it into ``w~``.
    """
    eps = check_epsilon(epsilon)
    o = np.asarray(orders, dtype=np.int64)
    iu, ju = np.triu_indices(o.shape[1], 1)
    M = iu.size
    total = np.zeros(M, dtype=np.int64)
    if not M:
        return total
    step = max(1, _LOCAL_BLOCK // M)
    for s in range(0, o.shape[0], step):  # blocks of voters, each block vectorised
        pos = np.argsort(o[s:s + step], axis=1)
        v = (pos[:, iu] < pos[:, ju]) - 0.5
        total += duchi_l2_records(v, radius=math.sqrt(M) / 2.0, epsilon=eps, key=key,
                                  first_record=int(first_record) + s).sum(axis=0)
    return total


def pairwise_from_reports(total, n: int, m: int, epsilon) -> np.ndarray:
    """The analyst's estimate ``w~_ij = 1/2 + mean_k Z_k`` from :func:`local_pair_reports`'s sum
    over ``n`` voters: unbiased and not clipped; the lower triangle is ``1 - w~``."""
    if n < 1:
        raise InputError("local aggregation needs at least one ranking")
    if n >= MAX_REPORTS:
        raise InputError(f"local aggregation adds the reports of fewer than {MAX_REPORTS} voters exactly")
    if m < 2:
        return np.zeros((m, m))
    M = m * (m - 1) // 2
    unit = report_unit(M, math.sqrt(M) / 2.0, epsilon)
    return matrix_from_upper(0.5 + unit * np.asarray(total) / n, m)


def local_pairwise_matrix(orders, epsilon, rng=None) -> np.ndarray:
    """One-round epsilon-local-DP estimate of ``w`` from one order per voter (Alabi et al. Thm 8).

    Every voter sends one Duchi et al. report of their centred pair vector
    (:func:`local_pair_reports`; voter ``k`` is record ``k`` under the key
    :func:`~privrank.mechanisms.randomized_response.record_key` draws from ``rng``), and the
    analyst averages them (:func:`pairwise_from_reports`).

    Parameters
    ----------
    orders
        ``(n, m)`` array, one order (best first) per voter.
    epsilon
        Each voter's privacy parameter.
    """
    o = np.asarray(orders, dtype=np.int64)
    return pairwise_from_reports(local_pair_reports(o, epsilon, record_key(rng)), o.shape[0], o.shape[1],
                                 epsilon)
