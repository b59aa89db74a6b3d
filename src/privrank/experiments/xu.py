"""Reproduction: Xu, Sun, Cheng, *Rate-optimal rank aggregation with private pairwise rankings*.

Every experiment of the paper's §5 - Scenarios I-V (Figures 2-6) and the MovieLens study
(Figure 7) - plus one extension, with each qualitative claim declared as a one-sided test
(:mod:`privrank.experiments.runner`). Debiased randomized response (eq. 1) at eps-local DP per
comparison, then the regularised BTL M-estimator (eq. 3) with ``lambda = G(eps)/L`` (the
default of :func:`privrank.fit_btl`).

Decisions where the paper is silent or misprinted (implementer's notes §7):

* theta* is drawn from U(-2, 2), **redrawn every replication and centred** (Scenarios I, II, V
  and the extension); evenly spaced with gap Delta and centred in Scenarios III and IV
  (Delta = 0.1 in IV, which the paper does not state).
* ``lambda = G(eps)/L``: the paper's printed ``(e^eps+1)^2/((e^eps-1) L)`` over-shrinks at large
  eps and would make eps = 3 worse than eps = 1.
* The adaptive schemes are named by rate (``log_over``, ``critical``, ``log_under``): the
  paper's narrative numbers them opposite to its formulas (its "Scheme 1" in Figures 3, 5, 7
  is ``log_under``). They are normalised so that eps = 1 at ``L0 = 100`` in Scenarios II and
  IV (the paper's literal choice, so eps > 1 at L = 50 in IV) and at the smallest L = 50 for
  MovieLens (Figure 7's caption).
* Replications: the paper's 50 (I), 100 (III, V) and 200 (MovieLens). It does not state them for
  II and IV; 300 and 500 make the critical-scheme claims informative tests.
* The Laplace baseline adds Laplace(1/eps) to each comparison (eps-local DP per comparison; the
  paper names it without defining it). In Scenario V all mechanisms release the same
  simulated answers, and classic and debiased randomized response share the same reports.
* MovieLens is ml-latest-small (the statistics the paper quotes are not those of ML-100K):
  the 40 most-rated movies, all 610 users, users subsampled without replacement in every
  replication; equal ratings and two unrated movies are ties, which randomized response
  answers as a fair coin; theta* is the non-private fit on all 610 users (ties half a win). A
  non-private curve (the same subsamples fitted without privacy) is added: it isolates the
  error of sampling users, which the paper does not discuss.

Every release is drawn from per-pair counts by the exact samplers of :mod:`privrank.simulate`
(equal in distribution to randomizing each answer): of simulated BTL answers, and for MovieLens
of the real answers of the drawn users.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..data.datasets import load_movielens_top40
from ..metrics import kendall_distance, l2_error, linf_error, top_k_hamming
from ..pairwise.btl import fit_btl
from ..pairwise.local import ADAPTIVE_SCHEMES, adaptive_epsilon
from ..pairwise.release import WEIGHTS
from ..simulate import release_complete_answers, sample_debiased_release, sample_local_releases
from .claims import Claim, Less, Mean, Never, Ratio, Sel, Slope, Within
from .figures import Curve, Figure, Panel
from .runner import Experiment, Study, grid

SIM_L0 = 100           # adaptive schemes: eps = 1 at L = 100 (Scenarios II and IV)
MOVIELENS_L0 = 50      # ... and at the smallest sample size for MovieLens
RANKING_EPS = 1.0      # Scenario III
IV_DELTA = 0.1         # Scenario IV gap (not stated in the paper)
V_EPS = 2.0            # Scenario V
V_METHODS = {"debiased": "debiased RR", "classic": "classic RR", "laplace": "Laplace", "none": "non-private"}
MIXED_EPS = 2.0        # extension: most users ...
MIXED_STRONG_EPS = 0.1  # ... and a share of users with much stronger privacy
MIXED_M = 20
MOVIELENS_TOP = 10
NON_PRIVATE = "none"

METRIC_LABELS = {"linf": "l_inf error", "l2": "l_2 error / sqrt(m)", "kendall": "Kendall distance",
                 "top_k": "top-K error H_K (K = m/2)", "top_10": "top-10 error H_10"}


# --------------------------------------------------------------------------------------------
# one replication of each experiment
# --------------------------------------------------------------------------------------------

def _uniform_theta(rng, m: int) -> np.ndarray:
    theta = rng.uniform(-2.0, 2.0, m)
    return theta - theta.mean()


def _spaced_theta(m: int, delta: float) -> np.ndarray:
    return delta * ((m - 1) / 2.0 - np.arange(m))


def _estimation_errors(scores, theta) -> dict:
    return {"linf": linf_error(scores, theta), "l2": l2_error(scores, theta)}


def consistency(cell, rng) -> dict:
    """Scenario I: fixed eps."""
    theta = _uniform_theta(rng, cell["m"])
    fit = fit_btl(sample_debiased_release(theta, cell["L"], cell["eps"], rng))
    return _estimation_errors(fit.scores, theta)


def estimation_threshold(cell, rng) -> dict:
    """Scenario II: eps shrinking with m and L by an adaptive scheme."""
    theta = _uniform_theta(rng, cell["m"])
    eps = adaptive_epsilon(cell["scheme"], cell["m"], cell["L"], SIM_L0)
    fit = fit_btl(sample_debiased_release(theta, cell["L"], eps, rng))
    return _estimation_errors(fit.scores, theta)


def ranking_recovery(cell, rng) -> dict:
    """Scenario III: evenly spaced theta*, eps = 1, top-K with K = m/2 and full ranking."""
    m = cell["m"]
    theta = _spaced_theta(m, cell["delta"])
    fit = fit_btl(sample_debiased_release(theta, cell["L"], RANKING_EPS, rng))
    return {"top_k": top_k_hamming(fit.scores, theta, m // 2), "kendall": kendall_distance(fit.scores, theta)}


def ranking_threshold(cell, rng) -> dict:
    """Scenario IV: the full-ranking error under the adaptive schemes."""
    theta = _spaced_theta(cell["m"], IV_DELTA)
    eps = adaptive_epsilon(cell["scheme"], cell["m"], cell["L"], SIM_L0)
    fit = fit_btl(sample_debiased_release(theta, cell["L"], eps, rng))
    return {"kendall": kendall_distance(fit.scores, theta)}


def mechanisms(cell, rng) -> dict:
    """Scenario V: debiased RR, classic RR, Laplace and no privacy on the same simulated answers.

    ``order_mismatch`` is the Kendall distance between the classic and debiased fits counting a
    pair tied in one order only as 1/2: 0 exactly when their weak orders coincide.
    """
    theta = _uniform_theta(rng, cell["m"])
    releases = sample_local_releases(theta, cell["L"], V_EPS, tuple(V_METHODS), rng)
    scores = {name: fit_btl(rel).scores for name, rel in releases.items()}
    out = {}
    for name, s in scores.items():
        out.update({f"{metric}.{name}": v for metric, v in _estimation_errors(s, theta).items()})
        out[f"kendall.{name}"] = kendall_distance(s, theta)
    out["order_mismatch"] = kendall_distance(scores["classic"], scores["debiased"], tie_penalty=0.5)
    return out


def mixed_privacy(cell, rng) -> dict:
    """Extension: a share of users at eps = 0.1, the rest at eps = 2; uniform vs inverse-variance weights."""
    L = cell["L"]
    eps = np.where(np.arange(L) < round(cell["share"] * L), MIXED_STRONG_EPS, MIXED_EPS)
    theta = _uniform_theta(rng, MIXED_M)
    data_seed = rng.integers(2 ** 63)  # both weightings see the same randomized reports
    out = {}
    for w in WEIGHTS:
        fit = fit_btl(sample_debiased_release(theta, L, eps, data_seed, weights=w))
        out[f"l2.{w}"] = l2_error(fit.scores, theta)
        out[f"kendall.{w}"] = kendall_distance(fit.scores, theta)
    return out


@functools.cache
def movielens_data():
    """MovieLens answers as a (users x pairs) array and theta* (non-private fit on all users), per process."""
    comps = load_movielens_top40()
    m = comps.n_items
    pair = np.full((m, m), -1)
    pair[np.triu_indices(m, 1)] = np.arange(m * (m - 1) // 2)
    a, b = comps.item_a, comps.item_b
    assert comps.user is not None and comps.users is not None  # MovieLens names its users
    answers = np.zeros((len(comps.users), m * (m - 1) // 2), dtype=np.int8)
    answers[comps.user, pair[np.minimum(a, b), np.maximum(a, b)]] = np.where(a < b, comps.outcome, -comps.outcome)
    return answers, fit_btl(comps).scores


def movielens(cell, rng) -> dict:
    """MovieLens (§5.4): L users drawn without replacement, their answers released at eps.

    The release is drawn from the drawn users' per-pair answer counts
    (:func:`privrank.simulate.release_complete_answers`), exactly as if every answer were
    randomized. The scheme ``"none"`` fits those answers without privacy: the error of sampling
    L of the 610 users alone.
    """
    answers, theta = movielens_data()
    sample = answers[rng.choice(answers.shape[0], cell["L"], replace=False)]
    if cell["scheme"] == NON_PRIVATE:
        rel = release_complete_answers(sample, mechanisms=("none",))["none"]
    else:
        eps = adaptive_epsilon(cell["scheme"], theta.size, cell["L"], MOVIELENS_L0)
        rel = release_complete_answers(sample, eps, rng=rng)["debiased"]
    fit = fit_btl(rel)
    return {"kendall": kendall_distance(fit.scores, theta), "top_10": top_k_hamming(fit.scores, theta, MOVIELENS_TOP),
            **_estimation_errors(fit.scores, theta)}


# --------------------------------------------------------------------------------------------
# the study
# --------------------------------------------------------------------------------------------

FULL: dict[str, Any] = dict(
    consistency=dict(L=(100, 200, 400, 800), m=(10, 20, 40), eps=(1.0, 2.0, 3.0), reps=50),
    estimation=dict(L=(100, 200, 400, 800, 1600), m=(10, 20, 30), reps=300),
    ranking=dict(L=(50, 100, 200, 400), m=(10, 20, 30), delta=(0.05, 0.1, 0.15, 0.2), reps=100),
    ranking_threshold=dict(L=(50, 100, 200, 400), m=(10, 20, 30), reps=500),
    mechanisms=dict(L=(50, 100, 200, 400), m=(10, 20), reps=100),
    mixed=dict(L=(100, 200, 400, 800), share=(0.05, 0.2, 0.5), reps=100),
    movielens=dict(L=(50, 100, 200, 400, 600), reps=200),
)
QUICK: dict[str, Any] = dict(
    consistency=dict(L=(100, 800), m=(10, 40), eps=(1.0, 2.0, 3.0), reps=100),
    estimation=dict(L=(100, 1600), m=(10, 20, 30), reps=300),
    ranking=dict(L=(50, 400), m=(10, 30), delta=(0.05, 0.2), reps=100),
    ranking_threshold=dict(L=(50, 400), m=(10, 20, 30), reps=500),
    mechanisms=dict(L=(50, 400), m=(10, 20), reps=200),
    mixed=dict(L=(100, 800), share=(0.05, 0.5), reps=100),
    movielens=dict(L=(50, 600), reps=100),
)

DESCRIPTION = """Xu, Sun, Cheng (arXiv 2402.16792 v1), §5: debiased randomized response at
eps-local DP per comparison (eq. 1), then the regularised BTL M-estimator (eq. 3) with
lambda = G(eps)/L. theta* is redrawn every replication and centred; the adaptive schemes are
named by rate (the paper's "Scheme 1" in its figures is `log_under`, its "Scheme 3" is
`log_over`). Each claim is a one-sided test declared before the run, with a tolerance in
standard errors (SE of a cell mean = sd / sqrt(replications); pooled cells weigh equally).
Curves show means with 95% confidence bands (mean +- 1.96 SE). These are research
measurements, not private releases: errors are measured against the true scores (for
MovieLens, against the non-private fit on all users)."""


SAME_RANKING_CAPTION = (
    "Classic and debiased randomized response give the same ranking on the same reports (their Kendall "
    "curves coincide). With one eps for all users the debiased win matrix is an increasing affine function of "
    "the classic one, so both have the same Borda scores up to an increasing map, and on this complete design "
    "the BTL fit orders items exactly by Borda score, ties included. The paper's remark that debiasing also "
    "improves the ranking does not hold for equal eps; debiasing matters for the scores, not the order.")


def build(quick: bool = False, reps: int | None = None) -> Study:
    """The Xu, Sun, Cheng reproduction: ``quick`` is a smaller grid that still tests every claim."""
    g = QUICK if quick else FULL

    def n(name):
        return int(reps) if reps else g[name]["reps"]

    c1, c2, c3 = g["consistency"], g["estimation"], g["ranking"]
    c4, c5, cx, cm = g["ranking_threshold"], g["mechanisms"], g["mixed"], g["movielens"]
    experiments = (
        Experiment("scenario1", "Scenario I: consistency at fixed eps", grid(eps=c1["eps"], m=c1["m"], L=c1["L"]),
                   n("consistency"), consistency),
        Experiment("scenario2", "Scenario II: estimation under adaptive eps",
                   grid(scheme=ADAPTIVE_SCHEMES, m=c2["m"], L=c2["L"]), n("estimation"), estimation_threshold),
        Experiment("scenario3", "Scenario III: ranking recovery at eps = 1",
                   grid(m=c3["m"], delta=c3["delta"], L=c3["L"]), n("ranking"), ranking_recovery),
        Experiment("scenario4", "Scenario IV: full ranking under adaptive eps",
                   grid(scheme=ADAPTIVE_SCHEMES, m=c4["m"], L=c4["L"]), n("ranking_threshold"), ranking_threshold),
        Experiment("scenario5", "Scenario V: debiased RR vs classic RR vs Laplace at eps = 2",
                   grid(m=c5["m"], L=c5["L"]), n("mechanisms"), mechanisms),
        Experiment("movielens", "MovieLens (ml-latest-small, top 40 movies)",
                   grid(scheme=ADAPTIVE_SCHEMES + (NON_PRIVATE,), L=cm["L"]), n("movielens"), movielens,
                   requires=movielens_data),
        Experiment("mixed_epsilon", "Extension: mixed eps, uniform vs inverse-variance weights",
                   grid(share=cx["share"], L=cx["L"]), n("mixed"), mixed_privacy),
    )
    figures: list[Figure] = []
    claims: list[Claim] = []
    _scenario1(c1, figures, claims)
    _scenario2(c2, figures, claims)
    _scenario3(c3, figures, claims)
    _scenario4(c4, figures, claims)
    _scenario5(c5, figures, claims)
    _movielens(cm, figures, claims)
    _mixed(cx, figures, claims)
    title = "Reproduction of Xu, Sun, Cheng: rank aggregation with private pairwise rankings"
    return Study("xu", title + (" (quick)" if quick else ""), experiments, tuple(claims), tuple(figures),
                 DESCRIPTION)


def _scenario1(c, figures, claims):
    Lmin, Lmax, mmin, mmax = min(c["L"]), max(c["L"]), min(c["m"]), max(c["m"])
    panels = tuple(Panel(f"{METRIC_LABELS[metric]}, eps={e:g}",
                         tuple(Curve(f"m={m}", metric, {"eps": e, "m": m}) for m in c["m"]), ylabel=metric)
                   for metric in ("linf", "l2") for e in c["eps"])
    figures.append(Figure("fig2_scenario1", "Figure 2 - Scenario I: estimation error at fixed eps", "scenario1",
                          panels, "Paper: the errors decrease as L or m grows (Theorem 2: rate "
                          "sqrt(G(eps) log(mL) / (mL)), so slope -1/2 in L on log-log axes)."))
    for metric in ("linf", "l2"):
        for e in c["eps"]:
            claims.append(Within(id=f"I-{metric}-L-eps{e:g}", figure="fig2_scenario1",
                                 text=f"eps={e:g}: the {METRIC_LABELS[metric]} falls like L^-1/2 (pooled over m)",
                                 stat=Slope(Sel("scenario1", metric, eps=e)), lo=-0.65, hi=-0.35))
            claims.append(Less(id=f"I-{metric}-m-eps{e:g}", figure="fig2_scenario1",
                               text=f"eps={e:g}: the {METRIC_LABELS[metric]} decreases in m (m={mmax} vs "
                                    f"m={mmin}, pooled over L={Lmin}..{Lmax})",
                               a=Mean(Sel("scenario1", metric, eps=e, m=mmax)),
                               b=Mean(Sel("scenario1", metric, eps=e, m=mmin))))


def _scheme_panels(metric, ms):
    return tuple(Panel(f"{METRIC_LABELS[metric]}, m={m}",
                       tuple(Curve(s, metric, {"scheme": s, "m": m}) for s in ADAPTIVE_SCHEMES), ylabel=metric)
                 for m in ms)


SCHEME_CAPTION = ("Schemes named by rate, eps(m, L0) = 1: log_over ~ log(mL)/sqrt(mL), critical ~ "
                  "1/sqrt(mL), log_under ~ 1/(sqrt(mL) log(mL)); the paper's figures call log_under "
                  "\"Scheme 1\" and log_over \"Scheme 3\".")


def _threshold_claims(experiment, figure, label, metric, Lmin, Lmax, claims):
    lo = dict(L=Lmin)
    hi = dict(L=Lmax)
    claims.append(Less(id=f"{label}-{metric}-log_under-rises", figure=figure,
                       text=f"log_under: the {METRIC_LABELS[metric]} increases with L (L={Lmax} vs L={Lmin}, pooled over m)",
                       a=Mean(Sel(experiment, metric, scheme="log_under", **lo)),
                       b=Mean(Sel(experiment, metric, scheme="log_under", **hi))))
    claims.append(Less(id=f"{label}-{metric}-log_over-falls", figure=figure,
                       text=f"log_over: the {METRIC_LABELS[metric]} decreases with L (L={Lmax} vs L={Lmin}, pooled over m)",
                       a=Mean(Sel(experiment, metric, scheme="log_over", **hi)),
                       b=Mean(Sel(experiment, metric, scheme="log_over", **lo))))


def _ratio(experiment, metric, scheme, Lmin, Lmax):
    return Ratio(Sel(experiment, metric, scheme=scheme, L=Lmax), Sel(experiment, metric, scheme=scheme, L=Lmin))


def _scenario2(c, figures, claims):
    Lmin, Lmax = min(c["L"]), max(c["L"])
    panels = _scheme_panels("linf", c["m"]) + _scheme_panels("l2", c["m"])
    figures.append(Figure("fig3_scenario2", "Figure 3 - Scenario II: estimation error under adaptive eps",
                          "scenario2", panels,
                          "Paper: the critical scheme's curve stays level as L grows; the errors worsen under "
                          "log_under and improve under log_over, so eps ~ 1/sqrt(mL) is the dividing line. "
                          + SCHEME_CAPTION))
    for metric in ("linf", "l2"):
        claims.append(Within(id=f"II-{metric}-critical-flat", figure="fig3_scenario2",
                             text=f"critical: the {METRIC_LABELS[metric]} at L={Lmax} is within 15% of L={Lmin} "
                                  "(pooled over m)",
                             stat=_ratio("scenario2", metric, "critical", Lmin, Lmax), lo=0.85, hi=1.15))
        _threshold_claims("scenario2", "fig3_scenario2", "II", metric, Lmin, Lmax, claims)


def _scenario3(c, figures, claims):
    Lmin, Lmax, mmin, mmax = min(c["L"]), max(c["L"]), min(c["m"]), max(c["m"])
    dmin, dmax = min(c["delta"]), max(c["delta"])
    panels = tuple(Panel(f"{METRIC_LABELS[metric]}, m={m}",
                         tuple(Curve(f"Delta={d:g}", metric, {"m": m, "delta": d}) for d in c["delta"]),
                         ylabel=metric)
                   for metric in ("top_k", "kendall") for m in c["m"])
    figures.append(Figure("fig4_scenario3", "Figure 4 - Scenario III: ranking errors at eps = 1", "scenario3",
                          panels, "Paper: top-K and full-ranking errors decrease as L, m or Delta grows, and "
                          "the full-ranking error is almost zero at (L, m, Delta) = (400, 30, 0.2)."))
    for metric in ("top_k", "kendall"):
        name = METRIC_LABELS[metric]
        for axis, small, large in (("L", Lmin, Lmax), ("m", mmin, mmax), ("delta", dmin, dmax)):
            claims.append(Less(id=f"III-{metric}-{axis}", figure="fig4_scenario3",
                               text=f"the {name} decreases in {axis} ({axis}={large:g} vs {axis}={small:g}, "
                                    "pooled over the other settings)",
                               a=Mean(Sel("scenario3", metric, **{axis: large})),
                               b=Mean(Sel("scenario3", metric, **{axis: small}))))
    if (400, 30, 0.2) in {(cl, cm, cd) for cl in c["L"] for cm in c["m"] for cd in c["delta"]}:
        claims.append(Less(id="III-kendall-near-zero", figure="fig4_scenario3",
                           text="the full-ranking error is almost zero at (L, m, Delta) = (400, 30, 0.2)",
                           a=Mean(Sel("scenario3", "kendall", L=400, m=30, delta=0.2)), b=0.02))


def _scenario4(c, figures, claims):
    Lmin, Lmax = min(c["L"]), max(c["L"])
    figures.append(Figure("fig5_scenario4", "Figure 5 - Scenario IV: full-ranking error under adaptive eps",
                          "scenario4", _scheme_panels("kendall", c["m"]),
                          "Paper: as in Scenario II, eps ~ 1/sqrt(mL) divides rising from falling errors. "
                          f"theta* evenly spaced with Delta = {IV_DELTA:g}; eps = 1 at L = {SIM_L0}, so "
                          "eps > 1 at L = 50. The critical curve drifts down at these sizes: its error "
                          "follows sqrt(G(eps)/(mL)) with G(eps) = coth^2(eps/2) = 4/eps^2 + 2/3 + O(eps^2), and "
                          "the 2/3 term, negligible for small eps, still weighs at eps ~ 1; the Kendall "
                          "distance amplifies the change (it falls faster than linearly in the noise level). "
                          "The dividing-line claims test the paper's statement; the literal 15% band is "
                          "reported as an observation. " + SCHEME_CAPTION))
    _threshold_claims("scenario4", "fig5_scenario4", "IV", "kendall", Lmin, Lmax, claims)
    ratios = {s: _ratio("scenario4", "kendall", s, Lmin, Lmax) for s in ADAPTIVE_SCHEMES}
    claims.append(Less(id="IV-kendall-critical-below-log_under", figure="fig5_scenario4",
                       text=f"the critical scheme's change from L={Lmin} to L={Lmax} lies below log_under's",
                       a=ratios["critical"], b=ratios["log_under"]))
    claims.append(Less(id="IV-kendall-critical-above-log_over", figure="fig5_scenario4",
                       text=f"the critical scheme's change from L={Lmin} to L={Lmax} lies above log_over's",
                       a=ratios["log_over"], b=ratios["critical"]))
    claims.append(Within(id="IV-kendall-critical-flat", figure="fig5_scenario4", required=False,
                         text=f"critical: the Kendall distance at L={Lmax} is within 15% of L={Lmin} (pooled over m)",
                         stat=ratios["critical"], lo=0.85, hi=1.15))


def _scenario5(c, figures, claims):
    panels = tuple(Panel(f"{METRIC_LABELS[metric]}, m={m}",
                         tuple(Curve(label, f"{metric}.{name}", {"m": m}) for name, label in V_METHODS.items()),
                         ylabel=metric)
                   for m in c["m"] for metric in ("linf", "l2", "kendall"))
    figures.append(Figure("fig6_scenario5", f"Figure 6 - Scenario V: mechanisms at eps = {V_EPS:g}", "scenario5",
                          panels, "Paper: debiased RR beats classic RR and Laplace on every metric, and classic "
                          "RR does not estimate theta* consistently. " + SAME_RANKING_CAPTION))
    for metric in ("l2", "linf", "kendall"):
        claims.append(Less(id=f"V-{metric}-debiased-beats-laplace", figure="fig6_scenario5",
                           text=f"debiased RR has a smaller {METRIC_LABELS[metric]} than Laplace at equal eps "
                                "(paired, pooled over L and m)",
                           a=Mean(Sel("scenario5", f"{metric}.debiased")),
                           b=Mean(Sel("scenario5", f"{metric}.laplace"))))
    claims.append(Within(id="V-linf-classic-flat", figure="fig6_scenario5",
                         text="classic RR's l_inf error does not decrease with L (biased: log-log slope near 0)",
                         stat=Slope(Sel("scenario5", "linf.classic")), lo=-0.1, hi=0.1))
    claims.append(Within(id="V-linf-debiased-falls", figure="fig6_scenario5",
                         text="debiased RR's l_inf error falls like L^-1/2",
                         stat=Slope(Sel("scenario5", "linf.debiased")), lo=-0.65, hi=-0.35))
    claims.append(Never(id="V-same-ranking", figure="fig6_scenario5",
                        text="classic and debiased RR rank the items identically (as weak orders) on the same "
                             "reports, so the paper's ranking gain from debiasing does not exist at equal eps",
                        sel=Sel("scenario5", "order_mismatch"), above=0.0))


def _movielens(c, figures, claims):
    Lmin, Lmax = min(c["L"]), max(c["L"])
    metrics = ("kendall", "top_10", "l2", "linf")
    curves = {s: s for s in ADAPTIVE_SCHEMES} | {NON_PRIVATE: "non-private"}
    panels = tuple(Panel(METRIC_LABELS[metric], tuple(Curve(label, metric, {"scheme": s}) for s, label in curves.items()),
                         ylabel=metric) for metric in metrics)
    figures.append(Figure(
        "fig7_movielens", "Figure 7 - MovieLens: errors under adaptive eps", "movielens", panels,
        "Paper: a significant rise of every error under its Scheme 1 (log_under) and a decrease under Scheme 3 "
        "(log_over), as in the simulations. The observations below test those two statements on the data. "
        "The non-private curve (the same subsamples fitted without privacy) shows what differs from the "
        "simulations: drawing L of the 610 users is itself a large error at small L, because each user's 780 "
        "answers come from one rating vector and move together, and it vanishes as L approaches 610, since "
        "theta* is the fit on all users. Under log_under that shrinking sampling error outweighs the growing "
        "privacy noise, so its errors fall and then level off instead of rising. About half of the answers "
        "are ties (equal ratings or two unrated movies), "
        f"and the scores span only about 0.8. eps = 1 at L = {MOVIELENS_L0} for every scheme. " + SCHEME_CAPTION))
    for metric in metrics:
        name = METRIC_LABELS[metric]
        claims.append(Less(id=f"ML-{metric}-log_under-rises", figure="fig7_movielens", required=False,
                           text=f"log_under (the paper's Scheme 1): the {name} rises from L={Lmin} to L={Lmax}",
                           a=Mean(Sel("movielens", metric, scheme="log_under", L=Lmin)),
                           b=Mean(Sel("movielens", metric, scheme="log_under", L=Lmax))))
        claims.append(Less(id=f"ML-{metric}-log_over-falls", figure="fig7_movielens", required=False,
                           text=f"log_over (the paper's Scheme 3): the {name} falls from L={Lmin} to L={Lmax}",
                           a=Mean(Sel("movielens", metric, scheme="log_over", L=Lmax)),
                           b=Mean(Sel("movielens", metric, scheme="log_over", L=Lmin))))


def _mixed(c, figures, claims):
    panels = tuple(Panel(f"{METRIC_LABELS[metric]}, {share:.0%} at eps={MIXED_STRONG_EPS:g}",
                         tuple(Curve(w, f"{metric}.{w}", {"share": share}) for w in WEIGHTS), ylabel=metric)
                   for metric in ("l2", "kendall") for share in c["share"])
    figures.append(Figure(
        "ext_mixed_epsilon", "Extension - mixed privacy levels: uniform vs inverse-variance weights",
        "mixed_epsilon", panels,
        f"Not in the paper. m = {MIXED_M}; a share of users at eps = {MIXED_STRONG_EPS:g}, the rest at "
        f"eps = {MIXED_EPS:g}. The paper's estimator averages debiased answers with equal weights, so its variance "
        "factor is mean coth^2(eps/2), dominated by the strongly private users; weights tanh^2(eps/2) (public, "
        "so post-processing) give 1 / mean tanh^2(eps/2), never larger (Cauchy-Schwarz). Both weightings fit the "
        "same randomized reports in each replication."))
    for metric in ("l2", "kendall"):
        claims.append(Less(id=f"X-{metric}-inverse-variance-wins", figure="ext_mixed_epsilon",
                           text=f"inverse-variance weights give a smaller {METRIC_LABELS[metric]} than uniform "
                                "weights when some users choose much stronger privacy (paired, pooled)",
                           a=Mean(Sel("mixed_epsilon", f"{metric}.inverse_variance")),
                           b=Mean(Sel("mixed_epsilon", f"{metric}.uniform"))))
