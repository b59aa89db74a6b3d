"""Score and rank intervals of pairwise releases: sandwich covariance or parametric bootstrap."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse
from numpy.typing import ArrayLike
from scipy.special import ndtr, ndtri

from .._rng import as_generator
from ..data.pair_counts import PairCounts
from ..errors import InputError, UtilityWarning, check_flag, check_whole
from ..display import Displayed
from ..guarantees import Guarantee
from ..draws import simulating
from ..mechanisms.noise import laplace
from ..mechanisms.randomized_response import added_variance, debias, report_probability
from ..pairwise.btl import BTLFit, newton_btl_many, weighted_laplacian
from ..pairwise.central import CentralRanking, copeland_noise
from ..pairwise.links import LOGISTIC, Link, as_link
from ..pairwise.release import PairwiseRelease
from .cost import BOOTSTRAP_CHUNK, check_interval_cost, check_level, warn_if_indistinguishable

METHODS = ("sandwich", "bootstrap")
BTL_TARGET = "BTL scores theta* (centred to sum zero)"
COUNT_TARGET = "expected win counts sum_j n_ij P(i beats j)"
TINY_RIDGE = 1e-9  # ridge of the ridge-free fits, relative to the mean number of comparisons per item
BOOTSTRAP_FAILURES = 0.05  # largest share of bootstrap fits allowed to fail


@dataclass(frozen=True, repr=False)
class ConfidenceIntervals(Displayed):
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
    design_assumed : bool
        A central result's intervals on the balanced design its public size implies (no ``design=``
        given): their widths are right for a design close to balanced only, and
        :meth:`describe` says so.

    Examples
    --------
    Intervals of a BTL fit of a local-DP release (simulated, true order 0 > 1 > 2 > 3 > 4):

    >>> import numpy as np
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> fit = pr.fit_btl(pr.debiased_randomized_response(comps, epsilon=1.0, rng=1))
    >>> ci = pr.confidence_intervals(fit, level=0.95)
    >>> ci.method, ci.target
    ('sandwich', 'BTL scores theta* (centred to sum zero)')
    >>> np.round(ci.lower, 2), np.round(ci.upper, 2)
    (array([ 0.75,  0.13, -0.3 , -0.54, -1.56]), array([ 1.44,  0.68,  0.23,  0.  , -0.84]))
    >>> ci.rank_lower, ci.rank_upper
    (array([1, 2, 2, 3, 5]), array([1, 3, 4, 4, 5]))
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
    design_assumed: bool = False

    def entry(self, k: int) -> dict:
        """Interval columns of item ``k``: ``score_lower, score_upper, rank_lower, rank_upper``."""
        return {"score_lower": float(self.lower[k]), "score_upper": float(self.upper[k]),
                "rank_lower": int(self.rank_lower[k]), "rank_upper": int(self.rank_upper[k])}

    def _rows(self) -> list[dict]:
        order = np.lexsort((np.arange(self.estimate.size), -self.estimate))
        return [{"rank": r + 1, "item": self.items[k], "estimate": float(self.estimate[k]), **self.entry(k)}
                for r, k in enumerate(order)]

    @property
    def score_label(self) -> str:
        """What the scores are, in the words of a plot's axis."""
        return "score" if self.target == BTL_TARGET else "win count"

    def describe(self) -> str:
        """The intervals in words."""
        how = "sandwich covariance" if self.method == "sandwich" else \
            f"parametric bootstrap through the mechanism ({self.n_bootstrap} fits)"
        bias = ", bias-corrected" if self.bias_corrected else ""
        design = ("; they assume every pair was compared equally often (the real design is data and was not "
                  "released): for a design far from balanced, such as an arena's, their widths are wrong -- pass "
                  "the design where it is public (design=)") if self.design_assumed else ""
        return (f"{100 * self.level:g}% intervals for the {self.target} ({how}{bias}), including the "
                f"privacy noise; rank intervals hold per item{design}")

    def plot(self, path=None, *, force: bool = False, title: str | None = None):
        """Forest plot of the score and rank intervals: :func:`~privrank.inference.plot_intervals`."""
        from .plot import plot_intervals

        return plot_intervals(self, path, force=force, title=title)


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
    release: PairwiseRelease | None = None  # the local release a BTL fit was fitted to (kind "btl")
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
            assert rel is not None  # kind "btl"
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


def confidence_intervals(result: BTLFit | CentralRanking, *, level: float = 0.95, method: str = "sandwich",
                         bias_corrected: bool = False, n_bootstrap: int = 1000,
                         design: PairCounts | ArrayLike | None = None,
                         rng: int | np.random.Generator | None = None) -> ConfidenceIntervals:
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

    Examples
    --------
    >>> import numpy as np
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> fit = pr.fit_btl(pr.debiased_randomized_response(comps, epsilon=1.0, rng=1))
    >>> ci = pr.confidence_intervals(fit)
    >>> np.round(ci.estimate, 2)
    array([ 1.1 ,  0.4 , -0.03, -0.27, -1.2 ])
    >>> ci.rank_lower, ci.rank_upper
    (array([1, 2, 2, 3, 5]), array([1, 3, 4, 4, 5]))
    >>> round(float(ci.ahead[0, 1]), 3)
    0.998
    """
    check_level(level)
    if not isinstance(method, str) or method not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}")
    prob = _problem(result, design)
    replicates = check_whole(n_bootstrap, name="n_bootstrap") if method == "bootstrap" else None
    bias_corrected = check_flag(bias_corrected, name="bias_corrected")
    check_interval_cost(prob.m, n_bootstrap=replicates, pairs=prob.i.size, cubic=prob.kind != "copeland")
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
    warn_if_indistinguishable(rank_lower, rank_upper, level)
    return ConfidenceIntervals(prob.items, centre, lower, upper, rank_lower, rank_upper, ahead, cov, float(level),
                               method, bool(bias_corrected), COUNT_TARGET if prob.kind == "copeland" else BTL_TARGET,
                               result.guarantee, used, prob.kind != "btl" and design is None)


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


def _design(result: CentralRanking, design) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        assert prob.release is not None  # kind "btl"
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
    cov = Ainv @ meat @ Ainv
    # P cov P with the centring P = I - 1 1'/m, without its two m x m products
    return cov - cov.mean(axis=0) - cov.mean(axis=1)[:, None] + cov.mean()


def _warn_ridge_bias(prob: _Problem, cov) -> None:
    bias = np.linalg.solve(prob.hessian(prob.estimate, prob.ridge), prob.ridge * prob.estimate)
    ratio = float(np.max(np.abs(bias) / np.sqrt(np.diag(cov))))
    if ratio > 0.5:
        warnings.warn(f"the ridge shrinks some scores by about {ratio:.2g} standard errors, so plain intervals "
                      "under-cover theta*; use bias_corrected=True (CLI: --bias-corrected)", UtilityWarning,
                      stacklevel=3)


# ---------------------------------------------------------------------------------- bootstrap

@simulating()  # replicates of the released statistic: post-processing, no privacy spent
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
    assert rel is not None and rel.noise_variance is not None  # a debiased local release: kind "btl"
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
