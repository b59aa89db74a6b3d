"""Noise samplers and their calibration.

Every sampler passes the draw gate (:func:`~privrank.draws.before_draw`: inside a
release, nothing is drawn before the spend is charged) and draws ``noise_factor()`` times its
scale (1, except in the audits' negative controls).

The continuous :func:`laplace` and :func:`gaussian` use floating point: they serve simulations
and the parametric bootstrap, not releases of a value plus noise, whose low-order bits would
reveal the value (Mironov 2012). Releases of real values use :func:`laplace_release`: the value
rounded to a power-of-two grid plus exact discrete Laplace noise on that grid, the rounding
charged to the sensitivity, so the output is an exact multiple of the grid whatever the input.
An optimisation's noise vector (objective perturbation) uses :func:`laplace_cells`, whose
density is piecewise constant on the grid's cells. Gaussian releases do the same with
:func:`gaussian_release` (discrete Gaussian on the grid, calibrated through zCDP by
:func:`discrete_gaussian_mu`, since the continuous calibration :func:`gaussian_mu` does not
carry over to the integers).

Integer-valued statistics (counts) get exact samplers instead: :func:`discrete_laplace` and
:func:`discrete_gaussian` (Canonne, Kamath, Steinke 2020, Algorithms 1-3) use integer arithmetic
only, so no floating-point rounding can leak the data, and draw their random bits from the
``rng`` argument (OS entropy when it is None; a seed makes them reproducible, for research and
tests only). They are vectorised: each round of the rejection loops handles every pending
sample at once. :mod:`privrank.mechanisms.counts` uses them for central releases of counts.
"""
from __future__ import annotations

import math
import secrets
from fractions import Fraction
from functools import lru_cache
from typing import overload

import numpy as np

from .._rng import RNGLike, as_generator
from ..errors import InputError, check_delta, check_epsilon, check_positive
from ..draws import before_draw, noise_factor
from ..special import log_ndtr, ndtr

#: a release grid is this many powers of two below the noise scale (scale / grid in [2^20, 2^21))
GRID_BITS = 20


def laplace(scale, size=None, rng=None) -> np.ndarray:
    """Continuous Laplace(0, scale) noise (floating point; simulations only, see module docstring)."""
    before_draw()
    return as_generator(rng).laplace(0.0, scale * noise_factor(), size)


def _drawn(scale, name: str):
    """The scale a sampler draws: ``scale`` times :func:`noise_factor` (validated when scaled)."""
    factor = noise_factor()
    return scale if factor == 1.0 else check_positive(scale, name=name) * factor


def release_grid(scale: float) -> float:
    """The power of two ``g`` with ``scale / g`` in ``[2^GRID_BITS, 2^(GRID_BITS+1))``."""
    return math.ldexp(1.0, math.floor(math.log2(check_positive(scale, name="scale"))) - GRID_BITS)


def laplace_release(values, l1_sensitivity: float, epsilon, rng=None, *, lattice: float | None = None,
                    coordinates: int | None = None):
    """``values`` plus Laplace noise, epsilon-DP and safe from floating point: ``(release, scale)``.

    The values are rounded to the grid ``g`` (:func:`release_grid` of ``l1_sensitivity /
    epsilon``) and exact discrete Laplace noise (:func:`discrete_laplace`) is added in grid
    units, so every output is an exact multiple of ``g`` whatever the input. Rounding moves each
    coordinate by at most ``g/2``, so neighbouring inputs' rounded values differ by at most
    ``l1_sensitivity + d g`` (``d`` coordinates) in l1 norm; the scale is calibrated to that:
    ``scale = (l1_sensitivity + d g) / epsilon`` -- a relative cost of ``d 2^-20`` or less. When
    the caller declares that every value lies on ``lattice`` (a power of two at least ``g``, e.g.
    1/2 for answers in {0, 1/2, 1}) no rounding happens and nothing is added. ``epsilon`` is a
    scalar or one value per coordinate (each coordinate its own release). ``coordinates``
    overrides ``d`` (a batch of independent releases states the ``d`` of one).
    """
    x = np.asarray(values, dtype=float)
    eps = np.broadcast_to(np.asarray(epsilon, dtype=float), x.shape)
    d1 = check_positive(l1_sensitivity, name="l1_sensitivity")
    out = np.empty(x.shape)
    scales = np.empty(x.shape)
    for level in np.unique(eps):  # one draw per distinct epsilon
        where = eps == level
        g = release_grid(d1 / level)
        exact = lattice is not None and lattice >= g and math.log2(lattice).is_integer()
        scale = (d1 if exact else d1 + (where.sum() if coordinates is None else coordinates) * g) / level
        k = np.rint(x[where] / g)
        out[where] = (k + discrete_laplace(scale / g, int(where.sum()), rng)) * g
        scales[where] = scale
    return out, (float(scales.flat[0]) if np.ndim(epsilon) == 0 else scales)


def laplace_cells(scale: float, size, rng=None) -> np.ndarray:
    """Noise with the Laplace(0, scale) law made piecewise constant on the cells of a grid.

    ``g (Z + U)``: ``Z`` exact discrete Laplace of scale ``scale / g`` on the cell index, ``U``
    uniform in [0, 1) inside the cell, ``g`` = :func:`release_grid` of ``scale``. The density at
    ``w`` is ``P(Z = floor(w/g)) / g``, so shifting ``w`` by ``s`` changes it by a factor of at
    most ``exp((|s| + g) / scale)`` per coordinate: an optimisation whose privacy argument shifts
    its noise vector (objective perturbation) is private at the claimed epsilon when ``scale``
    is calibrated for a shift of ``s + g``. Exact sampling; no floating-point side channel in
    the noise itself.
    """
    g = release_grid(scale)
    gen = as_generator(rng)
    z = discrete_laplace(scale / g, size, gen)
    return (z + gen.random(size)) * g


def laplace_sum(scale, n, size=None, rng=None) -> np.ndarray:
    """Sum of ``n`` independent Laplace(0, scale) draws, sampled exactly in one step.

    A Laplace(0, b) variable is the difference of two independent Exponential(b) variables, so
    the sum of ``n`` of them is ``Gamma(n, b) - Gamma(n, b)``. ``scale`` and ``n`` broadcast.
    """
    gen = as_generator(rng)
    k = np.asarray(n, dtype=float)
    if np.any(k < 0):
        raise InputError("n must be >= 0")
    before_draw()
    scale = np.asarray(scale) * noise_factor()
    return gen.gamma(k, scale, size) - gen.gamma(k, scale, size)


def gaussian(sigma, size=None, rng=None) -> np.ndarray:
    """Continuous Normal(0, sigma^2) noise (floating point; see module docstring)."""
    before_draw()
    return as_generator(rng).normal(0.0, np.asarray(sigma) * noise_factor(), size)


def _gaussian_delta(mu: float, epsilon: float) -> float:
    """delta(epsilon) of a Gaussian mechanism with sensitivity/sigma ratio ``mu``."""
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    return float(ndtr(a) - math.exp(epsilon + log_ndtr(b)))


def _gaussian_budget(epsilon, delta) -> tuple[float, float]:
    eps, dlt = check_epsilon(epsilon), check_delta(delta)
    if dlt <= 0:
        raise InputError("the Gaussian mechanism needs delta > 0; use Laplace noise for delta = 0")
    return eps, dlt


def gaussian_mu(epsilon: float, delta: float) -> float:
    """Largest ``mu = Delta_2 / sigma`` for which the Gaussian mechanism is (epsilon, delta)-DP.

    Exact analytic calibration (Balle and Wang 2018, Thm 8):
    ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) <= delta``, solved by bisection. Gaussian
    releases with ratios ``mu_1, mu_2, ...`` compose to ``sqrt(sum mu_k^2)`` (Gaussian DP,
    Dong, Roth and Su 2022), which the multi-stage algorithms use to split a budget.
    """
    return _gaussian_mu(*_gaussian_budget(epsilon, delta))


@lru_cache(maxsize=256)
def _gaussian_mu(eps: float, dlt: float) -> float:
    from scipy.optimize import brentq  # imported where used: a release that calibrates no Gaussian skips it

    hi = 1.0
    while _gaussian_delta(hi, eps) < dlt:
        hi *= 2.0
        if hi > 1e6:  # pragma: no cover - absurd parameters
            raise InputError("epsilon/delta out of the range the Gaussian calibration supports")
    return float(brentq(lambda mu: _gaussian_delta(mu, eps) - dlt, 1e-12, hi, xtol=1e-14,
                        rtol=1e-12)) * (1 - 1e-9)


def zcdp_delta(rho: float, epsilon: float) -> float:
    """The delta at which ``rho``-zCDP implies (epsilon, delta)-DP (Canonne, Kamath, Steinke 2020, Cor. 13).

    ``delta = inf over alpha > 1 of exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1) * (1 - 1/alpha)^alpha``.
    Every ``alpha`` gives a valid bound, so a numerical minimum that misses the infimum only
    overstates delta.
    """
    return math.exp(min(0.0, _zcdp_log_delta(rho, epsilon)))


def _zcdp_log_delta(rho: float, epsilon: float) -> float:
    from scipy.optimize import minimize_scalar

    def log_delta(alpha: float) -> float:
        return (alpha - 1.0) * (alpha * rho - epsilon) - math.log(alpha - 1.0) + alpha * math.log1p(-1.0 / alpha)

    top = 4.0 + 2.0 * (epsilon + 1.0) / rho  # beyond, the first term grows faster than the rest can fall
    best = minimize_scalar(lambda u: log_delta(1.0 + math.exp(u)), bounds=(-30.0, math.log(top)),
                           method="bounded", options={"xatol": 1e-9})
    return float(best.fun)


def discrete_gaussian_mu(epsilon: float, delta: float) -> float:
    """Largest ``mu = Delta_2 / sigma`` at which discrete Gaussian noise is (epsilon, delta)-DP.

    Independent discrete Gaussians of variance ``sigma^2`` added to an integer vector of l2
    sensitivity ``Delta_2`` give ``rho = mu^2 / 2``-zCDP (Canonne, Kamath, Steinke 2020,
    Thm. 14), converted to (epsilon, delta) by :func:`zcdp_delta`. zCDP composes by adding
    ``rho``, so stages with ratios ``mu_1, mu_2, ...`` compose to ``sqrt(sum mu_k^2)``, as the
    multi-stage algorithms split a budget. The price of the exact sampler: ``mu`` is about 7%
    below the continuous mechanism's :func:`gaussian_mu` (at epsilon 1, delta 1e-6).
    """
    return _discrete_gaussian_mu(*_gaussian_budget(epsilon, delta))


@lru_cache(maxsize=256)
def _discrete_gaussian_mu(eps: float, dlt: float) -> float:
    from scipy.optimize import brentq

    target = math.log(dlt)
    lo, hi = -60.0, 0.0  # log rho
    while _zcdp_log_delta(math.exp(hi), eps) < target:
        hi += 2.0
        if hi > 40:  # pragma: no cover - absurd parameters
            raise InputError("epsilon/delta out of the range the Gaussian calibration supports")
    if _zcdp_log_delta(math.exp(lo), eps) > target:  # pragma: no cover - absurd parameters
        raise InputError("epsilon/delta out of the range the Gaussian calibration supports")
    log_rho = brentq(lambda r: _zcdp_log_delta(math.exp(r), eps) - target, lo, hi, xtol=1e-12)
    return math.sqrt(2.0 * math.exp(log_rho)) * (1 - 1e-6)


def gaussian_release(values, l2_sensitivity: float, mu: float, rng=None, *, lattice: float | None = None,
                     coordinates: int | None = None):
    """``values`` plus Gaussian noise, ``mu^2/2``-zCDP and safe from floating point: ``(release, sigma)``.

    The Gaussian counterpart of :func:`laplace_release`: the values are rounded to a power-of-two
    grid ``g`` (``2^-20`` of ``l2_sensitivity / sqrt(d)`` or finer, ``d`` coordinates) and exact
    discrete Gaussian noise (:func:`discrete_gaussian`) is added in grid units, so every output
    is an exact multiple of ``g``. Rounding moves each coordinate by at most ``g/2``, so the
    rounded values of neighbours differ by at most ``l2_sensitivity + sqrt(d) g`` in l2 norm and
    ``sigma`` is calibrated to that (a relative cost of at most ``2^-20``). Values declared on
    ``lattice`` (a power of two, e.g. 1 for counts) are not rounded and cost nothing. ``mu`` is
    the ratio of the sensitivity to ``sigma`` (:func:`discrete_gaussian_mu`).
    """
    x = np.asarray(values, dtype=float)
    d2 = check_positive(l2_sensitivity, name="l2_sensitivity")
    d = x.size if coordinates is None else int(coordinates)
    exact = lattice is not None and math.log2(lattice).is_integer()
    g = float(lattice) if exact else release_grid(d2 / math.sqrt(max(d, 1)))  # type: ignore[arg-type]  # exact: lattice
    sigma = (d2 if exact else d2 + math.sqrt(d) * g) / check_positive(mu, name="mu")
    k = np.rint(x / g)
    return (k + discrete_gaussian(sigma / g, x.shape, rng)) * g, sigma


# --------------------------------------------------------------------------------------------
# exact samplers for integer-valued statistics (Canonne, Kamath, Steinke 2020)
# --------------------------------------------------------------------------------------------

#: rounds after which a rejection loop of the exact samplers stops: from its second round on, each round ends
#: a draw with probability at least 1/4, so a random stream needs more with probability below 2^-1000 even
#: for 2^40 draws
MAX_ROUNDS = 4096


def _rounds():
    """Count the rounds of a rejection loop (``next`` once per round); past :data:`MAX_ROUNDS` the
    stream is not random (a generator returning constants) and the draw is refused, not run forever."""
    for k in range(MAX_ROUNDS):
        yield k
    raise InputError("the random generator's stream never ends an exact draw, so it is not random: give rng=None "
                     "(or an int seed, or a numpy Generator over a sound bit generator)")


class _RandomBits:
    """Uniform random integers built from raw random bytes.

    The bytes come from ``rng`` (a numpy Generator's stream, or a seed) or, when ``rng`` is
    None, from the operating system's entropy (:func:`secrets.token_bytes`).
    """

    def __init__(self, rng):
        self._bytes = secrets.token_bytes if rng is None else as_generator(rng).bytes

    def _words(self, n: int) -> np.ndarray:
        return np.frombuffer(self._bytes(8 * n), dtype=np.uint64)

    def below(self, high) -> np.ndarray:
        """Uniform integers in ``[0, high)`` for each entry of ``high`` (1 <= high <= 2^62).

        Rejection sampling on 64-bit words: a word below ``2^64 mod high`` is redrawn, the rest
        map to ``word mod high`` uniformly.
        """
        hi = np.asarray(high, dtype=np.uint64).ravel()
        out = np.empty(hi.size, dtype=np.uint64)
        threshold = (np.uint64(0) - hi) % hi  # 2^64 mod high
        todo, rounds = np.arange(hi.size), _rounds()
        while todo.size:
            next(rounds)
            w = self._words(todo.size)
            ok = w >= threshold[todo]
            out[todo[ok]] = w[ok] % hi[todo[ok]]
            todo = todo[~ok]
        return out.astype(np.int64)

    def bernoulli(self, num, den) -> np.ndarray:
        """Exact Bernoulli(num/den) draws (integer arrays, ``0 <= num <= den``).

        Up to ``den = 2^62`` a uniform integer below ``den`` is compared with ``num``. Larger
        (Python-integer) fractions are compared with a uniform real in [0, 1), 64 bits at a time
        from the most significant: a word decides unless it equals the fraction's next 64 bits
        (probability 2^-64), in which case the next word is drawn.
        """
        den = np.asarray(den)
        if den.dtype != object:
            return self.below(den) < np.asarray(num, dtype=np.int64)
        num, den = (a.ravel() for a in np.broadcast_arrays(np.asarray(num, dtype=object), den))
        out = np.zeros(num.size, dtype=bool)
        todo, rest, rounds = np.arange(num.size), num.copy(), _rounds()
        while todo.size:
            next(rounds)
            shifted = rest[todo] * (1 << 64)
            digit, rest[todo] = shifted // den[todo], shifted % den[todo]
            word, digit = self._words(todo.size), digit.astype(np.uint64)
            out[todo[word < digit]] = True
            todo = todo[word == digit]
        return out


def _bernoulli_exp_small(bits: _RandomBits, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Bernoulli(exp(-num/den)) for ``0 <= num/den <= 1`` (Canonne et al. Algorithm 1).

    ``K`` counts successes of Bernoulli(gamma/K) = Bernoulli(gamma) * Bernoulli(1/K) until the
    first failure; the output is 1 iff ``K`` is odd, which has probability ``exp(-gamma)``.
    The Bernoulli(gamma) factor is drawn only where ``gamma < 1``.
    """
    K = np.ones(num.size, dtype=np.int64)
    act, rounds = np.arange(num.size), _rounds()
    while act.size:
        next(rounds)
        a = bits.below(K[act]) == 0
        part = np.flatnonzero(a & (num[act] < den[act]))
        a[part] = bits.bernoulli(num[act[part]], den[act[part]])
        act = act[a]
        K[act] += 1
    return K % 2 == 1


def _bernoulli_exp(bits: _RandomBits, whole, rest, den) -> np.ndarray:
    """Bernoulli(exp(-gamma)) for ``gamma = whole + rest/den`` (``0 <= rest < den``).

    ``whole`` independent Bernoulli(exp(-1)) draws must all succeed, then one
    Bernoulli(exp(-rest/den)) (Canonne et al. §5.1).
    """
    big = np.asarray(den).dtype == object  # the acceptance test of a discrete Gaussian above 2^14
    whole, rest, den = (a.ravel() for a in np.broadcast_arrays(
        np.asarray(whole, dtype=np.int64), np.asarray(rest, dtype=object if big else np.int64),
        np.asarray(den, dtype=object if big else np.int64)))
    alive = np.ones(whole.size, dtype=bool)
    ones = np.ones(whole.size, dtype=np.int64)
    todo, k, rounds = np.flatnonzero(whole > 0), 0, _rounds()
    while todo.size:
        next(rounds)
        ok = _bernoulli_exp_small(bits, ones[todo], ones[todo])
        alive[todo[~ok]] = False
        k += 1
        todo = todo[ok & (whole[todo] > k)]
    idx = np.flatnonzero(alive)
    alive[idx] = _bernoulli_exp_small(bits, rest[idx], den[idx])
    return alive


def _geometric_exp1(bits: _RandomBits, n: int) -> np.ndarray:
    """Number of successes of Bernoulli(exp(-1)) before the first failure, ``n`` times."""
    v = np.zeros(n, dtype=np.int64)
    act, rounds = np.arange(n), _rounds()
    one = np.ones(n, dtype=np.int64)
    while act.size:
        next(rounds)
        act = act[_bernoulli_exp_small(bits, one[act], one[act])]
        v[act] += 1
    return v


def _laplace_integers(bits: _RandomBits, s: int, t: int, n: int) -> np.ndarray:
    """``n`` draws with ``P(x) ~ exp(-|x| s/t)`` on the integers (Canonne et al. Algorithm 2)."""
    out = np.empty(n, dtype=np.int64)
    todo, rounds = np.arange(n), _rounds()
    while todo.size:
        next(rounds)
        k = todo.size
        tt = np.full(k, t, dtype=np.int64)
        u = bits.below(tt)
        keep = _bernoulli_exp(bits, 0, u, tt)
        y = (u + t * _geometric_exp1(bits, k)) // s
        negative = bits.below(np.full(k, 2)) == 1
        accept = keep & ~(negative & (y == 0))
        out[todo[accept]] = np.where(negative, -y, y)[accept]
        todo = todo[~accept]
    return out


_LAPLACE_BITS = 40      # the scale is represented as t/s with t < 2^40
_GAUSS_MAX_DEN = 1 << 61  # bound on the denominators of the Gaussian acceptance test


@lru_cache(maxsize=256)
def _laplace_rational(scale: float) -> tuple[int, int]:
    """``(s, t)`` with ``t/s >= scale``, ``s`` a power of two and ``t < 2^40`` (rounded up)."""
    b = check_positive(scale, name="scale")
    if not 2.0 ** -20 <= b <= 2.0 ** 39:
        raise InputError("the discrete Laplace scale must lie in [2^-20, 2^39]; a smaller "
                         "scale is no noise at all on integers, a larger one no signal")
    j = max(0, _LAPLACE_BITS - 1 - math.ceil(math.log2(b)))
    s = 1 << j
    return s, math.ceil(Fraction(b) * s)


@lru_cache(maxsize=256)
def _gaussian_rational(sigma: float) -> tuple[int, int, int]:
    """``(num, den, t)``: ``num/den >= sigma^2`` with ``den`` a power of two, ``t = floor(sigma)+1``.

    ``den`` is the largest power of two (at most 2^40) that keeps ``2 num den t^2`` below 2^61, so
    the acceptance test of Algorithm 3 runs in 64-bit integers. Above ``sigma = 2^14`` no such
    ``den`` keeps the rounding of ``sigma^2`` below ``2^-19``; there ``den`` is chosen for a
    relative rounding below ``2^-40`` and the test runs in Python integers (slower, as exact).
    """
    sg = check_positive(sigma, name="sigma")
    if not 2.0 ** -10 <= sg <= 2.0 ** 40:
        raise InputError("the discrete Gaussian sigma must lie in [2^-10, 2^40]")
    var = Fraction(sg) ** 2
    t = math.floor(sg) + 1
    if sg <= 2.0 ** 14:
        for k in range(40, -1, -1):
            den = 1 << k
            num = math.ceil(var * den)
            if 2 * num * den * t * t <= _GAUSS_MAX_DEN:
                return num, den, t
    den = 1 << max(0, 40 - 2 * math.floor(math.log2(sg)))
    return math.ceil(var * den), den, t


@overload
def discrete_laplace(scale: float, size: None = None, rng: RNGLike = None) -> int: ...
@overload
def discrete_laplace(scale: float, size: int | tuple[int, ...], rng: RNGLike = None) -> np.ndarray: ...
def discrete_laplace(scale: float, size: int | tuple[int, ...] | None = None, rng: RNGLike = None) -> int | np.ndarray:
    """Exact discrete Laplace noise: ``P(x) = tanh(1/(2b)) exp(-|x|/b)`` on the integers.

    Canonne, Kamath, Steinke (2020) Algorithm 2 in integer arithmetic. Adding it with
    ``b = Delta_1/epsilon`` to an integer statistic of l1 sensitivity ``Delta_1`` is epsilon-DP
    (the pmf ratio at distance ``d`` is ``exp(d/b)``). The scale is rounded *up* to a dyadic
    rational ``t/s`` (relative change below ``2^-38``), which only adds noise.

    Parameters
    ----------
    scale
        ``b`` in ``[2^-20, 2^39]``.
    size
        Output shape (None: a single int).
    rng
        None (OS entropy), an int seed or a numpy Generator (random bits taken from its stream).
    """
    before_draw()
    s, t = _laplace_rational(_drawn(scale, "scale"))
    n = 1 if size is None else int(np.prod(size))
    out = _laplace_integers(_RandomBits(rng), s, t, n)
    return int(out[0]) if size is None else out.reshape(size)


@overload
def discrete_gaussian(sigma: float, size: None = None, rng: RNGLike = None) -> int: ...
@overload
def discrete_gaussian(sigma: float, size: int | tuple[int, ...], rng: RNGLike = None) -> np.ndarray: ...
def discrete_gaussian(sigma: float, size: int | tuple[int, ...] | None = None, rng: RNGLike = None) -> int | np.ndarray:
    """Exact discrete Gaussian noise: ``P(x) ~ exp(-x^2/(2 sigma^2))`` on the integers.

    Canonne, Kamath, Steinke (2020) Algorithm 3: a discrete Laplace proposal of scale
    ``t = floor(sigma) + 1`` accepted with probability ``exp(-(|y| - sigma^2/t)^2/(2 sigma^2))``,
    all in integer arithmetic (the acceptance exponent is an exact fraction). Independent
    draws added to an integer vector of l2 sensitivity ``Delta_2`` give
    ``Delta_2^2/(2 sigma^2)``-zCDP (their Theorem 14). ``sigma^2`` is rounded *up* to a dyadic
    rational (relative change below ``2^-19`` over the supported range), which only adds noise.

    Parameters
    ----------
    sigma
        In ``[2^-10, 2^40]`` (above ``2^14`` the acceptance test runs in Python integers).
    size, rng
        As in :func:`discrete_laplace`.
    """
    before_draw()
    num, den, t = _gaussian_rational(_drawn(sigma, "sigma"))
    n = 1 if size is None else int(np.prod(size))
    bits = _RandomBits(rng)
    scale_den = 2 * num * den * t * t
    out = np.empty(n, dtype=np.int64)
    todo, rounds = np.arange(n), _rounds()
    while todo.size:
        next(rounds)
        y = _laplace_integers(bits, 1, t, todo.size)
        # exponent (|y| - sigma^2/t)^2 / (2 sigma^2) = z^2 / scale_den with z = t den |y| - num
        z = np.abs(y).astype(object) * (t * den) - num
        z2 = z * z
        whole, rest = z2 // scale_den, z2 % scale_den
        # a whole part beyond 2^62 means acceptance probability below exp(-2^62): capping it
        # changes nothing that can ever be observed, and keeps the loop in int64
        whole = np.minimum(whole, 1 << 62).astype(np.int64)
        big = scale_den > _GAUSS_MAX_DEN
        accept = _bernoulli_exp(bits, whole, rest if big else rest.astype(np.int64),
                                np.full(todo.size, scale_den, dtype=object if big else np.int64))
        out[todo[accept]] = y[accept]
        todo = todo[~accept]
    return int(out[0]) if size is None else out.reshape(size)


def discrete_laplace_pmf(x, scale) -> np.ndarray:
    """Probabilities of integers ``x`` under :func:`discrete_laplace` (its rounded scale)."""
    s, t = _laplace_rational(scale)
    a = s / t
    return math.tanh(a / 2.0) * np.exp(-a * np.abs(np.asarray(x, dtype=float)))


def discrete_gaussian_pmf(x, sigma) -> np.ndarray:
    """Probabilities of integers ``x`` under :func:`discrete_gaussian` (its rounded variance)."""
    num, den, _ = _gaussian_rational(sigma)
    var = num / den
    half = math.ceil(40.0 * math.sqrt(var)) + 40  # exp(-800) and smaller terms are zero in float
    k = np.arange(-half, half + 1, dtype=float)
    norm = math.fsum(np.exp(-k * k / (2.0 * var)))
    xf = np.asarray(x, dtype=float)
    return np.exp(-xf * xf / (2.0 * var)) / norm
