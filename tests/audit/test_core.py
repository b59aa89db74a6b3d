"""The auditor's statistics: valid lower bounds, power against too little noise, exact audits."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privrank.audit.core import (audit_exact, audit_laplace_release, audit_samples,
                                 clopper_pearson)
from privrank.errors import InputError


def test_clopper_pearson_matches_the_beta_quantiles():
    lo, hi = clopper_pearson(7, 20, 0.025)
    assert lo == pytest.approx(stats.beta.ppf(0.025, 7, 14))
    assert hi == pytest.approx(stats.beta.ppf(0.975, 8, 13))
    lo0, hi0 = clopper_pearson(0, 20, 0.025)
    assert lo0 == 0.0 and hi0 == pytest.approx(1 - 0.025 ** (1 / 20))
    assert clopper_pearson(20, 20, 0.025)[1] == 1.0


def _laplace_pair(eps, n, rng):
    """Laplace mechanism on a count of sensitivity 1: outputs on the counts 1 and 0."""
    return rng.laplace(1.0, 1.0 / eps, n), rng.laplace(0.0, 1.0 / eps, n)


def test_bound_is_valid_at_the_exact_loss():
    # The Laplace mechanism loses exactly eps (threshold events beyond the shift reach e^eps),
    # the hardest case for validity. At confidence 0.9 the bound may exceed eps in at most 10%
    # of independent audits; over 200 audits the count is Binomial(200, <= 0.1): mean <= 20,
    # sd <= 4.3, so more than 20 + 4 sd = 37 would contradict validity. The same audits of the
    # mechanism with 30% less noise (the broken variant) must mostly fail.
    rng = np.random.default_rng(0)
    over = sum(audit_samples(*_laplace_pair(1.0, 1000, rng), epsilon=1.0,
                             confidence=0.9).violation for _ in range(200))
    assert over <= 37
    caught = sum(audit_samples(*_laplace_pair(1 / 0.7, 1000, rng), epsilon=1.0,
                               confidence=0.9).violation for _ in range(50))
    assert caught >= 40


def test_bound_catches_half_the_noise_and_approaches_the_true_loss():
    rng = np.random.default_rng(1)
    ok = audit_samples(*_laplace_pair(1.0, 200_000, rng), epsilon=1.0)
    assert not ok.violation and 0.8 < ok.epsilon_lower_bound <= 1.0
    broken = audit_samples(*_laplace_pair(2.0, 200_000, rng), epsilon=1.0)  # half the noise
    assert broken.violation and 1.8 < broken.epsilon_lower_bound <= 2.0
    assert broken.report()[-1].startswith("epsilon_lower_bound=")


def test_approximate_claims_subtract_delta():
    # Gaussian mechanism with mu = 1: at delta = 0.3 the loss is small, at delta = 1e-6 large
    rng = np.random.default_rng(2)
    a, b = rng.normal(1.0, 1.0, 200_000), rng.normal(0.0, 1.0, 200_000)
    assert audit_samples(a, b, epsilon=1.0, delta=1e-6).violation
    assert not audit_samples(a, b, epsilon=1.0, delta=0.3).violation


def test_vector_outputs_learn_a_statistic_on_the_selection_half():
    # Laplace vector release, loss split over 4 coordinates (eps/4 each): the audit must see the
    # sum through the orthant event, and half the noise must show
    rng = np.random.default_rng(3)
    shift = np.array([1.0, 1.0, 0.0, 1.0, 1.0])
    for eps, bad in ((1.0, False), (2.0, True)):
        a = shift + rng.laplace(0, 4 / eps, (200_000, 5))
        b = rng.laplace(0, 4 / eps, (200_000, 5))
        res = audit_samples(a, b, epsilon=1.0)
        assert res.violation == bad
    gaussian = audit_samples(rng.normal(0.3, 1, (50_000, 3)), rng.normal(0, 1, (50_000, 3)),
                             epsilon=5.0, delta=1e-6)
    assert "projection" in gaussian.event or "laplace-ratio" in gaussian.event


def test_discrete_outputs_use_histogram_events():
    # randomized response at log(3): reports 1 w.p. 3/4 vs 1/4
    rng = np.random.default_rng(4)
    a = (rng.random(100_000) < 0.75).astype(int)
    b = (rng.random(100_000) < 0.25).astype(int)
    assert not audit_samples(a, b, epsilon=math.log(3)).violation
    assert audit_samples(a, b, epsilon=math.log(3) / 2).violation


def test_exact_audit_of_randomized_response_and_hockey_stick():
    e = math.exp(1.0)
    rr = [[e / (1 + e), 1 / (1 + e)], [1 / (1 + e), e / (1 + e)]]
    res = audit_exact(rr, epsilon=1.0)
    assert res.epsilon_lower_bound == pytest.approx(1.0) and not res.violation
    assert audit_exact(rr, epsilon=0.99).violation
    # (eps, delta): pmfs [0.5, 0.3, 0.2] vs [0.3, 0.5, 0.2]: hockey stick 0.5 - 0.3 e^eps both ways
    sym = [[0.5, 0.3, 0.2], [0.3, 0.5, 0.2]]
    assert audit_exact(sym, epsilon=1.0, delta=0.02).epsilon_lower_bound == \
        pytest.approx(math.log(0.48 / 0.3), abs=1e-9)
    # an output possible on one input only: infinite loss unless delta covers its mass
    p = [[0.5, 0.5, 0.0], [0.3, 0.5, 0.2]]
    assert audit_exact(p, epsilon=5.0).epsilon_lower_bound == math.inf
    assert not audit_exact(p, epsilon=0.6, delta=0.2).violation


def test_exact_laplace_release():
    res = audit_laplace_release([[1.0, 2.0], [0.5, 0.0]], [2.0, 4.0], epsilon=1.0)
    assert res.epsilon_lower_bound == pytest.approx(1.0) and not res.violation
    assert audit_laplace_release([[1.0, 2.0]], [1.0, 4.0], epsilon=1.0).violation


@pytest.mark.parametrize("call", [
    lambda: audit_samples(np.zeros(10), np.zeros(10), epsilon=1.0),
    lambda: audit_samples(np.zeros(100), np.zeros((100, 2)), epsilon=1.0),
    lambda: audit_samples(np.full(100, np.nan), np.zeros(100), epsilon=1.0),
    lambda: audit_samples(np.zeros(100), np.zeros(100), epsilon=1.0, confidence=1.0),
    lambda: audit_exact([[0.5, 0.5]], epsilon=1.0),
    lambda: audit_exact([[0.5, 0.6], [0.5, 0.5]], epsilon=1.0),
    lambda: audit_laplace_release([[1.0]], [0.0], epsilon=1.0),
])
def test_bad_audit_input(call):
    with pytest.raises(InputError):
        call()
