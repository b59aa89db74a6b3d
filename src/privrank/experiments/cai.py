"""Reproduction: Cai, Chakraborty, Wang, *Optimal differentially private ranking from pairwise comparisons*.

The experiments of the paper's §4 with the library's central-DP algorithms
(:mod:`privrank.pairwise.central`): the objective-perturbed MLE (Algorithm 1) and noisy Copeland
counts (Algorithm 2), each next to its non-private counterpart (the same ridge MLE without
noise, Copeland counts without noise) on the same data. Every claim is a one-sided test declared
before the run (:mod:`privrank.experiments.runner`).

* **Simulations** (§4.1, Figures 1-3): BTL on an Erdos-Renyi design, one comparison per observed
  pair; sweeps over the number of items n (p = 1), the edge probability p (n = 300), and epsilon
  (n = 300, four values of p). Metrics: log relative l_inf and l_2 errors of the MLE, and the
  top-k error ``1 - |S_hat & S_k| / k`` of both algorithms (the paper's overlap is one minus it).
* **Real data** (§4.2, Figures 4-7): CEMS university preferences and immigration attitudes;
  every item pair is kept with probability p, with all its comparisons; the private estimates
  are compared with the non-private ones on the same subsample.

Decisions where the paper is silent (implementer's notes §4, §5 and §7):

* theta*: the last ``k = round(n/4)`` items at 0, the others at ``log U(0.2, 0.7)``, centred,
  drawn **once per n** from a seed fixed by n (as the authors' code), so every replication,
  epsilon and p at that n shares it. The data are redrawn every replication, and each
  replication draws fresh privacy noise (the authors' code reused one noise vector).
* Simulations use the authors' ridge ``gamma = 2 sqrt(n p log n)`` with the design's p (public)
  and noise scale ``8 / epsilon``; it is above the privacy minimum ``1 / epsilon`` in every
  cell. Estimates are centred before errors are measured; non-private Copeland breaks ties
  between equal counts at random.
* Real data use the library's default ridge (``gamma="theory"``: ``2 sqrt(d log n)`` with ``d``
  the mean number of comparisons per item of the subsample, at least ``1 / epsilon``), which
  is epsilon-DP at every epsilon; the authors' ``2 sqrt(n p log n / L)`` is not for
  epsilon <= 1 (notes §7.6). The non-private reference is the MLE with the same ridge. Ties
  count half a win for both data sets (the authors dropped them for the immigration data).
  Copeland counts are noised with scale ``2 / epsilon`` and ranked as counts (the authors
  noised win proportions with half that noise, which is 2 epsilon-DP; notes §7.7). A subsample
  that keeps no pair is drawn again (the authors scored it as the largest error).
* Every cell (n, p, eps) draws its own data sets and fits the private and the non-private
  estimators to each of them, so the cost of privacy is measured on the same data (the authors
  reused one data set for every eps). Replications: 100 per simulation cell (the authors ran 90
  and 120), 500 per real-data cell.

Reported without being required (``observations.csv``): the coefficients of the l_inf rate
``c0 + c1 sqrt(log n/(np)) + c2 log n/(np eps)`` (Theorem 2.2) fitted to the mean errors of all
simulation cells -- the constant ``c0`` is the ridge's floor: ``2 sqrt(n p log n)`` is of the
order of the Fisher information per item at these sizes, so even non-private estimates are
shrunk by about half; exact top-k recovery rates; Copeland against the MLE and across eps; and
the paper's statement that private and non-private real-data estimates are close at eps <= 1.

Every release is sampled from sufficient statistics: simulated comparisons as per-pair counts
(:func:`privrank.simulate.erdos_renyi_counts`, equal in distribution to drawing every
comparison), and real-data subsamples as subsets of the per-pair counts (keeping a pair keeps
all its comparisons, so this is the subsample itself).
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..data.pair_counts import PairCounts
from ..data.datasets import load_cems, load_immigration
from ..metrics import linf_error, l2_error, rank_position_mismatch, top_k_hamming
from ..pairwise.central import (THEORY_RIDGE_CONSTANT, copeland, noisy_copeland, penalised_mle,
                                perturbed_mle)
from ..simulate import erdos_renyi_counts, separated_top_k_scores
from .claims import Claim, Coefficient, Less, Mean, Sel, Slope, Within
from .figures import Curve, Figure, Panel
from .runner import Experiment, Study, grid

THETA_SEED = 2023  # theta* for n items is drawn from SeedSequence([THETA_SEED, n])
NON_PRIVATE = "_np"  # suffix of the non-private counterparts' metrics
SIMULATIONS = ("n_sweep", "p_sweep", "eps_sweep")
SURVEYS = {"cems": ("CEMS university preferences", load_cems),
           "immigration": ("immigration attitudes", load_immigration)}

CLOSE = 0.1  # "small" l_inf distance between private and non-private real-data estimates
SPAN = {"cems": 1.24, "immigration": 0.63}  # range of the non-private scores, full data, default ridge
SIM_LABELS = {"log_linf": "log relative l_inf error", "log_l2": "log relative l_2 error",
              "topk_mle": "top-k error via estimation (MLE)", "topk_copeland": "top-k error via counting (Copeland)"}
SURVEY_LABELS = {"l2": "||theta_P - theta_NP||_2", "linf": "||theta_P - theta_NP||_inf",
                 "ham_param": "rank positions changed (MLE)", "ham_nonparam": "rank positions changed (Copeland)"}


# --------------------------------------------------------------------------------------------
# one replication
# --------------------------------------------------------------------------------------------

@functools.cache
def true_scores(n: int) -> tuple[np.ndarray, int]:
    """theta* and k of the simulations for ``n`` items (§4.1), drawn once per n."""
    return separated_top_k_scores(n, np.random.default_rng([THETA_SEED, n]))


def simulation_ridge(n: int, p: float) -> float:
    """The authors' ridge ``2 sqrt(n p log n)`` for the design G(n, p) (public)."""
    return THEORY_RIDGE_CONSTANT * math.sqrt(n * p * math.log(n))


def _by_position(result) -> np.ndarray:
    """Scores that order the items exactly as ``result`` does, its tie-break included."""
    return -np.argsort(result.order).astype(float)


def simulation(cell, rng) -> dict:
    """One data set of G(n, p) comparisons, estimated privately at ``eps`` and without privacy.

    Metrics of the private algorithms, and the same with suffix ``_np`` for their non-private
    counterparts: ``log_linf``, ``log_l2`` (log relative errors of the MLE), ``linf`` (its
    l_inf error), ``topk_mle``, ``topk_copeland`` (top-k errors) and ``exact_mle``,
    ``exact_copeland`` (1 when the top-k set is recovered exactly).
    """
    n, p, eps = cell["n"], cell["p"], cell["eps"]
    theta, k = true_scores(n)
    data = erdos_renyi_counts(theta, p, rng=rng)
    gamma = simulation_ridge(n, p)
    fits = {"": (perturbed_mle(data, eps, gamma=gamma, rng=rng), noisy_copeland(data, eps, rng=rng)),
            NON_PRIVATE: (penalised_mle(data, gamma=gamma), copeland(data, rng=rng))}
    out = {}
    for suffix, (mle, counts) in fits.items():
        out["log_linf" + suffix] = math.log(linf_error(mle.scores, theta, relative=True))
        out["log_l2" + suffix] = math.log(l2_error(mle.scores, theta, relative=True))
        out["linf" + suffix] = linf_error(mle.scores, theta)
        for name, result in (("mle", mle), ("copeland", counts)):
            miss = top_k_hamming(_by_position(result), theta, k)
            out[f"topk_{name}{suffix}"] = miss
            out[f"exact_{name}{suffix}"] = float(miss == 0.0)
    return out


@functools.cache
def survey_counts(name: str) -> PairCounts:
    """Per-pair counts of a survey (ties half a win each); raises DatasetNotFound when missing."""
    return SURVEYS[name][1]().pair_counts()


def subsample_pairs(counts: PairCounts, p: float, rng) -> PairCounts:
    """Keep every item pair with probability p, with all its comparisons; redrawn until one is kept."""
    while True:
        keep = rng.random(counts.n_pairs) < p
        if keep.any():
            return PairCounts.from_arrays(counts.n_items, counts.i[keep], counts.j[keep], counts.wins[keep],
                                          counts.totals[keep], items=counts.items)


def _survey(name: str, cell, rng) -> dict:
    """Private against non-private estimates on one pair subsample of a survey (§4.2)."""
    sub = subsample_pairs(survey_counts(name), cell["p"], rng)
    mle = perturbed_mle(sub, cell["eps"], rng=rng)
    reference = penalised_mle(sub, gamma=mle.params["gamma"])
    counts, exact = noisy_copeland(sub, cell["eps"], rng=rng), copeland(sub, rng=rng)
    n = sub.n_items
    return {"l2": math.sqrt(n) * l2_error(mle.scores, reference.scores),  # the paper's unnormalised norm
            "linf": linf_error(mle.scores, reference.scores),
            "ham_param": rank_position_mismatch(_by_position(mle), _by_position(reference)),
            "ham_nonparam": rank_position_mismatch(_by_position(counts), _by_position(exact))}


def cems(cell, rng) -> dict:
    """One replication on the CEMS university preferences."""
    return _survey("cems", cell, rng)


def immigration(cell, rng) -> dict:
    """One replication on the immigration attitudes."""
    return _survey("immigration", cell, rng)


SURVEY_REPLICATES = {"cems": cems, "immigration": immigration}


# --------------------------------------------------------------------------------------------
# the study
# --------------------------------------------------------------------------------------------

SIM_EPS = (0.5, 1.0, 2.5)
FULL: dict[str, Any] = dict(
    n_sweep=dict(n=tuple(range(100, 701, 75)), p=(1.0,), eps=SIM_EPS, reps=100),
    p_sweep=dict(n=(300,), p=tuple(round(0.1 + 0.075 * i, 3) for i in range(13)), eps=SIM_EPS, reps=100),
    eps_sweep=dict(n=(300,), p=(0.25, 0.5, 0.75, 1.0), eps=(0.2, 0.25, 1 / 3, 0.5, 1.0, 1.5, 2.0, 2.5, 5.0),
                   reps=100),
    surveys=dict(p=(0.2, 0.4, 0.6, 0.8, 0.9, 1.0), eps=(0.1, 0.5, 1.0, 2.0, 4.0, 8.0), reps=500),
)
QUICK: dict[str, Any] = dict(
    n_sweep=dict(n=(100, 400), p=(1.0,), eps=SIM_EPS, reps=20),
    p_sweep=dict(n=(300,), p=(0.1, 1.0), eps=SIM_EPS, reps=20),
    eps_sweep=dict(n=(300,), p=(0.25, 1.0), eps=(0.2, 0.5, 1.0, 5.0), reps=20),
    surveys=dict(p=(0.2, 0.6, 1.0), eps=(0.5, 1.0, 8.0), reps=100),
)

DESCRIPTION = """Cai, Chakraborty, Wang (2023), §4: the objective-perturbed MLE (Algorithm 1,
noise scale 8/eps) and noisy Copeland counts (Algorithm 2, noise scale 2/eps), both central
eps-DP per comparison, against their non-private counterparts on the same data (curves
"non-private", the paper's eps = infinity). Simulations: BTL on G(n, p), theta* fixed per n,
ridge 2 sqrt(n p log n). Real data: pairs kept with probability p; private estimates are compared
with the non-private MLE of the same ridge on the same subsample (the library's default ridge,
private at every eps, not the authors' real-data ridge). Each claim is a one-sided test declared
before the run, with a tolerance in standard errors (SE of a cell mean = sd / sqrt(replications);
pooled cells weigh equally). Curves show means with 95% confidence bands. These are research
measurements, not private releases."""


def build(quick: bool = False, reps: int | None = None) -> Study:
    """The Cai, Chakraborty, Wang reproduction: ``quick`` is a smaller grid that still tests every claim."""
    return study(QUICK if quick else FULL, reps, " (quick)" if quick else "")


def study(g: dict, reps: int | None = None, suffix: str = "") -> Study:
    """The study on the grids ``g`` (shaped like :data:`FULL`), every claim declared on them."""

    def n(name):
        return int(reps) if reps else g[name]["reps"]

    def cells(name):
        return grid(n=g[name]["n"], p=g[name]["p"], eps=g[name]["eps"])

    s = g["surveys"]
    experiments = (
        Experiment("n_sweep", f"Experiment 1: accuracy against n ({_fixed(g, 'n_sweep', 'p')})", cells("n_sweep"),
                   n("n_sweep"), simulation),
        Experiment("p_sweep", f"Experiment 2: accuracy against p ({_fixed(g, 'p_sweep', 'n')})", cells("p_sweep"),
                   n("p_sweep"), simulation),
        Experiment("eps_sweep", f"Experiment 3: accuracy against eps ({_fixed(g, 'eps_sweep', 'n')})",
                   cells("eps_sweep"), n("eps_sweep"), simulation),
    ) + tuple(Experiment(name, f"Real data: {title}", grid(p=s["p"], eps=s["eps"]), n("surveys"),
                         SURVEY_REPLICATES[name], requires=functools.partial(survey_counts, name))
              for name, (title, _) in SURVEYS.items())
    figures: list[Figure] = []
    claims: list[Claim] = []
    _sweep(g, "n_sweep", "n", "fig1_n",
           f"Figure 1 - accuracy against the number of items n ({_fixed(g, 'n_sweep', 'p')})", figures, claims)
    _sweep(g, "p_sweep", "p", "fig2_p",
           f"Figure 2 - accuracy against the edge probability p ({_fixed(g, 'p_sweep', 'n')})", figures, claims)
    _eps_sweep(g["eps_sweep"], f"Figure 3 - accuracy against eps ({_fixed(g, 'eps_sweep', 'n')})", figures, claims)
    _rate_fit(claims)
    for number, name in ((4, "cems"), (6, "immigration")):
        _survey_claims(s, name, number, figures, claims)
    title = "Reproduction of Cai, Chakraborty, Wang: optimal differentially private ranking from pairwise comparisons"
    return Study("cai", title + suffix, experiments, tuple(claims), tuple(figures), DESCRIPTION)


def _fixed(g, exp, setting) -> str:
    return f"{setting} = " + ", ".join(f"{v:g}" for v in g[exp][setting])


def _eps_label(e) -> str:
    return f"eps={e:.3g}"


def _sim_panels(curves, x: str) -> tuple:
    return tuple(Panel(label, curves(metric), x, metric) for metric, label in SIM_LABELS.items())


def _sweep(g, exp, axis, fig, title, figures, claims):
    """Figure 1 or 2: errors against n or p, one curve per eps; errors fall along the axis."""
    c = g[exp]
    lo, hi = min(c[axis]), max(c[axis])
    eps0 = c["eps"][0]

    def curves(metric):
        return tuple(Curve(_eps_label(e), metric, {"eps": e}) for e in c["eps"]) + \
            (Curve("non-private", metric + NON_PRIVATE, {"eps": eps0}),)

    panels = _sim_panels(curves, axis)
    figures.append(Figure(fig, title, exp, panels,
                          f"Paper: all losses fall as {axis} grows; larger eps gives better accuracy; noisy Copeland "
                          "beats the MLE on top-k recovery. The non-private curve is drawn from the data of the "
                          f"eps={eps0:g} cells (every cell also fits it on its own data). Top-k error = 1 - overlap. "
                          "Without privacy, Copeland's raw win counts lose to the MLE when p is small: an item's count "
                          "grows with its number of comparisons, which varies from item to item (the authors' own "
                          "numbers for Figure 2 show the same)."))
    for metric in ("log_linf", "log_l2"):
        name = SIM_LABELS[metric]
        for e in c["eps"]:
            claims.append(Less(id=f"{exp}-{metric}-falls-eps{e:g}", figure=fig,
                               text=f"eps={e:g}: the MLE's {name} falls from {axis}={lo:g} to {axis}={hi:g}",
                               a=Mean(Sel(exp, metric, **{axis: hi, "eps": e})),
                               b=Mean(Sel(exp, metric, **{axis: lo, "eps": e}))))
        claims.append(Less(id=f"{exp}-{metric}-falls-nonprivate", figure=fig,
                           text=f"non-private: the MLE's {name} falls from {axis}={lo:g} to {axis}={hi:g} "
                                "(pooled over the cells' eps)",
                           a=Mean(Sel(exp, metric + NON_PRIVATE, **{axis: hi})),
                           b=Mean(Sel(exp, metric + NON_PRIVATE, **{axis: lo}))))
    _privacy_costs(exp, fig, claims)
    _copeland_observations(exp, fig, claims, axis, lo, hi, c["eps"])


def _privacy_costs(exp, fig, claims):
    """Required: the MLE's l_2 error at eps = 0.5 exceeds the non-private one on the same data."""
    claims.append(Less(id=f"{exp}-log_l2-eps0.5-above-nonprivate", figure=fig,
                       text="the MLE's log relative l_2 error at eps=0.5 exceeds the non-private one "
                            "(paired on the same data, pooled over the cells)",
                       a=Mean(Sel(exp, "log_l2" + NON_PRIVATE, eps=0.5)), b=Mean(Sel(exp, "log_l2", eps=0.5))))


def _copeland_observations(exp, fig, claims, axis, lo, hi, eps):
    """The paper's top-k statements, reported: Copeland beats the MLE; exact recovery improves along the axis."""
    for suffix, regime in (("", "private"), (NON_PRIVATE, "non-private")):
        claims.append(Less(id=f"{exp}-copeland-beats-mle-{regime}", figure=fig, required=False,
                           text=f"{regime}: noisy Copeland has a smaller top-k error than the MLE "
                                "(paired, pooled over the cells)",
                           a=Mean(Sel(exp, "topk_copeland" + suffix)), b=Mean(Sel(exp, "topk_mle" + suffix))))
        for algo in ("mle", "copeland"):
            claims.append(Less(id=f"{exp}-exact-{algo}-rises-{regime}", figure=fig, required=False,
                               text=f"{regime}: the {algo}'s exact top-k recovery rate rises from {axis}={lo:g} "
                                    f"to {axis}={hi:g} (pooled over eps)",
                               a=Mean(Sel(exp, f"exact_{algo}{suffix}", **{axis: lo})),
                               b=Mean(Sel(exp, f"exact_{algo}{suffix}", **{axis: hi}))))


def _eps_sweep(c, title, figures, claims):
    """Figure 3: errors against eps, one curve per p, with the non-private level of each p."""
    exp, fig = "eps_sweep", "fig3_eps"
    lo, hi = min(c["eps"]), max(c["eps"])

    def curves(metric):
        return tuple(Curve(f"p={p:g}", metric, {"p": p}) for p in c["p"]) + \
            tuple(Curve(f"p={p:g} non-private", metric + NON_PRIVATE, {"p": p}) for p in c["p"])

    panels = _sim_panels(curves, "eps")
    figures.append(Figure(fig, title, exp, panels,
                          "Paper: larger eps gives better accuracy, for every p. Each cell also fits the non-private "
                          "estimators on its own data (the paper's eps = infinity): their curves are flat. "
                          "The observations check the paper's statements on Copeland's errors across eps; the authors' "
                          "non-private Copeland broke ties by item index, which made it look worse than eps = 5."))
    _privacy_costs(exp, fig, claims)
    for metric, label in SIM_LABELS.items():
        claims.append(Less(id=f"eps_sweep-{metric}-falls", figure=fig, required=False,
                           text=f"the {label} falls from eps={lo:g} to eps={hi:g} (pooled over p)",
                           a=Mean(Sel(exp, metric, eps=hi)), b=Mean(Sel(exp, metric, eps=lo))))
    private = tuple(e for e in c["eps"] if e <= 0.5)
    claims.append(Within(id="eps_sweep-linf-slope-in-eps", figure=fig, required=False,
                         text="where privacy dominates (p=0.25, eps <= 0.5) the MLE's l_inf error falls like 1/eps "
                              "(Theorem 2.2; notes §8.3: log-log slope within +-0.25 of -1)",
                         stat=Slope(Sel(exp, "linf", p=min(c["p"]), eps=private), "eps"), lo=-1.25, hi=-0.75))
    claims.append(Less(id="eps_sweep-copeland-nonprivate-best", figure=fig, required=False,
                       text=f"Copeland's top-k error without noise is below its error at eps={hi:g} (pooled over p)",
                       a=Mean(Sel(exp, "topk_copeland" + NON_PRIVATE, eps=hi)),
                       b=Mean(Sel(exp, "topk_copeland", eps=hi))))


def _statistical(cell) -> float:
    return math.sqrt(math.log(cell["n"]) / (cell["n"] * cell["p"]))


def _privacy(cell) -> float:
    return math.log(cell["n"]) / (cell["n"] * cell["p"] * cell["eps"])


def _constant(cell) -> float:
    return 1.0


RATE_TERMS = {"1": _constant, "sqrt(log n/(np))": _statistical, "log n/(np eps)": _privacy}


def _rate_fit(claims):
    """Observations: the fitted terms of the l_inf rate (Theorem 2.2) over every simulation cell."""
    sels = tuple(Sel(exp, "linf") for exp in SIMULATIONS)
    for term, text in (("sqrt(log n/(np))", "the statistical term has a positive coefficient"),
                       ("log n/(np eps)", "the privacy term has a positive coefficient")):
        claims.append(Within(id=f"rate-{'privacy' if 'eps' in term else 'statistical'}", required=False,
                             text=f"Theorem 2.2 rate fitted to the mean l_inf error: {text}",
                             stat=Coefficient(sels, RATE_TERMS, term), lo=0.0))
    claims.append(Within(id="rate-no-floor", required=False,
                         text="Theorem 2.2 rate fitted to the mean l_inf error: no floor (the constant term is "
                              "below 0.05, so the error vanishes with the two terms)",
                         stat=Coefficient(sels, RATE_TERMS, "1"), hi=0.05))


def _survey_claims(s, name, number, figures, claims):
    """Figures 4-7 and the real-data claims for one survey."""
    title = SURVEYS[name][0]
    p_lo, p_hi = min(s["p"]), max(s["p"])
    e_lo, e_hi = min(s["eps"]), max(s["eps"])
    panels_p = tuple(Panel(label, tuple(Curve(_eps_label(e), metric, {"eps": e}) for e in s["eps"]), "p", metric)
                     for metric, label in SURVEY_LABELS.items())
    panels_e = tuple(Panel(label, tuple(Curve(f"p={p:g}", metric, {"p": p}) for p in s["p"]), "eps", metric)
                     for metric, label in SURVEY_LABELS.items())
    fig_p, fig_e = f"fig{number}_{name}_p", f"fig{number + 1}_{name}_eps"
    caption = ("Private minus non-private estimates on the same pair subsample (the ridge of both is the library's "
               "default, private at every eps). Paper: every metric increases as p or eps decreases, and for "
               "moderate to large p the private and non-private estimates are close even at eps <= 1.")
    figures.append(Figure(fig_p, f"Figure {number} - {title} against p", name, panels_p, caption))
    figures.append(Figure(fig_e, f"Figure {number + 1} - {title} against eps", name, panels_e, caption))
    for e in (e for e in s["eps"] if e >= 1):
        claims.append(Less(id=f"{name}-l2-p1-below-p{p_lo:g}-eps{e:g}", figure=fig_p,
                           text=f"eps={e:g}: the MLE's l_2 change at p={p_hi:g} is below that at p={p_lo:g}",
                           a=Mean(Sel(name, "l2", p=p_hi, eps=e)), b=Mean(Sel(name, "l2", p=p_lo, eps=e))))
    for metric, label in SURVEY_LABELS.items():
        claims.append(Less(id=f"{name}-{metric}-rises-as-p-falls", figure=fig_p, required=False,
                           text=f"the {label} is larger at p={p_lo:g} than at p={p_hi:g} (pooled over eps)",
                           a=Mean(Sel(name, metric, p=p_hi)), b=Mean(Sel(name, metric, p=p_lo))))
        claims.append(Less(id=f"{name}-{metric}-rises-as-eps-falls", figure=fig_e, required=False,
                           text=f"the {label} is larger at eps={e_lo:g} than at eps={e_hi:g} (pooled over p)",
                           a=Mean(Sel(name, metric, eps=e_hi)), b=Mean(Sel(name, metric, eps=e_lo))))
    moderate = tuple(p for p in s["p"] if p >= 0.6)
    for e in (e for e in s["eps"] if e <= 1):
        claims.append(Within(id=f"{name}-close-at-eps{e:g}", figure=fig_e, required=False,
                             text=f"for p >= 0.6 the private and non-private MLEs are close even at eps={e:g} "
                                  f"(the paper: at eps <= 1): mean l_inf distance below {CLOSE:g}, the non-private "
                                  f"scores spanning {SPAN[name]:.2f} on the full data",
                             stat=Mean(Sel(name, "linf", p=moderate, eps=e)), hi=CLOSE))
