"""The compiled kernels (:mod:`privrank.kernels`) give what their numpy loops give.

The Newton loop of the BTL fits on few items: the same scores to rounding, the same number of
steps, the same convergence, and the same hand-over to the line search and to LU where a full step
or Cholesky fails. The per-pair counts of raw outcomes: the same integers, in the same order.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privrank import kernels
from privrank.data.pair_counts import PairCounts
from privrank.pairwise import btl

KERNEL = kernels.compiled
compiled = pytest.mark.skipif(KERNEL is None, reason="privrank._kernels is not built here")


def compiler() -> str | None:
    """The C compiler the install would use (Python's configured one), if it is on this machine."""
    import shlex
    import shutil
    import sysconfig

    command = shlex.split(sysconfig.get_config_var("CC") or "cc")
    return shutil.which(command[0]) if command else None


def test_the_compiled_module_is_built():
    # the development install (make) compiles it where a compiler is; without it small fits are
    # about twice as slow, and the tests below check numpy's loops against themselves
    if KERNEL is None and compiler() is None:
        pytest.skip("no C compiler here: privrank runs on numpy alone (docs/install.md)")
    assert KERNEL is not None, "privrank._kernels was not built although a C compiler is here: pip install -e ."


def design(m, n, rng, *, debiased=False):
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    theta = rng.normal(0, 1, m)
    values = (rng.random(n) < 1 / (1 + np.exp(theta[b] - theta[a]))).astype(float)
    if debiased:  # debiased randomized response: record values outside [0, 1]
        values = (values - 0.27) / 0.46
    return PairCounts.from_records(m, a, b, values)


class Recorder:
    """The compiled module, recording the status of each call."""

    def __init__(self):
        self.statuses = []

    def full_steps(self, *args):
        it, gnorm, status = KERNEL.full_steps(*args)
        self.statuses.append(status)
        return it, gnorm, status


def both(monkeypatch, pc, lam, **kwargs):
    """``(compiled, numpy, statuses)``: ``newton_btl`` with the compiled loop and with numpy alone."""
    recorder = Recorder()
    try:
        monkeypatch.setattr(kernels, "compiled", recorder)
        compiled = btl.newton_btl(pc, lam, **kwargs)
        monkeypatch.setattr(kernels, "compiled", None)
        reference = btl.newton_btl(pc, lam, **kwargs)
    finally:
        monkeypatch.setattr(kernels, "compiled", KERNEL)
    return compiled, reference, recorder.statuses


def assert_same_fit(compiled, reference):
    theta, it, gnorm, ok, solver = compiled
    assert np.max(np.abs(theta - reference[0])) <= 1e-12 * max(1.0, np.max(np.abs(reference[0])))
    assert (it, ok, solver) == reference[1:2] + reference[3:]
    assert gnorm <= max(1e-9, 10 * reference[2])


@compiled
@pytest.mark.parametrize("m, n, lam, debiased, linear", [
    (2, 30, 0.0, False, False),
    (8, 200, 0.0, False, False),  # the maximum-likelihood fit (shift 1 1'/m)
    (32, 600, 0.0, False, False),
    (32, 2000, 1.0, True, False),  # a ridge-penalised fit of a debiased release
    (50, 3000, 0.3, False, True),  # objective perturbation: a linear term
    (btl.KERNEL_MAX_ITEMS, 5000, 0.5, True, False),
])
def test_the_compiled_loop_gives_numpys_fit(monkeypatch, m, n, lam, debiased, linear):
    rng = np.random.default_rng(m + n)
    pc = design(m, n, rng, debiased=debiased)
    kwargs = {"linear": rng.normal(0, 3, m)} if linear else {}
    if lam == 0.0:
        kwargs["theta0"] = btl._log_odds(pc, pc.items_compared())
    compiled, reference, statuses = both(monkeypatch, pc, lam, **kwargs)
    assert statuses == [0]  # the compiled loop ran the fit to its end
    assert compiled[3] and compiled[1] >= 2
    assert_same_fit(compiled, reference)


@compiled
def test_a_step_that_needs_a_line_search_goes_on_in_numpy(monkeypatch):
    rng = np.random.default_rng(0)
    pc = design(8, 60, rng)
    theta0 = rng.normal(0, 20, 8)  # far from the optimum: the first full step overshoots
    compiled, reference, statuses = both(monkeypatch, pc, 1e-3, theta0=theta0)
    assert statuses == [1]
    assert compiled[3] and compiled[1] > 5
    assert_same_fit(compiled, reference)


@compiled
def test_a_singular_newton_system_fails_as_numpys(monkeypatch):
    # two components, each balanced, and no ridge: the system is singular along their difference
    pc = PairCounts.from_records(4, [0, 1, 2, 3], [1, 0, 3, 2], [1.0, 1.0, 1.0, 1.0])
    recorder = Recorder()
    monkeypatch.setattr(kernels, "compiled", recorder)
    with pytest.raises(np.linalg.LinAlgError):
        btl.newton_btl(pc, 0.0, theta0=[1.0, 0.0, 0.0, 0.0])
    assert recorder.statuses == [2]
    monkeypatch.setattr(kernels, "compiled", None)
    with pytest.raises(np.linalg.LinAlgError):
        btl.newton_btl(pc, 0.0, theta0=[1.0, 0.0, 0.0, 0.0])


@compiled
def test_larger_item_sets_use_numpy(monkeypatch):
    recorder = Recorder()
    monkeypatch.setattr(kernels, "compiled", recorder)
    rng = np.random.default_rng(3)
    btl.newton_btl(design(btl.KERNEL_MAX_ITEMS + 1, 3000, rng), 1.0)
    btl.newton_btl(design(20, 300, rng), 1.0, solver="sparse")
    assert recorder.statuses == []
    btl.newton_btl(design(20, 300, rng), 1.0)
    assert recorder.statuses == [0]


@compiled
def test_a_wrong_step_is_caught(monkeypatch):
    """The comparison above can fail: a compiled loop that lands a little off the optimum (and
    says it converged) differs from numpy's fit."""
    rng = np.random.default_rng(5)
    pc = design(10, 300, rng)

    class Off:
        def full_steps(self, *args):
            it, gnorm, status = KERNEL.full_steps(*args)
            args[5][0] += 1e-7
            return it, gnorm, status

    monkeypatch.setattr(kernels, "compiled", Off())
    off = btl.newton_btl(pc, 1.0)
    monkeypatch.setattr(kernels, "compiled", None)
    with pytest.raises(AssertionError):
        assert_same_fit(off, btl.newton_btl(pc, 1.0))


@compiled
def test_the_module_refuses_arrays_it_cannot_read():
    i, j = np.array([0, 1]), np.array([1, 2])
    wins, totals, theta = np.array([1.0, 0.0]), np.array([1.0, 1.0]), np.zeros(3)
    with pytest.raises(TypeError, match="float64"):
        KERNEL.full_steps(i, j, wins.astype(np.float32), totals, None, theta, 1.0, 0.0, 1e-9, 10)
    with pytest.raises(TypeError, match="int64"):
        KERNEL.full_steps(i.astype(np.int32), j, wins, totals, None, theta, 1.0, 0.0, 1e-9, 10)
    with pytest.raises(TypeError, match="expected length"):
        KERNEL.full_steps(i, j[:1], wins, totals, None, theta, 1.0, 0.0, 1e-9, 10)
    with pytest.raises(ValueError, match="out of range"):
        KERNEL.full_steps(i, np.array([1, 3]), wins, totals, None, theta, 1.0, 0.0, 1e-9, 10)
    assert KERNEL.full_steps(i, j, wins, totals, None, theta, 1.0, 0.0, 1e-9, 10)[2] == 0


@compiled
def test_the_nfl_season_fits_the_same_either_way(monkeypatch):
    import privrank as pr
    from privrank.data.datasets import load_nfl

    games = load_nfl(2019)
    compiled = pr.fit_btl(games)
    monkeypatch.setattr(kernels, "compiled", None)
    reference = pr.fit_btl(games)
    assert compiled.ranking == reference.ranking
    assert np.max(np.abs(compiled.scores - reference.scores)) <= 1e-12
    assert compiled.n_iter == reference.n_iter and compiled.converged


def numpy_counts(monkeypatch, m, a, b, outcome):
    monkeypatch.setattr(kernels, "compiled", None)
    counts = PairCounts.of_outcomes(m, a, b, outcome)
    monkeypatch.setattr(kernels, "compiled", KERNEL)
    return counts


def assert_same_counts(counts, reference):
    for name in ("i", "j", "wins", "totals"):
        got, want = getattr(counts, name), getattr(reference, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
    assert counts.n_items == reference.n_items


@compiled
@pytest.mark.parametrize("m, n", [(2, 1), (2, 500), (32, 266), (50, 100_000), (1000, 300_000)])
def test_the_compiled_counts_are_numpys(monkeypatch, m, n):
    rng = np.random.default_rng(m * 7 + n)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m  # both orders of a pair, ties, wins and losses
    outcome = rng.integers(-1, 2, n).astype(np.int8)
    counts = PairCounts.of_outcomes(m, a, b, outcome)
    assert_same_counts(counts, numpy_counts(monkeypatch, m, a, b, outcome))
    assert counts.totals.sum() == n


@compiled
def test_the_counts_of_comparisons_go_through_the_compiled_pass(monkeypatch):
    import privrank as pr

    calls = []

    class Recorder:
        def outcome_counts(self, *args):
            calls.append(args[0])
            return KERNEL.outcome_counts(*args)

    games = pr.PairwiseComparisons.from_labels(["a", "b", "c", "a"], ["b", "c", "a", "c"], [1, -1, 0, 1])
    monkeypatch.setattr(kernels, "compiled", Recorder())
    counts = games.pair_counts()
    assert calls == [3]
    assert_same_counts(counts, numpy_counts(monkeypatch, 3, games.item_a, games.item_b, games.outcome))


@compiled
def test_miscounted_pairs_are_caught(monkeypatch):
    """The comparison above can fail: a pass that counts a tie as a win for the second item."""
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, 5, 200), rng.integers(0, 4, 200)
    b += b >= a
    outcome = rng.integers(-1, 2, 200).astype(np.int8)
    reference = numpy_counts(monkeypatch, 5, a, b, outcome)
    wrong = KERNEL.outcome_counts(5, a, b, np.where(outcome == 0, -1, outcome).astype(np.int8))
    miscounted = PairCounts(5, *(np.frombuffer(c, dtype=t) for c, t in zip(wrong, (np.int64, np.int64, float, float))))
    with pytest.raises(AssertionError, match="wins"):
        assert_same_counts(miscounted, reference)


@compiled
def test_the_counting_pass_refuses_what_it_cannot_count():
    a, b, o = np.array([0, 1]), np.array([1, 2]), np.array([1, -1], dtype=np.int8)
    for bad_a, bad_b, bad_o in ((a, np.array([1, 3]), o), (a, np.array([1, 1]), o), (a, b, np.array([1, 2], dtype=np.int8))):
        with pytest.raises(ValueError, match="out of range, the same item twice"):
            KERNEL.outcome_counts(3, bad_a, bad_b, bad_o)
    with pytest.raises(TypeError, match="int8"):
        KERNEL.outcome_counts(3, a, b, o.astype(np.int64))
    with pytest.raises(TypeError, match="int64"):
        KERNEL.outcome_counts(3, a.astype(np.int32), b, o)
    with pytest.raises(ValueError, match="m must be"):
        KERNEL.outcome_counts(1, a, b, o)
    i, j, wins, totals = KERNEL.outcome_counts(3, a[:0], b[:0], o[:0])
    assert (len(i), len(j), len(wins), len(totals)) == (0, 0, 0, 0)


@compiled
@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(m=st.integers(2, btl.KERNEL_MAX_ITEMS), n=st.integers(1, 400), seed=st.integers(0, 2**32 - 1),
       lam=st.sampled_from([0.0, 1e-6, 0.01, 1.0, 50.0]), log_odds=st.booleans(), linear=st.booleans())
def test_any_small_problem_fits_as_numpy_fits_it(monkeypatch, m, n, seed, lam, log_odds, linear):
    """Random designs (sparse or dense, disconnected, separable), ridges from none (where the
    maximum-likelihood estimate exists) to strong, both starts, with and without a linear term: the
    compiled counts are numpy's, and the fit with the compiled loop is numpy's. (A start far out,
    which no fit uses, is the line-search test's above: there the iterations of a nearly flat
    objective can follow rounding, differently in LU and Cholesky.)"""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    outcome = rng.integers(-1, 2, n).astype(np.int8)
    pc = PairCounts.of_outcomes(m, a, b, outcome)
    assert_same_counts(pc, numpy_counts(monkeypatch, m, a, b, outcome))
    if lam == 0 and not (np.all(pc.items_compared() > 0) and btl.mle_exists(pc)):
        return  # no optimum: the fits refuse it (where either loop stops is rounding's luck there)
    # the starts the fits use: zero, and the log-odds of the maximum-likelihood fits
    kwargs = {"theta0": btl._log_odds(pc, pc.items_compared()) if log_odds else np.zeros(m), "max_iter": 60}
    if linear and lam >= 0.01:  # a linear term needs a ridge (objective perturbation's gamma): without
        kwargs["linear"] = rng.normal(0, 2, m)  # one it can outgrow the likelihood, with a tiny one the
        # scores run to linear / lam, where rounding in theta_i - theta_j exceeds the gradient's tolerance
    compiled_fit, reference, _ = both(monkeypatch, pc, lam, **kwargs)
    assert compiled_fit[3] == reference[3]  # converged alike
    if reference[3] and lam >= 0.01:  # strongly convex, well conditioned
        assert np.max(np.abs(compiled_fit[0] - reference[0])) <= 1e-8 * max(1.0, np.max(np.abs(reference[0])))


@compiled
@pytest.mark.parametrize("lam, linear", [(0.5, False), (0.5, True), (1e-5, False)])
def test_many_problems_solved_one_by_one_as_stacked(monkeypatch, lam, linear):
    """``newton_btl_many`` on few items fits each problem with the compiled loop; numpy stacks them
    into one block-diagonal problem: the same solutions (up to the mean, which a tiny ridge barely
    pins), and the same problems flagged."""
    rng = np.random.default_rng(11)
    m, B = 20, 40
    pc = design(m, 400, rng)
    wins = rng.binomial(pc.totals.astype(np.int64), 0.5, size=(B, pc.n_pairs)).astype(float)
    wins[0] = pc.totals  # the first item of every pair always wins: without a ridge the scores run off
    lin = rng.normal(0, 2, (B, m)) if linear else None
    recorder = Recorder()
    monkeypatch.setattr(kernels, "compiled", recorder)
    theta, ok = btl.newton_btl_many(pc.i, pc.j, m, pc.totals, wins, lam, linear=lin)
    assert len(recorder.statuses) >= B
    monkeypatch.setattr(kernels, "compiled", None)
    stacked, stacked_ok = btl.newton_btl_many(pc.i, pc.j, m, pc.totals, wins, lam, linear=lin)
    assert np.array_equal(ok, stacked_ok) and ok[1:].all() and ok[0] == (lam > 1e-3)
    centred = (theta - theta.mean(axis=1, keepdims=True)) - (stacked - stacked.mean(axis=1, keepdims=True))
    assert np.max(np.abs(centred[ok])) <= 1e-8
