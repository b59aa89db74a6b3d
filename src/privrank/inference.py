"""Confidence intervals for scores and ranks of pairwise releases (post-processing only).

Every function here reads a private result -- the BTL fit of a local release
(:func:`privrank.fit_btl`), the objective-perturbed MLE (:func:`privrank.perturbed_mle`) or noisy
Copeland counts (:func:`privrank.noisy_copeland`) -- together with public facts about the
comparison design, and never the raw comparisons. Intervals therefore cost no privacy and carry
the guarantee of the result they describe.

Two constructions, both including the noise the mechanism added:

* ``method="sandwich"``: the asymptotic covariance ``A^-1 (V + W) A^-1`` of the M-estimator, with
  ``A`` the Hessian of its penalised objective at the estimate, ``V`` the variance of the score
  contributed by the answers themselves (``P(1 - P)`` per answer under BTL) and ``W`` the
  variance the mechanism added: ``1 / (4 sinh^2(eps/2))`` per answer for debiased randomized
  response (Xu, Sun, Cheng Lemma 2 minus the answer's own variance), ``2 / eps^2`` per answer for
  local Laplace, ``2 lambda^2`` per item for the Laplace vector of objective perturbation (Cai,
  Chakraborty, Wang eq. 2.2, ``lambda = 8 kappa_1 m / eps``) and ``2 (2 m / eps)^2`` per item for
  noisy Copeland counts (Algorithm 2). Probabilities ``P`` are plugged in from the estimate.
* ``method="bootstrap"``: a parametric bootstrap through the mechanism: data are simulated from
  the fitted model on the release's design, passed through the same mechanism (randomized
  response and debiasing; a fresh Laplace vector; fresh count noise) and estimated again;
  intervals are the basic bootstrap intervals ``[2 t - q_hi, 2 t - q_lo]``.

The BTL intervals target the true scores theta* (centred to sum zero); noisy Copeland intervals
target the expected win counts ``sum_j n_ij P(i beats j)``, the quantity the counts estimate
without a model. From the same covariance come per-item rank intervals and, for every pair, the
probability that ``i`` is ahead of ``j``.

Rank aggregation (:func:`aggregate_intervals`) has no scores: its rank intervals and "ahead"
probabilities come from a parametric bootstrap over the released statistic (the noisy pairwise
matrix of Kemeny aggregation, the noisy tree of footrule aggregation), whose noise is drawn again
around the released values and solved again.

Cost. Both functions estimate their memory and work from public sizes (items, pairs, replicates)
before they allocate or draw anything, and refuse above the limits of :mod:`privrank.limits`:
``n_bootstrap`` above ``PRIVRANK_MAX_BOOTSTRAP``, an estimated peak memory above
``PRIVRANK_MAX_MEMORY_MB`` (the sandwich holds about ten ``m x m`` matrices; a bootstrap its
``n_bootstrap x m`` draws), and bootstrap work above ``PRIVRANK_MAX_BOOTSTRAP_WORK`` (replicates x
``m^2``, times ``m`` again where each replicate solves ``m x m`` systems or runs local search or an
integer program). :func:`check_interval_cost` runs the same checks from the sizes alone, so a
caller can refuse before a release is made.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse
from scipy.special import ndtr, ndtri

from . import limits
from ._rng import as_generator
from .aggregation.footrule import assignment_order
from .aggregation.kemeny import DP_MAX_ITEMS, solve_many
from .data.comparisons import PairCounts
from .errors import InputError
from .files import Output
from .guarantees import Guarantee
from .mechanisms.noise import gaussian, laplace
from .mechanisms.pairwise_matrix import MatrixRelease, count_noise, matrix_from_upper
from .mechanisms.randomized_response import added_variance, debias, report_probability
from .mechanisms.tree import TreeRelease, tree_layout
from .pairwise.btl import BTLFit, newton_btl_many, weighted_laplacian
from .pairwise.central import CentralRanking, copeland_noise
from .pairwise.links import LOGISTIC, Link, as_link

METHODS = ("sandwich", "bootstrap")
BTL_TARGET = "BTL scores theta* (centred to sum zero)"
COUNT_TARGET = "expected win counts sum_j n_ij P(i beats j)"
TINY_RIDGE = 1e-9  # ridge of the ridge-free fits, relative to the mean number of comparisons per item
BOOTSTRAP_FAILURES = 0.05  # largest share of bootstrap fits allowed to fail
BOOTSTRAP_CHUNK = 2_000_000  # pair statistics simulated and fitted at once (replicates x pairs)
KEMENY_TARGET = "ranks in the Kemeny aggregate of the raw rankings"
FOOTRULE_TARGET = "ranks in the footrule-optimal aggregate of the raw rankings"
AGGREGATE_BOOTSTRAP_MIN = 100


@dataclass(frozen=True)
class ConfidenceIntervals:
    """Score intervals, rank intervals and pairwise "ahead" probabilities of one release.

    Attributes
    ----------
    items : tuple
        Item labels.
    estimate : ndarray
        Centre of the intervals: the release's scores (centred), or the bias-corrected scores.
    lower, upper : ndarray
        Per-item score interval at ``level``.
    rank_lower, rank_upper : ndarray of int
        Per-item rank interval (1 = best): at ``level``, the item's true rank lies between them.
    ahead : ndarray
        ``ahead[i, j]``: the confidence that item ``i`` is ahead of item ``j`` (NaN on the diagonal).
    covariance : ndarray
        Covariance of the estimate (sandwich, or the bootstrap sample covariance).
    level : float
    method : str
        ``"sandwich"`` or ``"bootstrap"``.
    bias_corrected : bool
    target : str
        What the score intervals cover.
    guarantee : Guarantee
        The guarantee of the release: intervals are post-processing.
    n_bootstrap : int or None
        Bootstrap fits used.
    """

    items: tuple
    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    rank_lower: np.ndarray
    rank_upper: np.ndarray
    ahead: np.ndarray
    covariance: np.ndarray
    level: float
    method: str
    bias_corrected: bool
    target: str
    guarantee: Guarantee
    n_bootstrap: int | None = None

    def entry(self, k: int) -> dict:
        """Interval columns of item ``k``: ``score_lower, score_upper, rank_lower, rank_upper``."""
        return {"score_lower": float(self.lower[k]), "score_upper": float(self.upper[k]),
                "rank_lower": int(self.rank_lower[k]), "rank_upper": int(self.rank_upper[k])}

    def describe(self) -> str:
        """The intervals in words."""
        how = "sandwich covariance" if self.method == "sandwich" else \
            f"parametric bootstrap through the mechanism ({self.n_bootstrap} fits)"
        bias = ", bias-corrected" if self.bias_corrected else ""
        return (f"{100 * self.level:g}% intervals for the {self.target} ({how}{bias}), including the "
                "privacy noise; rank intervals hold per item")


@dataclass(frozen=True)
class _Problem:
    """An estimator as inference sees it: design, link, ridge and the noise its mechanism added."""

    kind: str  # "btl" (fit of a local release), "perturbed" (objective perturbation), "copeland"
    items: tuple
    i: np.ndarray
    j: np.ndarray
    totals: np.ndarray
    link: Link
    estimate: np.ndarray
    ridge: float
    item_noise: float  # variance of the noise added to each item's score or count
    release: object = None  # the local release a BTL fit was fitted to
    noise_scale: float = 0.0  # Laplace scale of that noise (central releases)

    @property
    def m(self) -> int:
        return len(self.items)

    def pair_variance(self, theta) -> np.ndarray:
        """Variance of each pair's statistic: the answers' own variance plus the mechanism's."""
        d = theta[self.i] - theta[self.j]
        F = self.link.cdf(d)
        if self.kind == "btl":
            rel = self.release
            w2 = self.totals if rel.weight_sq is None else rel.weight_sq
            return w2 * F * (1.0 - F) + rel.noise_variance
        slope = self.link.pair_gradient(d, 1.0, 1.0) - self.link.pair_gradient(d, 0.0, 1.0)
        return self.totals * F * (1.0 - F) * slope ** 2

    def hessian(self, theta, ridge) -> np.ndarray:
        """Expected Hessian of the penalised objective at ``theta`` (plus ``1 1'/m``: invertible)."""
        d = theta[self.i] - theta[self.j]
        curv = self.link.pair_curvature(d, self.totals * self.link.cdf(d), self.totals)
        return weighted_laplacian(self.i, self.j, curv, self.m, ridge) + 1.0 / self.m

    def solve(self, wins, ridge, linear=None, totals=None):
        """Minimisers of the penalised objective for rows of ``wins`` (``ridge = 0``: ridge-free)."""
        tot = self.totals if totals is None else totals
        lam = ridge / 2.0
        if ridge == 0:  # only the centred solution exists: drop the linear term's mean
            lam = TINY_RIDGE * float(np.sum(tot)) / self.m
            linear = None if linear is None else linear - np.mean(linear, axis=1, keepdims=True)
        theta, ok = newton_btl_many(self.i, self.j, self.m, tot, wins, lam, link=self.link, linear=linear)
        return theta - theta.mean(axis=1, keepdims=True), ok


def confidence_intervals(result, *, level: float = 0.95, method: str = "sandwich", bias_corrected: bool = False,
                         n_bootstrap: int = 1000, design=None, rng=None) -> ConfidenceIntervals:
    """Score intervals, rank intervals and "i ahead of j" probabilities of a pairwise release.

    Post-processing only: the result's guarantee covers the intervals (see the module docstring
    for the two constructions and the noise each includes).

    Parameters
    ----------
    result : BTLFit or CentralRanking
        A :func:`privrank.fit_btl` fit of a local release (debiased randomized response, local
        Laplace, or no privacy), an objective-perturbed or penalised MLE, or (noisy) Copeland counts.
        Classic randomized response is biased for theta* and is refused.
    level : float
        Confidence level of every interval, in (0, 1).
    method : {"sandwich", "bootstrap"}
    bias_corrected : bool
        Centre the intervals on the ridge-free estimate. The ridge shrinks every score towards 0 by
        about ``(H + r I)^-1 r theta``; plain intervals are valid for theta* when that bias is small
        next to the standard error, about when ``r |theta_i| <= 0.2 sqrt(n_i / 4)`` for an item in
        ``n_i`` comparisons with ridge ``r`` (``2 lam`` for :func:`fit_btl`, ``gamma`` for the
        perturbed MLE). The default ``lam = G`` of local releases meets this once items have a few
        thousand comparisons; the theory ridge ``gamma = 2 sqrt(d log n)`` of the perturbed MLE
        never does, so use the correction there. A warning says when the plug-in bias exceeds half
        a standard error. For a local fit the corrected estimate is the ridge-free fit of the
        release; for the logistic perturbed MLE it solves ``grad L(theta) + w = 0`` with the ridge
        term removed, which the release determines because the logistic gradient depends on the
        answers only through their sum. It may not exist for very noisy releases (then InputError).
    n_bootstrap : int
        Bootstrap replicates (``method="bootstrap"``). Memory and work are bounded by
        :func:`check_interval_cost` (module docstring).
    design : PairCounts or array, optional
        Central results only: the public comparison design, as counts per pair (``PairCounts``,
        whose wins are ignored, or a symmetric ``m x m`` matrix). The design is part of the data
        under edge adjacency, so by default privrank assumes the balanced design that the public
        size of the release implies: every pair compared ``N / (m (m-1) / 2)`` times, with ``N``
        the number of comparisons (per-comparison budget) or respondents times ``max_answers``
        (per-respondent budget). Pass the real design only where it is public.
    rng : None, int or Generator
        Bootstrap randomness (not privacy noise).

    Returns
    -------
    ConfidenceIntervals
    """
    _check_level(level)
    if method not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}")
    prob = _problem(result, design)
    check_interval_cost(prob.m, n_bootstrap=int(n_bootstrap) if method == "bootstrap" else None, pairs=prob.i.size,
                        cubic=prob.kind != "copeland")
    if bias_corrected and prob.kind == "copeland":
        raise InputError("noisy Copeland counts are unbiased for the expected win counts: there is no ridge "
                         "to correct; drop bias_corrected")
    centre, ridge = (_ridge_free(prob), 0.0) if bias_corrected else (prob.estimate, prob.ridge)
    if method == "sandwich":
        cov = _sandwich(prob, centre, ridge)
        if not bias_corrected and prob.kind != "copeland":
            _warn_ridge_bias(prob, cov)
        sd = np.sqrt(np.diag(cov))
        z = ndtri(0.5 + level / 2.0)
        lower, upper = centre - z * sd, centre + z * sd
        ahead = _ahead_gaussian(centre, cov)
        rank_centre, used = centre, None
    else:
        draws = _bootstrap(prob, centre, ridge, int(n_bootstrap), as_generator(rng))
        used = draws.shape[0]
        cov = np.atleast_2d(np.cov(draws, rowvar=False))
        q_lo, q_hi = np.quantile(draws, [0.5 - level / 2.0, 0.5 + level / 2.0], axis=0)
        lower, upper = 2 * centre - q_hi, 2 * centre - q_lo
        ahead = _ahead_bootstrap(centre, draws)
        rank_centre = 2 * centre - draws.mean(axis=0)
    rank_lower, rank_upper = _rank_intervals(rank_centre, cov, level)
    return ConfidenceIntervals(prob.items, centre, lower, upper, rank_lower, rank_upper, ahead, cov, float(level),
                               method, bool(bias_corrected), COUNT_TARGET if prob.kind == "copeland" else BTL_TARGET,
                               result.guarantee, used)


def check_interval_cost(items: int, *, n_bootstrap: int | None = None, pairs: int | None = None,
                        cubic: bool = False, advice: str | None = None) -> None:
    """Refuse intervals whose estimated memory or work exceeds :mod:`privrank.limits`.

    Parameters
    ----------
    items
        Number of items ``m``.
    n_bootstrap
        Bootstrap replicates (None: the sandwich, no bootstrap).
    pairs
        Pair statistics held per replicate (default ``m (m - 1) / 2``).
    cubic
        Each replicate costs ``m^3`` (Newton steps on ``m x m`` systems; local search or the
        integer program re-solving a Kemeny matrix) rather than ``m^2``.
    """
    m = int(items)
    P = m * (m - 1) // 2 if pairs is None else int(pairs)
    advice = advice or "use fewer replicates (n_bootstrap=), or the sandwich (--ci-method sandwich)"
    if n_bootstrap is not None:
        limits.check("BOOTSTRAP", int(n_bootstrap), "n_bootstrap (bootstrap replicates)",
                     "a few thousand replicates resolve shares to 1/1000")
    B = 0 if n_bootstrap is None else int(n_bootstrap)
    # ~10 m x m float matrices (covariance, Hessian and its inverse, ahead, pairwise differences),
    # 6 float arrays per pair, the draws or ranks (B x m), and one chunk of simulated replicates
    need = 8.0 * (10 * m * m + 6 * P + 2 * B * m + (3 * min(BOOTSTRAP_CHUNK, B * max(P, m * m)) if B else 0))
    limits.check("MEMORY_MB", need / 2 ** 20, f"the estimated memory of intervals on {m} items (MiB)",
                 "intervals hold m x m matrices, so they suit up to a few thousand items")
    if B:
        work = float(B) * m * m * (m if cubic else 1)
        limits.check("BOOTSTRAP_WORK", work, f"the bootstrap work ({B} replicates on {m} items)", advice)


def _check_level(level) -> None:
    if not (isinstance(level, (int, float)) and 0.0 < float(level) < 1.0):
        raise InputError("level must lie strictly between 0 and 1, e.g. 0.95")


# ---------------------------------------------------------------------------------- estimators

def _problem(result, design) -> _Problem:
    if isinstance(result, BTLFit):
        rel = result.release
        if design is not None:
            raise InputError("a local release carries its own design; design applies to central results")
        if rel is None:
            raise InputError("this fit does not carry its release: fit it with privrank.fit_btl")
        if rel.noise_variance is None:
            raise InputError(f"the {rel.guarantee.mechanism} release is biased for the BTL scores, so no interval "
                             "can cover them; use debiased randomized response")
        pc = rel.counts
        return _Problem("btl", result.items, pc.i, pc.j, pc.totals, LOGISTIC, result.scores, 2.0 * result.lam,
                        0.0, rel)
    if isinstance(result, CentralRanking) and result.method in ("perturbed MLE", "penalised MLE"):
        p = result.params
        theta = result.scores - result.scores.mean()
        scale = p.get("noise_scale", 0.0)
        return _Problem("perturbed", result.items, *_design(result, design), as_link(p["link"]), theta, p["gamma"],
                        2.0 * scale ** 2, noise_scale=scale)
    if isinstance(result, CentralRanking) and result.method in ("noisy Copeland", "Copeland"):
        counts = np.asarray(result.scores, dtype=float)
        return _Problem("copeland", result.items, *_design(result, design), LOGISTIC, counts, 1.0,
                        result.params.get("noise_variance", 0.0), noise_scale=result.params.get("noise_scale", 0.0))
    raise InputError("confidence intervals need a fit_btl fit, a perturbed or penalised MLE, or (noisy) Copeland "
                     "counts")


def _design(result: CentralRanking, design):
    m = len(result.items)
    i, j = np.triu_indices(m, 1)
    if design is None:
        p = result.params
        if "n_comparisons" in p:
            n = p["n_comparisons"]
        elif p.get("n_respondents") and p.get("max_answers"):
            n = float(p["n_respondents"] * p["max_answers"])
        else:
            raise InputError("the release states no public design size; pass design=")
        return i, j, np.full(i.size, n / i.size)
    if isinstance(design, PairCounts):
        if design.n_items != m:
            raise InputError(f"the design has {design.n_items} items, the result {m}")
        return design.i, design.j, np.asarray(design.totals, float)
    N = np.asarray(design, dtype=float)
    if N.shape != (m, m) or not np.allclose(N, N.T) or np.any(N < 0) or not np.all(np.isfinite(N)):
        raise InputError(f"design must be a symmetric {m} x {m} matrix of non-negative comparison counts")
    keep = N[i, j] > 0
    return i[keep], j[keep], N[i, j][keep]


def _copeland_scores(prob: _Problem) -> np.ndarray:
    """BTL scores whose expected win counts (plus a unit ridge) equal the counts: plug-in for P."""
    lower_end = np.bincount(prob.j, prob.totals, prob.m)
    theta, _ = prob.solve(np.zeros((1, prob.i.size)), prob.ridge, linear=(lower_end - prob.estimate)[None, :])
    return theta[0]


def _model_scores(prob: _Problem, centre) -> np.ndarray:
    return _copeland_scores(prob) if prob.kind == "copeland" else centre


def _ridge_free(prob: _Problem) -> np.ndarray:
    if prob.kind == "btl":
        theta, ok = prob.solve(prob.release.counts.wins[None, :], 0.0)
    else:
        if prob.link is not LOGISTIC:
            raise InputError("bias correction of the perturbed MLE needs the logistic link (its gradient depends "
                             "on the answers only through their sum)")
        t = prob.estimate
        expected = prob.totals * LOGISTIC.cdf(t[prob.i] - t[prob.j])
        theta, ok = prob.solve(expected[None, :], 0.0, linear=-prob.ridge * t[None, :])
    if not ok[0]:
        raise InputError("the ridge-free estimate does not exist for this release (it is too noisy: some item "
                         "wins or loses nearly everything); use bias_corrected=False")
    return theta[0]


# ---------------------------------------------------------------------------------- sandwich

def _sandwich(prob: _Problem, centre, ridge) -> np.ndarray:
    theta = _model_scores(prob, centre)
    meat = weighted_laplacian(prob.i, prob.j, prob.pair_variance(theta), prob.m, prob.item_noise)
    if prob.kind == "copeland":
        return meat
    Ainv = np.linalg.inv(prob.hessian(theta, ridge))
    P = np.eye(prob.m) - 1.0 / prob.m
    return P @ Ainv @ meat @ Ainv @ P


def _warn_ridge_bias(prob: _Problem, cov) -> None:
    bias = np.linalg.solve(prob.hessian(prob.estimate, prob.ridge), prob.ridge * prob.estimate)
    ratio = float(np.max(np.abs(bias) / np.sqrt(np.diag(cov))))
    if ratio > 0.5:
        warnings.warn(f"the ridge shrinks some scores by about {ratio:.2g} standard errors, so plain intervals "
                      "under-cover theta*; use bias_corrected=True (CLI: --bias-corrected)", RuntimeWarning,
                      stacklevel=3)


# ---------------------------------------------------------------------------------- bootstrap

def _bootstrap(prob: _Problem, centre, ridge, B: int, gen) -> np.ndarray:
    """``B`` (fewer if some fits fail) bootstrap estimates, simulated and fitted in chunks of replicates."""
    if B < 50:
        raise InputError("n_bootstrap must be at least 50")
    theta = _model_scores(prob, centre)
    chunk = max(1, int(BOOTSTRAP_CHUNK // max(prob.i.size, prob.m)))
    parts = [_bootstrap_chunk(prob, theta, ridge, min(chunk, B - start), gen) for start in range(0, B, chunk)]
    draws = np.concatenate([d for d, _ in parts])
    ok = np.concatenate([k for _, k in parts])
    failed = int(np.sum(~ok))
    if failed > BOOTSTRAP_FAILURES * B:
        raise InputError(f"{failed} of {B} bootstrap fits did not converge: the release is too noisy for a "
                         "bootstrap; use method='sandwich'")
    return draws[ok]


def _bootstrap_chunk(prob: _Problem, theta, ridge, B: int, gen):
    if prob.kind == "btl":
        return prob.solve(_local_sums(prob, theta, B, gen), ridge)
    n = np.rint(prob.totals)
    P = prob.link.cdf(theta[prob.i] - theta[prob.j])
    wins = gen.binomial(n.astype(np.int64), P, size=(B, P.size)).astype(float)
    scale = prob.noise_scale
    if prob.kind == "copeland":
        noise = copeland_noise(scale, (B, prob.m), gen) if scale > 0 else np.zeros((B, prob.m))
        rows = np.arange(P.size)
        first = scipy.sparse.csr_matrix((np.ones(P.size), (rows, prob.i)), shape=(P.size, prob.m))
        second = scipy.sparse.csr_matrix((np.ones(P.size), (rows, prob.j)), shape=(P.size, prob.m))
        return (first.T @ wins.T + second.T @ (n - wins).T).T + noise, np.ones(B, dtype=bool)
    noise = laplace(scale, (B, prob.m), gen) if scale > 0 else np.zeros((B, prob.m))
    return prob.solve(wins, ridge, linear=noise, totals=n)


def _local_sums(prob: _Problem, theta, B: int, gen) -> np.ndarray:
    """Per-pair statistics of ``B`` local releases simulated at the scores ``theta``.

    Homogeneous debiased randomized response (and no privacy) is simulated exactly: reported wins
    are binomial and are debiased. Other local releases (heterogeneous epsilons, Laplace) draw
    each pair's sum from the normal law with its exact mean and variance.
    """
    rel = prob.release
    n = prob.totals
    P = LOGISTIC.cdf(theta[prob.i] - theta[prob.j])
    whole = rel.weight_sq is None and np.all(n == np.rint(n))
    eps = rel.guarantee.epsilon_per_comparison
    if whole and not np.any(rel.noise_variance):
        return gen.binomial(n.astype(np.int64), P, size=(B, P.size)).astype(float)
    if whole and eps is not None and np.allclose(rel.noise_variance, n * added_variance(eps), rtol=1e-9, atol=0):
        count = gen.binomial(n.astype(np.int64), report_probability(P, eps), size=(B, P.size))
        return n * debias(count / n, eps)
    return n * P + np.sqrt(prob.pair_variance(theta)) * gen.standard_normal((B, P.size))


# ---------------------------------------------------------------------------------- ranks

def _ahead_gaussian(centre, cov) -> np.ndarray:
    var = np.diag(cov)
    sd = np.sqrt(np.maximum(var[:, None] + var[None, :] - 2 * cov, 0.0))
    diff = centre[:, None] - centre[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        ahead = np.where(sd > 0, ndtr(diff / sd), 0.5 * (1.0 + np.sign(diff)))
    np.fill_diagonal(ahead, np.nan)
    return ahead


def _ahead_bootstrap(centre, draws) -> np.ndarray:
    """Share of basic-bootstrap draws ``2 t - t_b`` in which ``i`` is ahead of ``j`` (ties count half)."""
    B, m = draws.shape
    gap = 2 * (centre[:, None] - centre[None, :])
    count = np.zeros((m, m))
    step = max(1, int(BOOTSTRAP_CHUNK // (m * m)))
    for start in range(0, B, step):  # chunks of replicates keep the B x m x m comparison small
        d = draws[start:start + step]
        diff = d[:, :, None] - d[:, None, :]
        count += np.sum(diff < gap, axis=0) + 0.5 * np.sum(diff == gap, axis=0)
    ahead = count / B
    np.fill_diagonal(ahead, np.nan)
    return ahead


def _rank_intervals(centre, cov, level) -> tuple[np.ndarray, np.ndarray]:
    """Bonferroni rank intervals: item i is surely behind j when ``theta_j - theta_i`` is resolved.

    Each item is compared with the other ``m - 1`` at level ``1 - (1 - level)/(m - 1)``; when all
    those difference intervals hold, the true rank lies in ``[1 + #surely ahead, m - #surely
    behind]``, so the interval covers it with probability at least ``level``.
    """
    m = centre.size
    var = np.diag(cov)
    sd = np.sqrt(np.maximum(var[:, None] + var[None, :] - 2 * cov, 0.0))
    z = ndtri(1.0 - (1.0 - level) / (2.0 * max(m - 1, 1)))
    diff = centre[None, :] - centre[:, None]  # [i, j]: theta_j - theta_i
    ahead_of_i = np.sum(diff > z * sd, axis=1)
    behind_i = np.sum(-diff > z * sd, axis=1)
    return 1 + ahead_of_i, m - behind_i


# ---------------------------------------------------------------------------------- rank aggregation

@dataclass(frozen=True)
class RankIntervals:
    """Rank intervals and "i ahead of j" probabilities of a private consensus ranking.

    Attributes
    ----------
    items : tuple
        Item labels.
    order : ndarray
        The released order (item indices, best first).
    rank_lower, rank_upper : ndarray of int
        Per-item rank interval (1 = best) at ``level``.
    ahead : ndarray
        ``ahead[i, j]``: the share of bootstrap orders with item ``i`` ahead of item ``j`` (NaN on
        the diagonal); ``ahead[i, j] + ahead[j, i] = 1``.
    rank_shares : ndarray
        ``rank_shares[i, r]``: the share of bootstrap orders placing item ``i`` at rank ``r + 1``.
    level : float
    n_bootstrap : int
    target : str
        What the rank intervals cover.
    guarantee : Guarantee
        The guarantee of the release: intervals are post-processing.
    """

    items: tuple
    order: np.ndarray
    rank_lower: np.ndarray
    rank_upper: np.ndarray
    ahead: np.ndarray
    rank_shares: np.ndarray
    level: float
    n_bootstrap: int
    target: str
    guarantee: Guarantee

    def entry(self, k: int) -> dict:
        """Interval columns of item ``k``: ``rank_lower, rank_upper``."""
        return {"rank_lower": int(self.rank_lower[k]), "rank_upper": int(self.rank_upper[k])}

    def describe(self) -> str:
        """The intervals in words."""
        return (f"{100 * self.level:g}% intervals for the {self.target}, from {self.n_bootstrap} re-solved "
                "releases with the privacy noise drawn again; they cover the privacy noise, not the sampling of "
                "the voters")


def aggregate_intervals(result, *, items=None, level: float = 0.95, n_bootstrap: int = 1000, solver=None,
                        rng=None) -> RankIntervals:
    """Rank intervals and "i ahead of j" probabilities of a private Kemeny or footrule aggregate.

    Post-processing of the release only (the raw rankings are never read), so the intervals
    cost no privacy and carry the result's guarantee. A parametric bootstrap over the noisy
    statistic: the released statistic ``s~`` -- the upper triangle of the noisy pairwise matrix
    (:func:`~privrank.aggregation.private_kemeny.private_kemeny`, Alabi et al. Theorem 1;
    :func:`~privrank.aggregation.private_kemeny.ldp_matrix`, Theorem 8) or the noisy tree
    aggregates (:func:`~privrank.aggregation.private_footrule.dp_footrule` and
    ``ldp_footrule``, Hillebrand et al. Algorithm 2) -- gets fresh noise of the mechanism's law,
    ``s~ + e_b``, and every replicate is solved as the release was (the same clipping and solver;
    the minimum-cost assignment). Central noise is redrawn exactly (Laplace or Gaussian of the
    release's scale). The noise of a local release, a mean of ``n`` Duchi et al. reports, is
    redrawn as Gaussian with the per-entry standard deviation of that mean (exact for the
    pairwise matrix, :func:`~privrank.mechanisms.pairwise_matrix.local_pairwise_sd`; an upper
    bound for the tree), independently per entry: a normal approximation over the voters.

    What they cover: the ranks of the *non-private* aggregate of the same rankings (the
    release's solver on the exact pairwise matrix; the footrule optimum) against the privacy
    noise alone. The voters are taken as given, not as a sample from a population: the sampling
    of voters is not included. With an exact solver the target is the Kemeny optimum; a
    randomised solver (KwikSort, local search) adds its own randomness to both.

    The intervals are decided pair by pair (the papers are silent here). ``ahead[i, j]``, the
    share of bootstrap orders with ``i`` ahead of ``j``, is a one-sided p-value: when ``i`` is
    behind ``j`` in the non-private aggregate, ``ahead[i, j] >= 1 - a`` has probability about
    ``a`` or less (exactly ``a`` when the two tie and their order flips with the noise of one
    linear statistic). For each item, its ``m - 1`` pairs are tested by Holm's step-down rule at
    ``1 - level``: sorted by ``p = min(ahead[i, j], ahead[j, i])``, the ``k``-th smallest is
    decided (``j`` surely ahead of ``i``, or surely behind, whichever the bootstrap favours)
    while ``p <= (1 - level)/(m - k)``. The rank interval is ``[1 + #surely ahead, m - #surely
    behind]``, widened to contain the released rank; it misses the true rank only when some
    decision is wrong, so it covers with probability at least ``level`` per item. An item whose
    rank hinges on one near tie is covered about ``level`` of the time; clear ranks, and items
    among several near ties, more often. (Percentile intervals of the bootstrap rank
    distribution are narrower but miss the first and last ranks when many items are within the
    noise of each other: the bootstrap world's best item is ahead by more than the true one.)

    Parameters
    ----------
    result : AggregateResult
        A result whose ``release`` is the noisy matrix or tree it was computed from (see above).
    items : sequence, optional
        Item labels (default ``0 .. m-1``); :class:`~privrank.data.rankings.Rankings` has them.
    level : float
        Confidence level of every rank interval, in (0, 1).
    n_bootstrap : int
        Replicates, at least 100 (tail shares are resolved to ``1/n_bootstrap``). Each is one solve:
        the exact solver runs all of them at once up to 14 items, one integer program each
        beyond. Bounded by :func:`check_interval_cost` (module docstring).
    solver : str, optional
        Kemeny solver of the replicates (:func:`~privrank.aggregation.kemeny.wfas_solver` names);
        default the release's own. Needed when the release was solved by a custom callable.
    rng : None, int or Generator
        Bootstrap randomness (not privacy noise).

    Returns
    -------
    RankIntervals
    """
    _check_level(level)
    B = int(n_bootstrap)
    if B < AGGREGATE_BOOTSTRAP_MIN:
        raise InputError(f"n_bootstrap must be at least {AGGREGATE_BOOTSTRAP_MIN}")
    gen = as_generator(rng)
    release, guarantee = getattr(result, "release", None), getattr(result, "guarantee", None)
    if not isinstance(release, (MatrixRelease, TreeRelease)):
        raise InputError("rank intervals re-draw the noise of the release an order was computed from: they need "
                         "the result of private_kemeny (noisy-matrix), ldp_matrix, dp_footrule or ldp_footrule")
    order = np.asarray(result.order, dtype=np.int64)
    m = order.size
    labels = tuple(range(m)) if items is None else tuple(items)
    if len(labels) != m:
        raise InputError(f"{len(labels)} item labels for an aggregate of {m} items")
    name = (result.details.get("solver") if solver is None else solver) if isinstance(release, MatrixRelease) \
        else None
    heavy = name in ("local-search", "exact", "auto") and m > DP_MAX_ITEMS
    check_interval_cost(m, n_bootstrap=B, pairs=release.aggregates.size if isinstance(release, TreeRelease)
                        else None, cubic=heavy,
                        advice="use fewer replicates (Python: n_bootstrap=) or fewer items"
                               + (", or the KwikSort solver (--solver kwiksort)" if heavy else ""))
    if isinstance(release, MatrixRelease):
        statistic, solve, target = _kemeny_replicates(release, result.details, solver, gen)
    else:
        statistic, solve, target = _footrule_replicates(release, m)
    noise = release.noise
    scale = release.scale if isinstance(release, MatrixRelease) else release.noise_scale

    def redraw(b):
        if noise != "laplace":
            return gaussian(scale, (b, statistic.size), gen)
        if isinstance(release, MatrixRelease):  # exact Laplace on the counts, as released
            return count_noise(scale, release.n, (b, statistic.size), gen) / release.n
        return laplace(scale, (b, statistic.size), gen)

    step = max(1, BOOTSTRAP_CHUNK // max(statistic.size, m * m))
    ranks = np.concatenate([  # chunks of replicates bound the memory
        np.argsort(solve(statistic + redraw(b)), axis=1) + 1
        for b in (min(step, B - start) for start in range(0, B, step))])
    shares = np.bincount((np.arange(m) * m + ranks - 1).ravel(), minlength=m * m).reshape(m, m) / B
    ahead = np.zeros((m, m))
    for start in range(0, B, step):
        r = ranks[start:start + step]
        ahead += np.sum(r[:, :, None] < r[:, None, :], axis=0)
    ahead /= B
    np.fill_diagonal(ahead, np.nan)
    released = np.empty(m, dtype=np.int64)
    released[order] = np.arange(1, m + 1)
    lower, upper = _holm_bounds(ahead, level)
    return RankIntervals(labels, order, np.minimum(lower, released), np.maximum(upper, released), ahead, shares,
                         float(level), B, target, guarantee)


def _holm_bounds(ahead, level) -> tuple[np.ndarray, np.ndarray]:
    """Per-item rank bounds from pairwise Holm decisions on the ahead shares (:func:`aggregate_intervals`)."""
    m = ahead.shape[0]
    a = np.where(np.eye(m, dtype=bool), 0.5, ahead)
    p = np.minimum(a, a.T)
    np.fill_diagonal(p, np.inf)  # an item is not compared with itself
    by_p = np.argsort(p, axis=1, kind="stable")[:, :m - 1]
    thresholds = (1.0 - level) / (m - 1 - np.arange(m - 1))
    decided = np.cumprod(np.take_along_axis(p, by_p, axis=1) <= thresholds, axis=1).astype(bool)
    sure = np.zeros((m, m), dtype=bool)  # sure[i, j]: the order of i and j is decided
    np.put_along_axis(sure, by_p, decided, axis=1)
    ahead_of_i = np.sum(sure & (a.T > a), axis=1)  # j surely ahead of i
    behind_i = np.sum(sure & (a > a.T), axis=1)
    return 1 + ahead_of_i, m - behind_i


def _kemeny_replicates(release: MatrixRelease, details: dict, solver, gen):
    """Released upper triangle, the solve of replicates as the release was solved, and the target."""
    m = release.matrix.shape[0]
    name = details.get("solver") if solver is None else solver
    if name is None or name == "custom":
        raise InputError("the release was solved by a custom solver: pass solver= (a solver name) for its replicates")
    clipped, best_of = bool(details.get("clipped")), int(details.get("best_of", 1))

    def solve(upper):
        return solve_many(matrix_from_upper(np.clip(upper, 0.0, 1.0) if clipped else upper, m), name, rng=gen,
                          best_of=best_of)
    return release.matrix[np.triu_indices(m, 1)], solve, KEMENY_TARGET


def _footrule_replicates(release: TreeRelease, m: int):
    """Released tree aggregates, the read-off and assignment of replicates, and the target."""
    layout = tree_layout(m, release.kappa)

    def solve(flat):
        costs = layout.read_off(flat.reshape(flat.shape[0], m, layout.size))
        return np.stack([assignment_order(c) for c in costs])  # one assignment per replicate
    return release.aggregates.ravel(), solve, FOOTRULE_TARGET


# ---------------------------------------------------------------------------------- plot

def pyplot_for(path, force: bool):
    """matplotlib's pyplot (non-interactive) and the :class:`~privrank.files.Output` of the plot.

    ``path`` is a file name (checked and reserved here) or an Output already reserved.
    """
    out = path if isinstance(path, Output) else Output(path, force=force, plot=True)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("plots need matplotlib: pip install 'privrank[plot]'") from None
    if not isinstance(path, Output):
        out.reserve()
    return plt, out


def plot_intervals(ci, path, *, force: bool = False, title: str | None = None) -> None:
    """Forest plot of the score intervals and, beside it, the rank intervals (best item on top).

    ``ci`` is :class:`ConfidenceIntervals`, or :class:`RankIntervals` (a consensus ranking has no
    scores: the rank intervals alone). Needs matplotlib (``pip install 'privrank[plot]'``); the
    format follows the file suffix.
    """
    plt, out = pyplot_for(path, force)
    m = len(ci.items)
    scores = isinstance(ci, ConfidenceIntervals)
    order = np.lexsort((np.arange(m), -ci.estimate)) if scores else ci.order
    y = np.arange(m)
    labels = [str(ci.items[k]) for k in order]
    if scores:
        fig, (left, right) = plt.subplots(1, 2, sharey=True, figsize=(10, 1.5 + 0.28 * m))
        est = ci.estimate[order]
        left.errorbar(est, y, xerr=[est - ci.lower[order], ci.upper[order] - est], fmt="o", ms=3, capsize=2)
        left.set_yticks(y, labels, fontsize=8)
        left.invert_yaxis()
        left.set_xlabel("score" if ci.target == BTL_TARGET else "win count")
        left.set_title(f"{100 * ci.level:g}% score intervals")
    else:
        fig, right = plt.subplots(figsize=(6, 1.5 + 0.28 * m))
        right.set_yticks(y, labels, fontsize=8)
        right.invert_yaxis()
    right.hlines(y, ci.rank_lower[order], ci.rank_upper[order], lw=3, alpha=0.6)
    right.plot(np.arange(1, m + 1), y, "k|", ms=8)
    right.set_xlabel("rank")
    right.set_title(("" if scores else f"{100 * ci.level:g}% ") + "rank intervals (| = released rank)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    try:
        out.save_figure(fig)
    finally:
        plt.close(fig)
