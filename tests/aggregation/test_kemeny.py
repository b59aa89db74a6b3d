"""Exact and heuristic Kemeny solvers, KwikSort and its query cap."""
import glob
import itertools
import time

import numpy as np
import pytest

from privrank.aggregation import kemeny as K
from privrank.aggregation import kemeny_exact as E
from privrank.aggregation import kemeny_heuristics as H
from privrank.data import datasets
from privrank.data.io import read_rankings
from privrank.data.rankings import Rankings
from privrank.errors import InputError
from privrank.metrics import kemeny_cost
from privrank.simulate import sample_mallows

TABLE1 = [list("MSNCA"), list("AMNCS"), list("NCSMA"), list("MSCNA")]


def brute_force(W):
    """Least Kemeny cost over all m! orders, and the set of orders attaining it."""
    m = W.shape[0]
    perms = np.array(list(itertools.permutations(range(m))))
    s, t = np.triu_indices(m, 1)
    costs = W[perms[:, t], perms[:, s]].sum(axis=1)
    assert kemeny_cost(perms[-1], W) == pytest.approx(costs[-1])
    best = costs.min()
    return best, {tuple(p) for p in perms[costs <= best + 1e-12]}


def random_matrices(rng, m, count):
    """Probability-constraint matrices and arbitrary real (noisy, unclipped) ones."""
    for k in range(count):
        if k % 2:
            yield rng.normal(0.5, 0.6, (m, m))
        else:
            upper = rng.random(m * (m - 1) // 2)
            W = np.zeros((m, m))
            W[np.triu_indices(m, 1)] = upper
            yield W + np.tril(1 - W.T, -1)


def test_table1_optimum_and_optimal_set():
    R = Rankings.from_labels(TABLE1, items=list("MSNCA"))
    W = R.pairwise_matrix()
    best, optimal = brute_force(W)
    assert best == pytest.approx(3.0)
    assert {"".join(R.items[i] for i in p) for p in optimal} == {"MNCSA", "MNSCA", "MSNCA"}
    for solve in (E.exact_dp, E.exact_ilp, E.exact_kemeny):
        assert tuple(solve(W)) in optimal


@pytest.mark.parametrize("m", [1, 2, 3, 5, 7])
def test_exact_solvers_equal_brute_force(rng, m):
    for W in random_matrices(rng, m, 12):
        best, _ = brute_force(W)
        assert kemeny_cost(E.exact_dp(W), W) == pytest.approx(best, abs=1e-9)
        assert kemeny_cost(E.exact_ilp(W), W) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("m", [1, 2, 4, 7, 9])
def test_exact_dp_on_a_stack_equals_each_matrix_alone(rng, m, monkeypatch):
    Ws = np.stack(list(random_matrices(rng, m, 20)))
    Ws[3] = 0.5  # an all-tie matrix: ties are broken as for the matrix alone
    monkeypatch.setattr(E, "_DP_CELLS", 7 * (1 << m) * m)  # chunks of 7 matrices: the chunking is exercised
    np.testing.assert_array_equal(E.exact_dp(Ws), np.stack([E.exact_dp(W) for W in Ws]))
    np.testing.assert_array_equal(K.solve_many(Ws, "auto"), E.exact_dp(Ws))
    orders = K.solve_many(Ws, "local-search", rng=0)
    assert orders.shape == (20, m) and np.all(np.sort(orders, axis=1) == np.arange(m))
    with pytest.raises(InputError, match="stack"):
        K.solve_many(Ws[0], "exact")


def test_ilp_equals_dp_on_hard_near_tie_matrices(rng):
    for m in (10, 13):
        for W in random_matrices(rng, m, 3):
            W = 0.5 + 0.05 * (W - 0.5)  # tiny margins: many cycles for the lazy constraints
            assert kemeny_cost(E.exact_ilp(W), W) == pytest.approx(kemeny_cost(E.exact_dp(W), W), abs=1e-9)


def test_kwiksort_asks_each_pair_at_most_once_and_pivots_meet_their_subproblem(rng):
    m = 30
    W = next(random_matrices(rng, m, 1))
    asked = []

    def prefers(a, b):
        asked.extend(zip(a.tolist(), b.tolist()))
        return W[a, b] > 0.5

    run = H.kwiksort(m, prefers, rng)
    assert sorted(run.order) == list(range(m)) and run.queries == len(asked)
    pairs = [frozenset(p) for p in asked]
    assert len(pairs) == len(set(pairs))
    # every pair a KwikSort output puts in the order opposite to the answer was never asked
    pos = np.argsort(run.order)
    for a, b in asked:
        assert (pos[a] < pos[b]) == (W[a, b] > 0.5)


def test_kwiksort_sorts_a_transitive_matrix_and_obeys_a_query_budget(rng):
    m = 40
    truth = rng.permutation(m)
    rank = np.argsort(truth)
    prefers = lambda a, b: rank[a] < rank[b]
    assert np.array_equal(H.kwiksort(m, prefers, rng).order, truth)
    for budget in (0, 10, 60, 150):
        run = H.kwiksort(m, prefers, rng, max_queries=budget)
        assert run.queries <= budget and sorted(run.order) == list(range(m))
        pos = np.argsort(run.order)
        grouped = {i for g in run.unresolved for i in g}
        for g in run.unresolved:  # each unresolved group sits in one contiguous block
            assert np.ptp(pos[g]) == len(g) - 1
        # items outside unresolved groups are in their true relative order
        rest = [i for i in run.order if i not in grouped]
        assert np.all(np.diff(rank[rest]) > 0)
    assert len(H.kwiksort(m, prefers, rng, max_queries=0).unresolved) == 1


def test_query_cap_matches_the_notes_and_bounds_the_tail():
    # alabi.md §6.3 table (zeta = 1, p = m^-4)
    assert [H.kwiksort_query_cap(m) for m in (20, 50, 60, 100, 200)] == [150, 554, 706, 1361, 3205]
    assert H.kwiksort_query_cap(5) == 10  # the bound exceeds C(5, 2): capped
    # a loose cap with p = 0.2: the empirical exceedance on random tournaments stays below it
    rng = np.random.default_rng(9)
    m = 20
    q = H.kwiksort_query_cap(m, 0.2)
    runs = [H.kwiksort(m, lambda a, b, T=rng.random((m, m)): T[a, b] > T[b, a], rng).queries
            for _ in range(300)]
    over = np.mean(np.array(runs) > q)
    assert over <= 0.2  # Chernoff bound; observed rate is far below it
    assert max(runs) <= H.kwiksort_query_cap(m)


def test_local_search_never_increases_cost_and_ends_at_a_local_optimum(rng):
    for W in random_matrices(rng, 8, 10):
        start = rng.permutation(8)
        out = H.local_search(W, start)
        c = kemeny_cost(out, W)
        assert c <= kemeny_cost(start, W) + 1e-12
        for src in range(8):  # no single insertion move improves
            for dst in range(8):
                moved = np.insert(np.delete(out, src), dst, out[src])
                assert kemeny_cost(moved, W) >= c - 1e-9
    with pytest.raises(InputError):
        H.local_search(np.eye(3), [0, 1, 1])


def test_borda_and_copeland():
    R = Rankings.from_labels(TABLE1, items=list("MSNCA"))
    W = R.pairwise_matrix()
    assert "".join(R.items[i] for i in H.borda(W)) == "MNSCA"  # wins 3, 2, 2.25, 1.75, 1
    # Copeland: M 4, N 2.5, S 2, C 1.5, A 0
    assert "".join(R.items[i] for i in H.copeland(W)) == "MNSCA"
    cyc = np.array([[0, .6, .4], [.4, 0, .6], [.6, .4, 0]])
    assert list(H.copeland(cyc)) == [0, 1, 2]  # all tie in both scores: by index


@pytest.mark.parametrize("name", K.SOLVERS)
def test_solver_table(name, rng):
    W = next(random_matrices(rng, 9, 1))
    order = K.wfas_solver(name, rng=0, best_of=3)(W)
    assert sorted(order) == list(range(9))
    if name in ("auto", "exact"):  # exact_dp equals brute force (test above)
        assert kemeny_cost(order, W) == pytest.approx(kemeny_cost(E.exact_dp(W), W))
    with pytest.raises(InputError):
        K.wfas_solver("nope")


def _files(folder, pattern):
    root = datasets.data_dir()
    found = [] if root is None else sorted(glob.glob(str(root / folder / pattern)))
    if not found:
        pytest.skip(f"{folder} not available (../shared/data or PRIVRANK_DATA)")
    return found


def test_exact_on_every_preflib_small_complete_and_netflix_file():
    files = _files("preflib_small_complete", "*.soc") + _files("preflib_netflix", "*.soc")
    assert len(files) == 207
    for f in files:
        W = read_rankings(f).pairwise_matrix()
        order = E.exact_kemeny(W)
        if W.shape[0] <= 4:
            assert kemeny_cost(order, W) == pytest.approx(brute_force(W)[0], abs=1e-12)
        else:  # T-shirt (m = 11) and breakfast (m = 15): the two exact methods agree
            assert kemeny_cost(order, W) == pytest.approx(kemeny_cost(E.exact_ilp(W), W), abs=1e-12)
            assert kemeny_cost(order, W) == pytest.approx(kemeny_cost(E.exact_dp(W), W), abs=1e-12)


def test_exact_mallows_m100_within_a_minute():
    R = sample_mallows(100, phi=0.8, n=1000, rng=3)
    t0 = time.perf_counter()
    W = R.pairwise_matrix()
    order = E.exact_ilp(W)
    assert time.perf_counter() - t0 < 60
    # optimality certificate: the order agrees with every pairwise majority, so its cost
    # attains the lower bound sum_{i<j} min(w_ij, w_ji)
    iu = np.triu_indices(100, 1)
    assert np.all(W[np.ix_(order, order)][iu] >= 0.5)
    assert kemeny_cost(order, W) == pytest.approx(np.minimum(W, W.T)[iu].sum())


def test_ilp_time_limit_refuses_instead_of_answering_suboptimally():
    rng = np.random.default_rng(2)
    W = 0.5 + 0.05 * (next(random_matrices(rng, 70, 1)) - 0.5)
    with pytest.raises(InputError, match="did not finish"):
        E.exact_ilp(W, time_limit=0.3)


def _random_profile_matrix(m, n=100, seed=0):
    gen = np.random.default_rng(seed)
    pos = np.argsort(np.array([gen.permutation(m) for _ in range(n)]), axis=1)
    return (pos[:, :, None] < pos[:, None, :]).mean(axis=0)


def test_exact_refuses_a_large_cyclic_core_at_once_and_the_private_solver_falls_back():
    W = _random_profile_matrix(100)  # one cycle of 100 items: hours for the integer program
    t0 = time.perf_counter()
    with pytest.raises(E.ExactTooCostly, match="PRIVRANK_MAX_EXACT_ITEMS.*local-search"):
        E.exact_kemeny(W)
    with pytest.warns(RuntimeWarning, match="NOT proven optimal"):
        order = K.wfas_solver("exact", rng=0)(W)
    assert sorted(order) == list(range(100)) and time.perf_counter() - t0 < 20


def test_exact_solves_by_majority_components_and_insisting_is_bounded_in_time(monkeypatch):
    R = sample_mallows(60, phi=0.9, n=40, rng=1)  # small cycles among near neighbours only
    W = R.pairwise_matrix()
    parts = E.majority_components(W)
    assert max(p.size for p in parts) <= 25
    order = E.exact_kemeny(W)
    assert kemeny_cost(order, W) == pytest.approx(kemeny_cost(E.exact_ilp(W), W), abs=1e-9)
    monkeypatch.setenv("PRIVRANK_MAX_EXACT_ITEMS", "1000")
    monkeypatch.setenv("PRIVRANK_MAX_EXACT_SECONDS", "0.5")
    t0 = time.perf_counter()
    with pytest.raises(E.ExactTooCostly, match="PRIVRANK_MAX_EXACT_SECONDS"):
        E.exact_kemeny(_random_profile_matrix(100))
    assert time.perf_counter() - t0 < 10


def test_local_search_is_an_insertion_local_optimum_and_fast_at_1500_items():
    """Regression (issue 16): local search priced all m^2 moves to apply one, ~10 minutes at 1,500
    items. Per-item passes reach the same kind of optimum: no single insertion lowers the cost."""
    import time

    from privrank.metrics import kemeny_cost
    rng = np.random.default_rng(4)
    A = rng.random((9, 9))
    W = A / (A + A.T)
    np.fill_diagonal(W, 0.0)
    o = H.local_search(W, np.arange(9))
    c = kemeny_cost(o, W)
    for a in range(9):
        for t in range(9):
            moved = list(o)
            moved.insert(t, moved.pop(a))
            assert kemeny_cost(np.array(moved), W) >= c - 1e-12
    A = rng.random((1500, 1500))
    W = A / (A + A.T)
    np.fill_diagonal(W, 0.0)
    start = time.perf_counter()
    o = H.local_search(W, H.borda(W))
    assert time.perf_counter() - start < 60 and kemeny_cost(o, W) < kemeny_cost(H.borda(W), W)


def noisy_matrices(seed, m, count):
    """Released-looking matrices: a profile's ``w`` plus noise, entries outside [0, 1] kept."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        W = rng.random((m, m))
        yield (W + 1 - W.T) / 2 + rng.normal(0, 0.3, (m, m))


def bound_excesses(bound, matrices, optima):
    """How far ``bound(W)`` exceeds the brute-force optimum, for each matrix (<= 0 when valid)."""
    return np.array([bound(W) - best for W, best in zip(matrices, optima)])


@pytest.fixture
def no_subset_dp(monkeypatch):
    """Blocks of any size go through the triangle relaxation and branch and bound, not subset DP."""
    monkeypatch.setattr(E, "DP_MAX_ITEMS", 2)


def test_the_certified_bound_never_exceeds_the_optimum_and_a_broken_one_is_caught(no_subset_dp, monkeypatch):
    matrices = list(noisy_matrices(5, 8, 10)) + list(random_matrices(np.random.default_rng(6), 8, 4))
    optima = [brute_force(W)[0] for W in matrices]
    rng = np.random.default_rng(0)
    for seconds in (0.0, 10.0):  # the closed form, then the relaxation and branch and bound
        excess = bound_excesses(lambda W, s=seconds: E.certify(W, rng.permutation(8), time_limit=s,
                                                               improve=False).lower_bound, matrices, optima)
        assert np.all(excess <= 1e-9)
    tight = bound_excesses(lambda W: E.certify(W, time_limit=1.0, rng=0).lower_bound, matrices, optima)
    assert np.all(tight <= 1e-9) and np.all(tight > -1e-6)  # exact at this size: every one proved
    # a broken relaxation (triangle rows capped at 1/2: true orders cut off) must be caught
    solve = E.milp
    monkeypatch.setattr(E, "milp", lambda c, constraints, **kw: solve(
        c, constraints=E.LinearConstraint(constraints.A, 0.0, 0.5), **kw))
    broken = bound_excesses(lambda W: E.certify(W, rng.permutation(8), time_limit=0.3,
                                                improve=False).lower_bound, matrices, optima)
    assert np.any(broken > 1e-3)


def test_the_component_split_keeps_the_bound_valid_and_proves_block_orders(rng):
    """Blocks that beat each other by strict majorities: the bound adds the blocks' bounds and the
    pairs across blocks, valid for unclipped weights; small blocks are proved by subset DP."""
    m = 8
    for W in noisy_matrices(7, m, 6):
        W[:4, 4:] += 1.0  # items 0-3 beat the rest by a strict majority (lower triangle mirrors)
        W[4:, :4] -= 1.0
        assert len(E.majority_components(W)) >= 2
        c = E.certify(W, rng.permutation(m), rng=0)
        best = brute_force(W)[0]
        assert c.lower_bound <= best + 1e-9 and c.proved_optimal and c.gap == 0.0
        assert c.cost == pytest.approx(best, abs=1e-9) and set(c.order[:4]) == {0, 1, 2, 3}


def test_a_seeded_certificate_gives_the_same_order_whatever_the_time(monkeypatch):
    """The order is searched with a fixed amount of work, so a seeded run's order does not depend on
    the machine's speed: a hundredth of a second and two seconds give the same order (only the
    bound may differ). The broken variant, a search that makes as many tries as the clock allows,
    is a slow machine's few tries against a fast one's many: they give another order here."""
    R = sample_mallows(50, phi=0.95, n=1000, rng=0)
    W = R.pairwise_matrix() + np.triu(np.random.default_rng(0).laplace(0, 1.225, (50, 50)), 1)  # eps = 1
    quick, long = (E.certify(W, time_limit=s, rng=3) for s in (0.01, 0.5))
    np.testing.assert_array_equal(quick.order, long.order)
    assert long.lower_bound >= quick.lower_bound - 1e-9
    search = E._perturbed_search  # a slow machine's few tries (3 without progress) in the fast one's time
    monkeypatch.setattr(E, "_perturbed_search", lambda B, order, gen: search(B, order, gen, patience=3))
    assert not np.array_equal(E.certify(W, time_limit=0.01, rng=3).order, quick.order)


def test_certify_keeps_or_improves_the_order_and_honours_its_time_budget():
    R = sample_mallows(50, phi=0.8, n=1000, rng=0)
    W = np.clip(R.pairwise_matrix() + np.triu(np.random.default_rng(0).laplace(0, 1.225, (50, 50)), 1), 0, 1)
    W = np.triu(W, 1) + np.tril(1 - np.triu(W, 1).T, -1)  # a private release at eps = 1, clipped
    start = H.local_search(W, H.borda(W))
    t0 = time.perf_counter()
    c = E.certify(W, start, time_limit=2.0, rng=0)
    assert time.perf_counter() - t0 < 6
    assert c.cost <= kemeny_cost(start, W) + 1e-12 and c.cost == pytest.approx(kemeny_cost(c.order, W))
    kept = E.certify(W, start, time_limit=0.0, improve=False)
    np.testing.assert_array_equal(kept.order, start)
    assert kept.lower_bound <= c.lower_bound + 1e-9 and not kept.proved_optimal
    ties = np.full((16, 16), 0.5)  # one component (ties link every pair), its majority transitive
    ties[1, 0], ties[0, 1] = 0.6, 0.4
    late = E.certify(ties, np.arange(16), improve=False)  # 0 before 1: the one pair against the majority
    assert late.lower_bound == pytest.approx(59.9) and late.gap == pytest.approx(0.2)
    with pytest.raises(InputError, match="time_limit"):
        E.certify(W, start, time_limit=-1)
    with pytest.raises(InputError, match="permutation"):
        E.certify(W, start[:-1])


def test_a_transitive_majority_is_proved_optimal_at_once():
    W = sample_mallows(100, phi=0.8, n=1000, rng=3).pairwise_matrix()
    t0 = time.perf_counter()
    c = E.certify(W, H.borda(W)[::-1], time_limit=60)
    assert c.proved_optimal and c.gap == 0.0 and time.perf_counter() - t0 < 10
    assert c.cost == pytest.approx(np.minimum(W, W.T)[np.triu_indices(100, 1)].sum())


def test_a_heuristic_release_carries_its_certified_gap():
    import privrank as pr

    rng = np.random.default_rng(2)
    m = 30
    R = pr.Rankings.from_orders(np.array([np.argsort(np.arange(m) + rng.normal(0, 8, m)) for _ in range(500)]))
    res = pr.private_kemeny(R, epsilon=1.0, rng=1)  # auto: local search above 20 items
    d = res.details
    assert d["optimality_gap"] == pytest.approx(d["noisy_cost"] - d["noisy_cost_lower_bound"])
    assert d["optimality_gap"] >= 0 and isinstance(d["proved_optimal"], bool)
    from privrank.mechanisms.pairwise_matrix import clip_pairs
    assert kemeny_cost(res.order, clip_pairs(res.release.matrix)) == pytest.approx(d["noisy_cost"])
    quick = pr.private_kemeny(R, epsilon=1.0, certify_seconds=0, rng=1).details  # the same release
    assert quick["noisy_cost_lower_bound"] <= d["noisy_cost_lower_bound"] + 1e-9
    assert d["noisy_cost"] <= quick["noisy_cost"] + 1e-9
    with pytest.raises(InputError, match="certify_seconds"):
        pr.private_kemeny(R, epsilon=1.0, certify_seconds=float("nan"), rng=1)
    assert d["solver_ran"] == "local-search"
    with pytest.warns(pr.UtilityWarning, match="NOT proven optimal"):  # exact refuses this cycle: local search runs
        fallback = pr.private_kemeny(R, epsilon=1.0, solver="exact", rng=1).details
    assert fallback["solver_ran"] == "local-search" and "optimality_gap" in fallback


@pytest.mark.parametrize("solver, ran", [("auto", "exact"), ("exact", "exact"), ("kwiksort", "kwiksort"),
                                         ("local-search", "local-search"), ("borda", "borda")])
def test_every_solver_result_says_which_solver_ran_and_its_certificate(solver, ran):
    import privrank as pr

    R = sample_mallows(8, phi=0.7, n=300, rng=4)
    d = pr.private_kemeny(R, epsilon=1.0, solver=solver, rng=1).details
    assert d["solver"] == solver and d["solver_ran"] == ran
    assert d["optimality_gap"] == pytest.approx(d["noisy_cost"] - d["noisy_cost_lower_bound"], abs=1e-9)
    assert d["proved_optimal"] is (d["optimality_gap"] <= 1e-9) or ran != "exact"
    if ran == "exact":
        assert d["proved_optimal"] and d["optimality_gap"] == 0.0
