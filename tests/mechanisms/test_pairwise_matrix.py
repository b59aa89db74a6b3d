"""Releases of the pairwise matrix and the budget split."""
import math

import numpy as np
import pytest

from privrank.mechanisms.pairwise_matrix import (Budget, local_pairwise_matrix, local_pairwise_sd,
                                                 matrix_from_upper)
from privrank.simulate import sample_mallows


def test_local_pairwise_matrix_is_unbiased():
    R = sample_mallows(4, phi=0.6, n=40, rng=3)
    W = R.pairwise_matrix()
    orders = R.expanded()
    reps = np.array([local_pairwise_matrix(orders, 1.0, rng=s) for s in range(1500)])
    off = ~np.eye(4, dtype=bool)
    np.testing.assert_allclose((reps[0] + reps[0].T)[off], 1.0)
    z = (reps.mean(axis=0) - W)[off] / (reps.std(axis=0, ddof=1)[off] / math.sqrt(len(reps)))
    assert np.max(np.abs(z)) <= 4.5  # 12 z-scores, 4.5 SE: no flakes at a fixed seed


def test_local_pairwise_sd_is_the_noise_of_each_entry():
    """Sample variance over 2000 releases against (B^2/M - 1/4)/n; the sample variance of ~normal
    noise has relative SE sqrt(2/(R-1)) = 3.2%, and 6 entries are checked at 4.5 SE."""
    R = sample_mallows(4, phi=0.6, n=50, rng=4)
    orders = R.expanded()
    reps = np.array([local_pairwise_matrix(orders, 1.5, rng=s)[np.triu_indices(4, 1)] for s in range(2000)])
    ratio = reps.var(axis=0, ddof=1) / local_pairwise_sd(4, 50, 1.5) ** 2
    assert np.max(np.abs(ratio - 1.0)) <= 4.5 * math.sqrt(2 / 1999)
    assert local_pairwise_sd(4, 200, 1.5) == pytest.approx(local_pairwise_sd(4, 50, 1.5) / 2)


def test_matrix_from_upper_on_a_stack():
    upper = np.random.default_rng(0).random((3, 6))
    stacked = matrix_from_upper(upper, 4)
    assert stacked.shape == (3, 4, 4)
    for k in range(3):
        np.testing.assert_array_equal(stacked[k], matrix_from_upper(upper[k], 4))


def test_budget_splits_add_up():
    lap, gau = Budget(2.0, 0.0), Budget(2.0, 1e-6)
    assert lap.scale(0.25, 3.0, 1.0) == pytest.approx(3.0 / 0.5)
    mu = gau.mu
    s1, s2 = gau.scale(0.3, 0.0, 1.0), gau.scale(0.7, 0.0, 1.0)
    assert (1 / s1) ** 2 + (1 / s2) ** 2 == pytest.approx(mu ** 2)
    assert gau.guarantee("x").delta == 1e-6 and lap.guarantee("x").unit == "one ranking"
