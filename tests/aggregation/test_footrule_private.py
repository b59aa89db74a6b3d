"""Private footrule aggregation and the private Kemeny variants of Hillebrand et al."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import beta as beta_dist

from privrank.aggregation.footrule import footrule_cost_matrix, footrule_optimal_order
from privrank.aggregation.private_footrule import dp_footrule, dp_ptas, ldp_footrule
from privrank.data.rankings import Rankings, positions_of
from privrank.mechanisms.pairwise_matrix import same_bucket_pairs
from privrank.errors import InputError
from privrank.mechanisms import noise, pairwise_matrix, tree
from privrank.metrics import footrule_cost, kemeny_cost, kendall_tau_distance


def brute_wfas(W):
    m = W.shape[0]
    best = min(itertools.permutations(range(m)), key=lambda p: kemeny_cost(np.array(p), W))
    return np.array(best)


def kendall_count(a, b):
    return kendall_tau_distance(np.asarray(a), np.asarray(b))


def hard_profile(rng, n, m):
    """Half a ranking, half its reverse, plus noise: many near-ties (hard for private methods)."""
    c = rng.permutation(m)
    rows = []
    for i in range(n):
        r = rng.random()
        rows.append(c if r < 0.35 else (c[::-1] if r < 0.7 else rng.permutation(m)))
    return np.array(rows)


# ------------------------------------------------------------------ Algorithm 2

def test_dp_footrule_approaches_the_optimum_as_epsilon_grows():
    rng = np.random.default_rng(0)
    orders = hard_profile(rng, 200, 6)
    opt = footrule_cost(footrule_optimal_order(orders), orders)
    for delta in (0.0, 1e-6):
        means = []
        for eps in (0.1, 10.0, 1e5):
            ex = np.array([footrule_cost(dp_footrule(orders, epsilon=eps, delta=delta, rng=s).order,
                                         orders) - opt for s in range(40)])
            assert np.all(ex >= -1e-12)
            means.append((ex.mean(), ex.std(ddof=1) / math.sqrt(ex.size)))
        (m0, s0), (m1, s1), (m2, _) = means
        assert m0 > m1 + 2 * math.hypot(s0, s1)  # strictly better with more budget
        assert m2 == 0.0  # essentially noise-free: the exact optimum


@pytest.mark.parametrize("noise", ["laplace", "gaussian", "local"])
def test_per_run_bounds_hold_in_every_run(noise):
    """App. E.1: F(psi) - OPT_F <= 2 m max|C~ - C| and K(psi) <= 2 OPT_K + 2 m max|C~ - C|."""
    rng = np.random.default_rng(1)
    m = 5
    orders = hard_profile(rng, 30, m)
    C = footrule_cost_matrix(orders)
    opt_f = footrule_cost(footrule_optimal_order(orders), orders)
    kem = lambda p: np.mean([kendall_count(p, o) for o in orders])
    opt_k = min(kem(np.array(p)) for p in itertools.permutations(range(m)))
    for s in range(40):
        if noise == "local":
            res = ldp_footrule(orders, epsilon=3.0, rng=s)
        else:
            res = dp_footrule(orders, epsilon=1.0, delta=1e-6 if noise == "gaussian" else 0.0, rng=s)
        err = np.max(np.abs(res.release.costs - C))
        assert footrule_cost(res.order, orders) - opt_f <= 2 * m * err + 1e-9
        assert kem(res.order) <= 2 * opt_k + 2 * m * err + 1e-9
        assert res.guarantee.private


def _cp(k, N, a=1e-4):
    lo = beta_dist.ppf(a, k, N - k + 1) if k > 0 else 0.0
    hi = beta_dist.ppf(1 - a, k + 1, N - k) if k < N else 1.0
    return lo, hi


def _output_audit(run, D, Dp, N):
    """Black-box: lower confidence bound of max_O ln P[O|D]/P[O|D'] over output orders."""
    outs = [np.array([tuple(run(data, s)) for s in range(N)]) for data in (D, Dp)]
    best = -np.inf
    for o in {tuple(r) for r in outs[0]} | {tuple(r) for r in outs[1]}:
        ka = int(np.all(outs[0] == o, axis=1).sum())
        kb = int(np.all(outs[1] == o, axis=1).sum())
        for x, y in ((ka, kb), (kb, ka)):
            lo, _ = _cp(x, N)
            _, hi = _cp(y, N)
            if lo > 0:
                best = max(best, math.log(lo / hi))
    return best


@pytest.mark.slow
def test_dp_footrule_output_audit_with_under_noised_control(monkeypatch):
    """Output-space audit (m = 3, one ranking: identity vs reversal). Post-processing by the
    assignment hides most of the release's privacy loss, so this audit only has power against
    gross under-noising (noise / 20); the release-level audit in tests/mechanisms/test_tree.py
    catches noise / 4."""
    eps = 1.0
    D, Dp = np.array([[0, 1, 2]]), np.array([[2, 1, 0]])
    run = lambda data, s: dp_footrule(data, epsilon=eps, rng=s).order
    assert _output_audit(run, D, Dp, 4000) <= eps
    orig = tree.parallel_sensitivity
    monkeypatch.setattr(tree, "parallel_sensitivity", lambda layout, p: orig(layout, p) / 20)
    assert _output_audit(run, D, Dp, 4000) > eps


# ------------------------------------------------------------------ private Kemeny variants

@pytest.mark.parametrize("variant", ["one-release", "lopsided", "buckets"])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_ptas_variants_find_the_kemeny_optimum_with_a_large_budget(variant, delta):
    rng = np.random.default_rng(3)
    orders = hard_profile(rng, 400, 5)
    W = Rankings.from_orders(orders).pairwise_matrix()
    opt = kemeny_cost(brute_wfas(W), W)
    res = dp_ptas(orders, epsilon=1e5, delta=delta, variant=variant, solver=brute_wfas,
                  buckets=2, rng=0)
    assert res.details["variant"] == variant
    assert kemeny_cost(res.order, W) == pytest.approx(opt, abs=1e-9)
    assert res.guarantee.epsilon == 1e5 and res.guarantee.delta == delta
    if variant == "lopsided":
        assert res.details["bounded"]


def test_ptas_auto_dispatch_uses_public_quantities_only():
    rng = np.random.default_rng(4)
    small = hard_profile(rng, 30, 5)
    assert dp_ptas(small, epsilon=1.0, solver=brute_wfas, rng=0).details["variant"] == "buckets"
    big = np.repeat(small, 4000, axis=0)
    assert dp_ptas(big, epsilon=1.0, delta=1e-6, solver=brute_wfas, rng=0).details["variant"] == "lopsided"
    # same public (n, m, eps, delta), different data: same variant
    other = np.repeat(np.array([rng.permutation(5) for _ in range(30)]), 4000, axis=0)
    assert dp_ptas(other, epsilon=1.0, delta=1e-6, solver=brute_wfas, rng=0).details["variant"] == "lopsided"


def test_ptas_input_validation():
    o = np.array([[0, 1, 2]])
    with pytest.raises(InputError):
        dp_ptas(o, epsilon=1.0, variant="nope", solver=brute_wfas)
    with pytest.raises(InputError):
        dp_ptas(o, epsilon=1.0, variant="buckets", buckets=5, solver=brute_wfas)
    with pytest.raises(InputError):
        dp_ptas(o, epsilon=1.0, weights=[0.5], solver=brute_wfas)
    assert dp_ptas(np.array([[0]]), epsilon=1.0, solver=brute_wfas).order.tolist() == [0]


def test_clip_is_the_l1_projection_and_within_twice_the_error():
    rng = np.random.default_rng(5)
    for _ in range(50):
        m = 5
        W = pairwise_matrix.matrix_from_upper(rng.random(m * (m - 1) // 2), m)
        noisy = W + rng.normal(0, 0.5, (m, m))
        c = pairwise_matrix.clip_pairs(noisy)
        off = ~np.eye(m, dtype=bool)
        assert np.all((c[off] >= 0) & (c[off] <= 1))
        np.testing.assert_allclose((c + c.T)[off], 1.0)
        assert np.abs(c - W)[off].sum() <= 2 * np.abs(noisy - W)[off].sum() + 1e-9
        # pairwise minimiser: brute force over a grid
        x, y = noisy[0, 1], noisy[1, 0]
        grid = np.linspace(0, 1, 2001)
        best = np.min(np.abs(grid - x) + np.abs(1 - grid - y))
        assert abs(c[0, 1] - x) + abs(c[1, 0] - y) <= best + 1e-9


# ------------------------------------------------------------------ privacy accounting audits

class _Recorder:
    def __init__(self, monkeypatch):
        self.calls = []
        orig = pairwise_matrix.Budget.draw

        def draw(budget, scale, size, rng, n=None):
            self.calls.append((budget.noise, float(scale), size))
            return orig(budget, scale, size, rng, n)

        monkeypatch.setattr(pairwise_matrix.Budget, "draw", draw)


def _all_perms(m):
    return np.array(list(itertools.permutations(range(m))))


def _max_change(vectors, p):
    best = 0.0
    step = max(1, 2_000_000 // max(1, vectors.size))
    for i in range(0, len(vectors), step):
        d = vectors[i:i + step, None, :] - vectors[None, :, :]
        best = max(best, float(np.max(np.sum(np.abs(d) ** p, axis=-1))))
    return best ** (1 / p)


def _same_bucket_vector(order, m, B):
    """s-contribution of one ranking: ordered pairs (u, v), same bucket, u first."""
    sizes = [len(a) for a in np.array_split(np.arange(m), B)]
    bucket = np.repeat(np.arange(B), sizes)[positions_of(order)]
    pos = positions_of(order)
    return ((bucket[:, None] == bucket[None, :]) & (pos[:, None] < pos[None, :])).ravel().astype(float)


@pytest.mark.parametrize("m,B", [(6, 2), (6, 3), (6, 4), (5, 2)])
def test_algorithm3_same_bucket_release_is_calibrated_and_paper_scale_is_not(monkeypatch, m, B):
    """Exact audit of Algorithm 3's s-release (Laplace, half of epsilon): the brute-force L1
    sensitivity over all ranking pairs gives the privacy spent by the library's scale (= eps/2)
    and by the paper's printed scale m^2/(2 n eps B) (which overspends by 4(1 - B/m))."""
    eps, n = 1.0, 7
    vecs = np.array([_same_bucket_vector(p, m, B) for p in _all_perms(m)])
    delta1 = _max_change(vecs, 1) / n
    assert delta1 * n == 2 * same_bucket_pairs(m, B)
    rec = _Recorder(monkeypatch)
    orders = np.array([np.random.default_rng(i).permutation(m) for i in range(n)])
    dp_ptas(orders, epsilon=eps, variant="buckets", buckets=B, solver=brute_wfas, rng=0)
    (_, scale_s, size_s), (_, scale_t, _) = rec.calls
    assert size_s == m * (m - 1)
    spent_s = delta1 / scale_s
    assert spent_s == pytest.approx(eps / 2)
    # two-way-marginal cells: brute force as well
    iu = np.triu_indices(m, 1)
    sizes = [len(a) for a in np.array_split(np.arange(m), B)]
    def cells(order):
        bk = np.repeat(np.arange(B), sizes)[positions_of(order)]
        v = np.zeros((len(iu[0]), B, B))
        v[np.arange(len(iu[0])), bk[iu[0]], bk[iu[1]]] = 1
        return v[:, ~np.eye(B, dtype=bool)].ravel()
    cvecs = np.array([cells(p) for p in _all_perms(m)])
    spent_t = _max_change(cvecs, 1) / n / scale_t
    assert spent_s + spent_t <= eps * (1 + 1e-9)
    # the paper's printed Laplace scale for the s-part: privacy spent far above eps/2
    paper_scale = m ** 2 / (2 * n * eps * B)
    assert delta1 / paper_scale > 1.5 * (eps / 2)
    assert delta1 / paper_scale + spent_t > eps


def test_algorithm3_gaussian_release_spends_exactly_mu(monkeypatch):
    m, B, n, eps, dlt = 6, 3, 9, 1.0, 1e-6
    rec = _Recorder(monkeypatch)
    orders = np.array([np.random.default_rng(i).permutation(m) for i in range(n)])
    dp_ptas(orders, epsilon=eps, delta=dlt, variant="buckets", buckets=B, solver=brute_wfas, rng=0)
    vecs = np.array([_same_bucket_vector(p, m, B) for p in _all_perms(m)])
    d2 = _max_change(vecs, 2) / n
    (_, sd_s, _), (_, sd_t, _) = rec.calls
    K = m * (m - 1) // 2 - same_bucket_pairs(m, B)
    mu_sq = (d2 / sd_s) ** 2 + (math.sqrt(2 * K) / n / sd_t) ** 2
    assert mu_sq == pytest.approx(noise.discrete_gaussian_mu(eps, dlt) ** 2)


def _upper_vector(order):
    pos = positions_of(order)
    iu = np.triu_indices(len(order), 1)
    return (pos[iu[0]] < pos[iu[1]]).astype(float)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_algorithm4_wrapper_spends_exactly_the_budget(monkeypatch, delta):
    """Every noisy stage of the Lemma B.11 wrapper around Algorithm 4, audited against brute-force
    sensitivities (including the selection's, for the two released candidates)."""
    m, n, eps = 4, 6000, 2.0
    rng = np.random.default_rng(6)
    orders = np.repeat(hard_profile(rng, 20, m), n // 20, axis=0)
    rec = _Recorder(monkeypatch)
    solved = []
    def solver(W):
        solved.append(brute_wfas(W))
        return solved[-1]
    res = dp_ptas(orders, epsilon=eps, delta=delta, variant="lopsided", solver=solver, rng=1)
    assert res.details["bounded"] and len(solved) == 2
    perms = _all_perms(m)
    up = np.array([_upper_vector(p) for p in perms])
    p = 1 if delta == 0 else 2
    d_up = _max_change(up, p) / n
    kd = np.array([[kendall_count(solved[0], q) - kendall_count(solved[1], q)] for q in perms], float)
    d_sel = _max_change(kd, p) / n
    sens = [d_up, d_up, d_up, d_sel]
    assert [c[2] for c in rec.calls[:3]] == [m * (m - 1) // 2] * 3
    if delta == 0:
        spent = sum(s / c[1] for s, c in zip(sens, rec.calls) if s > 0)
        assert spent == pytest.approx(eps)
    else:
        mu_sq = sum((s / c[1]) ** 2 for s, c in zip(sens, rec.calls) if s > 0)
        assert mu_sq <= noise.discrete_gaussian_mu(eps, delta) ** 2 * (1 + 1e-9)
        # the paper's printed scales sigma = m/(n sqrt(rho)) for both Algorithm 4 stages (all of
        # rho to Algorithm 4): zCDP spent = (5/4)(1 - 1/m) rho, i.e. over budget for m >= 5
        rho = 1.0
        M = m * (m - 1) / 2
        sigma = m / (n * math.sqrt(rho))
        spent_rho = (math.sqrt(M) / n) ** 2 / (2 * sigma ** 2) + (2 * math.sqrt(M) / n) ** 2 / (2 * sigma ** 2)
        assert spent_rho == pytest.approx(1.25 * (1 - 1 / m) * rho)
        assert 1.25 * (1 - 1 / 8) * rho > rho


def test_one_release_spends_exactly_the_budget(monkeypatch):
    m, n, eps = 5, 50, 0.5
    rec = _Recorder(monkeypatch)
    orders = np.array([np.random.default_rng(i).permutation(m) for i in range(n)])
    dp_ptas(orders, epsilon=eps, variant="one-release", solver=brute_wfas, rng=0)
    up = np.array([_upper_vector(p) for p in _all_perms(m)])
    ((_, b, size),) = rec.calls
    assert size == m * (m - 1) // 2
    assert _max_change(up, 1) / n / b == pytest.approx(eps)


def test_kappa_must_be_a_number_in_its_range():
    profile = Rankings.from_orders(np.array([[0, 1, 2], [1, 0, 2], [0, 2, 1]]))
    # text was read as a number, and an integer too large for a float escaped as an OverflowError
    with pytest.raises(InputError, match="kappa must be a number, got str"):
        dp_footrule(profile, epsilon=1.0, kappa="1.5", rng=0)
    with pytest.raises(InputError, match="kappa must be a number: an integer too large"):
        ldp_footrule(profile, epsilon=1.0, kappa=10 ** 400, rng=0)
    with pytest.raises(InputError, match=r"kappa must lie in \[1, 2\)"):
        dp_footrule(profile, epsilon=1.0, kappa=2, rng=0)
