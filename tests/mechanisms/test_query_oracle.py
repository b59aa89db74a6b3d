"""Noisy query oracles, central and local."""
import math

import numpy as np
import pytest

from privrank.errors import InputError
from privrank.mechanisms.pairwise_matrix import Budget
from privrank.mechanisms.query_oracle import LocalPairOracle, NoisyPairOracle, QueryCapExceeded
from privrank.simulate import sample_mallows


def profile(seed=0, n=200, m=6):
    return sample_mallows(m, phi=0.6, n=n, rng=seed)


def test_central_oracle_counts_caches_and_refuses_past_its_cap():
    R = profile()
    oracle = NoisyPairOracle(R.preference, m=6, n=R.n_voters, cap=5, budget=Budget(1.0, 0.0), rng=0)
    assert oracle.scale == pytest.approx(5 / (1.0 * 200))  # cap/(eps n)
    first = oracle([0, 1, 2], [3, 3, 3])
    assert oracle.queries == 3
    again = oracle([3, 1], [0, 3])  # reversed orientation and a repeat: cached, not counted
    assert oracle.queries == 3
    assert again[0] == pytest.approx(1 - first[0]) and again[1] == first[1]
    with pytest.raises(QueryCapExceeded):
        oracle([0, 1, 2], [4, 4, 4])  # 3 new pairs would make 6 > 5
    assert oracle.queries == 3  # nothing of the refused batch was answered
    oracle([0, 1], [4, 4])
    assert oracle.queries == 5
    with pytest.raises(InputError):
        oracle([1], [1])


@pytest.mark.slow
def test_central_oracle_is_unbiased_with_the_gaussian_scale():
    R = profile(1)
    W = R.pairwise_matrix()
    budget = Budget(1.0, 1e-6)
    answers = np.array([NoisyPairOracle(R.preference, m=6, n=200, cap=15, budget=budget, rng=s)([0], [5])[0]
                        for s in range(3000)])
    sd = math.sqrt(15) / (200 * budget.mu)
    assert answers.std() == pytest.approx(sd, rel=0.1)  # 3000 draws: relative SE of sd ~ 1.3%
    assert abs(answers.mean() - W[0, 5]) <= 4 * sd / math.sqrt(answers.size)


def test_local_oracle_groups_caps_and_unbiased_answers():
    R = profile(2, n=300)
    orders = R.expanded()
    W = R.pairwise_matrix()
    oracle = LocalPairOracle(orders, epsilon=1.0, tau=3, rng=0)
    assert oracle.epsilon_per_answer == pytest.approx(1 / 3)
    sizes = oracle._sizes
    assert sizes.sum() == 300 and sizes.max() - sizes.min() <= 1
    asked = 0
    for a in range(6):
        for b in range(a + 1, 6):
            try:
                oracle([a], [b])
                asked += 1
            except QueryCapExceeded:
                before = (oracle.group_load.copy(), oracle.answers_per_voter.copy())
                with pytest.raises(QueryCapExceeded):
                    oracle([a], [b])
                assert np.array_equal(before[0], oracle.group_load)  # refused before answering
                assert np.array_equal(before[1], oracle.answers_per_voter)
    assert oracle.queries == asked and oracle.group_load.max() <= 3
    loads = oracle.group_load.copy()
    done = oracle._cache.keys[:2]
    oracle(done % 6, done // 6)  # answered pairs, reversed: from the cache, nobody answers again
    assert np.array_equal(loads, oracle.group_load) and oracle.queries == asked
    assert oracle.answers_per_voter.max() <= 3
    # a voter answers exactly the queries of their group: loads match
    group = np.repeat(np.arange(6), sizes)[np.argsort(oracle._members)]
    assert np.array_equal(oracle.answers_per_voter, oracle.group_load[group])
    # unbiased over the public randomness and the voters' coins (z-test, 4 SE)
    est = np.array([LocalPairOracle(orders, epsilon=2.0, tau=4, rng=s)([1], [4])[0] for s in range(1500)])
    assert abs(est.mean() - W[1, 4]) <= 4 * est.std(ddof=1) / math.sqrt(est.size)
    with pytest.raises(InputError, match="n >= m"):
        LocalPairOracle(orders[:5], epsilon=1.0, tau=3)
