"""The statistics of an audit: a sound lower bound on the privacy loss a mechanism exhibits.

Sample audit (:func:`audit_samples`)
    Outputs of the mechanism on two neighbouring inputs, ``first`` and ``second``. Each sample
    is split in two halves. On the *selection* half the auditor searches for the event and the
    direction that look most revealing: threshold events ``{x >= t}`` and ``{x <= t}`` for real
    outputs, sets of outcomes (ordered by their empirical likelihood ratio) for outputs with
    few distinct values, and, for vector outputs, thresholds of two statistics whose parameters
    are fitted on the selection half (the Gaussian likelihood-ratio projection and the Laplace
    likelihood-ratio sum), scoring each by the bound below at a stricter level (a penalty for
    the number of candidates). On the *estimation* half it evaluates that single event:
    Clopper-Pearson bounds ``P1 >= p1_lo`` and ``P0 <= p0_hi`` (each at level ``alpha/2``) give

        epsilon_lower_bound = ln((p1_lo - delta) / p0_hi)

    which holds with probability at least ``1 - alpha`` for every (epsilon, delta)-DP mechanism
    (DP requires ``P1 <= e^eps P0 + delta`` for every event), because the event was chosen
    without looking at the estimation half. ``alpha = 1 - confidence`` (default 0.999).

Exact audit (:func:`audit_exact`)
    For mechanisms with finitely many outputs whose probabilities are known exactly (randomized
    response, discrete noise on a count): for every ordered pair of inputs the smallest epsilon
    with ``sum_y max(0, P(y) - e^eps Q(y)) <= delta`` (the hockey-stick divergence), maximised
    over pairs. It is the mechanism's true privacy loss on those inputs, not a bound. Its verdict
    allows for the rounding of the probabilities (:func:`exceeds_exactly`), so a claim below
    ``MIN_EXACT_EPSILON``, which rounding alone could match, is refused.

Exact loss at sampled outputs (:func:`audit_losses`)
    For a continuous mechanism whose output density is known in closed form, the log-density
    ratio ``ln p(y | x) - ln p(y | x')`` at an output ``y`` is the exact privacy loss there; a
    value above epsilon at any ``y`` refutes epsilon-DP (densities are continuous, so the ratio
    exceeds ``e^eps`` on a neighbourhood of ``y``). The maximum over sampled outputs is a lower
    bound on the worst-case loss that needs no confidence level.

Exact audit of a Laplace release (:func:`audit_laplace_release`)
    A release that adds independent Laplace noise of scale ``b_c`` to coordinate ``c`` of a
    statistic ``f`` loses exactly ``max_pairs sum_c |f(x)_c - f(x')_c| / b_c`` over the
    neighbouring pairs ``(x, x')``. Used where the noisy statistic itself never leaves the
    algorithm (only post-processing of it does), with ``f`` enumerated over every pair of a
    small input space and the scales the algorithm reports.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import beta

from ..errors import InputError, check_delta, check_epsilon

DEFAULT_CONFIDENCE = 0.999
#: the selection half scores events at level ``alpha * SELECTION_STRICTNESS``: a Bonferroni-style
#: penalty over the several hundred candidate events, so a rare event that looks revealing by
#: luck does not win over a frequent one that is
SELECTION_STRICTNESS = 0.01
#: outputs with at most this many distinct values are audited with histogram events
MAX_DISCRETE = 64
#: tolerances of the verdict of exact audits on a loss ln(P/Q): relative, for the evaluation of e.g.
#: log(e^eps), and absolute, for the rounding of the probabilities themselves (P and Q near 1/2
#: carry ~1e-16 each, which is all of a loss of 1e-9; 1e-12 leaves thousands of ulps to spare)
EXACT_RTOL = 1e-9
EXACT_ATOL = 1e-12
#: exact audits refuse a smaller claim: near EXACT_ATOL, a loss of twice the claim would pass
MIN_EXACT_EPSILON = 1e-10


def exceeds_exactly(loss, epsilon: float):
    """Whether an exact loss exceeds ``epsilon`` beyond floating-point error (``EXACT_RTOL``, ``EXACT_ATOL``)."""
    return loss > epsilon * (1.0 + EXACT_RTOL) + EXACT_ATOL


@dataclass(frozen=True)
class AuditResult:
    """Outcome of an audit.

    Attributes
    ----------
    epsilon, delta
        The claimed guarantee.
    epsilon_lower_bound
        Sample audit: a lower confidence bound (level ``confidence``) on the epsilon the
        mechanism exhibits at ``delta``. Exact audit: the exact epsilon at ``delta``.
    exact
        Whether the bound is exact.
    event
        The event (and direction) that exhibits the loss.
    p_high, p_low
        Its probability under the input that makes it likely / unlikely (estimates on the
        estimation half for sample audits).
    trials
        Samples per input (sample audit); 0 for exact audits.
    confidence
        Confidence level of the bound (1 for exact audits).
    details
        Further facts worth printing (e.g. the calibration that was run).
    """

    epsilon: float
    delta: float
    epsilon_lower_bound: float
    exact: bool
    event: str
    p_high: float
    p_low: float
    trials: int
    confidence: float
    details: dict = field(default_factory=dict)
    drawn_mismatch: str = ""

    @property
    def violation(self) -> bool:
        """True when the mechanism exhibits more privacy loss than it claims, or draws other noise
        than the law the audit reasons about (``drawn_mismatch``)."""
        if self.drawn_mismatch:
            return True
        if self.exact:
            return bool(exceeds_exactly(self.epsilon_lower_bound, self.epsilon))
        return self.epsilon_lower_bound > self.epsilon

    def report(self) -> list[str]:
        """The audit in words, one fact per line; the last line is ``epsilon_lower_bound=<x>``."""
        claim = f"({self.epsilon:g}, {self.delta:g})-DP" if self.delta else f"{self.epsilon:g}-DP"
        lines = [f"claimed: {claim}"]
        lines += [f"{k}: {v}" for k, v in self.details.items()]
        if self.exact:
            lines.append("audit: exact (output probabilities computed exactly)")
        else:
            lines.append(f"audit: {self.trials} runs per input, event chosen on one half, "
                         f"Clopper-Pearson bounds on the other, confidence {self.confidence:g}")
        lines.append(f"event: {self.event}")
        if not math.isnan(self.p_high):
            lines.append(f"probabilities: {self.p_high:.6g} vs {self.p_low:.6g}")
        if self.drawn_mismatch:
            lines.append(f"noise drawn: {self.drawn_mismatch}")
        verdict = ("VIOLATION: the noise drawn is not the noise the mechanism states" if self.drawn_mismatch else
                   "VIOLATION: the mechanism leaks more than it claims" if self.violation else "no violation detected")
        lines.append(f"verdict: {verdict}")
        lines.append(f"epsilon_lower_bound={self.epsilon_lower_bound:.6g}")
        return lines


# --------------------------------------------------------------------------------------------
# Clopper-Pearson
# --------------------------------------------------------------------------------------------

def clopper_pearson(k, n, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper-Pearson bounds: ``P(p >= lower) >= 1 - alpha`` and ``P(p <= upper) >= 1 - alpha``."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        lower = np.where(k > 0, beta.ppf(alpha, k, n - k + 1), 0.0)
        upper = np.where(k < n, beta.ppf(1.0 - alpha, k + 1, n - k), 1.0)
    return lower, upper


def _bound(k_high, n_high, k_low, n_low, delta, alpha) -> np.ndarray:
    """``ln((p_high_lo - delta) / p_low_hi)`` from counts (-inf where no bound exists)."""
    lo, _ = clopper_pearson(k_high, n_high, alpha / 2)
    _, hi = clopper_pearson(k_low, n_low, alpha / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log((lo - delta) / hi)
    return np.where(lo > delta, out, -np.inf)


# --------------------------------------------------------------------------------------------
# candidate events
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Event:
    """``{x >= t}`` (upper), ``{x <= t}`` (lower) or ``{x in values}``; ``high`` names the likely side."""

    kind: str
    threshold: float = 0.0
    values: tuple = ()
    high: int = 0  # 0: likely under the first input, 1: under the second

    def contains(self, x: np.ndarray) -> np.ndarray:
        if self.kind == "upper":
            return x >= self.threshold
        if self.kind == "lower":
            return x <= self.threshold
        return np.isin(x, np.asarray(self.values))

    def describe(self, what: str) -> str:
        side = "first" if self.high == 0 else "second"
        if self.kind == "set":
            shown = ", ".join(f"{v:g}" for v in self.values[:8]) + (", ..." if len(self.values) > 8 else "")
            body = f"{what} in {{{shown}}}"
        else:
            body = f"{what} {'>=' if self.kind == 'upper' else '<='} {self.threshold:.6g}"
        return f"{body} (more likely on the {side} input)"


def _threshold_grid(pooled: np.ndarray, size: int = 160) -> np.ndarray:
    """Candidate thresholds: order statistics spaced geometrically from both tails inwards."""
    s = np.sort(pooled)
    n = s.size
    ranks = np.unique(np.round(np.geomspace(1, max(n // 2, 1), size)).astype(int))
    idx = np.unique(np.concatenate([ranks - 1, n - ranks]))
    return np.unique(s[np.clip(idx, 0, n - 1)])


def _best_event(a: np.ndarray, b: np.ndarray, delta: float, alpha: float) -> tuple[_Event, float]:
    """The event maximising the lower bound on samples ``a`` (first) and ``b`` (second)."""
    na, nb = a.size, b.size
    values = np.unique(np.concatenate([a, b]))
    best, best_lb = _Event("set", values=tuple(values[:1].tolist())), -np.inf
    if values.size <= MAX_DISCRETE:
        ca = np.array([np.sum(a == v) for v in values], dtype=float)
        cb = np.array([np.sum(b == v) for v in values], dtype=float)
        for high, (ch, nh, cl, nl) in enumerate(((ca, na, cb, nb), (cb, nb, ca, na))):
            order = np.argsort(-(ch + 0.5) / (cl + 0.5), kind="stable")
            lb = _bound(np.cumsum(ch[order]), nh, np.cumsum(cl[order]), nl, delta, alpha)
            k = int(np.argmax(lb))
            if lb[k] > best_lb:
                best_lb = float(lb[k])
                best = _Event("set", values=tuple(sorted(values[order[:k + 1]].tolist())), high=high)
        return best, best_lb
    t = _threshold_grid(np.concatenate([a, b]))
    sa, sb = np.sort(a), np.sort(b)
    above_a = na - np.searchsorted(sa, t, side="left")
    above_b = nb - np.searchsorted(sb, t, side="left")
    below_a = np.searchsorted(sa, t, side="right")
    below_b = np.searchsorted(sb, t, side="right")
    for kind, ka, kb in (("upper", above_a, above_b), ("lower", below_a, below_b)):
        for high, (kh, nh, kl, nl) in enumerate(((ka, na, kb, nb), (kb, nb, ka, na))):
            lb = _bound(kh, nh, kl, nl, delta, alpha)
            k = int(np.argmax(lb))
            if lb[k] > best_lb:
                best_lb, best = float(lb[k]), _Event(kind, threshold=float(t[k]), high=high)
    return best, best_lb


# --------------------------------------------------------------------------------------------
# statistics of vector outputs, fitted on the selection half
# --------------------------------------------------------------------------------------------

def _vector_statistics(a: np.ndarray, b: np.ndarray) -> dict:
    """Scalar statistics of vector outputs with parameters estimated from ``a`` and ``b`` only.

    * ``projection``: ``x . (mean_a - mean_b) / var`` per coordinate, the Gaussian
      likelihood ratio (a linear discriminant with diagonal covariance);
    * ``laplace-ratio``: the Laplace likelihood ratio ``sum_c (|x_c - med_b| - |x_c - med_a|) / mad_c``,
      computed in the equivalent clipped form ``sum_c clip(s_c (x_c - mid_c), -h_c, h_c) / mad_c``
      so that it is *exactly* constant (maximal) on the orthant beyond both medians, the event
      that exhibits the full loss of a Laplace vector release. (The unclipped form rounds
      differently for different outputs; its rounding then separates ``1 + noise`` from
      ``0 + noise`` by their low-order bits -- the floating-point leak of the continuous
      samplers, which the audit of the mathematics must not mistake for a calibration error.)
    """
    spread = np.concatenate([a - a.mean(axis=0), b - b.mean(axis=0)])
    var = np.maximum(spread.var(axis=0), 1e-300)
    w = (a.mean(axis=0) - b.mean(axis=0)) / var
    med_a, med_b = np.median(a, axis=0), np.median(b, axis=0)
    mad = np.median(np.abs(np.concatenate([a - med_a, b - med_b])), axis=0)
    mad = np.where(mad > 0, mad, 1.0)
    sign, mid, half = np.sign(med_a - med_b), (med_a + med_b) / 2, np.abs(med_a - med_b) / 2
    return {
        "projection": lambda x: x @ w,
        "laplace-ratio": lambda x: np.sum(np.clip(sign * (x - mid), -half, half) / mad, axis=1),
    }


# --------------------------------------------------------------------------------------------
# audits
# --------------------------------------------------------------------------------------------

def _check_claim(epsilon, delta, confidence, *, exact: bool = False) -> tuple[float, float, float]:
    eps = check_epsilon(epsilon)
    if exact and eps < MIN_EXACT_EPSILON:
        raise InputError(f"epsilon = {eps:g} is below what an exact audit resolves in floating point (rounding "
                         f"alone is a loss of about {EXACT_ATOL:g}); audit an epsilon of at least "
                         f"{MIN_EXACT_EPSILON:g}")
    dlt = check_delta(delta)
    conf = float(confidence)
    if not 0.5 <= conf < 1.0:
        raise InputError("confidence must lie in [0.5, 1)")
    return eps, dlt, 1.0 - conf


def _as_samples(x, name) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 20:
        raise InputError(f"{name} must hold at least 20 outputs (a vector or an (n, D) array)")
    if np.any(np.isnan(arr)):
        raise InputError(f"{name} contains NaN outputs")
    return arr


def audit_samples(first, second, *, epsilon, delta: float = 0.0,
                  confidence: float = DEFAULT_CONFIDENCE, details: dict | None = None) -> AuditResult:
    """Sample audit of a claimed (epsilon, delta) from outputs on two neighbouring inputs.

    Parameters
    ----------
    first, second
        Independent outputs of the mechanism on the two inputs: ``(n,)`` arrays of numbers (or
        codes of a finite output) or ``(n, D)`` arrays of output vectors.
    epsilon, delta
        The claim being audited.
    confidence
        Level of the lower bound (module docstring).

    Returns
    -------
    AuditResult
        ``epsilon_lower_bound`` is 0 when no event shows any loss.
    """
    eps, dlt, alpha = _check_claim(epsilon, delta, confidence)
    a, b = _as_samples(first, "first"), _as_samples(second, "second")
    if a.shape[1] != b.shape[1]:
        raise InputError("first and second outputs must have the same dimension")
    ha, hb = a.shape[0] // 2, b.shape[0] // 2
    sel_a, est_a, sel_b, est_b = a[:ha], a[ha:], b[:hb], b[hb:]
    if a.shape[1] == 1:
        stats = {"output": lambda x: x[:, 0]}
    else:
        stats = _vector_statistics(sel_a, sel_b)
    best = None
    for name, f in stats.items():
        event, lb = _best_event(f(sel_a), f(sel_b), dlt, alpha * SELECTION_STRICTNESS)
        if best is None or lb > best[2]:
            best = (name, event, lb, f)
    assert best is not None  # stats names at least one statistic
    name, event, _, f = best
    ia = event.contains(f(est_a))
    ib = event.contains(f(est_b))
    (kh, nh), (kl, nl) = ((ia.sum(), ia.size), (ib.sum(), ib.size))[::1 if event.high == 0 else -1]
    lb = float(_bound(kh, nh, kl, nl, dlt, alpha))
    return AuditResult(epsilon=eps, delta=dlt, epsilon_lower_bound=max(lb, 0.0), exact=False,
                       event=event.describe(name), p_high=kh / nh, p_low=kl / nl,
                       trials=int(min(a.shape[0], b.shape[0])), confidence=1.0 - alpha,
                       details=dict(details or {}))


def _hockey_stick(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    return float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0)))


def _exact_epsilon(p: np.ndarray, q: np.ndarray, delta: float) -> float:
    """Smallest epsilon >= 0 with ``sum max(0, p - e^eps q) <= delta``."""
    if _hockey_stick(p, q, 0.0) <= delta:
        return 0.0
    support = p > 0
    if np.sum(p[support & (q == 0)]) > delta:
        return math.inf
    ratio = np.log(p[support & (q > 0)]) - np.log(q[support & (q > 0)])
    hi = float(np.max(ratio))  # at hi every term vanishes
    if delta == 0:
        return max(hi, 0.0)
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _hockey_stick(p, q, mid) <= delta:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-13 * max(hi, 1.0):
            break
    return hi


#: p-value below which the noise actually drawn is declared not to follow its stated law
DRAWN_P_VALUE = 1e-6


def drawn_law_mismatch(draws, pmf, label: str) -> str:
    """Why outcome indices ``draws`` do not follow ``pmf`` (a chi-square test), or ``""``.

    Outcomes expected fewer than 5 times are pooled; the test rejects at :data:`DRAWN_P_VALUE`.
    """
    from scipy.special import chdtrc

    draws = np.asarray(draws, dtype=np.int64).ravel()
    p = np.asarray(pmf, dtype=float)
    n = draws.size
    observed = np.bincount(np.clip(draws, 0, p.size - 1), minlength=p.size).astype(float)
    expected = n * p
    big = expected >= 5
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    keep = exp > 0
    if np.any(obs[~keep] > 0):
        return f"{label}: drawn outputs the law gives probability 0"
    stat = float(np.sum((obs[keep] - exp[keep]) ** 2 / exp[keep]))
    pvalue = float(chdtrc(max(int(keep.sum()) - 1, 1), stat))
    if pvalue < DRAWN_P_VALUE:
        return (f"{label}: the {n} outputs drawn do not follow the law the audit checks "
                f"(chi-square p = {pvalue:.2g}): the mechanism draws other noise than it states")
    return ""


def drawn_scale_mismatch(noise, scale: float, label: str) -> str:
    """Why Laplace noise ``noise`` drawn at stated ``scale`` is not that law (its mean |x|), or ``""``.

    ``E|X| = scale`` and ``sd |X| = scale`` for Laplace: the mean of ``N`` draws must lie within
    ``6 scale / sqrt(N)`` (plus 0.1% for the grid of exact samplers).
    """
    x = np.abs(np.asarray(noise, dtype=float).ravel())
    ratio = float(x.mean() / scale)
    if abs(ratio - 1.0) > 6.0 / math.sqrt(x.size) + 1e-3:
        return (f"{label}: the noise drawn has mean |x| = {ratio:.3f} x the stated scale over {x.size} "
                "draws (a Laplace law gives 1): the mechanism draws other noise than it states")
    return ""


def audit_exact(pmfs, *, epsilon, delta: float = 0.0, inputs=None, outcomes=None,
                details: dict | None = None) -> AuditResult:
    """Exact audit from the output distribution of every input.

    Parameters
    ----------
    pmfs
        ``(n_inputs, n_outcomes)``: row ``i`` is the exact output distribution on input ``i``.
        Every two inputs are treated as neighbours (the worst pair is reported).
    epsilon, delta
        The claim.
    inputs, outcomes
        Labels for the report.
    """
    eps, dlt, _ = _check_claim(epsilon, delta, DEFAULT_CONFIDENCE, exact=True)
    P = np.asarray(pmfs, dtype=float)
    if P.ndim != 2 or P.shape[0] < 2 or P.shape[1] < 1:
        raise InputError("pmfs must be an (inputs, outcomes) array with at least two inputs")
    if np.any(~np.isfinite(P)) or np.any(P < 0) or np.any(np.abs(P.sum(axis=1) - 1) > 1e-9):
        raise InputError("every row of pmfs must be a probability distribution")
    inputs = tuple(inputs) if inputs is not None else tuple(f"input {i}" for i in range(P.shape[0]))
    outcomes = tuple(outcomes) if outcomes is not None else tuple(str(k) for k in range(P.shape[1]))
    worst = (-1.0, 0, 1)
    for i in range(P.shape[0]):  # loop over the (few) inputs of a finite audit
        for j in range(P.shape[0]):
            if i != j:
                e = _exact_epsilon(P[i], P[j], dlt)
                if e > worst[0]:
                    worst = (e, i, j)
    e, i, j = worst
    with np.errstate(divide="ignore", invalid="ignore"):  # ln 0; 0 vs 0 is no event
        event = exceeds_exactly(np.log(P[i]) - np.log(P[j]), eps)
    if not event.any():
        event = P[i] > P[j]
    shown = [outcomes[k] for k in np.flatnonzero(event)]
    text = ", ".join(shown[:6]) + (", ..." if len(shown) > 6 else "")
    return AuditResult(epsilon=eps, delta=dlt, epsilon_lower_bound=e, exact=True,
                       event=f"output in {{{text}}}: {inputs[i]} vs {inputs[j]}",
                       p_high=float(P[i][event].sum()), p_low=float(P[j][event].sum()),
                       trials=0, confidence=1.0, details=dict(details or {}))


def audit_laplace_release(differences, scales, *, epsilon, pairs=None,
                          details: dict | None = None) -> AuditResult:
    """Exact pure-DP loss of a Laplace release over enumerated neighbouring pairs.

    Parameters
    ----------
    differences
        ``(n_pairs, D)``: ``|f(x) - f(x')|`` per released coordinate for every neighbouring pair.
    scales
        ``(D,)`` Laplace scale of every coordinate (> 0).
    epsilon
        The claim.
    pairs
        Labels of the pairs for the report.
    """
    eps, _, _ = _check_claim(epsilon, 0.0, DEFAULT_CONFIDENCE, exact=True)
    diff = np.abs(np.asarray(differences, dtype=float))
    b = np.asarray(scales, dtype=float)
    if diff.ndim != 2 or diff.shape[0] < 1 or b.shape != (diff.shape[1],):
        raise InputError("differences must be (pairs, D) and scales (D,)")
    if np.any(~np.isfinite(diff)) or np.any(~(b > 0)):
        raise InputError("differences must be finite and scales > 0")
    loss = (diff / b).sum(axis=1)
    k = int(np.argmax(loss))
    label = pairs[k] if pairs is not None else f"pair {k}"
    return AuditResult(epsilon=eps, delta=0.0, epsilon_lower_bound=float(loss[k]), exact=True,
                       event=f"the orthant beyond the shifted coordinates, {label}",
                       p_high=math.nan, p_low=math.nan, trials=0, confidence=1.0,
                       details=dict(details or {}))


def audit_losses(losses, *, epsilon, details: dict | None = None) -> AuditResult:
    """Pure-DP audit from exact privacy losses at sampled outputs (module docstring).

    Parameters
    ----------
    losses
        ``ln p(y | x) - ln p(y | x')`` at outputs ``y`` drawn from either input (both directions).
    epsilon
        The claim.
    """
    eps, _, _ = _check_claim(epsilon, 0.0, DEFAULT_CONFIDENCE, exact=True)
    L = np.asarray(losses, dtype=float).ravel()
    if L.size < 1 or not np.all(np.isfinite(L)):
        raise InputError("losses must be a non-empty array of finite log-density ratios")
    return AuditResult(epsilon=eps, delta=0.0, epsilon_lower_bound=max(float(L.max()), 0.0),
                       exact=True, event=f"the output with the largest exact loss of {L.size} sampled",
                       p_high=math.nan, p_low=math.nan, trials=0, confidence=1.0,
                       details=dict(details or {}))
