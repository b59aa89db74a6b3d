"""Link functions: (A0)-(A2) and their constants, derivatives, and the generalised objective."""
import numpy as np
import pytest
from scipy.stats import norm

from privrank.data.pair_counts import PairCounts
from privrank.errors import InputError
from privrank.pairwise.btl import btl_gradient, btl_hessian, btl_objective
from privrank.pairwise.links import LINKS, LOGISTIC, PROBIT, ProbitLink, as_link

GRID = np.linspace(-30, 30, 600_001)


def flip_change(link, x):
    """|change of one comparison's gradient in d| when its outcome flips: F'/(F(1-F)) for exact links."""
    one = np.ones_like(x)
    return np.abs(link.pair_gradient(x, one, one) - link.pair_gradient(x, 0 * one, one))


@pytest.mark.parametrize("name", sorted(LINKS))
def test_a0_symmetric_and_increasing(name):
    link = LINKS[name]
    F = link.cdf(GRID)
    np.testing.assert_allclose(F, 1.0 - link.cdf(-GRID), atol=1e-15)
    inner = np.abs(GRID) < 5  # further out, F rounds to 1 in floating point
    assert np.all(np.diff(F[inner]) > 0)


@pytest.mark.parametrize("name", sorted(LINKS))
def test_kappa_1_bounds_every_gradient_change_and_is_attained(name):
    link = LINKS[name]
    r = flip_change(link, GRID)
    assert r.max() <= link.kappa_1 * (1 + 1e-12)
    assert r.max() >= link.kappa_1 * (1 - 1e-6)  # the constant is the supremum, not a loose bound
    one = np.ones_like(GRID)
    for y in (0.0, 0.5, 1.0):  # one comparison's gradient (a tie is half a win) is at most kappa_1
        assert np.abs(link.pair_gradient(GRID, y * one, one)).max() <= link.kappa_1 * (1 + 1e-12)


@pytest.mark.parametrize("name", sorted(LINKS))
def test_kappa_2_bounds_curvature_and_floor(name):
    link = LINKS[name]
    one = np.ones_like(GRID)
    for y in (0.0, 0.5, 1.0):
        c = link.pair_curvature(GRID, y * one, one)
        assert c.min() >= 0 and c.max() <= link.kappa_2 * (1 + 1e-12)
    g2 = link.pair_curvature(GRID, one, one)  # (-log F)''
    assert g2.max() >= link.kappa_2 * (1 - 1e-6)
    inner = np.abs(GRID) <= 4
    assert g2[inner].min() == pytest.approx(link.curvature_floor, rel=1e-6)


def test_documented_constants():
    assert (LOGISTIC.kappa_1, LOGISTIC.kappa_2) == (1.0, 0.25)
    assert LOGISTIC.curvature_floor == pytest.approx(0.017663, abs=1e-6)  # notes §1.2
    s = lambda x: norm.pdf(x) / norm.cdf(x)  # noqa: E731
    assert PROBIT.kappa_1 == pytest.approx(s(4) + s(-4), rel=1e-9) and PROBIT.kappa_1 == pytest.approx(4.2257, abs=1e-4)
    assert PROBIT.kappa_2 == pytest.approx(s(-4) * (-4 + s(-4)), rel=1e-9) and PROBIT.kappa_2 == pytest.approx(0.9533, abs=1e-4)
    assert ProbitLink(2.0).kappa_1 < PROBIT.kappa_1


def test_probit_is_exact_inside_the_margin_and_smooth_at_it():
    x = np.linspace(-4, 4, 801)
    one = np.ones_like(x)
    np.testing.assert_allclose(PROBIT.pair_loss(x, one, one), -norm.logcdf(x), rtol=1e-12)
    np.testing.assert_allclose(PROBIT.cdf(x), norm.cdf(x), rtol=1e-12)
    # beyond the margin the loss continues along its tangent: gradient continuous, curvature 0
    eps = 1e-7
    g_in = PROBIT.pair_gradient(np.array([-4 + eps]), np.ones(1), np.ones(1))
    g_out = PROBIT.pair_gradient(np.array([-4 - eps]), np.ones(1), np.ones(1))
    assert abs(g_in - g_out) < 1e-6
    assert PROBIT.pair_curvature(np.array([-5.0]), np.ones(1), np.ones(1))[0] == 0.0


@pytest.mark.parametrize("name", sorted(LINKS))
def test_pair_derivatives_match_finite_differences(name):
    link = LINKS[name]
    rng = np.random.default_rng(0)
    d = rng.uniform(-7, 7, 400)
    d = d[np.abs(np.abs(d) - 4) > 1e-3]  # the probit curvature jumps at |d| = margin
    T = rng.integers(1, 6, d.size).astype(float)
    W = rng.integers(0, 11, d.size) / 10 * T
    h = 1e-6
    num = (link.pair_loss(d + h, W, T) - link.pair_loss(d - h, W, T)) / (2 * h)
    np.testing.assert_allclose(link.pair_gradient(d, W, T), num, rtol=1e-6, atol=1e-7)
    num2 = (link.pair_gradient(d + h, W, T) - link.pair_gradient(d - h, W, T)) / (2 * h)
    np.testing.assert_allclose(link.pair_curvature(d, W, T), num2, rtol=1e-5, atol=1e-6)


def counts_with_ties(m, seed):
    rng = np.random.default_rng(seed)
    i, j = np.triu_indices(m, 1)
    keep = rng.random(i.size) < 0.7
    T = rng.integers(1, 5, keep.sum()).astype(float)
    W = rng.integers(0, 2 * T.astype(int) + 1) / 2.0  # multi-counts with half wins from ties
    return PairCounts.from_arrays(m, i[keep], j[keep], W, T)


@pytest.mark.parametrize("name", sorted(LINKS))
def test_objective_gradient_hessian_with_linear_term(name):
    link = LINKS[name]
    m, lam = 7, 0.4
    pc = counts_with_ties(m, 1)
    rng = np.random.default_rng(2)
    theta, w = rng.normal(size=m), rng.laplace(size=m)
    h = 1e-6
    E = np.eye(m)
    num = np.array([(btl_objective(theta + h * e, pc, lam, link, w) - btl_objective(theta - h * e, pc, lam, link, w))
                    / (2 * h) for e in E])
    np.testing.assert_allclose(btl_gradient(theta, pc, lam, link, w), num, rtol=1e-6, atol=1e-6)
    num_h = np.array([(btl_gradient(theta + h * e, pc, lam, link, w) - btl_gradient(theta - h * e, pc, lam, link, w))
                      / (2 * h) for e in E])
    H = btl_hessian(theta, pc, lam, link)
    np.testing.assert_allclose(H, num_h, rtol=1e-5, atol=1e-5)
    # the likelihood is shift invariant: its gradient sums to 0; its Hessian is a Laplacian
    assert abs(btl_gradient(theta, pc, 0.0, link).sum()) < 1e-10
    L = btl_hessian(theta, pc, 0.0, link)
    np.testing.assert_allclose(L, L.T)
    np.testing.assert_allclose(L.sum(axis=1), 0, atol=1e-12)
    assert np.linalg.eigvalsh(H).min() >= 2 * lam - 1e-12


def test_as_link():
    assert as_link("probit") is PROBIT and as_link(LOGISTIC) is LOGISTIC
    with pytest.raises(InputError, match="logistic"):
        as_link("cauchit")
    with pytest.raises(InputError):
        ProbitLink(0.0)


@pytest.mark.parametrize("name", sorted(LINKS))
@pytest.mark.parametrize("size", [50, 5000])  # the logistic link's two sigmoids: scipy's expit, numpy's exp
def test_pair_derivatives_are_gradient_and_curvature_also_written_into_given_arrays(name, size):
    link = LINKS[name]
    rng = np.random.default_rng(1)
    d = rng.uniform(-800, 800, size) * (rng.random(size) < 0.05) + rng.normal(0, 3, size)  # a few far out
    T = rng.integers(1, 6, size).astype(float)
    W = rng.integers(0, 11, size) / 10 * T
    expected = (link.pair_gradient(d, W, T), link.pair_curvature(d, W, T))
    fresh = link.pair_derivatives(d, W, T)
    d_copy, w_out = d.copy(), np.empty(size)
    written = link.pair_derivatives(d_copy, W, T, out=(d_copy, w_out))  # the differences overwritten
    assert written[0] is d_copy and written[1] is w_out
    for got in (fresh, written):
        for x, y in zip(got, expected):
            assert np.all(np.isfinite(x))
            np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-14 * T.max())  # n p - s cancels
