"""Goodness of fit of every noise sampler, and the exact discrete samplers' arithmetic.

Every test draws with a fixed seed, so it is deterministic; the rejection threshold is a
p-value below 1e-4 (a correct sampler passes a given seed with probability 0.9999, and these
seeds pass). Each goodness-of-fit test also feeds the same test a sampler with 10% less noise
(the broken variant) and requires it to be rejected at the same threshold.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from privrank.errors import InputError
from privrank.mechanisms import noise
from privrank.mechanisms.noise import (discrete_gaussian, discrete_gaussian_pmf, discrete_laplace,
                                       discrete_laplace_pmf, gaussian, laplace)

P_MIN = 1e-4
N = 200_000


def chi_square_p(samples: np.ndarray, pmf) -> float:
    """Chi-square test of integer samples against ``pmf`` (integers with expected count >= 5,
    the two tails pooled into one cell each)."""
    lo, hi = int(samples.min()), int(samples.max())
    x = np.arange(lo - 1, hi + 2)
    expected = pmf(x) * samples.size
    keep = np.flatnonzero(expected >= 5)
    a, b = x[keep[0]], x[keep[-1]]
    inner = np.arange(a, b + 1)
    observed = np.bincount(samples[(samples >= a) & (samples <= b)] - a, minlength=inner.size)
    exp_inner = pmf(inner) * samples.size
    tail_lo, tail_hi = np.sum(samples < a), np.sum(samples > b)
    # expected tail masses from the pmf over a wide window (exact to float precision)
    far = np.arange(lo - 10 * (hi - lo + 10), hi + 10 * (hi - lo + 10))
    p = pmf(far)
    exp_lo = p[far < a].sum() * samples.size
    exp_hi = p[far > b].sum() * samples.size
    obs = np.concatenate([observed, [tail_lo, tail_hi]])
    exp = np.concatenate([exp_inner, [exp_lo, exp_hi]])
    mask = exp > 0
    stat = np.sum((obs[mask] - exp[mask]) ** 2 / exp[mask])
    return float(stats.chi2.sf(stat, mask.sum() - 1))


@pytest.mark.parametrize("sampler,pmf,param,seed", [
    (discrete_laplace, discrete_laplace_pmf, 0.3, 1),
    (discrete_laplace, discrete_laplace_pmf, 2.3, 2),
    (discrete_laplace, discrete_laplace_pmf, 40.7, 3),
    pytest.param(discrete_gaussian, discrete_gaussian_pmf, 0.4, 4, marks=pytest.mark.slow),
    pytest.param(discrete_gaussian, discrete_gaussian_pmf, 3.7, 5, marks=pytest.mark.slow),
    (discrete_gaussian, discrete_gaussian_pmf, 150.2, 6),
])
def test_discrete_samplers_fit_their_pmfs(sampler, pmf, param, seed):
    x = sampler(param, N, rng=seed)
    assert x.dtype == np.int64
    assert chi_square_p(x, lambda k: pmf(k, param)) > P_MIN
    broken = sampler(0.9 * param, N, rng=seed + 100)
    assert chi_square_p(broken, lambda k: pmf(k, param)) < P_MIN


@pytest.mark.parametrize("scale", [0.25, 1.0, 7.5])
def test_continuous_laplace_fits(scale):
    x = laplace(scale, N, rng=7)
    assert stats.kstest(x, stats.laplace(scale=scale).cdf).pvalue > P_MIN
    assert stats.kstest(laplace(0.9 * scale, N, rng=8), stats.laplace(scale=scale).cdf).pvalue < P_MIN


@pytest.mark.parametrize("sigma", [0.25, 1.0, 7.5])
def test_continuous_gaussian_fits(sigma):
    x = gaussian(sigma, N, rng=9)
    assert stats.kstest(x, stats.norm(scale=sigma).cdf).pvalue > P_MIN
    assert stats.kstest(gaussian(0.9 * sigma, N, rng=10), stats.norm(scale=sigma).cdf).pvalue < P_MIN


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(3, 10), Fraction(1), Fraction(27, 10),
                                   Fraction(61, 7)])
def test_bernoulli_exp_is_exact(gamma):
    # Canonne et al. Algorithm 1 and its extension to gamma > 1: frequency within 4.5 standard
    # errors sqrt(p(1-p)/n) of exp(-gamma)
    n = 400_000
    bits = noise._RandomBits(np.random.default_rng(11))
    whole, rest = divmod(gamma.numerator, gamma.denominator)
    out = noise._bernoulli_exp(bits, np.full(n, whole), rest, gamma.denominator)
    p = math.exp(-float(gamma))
    assert abs(out.mean() - p) <= 4.5 * math.sqrt(p * (1 - p) / n) + 1e-12


def test_uniform_integers_are_uniform_for_awkward_bounds():
    # rejection sampling on 64-bit words: counts in three cells of [0, high), chi-square 2 dof
    bits = noise._RandomBits(12)
    for high in (3, 7, (1 << 62) - 1):
        u = bits.below(np.full(60_000, high))
        assert u.min() >= 0 and u.max() < high
        edges = np.array([0, high // 3, 2 * (high // 3), high])
        counts = np.array([np.sum((u >= a) & (u < b)) for a, b in zip(edges[:-1], edges[1:])])
        assert stats.chisquare(counts, np.diff(edges) / high * u.size).pvalue > P_MIN


def test_discrete_samplers_are_reproducible_and_use_os_entropy_without_a_seed():
    assert np.array_equal(discrete_laplace(3.0, 50, rng=5), discrete_laplace(3.0, 50, rng=5))
    assert np.array_equal(discrete_gaussian(3.0, 50, rng=np.random.default_rng(5)),
                          discrete_gaussian(3.0, 50, rng=np.random.default_rng(5)))
    a, b = discrete_gaussian(50.0, 64), discrete_gaussian(50.0, 64)  # OS entropy: differ
    assert not np.array_equal(a, b)
    assert isinstance(discrete_laplace(1.0), int) and isinstance(discrete_gaussian(1.0), int)
    assert discrete_laplace(1.0, (2, 3), rng=1).shape == (2, 3)


def test_parameters_are_rounded_up_and_only_slightly():
    for b in (2.0 ** -20, 0.3, 1.0, 2.3, 1e6, 2.0 ** 39):
        s, t = noise._laplace_rational(b)
        assert Fraction(t, s) >= Fraction(b)
        assert (Fraction(t, s) - Fraction(b)) / Fraction(b) < Fraction(1, 2 ** 38)
    for sg in (2.0 ** -10, 0.4, 1.0, 3.7, 150.2, 2.0 ** 14):
        num, den, t = noise._gaussian_rational(sg)
        assert Fraction(num, den) >= Fraction(sg) ** 2
        assert (Fraction(num, den) - Fraction(sg) ** 2) / Fraction(sg) ** 2 < Fraction(1, 2 ** 19)
        assert 2 * num * den * t * t <= 2 ** 61 and t == math.floor(sg) + 1
    for sg in (2.0 ** 14 * 1.5, 1e6 + 0.3, 3e9, 2.0 ** 40):  # the Python-integer acceptance test
        num, den, t = noise._gaussian_rational(sg)
        assert Fraction(num, den) >= Fraction(sg) ** 2
        assert (Fraction(num, den) - Fraction(sg) ** 2) / Fraction(sg) ** 2 < Fraction(1, 2 ** 39)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, 2.0 ** -21, 2.0 ** 40, "x"])
def test_discrete_laplace_rejects_bad_scales(bad):
    with pytest.raises(InputError):
        discrete_laplace(bad, 3, rng=0)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, 2.0 ** -11, 2.0 ** 41])
def test_discrete_gaussian_rejects_bad_sigmas(bad):
    with pytest.raises(InputError):
        discrete_gaussian(bad, 3, rng=0)


def test_pmfs_sum_to_one():
    k = np.arange(-20_000, 20_001)
    for b in (0.3, 2.3, 40.7):
        assert discrete_laplace_pmf(k, b).sum() == pytest.approx(1.0, abs=1e-12)
    for sg in (0.4, 3.7, 150.2):
        assert discrete_gaussian_pmf(k, sg).sum() == pytest.approx(1.0, abs=1e-12)


def test_gaussian_mu_is_cached_and_validated():
    assert noise.gaussian_mu(1.0, 1e-6) == noise.gaussian_mu(1.0, 1e-6)
    with pytest.raises(InputError):
        noise.gaussian_mu(1.0, 0.0)


@pytest.mark.parametrize("sigma,seed", [(2.0 ** 14 * 1.5, 7), pytest.param(3e9, 8, marks=pytest.mark.slow)])
def test_large_sigma_discrete_gaussian_fits_its_law(sigma, seed):
    """Above 2^14 the acceptance test runs in Python integers: the draws fit the (here practically
    continuous) normal law, with the variance within 4.5 standard errors; 10% less noise is caught."""
    def p_value(x):
        return stats.kstest(x / sigma, "norm").pvalue

    x = discrete_gaussian(sigma, N, rng=seed).astype(float)
    assert p_value(x) > P_MIN
    assert abs(x.var() / sigma ** 2 - 1) < 4.5 * math.sqrt(2 / N)
    assert p_value(discrete_gaussian(0.9 * sigma, N, rng=seed + 100).astype(float)) < P_MIN


def test_big_fraction_bernoulli_is_exact():
    """Bernoulli(num/den) and Bernoulli(exp(-num/den)) with denominators beyond 64 bits."""
    n = 400_000
    bits = noise._RandomBits(np.random.default_rng(13))
    den = np.full(n, 3 ** 50, dtype=object)
    x = bits.bernoulli(np.full(n, 3 ** 49, dtype=object), den)
    assert abs(x.mean() - 1 / 3) <= 4.5 * math.sqrt(2 / 9 / n)
    y = noise._bernoulli_exp(bits, np.zeros(n, dtype=np.int64), np.full(n, 2 * 3 ** 49, dtype=object), den)
    p = math.exp(-2 / 3)
    assert abs(y.mean() - p) <= 4.5 * math.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-6), (1.0, 1e-6), (2.0, 1e-5), (10.0, 1e-9), (0.5, 0.1)])
def test_discrete_gaussian_calibration_is_tight_and_valid(eps, delta):
    """mu = sqrt(2 rho): rho-zCDP converts to exactly (eps, delta); the textbook conversion
    rho + 2 sqrt(rho ln 1/delta) = eps (valid, looser) gives less rho; and it never claims more
    than the continuous Gaussian's exact calibration."""
    mu = noise.discrete_gaussian_mu(eps, delta)
    rho = mu ** 2 / 2
    assert noise.zcdp_delta(rho, eps) <= delta
    assert noise.zcdp_delta(rho * 1.001, eps) > delta
    L = math.log(1 / delta)
    assert (math.sqrt(L + eps) - math.sqrt(L)) ** 2 <= rho
    assert mu < noise.gaussian_mu(eps, delta)


def test_gaussian_release_is_on_its_grid_whatever_the_input():
    """The Gaussian counterpart of the Mironov test: the release of 0 and of a neighbour one
    sensitivity away are exact multiples of one power-of-two grid, and sigma charges the rounding."""
    mu = noise.discrete_gaussian_mu(1.0, 1e-6)
    x0 = np.zeros(4000)
    x1 = x0 + np.array([0.3, 0.1 * math.sqrt(2), 0.0, 1 / 3] * 1000) / math.sqrt(1000 * 0.2156)
    outs = [noise.gaussian_release(x, 1.0, mu, rng=k) for k, x in enumerate((x0, x1))]
    g = noise.release_grid(1.0 / math.sqrt(4000))
    for out, sigma in outs:
        assert np.all(out / g == np.rint(out / g))
        assert 1.0 / mu < sigma <= (1.0 / mu) * (1 + 2.0 ** -19)
    counts, sigma = noise.gaussian_release(np.arange(5.0), 1.0, mu, rng=0, lattice=1.0)
    assert sigma == 1.0 / mu and np.all(counts == np.rint(counts))


def _off_grid_share(values, step) -> float:
    v = np.asarray(values, dtype=float) / step
    return float(np.mean(v != np.rint(v)))


def test_local_laplace_reports_do_not_reveal_their_input_in_low_bits():
    """Finding 6 (Mironov 2012) as reported: continuous Laplace in floating point at epsilon 1
    leaves about a quarter of the reports of input 0 off the 2^-53 grid and none of input 1, so
    those reports reveal their input. The grid release puts every report of either input on one
    grid; the broken variant (float noise, as before) is caught by the same test."""
    n = 100_000
    rng = np.random.default_rng(21)
    broken = [x + rng.laplace(0.0, 2.0, n) for x in (0.0, 1.0)]  # the old sampler, scale 1/eps with l1 = 2
    assert _off_grid_share(broken[0], 2.0 ** -53) > 0.1 and _off_grid_share(broken[1], 2.0 ** -53) == 0.0
    for x in (0.0, 0.5, 1.0):
        out, scale = noise.laplace_release(np.full(n, x), 1.0, 1.0, rng=5, lattice=0.5)
        assert _off_grid_share(out, noise.release_grid(scale)) == 0.0


def test_releases_without_a_seed_draw_from_the_aes_csprng(monkeypatch):
    """Finding 8: rng=None is AES-128 in counter mode under a key from the OS, never numpy's PCG64."""
    from randomgen import AESCounter

    from privrank import _rng
    assert isinstance(_rng.as_generator(None).bit_generator, AESCounter)
    monkeypatch.setattr(np.random, "default_rng", lambda *a, **k: pytest.fail("an unseeded draw used PCG64"))
    a, b = noise.discrete_laplace(3.0, 64), noise.laplace_release(np.zeros(64), 1.0, 1.0)[0]
    assert not np.array_equal(a, noise.discrete_laplace(3.0, 64)) and b.shape == (64,)
