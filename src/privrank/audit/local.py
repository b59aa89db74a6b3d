"""Audit registrations of the local-model mechanisms (Xu, Sun, Cheng; Duchi et al.).

Local mechanisms randomize each record independently, so one call on ``trials`` independent
records is ``trials`` independent runs of the randomizer. Randomized response has two
outputs per answer, so it is audited exactly: the report probabilities come from the
per-record epsilons the library computes (:func:`~privrank.pairwise.local.record_epsilons`)
and :func:`~privrank.mechanisms.randomized_response.flip_probability`; ``tests/audit`` checks
the sampled reports of :func:`~privrank.pairwise.local.randomized_response` against them.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from ..data.comparisons import PairwiseComparisons
from ..data.tally import ComparisonTally
from ..mechanisms.local_vectors import duchi_l2
from ..mechanisms.randomized_response import flip_probability, randomize_counts
from ..pairwise.local import local_laplace, randomized_response, record_epsilons
from .registry import Exact, Mechanism, Samples, register

RR_COVERS = (
    "privrank.mechanisms.randomized_response.randomize_bits",
    "privrank.mechanisms.randomized_response.randomize_answer",
    "privrank.pairwise.local.randomized_response",
    "privrank.pairwise.local.debiased_randomized_response",
    "privrank.pairwise.local.classic_randomized_response",
)
ANSWERS = (1, -1, 0)
ANSWER_NAMES = {1: "item_a preferred", -1: "item_b preferred", 0: "tie"}
#: personalised budgets: the audited user has epsilon, every other user this multiple of it
OTHER_USERS = 3.0
#: comparisons of the audited user under a per-user budget
USER_RECORDS = 3


def _report_pmf(answer: int, eps: float) -> np.ndarray:
    """``[P(report 1), P(report -1)]`` of randomized response on one answer."""
    if answer == 0:
        return np.array([0.5, 0.5])
    keep = 1.0 - flip_probability(eps)
    return np.array([keep, 1.0 - keep]) if answer == 1 else np.array([1.0 - keep, keep])


def _user_pmfs(eps_records: np.ndarray) -> Exact:
    """Exact joint report distribution of one user's records for every vector of answers."""
    k = eps_records.size
    inputs, rows = [], []
    for answers in itertools.product(ANSWERS, repeat=k):  # 3^k inputs, k <= USER_RECORDS
        joint = np.ones(1)
        for a, e in zip(answers, eps_records):
            joint = np.outer(joint, _report_pmf(a, e)).ravel()
        rows.append(joint)
        inputs.append("answers " + ",".join(f"{a:+d}" for a in answers))
    outcomes = tuple("reports " + ",".join(f"{r:+d}" for r in rep)
                     for rep in itertools.product((1, -1), repeat=k))
    return Exact(np.array(rows), tuple(inputs), outcomes)


def _comparisons(user) -> PairwiseComparisons:
    """One record per entry of ``user``, each on its own pair ``(2k, 2k+1)``."""
    user = np.asarray(user)
    a = 2 * np.arange(user.size)
    return PairwiseComparisons.from_indices(tuple(range(2 * user.size)), a, a + 1,
                                            np.ones(user.size, dtype=int), user=user)


def _drawn_joint(comps: PairwiseComparisons, audited, trials: int, rng, **budget) -> np.ndarray:
    """Outcome indices of the audited records' joint reports (all answers +1), ``trials`` runs of the
    public :func:`~privrank.pairwise.local.randomized_response`."""
    reports = np.stack([randomized_response(comps, rng=rng, **budget).outcome[audited] for _ in range(trials)])
    return (reports == -1).astype(np.int64) @ (2 ** np.arange(reports.shape[1])[::-1])


def _rr(epsilon, delta, trials, rng) -> Exact:
    comps = _comparisons(np.arange(trials))  # one answer per respondent, every answer +1
    eps = record_epsilons(comps, epsilon)[0]
    drawn = (randomized_response(comps, epsilon, rng=rng).outcome == -1).astype(np.int64)
    return Exact(np.array([_report_pmf(a, eps) for a in ANSWERS]),
                 tuple(ANSWER_NAMES[a] for a in ANSWERS), ("report +1", "report -1"), {0: drawn})


def _rr_personalised(epsilon, delta, trials, rng) -> Exact:
    comps = _comparisons([0, 1, 1])
    budget = {"epsilon": {0: epsilon, 1: OTHER_USERS * epsilon}}
    eps = record_epsilons(comps, **budget)
    law = _user_pmfs(eps[comps.user == 0])
    return Exact(law.pmfs, law.inputs, law.outcomes,
                 {0: _drawn_joint(comps, comps.user == 0, min(trials, 2000), rng, **budget)})


def _rr_user_budget(epsilon, delta, trials, rng) -> Exact:
    comps = _comparisons([0] * USER_RECORDS + [1])
    eps = record_epsilons(comps, user_epsilon=epsilon)
    law = _user_pmfs(eps[comps.user == 0])
    return Exact(law.pmfs, law.inputs, law.outcomes,
                 {0: _drawn_joint(comps, comps.user == 0, min(trials, 2000), rng, user_epsilon=epsilon)})


def _laplace_values(comps: PairwiseComparisons, outcome: int, rng, **budget) -> np.ndarray:
    """Every record's released value under :func:`local_laplace` (one record per pair)."""
    data = comps.with_outcomes(np.full(comps.n_records, outcome), None)
    return local_laplace(data, rng=rng, **budget).counts.wins


def _local_laplace(epsilon, delta, trials, rng) -> Samples:
    comps = _comparisons(np.arange(trials))
    return Samples(*(_laplace_values(comps, o, rng, epsilon=epsilon) for o in (1, -1)))


def _local_laplace_personalised(epsilon, delta, trials, rng) -> Samples:
    comps = _comparisons(np.arange(2 * trials))
    budget = {u: (epsilon if u % 2 == 0 else OTHER_USERS * epsilon) for u in range(2 * trials)}
    assert comps.user is not None  # _comparisons gives every record its user
    audited = comps.user % 2 == 0
    return Samples(*(_laplace_values(comps, o, rng, epsilon=budget)[audited] for o in (1, -1)))


def _local_laplace_user_budget(epsilon, delta, trials, rng) -> Samples:
    user = np.repeat(np.arange(trials), 2)
    comps = _comparisons(user)
    return Samples(*(_laplace_values(comps, o, rng, user_epsilon=epsilon).reshape(trials, 2)
                     for o in (1, -1)))


#: answers behind one count in the count-level audit, and how many of them say "yes" on one side
COUNT_ANSWERS, COUNT_YES = 5, 2


def _rr_counts(epsilon, delta, trials, rng) -> Samples:
    """``trials`` counts of ``COUNT_ANSWERS`` randomized answers; one answer changes from "no" to "yes"."""
    n = np.full(trials, COUNT_ANSWERS)
    return Samples(*(randomize_counts(np.full(trials, yes), n, epsilon, rng)
                     for yes in (COUNT_YES, COUNT_YES + 1)))


def _rr_engine(epsilon, delta, trials, rng) -> Samples:
    """``trials`` records, each on its own pair, counted by :func:`~privrank.engines.sufficient_statistics`."""
    from ..engines import sufficient_statistics

    comps = _comparisons(np.arange(trials))
    wins = []
    for o in (1, -1):
        tally = sufficient_statistics(comps.with_outcomes(np.full(trials, o), None), engine="local", epsilon=epsilon,
                                      rng=rng)
        assert isinstance(tally, ComparisonTally)  # kind "comparisons"
        wins.append(tally.wins2)
    return Samples(*wins)


def _duchi(epsilon, delta, trials, rng) -> Samples:
    v = np.zeros((trials, 3))
    v[:, 0] = 1.0
    return Samples(duchi_l2(v, radius=1.0, epsilon=epsilon, rng=rng),
                   duchi_l2(-v, radius=1.0, epsilon=epsilon, rng=rng))


_run: Callable[..., Samples | Exact]  # the runs registered below, by the two loops
for _name, _description, _unit, _run in (
        ("randomized-response",
         "randomized response on one comparison (plain, debiased and classic releases)",
         "one comparison: its answer (item_a, item_b or tie) changes", _rr),
        ("randomized-response/personalised",
         "randomized response with a personal epsilon per user (epsilon={user: e})",
         f"one comparison of a user whose own epsilon is the claim (other users choose "
         f"{OTHER_USERS:g}x larger ones): the guarantee each user chose, not the maximum",
         _rr_personalised),
        ("randomized-response/user-budget",
         "randomized response with a per-user budget split over the user's comparisons",
         f"all comparisons of one user ({USER_RECORDS} here): every answer of the user changes",
         _rr_user_budget)):
    register(Mechanism(name=_name, description=_description, unit=_unit, covers=RR_COVERS,
                       run=_run))

register(Mechanism(
    name="randomized-response/counts",
    description="randomized response drawn at the level of counts (many answers of one pair at once)",
    unit=f"one comparison among the {COUNT_ANSWERS} answers behind a count: its answer changes",
    covers=("privrank.mechanisms.randomized_response.randomize_counts",
            "privrank.simulate.release_complete_answers"),
    run=_rr_counts, trials=100_000,
    note="release_complete_answers also offers local Laplace through the sum of the answers' own "
         "Laplace(1/epsilon) draws, the mechanism audited as local-laplace"))

register(Mechanism(
    name="randomized-response/engines",
    description="randomized response per record inside the local, stream and dask engines (AES counter stream)",
    unit="one comparison: its answer changes",
    covers=("privrank.engines.sufficient_statistics",),
    run=_rr_engine, trials=100_000,
    note="the engines randomize record r with the r-th output of one counter-based generator, so "
         "the stream and dask engines give the same reports as the local engine audited here "
         "(tests/engines checks they are identical)"))

for _name, _description, _unit, _run in (
        ("local-laplace", "per-comparison Laplace noise on the answer value (local baseline)",
         "one comparison: its answer changes (values 1 and 0, sensitivity 1)", _local_laplace),
        ("local-laplace/personalised", "local Laplace with a personal epsilon per user",
         f"one comparison of a user whose own epsilon is the claim (other users choose "
         f"{OTHER_USERS:g}x larger ones)", _local_laplace_personalised),
        ("local-laplace/user-budget",
         "local Laplace with a per-user budget split over the user's comparisons",
         "all comparisons of one user (2 here): both answers change", _local_laplace_user_budget)):
    register(Mechanism(name=_name, description=_description, unit=_unit,
                       covers=("privrank.pairwise.local.local_laplace", "privrank.mechanisms.noise.laplace_release"),
                       run=_run,
                       trials=100_000))

register(Mechanism(
    name="duchi-l2",
    description="Duchi et al. l2-ball randomizer of one vector (local)",
    unit="one user's vector: V replaced by -V on the sphere of the stated radius",
    covers=("privrank.mechanisms.local_vectors.duchi_l2",), run=_duchi, trials=100_000))
