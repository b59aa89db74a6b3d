"""Reproduction: Hillebrand, Manurangsi, Suppakitpaisarn, Vajanopath, *Improved differentially
private algorithms for rank aggregation*.

The paper has no experiments; this study checks its footrule theorems empirically and compares
its footrule aggregation with the Kemeny methods of Alabi et al. at equal epsilon, every claim a
one-sided test declared before the run (:mod:`privrank.experiments.runner`).

1. **Additive error against Theorem 4.1.** Per run of Algorithm 2 (:func:`privrank.dp_footrule`,
   :func:`privrank.ldp_footrule`) the footrule excess ``F(psi) - OPT_F`` is at most
   ``2 m max|C~ - C|`` (Appendix E.1), the quantity Theorem 4.1 bounds in expectation by
   ``O(m^3 log m/(eps n))`` (Laplace, eps-DP), ``O(m^2.5 sqrt(log m log 1/delta)/(eps n))``
   (Gaussian, (eps, delta)-DP) and ``O(m^2.5 sqrt(log m)/(eps sqrt n))`` (eps-local DP).
   Its log-log slopes in ``n``, ``eps`` and ``m`` are fitted and tested against those exponents,
   the bound is checked in every run, and the excess itself is measured (the theorem only bounds
   it from above, so its exponents are observations).
2. **Comparison at equal epsilon** (pure eps-DP, one ranking protected): dp-footrule,
   DPKwikSort and the noisy pairwise matrix solved exactly, on the excess Kemeny cost
   ``K(psi) - OPT_K`` and the excess footrule cost, on sushi (PrefLib 00014, read from the
   data directory, never shipped), the largest four-movie Netflix election (PrefLib 00004-196)
   and Mallows profiles. Theorem 4.2's per-run form ``K(psi) <= 2 OPT_K + 2 m max|C~ - C|`` is
   checked in every run.

Decisions where the paper is silent:

* Profiles for part 1 are polarized (:func:`privrank.simulate.sample_polarized`: 35% one order,
  35% its reverse, 30% uniform), redrawn every replication: on well-separated profiles the
  excess is 0 at once and measures nothing.
* (eps, delta)-DP uses delta = 1e-6 and the discrete Gaussian's zCDP calibration, whose noise is
  proportional to ``1/mu(eps, delta)``; on eps <= 1 that is close to, not exactly, the
  theorem's ``1/eps`` rate, so the eps-slope is tested against the calibration's own slope, computed from :func:`privrank.mechanisms.noise.discrete_gaussian_mu` before the run. The local
  randomizer's noise follows ``coth(eps/2)`` only roughly (a report's variance is its squared
  norm over the dimension minus its squared mean, which matters at large eps), so the local
  eps-curve is drawn and its excess tested, but its slope is not.
* The m-slopes are tested between the rate's power of m without its log factor (for central DP
  also the lower bound of Appendix C: no eps-DP algorithm beats ``m^3/(eps n)``, no approximate
  one ``m^2.5/(eps n)``, and the bound holds for every input, so it cannot be smaller) and
  Theorem 4.1's local exponent (``3 + 1/ln m`` or ``2.5 + 1/(2 ln m)`` at the geometric mean of
  the grid) plus 0.25: the tree's constants (the sensitivity over ``m^2`` or ``m^1.5`` and the
  read-off amplification, Lemmas D.4 and D.5) are geometric series that converge from below and,
  computed from the tree layouts, add 0.07 to 0.18 to the slope on these grids.
* Mallows profiles: 10 items, dispersion 0.8, 1,000 rankings, redrawn every replication. The
  Kemeny baselines use their defaults (DPKwikSort: the query cap of
  :func:`~privrank.aggregation.kemeny_heuristics.kwiksort_query_cap`, which with 10 items covers all 45
  pairs, so it never falls back).
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..aggregation.footrule import assignment_order, footrule_cost_matrix
from ..aggregation.kemeny_exact import exact_kemeny
from ..aggregation.private_footrule import dp_footrule, ldp_footrule
from ..aggregation.private_kemeny import dp_kwiksort, private_kemeny
from ..data.datasets import load_netflix, load_sushi
from ..mechanisms.noise import discrete_gaussian_mu
from ..mechanisms.tree import TreeRelease
from ..metrics import kemeny_cost
from ..simulate import sample_mallows, sample_polarized
from .claims import Claim, Less, Mean, Never, Sel, Slope, Within
from .figures import Curve, Figure, Panel
from .runner import Experiment, Study, grid

DELTA = 1e-6
NOISES = {"laplace": "Laplace, eps-DP", "gaussian": "discrete Gaussian, (eps, 1e-6)-DP",
          "local": "Duchi et al., eps-local DP"}
METHODS = {"dp-footrule": "dp-footrule (Hillebrand et al.)", "dp-kwiksort": "DPKwikSort (Alabi et al.)",
           "noisy-matrix": "noisy matrix + exact (Alabi et al.)"}
NETFLIX_ELECTION = 196  # the largest four-movie election: 1,814 rankings
MALLOWS: dict[str, Any] = dict(m=10, phi=0.8, n=1000)
ROUND_OFF = 1e-9  # the per-run bounds are exact; this absorbs floating-point round-off
M_ALLOWANCE = 0.25
# Theorem 4.1's rates: exponent of m, power of log m, exponent of n
RATES = {"laplace": (3.0, 1.0, -1.0), "gaussian": (2.5, 0.5, -1.0), "local": (2.5, 0.5, -0.5)}


# --------------------------------------------------------------------------------------------
# one replication of each experiment
# --------------------------------------------------------------------------------------------

def _private_footrule(R, noise, eps, rng):
    if noise == "local":
        return ldp_footrule(R, epsilon=eps, rng=rng)
    return dp_footrule(R, epsilon=eps, delta=DELTA if noise == "gaussian" else 0.0, rng=rng)


def _footrule(C, order) -> float:
    """Footrule cost of an order from the cost matrix: ``F(psi) = sum_q C[q, psi(q)]``."""
    return float(C[order, np.arange(C.shape[0])].sum())


def footrule_error(cell, rng) -> dict:
    """Algorithm 2 on a fresh polarized profile: the bound ``2 m max|C~ - C|`` and the excess."""
    m = cell["m"]
    R = sample_polarized(m, n=cell["n"], rng=rng)
    C = footrule_cost_matrix(R)
    res = _private_footrule(R, cell["noise"], cell["eps"], rng)
    bound = 2 * m * float(np.max(np.abs(res.release.costs - C)))
    excess = _footrule(C, res.order) - _footrule(C, assignment_order(C))
    return {"bound": bound, "excess": excess, "bound_gap": excess - bound}


@functools.cache
def real_profile(name: str):
    """A real profile with its pairwise matrix, cost matrix and exact optima, loaded once per process."""
    R = load_sushi() if name == "sushi" else load_netflix(NETFLIX_ELECTION)
    return _with_optima(R)


def _with_optima(R):
    W, C = R.pairwise_matrix(), footrule_cost_matrix(R)
    return R, W, C, kemeny_cost(exact_kemeny(W), W), _footrule(C, assignment_order(C))


def compare(cell, rng) -> dict:
    """dp-footrule, DPKwikSort and noisy matrix + exact at one eps; excess costs and per-run bounds."""
    if cell["data"] == "mallows":
        R, W, C, opt_k, opt_f = _with_optima(sample_mallows(MALLOWS["m"], phi=MALLOWS["phi"], n=MALLOWS["n"],
                                                            rng=rng))
    else:
        R, W, C, opt_k, opt_f = real_profile(cell["data"])
    eps = cell["eps"]
    footrule = dp_footrule(R, epsilon=eps, rng=rng)
    orders = {"dp-footrule": footrule.order, "dp-kwiksort": dp_kwiksort(R, epsilon=eps, rng=rng).order,
              "noisy-matrix": private_kemeny(R, epsilon=eps, solver="exact", rng=rng).order}
    out = {}
    for name, order in orders.items():
        out[f"kemeny.{name}"] = kemeny_cost(order, W) - opt_k
        out[f"footrule.{name}"] = _footrule(C, order) - opt_f
    assert isinstance(footrule.release, TreeRelease)  # dp_footrule releases the cost matrix
    bound = 2 * R.n_items * float(np.max(np.abs(footrule.release.costs - C)))
    out["footrule_gap"] = out["footrule.dp-footrule"] - bound
    out["kemeny_gap"] = kemeny_cost(footrule.order, W) - 2 * opt_k - bound
    return out


# --------------------------------------------------------------------------------------------
# the study
# --------------------------------------------------------------------------------------------

FULL: dict[str, Any] = dict(
    n=dict(central=(250, 500, 1000, 2000, 4000, 8000, 16000), local=(100, 200, 400, 800, 1600, 3200),
           m=16, local_m=8, reps=300),
    eps=dict(laplace=(0.125, 0.25, 0.5, 1.0, 2.0, 4.0), gaussian=(0.125, 0.25, 0.5, 1.0),
             local=(0.5, 1.0, 2.0, 4.0), n=2000, local_n=800, reps=300),
    m=dict(central=(16, 32, 64, 128, 256), local=(16, 32, 64), n=2000, local_n=400, reps=100),
    compare=dict(eps=(0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0), reps=200),
)
QUICK: dict[str, Any] = dict(
    n=dict(central=(500, 2000, 8000), local=(200, 800, 3200), m=16, local_m=8, reps=100),
    eps=dict(laplace=(0.25, 1.0, 4.0), gaussian=(0.25, 0.5, 1.0), local=(0.5, 1.0, 4.0), n=2000,
             local_n=800, reps=100),
    m=dict(central=(16, 32, 64, 128), local=(16, 32, 64), n=2000, local_n=400, reps=40),
    compare=dict(eps=(0.01, 0.1, 1.0, 10.0), reps=100),
)
CENTRAL_EPS, LOCAL_EPS = 1.0, 2.0

DESCRIPTION = """Hillebrand, Manurangsi, Suppakitpaisarn, Vajanopath (Improved DP algorithms for rank
aggregation) has no experiments; this study tests its footrule theorems and compares footrule
aggregation with the Kemeny methods of Alabi et al. at equal epsilon. Every private run uses the
library's public functions with the corrected constants (exact sensitivities, discrete Gaussian
calibration). Costs are per voter and unnormalised; an excess is the cost above the exact
(non-private) optimum. Each claim is a one-sided test declared before the run, with a tolerance in
standard errors (SE of a cell mean = sd / sqrt(replications)); curves show means with 95%
confidence bands. These are research measurements, not private releases: the errors are computed
from the raw rankings."""


def _log_slope(xs, ys) -> float:
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def noise_eps_slope(noise: str, eps_grid) -> float:
    """Log-log slope in eps of the central release's noise scale (public functions of eps only)."""
    eps = np.asarray(eps_grid, dtype=float)
    if noise == "laplace":
        return -1.0
    return _log_slope(eps, [1.0 / discrete_gaussian_mu(e, DELTA) for e in eps])


def theorem_m_exponent(noise: str, ms) -> float:
    """Local log-log slope of Theorem 4.1's rate ``m^a (log m)^b`` at the grid's geometric mean."""
    a, b, _ = RATES[noise]
    return a + b / float(np.mean(np.log(ms)))


def build(quick: bool = False, reps: int | None = None) -> Study:
    """The Hillebrand et al. study: ``quick`` is a smaller grid that still tests every claim."""
    g = QUICK if quick else FULL

    def n_reps(name):
        return int(reps) if reps else g[name]["reps"]

    gn, ge, gm, gc = g["n"], g["eps"], g["m"], g["compare"]
    cells_n = (grid(noise=("laplace", "gaussian"), m=(gn["m"],), eps=(CENTRAL_EPS,), n=gn["central"])
               + grid(noise=("local",), m=(gn["local_m"],), eps=(LOCAL_EPS,), n=gn["local"]))
    cells_eps = (grid(noise=("laplace",), m=(gn["m"],), n=(ge["n"],), eps=ge["laplace"])
                 + grid(noise=("gaussian",), m=(gn["m"],), n=(ge["n"],), eps=ge["gaussian"])
                 + grid(noise=("local",), m=(gn["local_m"],), n=(ge["local_n"],), eps=ge["local"]))
    cells_m = (grid(noise=("laplace", "gaussian"), n=(gm["n"],), eps=(CENTRAL_EPS,), m=gm["central"])
               + grid(noise=("local",), n=(gm["local_n"],), eps=(LOCAL_EPS,), m=gm["local"]))
    experiments = [
        Experiment("error_n", "Footrule additive error against n", cells_n, n_reps("n"), footrule_error),
        Experiment("error_eps", "Footrule additive error against eps", cells_eps, n_reps("eps"), footrule_error),
        Experiment("error_m", "Footrule additive error against m", cells_m, n_reps("m"), footrule_error),
    ]
    for data, title, requires in (
            ("sushi", "Sushi (PrefLib 00014): 5,000 rankings of 10 sushi", lambda: real_profile("sushi")),
            ("netflix", f"Netflix (PrefLib 00004-{NETFLIX_ELECTION}): 1,814 rankings of 4 movies",
             lambda: real_profile("netflix")),
            ("mallows", "Mallows: 1,000 rankings of 10 items, dispersion 0.8", None)):
        experiments.append(Experiment(data, title, grid(data=(data,), eps=gc["eps"]), n_reps("compare"),
                                      compare, requires=requires))
    figures: list[Figure] = []
    claims: list[Claim] = []
    _error_claims(g, figures, claims)
    _compare_claims(gc, figures, claims)
    title = "Reproduction of Hillebrand et al.: private footrule aggregation"
    return Study("hillebrand", title + (" (quick)" if quick else ""), tuple(experiments), tuple(claims),
                 tuple(figures), DESCRIPTION)


def _error_panels(x):
    return tuple(Panel(title, tuple(Curve(NOISES[nz], metric, {"noise": nz}) for nz in NOISES), x=x, ylabel=metric)
                 for metric, title in (("bound", "additive-error bound 2m max|C~ - C|"),
                                       ("excess", "footrule excess F(psi) - OPT_F")))


def _error_claims(g, figures, claims):
    gn, ge, gm = g["n"], g["eps"], g["m"]
    caption = ("Theorem 4.1 bounds the expected excess by 2m E max|C~ - C| (Appendix E.1); the bound holds in every "
               "run. Laplace and Gaussian: central model, m = {m}; local: m = {lm}.")
    figures.append(Figure("error_n", "Footrule additive error against the number of rankings n", "error_n",
                          _error_panels("n"), caption.format(m=gn["m"], lm=gn["local_m"])
                          + f" eps = {CENTRAL_EPS:g} (central), {LOCAL_EPS:g} (local)."))
    figures.append(Figure("error_eps", "Footrule additive error against eps", "error_eps", _error_panels("eps"),
                          caption.format(m=gn["m"], lm=gn["local_m"])
                          + f" n = {ge['n']} (central), {ge['local_n']} (local)."))
    figures.append(Figure("error_m", "Footrule additive error against the number of items m", "error_m",
                          _error_panels("m"), caption.format(m="16..", lm="16..")
                          + f" n = {gm['n']} (central), {gm['local_n']} (local). At fixed n the excess saturates "
                          "near the trivial error of order m^2 for large m, so only the bound is fitted."))
    for noise, words in NOISES.items():
        a, b, n_exp = RATES[noise]
        claims.append(Within(id=f"T4.1-{noise}-n", figure="error_n",
                             text=f"{words}: the additive-error bound falls like n^{n_exp:g} (Theorem 4.1)",
                             stat=Slope(Sel("error_n", "bound", noise=noise), x="n"), lo=n_exp - 0.1, hi=n_exp + 0.1))
        if noise != "local":
            ref = noise_eps_slope(noise, ge[noise])
            why = "1/eps" if noise == "laplace" else "1/mu(eps, delta) of the exact calibration"
            claims.append(Within(id=f"T4.1-{noise}-eps", figure="error_eps",
                                 text=f"{words}: the bound falls like the noise scale {why} (slope {ref:.3f} on "
                                      "this grid; Theorem 4.1: 1/eps)",
                                 stat=Slope(Sel("error_eps", "bound", noise=noise), x="eps"),
                                 lo=ref - 0.1, hi=ref + 0.1))
        ms = gm["local" if noise == "local" else "central"]
        top = theorem_m_exponent(noise, ms) + M_ALLOWANCE
        claims.append(Within(id=f"T4.1-{noise}-m", figure="error_m",
                             text=f"{words}: the bound grows in m with an exponent between {a:g} and Theorem "
                                  f"4.1's m^{a:g} (log m)^{b:g} (local exponent {top - M_ALLOWANCE:.2f}) + "
                                  f"{M_ALLOWANCE:g}",
                             stat=Slope(Sel("error_m", "bound", noise=noise), x="m"), lo=a, hi=top))
        ns, es = (gn["local"] if noise == "local" else gn["central"]), ge[noise]
        claims.append(Less(id=f"T4.1-{noise}-excess-n", figure="error_n",
                           text=f"{words}: the footrule excess at n={max(ns)} is below that at n={min(ns)}",
                           a=Mean(Sel("error_n", "excess", noise=noise, n=max(ns))),
                           b=Mean(Sel("error_n", "excess", noise=noise, n=min(ns)))))
        claims.append(Less(id=f"T4.1-{noise}-excess-eps", figure="error_eps",
                           text=f"{words}: the footrule excess at eps={max(es):g} is below that at eps={min(es):g}",
                           a=Mean(Sel("error_eps", "excess", noise=noise, eps=max(es))),
                           b=Mean(Sel("error_eps", "excess", noise=noise, eps=min(es)))))
        upper = tuple(n for n in ns if n >= sorted(ns)[len(ns) // 2])
        claims.append(Less(id=f"T4.1-{noise}-excess-rate", figure="error_n", required=False,
                           text=f"{words}: the footrule excess falls at least like Theorem 4.1's n^{n_exp:g} "
                                f"(slope over n={min(upper)}..{max(upper)}, where the noise is below the trivial level)",
                           a=Slope(Sel("error_n", "excess", noise=noise, n=upper), x="n"), b=n_exp))
    for exp in ("error_n", "error_eps", "error_m"):
        claims.append(Never(id=f"E.1-{exp}", figure=exp,
                            text="footrule excess <= 2 m max|C~ - C| in every run (Appendix E.1)",
                            sel=Sel(exp, "bound_gap"), above=ROUND_OFF))


def _compare_claims(gc, figures, claims):
    lo, hi = min(gc["eps"]), max(gc["eps"])
    for data in ("sushi", "netflix", "mallows"):
        panels = tuple(Panel(title, tuple(Curve(label, f"{metric}.{name}") for name, label in METHODS.items()),
                             x="eps", ylabel=f"{metric} excess")
                       for metric, title in (("kemeny", "Kemeny excess K(psi) - OPT_K"),
                                             ("footrule", "footrule excess F(psi) - OPT_F")))
        figures.append(Figure(f"compare_{data}", f"Equal-eps comparison on {data} (pure eps-DP, one ranking)",
                              data, panels,
                              "The paper's Table 1 favours dp-footrule asymptotically (Kemeny additive error "
                              "m^3 log m/(eps n) with ratio 2, against m^4/(eps n) for the noisy matrix); the "
                              "observations below test it at these sizes."))
        claims.append(Never(id=f"E.1-{data}", figure=f"compare_{data}",
                            text="dp-footrule: footrule excess <= 2 m max|C~ - C| in every run (Appendix E.1)",
                            sel=Sel(data, "footrule_gap"), above=ROUND_OFF))
        claims.append(Never(id=f"T4.2-{data}", figure=f"compare_{data}",
                            text="dp-footrule: Kemeny cost <= 2 OPT_K + 2 m max|C~ - C| in every run (Theorem 4.2)",
                            sel=Sel(data, "kemeny_gap"), above=ROUND_OFF))
        for name, label in METHODS.items():
            claims.append(Less(id=f"{data}-{name}-consistent", figure=f"compare_{data}",
                               text=f"{label}: the Kemeny excess at eps={hi:g} is below that at eps={lo:g}",
                               a=Mean(Sel(data, f"kemeny.{name}", eps=hi)),
                               b=Mean(Sel(data, f"kemeny.{name}", eps=lo))))
        for metric, words in (("kemeny", "Kemeny"), ("footrule", "footrule")):
            claims.append(Less(id=f"{data}-footrule-beats-matrix-{metric}", figure=f"compare_{data}",
                               required=False,
                               text=f"dp-footrule has a smaller {words} excess than the noisy matrix + exact at "
                                    "equal eps (the paper's asymptotic ordering; paired, pooled over eps)",
                               a=Mean(Sel(data, f"{metric}.dp-footrule")),
                               b=Mean(Sel(data, f"{metric}.noisy-matrix"))))
