"""Non-private footrule aggregation: assignment optimum, cost matrix, metrics."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from privrank.aggregation.footrule import assignment_order, footrule_cost_matrix, footrule_optimal_order
from privrank.data.rankings import positions_of
from privrank.errors import InputError
from privrank.metrics import footrule_cost, footrule_distance


def kendall_count(a, b):
    pa, pb = np.argsort(a), np.argsort(b)
    return sum((pa[i] - pa[j]) * (pb[i] - pb[j]) < 0 for i in range(len(a)) for j in range(i + 1, len(a)))


def random_profile(rng, n, m, center_prob=0.5):
    center = rng.permutation(m)
    return np.array([center if rng.random() < center_prob else rng.permutation(m) for _ in range(n)])


def brute_footrule(orders, weights=None):
    m = orders.shape[1]
    return min(footrule_cost(np.array(p), orders, weights) for p in itertools.permutations(range(m)))


@pytest.mark.parametrize("seed", range(6))
def test_assignment_equals_brute_force_footrule_optimum(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 7))
    orders = random_profile(rng, int(rng.integers(1, 12)), m, center_prob=0.3)
    w = rng.integers(1, 4, size=len(orders)).astype(float)
    for weights in (None, w):
        order = footrule_optimal_order(orders, weights)
        assert footrule_cost(order, orders, weights) == pytest.approx(brute_footrule(orders, weights))


def test_cost_matrix_decomposes_the_objective():
    rng = np.random.default_rng(1)
    orders = random_profile(rng, 15, 7, 0.2)
    C = footrule_cost_matrix(orders)
    for _ in range(20):
        psi = rng.permutation(7)
        assert C[psi, np.arange(7)].sum() == pytest.approx(footrule_cost(psi, orders))
    pos = positions_of(orders)
    np.testing.assert_allclose(C, np.abs(pos[:, :, None] - np.arange(7)).mean(axis=0))


def test_footrule_and_kendall_inequalities():
    rng = np.random.default_rng(2)
    for _ in range(200):
        m = int(rng.integers(2, 9))
        a, b = rng.permutation(m), rng.permutation(m)
        K, F = kendall_count(a, b), footrule_distance(a, b)
        assert K <= F <= 2 * K


@pytest.mark.parametrize("seed", range(4))
def test_footrule_optimum_is_a_kemeny_2_approximation(seed):
    rng = np.random.default_rng(10 + seed)
    orders = random_profile(rng, 9, 6, 0.2)
    kem = lambda p: np.mean([kendall_count(p, o) for o in orders])
    opt_k = min(kem(np.array(p)) for p in itertools.permutations(range(6)))
    assert kem(footrule_optimal_order(orders)) <= 2 * opt_k + 1e-12


def test_assignment_accepts_negative_costs_and_rejects_bad_matrices():
    C = -np.eye(4)[::-1]
    np.testing.assert_array_equal(np.argsort(assignment_order(C)), [3, 2, 1, 0])
    with pytest.raises(InputError):
        assignment_order(np.ones((2, 3)))
    with pytest.raises(InputError):
        assignment_order(np.array([[np.nan, 0], [0, 0]]))


def test_input_validation():
    with pytest.raises(InputError):
        footrule_cost_matrix(np.array([[0, 0, 1]]))
    with pytest.raises(InputError):
        footrule_cost_matrix(np.array([[0, 1]]), weights=[-1])
    with pytest.raises(InputError):
        footrule_cost([0, 1, 2], np.array([[0, 1]]))
