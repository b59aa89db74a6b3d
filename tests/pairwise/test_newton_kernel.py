"""The compiled Newton loop of the BTL fits on few items (``privrank.pairwise._newton``) gives what
numpy's loop gives: the same scores to rounding, the same number of steps, the same convergence,
and the same hand-over to the line search and to LU where a full step or Cholesky fails."""
import numpy as np
import pytest

from privrank.data.pair_counts import PairCounts
from privrank.pairwise import btl

KERNEL = btl._newton


def test_the_compiled_module_is_built():
    # the development install (make) compiles it; without it every small fit is about twice as slow
    assert KERNEL is not None, "privrank.pairwise._newton was not built: pip install -e . needs a C compiler"


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
    monkeypatch.setattr(btl, "_newton", recorder)
    compiled = btl.newton_btl(pc, lam, **kwargs)
    monkeypatch.setattr(btl, "_newton", None)
    reference = btl.newton_btl(pc, lam, **kwargs)
    monkeypatch.setattr(btl, "_newton", KERNEL)
    return compiled, reference, recorder.statuses


def assert_same_fit(compiled, reference):
    theta, it, gnorm, ok, solver = compiled
    assert np.max(np.abs(theta - reference[0])) <= 1e-12 * max(1.0, np.max(np.abs(reference[0])))
    assert (it, ok, solver) == reference[1:2] + reference[3:]
    assert gnorm <= max(1e-9, 10 * reference[2])


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


def test_a_step_that_needs_a_line_search_goes_on_in_numpy(monkeypatch):
    rng = np.random.default_rng(0)
    pc = design(8, 60, rng)
    theta0 = rng.normal(0, 20, 8)  # far from the optimum: the first full step overshoots
    compiled, reference, statuses = both(monkeypatch, pc, 1e-3, theta0=theta0)
    assert statuses == [1]
    assert compiled[3] and compiled[1] > 5
    assert_same_fit(compiled, reference)


def test_a_singular_newton_system_fails_as_numpys(monkeypatch):
    # two components, each balanced, and no ridge: the system is singular along their difference
    pc = PairCounts.from_records(4, [0, 1, 2, 3], [1, 0, 3, 2], [1.0, 1.0, 1.0, 1.0])
    recorder = Recorder()
    monkeypatch.setattr(btl, "_newton", recorder)
    with pytest.raises(np.linalg.LinAlgError):
        btl.newton_btl(pc, 0.0, theta0=[1.0, 0.0, 0.0, 0.0])
    assert recorder.statuses == [2]
    monkeypatch.setattr(btl, "_newton", None)
    with pytest.raises(np.linalg.LinAlgError):
        btl.newton_btl(pc, 0.0, theta0=[1.0, 0.0, 0.0, 0.0])


def test_larger_item_sets_use_numpy(monkeypatch):
    recorder = Recorder()
    monkeypatch.setattr(btl, "_newton", recorder)
    rng = np.random.default_rng(3)
    btl.newton_btl(design(btl.KERNEL_MAX_ITEMS + 1, 3000, rng), 1.0)
    btl.newton_btl(design(20, 300, rng), 1.0, solver="sparse")
    assert recorder.statuses == []
    btl.newton_btl(design(20, 300, rng), 1.0)
    assert recorder.statuses == [0]


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

    monkeypatch.setattr(btl, "_newton", Off())
    off = btl.newton_btl(pc, 1.0)
    monkeypatch.setattr(btl, "_newton", None)
    with pytest.raises(AssertionError):
        assert_same_fit(off, btl.newton_btl(pc, 1.0))


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


def test_the_nfl_season_fits_the_same_either_way(monkeypatch):
    import privrank as pr
    from privrank.data.datasets import load_nfl

    games = load_nfl(2019)
    compiled = pr.fit_btl(games)
    monkeypatch.setattr(btl, "_newton", None)
    reference = pr.fit_btl(games)
    assert compiled.ranking == reference.ranking
    assert np.max(np.abs(compiled.scores - reference.scores)) <= 1e-12
    assert compiled.n_iter == reference.n_iter and compiled.converged
