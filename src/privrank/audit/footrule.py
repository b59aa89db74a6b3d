"""Audit registrations of Hillebrand et al.: binary tree, footrule aggregation, DP-PTAS.

Neighbouring inputs have the same public ``n`` and differ in one record (one value for the
approximate median, one ranking otherwise); the pairs below attain the exact sensitivities
the mechanisms are calibrated to.

Binary tree and footrule
    The released vector (the weighted node aggregates) is observed. Runs are batched: the
    tree's own release function noises ``trials`` copies of the exact aggregates at once, and
    every audit first checks that, for the same seed, the batch's first copy is bit-for-bit
    the release of the public function (for the exact Laplace and Gaussian samplers, which
    draw a batch in another order, that the batch has the public function's calibration) (:func:`~privrank.mechanisms.tree.approximate_median`,
    :func:`~privrank.aggregation.private_footrule.dp_footrule`,
    :func:`~privrank.aggregation.private_footrule.ldp_footrule`, whose central release is
    :func:`~privrank.mechanisms.tree.footrule_counts_release`), so the batch is the public
    mechanism run ``trials`` times. Local reports are drawn per record from a counter-based
    stream, so the batch is ``trials`` records under one key; the local footrule audit also
    checks the first against the report the engines draw for that record
    (:func:`privrank.sufficient_statistics`, ``kind="rankings"``).

DP-PTAS (:func:`~privrank.aggregation.private_footrule.dp_ptas`)
    Run once per trial on two items (the smallest instance, where one ranking moves one
    pairwise fraction by ``1/n``) with a solver that records the matrices it is handed: those
    are post-processing of the releases and, unlike the returned order, keep their tails.
    ``n`` is chosen so that clipping to ``[0, 1]`` and Algorithm 4's boundedness test never
    cut the tails the audit needs.

Algorithm 3's releases
    The solver only sees ``clip(s~ + t~)``, whose pair combinations hide the loss of the
    same-bucket release ``s~`` unless there are at least three items -- where the paper's
    printed Laplace scale ``m^2/(2 n eps B)`` is wrong (notes E2: too small by ``4(1 - B/m)``)
    -- and then spread it too thinly to sample. ``dp-ptas/buckets/laplace-release`` therefore
    audits both Laplace releases exactly: an independent implementation of the two statistics
    (same-bucket ordered pairs; two-way bucket marginals) enumerated over every pair of
    rankings of four items in two buckets, with the scales ``dp_ptas`` reports; its control
    ``paper-scale`` puts the printed scale in place of the reported one.
"""
from __future__ import annotations

import math
from itertools import permutations

import numpy as np

from ..aggregation.private_footrule import dp_footrule, dp_ptas, ldp_footrule
from ..data.rankings import Rankings, RankingTally, position_counts, positions_of
from ..engines import sufficient_statistics
from ..errors import InputError
from ..guarantees import UNIT_RANKING
from ..mechanisms import tree
from ..mechanisms.local_vectors import duchi_l2_records, report_unit
from ..mechanisms.noise import discrete_gaussian_mu
from ..mechanisms.randomized_response import record_key
from .registry import LaplaceRelease, Mechanism, Samples, register
from .runs import GAUSSIAN_TAILS_NOTE, TWO_ITEMS, solver_views

#: domain of the audited approximate median; number of ranked items for footrule (two for
#: Gaussian noise, whose audit needs millions of runs: the smallest release keeps them cheap)
MEDIAN_DOMAIN = 4
FOOTRULE_ITEMS = {"laplace": 3, "gaussian": 2, "local": 3}
#: runs per input of the batched audits; Gaussian tails at delta = 1e-6 need millions
TREE_TRIALS = {"laplace": 200_000, "gaussian": 1_000_000, "local": 200_000}


class BatchMismatch(InputError):
    """The batched sampler does not reproduce the public function: the audit would be void."""


def _tree_batch(noise, layout, counts, public, radius, unit, epsilon, delta, trials, seed, engine=None):
    """``trials`` releases of the tree vector of one input, after checking the batch against
    ``public`` -- the public function's release for the same ``seed`` -- and, for local noise,
    ``engine``, the engines' sum of the record's fixed-point report for that seed.

    ``counts`` holds one row per tree (a one-hot row per record value); central noise is added
    by the tree's own release function to ``trials`` stacked copies; local noise is the
    fixed-point Duchi report of ``trials`` records (records 0, 1, ... under the seed's key, each
    holding the record's concatenated vector of radius ``radius``; record 0 is the public one).
    Exact discrete Laplace noise is drawn vectorised, so a batch cannot repeat the public draw:
    for it the batch must state the public release's calibration (the same function, the same
    scale), and the audit checks the noise actually drawn against the claim.
    """
    rng = np.random.default_rng
    if noise == "local":
        vector = (counts @ layout.design.T).ravel()
        reports = duchi_l2_records(np.tile(vector, (trials, 1)), radius=radius, epsilon=epsilon,
                                   key=record_key(seed))
        batch = report_unit(vector.size, radius, epsilon) * reports
        first = batch[0]
        if engine is not None and not np.array_equal(engine, reports[0]):
            raise BatchMismatch("the engines' local report differs from the batch's for the same seed")
    else:
        k = counts.shape[0]
        s1, s2 = (tree.single_sensitivity(layout, p) if k == 1 else
                  tree.parallel_sensitivity(layout, p) for p in (1, 2))
        noisy, scale, *_ = tree._central_release(np.tile(counts, (trials, 1)), 1, layout, s1, s2, noise,
                                                 epsilon, delta, rng(seed), unit, "audit",
                                                 counts.shape[0] * layout.size)
        batch = noisy.reshape(trials, -1)
        if noise in ("laplace", "gaussian"):  # exact sampling is vectorised: the batch states the calibration
            if scale != public.noise_scale:
                raise BatchMismatch(f"the batched {noise} release is calibrated unlike the public function's")
            return batch
        first = batch[0]
    public = public.aggregates if hasattr(public, "aggregates") else public
    if not np.array_equal(np.asarray(public).ravel(), first.ravel()):
        raise BatchMismatch(f"the batched {noise} release differs from the public function's "
                            "for the same seed")
    return batch


# --------------------------------------------------------------------------------------------
# approximate median (Algorithm 1)
# --------------------------------------------------------------------------------------------

def _median_run(noise: str):
    def run(epsilon, delta, trials, rng) -> Samples:
        layout = tree.tree_layout(MEDIAN_DOMAIN, tree.DEFAULT_KAPPA[noise])
        # the two values whose weighted vectors are farthest apart: the sensitivity pair
        dist = layout.distance_power(1 if noise == "laplace" else 2)
        pair = np.unravel_index(np.argmax(dist), dist.shape)
        radius = float(np.max(np.linalg.norm(layout.design, axis=0)))
        out = []
        for x in pair:
            seed = int(rng.integers(2 ** 63))
            public = tree.approximate_median([x], MEDIAN_DOMAIN, epsilon=epsilon, delta=delta,
                                             noise=noise, rng=seed)
            out.append(_tree_batch(noise, layout, np.eye(MEDIAN_DOMAIN)[[x]], public, radius,
                                   tree.UNIT_RECORD, epsilon, delta, trials, seed))
        return Samples(*out)
    return run


# --------------------------------------------------------------------------------------------
# footrule (Algorithm 2, Corollary 3.2)
# --------------------------------------------------------------------------------------------

def _ranking_pair(layout, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Two orders whose concatenated tree vectors are farthest apart in l_p (brute force)."""
    m = layout.m
    W = layout.distance_power(p)
    sigma = max(permutations(range(m)), key=lambda s: W[np.arange(m), list(s)].sum())
    first = np.arange(m)                  # positions: item q at position q
    return first, np.argsort(np.asarray(sigma))  # order whose positions are sigma


def _footrule_run(noise: str):
    def run(epsilon, delta, trials, rng) -> Samples:
        layout = tree.tree_layout(FOOTRULE_ITEMS[noise], tree.DEFAULT_KAPPA[noise])
        radius = float(np.sqrt(np.sum(layout.design ** 2)))
        out = []
        for order in _ranking_pair(layout, 1 if noise == "laplace" else 2):
            seed = int(rng.integers(2 ** 63))
            engine = None
            if noise == "local":
                public = ldp_footrule(order[None, :], epsilon=epsilon, rng=seed)
                tally = sufficient_statistics(Rankings.from_orders(order[None, :]), kind="rankings",
                                              statistic="positions", epsilon=epsilon, rng=seed)
                assert isinstance(tally, RankingTally)  # kind "rankings"
                engine = tally.reports
            else:
                public = dp_footrule(order[None, :], epsilon=epsilon, delta=delta, rng=seed)
            counts = position_counts(positions_of(order[None, :]))
            out.append(_tree_batch(noise, layout, counts, public.release, radius,
                                   UNIT_RANKING, epsilon, delta, trials, seed, engine))
        return Samples(*out)
    return run


# --------------------------------------------------------------------------------------------
# DP-PTAS (Section 5)
# --------------------------------------------------------------------------------------------

def _ptas_profile(epsilon: float, delta: float) -> tuple[int, int]:
    """``(n, k)``: ``k`` voters rank item 0 first and ``n - k`` item 1; the neighbour moves one.

    ``n`` puts the pairwise fraction (1/2) at least 20 Laplace scales (or 8 Gaussian standard
    deviations) of the noisiest stage -- Algorithm 4's classification at 1/12 of the budget --
    away from 0, 1 and the thresholds 1/6 and 5/6, so no run is clipped or unbounded.
    """
    if delta == 0:
        n = 20 * 3 * 12 / epsilon
    else:
        n = 8 * 3 * math.sqrt(12) / discrete_gaussian_mu(epsilon, delta)
    n = 2 * math.ceil(n / 2)
    return n, n // 2


def _ptas_run(variant: str):
    def run(epsilon, delta, trials, rng) -> Samples:
        n, k = _ptas_profile(epsilon, delta)
        views = 2 if variant == "lopsided" else 1  # lopsided: Algorithm 4's instance, baseline
        return Samples(*(solver_views(
            lambda solver, c=c: dp_ptas(TWO_ITEMS, epsilon=epsilon, delta=delta, variant=variant,
                                        solver=solver, buckets=1, weights=[c, n - c], rng=rng),
            trials, views) for c in (k, k - 1)))
    return run


BUCKET_ITEMS, BUCKETS = 4, 2


def _bucket_statistics(order: np.ndarray, B: int) -> np.ndarray:
    """Algorithm 3's released statistics of one ranking (n = 1), from their definitions.

    Same-bucket ordered pairs ``s[u, v] = 1[u, v in one bucket, u before v]`` for ``u != v``
    (row-major), then for every pair ``u < v`` the two-way marginal cells ``(b, b')``, ``b != b'``:
    ``1[u in bucket b, v in bucket b']``.
    """
    m = order.size
    pos = np.argsort(order)
    bucket = np.repeat(np.arange(B), [len(c) for c in np.array_split(np.arange(m), B)])[pos]
    u, v = np.nonzero(~np.eye(m, dtype=bool))
    same = (bucket[u] == bucket[v]) & (pos[u] < pos[v])
    i, j = np.triu_indices(m, 1)
    cells = [(bucket[i] == b) & (bucket[j] == c) for b in range(B) for c in range(B) if b != c]
    return np.concatenate([same, np.stack(cells, axis=1).ravel()]).astype(float)


def _bucket_release(printed_scale: bool):
    def run(epsilon, delta, trials, rng) -> LaplaceRelease:
        m, B = BUCKET_ITEMS, BUCKETS
        orders = [np.array(p) for p in permutations(range(m))]
        stats = np.array([_bucket_statistics(o, B) for o in orders])
        res = dp_ptas(orders[0][None, :], epsilon=epsilon, variant="buckets", buckets=B,
                      solver=lambda W: np.arange(m), rng=rng)
        s_scale = m * m / (2 * epsilon * B) if printed_scale else res.details["s_scale"]
        n_s = m * (m - 1)
        scales = np.concatenate([np.full(n_s, s_scale),
                                 np.full(stats.shape[1] - n_s, res.details["marginal_scale"])])
        i, j = np.triu_indices(len(orders), 1)
        labels = tuple(f"rankings {orders[a].tolist()} and {orders[b].tolist()}" for a, b in zip(i, j))
        return LaplaceRelease(np.abs(stats[i] - stats[j]), scales, labels)
    return run


# --------------------------------------------------------------------------------------------
# registrations
# --------------------------------------------------------------------------------------------

for _noise, _words in (("laplace", "Laplace noise, epsilon-DP"),
                       ("gaussian", "discrete Gaussian noise, (epsilon, delta)-DP"),
                       ("local", "Duchi et al. l2 randomizer, epsilon-local DP")):
    register(Mechanism(
        name=f"binary-tree/{_noise}",
        description=f"private approximate median, modified binary tree (Algorithm 1), {_words}",
        unit=f"one value of a record (domain of {MEDIAN_DOMAIN} values, n public)",
        covers=("privrank.mechanisms.tree.approximate_median",),
        run=_median_run(_noise), approximate=_noise == "gaussian", trials=TREE_TRIALS[_noise]))
    register(Mechanism(
        name=f"footrule/{_noise}",
        description=f"footrule cost matrix and aggregation (Algorithm 2), {_words}",
        unit=f"one ranking replaced ({FOOTRULE_ITEMS[_noise]} items, n public)",
        covers=("privrank.mechanisms.tree.footrule_cost_release",) + (
            ("privrank.aggregation.private_footrule.ldp_footrule", "privrank.engines.sufficient_statistics")
            if _noise == "local" else ("privrank.aggregation.private_footrule.dp_footrule",
                                       "privrank.mechanisms.tree.footrule_counts_release")),
        run=_footrule_run(_noise), approximate=_noise == "gaussian", trials=TREE_TRIALS[_noise]))

_LOPSIDED = (
    "Three stages of a third of the budget each. With two items only Algorithm 4's value copy "
    "(epsilon/4) and the baseline (epsilon/3) reach the solver; the classification (epsilon/12) "
    "and the selection (epsilon/3) show only through the order. At F = 0.5 the visible loss is "
    "{visible}, which needs ~2e5 runs at ~0.6 ms each; the declared control F = {f} is caught "
    "with the default trials.")
PTAS_CONTROLS = {  # (variant, noise): (declared control, runs per input, note)
    ("one-release", "laplace"): (0.5, 10_000, ""),
    ("buckets", "laplace"): (0.5, 10_000, ""),
    ("lopsided", "laplace"): (0.3, 4_000, _LOPSIDED.format(visible="7/6 epsilon", f=0.3)),
    ("one-release", "gaussian"): (0.15, 5_000, GAUSSIAN_TAILS_NOTE.format(f=0.15)),
    ("buckets", "gaussian"): (0.15, 5_000, GAUSSIAN_TAILS_NOTE.format(f=0.15)),
    ("lopsided", "gaussian"): (0.1, 4_000, _LOPSIDED.format(
        visible="epsilon = 1.47 at delta = 1e-6 (mu = 0.34 for epsilon = 1)", f=0.1)),
}

#: the releases of the pairwise-matrix module that only one variant draws
PTAS_RELEASES = {"lopsided": ("privrank.mechanisms.pairwise_matrix.noisy_cost_difference",),
                 "buckets": ("privrank.mechanisms.pairwise_matrix.bucket_release",)}

for (_variant, _noise), (_control, _trials, _note) in PTAS_CONTROLS.items():
    _words = "Laplace, epsilon-DP" if _noise == "laplace" else "discrete Gaussian, (epsilon, delta)-DP"
    register(Mechanism(
        name=f"dp-ptas/{_variant}/{_noise}",
        description=f"private Kemeny via a noisy pairwise matrix, {_variant} variant, {_words}",
        unit="one ranking replaced (2 items, n public)",
        covers=("privrank.aggregation.private_footrule.dp_ptas", *PTAS_RELEASES.get(_variant, ())),
        run=_ptas_run(_variant), approximate=_noise == "gaussian", trials=_trials,
        control=_control, note=_note))

register(Mechanism(
    name="dp-ptas/buckets/laplace-release",
    description="Algorithm 3's two Laplace releases, exact loss over all pairs of rankings",
    unit=f"one ranking replaced ({BUCKET_ITEMS} items, {BUCKETS} buckets, n = 1 public)",
    covers=("privrank.aggregation.private_footrule.dp_ptas", *PTAS_RELEASES["buckets"]),
    run=_bucket_release(False), controls={"paper-scale": _bucket_release(True)}, control="paper-scale",
    note="exact from the noise scales dp_ptas reports, so its control is the paper's printed scale; "
         "the noise actually drawn (and a release drawing half of it) is audited by "
         "dp-ptas/buckets/laplace on the released outputs themselves"))
