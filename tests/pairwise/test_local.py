"""Local-DP pipelines, budgets and guarantees (notes §8 tests 3, 8, 17, 18, 21)."""
import numpy as np
import pytest

import privrank as pr
import privrank.guarantees
from privrank.data.datasets import load_llmfao
from privrank.errors import InputError
from privrank.pairwise.local import record_epsilons
from privrank.simulate import btl_complete_design, sample_debiased_release


def small(users=True):
    return pr.PairwiseComparisons.from_labels(
        ["a", "a", "b", "c", "a"], ["b", "c", "c", "a", "b"], [1, -1, 0, 1, 1],
        user=["u1", "u1", "u1", "u2", "u2"] if users else None)


def test_per_user_epsilon_by_composition_over_a_declared_bound():
    rel = pr.debiased_randomized_response(small(), 0.5, max_answers=3, rng=0)
    g = rel.guarantee
    assert g.model == "local" and g.unit == "one comparison" and g.private
    assert g.epsilon_per_comparison == 0.5
    assert g.epsilon_per_user == pytest.approx(1.5)  # the declared bound: 3 answers per user
    assert "1.5-DP per user" in g.describe()
    # answers beyond the bound are not used: the second user's third answer never enters
    capped = pr.debiased_randomized_response(small(), 0.5, max_answers=1, rng=0)
    assert capped.counts.totals.sum() == 2


def test_complete_design_user_level_epsilon():
    # notes §8 test 3: eps * m(m-1)/2 for a user who answers every pair (a declared design)
    comps = btl_complete_design(np.zeros(6), 4, rng=0)
    rel = pr.debiased_randomized_response(comps, 0.7, max_answers=15, rng=1)
    assert rel.guarantee.epsilon_per_user == pytest.approx(0.7 * 15)
    assert sample_debiased_release(np.zeros(6), 4, 0.7, rng=1).guarantee.epsilon_per_user == pytest.approx(0.7 * 15)


def test_llmfao_guarantee_never_prints_the_busiest_workers_count():
    # regression (issue 15, finding 5): "686-DP per user" was 2 x 343, the busiest worker's count
    comps = load_llmfao()
    counts = comps.records_per_user()
    assert counts.min() < 20 and counts.max() == 343  # workers made very different numbers
    for eps in (1.0, 2.0):
        g = pr.debiased_randomized_response(comps, eps, rng=0).guarantee
        assert g.epsilon_per_user is None
        assert str(int(343 * eps)) not in g.describe() and "k x" in g.describe()
    g = pr.debiased_randomized_response(comps, 1.0, max_answers=50, rng=0).guarantee
    assert g.epsilon_per_user == 50.0
    # a per-user budget: the per-comparison epsilon of the least active worker is not printed
    g = pr.debiased_randomized_response(comps, user_epsilon=10.0, rng=0).guarantee
    assert g.unit == pr.guarantees.UNIT_USER and g.epsilon == 10.0 and g.epsilon_per_comparison is None
    assert "1.429" not in g.describe() and str(10 / counts.min())[:5] not in g.describe()


def test_no_user_ids_no_per_user_number():
    rel = pr.debiased_randomized_response(small(users=False), 1.0, rng=0)
    assert rel.guarantee.epsilon_per_user is None
    assert "k x 1" in rel.guarantee.describe()
    with pytest.raises(InputError, match="user ids"):
        pr.debiased_randomized_response(small(users=False), 1.0, max_answers=2, rng=0)


def test_user_budget_is_split_evenly():
    comps = small()
    eps = record_epsilons(comps, user_epsilon=3.0)
    np.testing.assert_allclose(eps, [1.0, 1.0, 1.0, 1.5, 1.5])
    rel = pr.debiased_randomized_response(comps, user_epsilon=3.0, rng=0)
    assert rel.guarantee.epsilon == pytest.approx(3.0) and rel.guarantee.unit == pr.guarantees.UNIT_USER
    assert rel.guarantee.epsilon_per_comparison is None


def test_personalised_epsilon():
    comps = small()
    eps = record_epsilons(comps, {"u1": 0.2, "u2": 2.0})
    np.testing.assert_allclose(eps, [0.2, 0.2, 0.2, 2.0, 2.0])
    rel = pr.debiased_randomized_response(comps, {"u1": 0.2, "u2": 2.0}, max_answers=2, rng=0)
    assert rel.guarantee.epsilon_per_user == pytest.approx(4.0)  # the declared bound at the largest epsilon
    with pytest.raises(InputError):
        record_epsilons(comps, {"u1": 0.2})
    with pytest.raises(InputError):
        record_epsilons(small(users=False), user_epsilon=1.0)
    with pytest.raises(InputError):
        record_epsilons(comps, 1.0, user_epsilon=1.0)
    with pytest.raises(InputError):
        record_epsilons(comps, -1.0)


def test_personalised_reports_of_a_seed_are_fixed():
    # the per-record keep probabilities decide the reports: these are the reports of seed 7, fixed
    base = btl_complete_design(np.zeros(4), 5, rng=0)
    order = np.random.default_rng(0).permutation(base.n_records)  # the users' records interleaved
    comps = pr.PairwiseComparisons.from_indices(base.items, base.item_a[order], base.item_b[order],
                                                base.outcome[order], user=base.user[order], users=base.users)
    budget = dict(zip(comps.users, [1.0, 2.0, 3.0, 6.0, 9.0]))
    reports = pr.randomized_response(comps, user_epsilon=budget, rng=7)
    np.testing.assert_array_equal(reports.outcome, [1, -1, -1, 1, 1, 1, -1, -1, -1, -1, 1, 1, -1, -1, -1, -1, -1, 1,
                                                    1, -1, -1, 1, -1, 1, -1, -1, -1, -1, 1, -1])
    np.testing.assert_array_equal(reports.epsilon, np.array([budget[u] for u in comps.user]) / 6)
    assert reports.declared_epsilons == tuple(np.array([1.0, 2.0, 3.0, 6.0, 9.0]) / 6)
    np.testing.assert_array_equal(pr.randomized_response(comps, epsilon=budget, rng=7).outcome,
                                  [1, 1, -1, 1, -1, 1, -1, -1, -1, -1, 1, 1, 1, -1, -1, -1, 1, -1,
                                   1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, 1])


def test_reports_are_debiased_not_randomized_twice():
    theta = np.linspace(-1, 1, 5)
    comps = btl_complete_design(theta, 200, rng=3)
    reports = pr.randomized_response(comps, 1.0, rng=4)
    assert reports.is_randomized and set(np.unique(reports.outcome)) <= {-1, 1}
    a = pr.debiased_randomized_response(reports, rng=99)  # rng unused: nothing is randomized
    b = pr.release_from_reports(reports)
    np.testing.assert_array_equal(a.counts.wins, b.counts.wins)
    with pytest.raises(InputError):
        pr.randomized_response(reports, 1.0)
    # fit_btl on reports debiases: same as the explicit release
    np.testing.assert_allclose(pr.fit_btl(reports).scores, pr.fit_btl(b).scores)


def test_ties_enter_as_fair_coin():
    comps = pr.PairwiseComparisons.from_labels(["a"] * 200_000, ["b"] * 200_000, [0] * 200_000)
    rel = pr.debiased_randomized_response(comps, 1.0, rng=5)
    n = rel.counts.totals[0]
    var = 1 / np.tanh(0.5) ** 2 / 4
    assert abs(rel.counts.wins[0] / n - 0.5) < 4 * np.sqrt(var / n)
    assert pr.fit_btl(comps).scores == pytest.approx([0, 0])  # half a win each without privacy


def test_local_laplace_unbiased_with_right_variance():
    n = 200_000
    comps = pr.PairwiseComparisons.from_labels(["a"] * n, ["b"] * n, [1] * (n // 2) + [-1] * (n // 2))
    rel = pr.local_laplace(comps, 2.0, rng=6)
    mean = rel.counts.wins[0] / n
    var = 0.25 + 2 / 2.0 ** 2
    assert abs(mean - 0.5) < 4 * np.sqrt(var / n)
    assert rel.guarantee.mechanism == "local Laplace"


def test_debiased_beats_laplace():
    rng = np.random.default_rng(8)
    d_err, l_err = [], []
    for _ in range(30):
        theta = rng.uniform(-2, 2, 10)
        theta -= theta.mean()
        comps = btl_complete_design(theta, 100, rng=rng)
        d_err.append(pr.l2_error(pr.fit_btl(pr.debiased_randomized_response(comps, 2.0, rng=rng)).scores, theta))
        l_err.append(pr.l2_error(pr.fit_btl(pr.local_laplace(comps, 2.0, rng=rng)).scores, theta))
    diff = np.array(l_err) - np.array(d_err)
    assert diff.mean() > 3 * diff.std(ddof=1) / np.sqrt(diff.size)


def test_adaptive_schemes_match_tables():
    assert pr.adaptive_epsilon("critical", 10, 400) == pytest.approx(0.5)
    assert pr.adaptive_epsilon("log_under", 10, 1600) == pytest.approx(0.178, abs=5e-4)
    assert pr.adaptive_epsilon("log_over", 10, 200) == pytest.approx(0.778, abs=5e-4)
    assert pr.adaptive_epsilon("log_over", 30, 1600) == pytest.approx(0.337, abs=5e-4)
    assert pr.adaptive_epsilon("log_under", 30, 800) == pytest.approx(0.281, abs=5e-4)
    for s in ("log_over", "critical", "log_under"):
        assert pr.adaptive_epsilon(s, 20, 100) == pytest.approx(1.0)
    with pytest.raises(InputError):
        pr.adaptive_epsilon("scheme1", 10, 100)


def test_inverse_variance_weighting_helps_mixed_epsilon():
    # notes §7-9: 10% of users at eps = 0.05, the rest at eps = 2
    rng = np.random.default_rng(9)
    m, L = 20, 400
    eps = np.where(np.arange(L) < L // 10, 0.05, 2.0)
    uni, inv = [], []
    for _ in range(10):
        theta = rng.uniform(-2, 2, m)
        theta -= theta.mean()
        uni.append(pr.l2_error(pr.fit_btl(sample_debiased_release(theta, L, eps, rng=rng)).scores, theta))
        inv.append(pr.l2_error(pr.fit_btl(sample_debiased_release(theta, L, eps, rng=rng,
                                                                  weights="inverse_variance")).scores, theta))
    assert np.mean(inv) < 0.5 * np.mean(uni)


def test_inverse_variance_mean_is_unbiased():
    comps = pr.PairwiseComparisons.from_labels(["a"] * 100_000, ["b"] * 100_000, [1] * 70_000 + [-1] * 30_000,
                                               user=list(range(100_000)))
    eps = {u: (0.5 if u % 2 else 3.0) for u in range(100_000)}
    rel = pr.debiased_randomized_response(comps, eps, weights="inverse_variance", rng=10)
    w = np.where(np.arange(100_000) % 2, np.tanh(0.25) ** 2, np.tanh(1.5) ** 2)
    w = w / w.mean()
    var_rec = np.where(np.arange(100_000) % 2, 1 / np.tanh(0.25) ** 2, 1 / np.tanh(1.5) ** 2) / 4
    se = np.sqrt(np.sum(w ** 2 * var_rec)) / w.sum()
    assert abs(rel.counts.wins[0] / rel.counts.totals[0] - 0.7) < 4 * se


def test_a_malformed_epsilon_is_refused_with_a_message():
    # a ragged list or an integer too large for a float used to escape as numpy's ValueError or an OverflowError
    with pytest.raises(InputError, match=r"epsilon must be a number > 0 or one per user \(real, of one shape\)"):
        pr.randomized_response(small(), epsilon=[[1.0, 2.0], [3.0]], rng=0)
    with pytest.raises(InputError, match="epsilon must be a number > 0 or one per user"):
        pr.local_laplace(small(), epsilon=[10 ** 400, 1.0], rng=0)
    with pytest.raises(InputError, match="user_epsilon must be a number > 0 or one per user"):
        pr.debiased_randomized_response(small(), user_epsilon=[[1.0], [2.0, 3.0]], rng=0)


def test_a_bad_weighting_is_refused_before_the_charge():
    acct = pr.Accountant(pr.PureDP(5.0))
    with pytest.raises(InputError, match="weights must be one of uniform, inverse_variance"):
        pr.debiased_randomized_response(small(), epsilon=1.0, weights="optimal", accountant=acct, rng=0)
    assert acct.remaining == pr.PureDP(5.0)  # nothing spent: the reports were never drawn


def test_release_from_reports_refuses_a_guarantee_that_is_not_one():
    reports = pr.randomized_response(small(), epsilon=1.0, rng=0)
    with pytest.raises(InputError, match="guarantee must be a privrank Guarantee"):
        pr.release_from_reports(reports, guarantee=1.0)


def test_adaptive_epsilon_refuses_a_scheme_that_is_not_text_and_a_size_too_large_for_a_float():
    with pytest.raises(InputError, match="scheme must be one of log_over, critical, log_under"):
        pr.adaptive_epsilon(np.array(["critical"]), 5, 100)
    with pytest.raises(InputError, match="L must be a number of users >= 1"):
        pr.adaptive_epsilon("critical", 5, 10 ** 400)


@pytest.mark.parametrize("epsilon", [[10 ** 400, 1.0], [[0.5, 1.0], [2.0]], {"u1": 10 ** 400, "u2": 1.0}])
def test_per_user_epsilons_that_are_not_one_real_per_user_are_refused(epsilon):
    comps = pr.PairwiseComparisons.from_labels(["a", "a", "b"], ["b", "c", "c"], [1, 1, -1], user=["u1", "u1", "u2"])
    with pytest.raises(InputError, match="epsilon must be a number > 0 (or one )?per user"):
        pr.classic_randomized_response(comps, epsilon=epsilon, rng=0)
