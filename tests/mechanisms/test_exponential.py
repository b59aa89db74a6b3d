"""The exponential mechanism."""
import math

import numpy as np
import pytest

from privrank.errors import InputError
from privrank.mechanisms.exponential import exponential_mechanism, exponential_probabilities


def test_probabilities_follow_the_utilities():
    u = np.array([0.0, -1.0, -3.0, 2.0])
    p = exponential_probabilities(u, 2.0, 0.8)
    assert p.sum() == pytest.approx(1.0)
    # p_i / p_j = exp(eps (u_i - u_j) / (2 Delta))
    assert p[3] / p[2] == pytest.approx(math.exp(0.8 * 5 / 4))
    # huge utilities stay finite
    assert np.all(np.isfinite(exponential_probabilities(u * 1e6, 1.0, 1.0)))
    with pytest.raises(InputError):
        exponential_probabilities([], 1.0, 1.0)
    with pytest.raises(InputError):
        exponential_probabilities([0.0, np.nan], 1.0, 1.0)
    with pytest.raises(InputError):
        exponential_probabilities([0.0], 0.0, 1.0)


def test_sampler_frequencies():
    p = exponential_probabilities([0.0, 1.0, 2.0], 1.0, 1.0)
    rng = np.random.default_rng(0)
    draws = np.bincount([exponential_mechanism([0.0, 1.0, 2.0], 1.0, 1.0, rng) for _ in range(6000)],
                        minlength=3)
    se = np.sqrt(p * (1 - p) / 6000)  # binomial SE of each frequency
    assert np.all(np.abs(draws / 6000 - p) <= 4 * se)


def test_an_epsilon_whose_logits_overflow_gives_the_limit():
    # eps * u overflowed to -inf for every candidate, and -inf - (-inf) made every probability NaN
    p = exponential_probabilities([-4.0, -2.0, -3.0, -2.0], 1.0, 1e308)
    assert p.tolist() == [0.0, 0.5, 0.0, 0.5]
