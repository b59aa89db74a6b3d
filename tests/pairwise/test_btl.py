"""Regularised BTL M-estimator (Xu, Sun, Cheng eq. 3; notes §8 tests 9-15)."""
import numpy as np
import pytest
import scipy.optimize

import privrank as pr
from privrank.data.pair_counts import PairCounts
from privrank.errors import DisconnectedError, InputError
from privrank.guarantees import Guarantee
from privrank.pairwise.btl import (btl_gradient, btl_hessian, btl_objective, fit_pair_counts, laplacian_positions,
                                   weighted_laplacian)
from privrank.pairwise.links import LOGISTIC
from privrank.simulate import btl_complete_design, sample_debiased_release


def random_counts(m, n, seed, debiased_eps=None):
    rng = np.random.default_rng(seed)
    theta = rng.uniform(-2, 2, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    y = (rng.random(n) < 1 / (1 + np.exp(-(theta[a] - theta[b])))).astype(float)
    if debiased_eps is not None:
        y = pr.debias(pr.mechanisms.randomized_response.randomize_bits(y, debiased_eps, rng), debiased_eps)
    return PairCounts.from_records(m, a, b, y), theta


@pytest.mark.parametrize("lam", [1e-3, 0.5, 10.0])
def test_sum_zero_and_stationary(lam):
    pc, _ = random_counts(12, 3000, 1, debiased_eps=1.0)
    fit = fit_pair_counts(pc, lam, Guarantee.non_private())
    assert abs(fit.scores.sum()) < 1e-8
    assert fit.converged and fit.grad_norm <= 1e-9
    assert np.linalg.norm(btl_gradient(fit.scores, pc, lam)) < 1e-8


def test_gradient_and_hessian_match_finite_differences():
    pc, _ = random_counts(7, 500, 2, debiased_eps=0.5)
    lam = 0.3
    theta = np.random.default_rng(0).normal(size=7)
    h = 1e-6
    num_grad = np.array([(btl_objective(theta + h * e, pc, lam) - btl_objective(theta - h * e, pc, lam)) / (2 * h)
                         for e in np.eye(7)])
    np.testing.assert_allclose(btl_gradient(theta, pc, lam), num_grad, rtol=1e-6, atol=1e-5)
    num_hess = np.array([(btl_gradient(theta + h * e, pc, lam) - btl_gradient(theta - h * e, pc, lam)) / (2 * h)
                         for e in np.eye(7)])
    np.testing.assert_allclose(btl_hessian(theta, pc, lam), num_hess, rtol=1e-5, atol=1e-5)


def test_hessian_independent_of_wins_and_bounded():
    m, L, lam = 8, 1, 0.2
    pc, _ = random_counts(m, 400, 3)
    pc2 = PairCounts(pc.n_items, pc.i, pc.j, pc.wins * -3.0 + 1.0, pc.totals, pc.items)
    theta = np.random.default_rng(1).normal(size=m)
    H = btl_hessian(theta, pc, lam)
    np.testing.assert_array_equal(H, btl_hessian(theta, pc2, lam))
    # complete design with one record per pair: eigenvalues in [2 lam, 2 lam + (m-1)/2]
    i, j = np.triu_indices(m, 1)
    pcc = PairCounts.from_arrays(m, i, j, np.full(i.size, 0.5 * L), np.full(i.size, L))
    ev = np.linalg.eigvalsh(btl_hessian(theta, pcc, lam))
    assert ev.min() >= 2 * lam - 1e-12 and ev.max() <= 2 * lam + (m - 1) / 2 + 1e-12


def test_matches_exact_reference_optimum():
    pc, _ = random_counts(6, 800, 4)
    lam = 0.05
    ref = scipy.optimize.minimize(btl_objective, np.zeros(6), args=(pc, lam), jac=btl_gradient,
                                  method="BFGS", options={"gtol": 1e-12, "maxiter": 10_000})
    fit = fit_pair_counts(pc, lam, Guarantee.non_private())
    np.testing.assert_allclose(fit.scores, ref.x - ref.x.mean(), atol=1e-7)
    assert fit.objective <= ref.fun + 1e-9


def test_sparse_and_dense_solvers_agree():
    pc, _ = random_counts(40, 5000, 5)
    dense = fit_pair_counts(pc, 0.1, Guarantee.non_private(), solver="dense")
    sparse = fit_pair_counts(pc, 0.1, Guarantee.non_private(), solver="sparse")
    np.testing.assert_allclose(dense.scores, sparse.scores, atol=1e-9)
    assert dense.solver == "dense" and sparse.solver == "sparse"
    # the maximum-likelihood step (lam = 0, solved on the sum-zero subspace), and pairs stored in
    # any order (the sparse Hessian groups them by row itself)
    perm = np.random.default_rng(1).permutation(pc.n_pairs)
    shuffled = PairCounts(pc.n_items, pc.i[perm], pc.j[perm], pc.wins[perm], pc.totals[perm])
    mle = [fit_pair_counts(p, 0.0, Guarantee.non_private(), solver=s, tol=1e-10)
           for p, s in ((pc, "dense"), (pc, "sparse"), (shuffled, "sparse"))]
    for other in mle[1:]:
        np.testing.assert_allclose(other.scores, mle[0].scores, atol=1e-9)
        assert other.grad_norm <= 1e-10
    from privrank.pairwise.btl import _SparseHessian  # its operator is the dense Hessian
    theta = np.random.default_rng(2).normal(size=pc.n_items)
    for p in (pc, shuffled):
        w = LOGISTIC.pair_curvature(theta[p.i] - theta[p.j], p.wins, p.totals)
        diag = np.bincount(p.i, w, p.n_items) + np.bincount(p.j, w, p.n_items) + 0.2
        H = _SparseHessian(p).operator(w, diag, 0.0)
        dense = np.column_stack([H.matvec(e) for e in np.eye(p.n_items)])
        np.testing.assert_allclose(dense, btl_hessian(theta, p, 0.1), atol=1e-10)


def test_objective_beats_choix():
    choix = pytest.importorskip("choix")
    rng = np.random.default_rng(6)
    m, n, lam = 15, 3000, 0.005
    theta = rng.normal(size=m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    win = rng.random(n) < 1 / (1 + np.exp(-(theta[a] - theta[b])))
    w, l = np.where(win, a, b), np.where(win, b, a)
    pc = PairCounts.from_records(m, w, l, np.ones(n))
    ours = fit_pair_counts(pc, lam, Guarantee.non_private(), tol=1e-8)
    theirs = choix.opt_pairwise(m, list(zip(w.tolist(), l.tolist())), alpha=2 * lam)
    assert ours.grad_norm <= 1e-8
    assert ours.objective <= btl_objective(theirs - theirs.mean(), pc, lam) + 1e-10
    np.testing.assert_allclose(ours.scores, theirs - theirs.mean(), atol=0.05)


@pytest.mark.parametrize("lam", [1e-6, 1.0, 30.0])
def test_borda_identity_complete_design(lam):
    # For the complete design the ordering of theta-hat is the ordering of the Borda scores.
    theta = np.random.default_rng(7).uniform(-2, 2, 9)
    rel = sample_debiased_release(theta, 60, 1.0, rng=8)
    fit = pr.fit_btl(rel, lam=lam)
    borda = rel.counts.borda()
    assert pr.kendall_distance(fit.scores, borda, tol=1e-7) == 0


def test_classic_and_debiased_rankings_coincide_as_weak_orders():
    theta = np.random.default_rng(9).uniform(-2, 2, 10)
    comps = btl_complete_design(theta, 50, rng=10)
    reports = pr.randomized_response(comps, 2.0, rng=11)
    classic = pr.fit_btl(pr.classic_randomized_response(reports))
    debiased = pr.fit_btl(reports)
    assert pr.kendall_distance(classic.scores, debiased.scores, tol=1e-7) == 0


def test_consistency_without_privacy():
    theta = np.linspace(-1.5, 1.5, 8)
    err = [pr.l2_error(pr.fit_btl(btl_complete_design(theta, L, rng=L)).scores, theta) for L in (50, 5000)]
    assert err[1] < 0.05 and err[1] < err[0]


def _mean_errors(m, L, eps, reps, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(reps):
        theta = rng.uniform(-2, 2, m)
        theta -= theta.mean()
        fit = pr.fit_btl(sample_debiased_release(theta, L, eps, rng=rng))
        out.append((pr.l2_error(fit.scores, theta), pr.linf_error(fit.scores, theta)))
    return np.array(out)


def test_error_slope_in_L_is_minus_half():
    Ls = np.array([100, 200, 400, 800, 1600])
    reps = 40
    means = np.array([_mean_errors(10, L, 1.0, reps, 100 + k)[:, 0].mean() for k, L in enumerate(Ls)])
    slope = np.polyfit(np.log(Ls), np.log(means), 1)[0]
    assert -0.65 <= slope <= -0.35


def test_error_decreases_in_m():
    e10 = _mean_errors(10, 200, 1.0, 40, 1)[:, 0]
    e40 = _mean_errors(40, 200, 1.0, 40, 2)[:, 0]
    se = np.sqrt(e10.var(ddof=1) / e10.size + e40.var(ddof=1) / e40.size)
    assert e10.mean() - e40.mean() > 4 * se


def test_epsilon_law():
    # At large L the error scales with coth(eps/2): ratio of errors at eps = 0.5 and 2.
    a = _mean_errors(10, 4000, 0.5, 40, 3)[:, 0]
    b = _mean_errors(10, 4000, 2.0, 40, 4)[:, 0]
    ratio = a.mean() / b.mean()
    se = ratio * np.sqrt(a.var(ddof=1) / a.size / a.mean() ** 2 + b.var(ddof=1) / b.size / b.mean() ** 2)
    expected = np.tanh(1.0) / np.tanh(0.25)
    assert abs(ratio - expected) < 4 * se + 0.05 * expected  # 5% for the remaining finite-L bias


def test_classic_rr_bias_plateaus_while_debiased_converges():
    theta = np.random.default_rng(12).uniform(-2, 2, 10)
    theta -= theta.mean()
    res = {}
    for L in (50, 800):
        comps = btl_complete_design(theta, L, rng=L)
        reports = pr.randomized_response(comps, 2.0, rng=L + 1)
        res[L] = (pr.linf_error(pr.fit_btl(pr.classic_randomized_response(reports)).scores, theta),
                  pr.linf_error(pr.fit_btl(reports).scores, theta))
    assert res[800][0] > 0.5  # classic RR is shrunk: l_inf stays near 0.7 (notes §9)
    assert res[800][1] < 0.2 and res[800][1] < res[50][1]


def test_fit_result_api_and_labels():
    comps = pr.PairwiseComparisons.from_labels(["b", "a", "c", "a"], ["a", "c", "b", "b"], [1, 1, -1, 0])
    fit = pr.fit_btl(comps)
    assert set(fit.ranking) == {"a", "b", "c"} and fit.ranking[0] == "b"
    assert fit.top_k(1) == ["b"]
    assert [r["rank"] for r in fit.table()] == [1, 2, 3]
    assert not fit.guarantee.private
    with pytest.raises(InputError):
        fit.top_k(0)
    with pytest.raises(InputError):
        pr.fit_btl(comps, lam=-1)
    with pytest.raises(InputError, match="does not exist"):  # a never loses: no maximum-likelihood estimate
        pr.fit_btl(pr.PairwiseComparisons.from_labels(["a", "a", "b"], ["b", "c", "c"], [1, 1, 1]), lam=0)
    with pytest.raises(InputError):
        pr.fit_btl(comps, lam="paper")


@pytest.mark.parametrize("ridge", [0.0, 0.3])
def test_weighted_laplacian_at_positions_computed_once_is_the_sum_of_its_terms(ridge):
    rng = np.random.default_rng(3)
    m = 7
    i, j = np.triu_indices(m, 1)
    keep = rng.random(i.size) < 0.6
    i, j, w = i[keep], j[keep], rng.random(keep.sum())
    expected = ridge * np.eye(m)
    for a, b, x in zip(i, j, w):
        e = np.zeros(m)
        e[a], e[b] = 1.0, -1.0
        expected += x * np.outer(e, e)
    positions = laplacian_positions(i, j, m)
    np.testing.assert_allclose(weighted_laplacian(i, j, w, m, ridge, positions), expected, atol=1e-14)
    np.testing.assert_allclose(weighted_laplacian(i, j, 2 * w, m, ridge), 2 * expected - ridge * np.eye(m), atol=1e-14)


@pytest.mark.parametrize("dense_max_items", [0, 600], ids=["sparse", "dense"])
def test_mle_exists_with_and_without_two_way_pairs(monkeypatch, dense_max_items):
    from privrank.pairwise import btl
    from privrank.pairwise.btl import mle_exists

    monkeypatch.setattr(btl, "DENSE_MAX_ITEMS", dense_max_items)

    def pairs(i, j, wins, totals):
        return PairCounts.from_arrays(4, i, j, wins, totals)

    # every pair won and lost: the two-way pairs connect everything
    assert mle_exists(pairs([0, 1, 2], [1, 2, 3], [1, 1, 1], [2, 2, 2]))
    # one-way pairs only, a cycle 0 > 1 > 2 > 3 > 0: strongly connected all the same
    assert mle_exists(pairs([0, 1, 2, 0], [1, 2, 3, 3], [1, 1, 1, 0], [1, 1, 1, 1]))
    # the same with 3 beating 0 reversed: 0 never loses, so no maximum-likelihood estimate
    assert not mle_exists(pairs([0, 1, 2, 0], [1, 2, 3, 3], [1, 1, 1, 1], [1, 1, 1, 1]))
    # two-way pairs {0, 1} and {2, 3} and one-way 1 > 2: the group {0, 1} never loses to {2, 3}
    assert not mle_exists(pairs([0, 1, 2], [1, 2, 3], [1, 1, 1], [2, 1, 2]))
    # ... and with 3 > 0 as well, it is strongly connected
    assert mle_exists(pairs([0, 1, 2, 0], [1, 2, 3, 3], [1, 1, 1, 0], [2, 1, 2, 1]))


def test_small_fit_runs_no_scipy_or_pyarrow_python_code():
    """A fit of a season's games (32 teams) runs no Python code of scipy or pyarrow: their set-up
    (sparse matrices, checked solves, Arrow arrays) would cost more than the fit itself."""
    import sys

    from privrank.data.datasets import load_nfl

    games = load_nfl(2019)
    xs, ys = [games.items[k] for k in games.item_a], [games.items[k] for k in games.item_b]
    outcome = games.outcome.tolist()
    pr.fit_btl(pr.PairwiseComparisons.from_labels(xs, ys, outcome))  # imports done before watching
    called = set()

    def watch(frame, event, arg):
        if event == "call":
            called.add(frame.f_code.co_filename)
        elif event == "c_call":
            called.add(str(getattr(arg, "__module__", "")))

    sys.setprofile(watch)
    try:
        fit = pr.fit_btl(pr.PairwiseComparisons.from_labels(xs, ys, outcome))
    finally:
        sys.setprofile(None)
    assert fit.info["estimate"] == "maximum likelihood" and fit.converged
    assert not [name for name in called if "scipy" in name or "pyarrow" in name]


def test_item_never_compared_is_refused():
    comps = pr.PairwiseComparisons.from_labels(["a"], ["b"], [1], items=["a", "b", "c"])
    with pytest.raises(DisconnectedError):
        pr.fit_btl(comps)


def test_disconnected_graph_warns():
    comps = pr.PairwiseComparisons.from_labels(["a", "c"], ["b", "d"], [1, 1])
    with pytest.warns(RuntimeWarning, match="components"):
        fit = pr.fit_btl(comps)
    assert fit.info["n_components"] == 2


def test_paper_lambda_option():
    theta = np.linspace(-1, 1, 6)
    rel = sample_debiased_release(theta, 100, 3.0, rng=1)
    fit = pr.fit_btl(rel, lam="paper")
    e = np.exp(3.0)
    assert fit.lam == pytest.approx((e + 1) ** 2 / (e - 1))
    assert pr.fit_btl(rel).lam == pytest.approx(1 / np.tanh(1.5) ** 2)


def test_the_default_fit_of_raw_comparisons_is_the_mle_peers_compute():
    """On the NFL 2019 season the default non-private fit is choix's maximum-likelihood estimate
    (ILSR without regularisation); the old default ridge (lam = 1) is measurably different."""
    choix = pytest.importorskip("choix")
    from privrank.data.datasets import load_nfl

    games = load_nfl(2019, include_ties=False)
    fit = pr.fit_btl(games)
    wins = [(a, b) if o == 1 else (b, a) for a, b, o in zip(games.item_a, games.item_b, games.outcome)]
    mle = choix.ilsr_pairwise(len(games.items), wins, alpha=0, tol=1e-12, max_iter=10_000)
    assert fit.info["estimate"] == "maximum likelihood" and fit.lam == 0
    np.testing.assert_allclose(fit.scores, mle - mle.mean(), atol=1e-8)
    assert np.max(np.abs(pr.fit_btl(games, lam=1.0).scores - fit.scores)) > 0.1
