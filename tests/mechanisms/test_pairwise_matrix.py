"""Releases of the pairwise matrix and the budget split."""
import math

import numpy as np
import pytest

from privrank.mechanisms.pairwise_matrix import Budget, local_pairwise_matrix
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


def test_budget_splits_add_up():
    lap, gau = Budget(2.0, 0.0), Budget(2.0, 1e-6)
    assert lap.scale(0.25, 3.0, 1.0) == pytest.approx(3.0 / 0.5)
    mu = gau.mu
    s1, s2 = gau.scale(0.3, 0.0, 1.0), gau.scale(0.7, 0.0, 1.0)
    assert (1 / s1) ** 2 + (1 / s2) ** 2 == pytest.approx(mu ** 2)
    assert gau.guarantee("x").delta == 1e-6 and lap.guarantee("x").unit == "one ranking"
