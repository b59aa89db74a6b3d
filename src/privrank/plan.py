"""The privacy planner: the ranking error to expect at an epsilon, or the smallest epsilon for a target.

Before any data are collected, :func:`predict` simulates the whole pipeline for a design of
``m`` items and ``L`` users, each answering ``K`` comparisons (default: every pair once, the
complete design of Xu, Sun, Cheng), and reports the expected Kendall tau distance (a pair the
estimate ties counts one half: the printed ranking breaks the tie by chance), top-k Hamming
error and ``l_inf`` score error; :func:`smallest_epsilon` finds the smallest epsilon
whose predicted error meets a target.

Assumptions, stated with every answer
    True BTL scores evenly spaced over ``[-spread/2, spread/2]`` (default 4, the range of the
    U(-2, 2) scores of Xu et al.'s simulations). With ``K`` equal to all ``P = m (m-1) / 2`` pairs
    every pair is compared ``L`` times (Xu et al.'s design); otherwise each of the ``N = L K``
    comparisons is of a pair drawn uniformly at random, so pair counts are multinomial (for
    ``N << P`` this is the Erdos-Renyi design of Cai et al. with ``p = N / P`` and one comparison
    per observed pair).

Mechanisms
    ``local`` (Xu, Sun, Cheng): debiased randomized response per comparison and the BTL fit with
    the default ridge ``G = coth^2(eps/2)``; the per-user guarantee is ``K eps`` by basic
    composition. ``central`` (Cai, Chakraborty, Wang), per comparison under edge adjacency:
    the objective-perturbed MLE with the theory ridge, or noisy Copeland counts (no ``l_inf``:
    counts do not estimate scores); the per-user guarantee is ``K eps`` by group privacy.

How it predicts
    Each replication draws the privatised sufficient statistic directly (local:
    :func:`privrank.simulate.sample_debiased_release`; central: binomial wins per pair plus the
    mechanism's Laplace noise), which has exactly the distribution of running the mechanism on
    every user's answers, and all replications are fitted in one vectorised solve. The search
    simulates a geometric grid of epsilons, then bisects the bracketing interval in the
    theory's noise coordinate: the local estimator's error scales with
    ``sqrt(v + 1 / (4 sinh^2(eps/2)))`` (Xu et al. Lemma 2 and Theorem 2, ``v`` the answers' own
    variance) and the central privacy term with ``1/eps`` (Cai et al. Theorem 2.2). Answers are
    seeded: the same question gives the same answer.

Size
    A prediction holds ``replications x m^2`` numbers (the fits' Hessians) and its sampler draws
    per comparison of a pair. :func:`check_size` refuses, before simulating, a request above
    ``PRIVRANK_MAX_PLAN_CELLS`` (replications x items^2 summed over the epsilons simulated),
    ``PRIVRANK_MAX_PLAN_PAIR_COUNT`` (comparisons of one pair) or ``PRIVRANK_MAX_MEMORY_MB``
    (:mod:`privrank.limits`). The predicted errors of larger studies can be read off smaller
    ones: the error depends on the comparisons per pair, not on the raw number of users.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import limits
from ._rng import as_generator
from .errors import InputError, check_epsilon, check_whole
from .draws import simulating
from .mechanisms.noise import laplace
from .mechanisms.randomized_response import added_variance, variance_inflation
from .metrics import kendall_distance, linf_error, top_k_hamming
from .pairwise.btl import newton_btl_many
from .pairwise.central import (copeland_noise, copeland_noise_scale, objective_perturbation_calibration,
                               theory_ridge)
from .pairwise.links import LOGISTIC
from .simulate import sample_debiased_release

MECHANISMS = {"local": ("debiased-rr",), "central": ("objective-perturbation", "noisy-copeland")}
METRICS = ("kendall", "topk_hamming", "linf")
EPSILON_GRID = tuple(float(x) for x in np.geomspace(0.02, 50.0, 14))
BISECTIONS = 5
#: the utility frontier, in the package (benchmarks/bench_utility.py writes it)
FRONTIER_FILE = "frontier.json"
#: the floor of an interpolated error: one misordered pair in this many runs (_read_off)
FLOOR_PAIRS = 10


#: the largest score spread a plan takes: a log-odds range of 60
MAX_SPREAD = 60.0


@dataclass(frozen=True)
class Design:
    """A planned study: items, users, comparisons per user, model, mechanism, top-k size, score spread."""

    items: int
    users: int
    comparisons_per_user: int | None = None
    model: str = "local"
    mechanism: str | None = None
    k: int | None = None
    spread: float = 4.0
    true_scores: tuple | None = None  # scores to simulate instead of the evenly spaced ones
    scores_from: str = ""             # where true_scores came from, for the assumptions line

    def __post_init__(self):
        if int(self.items) < 2 or int(self.users) < 1:
            raise InputError("a design needs at least 2 items and 1 user")
        if self.model not in MECHANISMS:
            raise InputError("model must be 'local' or 'central'")
        if self.mechanism is not None and self.mechanism not in MECHANISMS[self.model]:
            raise InputError(f"the {self.model} model plans {', '.join(MECHANISMS[self.model])}")
        if self.comparisons_per_user is not None and not 1 <= self.comparisons_per_user <= self.pairs:
            raise InputError(f"comparisons per user must lie between 1 and the {self.pairs} pairs")
        if self.k is not None and not 1 <= self.k < self.items:
            raise InputError("k must lie between 1 and the number of items - 1")
        if not (0 < self.spread <= MAX_SPREAD):
            raise InputError(f"spread must be > 0 and at most {MAX_SPREAD:g} (beyond it the best item beats the "
                             "worst with probability 1 - 1e-26: nothing left to plan)")
        if self.true_scores is not None and (len(self.true_scores) != int(self.items)
                                             or not np.all(np.isfinite(self.true_scores))):
            raise InputError("true_scores must give one finite score per item")

    @property
    def pairs(self) -> int:
        return self.items * (self.items - 1) // 2

    @property
    def per_user(self) -> int:
        return self.pairs if self.comparisons_per_user is None else int(self.comparisons_per_user)

    @property
    def method(self) -> str:
        return self.mechanism or MECHANISMS[self.model][0]

    @property
    def top(self) -> int:
        return self.k if self.k is not None else max(1, int(round(self.items / 4)))

    @property
    def scores(self) -> np.ndarray:
        if self.true_scores is not None:
            theta = np.asarray(self.true_scores, dtype=float)
            return theta - theta.mean()
        return np.linspace(-self.spread / 2, self.spread / 2, self.items)

    def pair_counts(self, R: int, gen) -> np.ndarray:
        """``R x P`` comparisons per pair (pairs in ``np.triu_indices`` order), one row per replication."""
        if self.per_user == self.pairs:
            return np.full((R, self.pairs), float(self.users))
        return gen.multinomial(self.users * self.per_user, np.full(self.pairs, 1.0 / self.pairs), R).astype(float)

    def assumptions(self) -> str:
        design = f"every pair compared {self.users} times" if self.per_user == self.pairs else \
            f"{self.users * self.per_user} comparisons of uniformly random pairs"
        truth = (f"true scores: {self.scores_from or 'as given'}" if self.true_scores is not None else
                 f"true scores evenly spaced over [{-self.spread / 2:g}, {self.spread / 2:g}]")
        return f"{truth}; {design}; top-k with k = {self.top}"

    def guarantee(self, epsilon: float) -> str:
        how = "basic composition" if self.model == "local" else "group privacy"
        return (f"{epsilon:.4g}-DP per comparison ({self.model} model); by {how}, each user's {self.per_user} "
                f"comparisons together are {self.per_user * epsilon:.4g}-DP")


@dataclass(frozen=True)
class Prediction:
    """Predicted mean errors at one epsilon, with their Monte-Carlo standard errors."""

    design: Design
    epsilon: float
    predicted: dict
    standard_error: dict
    replications: int

    @property
    def epsilon_per_user(self) -> float:
        return self.epsilon * self.design.per_user

    def to_dict(self) -> dict:
        d = self.design
        return {"model": d.model, "mechanism": d.method, "items": d.items, "users": d.users,
                "comparisons_per_user": d.per_user, "k": d.top, "epsilon": self.epsilon,
                "epsilon_per_user": self.epsilon_per_user, "predicted": self.predicted,
                "standard_error": self.standard_error, "replications": self.replications,
                "guarantee": d.guarantee(self.epsilon), "assumptions": d.assumptions()}


def design_like(comparisons, *, users: int | None = None, comparisons_per_user: int | None = None,
                **options) -> Design:
    """A design whose true scores are the non-private BTL fit of ``comparisons`` (a pilot or public
    data set: the plan shows facts of it), with its number of users and comparisons per user
    unless given. Simulating the scores a study actually has, rather than evenly spaced ones, is
    what makes the prediction hold: on LLMFAO the evenly spaced default is about 2x optimistic."""
    from .pairwise.btl import fit_btl

    fit = fit_btl(comparisons)
    if users is None:
        if comparisons.users is None:
            raise InputError("the data have no user column: give the planned number of users")
        users = len(comparisons.users)
    if comparisons_per_user is None:
        comparisons_per_user = min(max(1, round(comparisons.n_records / users)), len(fit.items) * (len(fit.items) - 1) // 2)
    return Design(len(fit.items), users, comparisons_per_user, true_scores=tuple(fit.scores),
                  scores_from=f"the non-private BTL fit ({fit.info.get('estimate', 'ridge')}) of the data given",
                  **options)


def replications(design: Design) -> int:
    """Replications per prediction: 200 for 10 items, fewer for more (the metrics average over items)."""
    return int(min(200, max(20, 2000 // design.items)))


def check_size(design: Design, predictions: int = 1, reps: int | None = None) -> None:
    """Refuse a plan whose simulation exceeds the limits of :mod:`privrank.limits` (module docstring).

    ``predictions`` is the number of epsilons that will be simulated (``len(EPSILON_GRID) +
    BISECTIONS`` for a search), ``reps`` the replications of each (default :func:`replications`).
    """
    R = replications(design) if reps is None else int(reps)
    m = int(design.items)
    per_pair = math.ceil(int(design.users) * design.per_user / design.pairs)
    limits.check("PLAN_PAIR_COUNT", per_pair, "comparisons per pair of the planned study",
                 "plan the same comparisons per pair with fewer users: the predicted error depends on them, "
                 "and it shrinks like 1/sqrt(comparisons per pair)")
    limits.check("PLAN_CELLS", float(predictions) * R * m * m,
                 f"the planner's simulation size ({predictions} epsilon(s) x {R} replications x {m}^2)",
                 "plan a smaller item set with the same comparisons per item, or predict at one epsilon")
    limits.check("MEMORY_MB", 8.0 * R * (2 * m * m + 4 * design.pairs) / 2 ** 20,
                 f"the planner's estimated memory on {m} items (MiB)", "plan a smaller item set")


def predict(design: Design, epsilon: float, *, reps: int | None = None, rng=0) -> Prediction:
    """Mean Kendall distance, top-k Hamming error and ``l_inf`` error at ``epsilon`` (see the module docstring)."""
    eps = check_epsilon(epsilon)
    check_size(design, 1, reps)
    R = replications(design) if reps is None else int(reps)
    gen = as_generator(rng)
    theta = design.scores
    est = _simulate(design, eps, R, gen)
    values = {"kendall": [kendall_distance(e, theta, tie_penalty=0.5) for e in est],
              "topk_hamming": [top_k_hamming(e, theta, design.top) for e in est],
              "linf": None if design.method == "noisy-copeland" else [linf_error(e, theta) for e in est]}
    mean = {k: None if v is None else float(np.mean(v)) for k, v in values.items()}
    se = {k: None if v is None else float(np.std(v, ddof=1) / math.sqrt(len(v))) for k, v in values.items()}
    return Prediction(design, eps, mean, se, R)


def smallest_epsilon(design: Design, metric: str, target: float, *, reps: int | None = None, rng=0):
    """The smallest epsilon whose predicted ``metric`` is at most ``target``, and the curve searched.

    Returns ``(prediction at that epsilon, predictions on the grid)``. Raises InputError when even
    the largest epsilon of the grid (50) misses the target: then more users or comparisons are
    needed, not more epsilon.
    """
    if metric not in METRICS:
        raise InputError(f"target metric must be one of {', '.join(METRICS)}")
    if metric == "linf" and design.method == "noisy-copeland":
        raise InputError("noisy Copeland counts do not estimate scores: target kendall or topk_hamming")
    if not (math.isfinite(target) and target > 0):
        raise InputError("the target must be a positive number")
    check_size(design, len(EPSILON_GRID) + BISECTIONS, reps)
    curve = [predict(design, e, reps=reps, rng=rng) for e in EPSILON_GRID]
    meets = [p.predicted[metric] <= target for p in curve]
    if not any(meets):
        raise InputError(f"no epsilon up to {EPSILON_GRID[-1]:g} meets {metric} <= {target:g}: the predicted error "
                         f"at epsilon {EPSILON_GRID[-1]:g} is {curve[-1].predicted[metric]:.3g}; more users or "
                         "comparisons per user are needed")
    first = meets.index(True)
    if first == 0:
        return curve[0], curve
    lo, hi = curve[first - 1], curve[first]
    for _ in range(BISECTIONS):
        mid = predict(design, _midpoint(design, lo.epsilon, hi.epsilon), reps=reps, rng=rng)
        lo, hi = (lo, mid) if mid.predicted[metric] <= target else (mid, hi)
    return hi, curve


def _midpoint(design: Design, lo: float, hi: float) -> float:
    """The epsilon halfway between ``lo`` and ``hi`` in the theory's noise coordinate."""
    if design.model == "central":
        return 2.0 / (1.0 / lo + 1.0 / hi)
    theta = design.scores
    i, j = np.triu_indices(design.items, 1)
    P = LOGISTIC.cdf(theta[i] - theta[j])
    v = float(np.mean(P * (1 - P)))
    target = 0.5 * (math.sqrt(v + float(added_variance(lo))) + math.sqrt(v + float(added_variance(hi))))
    x = target ** 2 - v  # 1 / (4 sinh^2(eps/2)) = x
    return 2.0 * math.asinh(1.0 / (2.0 * math.sqrt(x)))


@simulating()  # synthetic data: no privacy spent, allowed inside a ledger's block
def _simulate(design: Design, eps: float, R: int, gen) -> np.ndarray:
    """``R x m`` estimates from the sufficient-statistic sampler and one vectorised solve."""
    m = design.items
    theta = design.scores
    i, j = np.triu_indices(m, 1)
    totals = design.pair_counts(R, gen)
    if design.model == "local":
        wins = np.zeros_like(totals)
        for n in np.unique(totals[totals > 0]):  # one sampler call per distinct count: pairs compared n times
            r, k = np.nonzero(totals == n)
            rel = sample_debiased_release(theta, int(n), eps, gen, pairs=(i[k], j[k]))
            wins[r, k] = rel.counts.wins
        est, _ = newton_btl_many(i, j, m, totals, wins, float(variance_inflation(eps)))
        return est - est.mean(axis=1, keepdims=True)
    wins = gen.binomial(totals.astype(np.int64), LOGISTIC.cdf(theta[i] - theta[j])).astype(float)
    if design.method == "noisy-copeland":
        counts = np.stack([np.bincount(i, w, m) + np.bincount(j, t - w, m) for w, t in zip(wins, totals)])
        return counts + copeland_noise(copeland_noise_scale(eps), (R, m), gen)
    scale, gamma_min = objective_perturbation_calibration(eps)
    gamma = max(theory_ridge(m, design.users * design.per_user), gamma_min)
    est, _ = newton_btl_many(i, j, m, totals, wins, gamma / 2.0, linear=laplace(scale, (R, m), gen))
    return est - est.mean(axis=1, keepdims=True)


def plot_curve(curve, path=None, *, chosen: Prediction | None = None, force: bool = False):
    """Predicted errors against epsilon (log scale), marking the chosen epsilon; needs matplotlib.

    Returns the :class:`matplotlib.figure.Figure` (built without pyplot, shown inline by a notebook:
    :class:`~privrank.inline_figure.InlineFigure`), also saved to ``path`` if given.
    """
    from .inference import new_figure  # imported where used: choosing a method needs no intervals

    fig, out = new_figure(path, force=force, figsize=(6, 4), layout="tight")
    ax = fig.subplots()
    eps = [c.epsilon for c in curve]
    for metric in METRICS:
        if curve[0].predicted[metric] is not None:
            ax.plot(eps, [c.predicted[metric] for c in curve], marker="o", ms=3, label=metric)
    if chosen is not None:
        ax.axvline(chosen.epsilon, color="k", ls=":", label=f"epsilon = {chosen.epsilon:.3g}")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon per comparison")
    ax.set_ylabel("predicted error")
    d = curve[0].design
    ax.set_title(f"{d.model} ({d.method}): {d.items} items, {d.users} users", fontsize=9)
    ax.legend(fontsize=8)
    if out is not None:
        out.save_figure(fig)
    return fig


# --------------------------------------------------------------------------------------------
# every method's error, and the choice of --method auto
# --------------------------------------------------------------------------------------------

#: the private aggregation methods of full rankings (``privrank aggregate --method``) by trust model;
#: ``noisy-matrix+borda`` and ``+copeland`` are the noisy-matrix release ordered by Borda or Copeland
AGGREGATION_METHODS = {
    "central": ("noisy-borda", "noisy-matrix", "noisy-matrix+borda", "noisy-matrix+copeland", "noisy-matrix+kwiksort",
                "hay-quicksort", "dp-kwiksort", "exponential", "dp-footrule", "dp-ptas"),
    "local": ("ldp-matrix", "ldp-kwiksort", "ldp-footrule"),
}
#: the model of full rankings the planner assumes (a model of the utility frontier): Mallows around
#: the true order with dispersion 0.8, a clear but noisy consensus
PLANNER_MODEL = "mallows-0.8"
#: the models of full rankings over which ``--method auto`` guards against the worst case: a
#: concentrated and a dispersed Mallows model and Plackett-Luce (how dispersed the rankings are
#: is a fact of the data, which the choice may not read)
ROBUST_MODELS = ("mallows-0.8", "mallows-0.95", "plackett-luce")
#: the methods that take no delta (pure epsilon-DP)
PURE_ONLY = ("exponential", "ldp-matrix", "ldp-kwiksort", "ldp-footrule")


@dataclass(frozen=True)
class MethodPrediction:
    """One method's expected Kendall distance to the truth (the fraction of pairs it misorders).

    ``source`` says where the number comes from: the utility frontier's measurements (the grid
    points it is read from) or a simulation of the planner; ``outside`` that the parameters lie
    outside the measured grid (the nearest measurements are used).
    """

    method: str
    kendall: float
    standard_error: float
    source: str
    outside: bool = False

    def to_dict(self) -> dict:
        return {"method": self.method, "kendall": self.kendall, "standard_error": self.standard_error,
                "source": self.source, "outside_measured_grid": self.outside}


@dataclass(frozen=True)
class Choice:
    """The method ``auto`` chose, every candidate's prediction (best first) and why, in a sentence."""

    method: str
    predictions: tuple
    reason: str

    def to_dict(self) -> dict:
        return {"method": self.method, "reason": self.reason, "predictions": [p.to_dict() for p in self.predictions]}


@lru_cache(maxsize=1)
def frontier() -> dict:
    """The utility frontier shipped with privrank (``benchmarks/bench_utility.py``, ``docs/frontier.md``)."""
    from importlib import resources

    return json.loads((resources.files("privrank") / FRONTIER_FILE).read_text(encoding="utf-8"))


def _axis_bracket(values: np.ndarray, x: float) -> tuple[float, float, float]:
    """The two grid values around ``x`` on one (log) axis and ``x``'s weight on the upper one
    (clamped to the grid's ends)."""
    if x <= values[0]:
        return values[0], values[0], 0.0
    if x >= values[-1]:
        return values[-1], values[-1], 0.0
    k = int(np.searchsorted(values, x))
    if abs(values[k] - x) < 1e-9:
        return values[k], values[k], 0.0
    lo, hi = values[k - 1], values[k]
    return lo, hi, (x - lo) / (hi - lo)


def _read_off(rows: list, point: tuple) -> tuple[float, float, str, bool]:
    """Kendall distance and standard error at ``point = (m, n, epsilon)``, interpolated between the
    measured grid points around it: at each of the two numbers of items around ``m``, bilinearly
    in the logarithms of the rankings, of epsilon and of the error (plus a floor of one pair in
    ``FLOOR_PAIRS`` runs, so a measured zero stays finite: errors fall geometrically as rankings
    and epsilon grow), then linearly between the two in the logarithm of the items (the error
    grows with them about linearly). Where a corner was not measured, the nearest measurement (in
    the coordinates' logarithms) is used."""
    logs = np.log([[r["m"], r["n"], r["epsilon"]] for r in rows])
    q = np.log(np.asarray(point, dtype=float))
    axes = [np.unique(logs[:, a]) for a in range(3)]
    brackets = [_axis_bracket(axes[a], q[a]) for a in range(3)]
    outside = any(q[a] < axes[a][0] - 1e-9 or q[a] > axes[a][-1] + 1e-9 for a in range(3))
    found = {tuple(np.round(l, 9)): r for l, r in zip(logs, rows)}

    def corner_row(key):
        row = found.get(tuple(np.round(key, 9)))
        return rows[int(np.argmin(np.sum((logs - np.asarray(key)) ** 2, axis=1)))] if row is None else row

    value = se2 = 0.0
    for upper_m in (0, 1):
        wm = brackets[0][2] if upper_m else 1.0 - brackets[0][2]
        if wm == 0.0:
            continue
        log_value = log_floor = 0.0
        for corner in np.ndindex(2, 2):
            w, key = 1.0, [brackets[0][upper_m]]
            for a, upper in zip((1, 2), corner):
                lo, hi, t = brackets[a]
                w *= t if upper else 1.0 - t
                key.append(hi if upper else lo)
            if w == 0.0:
                continue
            row = corner_row(key)
            floor = 2.0 / (row["m"] * (row["m"] - 1) * FLOOR_PAIRS)
            log_value += w * math.log(row["kendall"] + floor)
            log_floor += w * math.log(floor)
            se2 += (wm * w * row["kendall_se"]) ** 2
        value += wm * max(0.0, math.exp(log_value) - math.exp(log_floor))

    def span(a, name):
        lo, hi = (f"{x:,.0f}" if a < 2 else f"{x:g}" for x in (float(np.exp(v)) for v in brackets[a][:2]))
        return f"{name} {lo}" if lo == hi else f"{name} {lo} to {hi}"
    where = ", ".join(span(a, name) for a, name in enumerate(("m", "n", "epsilon")))
    return value, math.sqrt(se2), where, outside


def predict_aggregation(items: int, rankings: int, epsilon: float, *, trust: str = "central",
                        methods=None, model: str = PLANNER_MODEL) -> list[MethodPrediction]:
    """Every aggregation method's expected Kendall distance to the truth (a fraction of the pairs)
    for ``rankings`` full rankings of ``items`` items at ``epsilon``, best first.

    Read off the utility frontier (:func:`frontier`) measured on data of ``model`` (default
    :data:`PLANNER_MODEL`), interpolated between its grid points (:func:`_read_off`; a model
    measured at one number of rankings is read there). A
    method never measured at these sizes (the exponential mechanism and the PTAS are feasible
    for few items only) is left out.
    """
    if trust not in AGGREGATION_METHODS:
        raise InputError("trust must be 'central' or 'local'")
    m, n = check_whole(items, name="items"), check_whole(rankings, name="rankings")
    if m < 2 or n < 1:
        raise InputError("a plan needs at least 2 items and 1 ranking")
    eps = check_epsilon(epsilon)
    table = frontier()
    wanted = AGGREGATION_METHODS[trust] if methods is None else tuple(methods)
    measured = [r for r in table["rows"] if r["family"] == "rankings" and r["model"] == model]
    if not measured:
        raise InputError(f"the utility frontier has no rankings of the model {model!r}")
    largest = max(r["m"] for r in measured)
    out = []
    for method in wanted:
        rows = [r for r in measured if r["method"] == method]
        if not rows or (m > max(r["m"] for r in rows) and max(r["m"] for r in rows) < largest):
            continue  # not feasible at this many items
        kendall, se, where, outside = _read_off(rows, (m, n, eps))
        out.append(MethodPrediction(method, kendall, se, f"utility frontier ({model}), measured at {where}", outside))
    return sorted(out, key=lambda p: p.kendall)


def _choice(predictions: list[MethodPrediction], what: str, best: MethodPrediction | None = None,
            why: str = "") -> Choice:
    best = best or predictions[0]
    others = ", ".join(f"{p.method} {p.kendall:.3g}" for p in predictions if p is not best)
    reason = (f"{best.method}: an expected Kendall distance to the truth of {best.kendall:.3g} +- "
              f"{best.standard_error:.2g} of the pairs misordered {what}" + (f" (others: {others})" if others else "")
              + f"{why}; {best.source}"
              + ("; outside the measured grid, the nearest measurements are used" if best.outside else "")
              + ". The choice reads only public parameters, never the data")
    return Choice(best.method, tuple(predictions), reason)


def choose_aggregation(items: int, rankings: int, epsilon: float, *, delta: float = 0.0, trust: str = "central",
                       candidates=None) -> Choice:
    """The aggregation method ``--method auto`` runs, among ``candidates`` (default every method of
    ``trust``; with ``delta > 0`` those with Gaussian noise).

    The methods whose predicted error (:func:`predict_aggregation`, on :data:`PLANNER_MODEL`)
    is within two standard errors of the smallest are the contenders; of them, the one whose
    largest excess error over the best method, on any model of :data:`ROBUST_MODELS`, is
    smallest: the choice must hold however dispersed the rankings are, which it cannot see.
    Public parameters only: the choice costs no privacy.
    """
    names = [c for c in (candidates or AGGREGATION_METHODS.get(trust, ())) if not (delta and c in PURE_ONLY)]
    predictions = predict_aggregation(items, rankings, epsilon, trust=trust, methods=names)
    if not predictions:
        raise InputError("no candidate method was measured at these sizes; name one (method=; CLI: --method)")
    top = predictions[0]
    contenders = [p for p in predictions
                  if p.kendall <= top.kendall + 2 * math.hypot(p.standard_error, top.standard_error)]
    why = ""
    if len(contenders) > 1:
        worst = dict.fromkeys((p.method for p in contenders), 0.0)
        measured = {r["model"] for r in frontier()["rows"] if r["family"] == "rankings"}
        for model in (m for m in ROBUST_MODELS if m in measured):
            there = {p.method: p.kendall for p in predict_aggregation(items, rankings, epsilon, trust=trust,
                                                                      methods=list(worst), model=model)}
            for method in worst:
                if method in there:
                    worst[method] = max(worst[method], there[method] - min(there.values()))
        chosen = min(contenders, key=lambda p: worst[p.method])
        if chosen is not top:
            why = (f"; chosen over {top.method} (within two standard errors) for its smaller worst-case excess "
                   f"error on the other rankings models measured ({', '.join(ROBUST_MODELS)})")
        top = chosen
    what = (f"for {items} items, {rankings} rankings, epsilon {epsilon:g}" +
            (f" (measured at delta 0; delta {delta:g} adds Gaussian noise of a similar scale)" if delta else ""))
    return _choice(predictions, what, top, why)


def choose_mechanism(items: int, comparisons: int, epsilon: float, *, rng=0) -> Choice:
    """The central mechanism of ``privrank rank --mechanism central-auto``: the smaller predicted
    Kendall distance of objective perturbation and noisy Copeland (:func:`predict`) for
    ``comparisons`` comparisons of uniformly random pairs of ``items`` items at ``epsilon`` per
    comparison. Public parameters only: the choice costs no privacy. A study beyond the planner's
    limits gets objective perturbation, unpredicted: it estimates scores on any design, where
    Copeland counts assume a balanced one."""
    predictions = []
    for mechanism in MECHANISMS["central"]:
        design = Design(items, comparisons, 1, model="central", mechanism=mechanism)
        try:
            p = predict(design, epsilon, rng=rng)
        except InputError:  # beyond the planner's limits
            return Choice("objective-perturbation", (), "objective-perturbation: the study is beyond the planner's "
                          "limits, so neither mechanism's error was predicted; objective perturbation estimates "
                          "scores on any design, where Copeland counts assume a balanced one")
        predictions.append(MethodPrediction(mechanism, p.predicted["kendall"], p.standard_error["kendall"],
                                            f"the planner's simulation ({p.replications} studies; {design.assumptions()})"))
    return _choice(sorted(predictions, key=lambda p: p.kendall),
                   f"for {items} items, {comparisons} comparisons, epsilon {epsilon:g} per comparison")
