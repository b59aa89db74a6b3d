"""Private releases of the pairwise-preference matrix ``w`` of a ranking profile.

``w[i, j]`` is the fraction of the ``n`` voters who put ``i`` before ``j``. Neighbouring
profiles have the same (public) ``n`` and differ in one ranking; replacing a ranking changes
``n w[i, j]`` by one on exactly the pairs the two rankings order differently, so the upper
triangle ``(w_ij)_{i<j}`` (``M = m(m-1)/2`` entries) has L1 sensitivity ``M/n`` and L2
sensitivity ``sqrt(M)/n``, a single entry ``1/n`` (Alabi et al. notes §1.3; reversing a ranking
attains both). Noise is drawn for the upper triangle only and the lower triangle is derived
as ``1 - w~``: drawing both triangles independently would double the sensitivity.

* :class:`Budget` splits a total budget over several noisy stages: pure epsilon-DP stages
  (Laplace) add their epsilons, Gaussian stages add their zCDP ``rho = mu^2 / 2``, with ``mu``
  from the tight zCDP conversion of (epsilon, delta)
  (:func:`~privrank.mechanisms.noise.discrete_gaussian_mu`).
  :meth:`Budget.release` adds a stage's noise to fractions of voters (``count / n``), drawn on
  the counts by the exact integer samplers (discrete Laplace, :func:`count_noise`, or discrete
  Gaussian), so no release carries a floating-point side channel.
* :func:`noisy_pairwise_matrix` is the central release (Alabi et al. Corollaries 3 and 4 with
  exact constants: Laplace scale ``M/(eps n)``, Gaussian ``sigma = sqrt(M)/(n mu)``), optionally
  clipped to ``[0, 1]`` (post-processing that restores the probability constraints).
* :func:`local_pairwise_matrix` is the one-round local release (Alabi et al. Theorem 8,
  Lemma 17): every voter randomizes their own vector of pair indicators with the Duchi et al.
  l2 randomizer. It is :func:`local_pair_reports` (the voters' side: randomize and add, per
  record, exactly; the map step of the engines) followed by :func:`pairwise_from_reports`.
* :func:`bucket_release` is Hillebrand et al.'s Algorithm 3 release (``w = s + t`` over
  position buckets) and :func:`noisy_cost_difference` the selection step of their Lemma B.11;
  both are calibrated to exact sensitivities derived in their docstrings.
* :class:`MatrixRelease` keeps a released matrix with the law of its noise, which is all that
  post-processing (solvers, the bootstrap of :func:`privrank.inference.aggregate_intervals`)
  needs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import InputError, check_delta, check_epsilon
from ..guarantees import UNIT_RANKING, Guarantee
from ..html_cards import Shown
from .local_vectors import MAX_REPORTS, duchi_l2_records, duchi_l2_scale, report_unit
from .noise import discrete_gaussian, discrete_gaussian_mu, discrete_laplace
from .randomized_response import record_key

# rankings handled per vectorised block by local_pair_reports and bucket_release
_LOCAL_BLOCK = 1 << 21


class Budget:
    """A total budget split into fractions: Laplace epsilons add, Gaussian ``mu^2`` (zCDP ``rho``) add."""

    def __init__(self, epsilon, delta):
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.noise = "gaussian" if self.delta > 0 else "laplace"
        self.mu = discrete_gaussian_mu(self.epsilon, self.delta) if self.noise == "gaussian" else None

    def scale(self, fraction: float, l1: float, l2: float) -> float:
        """Laplace scale or Gaussian sd of a stage with this budget fraction and sensitivities."""
        if self.noise == "laplace":
            return l1 / (self.epsilon * fraction)
        assert self.mu is not None  # Gaussian noise
        return l2 / (self.mu * math.sqrt(fraction))

    def release(self, fractions, n: int, scale: float, rng) -> np.ndarray:
        """``fractions`` (``count / n`` for ``n`` voters) plus this budget's noise of ``scale``.

        The counts plus exact integer noise -- discrete Laplace of scale ``n * scale``
        (:func:`count_noise`) or discrete Gaussian of sd ``n * scale`` -- divided by ``n``: the
        release is a function of integers only, with no floating-point side channel.
        """
        fractions = np.asarray(fractions, dtype=float)
        noise = self.draw(scale, fractions.size, rng, n).reshape(fractions.shape)
        return (np.rint(fractions * n) + noise) / n

    def draw(self, scale: float, size: int, rng, n: int) -> np.ndarray:
        """Integer noise on counts of ``n`` voters for a stage of ``scale`` (in fractions)."""
        if self.noise == "gaussian":
            return discrete_gaussian(n * scale, size, rng)
        return count_noise(scale, n, size, rng)

    def guarantee(self, mechanism: str, note: str = "") -> Guarantee:
        kind = "Laplace" if self.noise == "laplace" else "discrete Gaussian"
        return Guarantee(epsilon=self.epsilon, delta=self.delta, model="central", unit=UNIT_RANKING,
                         mechanism=f"{mechanism} ({kind})", note=note)


def count_noise(scale: float, n: int, size, rng=None) -> np.ndarray:
    """Laplace noise of scale ``scale`` for fractions of ``n`` voters, in counts (integers).

    Discrete Laplace of scale ``n * scale`` (:func:`~privrank.mechanisms.noise.discrete_laplace`):
    a fraction's sensitivity ``Delta / n`` is a count's ``Delta``, so adding it to the counts is
    exactly as private as continuous Laplace of scale ``scale`` on the fractions, with integer
    arithmetic and no floating-point side channel. Its variance is slightly below
    ``2 (n scale)^2``.
    """
    return discrete_laplace(n * scale, size, rng)


@dataclass(frozen=True, repr=False)
class MatrixRelease(Shown):
    """A private release of the pairwise-preference matrix ``w``.

    Attributes
    ----------
    matrix
        The released ``w~`` as released: noise on the upper triangle, not clipped, lower
        triangle ``1 - w~``.
    noise
        ``"laplace"`` or ``"gaussian"`` (central: exact discrete noise on the counts), or
        ``"local"`` (mean of Duchi et al. reports).
    scale
        Laplace scale, or standard deviation, of the noise on each upper-triangle entry
        (:func:`local_pairwise_sd` for local releases).
    n
        Number of voters (public): Laplace noise lives on the grid ``1/n``.
    """

    matrix: np.ndarray
    noise: str
    scale: float
    n: int

    def __repr__(self) -> str:  # short: the matrix is for code, not for a notebook cell
        m = self.matrix.shape[0]
        return f"MatrixRelease({m} x {m} noisy pairwise matrix, {self.noise} noise of scale {self.scale:.4g})"

    def _card(self) -> dict:  # the parameters: the matrix is for code
        m = self.matrix.shape[0]
        return {"summary": f"{m} x {m} noisy pairwise matrix",
                "facts": [("noise", self.noise), ("scale", f"{self.scale:.4g}"), ("voters (public n)", f"{self.n:,}")]}


@lru_cache(maxsize=64)
def upper_triangle(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the pairs ``i < j`` (row-major), cached: releases run in loops."""
    iu = np.triu_indices(m, 1)
    for a in iu:
        a.setflags(write=False)
    return iu


def matrix_from_upper(upper: np.ndarray, m: int) -> np.ndarray:
    """The ``m x m`` matrix with upper triangle ``upper`` (row-major), ``W[j, i] = 1 - W[i, j]``.

    ``upper`` may be a stack ``(..., M)``; the result is then ``(..., m, m)``.
    """
    iu, ju = upper_triangle(m)
    upper = np.asarray(upper, dtype=float)
    W = np.zeros(upper.shape[:-1] + (m, m))
    W[..., iu, ju] = upper
    W[..., ju, iu] = 1.0 - upper
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


def noisy_pairwise_matrix(W, n: int, budget: Budget, fraction: float = 1.0, rng=None,
                          clip: bool = False) -> tuple[np.ndarray, float]:
    """Central release of ``w``: noise on the upper triangle, lower triangle ``1 - w~``.

    Spends ``fraction`` of ``budget``: Laplace scale ``M/(n eps fraction)`` (exact discrete
    Laplace on the counts ``n w``, :meth:`Budget.release`) or Gaussian sd
    ``sqrt(M)/(n mu sqrt(fraction))`` with ``M = m(m-1)/2``. Returns ``(w~, scale)``; ``w~`` is
    unbiased when ``clip`` is False.
    """
    W = np.asarray(W, dtype=float)
    m = W.shape[0]
    M = m * (m - 1) // 2
    if M == 0:  # one item: no pair, nothing to release (the answer is that item)
        return W.copy(), 0.0
    scale = budget.scale(fraction, M / n, math.sqrt(M) / n)
    upper = budget.release(W[upper_triangle(m)], n, scale, rng)
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
    iu, ju = upper_triangle(o.shape[1])
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


def noisy_cost_difference(diff: float, kendall: float, n: int, budget: Budget, fraction: float,
                          rng=None) -> tuple[float, float]:
    """``diff = cost_w(a) - cost_w(b)`` plus noise: the selection step of Hillebrand et al. Lemma B.11.

    ``cost_w(pi) = (1/n) sum_i K(pi, pi_i)``, so the difference is the mean over voters of
    ``K(a, pi_i) - K(b, pi_i)``, which only the ``kendall = K(a, b)`` pairs that ``a`` and ``b``
    order differently can move, each by one: ``|K(a, x) - K(b, x)| <= K(a, b)``. Replacing one
    ranking therefore moves the difference by at most ``2 K(a, b)/n`` (attained by ``x = b``
    replaced with ``x = a``), the L1 and L2 sensitivity used here; the orders must be public
    (earlier private outputs). The paper's ``2 m^2 / n`` is looser. Returns ``(noisy
    difference, scale)``; equal orders (``kendall = 0``) release the exact 0 and spend nothing.
    """
    if kendall == 0:
        return 0.0, 0.0
    scale = budget.scale(fraction, 2.0 * kendall / n, 2.0 * kendall / n)
    return float(budget.release(np.array([diff]), int(n), scale, rng)[0]), scale


def bucket_sizes(m: int, buckets: int) -> np.ndarray:
    """Sizes of ``buckets`` contiguous position buckets, as equal as possible (``array_split``)."""
    return np.array([len(a) for a in np.array_split(np.arange(m), buckets)])


def same_bucket_pairs(m: int, buckets: int) -> int:
    """``S_B = sum_b C(|b|, 2)``: the item pairs every ranking has inside one bucket."""
    k = bucket_sizes(m, buckets)
    return int(np.sum(k * (k - 1) // 2))


def bucket_release(rankings, buckets: int, budget: Budget, rng=None) -> tuple[np.ndarray, float, float]:
    """Hillebrand et al. Algorithm 3's private release of ``w`` through position buckets.

    Positions are cut into ``B`` contiguous buckets (:func:`bucket_sizes`) and ``w = s + t``:
    ``s_uv`` is the fraction of voters placing ``u`` before ``v`` inside one bucket, ``t_uv``
    the fraction placing ``u`` in an earlier bucket than ``v``. Two releases:

    * ``s`` on all ordered pairs ``u != v``. Every ranking contributes exactly ``S_B`` ones
      (:func:`same_bucket_pairs`, one per same-bucket pair, in its order), so replacing a
      ranking changes at most ``2 S_B`` entries by ``1/n``: ``Delta_1 = 2 S_B/n``,
      ``Delta_2 = sqrt(2 S_B)/n``, both attained. With Laplace noise at half of epsilon the scale
      is ``4 S_B/(n eps)``; the paper prints ``m^2/(2 n eps B)``, smaller by ``4(1 - B/m)``
      for equal buckets (up to 4x: a privacy bug, notes E2).
    * The two-way marginals Algorithm 3 reads -- for every pair ``u < v`` and buckets
      ``b != b'`` the fraction of voters with ``u`` in ``b`` and ``v`` in ``b'`` -- released by
      the simplest valid method, one noisy vector: every ranking has exactly one such cell per
      cross-bucket pair, ``M - S_B`` ones in all, so ``Delta_1 = 2 (M - S_B)/n`` and
      ``Delta_2 = sqrt(2 (M - S_B))/n``. (The paper's rate needs the projection mechanisms of
      Dwork, Nikolov, Talwar 2015 or Nikolov 2022 instead, which trade this for less error.)

    The budget is split in half; a part that releases nothing (``B = 1``: no cross-bucket pairs;
    ``B = m``: no same-bucket pairs) costs nothing and the other gets all of it. ``t~_uv`` sums
    the noisy cells with ``b < b'``.

    Returns
    -------
    (w~, s_scale, marginal_scale)
        ``w~ = s~ + t~`` (not clipped; diagonal 0) and the two noise scales (0 for a part not
        released).
    """
    R = rankings
    m, n, B = R.n_items, R.n_voters, int(buckets)
    M = m * (m - 1) // 2
    S_B = same_bucket_pairs(m, B)
    K = M - S_B
    frac_s = 0.0 if S_B == 0 else (1.0 if K == 0 else 0.5)
    scale_s = budget.scale(frac_s, 2.0 * S_B / n, math.sqrt(2.0 * S_B) / n) if S_B else 0.0
    scale_t = budget.scale(1.0 - frac_s, 2.0 * K / n, math.sqrt(2.0 * K) / n) if K else 0.0
    iu = upper_triangle(m)
    bucket = np.repeat(np.arange(B), bucket_sizes(m, B))[R.positions]  # (rows, m)
    cells = np.zeros(M * B * B)
    step = max(1, _LOCAL_BLOCK // max(M, 1))
    for s0 in range(0, bucket.shape[0], step):  # blocks of rows, each vectorised
        b = bucket[s0:s0 + step]
        flat = (np.arange(M)[None, :] * B * B + b[:, iu[0]] * B + b[:, iu[1]]).ravel()
        cells += np.bincount(flat, weights=np.repeat(R.weights[s0:s0 + step], M).astype(float),
                             minlength=M * B * B)
    counts = cells.reshape(M, B, B)
    earlier = np.triu(np.ones((B, B), dtype=bool), 1)

    def t_of(marginals):
        t = np.zeros((m, m))
        t[iu] = marginals[:, earlier].sum(axis=1)                 # u in an earlier bucket
        t[(iu[1], iu[0])] = marginals[:, earlier.T].sum(axis=1)   # v in an earlier bucket
        return t

    # w = s + t, in exact integer counts (so that an unreleased part is exactly zero)
    s = (R.pairwise_counts() - t_of(counts)) / n
    q = counts / n
    off = ~np.eye(m, dtype=bool)
    if S_B:  # fractions of voters: exact noise on their counts
        s[off] = budget.release(s[off], n, scale_s, rng)
    if K:
        cross = ~np.eye(B, dtype=bool)
        q[:, cross] = budget.release(q[:, cross], n, scale_t, rng)
    return s + t_of(q), float(scale_s), float(scale_t)


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
