"""Simulators: the sufficient-statistic fast path has the per-user path's distribution."""
import numpy as np
import pytest
import scipy.stats

import privrank as pr
from privrank.errors import InputError
from privrank.simulate import btl_complete_design, sample_debiased_release


def test_complete_design_shape():
    comps = btl_complete_design(np.zeros(5), 7, rng=0)
    assert comps.n_records == 7 * 10 and comps.n_users == 7
    assert np.all(comps.records_per_user() == 10)


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_fast_path_matches_per_user_path(eps):
    theta = np.array([0.8, 0.0, -0.8])
    L, reps = 20, 3000
    # per-user path: reps independent data sets of L users, stacked as one design
    comps = btl_complete_design(theta, L * reps, rng=1)
    reports = pr.randomized_response(comps, eps, rng=2)
    rep = comps.user // L
    slow = np.zeros((reps, 3))
    for k, (i, j) in enumerate([(0, 1), (0, 2), (1, 2)]):
        sel = (comps.item_a == i) & (comps.item_b == j)
        slow[:, k] = np.bincount(rep[sel], (reports.outcome[sel] == 1), reps)
    rng = np.random.default_rng(3)
    fast = np.zeros((reps, 3))
    a = np.expm1(eps)
    for r in range(reps):
        rel = sample_debiased_release(theta, L, eps, rng=rng)
        fast[r] = (rel.counts.wins * a + L) / (a + 2)  # back to the number of reported wins
    np.testing.assert_allclose(fast, np.round(fast), atol=1e-8)
    for k in range(3):
        obs = np.array([np.bincount(slow[:, k].astype(int), minlength=L + 1),
                        np.bincount(np.round(fast[:, k]).astype(int), minlength=L + 1)])
        keep = obs.sum(0) > 0
        p = scipy.stats.chi2_contingency(obs[:, keep])[1]
        assert p > 1e-4, (k, p)  # threshold 1e-4: six fixed-seed tests, no flakes


def test_fast_path_debiased_mean():
    theta = np.array([1.0, -1.0])
    rel = sample_debiased_release(theta, 100_000, 1.0, rng=4)
    P = 1 / (1 + np.exp(-2.0))
    var = 1 / np.tanh(0.5) ** 2 / 4 - (P - 0.5) ** 2
    assert abs(rel.counts.wins[0] / 100_000 - P) < 4 * np.sqrt(var / 100_000)


def test_bad_theta():
    with pytest.raises(InputError):
        sample_debiased_release([1.0], 10, 1.0)
    with pytest.raises(InputError):
        btl_complete_design([0.0, np.nan], 10)
    with pytest.raises(InputError):
        sample_debiased_release([0.0, 1.0], 10, 0.0)


def test_mallows_matches_its_exact_distribution():
    import itertools

    from privrank.metrics import kendall_tau_distance
    from privrank.simulate import sample_mallows

    center, phi, n = np.array([2, 0, 3, 1]), 0.6, 60_000
    R = sample_mallows(center, phi=phi, n=n, rng=5)
    perms = list(itertools.permutations(range(4)))
    p = np.array([phi ** kendall_tau_distance(q, center) for q in perms])
    p /= p.sum()
    index = {q: k for k, q in enumerate(perms)}
    counts = np.bincount([index[tuple(o)] for o in R.orders], minlength=24)
    # chi-square goodness of fit over the 24 orders; threshold 1e-4 (fixed seed, no flakes)
    assert scipy.stats.chisquare(counts, n * p).pvalue > 1e-4
    assert np.all(sample_mallows(center, phi=0.0, n=3, rng=0).orders == center)
    with pytest.raises(InputError):
        sample_mallows([0, 0, 1], phi=0.5, n=3)
    with pytest.raises(InputError):
        sample_mallows(3, phi=1.5, n=3)


# ------------------------------------------------------------------ Erdos-Renyi designs (Cai et al.)

def test_erdos_renyi_pairs_count_and_shape():
    from privrank.simulate import erdos_renyi_pairs
    n, p = 200, 0.3
    i, j = erdos_renyi_pairs(n, p, rng=0)
    N = n * (n - 1) / 2
    assert np.all(i < j) and np.unique(i * n + j).size == i.size
    assert abs(i.size - p * N) < 4 * np.sqrt(N * p * (1 - p))  # Binomial(N, p): 4 standard deviations
    with pytest.raises(InputError):
        erdos_renyi_pairs(5, 0.0)


@pytest.mark.parametrize("link", ["logistic", "probit"])
def test_erdos_renyi_outcomes_follow_the_link(link):
    from privrank.pairwise.links import LINKS
    from privrank.simulate import erdos_renyi_comparisons
    theta = np.array([0.6, 0.0, -0.4])
    L = 20_000
    comps = erdos_renyi_comparisons(theta, 1.0, L, link, rng=1)
    assert comps.n_records == 3 * L
    pc = comps.pair_counts()
    P = LINKS[link].cdf(theta[pc.i] - theta[pc.j])
    np.testing.assert_array_equal(pc.totals, L)
    assert np.all(np.abs(pc.wins / L - P) < 4 * np.sqrt(P * (1 - P) / L))  # 4 standard errors per pair


def test_separated_top_k_scores():
    from privrank.simulate import separated_top_k_scores
    theta, k = separated_top_k_scores(250, rng=2)
    assert k == 62  # round half to even, as in the authors' R code
    assert abs(theta.sum()) < 1e-12
    top = theta[-k:]
    assert np.ptp(top) < 1e-12 and top[0] - theta[:-k].max() >= np.log(1 / 0.7) - 1e-12
    assert theta[:-k].min() > top[0] + np.log(0.2) - 1e-12
