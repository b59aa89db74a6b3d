"""Black-box audits of randomized response: the public release run on neighbouring inputs, its reports
seen as an attacker sees them, and a Clopper-Pearson lower bound on the privacy loss they show.

The registry audits randomized response exactly (``randomized-response*`` in
:mod:`privrank.audit.local`: the law the library computes, and a check that the reports follow it).
These audits assume no law: they run :func:`privrank.randomized_response` -- the respondents' side,
whose reports :func:`privrank.debiased_randomized_response` debiases -- on inputs that differ in one
answer (the claim: epsilon per comparison) or in all ``K`` answers of one user on ``K`` distinct pairs
(the claim: ``K * epsilon`` per user, what the release's guarantee states for ``max_answers = K``).
Each trial is one user: a local mechanism randomizes every user on their own, so the users of one
call are independent trials, all drawn under one key from a seeded parent generator (the seed makes
the test reproducible; no trial has a seed of its own). The attacker sees the user's ``K`` reports;
:func:`~privrank.audit.core.audit_samples` chooses the event among their ``2^K`` joint values on
half of the trials and bounds ``ln(P1 / P0)`` below with Clopper-Pearson on the other half, at
confidence 0.999.

Each audit must hold (the bound never above the claim) and matter (the bound reaching
:data:`POWER` of the claim), and must catch a randomizer that draws too little noise: one that
randomizes at 1.5 x the epsilon it states, and one that flips a single coin for a user's ``K`` answers.
"""
from __future__ import annotations

import numpy as np
import pytest

import privrank as pr
import privrank.mechanisms.randomized_response as rr
from privrank.audit import audit_samples
from privrank.data.comparisons import PairwiseComparisons
from privrank.draws import _drawn_noise_factor

EPSILON, K = 1.0, 3
#: users (independent trials) per input: half choose the event, half bound it
TRIALS = 200_000
#: the share of the claim an honest audit must reach (a loose audit would pass anything)
POWER = 0.85
#: the broken randomizer's drawn epsilon, as a multiple of the claim
TOO_LITTLE_NOISE = 1.5
#: the audited user's answers on its K pairs, on the two inputs of each audit
NEIGHBOURS = {"one comparison": ((1, 1, 1), (-1, 1, 1)), "one user": ((1, 1, 1), (-1, -1, -1))}


def users(answers, n: int = TRIALS) -> PairwiseComparisons:
    """``n`` users, each answering the pairs (0, 1), (2, 3), ... (2K-2, 2K-1) with ``answers``."""
    first = np.tile(2 * np.arange(K), n)
    return PairwiseComparisons.from_indices(tuple(range(2 * K)), first, first + 1, np.tile(answers, n),
                                            user=np.repeat(np.arange(n), K))


@pytest.fixture(scope="module")
def claims() -> dict:
    """The claims of the public release on such data: epsilon per comparison, per user over K answers."""
    g = pr.debiased_randomized_response(users((1, 1, 1), 10), EPSILON, max_answers=K, rng=0).guarantee
    return {"one comparison": g.epsilon_per_comparison, "one user": g.epsilon_per_user}


def joint_reports(answers, rng) -> np.ndarray:
    """Each user's K reports of :func:`privrank.randomized_response`, coded as one number in 0 .. 2^K - 1."""
    reports = pr.randomized_response(users(answers), EPSILON, max_answers=K, rng=rng).outcome.reshape(-1, K)
    return (reports == -1).astype(np.int64) @ (2 ** np.arange(K - 1, -1, -1))


def audit(unit: str, claim: float, rng):
    """The black-box audit of ``claim`` for ``unit``: the reports on its two inputs (:data:`NEIGHBOURS`)."""
    first, second = NEIGHBOURS[unit]
    return audit_samples(joint_reports(first, rng), joint_reports(second, rng), epsilon=claim)


class SharedCoin:
    """A record stream whose K records of a user read one uniform: one coin for the user's K answers
    (a broken randomizer: each report on its own is randomized response at the stated epsilon)."""

    def __init__(self, stream):
        self.stream, self.coins, self.at = stream, np.empty(0), 0

    def random(self, out):
        end = self.at + out.size
        more = -(-end // K) - self.coins.size
        if more > 0:
            self.coins = np.concatenate([self.coins, self.stream.random(more)])
        out[:] = self.coins[np.arange(self.at, end) // K]
        self.at = end
        return out


def test_the_claims_are_the_release_guarantee(claims):
    assert claims == {"one comparison": EPSILON, "one user": K * EPSILON}


@pytest.mark.parametrize("unit", sorted(NEIGHBOURS))
def test_randomized_response_holds_its_claim_and_the_audit_reaches_it(unit, claims):
    result = audit(unit, claims[unit], np.random.default_rng(2024))
    assert POWER * claims[unit] <= result.epsilon_lower_bound <= claims[unit], "\n".join(result.report())


@pytest.mark.parametrize("unit", sorted(NEIGHBOURS))
def test_a_randomizer_drawing_too_little_noise_is_caught(unit, claims):
    """Every report drawn at 1.5 x the stated epsilon, through the release as it is."""
    with _drawn_noise_factor(1.0 / TOO_LITTLE_NOISE):
        result = audit(unit, claims[unit], np.random.default_rng(2025))
    assert result.violation and result.epsilon_lower_bound > claims[unit], "\n".join(result.report())


def test_one_coin_for_a_users_answers_is_caught_per_comparison(monkeypatch, claims):
    """With one coin for a user's answers, the other reports tell the coin, and so the changed answer:
    the audit of one comparison, which sees the user's K reports, catches it. (Per user it loses only
    epsilon, within K epsilon: a correlation the per-user claim allows.)"""
    stream = rr._record_stream
    monkeypatch.setattr(rr, "_record_stream", lambda *args: SharedCoin(stream(*args)))
    caught = audit("one comparison", claims["one comparison"], np.random.default_rng(2026))
    assert caught.violation and caught.epsilon_lower_bound > 2 * EPSILON, "\n".join(caught.report())
    assert not audit("one user", claims["one user"], np.random.default_rng(2027)).violation
