"""Private Kemeny aggregation (Alabi et al.): privacy audits with negative controls, utility.

Privacy tests compute exact output distributions on tiny instances (alabi.md §7.2) or audit
the noise actually drawn against exact sensitivities. Each runs once as written and once on a
deliberately broken variant (too little noise), which the same test must catch.
"""
import itertools
import math
from functools import lru_cache

import numpy as np
import pytest
from scipy.stats import chisquare, norm

from privrank.aggregation import private_kemeny as pk
from privrank.aggregation.kemeny_exact import exact_kemeny
from privrank.aggregation.kemeny_heuristics import kwiksort
from privrank.data.rankings import Rankings
from privrank.errors import InputError
from privrank.mechanisms import pairwise_matrix, query_oracle
from privrank.mechanisms.noise import discrete_laplace_pmf
from privrank.metrics import kemeny_cost
from privrank.simulate import sample_mallows


class DrawRecorder:
    """Records (noise kind, scale, size) of every central noise draw."""

    def __init__(self, monkeypatch):
        self.calls = []
        orig = pairwise_matrix.Budget.draw

        def draw(budget, scale, size, rng, n=None):
            self.calls.append((budget.noise, float(scale), int(np.prod(size))))
            return orig(budget, scale, size, rng, n)

        monkeypatch.setattr(pairwise_matrix.Budget, "draw", draw)


def under_noise(monkeypatch, factor=0.5):
    """The broken variant: every central noise scale multiplied by ``factor`` < 1."""
    orig = pairwise_matrix.Budget.scale
    monkeypatch.setattr(pairwise_matrix.Budget, "scale",
                        lambda self, fraction, l1, l2: factor * orig(self, fraction, l1, l2))


def kwiksort_distribution(W, cdf):
    """Exact output distribution of KwikSort when ``j`` goes before pivot ``i`` iff
    ``W[j, i] + z > 1/2`` with fresh symmetric noise ``z`` (CDF ``cdf``) per pair: recursion
    over uniform pivots and all left/right splits (alabi.md §7.2.1)."""

    @lru_cache(maxsize=None)
    def dist(U):
        if not U:
            return {(): 1.0}
        out = {}
        for i in U:
            others = [j for j in U if j != i]
            p_left = [1.0 - cdf(0.5 - W[j, i]) for j in others]
            for mask in itertools.product((0, 1), repeat=len(others)):
                pr = np.prod([p if b else 1.0 - p for p, b in zip(p_left, mask)]) / len(U)
                left = tuple(j for j, b in zip(others, mask) if b)
                right = tuple(j for j, b in zip(others, mask) if not b)
                for a, pa in dist(left).items():
                    for c, pc in dist(right).items():
                        out[a + (i,) + c] = out.get(a + (i,) + c, 0.0) + pr * pa * pc
        return out

    return dist(tuple(range(W.shape[0])))


def query_noise_cdf(b, n):
    """CDF of the production query noise for n voters: discrete Laplace of scale b n on the
    counts (``count_noise``), divided by n -- its pmf summed below ``x``, exactly."""
    k = np.arange(-4000, 4001)
    cum = np.cumsum(discrete_laplace_pmf(k, b * n))
    return lambda x: float(cum[int(np.floor(x * n + 1e-9)) + 4000])


def neighbours(rng, m, n, count):
    """Profiles and their neighbour with one ranking reversed (every entry of w moves 1/n)."""
    for _ in range(count):
        o = np.array([rng.permutation(m) for _ in range(n)])
        o2 = o.copy()
        o2[0] = o2[0][::-1]
        yield Rankings.from_orders(o), Rankings.from_orders(o2)


def _dp_kwiksort_noise(R, monkeypatch, **kw):
    """Run the real DPKwikSort once and return the (kind, scale) of its query noise."""
    rec = DrawRecorder(monkeypatch)
    res = pk.dp_kwiksort(R, rng=0, **kw)
    assert not res.details["fallback"] and {c[0] for c in rec.calls} == {res.details["noise"]}
    assert len({c[1] for c in rec.calls}) == 1
    return rec.calls[0][1]


@pytest.mark.parametrize("broken", [False, True])
@pytest.mark.parametrize("m", [3, 4])
def test_dp_kwiksort_laplace_exact_output_audit(monkeypatch, m, broken):
    """Pure DPKwikSort with q = C(m,2) (no fallback, eps_1 = eps): for every output order,
    |ln P(order | profile) - ln P(order | neighbour)| <= eps, computed exactly."""
    if broken:
        under_noise(monkeypatch)
    eps = 1.0
    rng = np.random.default_rng(m)
    worst = 0.0
    for n in (3, 5, 7):  # odd: no noisy answer is exactly 1/2
        for R, R2 in neighbours(rng, m, n, 12):
            b = _dp_kwiksort_noise(R, monkeypatch, epsilon=eps)
            cdf = query_noise_cdf(b, n)
            P = kwiksort_distribution(R.pairwise_matrix(), cdf)
            Q = kwiksort_distribution(R2.pairwise_matrix(), cdf)
            worst = max(worst, max(abs(math.log(P[k] / Q[k])) for k in P))
    if broken:
        assert worst > eps  # half the noise: about 1.6 eps
    else:
        assert worst <= eps + 1e-9  # about 0.8 eps: the output is post-processing


@pytest.mark.parametrize("broken", [False, True])
def test_dp_kwiksort_gaussian_exact_hockey_stick_audit(monkeypatch, broken):
    """(eps, delta)-DPKwikSort: sum_o max(0, P(o) - e^eps P'(o)) <= delta both ways, exactly."""
    if broken:
        under_noise(monkeypatch)
    eps, delta = 1.0, 1e-3
    rng = np.random.default_rng(7)
    worst = 0.0
    for m, n in ((3, 3), (4, 3)):
        for R, R2 in neighbours(rng, m, n, 8):
            sd = _dp_kwiksort_noise(R, monkeypatch, epsilon=eps, delta=delta)
            cdf = lambda x: norm.cdf(x, scale=sd)
            P = kwiksort_distribution(R.pairwise_matrix(), cdf)
            Q = kwiksort_distribution(R2.pairwise_matrix(), cdf)
            for A, B in ((P, Q), (Q, P)):
                worst = max(worst, sum(max(0.0, A[k] - math.exp(eps) * B[k]) for k in A))
    if broken:
        assert worst > delta  # half the noise: about 0.01
    else:
        assert worst <= delta


def test_exact_distribution_describes_the_code():
    """The enumeration above is the distribution of the real DPKwikSort (chi-square, m = 3)."""
    R = Rankings.from_orders([[0, 1, 2], [2, 0, 1], [1, 0, 2]])
    runs = 2000
    outs = [tuple(pk.dp_kwiksort(R, epsilon=2.0, rng=s).order) for s in range(runs)]
    b = pk.dp_kwiksort(R, epsilon=2.0, rng=0).details["query_noise_scale"]
    P = kwiksort_distribution(R.pairwise_matrix(), query_noise_cdf(b, R.n_voters))
    keys = sorted(P)
    observed = np.array([outs.count(k) for k in keys])
    assert observed.sum() == runs
    # goodness of fit over the 6 orders; threshold 1e-4 (fixed seeds, no flakes)
    assert chisquare(observed, runs * np.array([P[k] for k in keys])).pvalue > 1e-4


def _spent(calls, n, delta):
    """Privacy spent by the recorded draws: every drawn entry has sensitivity 1/n (one query
    answer, or one upper-triangle entry of the fallback matrix, whose L1 / squared-L2
    sensitivity over the whole triangle is M/n / M/n^2). Laplace: sum size/(n b) (basic
    composition); Gaussian: mu^2 = sum size/(n sd)^2 (Gaussian-DP composition)."""
    if delta == 0:
        return sum(size / (n * scale) for _, scale, size in calls)
    return sum(size / (n * scale) ** 2 for _, scale, size in calls)


@pytest.mark.parametrize("broken", [False, True])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_dp_kwiksort_accounting_with_and_without_fallback(monkeypatch, delta, broken):
    """Every run, fallback or not, spends at most the budget: the query phase answers at most
    q queries and the fallback draws one fresh matrix (alabi.md §2.3, Theorem 5)."""
    if broken:
        under_noise(monkeypatch)  # the paper's printed Lap(q/(eps n)) for eps/2 is this
    eps = 1.0
    budget = eps if delta == 0 else pairwise_matrix.Budget(eps, delta).mu ** 2
    rng = np.random.default_rng(11)
    fallbacks, worst = 0, 0.0
    for run in range(30):
        m, n = 6, 20
        R = Rankings.from_orders(np.array([rng.permutation(m) for _ in range(n)]))
        rec = DrawRecorder(monkeypatch)
        res = pk.dp_kwiksort(R, epsilon=eps, delta=delta, queries=9, rng=run)
        query_draws = [c for c in rec.calls if c[2] < 15]
        assert sum(c[2] for c in query_draws) == res.details["queries"] <= 9
        fallbacks += res.details["fallback"]
        worst = max(worst, _spent(rec.calls, n, delta) / budget)
    assert 0 < fallbacks < 30  # both branches were exercised
    if broken:
        assert worst > 1.0
    else:
        assert worst <= 1.0 + 1e-9


@pytest.mark.parametrize("broken", [False, True])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_noisy_matrix_and_hay_accounting(monkeypatch, delta, broken):
    if broken:
        under_noise(monkeypatch)
    eps, n = 0.7, 15
    budget = eps if delta == 0 else pairwise_matrix.Budget(eps, delta).mu ** 2
    rng = np.random.default_rng(3)
    R = Rankings.from_orders(np.array([rng.permutation(5) for _ in range(n)]))
    spent = []
    for fn in (pk.private_kemeny, pk.hay_quicksort):
        rec = DrawRecorder(monkeypatch)
        res = fn(R, epsilon=eps, delta=delta, rng=1)
        assert res.guarantee.epsilon == eps and res.guarantee.delta == delta
        assert res.guarantee.unit == "one ranking" and res.guarantee.model == "central"
        spent.append(_spent(rec.calls, n, delta) / budget)
    # the noisy matrix spends exactly its budget; Hay's quicksort at most (fewer queries asked)
    if broken:
        assert max(spent) > 1.0
    else:
        assert spent[0] == pytest.approx(1.0) and spent[1] <= 1.0 + 1e-9


@pytest.mark.parametrize("broken", [False, True])
def test_exponential_mechanism_exact_audit(monkeypatch, broken):
    """Exact distribution over all orders: max log-ratio on neighbours <= eps."""
    if broken:
        orig = pk._exponential_utilities
        monkeypatch.setattr(pk, "_exponential_utilities",
                            lambda R: (lambda p, u, s: (p, u, s / 4))(*orig(R)))
    eps = 1.0
    rng = np.random.default_rng(5)
    worst = 0.0
    for m in (3, 4):
        for R, R2 in neighbours(rng, m, 2, 10):
            perms, P = pk.exponential_distribution(R, epsilon=eps)
            perms2, Q = pk.exponential_distribution(R2, epsilon=eps)
            assert np.array_equal(perms, perms2)
            worst = max(worst, float(np.max(np.abs(np.log(P / Q)))))
    if broken:
        assert worst > eps
    else:
        assert worst <= eps + 1e-9


def test_exponential_sampler_draws_from_its_distribution():
    R = Rankings.from_orders([[0, 1, 2], [1, 0, 2]])
    perms, P = pk.exponential_distribution(R, epsilon=1.5)
    runs = 2500
    index = {tuple(p): k for k, p in enumerate(perms)}
    counts = np.bincount([index[tuple(pk.exponential_kemeny(R, epsilon=1.5, rng=s).order)]
                          for s in range(runs)], minlength=len(perms))
    assert chisquare(counts, runs * P).pvalue > 1e-4
    with pytest.raises(InputError, match="m <= 8"):
        pk.exponential_kemeny(np.tile(np.arange(9), (2, 1)), epsilon=1.0)


class RecordingLocalOracle(query_oracle.LocalPairOracle):
    instances = []

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        RecordingLocalOracle.instances.append(self)


@pytest.mark.parametrize("broken", [False, True])
def test_ldp_per_voter_budget(monkeypatch, broken):
    """Every voter's reports, counted from the randomizers actually called, compose to at most
    eps: at most tau randomized-response answers plus at most one Duchi et al. fallback report
    (ldp-kwiksort), or exactly one report (ldp-matrix)."""
    RecordingLocalOracle.instances = []
    oracle_cls = RecordingLocalOracle
    if broken:  # the oracle gets the whole budget although the fallback also spends some
        class Broken(RecordingLocalOracle):
            def __init__(self, orders, *, epsilon, tau, rng=None):
                super().__init__(orders, epsilon=2 * epsilon, tau=tau, rng=rng)
        oracle_cls = Broken
    monkeypatch.setattr(pk, "LocalPairOracle", oracle_cls)
    rr_eps, djw_eps = [], []
    orig_rr, orig_djw = query_oracle.randomize_bits, pairwise_matrix.duchi_l2_records

    def rr(bits, epsilon, rng=None):
        rr_eps.append(float(epsilon))
        return orig_rr(bits, epsilon, rng)

    def djw(vectors, *, radius, epsilon, key, first_record=0):
        assert np.all(np.linalg.norm(vectors, axis=1) <= radius * (1 + 1e-12))
        djw_eps.append(float(epsilon))
        return orig_djw(vectors, radius=radius, epsilon=epsilon, key=key, first_record=first_record)

    monkeypatch.setattr(query_oracle, "randomize_bits", rr)
    monkeypatch.setattr(pairwise_matrix, "duchi_l2_records", djw)
    eps = 2.0
    rng = np.random.default_rng(8)
    worst, fallbacks = 0.0, 0
    for run in range(12):
        R = Rankings.from_orders(np.array([rng.permutation(6) for _ in range(60)]))
        rr_eps.clear(), djw_eps.clear()
        res = pk.ldp_kwiksort(R, epsilon=eps, tau=2 + run % 3, rng=run)
        oracle = RecordingLocalOracle.instances[-1]
        assert oracle.answers_per_voter.max() <= oracle.tau
        assert oracle.group_load.max() <= oracle.tau
        per_answer = max(rr_eps) if rr_eps else 0.0
        spent = oracle.answers_per_voter.max() * per_answer + (max(djw_eps) if djw_eps else 0.0)
        worst = max(worst, spent / eps)
        fallbacks += res.details["fallback"]
        assert res.guarantee.model == "local" and res.guarantee.epsilon == eps
    assert 0 < fallbacks < 12
    djw_eps.clear()
    pk.ldp_matrix(R, epsilon=eps, rng=0)
    assert djw_eps == [eps]
    if broken:
        assert worst > 1.0
    else:
        assert worst <= 1.0 + 1e-9


def test_local_group_cap_matches_the_notes():
    assert pk.local_group_cap(20, 150) == 24  # alabi.md §6.4
    assert pk.local_group_cap(100, 1361) == 43
    assert pk.local_group_cap(3, 3) == 3  # capped at C(3, 2): no fallback possible


# --------------------------------------------------------------------------------------------
# utility
# --------------------------------------------------------------------------------------------

def near_tie_profile(rng, n, m):
    """Half one ranking, half its reverse, some noise: small margins everywhere."""
    c = rng.permutation(m)
    u = rng.random(n)
    rows = np.array([rng.permutation(m) for _ in range(n)])
    rows[u < 0.4] = c
    rows[(u >= 0.4) & (u < 0.8)] = c[::-1]
    return Rankings.from_orders(rows)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_noisy_matrix_exact_solver_meets_its_explicit_bound(delta):
    """alabi.md §7.3.1: mean(K - OPT) <= 2 M E|noise| for the unclipped exact reduction,
    E|noise| = b (Laplace) or sd sqrt(2/pi) (Gaussian); one-sided with 4 SE."""
    rng = np.random.default_rng(21)
    R = near_tie_profile(rng, 60, 6)
    W = R.pairwise_matrix()
    opt = kemeny_cost(exact_kemeny(W), W)
    runs = [pk.private_kemeny(R, epsilon=2.0, delta=delta, solver="exact", rng=s) for s in range(80)]
    excess = np.array([kemeny_cost(r.order, W) - opt for r in runs])
    scale = runs[0].details["noise_scale"]
    e_abs = scale if delta == 0 else scale * math.sqrt(2 / math.pi)
    M = 15
    assert np.all(excess >= -1e-12) and excess.mean() > 0
    assert excess.mean() <= 2 * M * e_abs + 4 * excess.std(ddof=1) / math.sqrt(excess.size)


@pytest.mark.parametrize("method", ["noisy-matrix", "dp-kwiksort", "exponential", "ldp-matrix",
                                    "ldp-kwiksort"])
def test_private_methods_approach_the_optimum_as_epsilon_grows(method):
    fn = {"noisy-matrix": pk.private_kemeny, "dp-kwiksort": pk.dp_kwiksort,
          "exponential": pk.exponential_kemeny, "ldp-matrix": pk.ldp_matrix,
          "ldp-kwiksort": pk.ldp_kwiksort}[method]
    rng = np.random.default_rng(4)
    R = sample_mallows(6, phi=0.7, n=300, rng=rng)
    W = R.pairwise_matrix()
    opt = kemeny_cost(exact_kemeny(W), W)
    means = []
    for eps in (0.05, 1e6):
        ex = np.array([kemeny_cost(fn(R, epsilon=eps, rng=s).order, W) - opt for s in range(40)])
        means.append((ex.mean(), ex.std(ddof=1) / math.sqrt(ex.size)))
    (lo_eps, se0), (hi_eps, se1) = means
    assert lo_eps > hi_eps + 3 * math.hypot(se0, se1)
    if method in ("noisy-matrix", "exponential"):
        assert hi_eps == pytest.approx(0.0, abs=1e-12)  # exact solve of a (nearly) exact w
    elif method == "dp-kwiksort":  # KwikSort on w of a profile: <= 2 OPT in expectation
        assert hi_eps + opt <= 2 * opt + 4 * se1
    # the local methods keep a sampling floor ~ sqrt(m/n) at any epsilon (alabi.md §6.8)


@pytest.mark.slow
def test_hay_quicksort_error_does_not_vanish_but_dp_kwiksort_does():
    """Alabi et al. §1.2: with a budget that can run out, unresolved pairs stay random."""
    rng = np.random.default_rng(6)
    R = sample_mallows(8, phi=0.5, n=2000, rng=rng)
    W = R.pairwise_matrix()
    kwik = np.array([kemeny_cost(kwiksort(8, lambda a, b: W[a, b] > 0.5, s).order, W) for s in range(60)])
    hay = np.array([kemeny_cost(pk.hay_quicksort(R, epsilon=1e6, rng=s).order, W) for s in range(60)])
    dpk = np.array([kemeny_cost(pk.dp_kwiksort(R, epsilon=1e6, rng=s).order, W) for s in range(60)])
    se = lambda x: x.std(ddof=1) / math.sqrt(x.size)
    assert hay.mean() > kwik.mean() + 3 * math.hypot(se(hay), se(kwik))
    assert abs(dpk.mean() - kwik.mean()) <= 4 * math.hypot(se(dpk), se(kwik)) + 1e-12


def test_input_checks():
    R = Rankings.from_orders(np.array([[0, 1, 2, 3], [1, 0, 2, 3]]))
    with pytest.raises(InputError, match="n >= m"):
        pk.ldp_kwiksort(R, epsilon=1.0)
    with pytest.raises(InputError):
        pk.dp_kwiksort(R, epsilon=0.0)
    with pytest.raises(InputError):
        pk.dp_kwiksort(R, epsilon=1.0, queries=2, fallback_fraction=1.0)
    with pytest.raises(InputError):
        pk.private_kemeny(R, epsilon=1.0, delta=1.0)
    one = pk.dp_kwiksort(np.zeros((3, 1), dtype=int), epsilon=1.0)
    assert one.order.tolist() == [0]


@pytest.mark.parametrize("q", [0, 1])
def test_tiny_query_caps_take_the_fallback_without_answering(monkeypatch, q):
    """alabi.md §7.1.6: with q = 0 or 1 (m = 4 needs 3 comparisons at the first level) the
    fallback runs and no query answer is ever drawn; only the fresh matrix is."""
    rec = DrawRecorder(monkeypatch)
    R = Rankings.from_orders([[0, 1, 2, 3], [3, 2, 1, 0], [1, 0, 3, 2]])
    res = pk.dp_kwiksort(R, epsilon=1.0, queries=q, rng=0)
    assert res.details["fallback"] and res.details["queries"] == 0
    assert [c[2] for c in rec.calls] == [6]
    assert sorted(res.order) == [0, 1, 2, 3]


@pytest.mark.parametrize("release", [pk.private_kemeny, pk.ldp_matrix])
def test_a_solver_that_is_not_a_name_is_refused(release):
    R = Rankings.from_orders(np.array([[0, 1, 2], [1, 0, 2], [0, 2, 1]]))
    # an array was compared with "exact" before the solver was checked: numpy's "truth value ... is ambiguous"
    with pytest.raises(InputError, match="solver must be one of"):
        release(R, epsilon=1.0, solver=np.array(["exact", "auto"]), rng=0)


def test_the_exponential_mechanism_at_a_huge_epsilon_releases_the_optimum():
    R = Rankings.from_orders(np.array([[0, 1, 2], [1, 0, 2], [0, 2, 1], [0, 1, 2]]))
    # eps * utility overflowed to -inf and the probabilities were NaN (numpy's ValueError)
    res = pk.exponential_kemeny(R, epsilon=1e308, rng=0)
    assert res.order.tolist() == [0, 1, 2]
