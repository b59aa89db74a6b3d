"""Footrule methods of ``privrank aggregate`` (method table entries)."""
from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from privrank.cli.footrule_methods import METHODS
from privrank.errors import InputError
from privrank.metrics import footrule_cost


def _profile(seed, n, m):
    rng = np.random.default_rng(seed)
    orders = np.array([rng.permutation(m) for _ in range(n)])
    return SimpleNamespace(orders=orders, weights=np.ones(n), items=[f"i{k}" for k in range(m)])


@pytest.mark.parametrize("seed", range(4))
def test_footrule_method_equals_brute_force(seed):
    prof = _profile(seed, 7, 5)
    order, g, extra, _ = METHODS["footrule"](prof, SimpleNamespace(epsilon=None))
    best = min(footrule_cost(np.array(p), prof.orders) for p in itertools.permutations(range(5)))
    assert extra["footrule_cost"] == pytest.approx(best)
    assert footrule_cost(order, prof.orders) == pytest.approx(best)
    assert not g.private


def test_private_methods_report_no_exact_statistic():
    prof = _profile(1, 30, 4)
    for name in ("dp-footrule", "ldp-footrule", "dp-ptas"):
        args = SimpleNamespace(epsilon=1.0, delta=0.0, seed=0, solver=None, variant="buckets" if
                               name == "dp-ptas" else None, buckets=None, kappa=None)
        if name == "dp-ptas":
            args.solver = lambda W: np.argsort(-(W.sum(axis=1)))  # any post-processing
        order, g, extra, _ = METHODS[name](prof, args)
        assert g.private and sorted(order) == [0, 1, 2, 3]
        assert "footrule_cost" not in extra
    with pytest.raises(InputError):
        METHODS["dp-footrule"](prof, SimpleNamespace(epsilon=None))
    with pytest.raises(InputError):
        METHODS["footrule"](prof, SimpleNamespace(epsilon=1.0))
