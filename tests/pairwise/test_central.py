"""Central-DP algorithms of Cai, Chakraborty, Wang and their baselines: correctness (notes §8.1, §8.3)."""
import numpy as np
import pytest
import scipy.optimize
from scipy.stats import binom

import privrank as pr
from privrank.data.comparisons import PairwiseComparisons
from privrank.data.pair_counts import PairCounts
from privrank.data.datasets import DatasetNotFound, load_cems, load_immigration
from privrank.errors import DisconnectedError, InputError
from privrank.guarantees import UNIT_EDGE, UNIT_USER
from privrank.mechanisms.noise import discrete_laplace, laplace_cells
from privrank.pairwise.btl import btl_gradient, btl_hessian, btl_objective
from privrank.pairwise.central import (THETA_GRID, cells_noise_scale, copeland, noisy_copeland,
                                       objective_perturbation_calibration, penalised_mle, perturbed_mle,
                                       theory_ridge)
from privrank.pairwise.spectral import rank_centrality
from privrank.pairwise.links import LINKS
from privrank.simulate import erdos_renyi_comparisons, separated_top_k_scores


def cems():
    try:
        return load_cems()
    except DatasetNotFound as exc:
        pytest.skip(str(exc))


def small_data(seed, m=8, p=0.6, L=3, link="logistic"):
    theta = np.random.default_rng(seed).normal(size=m)
    return erdos_renyi_comparisons(theta, p, L, link, rng=seed)


# ------------------------------------------------------------------ Algorithm 1: solver and noise

@pytest.mark.parametrize("link", sorted(LINKS))
def test_solution_is_stationary_for_the_noise_drawn_once(link):
    """grad L + gamma theta + w = 0 for the one w drawn from the seed: w is drawn once and held fixed."""
    data = small_data(1, link=link)
    res = perturbed_mle(data, 1.0, link=link, centre=False, rng=7)
    paper, _ = objective_perturbation_calibration(1.0, link)
    scale = cells_noise_scale(paper, 1.0, data.n_items)
    w = laplace_cells(scale, data.n_items, np.random.default_rng(7))
    gamma = res.params["gamma"]
    resid = btl_gradient(res.scores, data.pair_counts(), gamma / 2, LINKS[link]) + w
    # the released scores are rounded to THETA_GRID: the residual is the Hessian times that rounding
    hess = np.abs(btl_hessian(res.scores, data.pair_counts(), gamma / 2, LINKS[link])).sum(axis=1).max()
    assert np.max(np.abs(resid)) <= hess * THETA_GRID / 2 * (1 + 1e-6)
    assert res.scores.mean() == pytest.approx(-w.mean() / gamma, abs=THETA_GRID)  # mean(theta) = -mean(w)/gamma
    assert res.params["noise_scale"] == scale and paper <= scale <= paper * (1 + 1e-4)
    assert paper == 8 * LINKS[link].kappa_1


def test_centring_equals_the_sum_zero_constrained_solution():
    data = small_data(2)
    pc = data.pair_counts()
    res = perturbed_mle(data, 0.7, gamma=3.0, rng=3)
    w = laplace_cells(cells_noise_scale(8 / 0.7, 0.7, 8), data.n_items, np.random.default_rng(3))
    B = np.linalg.svd(np.eye(8) - 1 / 8)[0][:, :7]  # orthonormal basis of {1' theta = 0}
    ref = scipy.optimize.minimize(lambda z: btl_objective(B @ z, pc, 1.5, linear=w), np.zeros(7),
                                  jac=lambda z: B.T @ btl_gradient(B @ z, pc, 1.5, linear=w),
                                  method="BFGS", options={"gtol": 1e-11})
    np.testing.assert_allclose(res.scores, B @ ref.x, atol=THETA_GRID)
    assert abs(res.scores.sum()) < 8 * THETA_GRID


@pytest.mark.parametrize("link", sorted(LINKS))
def test_large_epsilon_tends_to_the_penalised_mle(link):
    data = small_data(3, link=link)
    base = penalised_mle(data, link=link, gamma=2.0)
    diffs = [np.abs(perturbed_mle(data, eps, link=link, gamma=2.0, rng=4).scores - base.scores).max()
             for eps in (1e2, 1e4, 1e12)]
    assert diffs[2] <= THETA_GRID  # the released grid
    assert diffs[0] > diffs[1] > diffs[2]  # the perturbation shrinks like 1/epsilon
    assert base.diagnostics["converged"] and not base.guarantee.private


def test_fresh_noise_per_release():
    data = small_data(4)
    a, b = perturbed_mle(data, 1.0), perturbed_mle(data, 1.0)
    assert not np.allclose(a.scores, b.scores)
    np.testing.assert_array_equal(perturbed_mle(data, 1.0, rng=5).scores, perturbed_mle(data, 1.0, rng=5).scores)


def test_gamma_rules_and_guards():
    data = small_data(5)
    pc = data.pair_counts()
    lam, gmin = objective_perturbation_calibration(0.01, "logistic")
    assert (lam, gmin) == (800.0, 100.0)
    assert perturbed_mle(data, 0.01, rng=0).params["gamma"] == pytest.approx(
        max(theory_ridge(8, pc.totals.sum()), 100.0))
    with pytest.raises(InputError, match="smallest ridge"):
        perturbed_mle(data, 0.01, gamma=99.0)
    people = PairwiseComparisons.from_indices(data.items, data.item_a, data.item_b, data.outcome,
                                              user=np.arange(data.n_records) % 5)
    with pytest.raises(InputError, match="smallest ridge"):
        perturbed_mle(people, user_epsilon=1.0, max_answers=5, gamma=4.9)  # 4 kappa_2 m / eps = 5
    assert perturbed_mle(people, user_epsilon=1.0, max_answers=5, gamma=5.0, rng=0).params["noise_scale"] == \
        cells_noise_scale(40.0, 1.0, people.n_items)
    assert theory_ridge(300, 300 * 299 / 2) == pytest.approx(2 * np.sqrt(299 * np.log(300)))


def test_input_guards():
    data = small_data(6)
    with pytest.raises(InputError, match="exactly one"):
        perturbed_mle(data)
    with pytest.raises(InputError, match="user ids"):
        perturbed_mle(data, user_epsilon=1.0, max_answers=3)
    with pytest.raises(InputError, match="max_answers"):
        noisy_copeland(data, user_epsilon=1.0)
    with pytest.raises(InputError, match="epsilon"):
        noisy_copeland(data, 0.0)
    weighted = PairCounts.from_arrays(3, [0, 1], [1, 2], [0.3, 1.0], [0.6, 2.0])
    with pytest.raises(InputError, match="single comparisons"):
        perturbed_mle(weighted, 1.0)
    reports = pr.randomized_response(data, 1.0, rng=0)
    with pytest.raises(InputError, match="randomized reports"):
        noisy_copeland(reports, 1.0)


def test_guarantees_and_public_outputs():
    comps = PairwiseComparisons.from_labels(["a", "a", "b", "c", "a"], ["b", "c", "c", "a", "b"], [1, 0, -1, 1, 1],
                                            user=[1, 1, 1, 2, 2], items=["a", "b", "c"])
    for res in (perturbed_mle(comps, 2.0, rng=0), noisy_copeland(comps, 2.0, rng=0)):
        g = res.guarantee
        assert (g.model, g.unit, g.epsilon, g.delta, g.private) == ("central", UNIT_EDGE, 2.0, 0.0, True)
        assert g.epsilon_per_user is None and "6" not in g.describe()  # the busiest user's 3 answers stay unsaid
        assert res.diagnostics is None and res.ranking[0] in "abc"
    for res in (perturbed_mle(comps, 2.0, max_answers=3, rng=0), noisy_copeland(comps, 2.0, max_answers=3, rng=0)):
        assert res.guarantee.epsilon_per_user == 6.0 and "group privacy" in res.guarantee.describe()  # declared
    res = perturbed_mle(comps, user_epsilon=2.0, max_answers=3, respondents=40, rng=0)
    assert res.guarantee.unit == UNIT_USER and res.params["max_answers"] == 3
    assert res.params["noise_scale"] == cells_noise_scale(8 * 3 / 2.0, 2.0, 3)
    assert set(res.params) == {"epsilon", "noise_scale", "gamma", "link", "kappa_1", "kappa_2", "centred",
                               "max_answers", "n_respondents"}
    assert res.params["n_respondents"] == 40  # declared, never counted
    assert "n_respondents" not in perturbed_mle(comps, user_epsilon=2.0, max_answers=3, gamma=10.0, rng=0).params
    assert perturbed_mle(comps, 2.0, rng=0).params["n_comparisons"] == 5  # public under edge adjacency
    # a max_answers cut keeps 4 of the 5 (user 1's first two): printing 4, or calibrating the ridge on it,
    # would tell how many answers each respondent gave (audit finding)
    for k in (1, 2):
        cut = perturbed_mle(comps, 2.0, max_answers=k, rng=0).params
        assert cut["n_comparisons"] == 5 and cut["gamma"] == perturbed_mle(comps, 2.0, rng=0).params["gamma"]
    diag = perturbed_mle(comps, 2.0, diagnostics=True, rng=0)
    assert not diag.guarantee.private and "NOT PRIVATE" in diag.guarantee.describe()
    assert diag.diagnostics["converged"]


def test_respondent_answers_beyond_the_bound_are_dropped():
    # user 0 answers 4 times, user 1 twice; with max_answers = 2 only user 0's first two answers count
    comps = PairwiseComparisons.from_indices(("a", "b", "c"), [0, 1, 0, 0, 2, 1], [1, 2, 2, 1, 0, 0],
                                             [1, 1, -1, 1, 1, 0], user=[0, 0, 0, 0, 1, 1])
    res = noisy_copeland(comps, user_epsilon=1.0, max_answers=2, rng=9)
    kept = PairwiseComparisons.from_indices(("a", "b", "c"), [0, 1, 2, 1], [1, 2, 0, 0], [1, 1, 1, 0])
    noise = discrete_laplace(2 * 2 * 2 / 1.0, 3, np.random.default_rng(9)) / 2  # scale 2m/eps, half-integer grid
    np.testing.assert_array_equal(res.scores, kept.pair_counts().borda() + noise)
    assert perturbed_mle(comps, user_epsilon=1.0, max_answers=2, gamma=10.0, diagnostics=True, rng=0).diagnostics[
        "answers_dropped"] == 2


def test_central_releases_need_the_declared_item_list():
    # regression (issue 15, finding 2): one person's only comparison naming an item decided whether it appeared
    labels = PairwiseComparisons.from_labels(["a", "a", "b", "d"], ["b", "c", "c", "a"], [1, 1, -1, 1], user=[1, 1, 2, 3])
    assert not labels.items_declared
    for release in (noisy_copeland, perturbed_mle):
        with pytest.raises(InputError, match="public item list"):
            release(labels, 1.0, rng=0)
    declared = PairwiseComparisons.from_labels(["a", "a", "b"], ["b", "c", "c"], [1, 1, -1], user=[1, 1, 2],
                                               items=["a", "b", "c", "d"])
    assert noisy_copeland(declared, 1.0, rng=0).items == ("a", "b", "c", "d")  # d present without a comparison
    # their counts keep the mark: the counts of undeclared items are refused too (audit finding)
    for counts in (labels.pair_counts(), labels.tally().pair_counts()):
        assert not counts.items_declared
        for release in (noisy_copeland, perturbed_mle):
            with pytest.raises(InputError, match="public item list"):
                release(counts, 1.0, rng=0)
    assert noisy_copeland(declared.pair_counts(), 1.0, rng=0).guarantee.private


def test_per_respondent_ridge_reads_only_declared_parameters():
    # regression (issue 15, finding 7): the default ridge and the respondent count were read off the data
    comps = small_data(8)
    comps = PairwiseComparisons.from_indices(comps.items, comps.item_a, comps.item_b, comps.outcome,
                                             user=np.arange(comps.n_records) % 40)
    fewer = comps.select_users(np.arange(39))
    with pytest.raises(InputError, match="respondents"):
        perturbed_mle(comps, user_epsilon=1.0, max_answers=5, rng=0)
    a = perturbed_mle(comps, user_epsilon=1.0, max_answers=5, respondents=40, rng=0)
    b = perturbed_mle(fewer, user_epsilon=1.0, max_answers=5, respondents=40, rng=0)
    assert a.params == b.params  # nothing printed depends on who is in the data
    assert noisy_copeland(comps, user_epsilon=1.0, max_answers=5, rng=0).params == \
        noisy_copeland(fewer, user_epsilon=1.0, max_answers=5, rng=0).params


# ------------------------------------------------------------------ Algorithm 2 and baselines

def test_noisy_copeland_is_counts_plus_exact_discrete_laplace():
    data = small_data(7)
    res = noisy_copeland(data, 0.5, rng=11)
    noise = discrete_laplace(8.0, 8, np.random.default_rng(11)) / 2  # scale 4 on the half-integer grid
    np.testing.assert_array_equal(res.scores, data.pair_counts().borda() + noise)
    assert np.all(2 * res.scores == np.rint(2 * res.scores))
    assert res.params["noise_scale"] == 4.0
    assert res.top_k(3) == res.ranking[:3] and len(res.table(3)) == 3


def test_copeland_breaks_ties_at_random():
    comps = PairwiseComparisons.from_indices(range(4), [0, 1, 2, 3], [1, 2, 3, 0], [1, 1, 1, 1])  # all 1 win
    orders = {tuple(copeland(comps, rng=s).order) for s in range(30)}
    assert len(orders) > 10
    assert copeland(comps, rng=1).ranking == copeland(comps, rng=1).ranking


def test_rank_centrality_recovers_btl_from_exact_probabilities():
    theta = np.array([1.2, 0.4, 0.0, -0.3, -1.3])
    i, j = np.triu_indices(5, 1)
    keep = np.arange(i.size) % 3 != 0  # an incomplete but connected design
    T = np.full(keep.sum(), 100.0)
    W = T / (1 + np.exp(-(theta[i[keep]] - theta[j[keep]])))
    res = rank_centrality(PairCounts.from_arrays(5, i[keep], j[keep], W, T), pseudo_count=0)
    np.testing.assert_allclose(res.scores, theta - theta.mean(), atol=1e-10)
    assert not res.guarantee.private
    with pytest.raises(DisconnectedError):
        rank_centrality(PairwiseComparisons.from_labels(["a", "c"], ["b", "d"], [1, 1]))


def test_rank_centrality_is_consistent():
    theta = np.linspace(-1, 1, 10)
    err = [pr.linf_error(rank_centrality(erdos_renyi_comparisons(theta, 1.0, L, rng=L)).scores, theta)
           for L in (20, 2000)]
    # at L = 2000 the sd of each score is about 1 / sqrt(0.22 * 9 * 2000) = 0.016 (BTL Fisher information;
    # Rank Centrality is a little less efficient): 0.1 is 5 such sd for the worst of 10 items
    assert err[1] < 0.1 and err[1] < err[0]


# ------------------------------------------------------------------ real data

def test_cems_penalised_mle_matches_the_known_fit():
    res = penalised_mle(cems(), gamma=0.3767)  # the authors' real-data ridge; ties half a win each
    known = {"London": 0.9373, "Paris": 0.2471, "Milano": -0.2710, "StGallen": -0.1339, "Barcelona": -0.1211,
             "Stockholm": -0.6584}  # notes §8.1
    got = dict(zip(res.items, res.scores))
    for item, value in known.items():
        assert got[item] == pytest.approx(value, abs=1e-4)
    assert res.ranking[0] == "London" and res.ranking[-1] == "Stockholm"
    wins = dict(zip(res.items, copeland(cems(), rng=0).scores))
    assert wins == {"London": 1138, "Paris": 809, "Barcelona": 708.5, "StGallen": 703, "Milano": 610.5,
                    "Stockholm": 485}  # notes §5.1


def test_immigration_reference_fit():
    try:
        comps = load_immigration()
    except DatasetNotFound as exc:
        pytest.skip(str(exc))
    res = penalised_mle(comps, gamma=1e-9)
    got = dict(zip(res.items, res.scores))
    for item, value in {"crimRate": 0.438, "position": -0.327, "socBurd": 0.406, "culture": -0.517}.items():
        assert got[item] == pytest.approx(value, abs=1e-3)  # notes §5.2
    assert rank_centrality(comps).ranking == res.ranking == ["crimRate", "socBurd", "position", "culture"]


# ------------------------------------------------------------------ statistical behaviour (notes §8.3)

def _errors(n, p, eps, reps, seed):
    """l_inf errors of the perturbed MLE (gamma = 2 sqrt(np log n), the paper's) and Copeland top-k errors."""
    rng = np.random.default_rng(seed)
    theta, k = separated_top_k_scores(n, rng)
    out = []
    for _ in range(reps):
        data = erdos_renyi_comparisons(theta, p, rng=rng).pair_counts()
        mle = perturbed_mle(data, eps, gamma=2 * np.sqrt(n * p * np.log(n)), rng=rng)
        out.append((pr.linf_error(mle.scores, theta), pr.top_k_hamming(noisy_copeland(data, eps, rng=rng).scores,
                                                                          theta, k)))
    return np.array(out)


def _drop(a, b):
    """mean(a) - mean(b) and the standard error of the difference of two independent means."""
    return a.mean() - b.mean(), np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)


@pytest.mark.slow
def test_errors_fall_with_n_and_p():
    # n <= 120 keeps the dense Newton solves below OpenBLAS's multithreading size (slow on a busy machine)
    small_n, large_n = _errors(30, 1.0, 1.0, 20, 1), _errors(120, 1.0, 1.0, 20, 2)
    low_p, high_p = _errors(120, 0.2, 1.0, 20, 3), _errors(120, 1.0, 1.0, 20, 4)
    for a, b in ((small_n, large_n), (low_p, high_p)):
        for col in (0, 1):  # MLE l_inf error, Copeland top-k error
            drop, se = _drop(a[:, col], b[:, col])
            assert drop > 3 * se, (col, drop, se)  # one-sided, 3 standard errors


@pytest.mark.slow
def test_top_k_recovery_with_a_large_gap_and_its_loss_with_a_small_one():
    # n = 100, p = 1, eps = 4: sqrt(log n/(np)) + log n/(np eps) = 0.21 + 0.012. A gap of 2 is far above
    # the threshold (Cor. 2.1, 3.1), a gap of 0.05 far below it. (At eps = 1 the MLE's constants --
    # noise scale 8/eps against a Fisher information of about n/8 per item -- need n of several hundred.)
    n, k, eps = 100, 25, 4.0
    rng = np.random.default_rng(5)
    found = {gap: [] for gap in (2.0, 0.05)}
    for gap, runs in ((2.0, 90), (0.05, 30)):
        theta = np.r_[np.zeros(k), -gap * np.ones(n - k)]
        for _ in range(runs):
            data = erdos_renyi_comparisons(theta, 1.0, rng=rng).pair_counts()
            found[gap].append((set(perturbed_mle(data, eps, rng=rng).order[:k]) == set(range(k)),
                               set(noisy_copeland(data, eps, rng=rng).order[:k]) == set(range(k))))
    # one-sided binomial test: if a recovery rate were <= 0.85, reaching `need` successes in 90 runs would
    # have probability <= 1%
    need = int(binom.isf(0.01, 90, 0.85)) + 1
    assert binom.sf(need - 1, 90, 0.85) <= 0.01
    assert np.all(np.sum(found[2.0], axis=0) >= need)
    assert not np.any(found[0.05])
