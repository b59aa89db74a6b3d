"""Metrics (notes §8 test 19)."""
import numpy as np
import pytest

from privrank.errors import InputError
from privrank.metrics import kendall_distance, l2_error, linf_error, top_k_hamming


def test_kendall_identical_and_reversed():
    s = np.array([3.0, 1.0, 2.0, 0.5])
    assert kendall_distance(s, s) == 0
    assert kendall_distance(-s, s) == 1


def test_kendall_counts_discordant_pairs():
    # one adjacent swap among 4 items: 1 of 6 pairs
    assert kendall_distance([4, 3, 1, 2], [4, 3, 2, 1]) == pytest.approx(1 / 6)


def test_kendall_ties_within_tolerance_are_not_discordant():
    assert kendall_distance([1.0, 1.0 + 1e-12, 0.0], [0.0, 1.0, -1.0]) == 0


def test_top_k_hamming():
    true = np.array([5, 4, 3, 2, 1.0])
    assert top_k_hamming(true, true, 2) == 0
    assert top_k_hamming([5, 1, 4, 2, 3.0], true, 2) == pytest.approx(0.5)  # missed item 1 of {0, 1}
    assert top_k_hamming(-true, true, 2) == 1
    m = 10
    t = np.arange(m, dtype=float)
    assert top_k_hamming(t[::-1], t, m // 2) == 1
    assert top_k_hamming(t, t, m) == 0
    with pytest.raises(InputError):
        top_k_hamming(t, t, 0)


def test_errors_are_centred():
    a = np.array([1.0, 2.0, 3.0])
    assert l2_error(a + 5, a) == pytest.approx(0)
    assert linf_error(a, a[::-1]) == pytest.approx(2)
    assert l2_error([1.0, -1.0], [0.0, 0.0]) == pytest.approx(1.0)


def test_bad_metric_input():
    with pytest.raises(InputError):
        kendall_distance([1.0, np.nan], [1.0, 2.0])
    with pytest.raises(InputError):
        l2_error([1.0, 2.0], [1.0, 2.0, 3.0])


def test_kendall_tie_penalty_compares_weak_orders():
    # one pair tied in the first vector only: counts tie_penalty of 3 pairs
    assert kendall_distance([1.0, 1.0, 0.0], [2.0, 1.0, 0.0]) == 0
    assert kendall_distance([1.0, 1.0, 0.0], [2.0, 1.0, 0.0], tie_penalty=0.5) == pytest.approx(0.5 / 3)
    assert kendall_distance([1.0, 1.0, 0.0], [3.0, 3.0, 1.0], tie_penalty=0.5) == 0  # same weak order
    with pytest.raises(InputError):
        kendall_distance([1.0, 0.0], [1.0, 0.0], tie_penalty=2)


def test_kendall_tau_between_orders():
    from privrank.metrics import kendall_tau_distance

    # Alabi et al. §1.2: positions (1,2,3,4) vs (2,3,1,4), i.e. orders [0,1,2,3] vs [2,0,1,3]
    assert kendall_tau_distance([0, 1, 2, 3], [2, 0, 1, 3]) == 2
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.permutation(6), rng.permutation(6)
        assert kendall_tau_distance(a, b) == kendall_tau_distance(b, a)
        assert kendall_tau_distance(a, a) == 0
        assert kendall_tau_distance(a, a[::-1]) == 15
        assert kendall_tau_distance(a, b, normalized=True) == pytest.approx(kendall_tau_distance(a, b) / 15)
        # same count as the score-based metric on positions
        assert kendall_tau_distance(a, b, normalized=True) == pytest.approx(
            kendall_distance(-np.argsort(a), -np.argsort(b)))


def test_kemeny_cost_is_the_mean_kendall_distance_to_the_voters():
    from privrank.data.rankings import Rankings
    from privrank.metrics import kemeny_cost, kendall_tau_distance

    rng = np.random.default_rng(1)
    for _ in range(10):
        orders = np.array([rng.permutation(5) for _ in range(9)])
        sigma = rng.permutation(5)
        W = Rankings.from_orders(orders).pairwise_matrix()
        mean = np.mean([kendall_tau_distance(sigma, o) for o in orders])
        assert kemeny_cost(sigma, W) == pytest.approx(mean)
    with pytest.raises(InputError):
        kemeny_cost([0, 1], np.ones((3, 2)))
    # a stack of orders gives each order's cost
    stack = np.array([rng.permutation(5) for _ in range(7)])
    np.testing.assert_allclose(kemeny_cost(stack, W), [kemeny_cost(o, W) for o in stack])


def test_relative_errors_and_position_mismatch():
    from privrank.metrics import rank_position_mismatch
    true = np.array([2.0, 0.0, -2.0])
    est = np.array([3.0, 0.0, -1.0])  # centred: [7/3, -2/3, -5/3] against [2, 0, -2]
    d = np.array([1 / 3, -2 / 3, 1 / 3])
    assert l2_error(est, true, relative=True) == pytest.approx(np.linalg.norm(d) / np.sqrt(8))
    assert linf_error(est, true, relative=True) == pytest.approx((2 / 3) / 2)
    assert l2_error(est, true) == pytest.approx(np.linalg.norm(d) / np.sqrt(3))
    with pytest.raises(InputError):
        l2_error(est, np.ones(3), relative=True)
    assert rank_position_mismatch(true, true) == 0
    assert rank_position_mismatch([0.0, 2.0, -2.0], true) == pytest.approx(2 / 3)  # top two swapped
