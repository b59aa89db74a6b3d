"""Audit registrations of private Kemeny aggregation (Alabi, Ghazi, Kumar, Manurangsi).

Neighbouring profiles have the same public ``n`` and differ in one ranking.

Central
    ``private-kemeny``: the noisy matrix (:func:`~privrank.mechanisms.pairwise_matrix.noisy_pairwise_matrix`)
    as the solver sees it, unclipped, on two items (one ranking moves ``w[0, 1]`` by ``1/n``).
    ``dp-kwiksort`` and ``hay-quicksort``: with two items KwikSort asks one query, so the order
    is the noisy answer thresholded at 1/2; the audit asks for a cap of one query (the whole
    budget on it) and places the voters so that the threshold sits in the tail the loss shows
    in (``n/2`` voters for Laplace; for Gaussian noise one standard deviation further).
    ``exponential-kemeny``: exact, from the mechanism's own output distribution over all orders
    of three items, for every choice of the one ranking that differs.
    ``noisy-borda``: the released noisy Borda scores of two items for one voter, whose two
    rankings are as far apart as rankings of two items can be (both scores move by one point).
Local
    ``ldp-matrix``: every voter's fixed-point Duchi et al. report (voters 0, 1, ... under the
    seed's key), batched and checked bit for bit against
    :func:`~privrank.aggregation.private_kemeny.ldp_matrix` and against the report the engines
    draw (:func:`privrank.sufficient_statistics`, ``kind="rankings"``) for the same seed.
    ``ldp-kwiksort``: two voters, two items, one query per group: the order is the report of
    whichever voter the public randomness assigns to the pair.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..aggregation.private_borda import noisy_borda
from ..aggregation.private_kemeny import (dp_kwiksort, exponential_distribution, exponential_kemeny,
                                          hay_quicksort, ldp_kwiksort, ldp_matrix, private_kemeny)
from ..data.rankings import Rankings, RankingTally
from ..engines import sufficient_statistics
from ..mechanisms.local_vectors import duchi_l2_records, report_unit
from ..draws import noise_factor
from ..mechanisms.noise import discrete_gaussian_mu
from ..mechanisms.randomized_response import record_key
from .footrule import BatchMismatch
from .registry import Exact, Mechanism, Samples, register
from .runs import (GAUSSIAN_TAILS_NOTE, TWO_ITEMS, order_bits, solver_views, two_item_votes,
                   votes)

UNIT = "one ranking replaced (n public)"
def _private_kemeny(epsilon, delta, trials, rng) -> Samples:
    return Samples(*(solver_views(
        lambda solver, o=o: private_kemeny(o[None, :], epsilon=epsilon, delta=delta,
                                           solver=solver, clip=False, rng=rng), trials, 1)
        for o in TWO_ITEMS))


def _noisy_borda(epsilon, delta, trials, rng) -> Samples:
    return Samples(*(np.stack([noisy_borda(o[None, :], epsilon=epsilon, delta=delta,
                                           rng=rng).release.scores  # type: ignore[attr-defined]  # a BordaRelease
                               for _ in range(trials)]) for o in TWO_ITEMS))


def _gap(epsilon, delta) -> int:
    """Voters between the threshold and the likely input: 0 (Laplace) or one standard deviation of
    the noise the run draws (any neighbouring pair is a valid test, so the pair follows the noise)."""
    return 0 if delta == 0 else max(1, round(noise_factor() / discrete_gaussian_mu(epsilon, delta)))


def _one_query(algorithm):
    def run(epsilon, delta, trials, rng) -> Samples:
        n, k = two_item_votes(_gap(epsilon, delta))
        return Samples(*(order_bits(lambda c=c: algorithm(votes(c, n), epsilon=epsilon, delta=delta,
                                                          queries=1, rng=rng), trials)
                         for c in (k, k - 1)))
    return run


def _exponential(epsilon, delta, trials, rng) -> Exact:
    fixed = np.array([0, 1, 2])
    others = [np.array(p) for p in itertools.permutations(range(3))]
    rows = [exponential_distribution(np.stack([fixed, o]), epsilon=epsilon)[1] for o in others]
    perms = [tuple(p) for p in itertools.permutations(range(3))]
    drawn = [perms.index(tuple(exponential_kemeny(np.stack([fixed, others[0]]), epsilon=epsilon, rng=rng).order))
             for _ in range(min(trials, 3000))]  # what the public function draws on the first input
    return Exact(np.array(rows), tuple(f"second ranking {o.tolist()}" for o in others),
                 tuple(str(list(p)) for p in perms), {0: np.array(drawn)})


def _ldp_matrix(epsilon, delta, trials, rng) -> Samples:
    m = 3
    i, j = np.triu_indices(m, 1)
    radius = math.sqrt(i.size) / 2.0
    unit = report_unit(i.size, radius, epsilon)
    out = []
    for order in (np.arange(m), np.arange(m)[::-1]):
        seed = int(rng.integers(2 ** 63))
        seen: list[np.ndarray] = []

        def solver(W, seen=seen):
            seen.append(np.asarray(W)[i, j])
            return np.arange(m)

        ldp_matrix(order[None, :], epsilon=epsilon, solver=solver, clip=False, rng=seed)
        tally = sufficient_statistics(Rankings.from_orders(order[None, :]), kind="rankings",
                                      statistic="pairwise", epsilon=epsilon, rng=np.random.default_rng(seed))
        assert isinstance(tally, RankingTally) and tally.reports is not None  # kind "rankings" with epsilon
        engine = tally.reports
        pos = np.argsort(order)
        vector = (pos[i] < pos[j]) - 0.5  # the voter's centred pair indicators
        reports = duchi_l2_records(np.tile(vector, (trials, 1)), radius=radius, epsilon=epsilon,
                                   key=record_key(np.random.default_rng(seed)))  # ldp_matrix's key
        if not (np.array_equal(seen[0], 0.5 + unit * reports[0] / 1) and np.array_equal(engine, reports[0])):
            raise BatchMismatch("the batched local reports differ from ldp_matrix's or the engines' "
                                "for the same seed")
        out.append(unit * reports)
    return Samples(*out)


def _ldp_kwiksort(epsilon, delta, trials, rng) -> Samples:
    other = TWO_ITEMS[1]
    return Samples(*(order_bits(lambda o=o: ldp_kwiksort(np.stack([o, other]), epsilon=epsilon,
                                                         tau=1, rng=rng), trials)
                     for o in TWO_ITEMS))


_MATRIX = ("privrank.aggregation.private_kemeny.private_kemeny",
           "privrank.mechanisms.pairwise_matrix.noisy_pairwise_matrix")
_ORACLE = "privrank.mechanisms.query_oracle.NoisyPairOracle"

for _noise, _words in (("laplace", "Laplace, epsilon-DP"),
                       ("gaussian", "discrete Gaussian, (epsilon, delta)-DP")):
    gaussian = _noise == "gaussian"
    register(Mechanism(
        name=f"noisy-borda/{_noise}", description=f"noisy Borda scores and their order, {_words}", unit=UNIT,
        covers=("privrank.aggregation.private_borda.noisy_borda",), run=_noisy_borda, approximate=gaussian,
        trials=10_000, control=0.2 if gaussian else 0.5, note=GAUSSIAN_TAILS_NOTE.format(f=0.2) if gaussian else ""))
    register(Mechanism(
        name=f"private-kemeny/{_noise}",
        description=f"noisy pairwise matrix then a Kemeny solver (Alabi et al. Thm 1), {_words}",
        unit=UNIT, covers=_MATRIX, run=_private_kemeny, approximate=gaussian,
        trials=10_000, control=0.2 if gaussian else 0.5,
        note=GAUSSIAN_TAILS_NOTE.format(f=0.2) if gaussian else ""))
    for _name, _algorithm, _what in (
            ("dp-kwiksort", dp_kwiksort, "KwikSort on a capped noisy query oracle (Alabi et al. Alg. 1)"),
            ("hay-quicksort", hay_quicksort, "Hay et al.'s budgeted private quicksort")):
        register(Mechanism(
            name=f"{_name}/{_noise}", description=f"{_what}, {_words}", unit=UNIT,
            covers=(f"privrank.aggregation.private_kemeny.{_algorithm.__name__}", _ORACLE),
            run=_one_query(_algorithm), approximate=gaussian, trials=4_000 if gaussian else 2_000,
            control=0.15 if gaussian else 0.5,
            note=GAUSSIAN_TAILS_NOTE.format(f=0.15) + " One bit per run (the order)."
            if gaussian else ""))

register(Mechanism(
    name="exponential-kemeny",
    description="exponential mechanism over all orders (Kemeny utility), exact audit",
    unit="one of two rankings replaced (3 items)",
    covers=("privrank.aggregation.private_kemeny.exponential_kemeny",
            "privrank.mechanisms.exponential.exponential_mechanism"),
    run=_exponential))

register(Mechanism(
    name="ldp-matrix",
    description="one-round local Kemeny: Duchi et al. report of each ranking's pair vector",
    unit="one ranking (3 items), local model", run=_ldp_matrix, trials=100_000,
    covers=("privrank.aggregation.private_kemeny.ldp_matrix",
            "privrank.mechanisms.pairwise_matrix.local_pairwise_matrix",
            "privrank.engines.sufficient_statistics")))

register(Mechanism(
    name="ldp-kwiksort",
    description="LDPKwikSort: local randomized response through a capped group oracle",
    unit="one voter's ranking (two voters, two items, local model)", run=_ldp_kwiksort,
    covers=("privrank.aggregation.private_kemeny.ldp_kwiksort",
            "privrank.mechanisms.query_oracle.LocalPairOracle"), trials=6_000,
    note="The public randomness assigns the pair to the changed voter's group with probability "
         "1/2, so the order shows ln((1 + e^eps)/2) of the claimed eps (0.62 for eps = 1); half "
         "the noise shows ln((1 + e^(2 eps))/2) > eps for every eps (1.43 for eps = 1)."))
