"""Confidence intervals: coverage of theta* on simulated data (issue: 92%-98% of items x replications,
widened by 3 binomial standard errors), and the negative controls the same checks must catch."""
import math
import warnings

import numpy as np
import pytest

import privrank as pr
from privrank.data.comparisons import PairCounts
from privrank.errors import InputError
from privrank.inference import BTL_TARGET, confidence_intervals, plot_intervals
from privrank.pairwise.release import PairwiseRelease
from privrank.pairwise.links import LOGISTIC
from privrank.simulate import btl_complete_design, sample_debiased_release

SETTINGS = [(10, 1000, 1.0), (10, 1000, 2.0), (20, 500, 2.0)]
REPS = 500


def coverage_bounds(n_intervals):
    """[0.92, 0.98] widened by 3 binomial SEs of the nominal 0.95 over n_intervals item x replication cells."""
    se = math.sqrt(0.95 * 0.05 / n_intervals)
    return 0.92 - 3 * se, 0.98 + 3 * se


def scores(m, gen):
    """theta* ~ U(-2, 2), centred, redrawn per replication (Xu, Sun, Cheng §5)."""
    t = gen.uniform(-2, 2, m)
    return t - t.mean()


def complete_counts(theta, L, gen):
    """Sufficient statistic of the complete design with L comparisons per pair (central model)."""
    m = theta.size
    i, j = np.triu_indices(m, 1)
    wins = gen.binomial(L, LOGISTIC.cdf(theta[i] - theta[j]))
    return PairCounts.from_arrays(m, i, j, wins.astype(float), np.full(i.size, float(L)), items=tuple(range(m)))


def local_hits(m, L, eps, seed, reps=REPS, drop_noise=False, **kw):
    gen = np.random.default_rng(seed)
    hits = []
    for _ in range(reps):
        theta = scores(m, gen)
        rel = sample_debiased_release(theta, L, eps, rng=gen)
        if drop_noise:  # broken variant: intervals without the mechanism's variance
            rel = PairwiseRelease(rel.counts, rel.guarantee, rel.variance_factor, rel.paper_lam, rel.weight_sq,
                                  np.zeros_like(rel.noise_variance))
        ci = confidence_intervals(pr.fit_btl(rel), rng=gen, **kw)
        hits.append((ci.lower <= theta) & (theta <= ci.upper))
    return np.array(hits)


def central_hits(m, L, eps, seed, mechanism, reps=REPS, **kw):
    gen = np.random.default_rng(seed)
    hits = []
    for _ in range(reps):
        theta = scores(m, gen)
        pc = complete_counts(theta, L, gen)
        if mechanism == "copeland":
            res = pr.noisy_copeland(pc, eps, rng=gen)
            p = LOGISTIC.cdf(theta[pc.i] - theta[pc.j])
            target = L * (np.bincount(pc.i, p, m) + np.bincount(pc.j, 1 - p, m))
        else:
            res = pr.perturbed_mle(pc, eps, rng=gen, **({"gamma": kw.pop("gamma")} if "gamma" in kw else {}))
            target = theta
        ci = confidence_intervals(res, rng=gen, **kw)
        hits.append((ci.lower <= target) & (target <= ci.upper))
    return np.array(hits)


def assert_covers(hits):
    lo, hi = coverage_bounds(hits.size)
    assert lo <= hits.mean() <= hi, (hits.mean(), lo, hi)


@pytest.mark.parametrize("m,L,eps", SETTINGS)
def test_local_sandwich_coverage(m, L, eps):
    assert_covers(local_hits(m, L, eps, seed=int(10 * eps) + m))


@pytest.mark.parametrize("m,L,eps", SETTINGS)
def test_perturbed_mle_bias_corrected_coverage(m, L, eps):
    assert_covers(central_hits(m, L, eps, 100 + int(10 * eps) + m, "perturbed", bias_corrected=True))


@pytest.mark.parametrize("m,L,eps", SETTINGS)
def test_noisy_copeland_coverage_of_expected_counts(m, L, eps):
    assert_covers(central_hits(m, L, eps, 200 + int(10 * eps) + m, "copeland"))


def test_local_bootstrap_coverage():
    assert_covers(local_hits(10, 1000, 1.0, seed=7, method="bootstrap", n_bootstrap=200))


def test_negative_controls_are_caught():
    """The same coverage check rejects intervals that leave out the privacy noise or the ridge bias."""
    lo, _ = coverage_bounds(10 * REPS)
    with warnings.catch_warnings():  # the broken intervals also misjudge the ridge bias: silence that warning
        warnings.simplefilter("ignore", RuntimeWarning)
        assert local_hits(10, 1000, 1.0, seed=3, drop_noise=True).mean() < lo  # no Lemma 2 variance
    with pytest.warns(RuntimeWarning, match="shrinks"):
        assert central_hits(10, 1000, 1.0, seed=4, mechanism="perturbed", reps=50).mean() < lo  # theory ridge


def test_privacy_noise_widens_intervals():
    theta = np.linspace(-1, 1, 6)
    widths = [np.mean(np.diff(np.stack([(ci := confidence_intervals(pr.fit_btl(
        sample_debiased_release(theta, 400, eps, rng=1)))).lower, ci.upper]), axis=0)) for eps in (0.5, 1, 4)]
    assert widths[0] > widths[1] > widths[2]
    # Lemma 2: the standard error scales like sqrt(P(1-P) + 1/(4 sinh^2(eps/2))) per answer
    ratio = math.sqrt((0.2 + 0.25 / math.sinh(0.25) ** 2) / (0.2 + 0.25 / math.sinh(2) ** 2))
    assert widths[0] / widths[2] == pytest.approx(ratio, rel=0.15)


def test_rank_intervals_and_ahead_probabilities():
    theta = np.array([2.0, 1.0, 0.0, -0.02, -1.0, -2.0])
    ci = confidence_intervals(pr.fit_btl(sample_debiased_release(theta, 2000, 2.0, rng=3)))
    assert list(ci.rank_lower[[0, 1, 4, 5]]) == [1, 2, 5, 6] and list(ci.rank_upper[[0, 1, 4, 5]]) == [1, 2, 5, 6]
    assert ci.rank_lower[2] == ci.rank_lower[3] == 3 and ci.rank_upper[2] == ci.rank_upper[3] == 4  # near-tie
    assert ci.ahead[0, 5] > 0.999 and ci.ahead[5, 0] < 0.001
    assert 0.05 < ci.ahead[2, 3] < 0.95
    off = ~np.eye(6, dtype=bool)
    np.testing.assert_allclose((ci.ahead + ci.ahead.T)[off], 1.0, rtol=0, atol=1e-12)
    assert np.all(np.isnan(np.diag(ci.ahead)))
    assert ci.target == BTL_TARGET and ci.guarantee.model == "local" and "sandwich" in ci.describe()


def test_bias_correction_removes_the_ridge_shrinkage():
    theta = np.linspace(-2, 2, 8)
    fit = pr.fit_btl(sample_debiased_release(theta, 100, 1.0, rng=5), lam=200.0)
    corrected = confidence_intervals(fit, bias_corrected=True)
    ridge_free = pr.fit_btl(fit.release, lam=1e-9 * fit.release.counts.totals.sum() / 8)
    np.testing.assert_allclose(corrected.estimate, ridge_free.scores, atol=1e-6)
    assert np.abs(corrected.estimate).max() > np.abs(fit.scores).max()


def test_central_design_default_and_override():
    theta = np.linspace(-1, 1, 5)
    pc = complete_counts(theta, 50, np.random.default_rng(0))
    res = pr.perturbed_mle(pc, 1.0, gamma=1.0, rng=1)
    assert res.params["n_comparisons"] == 500
    a = confidence_intervals(res)
    N = np.full((5, 5), 50.0)
    np.fill_diagonal(N, 0)
    np.testing.assert_allclose(confidence_intervals(res, design=N).covariance, a.covariance, rtol=1e-10)
    np.testing.assert_allclose(confidence_intervals(res, design=pc).covariance, a.covariance, rtol=1e-10)
    with pytest.raises(InputError, match="symmetric"):
        confidence_intervals(res, design=np.ones((4, 4)))


def test_refusals():
    theta = np.linspace(-1, 1, 4)
    comps = btl_complete_design(theta, 30, rng=0)
    with pytest.raises(InputError, match="biased"):
        confidence_intervals(pr.fit_btl(pr.classic_randomized_response(comps, 1.0, rng=1)))
    with pytest.raises(InputError, match="unbiased"):
        confidence_intervals(pr.noisy_copeland(comps, 1.0, rng=1), bias_corrected=True)
    with pytest.raises(InputError, match="level"):
        confidence_intervals(pr.fit_btl(comps), level=1.0)
    with pytest.raises(InputError, match="method"):
        confidence_intervals(pr.fit_btl(comps), method="jackknife")
    with pytest.raises(InputError, match="need"):
        confidence_intervals(pr.rank_centrality(comps))


def test_heterogeneous_local_release_and_non_private_fit():
    """Per-user budgets give heterogeneous epsilons: the sandwich uses each pair's exact noise."""
    theta = np.linspace(-1, 1, 5)
    comps = btl_complete_design(theta, 300, rng=0)
    eps = {u: (0.5 if u % 2 else 3.0) for u in comps.users}
    rel = pr.debiased_randomized_response(comps, eps, weights="inverse_variance", rng=1)
    ci = confidence_intervals(pr.fit_btl(rel))
    boot = confidence_intervals(pr.fit_btl(rel), method="bootstrap", n_bootstrap=300, rng=2)
    np.testing.assert_allclose(np.diag(boot.covariance), np.diag(ci.covariance), rtol=0.25)
    exact = confidence_intervals(pr.fit_btl(comps))
    assert not exact.guarantee.private and np.all(exact.upper - exact.lower < ci.upper - ci.lower)


def test_plot(tmp_path):
    pytest.importorskip("matplotlib")
    ci = confidence_intervals(pr.fit_btl(sample_debiased_release(np.linspace(-1, 1, 6), 200, 1.0, rng=0)))
    path = tmp_path / "forest.png"
    plot_intervals(ci, path)
    assert path.stat().st_size > 1000
    with pytest.raises(InputError, match="exists"):
        plot_intervals(ci, path)
