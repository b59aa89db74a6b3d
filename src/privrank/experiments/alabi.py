"""Reproduction: Alabi, Ghazi, Kumar, Manurangsi, *Private rank aggregation in central and local models*.

The paper (AAAI 2022) has no experiments: its results are the additive errors ``beta`` of
Tables 2 and 3 (implementer's notes ``alabi.md`` §3), worst-case upper bounds up to constants.
This study measures the excess Kemeny cost ``K(order, w) - OPT(w)`` (pairs per voter) of
every method against the exact optimum, fits its exponents in ``n``, ``eps`` and ``m`` and
compares them with the tables, on three kinds of data:

* **Near-tie family** (the worst case). A share ``1/2 + gamma`` of the ``n`` voters rank the
  items ``0, 1, ..., m-1`` and the rest the reverse order, so every pair has margin ``gamma``;
  the optimum is ``0, 1, ..., m-1`` and an order with ``k`` inversions has excess exactly
  ``2 gamma k``. The margin is set relative to the method's per-comparison error ``e``
  (:func:`noise_level`): ``gamma = c e`` on a grid of ``c``. At ``c << 1`` errors cost little,
  at ``c >> 1`` they are rare; the largest mean excess over ``c`` (the envelope,
  ``Sel(worst="c")``) is the method's additive error on this family. For a central method the
  excess is exactly ``e`` times a function of ``(c, m)`` (the output depends only on
  ``(w~ - 1/2)/e``), so at every ``c`` the excess has the exponents in ``n`` and ``eps`` of the
  noise the implementation really adds; local methods follow the same law by the central
  limit theorem. The exponents in ``n`` and ``eps`` are fitted at the smaller margins (one
  intercept per ``c``), where an output has many inversions and the excess is precise; the
  exponent in ``m`` is fitted to the envelope, since the worst ``c`` drifts with ``m``.
* **Mallows profiles** with controlled ``n``, ``m`` and dispersion ``phi``, drawn afresh in
  every replication (benign data: the excess falls much faster than in the worst case).
* **Real profiles**: Kamishima's sushi (5,000 rankings of 10 items, also subsampled to fewer
  voters) and the 100 four-movie PrefLib Netflix elections (one drawn per replication), read
  from the data directory and skipped with a message when missing.

Methods (:mod:`privrank.aggregation.private_kemeny`; ``delta = 1e-6`` for the Gaussian ones):
noisy matrix + exact solver with Laplace or Gaussian noise (Corollaries 3 and 4; the exact
solver is the ``alpha = 1`` instance of their ``1 + xi``), DPKwikSort with Laplace or Gaussian
answers (Corollaries 6 and 7; fallback fraction 1/2, the paper's split), the exponential
mechanism (``m <= 8``), Hay et al.'s budgeted quicksort (the baseline of §1.2), the one-round
local Duchi et al. matrix + exact solver (Corollary 9) and LDPKwikSort (Corollary 12), plus
non-private KwikSort, Borda and Copeland on the real and Mallows data.

Claims (one-sided tests with standard-error tolerances, declared before the run):

* exponents in ``n`` and ``eps`` at every margin of the near-tie family: the tables' -1 and -1
  (central) and -1/2 and -1 (local; ``1/eps`` is the small-eps form, so each eps grid stays
  where the error is within a few per cent of it), within 0.25, half the gap between the
  central and the local rate in ``n``. Noise that shrinks faster than the tables' rate (too
  little noise for large ``n``) shows as a steeper fall; noise that shrinks more slowly, as a
  flatter one;
* the explicit ``(1, beta)`` bounds of the exact-solver methods and the exponential mechanism
  (notes §7.3.1) on Mallows, sushi and Netflix profiles, where an order that ignored the data
  would exceed them: mean excess below ``2 M e`` (Theorem 1 with ``alpha = 1``, ``e`` the mean
  absolute error of one entry, ``M = m(m-1)/2``) or ``2 M (ln m! + 1)/(eps n)``;
* every private method but Hay et al.'s approaches the optimum as eps grows (and as ``n``
  grows on sushi); Hay et al.'s quicksort does not approach it as ``n`` grows, since its
  comparisons past the budget stay in random order (paper §1.2), while DPKwikSort reaches it.

Observations: the exponent in ``m`` of the worst-case excess against the tables' rates
(``m^4``, ``m^3 log m``, ...) within 0.3 (notes §7.3.3). On the near-tie family every order has
excess at most ``2 gamma M = 2 c M e``, so an upper bound of the tables' shape cannot fail
there whatever the method; what the data show is how close the worst case comes to it, and
lower-order terms move exponents on feasible grids (``M = m(m-1)/2``; ``q/(m ln m)`` rises from
2.3 to 3.0 up to ``m = 128``; ``tau`` is far from ``Theta(log m)``; ``m <= 8`` for the
exponential mechanism). Also observed: the tables' ordering of DPKwikSort below the noisy
matrix, which compares upper bounds up to constants, and LDPKwikSort against ``n`` on sushi,
where at ``n <= 5000`` its answers are still noise (the paper needs ``n >~ m/eps^2`` up to
logarithms).
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..aggregation.kemeny_exact import exact_kemeny
from ..aggregation.kemeny_heuristics import borda, copeland, kwiksort_matrix, kwiksort_query_cap
from ..aggregation.private_kemeny import (dp_kwiksort, exponential_kemeny, hay_quicksort,
                                          ldp_kwiksort, ldp_matrix, local_group_cap, private_kemeny)
from ..data.datasets import load_netflix, load_sushi
from ..data.rankings import Rankings
from ..errors import InputError
from ..mechanisms.local_vectors import duchi_l2_scale
from ..mechanisms.pairwise_matrix import Budget
from ..mechanisms.randomized_response import variance_inflation
from ..metrics import kemeny_cost
from ..simulate import sample_mallows
from .claims import Claim, Less, Mean, Never, Sel, Slope, Within
from .figures import Curve, Figure, Panel
from .runner import Experiment, Study, grid

DELTA = 1e-6                 # the Gaussian methods' delta
FALLBACK_FRACTION = 0.5      # DPKwikSort and LDPKwikSort: the paper's even split
EXPONENTIAL_MAX_M = 8
NETFLIX_ELECTIONS = tuple(range(101, 201))  # the four-movie elections
EXPONENT_SLACK = 0.3         # lower-order terms over a finite range of m (notes §7.3.3)
RATE_SLACK = 0.25            # half the gap between the central and local rates in n
MARGIN_ROUNDING = 0.1        # rounding to whole voters moves a near-tie margin by at most 10%

METHODS = {
    "matrix-laplace": "noisy matrix + exact, Laplace (Cor. 3)",
    "matrix-gauss": "noisy matrix + exact, Gaussian (Cor. 4)",
    "dpk-laplace": "DPKwikSort, Laplace (Cor. 6)",
    "dpk-gauss": "DPKwikSort, Gaussian (Cor. 7)",
    "exponential": "exponential mechanism",
    "hay": "Hay et al. budgeted quicksort",
    "ldp-matrix": "local Duchi et al. matrix + exact (Cor. 9)",
    "ldp-kwiksort": "LDPKwikSort (Cor. 12)",
}
NON_PRIVATE = {"kwiksort": "KwikSort (not private)", "borda": "Borda (not private)",
               "copeland": "Copeland (not private)"}
EVERY = (*METHODS, *NON_PRIVATE)
LOCAL = ("ldp-matrix", "ldp-kwiksort")
NEAR_TIE = tuple(m for m in METHODS if m != "hay")  # Hay's budget cap is not a noise level
# the tables' simplified additive error as a function of m (Tables 2 and 3)
TABLE = {
    "matrix-laplace": ("m^4", lambda m: m ** 4.0),
    "matrix-gauss": ("m^3", lambda m: m ** 3.0),
    "dpk-laplace": ("m^3 log m", lambda m: m ** 3.0 * np.log(m)),
    "dpk-gauss": ("m^2.5 sqrt(log m)", lambda m: m ** 2.5 * np.sqrt(np.log(m))),
    "exponential": ("m^3 log m", lambda m: m ** 3.0 * np.log(m)),
    "ldp-matrix": ("m^3", lambda m: m ** 3.0),
    "ldp-kwiksort": ("m^2.5 log m", lambda m: m ** 2.5 * np.log(m)),
}
EXACT_BOUND = ("matrix-laplace", "matrix-gauss", "exponential", "ldp-matrix")


# --------------------------------------------------------------------------------------------
# methods, their error scales and bounds
# --------------------------------------------------------------------------------------------

_RELEASES = {
    "matrix-laplace": lambda r, eps, rng: private_kemeny(r, epsilon=eps, solver="exact", rng=rng),
    "matrix-gauss": lambda r, eps, rng: private_kemeny(r, epsilon=eps, delta=DELTA, solver="exact", rng=rng),
    "dpk-laplace": lambda r, eps, rng: dp_kwiksort(r, epsilon=eps, fallback_fraction=FALLBACK_FRACTION, rng=rng),
    "dpk-gauss": lambda r, eps, rng: dp_kwiksort(r, epsilon=eps, delta=DELTA, fallback_fraction=FALLBACK_FRACTION,
                                                 rng=rng),
    "exponential": lambda r, eps, rng: exponential_kemeny(r, epsilon=eps, rng=rng),
    "hay": lambda r, eps, rng: hay_quicksort(r, epsilon=eps, rng=rng),
    "ldp-matrix": lambda r, eps, rng: ldp_matrix(r, epsilon=eps, solver="exact", rng=rng),
    "ldp-kwiksort": lambda r, eps, rng: ldp_kwiksort(r, epsilon=eps, fallback_fraction=FALLBACK_FRACTION, rng=rng),
}


def private_order(method: str, profile: Rankings, eps: float, rng) -> np.ndarray:
    """The order ``method`` (a key of :data:`METHODS`) releases at ``eps``."""
    return _RELEASES[method](profile, eps, rng).order


def _non_private_order(method: str, w: np.ndarray, rng) -> np.ndarray:
    if method == "kwiksort":
        return kwiksort_matrix(w, rng)
    return borda(w) if method == "borda" else copeland(w)


def noise_level(method: str, m: int, n: int, eps: float) -> float:
    """Per-comparison error scale ``e`` of ``method`` (public: a function of ``m, n, eps``).

    The mean absolute error of one noisy entry of ``w`` (Laplace scale ``b``, Gaussian
    ``sigma sqrt(2/pi)``) for the noisy matrix and DPKwikSort's answers; for the local matrix
    the bound ``B / sqrt(M n)`` on the root mean square error of an entry (the reports have norm
    ``B`` and dimension ``M = m(m-1)/2``); for LDPKwikSort the standard deviation of a group's
    debiased answer, ``sqrt(coth^2(eps_0/2) / (4 floor(n/m)))``; for the exponential mechanism
    ``M/(eps n)``, the cost difference that changes an order's probability by ``e^(1/2)``.
    """
    M = m * (m - 1) // 2
    if method.startswith("matrix-") or method.startswith("dpk-"):
        q, fraction = M, 1.0
        if method.startswith("dpk-"):
            q = kwiksort_query_cap(m)
            fraction = 1.0 if q >= M else 1.0 - FALLBACK_FRACTION
        budget = Budget(eps, DELTA if method.endswith("gauss") else 0.0)
        scale = budget.scale(fraction, q / n, math.sqrt(q) / n)
        return scale if budget.noise == "laplace" else scale * math.sqrt(2.0 / math.pi)
    if method == "exponential":
        return M / (eps * n)
    if method == "ldp-matrix":
        return duchi_l2_scale(M, math.sqrt(M) / 2.0, eps) / math.sqrt(M * n)
    tau = local_group_cap(m, kwiksort_query_cap(m))
    eps0 = eps * (1.0 if tau >= M else 1.0 - FALLBACK_FRACTION) / tau
    return math.sqrt(float(variance_inflation(eps0)) / (4 * (n // m)))


def additive_bound(method: str, m: int, n: int, eps: float) -> float:
    """The additive term ``beta`` of the notes' explicit ``E K <= alpha OPT + beta`` (§7.3.1).

    Reductions (Theorems 1, 5, 8, 11): ``beta = (alpha + 1) M e``, from
    ``|K(s, w) - K(s, w~)| <= sum_{i<j} |w~ - w|`` (Fact 2) applied to the output and to the
    optimum; ``alpha = 1`` with the exact solver, so ``K(out, w) <= OPT + 2 sum_{i<j} |w~ - w|``
    in every run, and ``alpha = 5`` for KwikSort (its fallback adds a term below
    ``m^-4 M^2 / (eps n)``, left out). Exponential mechanism: ``beta = 2M (ln m! + 1)/(eps n)``
    with ``alpha = 1``.
    """
    M = m * (m - 1) // 2
    e = noise_level(method, m, n, eps)
    if method == "exponential":
        return 2.0 * e * (math.lgamma(m + 1) + 1.0)
    return (2.0 if method in EXACT_BOUND else 6.0) * M * e


def _exponent(f, ms) -> float:
    """Least-squares exponent of ``f(m)`` in ``m`` over the grid ``ms``."""
    x = np.log(np.asarray(ms, dtype=float))
    return float(np.polyfit(x, np.log([f(m) for m in ms]), 1)[0])


def table_exponent(method: str, ms) -> float:
    """Exponent in ``m`` of the table's simplified rate over the grid ``ms``."""
    return _exponent(TABLE[method][1], ms)


def explicit_exponent(method: str, ms, n: int, eps: float) -> float:
    """Exponent in ``m`` of the table's row with the notes' constants (:func:`additive_bound`)."""
    return _exponent(lambda m: additive_bound(method, m, n, eps), ms)


def _excess(profile: Rankings, w: np.ndarray, opt: float, eps: float, rng, methods) -> dict:
    """Excess cost of each method on one profile (and over its bound where one is explicit)."""
    m, n = profile.n_items, profile.n_voters
    out = {}
    for method in methods:
        if method in NON_PRIVATE:
            order = _non_private_order(method, w, rng)
        else:
            order = private_order(method, profile, eps, rng)
        excess = kemeny_cost(order, w) - opt
        out[f"excess.{method}"] = excess
        if method in EXACT_BOUND:
            out[f"excess_over_bound.{method}"] = excess / additive_bound(method, m, n, eps)
    return out


def _methods_for(m: int) -> tuple:
    """The methods that apply to ``m`` items, private first."""
    return tuple(x for x in EVERY if x != "exponential" or m <= EXPONENTIAL_MAX_M)


def _with_optimum(profile: Rankings):
    w = profile.pairwise_matrix()
    return profile, w, kemeny_cost(exact_kemeny(w), w)


# --------------------------------------------------------------------------------------------
# one replication of each experiment
# --------------------------------------------------------------------------------------------

def _first_voters(n: int, gamma: float) -> int:
    """Voters ranking ``0..m-1`` for margin ``gamma`` (rounded to whole voters)."""
    return int(round(n * (0.5 + gamma)))


@functools.lru_cache(maxsize=64)
def near_tie_profile(m: int, n: int, first: int):
    """``first`` voters rank ``0..m-1``, the other ``n - first`` the reverse; and its ``w``."""
    if not n / 2 < first < n:
        raise InputError("the near-tie family needs n/2 < first < n")
    items = np.arange(m)
    profile = Rankings.from_orders(np.stack([items, items[::-1]]), weights=[first, n - first])
    return profile, profile.pairwise_matrix()


def near_tie(cell, rng) -> dict:
    """One method on the near-tie family with margin ``c`` times its error scale."""
    method, m, n, eps = cell["method"], cell["m"], cell["n"], cell["eps"]
    profile, w = near_tie_profile(m, n, _first_voters(n, cell["c"] * noise_level(method, m, n, eps)))
    order = private_order(method, profile, eps, rng)
    return {"excess": kemeny_cost(order, w) - kemeny_cost(np.arange(m), w)}


def hay(cell, rng) -> dict:
    """Hay et al.'s quicksort and DPKwikSort on a near-tie profile with a fixed margin."""
    m, n = cell["m"], cell["n"]
    profile, w = near_tie_profile(m, n, _first_voters(n, HAY_MARGIN))
    opt = kemeny_cost(np.arange(m), w)
    return {f"excess.{x}": kemeny_cost(private_order(x, profile, cell["eps"], rng), w) - opt
            for x in ("dpk-laplace", "hay")}


def mallows(cell, rng) -> dict:
    """Every method on a fresh Mallows profile (identity centre, dispersion ``phi``)."""
    m = cell["m"]
    profile, w, opt = _with_optimum(sample_mallows(m, phi=cell["phi"], n=cell["n"], rng=rng))
    return _excess(profile, w, opt, cell["eps"], rng, _methods_for(m))


@functools.cache
def sushi_data():
    """Sushi rankings, their ``w`` and exact optimum (per process)."""
    return _with_optimum(load_sushi())


def sushi(cell, rng) -> dict:
    """Every applicable method on sushi, all 5,000 voters or ``n`` drawn without replacement."""
    profile, w, opt = sushi_data()
    if cell["n"] < profile.n_voters:
        orders = profile.expanded()[rng.choice(profile.n_voters, cell["n"], replace=False)]
        profile, w, opt = _with_optimum(Rankings.from_orders(orders))
    return _excess(profile, w, opt, cell["eps"], rng, _methods_for(profile.n_items))


@functools.cache
def netflix_data():
    """The four-movie Netflix elections with their ``w`` and exact optima (per process)."""
    return tuple(_with_optimum(load_netflix(k)) for k in NETFLIX_ELECTIONS)


def netflix(cell, rng) -> dict:
    """Every method on one Netflix election drawn uniformly."""
    data = netflix_data()
    profile, w, opt = data[int(rng.integers(len(data)))]
    return _excess(profile, w, opt, cell["eps"], rng, _methods_for(profile.n_items))


# --------------------------------------------------------------------------------------------
# the study
# --------------------------------------------------------------------------------------------

FULL: dict[str, Any] = dict(
    c_m=(0.125, 0.25, 0.5, 1.0, 2.0), c_rate=(0.125, 0.25, 0.5, 1.0),
    m_grid={"matrix-laplace": (4, 6, 8, 11, 16), "matrix-gauss": (4, 6, 8, 11, 16),
            "dpk-laplace": (16, 32, 64, 128), "dpk-gauss": (16, 32, 64, 128), "exponential": (4, 5, 6, 7, 8),
            "ldp-matrix": (4, 6, 8, 11, 14), "ldp-kwiksort": (6, 8, 11, 16, 23, 32)},
    near_tie_reps=dict(m=200, n=150, eps=150), local_reps=dict(m=150, n=200, eps=200),
    hay_n=(1000, 10_000, 100_000, 1_000_000), hay_reps=1000,
    mallows_eps=dict(phi=(0.5, 0.8, 0.95), eps=(0.1, 0.3, 1.0, 3.0, 10.0)), mallows_reps=100,
    mallows_n=(100, 1000, 10_000, 100_000), mallows_m=(4, 6, 8, 12, 16), mallows_sweep_reps=100,
    sushi_eps=(0.1, 0.3, 1.0, 3.0, 10.0), sushi_n=(250, 500, 1000, 2500, 5000), sushi_reps=100,
    netflix_eps=(0.1, 0.3, 1.0, 3.0, 10.0), netflix_reps=300,
)
QUICK: dict[str, Any] = dict(
    c_m=(0.5, 1.0, 2.0), c_rate=(0.25, 0.5),
    m_grid={"matrix-laplace": (4, 8, 12), "matrix-gauss": (4, 8, 12), "dpk-laplace": (12, 24, 48),
            "dpk-gauss": (12, 24, 48), "exponential": (4, 5, 6, 7), "ldp-matrix": (4, 8, 12),
            "ldp-kwiksort": (8, 16, 32)},
    near_tie_reps=dict(m=60, n=60, eps=60), local_reps=dict(m=30, n=100, eps=80),
    hay_n=(1000, 10_000, 100_000), hay_reps=300,
    mallows_eps=dict(phi=(0.8,), eps=(0.1, 1.0, 10.0)), mallows_reps=40,
    mallows_n=(1000, 10_000), mallows_m=(4, 8, 16), mallows_sweep_reps=20,
    sushi_eps=(0.1, 1.0, 10.0), sushi_n=(500, 5000), sushi_reps=40,
    netflix_eps=(0.1, 1.0, 10.0), netflix_reps=150,
)

# Fixed settings of the near-tie family: n and eps of the m grid; m, the n grid and its eps; n and
# the eps grid. Every margin c e is at most 0.45 and a whole number of voters within 10%. The eps
# grids stay where the error is within a few per cent of its 1/eps form: the Gaussian calibration
# and the local matrix's coth(eps/2) bend above eps = 1; LDPKwikSort's per-answer
# eps_0 = eps/(2 tau) is at most 0.9 there.
NEAR_TIE_SETTINGS = {
    "central": dict(m_grid_n=1_000_000, m_grid_eps=0.1, m=10, n_grid=(100_000, 1_000_000, 10_000_000),
                    n_grid_eps=1.0, eps_grid=(0.1, 0.3, 1.0), eps_grid_n=10_000_000),
    "exponential": dict(m_grid_n=1_000_000, m_grid_eps=0.1, m=6, n_grid=(100_000, 1_000_000, 10_000_000),
                        n_grid_eps=1.0, eps_grid=(0.1, 0.3, 1.0), eps_grid_n=10_000_000),
    "ldp-matrix": dict(m_grid_n=2_000, m_grid_eps=4.0, m=4, n_grid=(500, 4_000, 32_000), n_grid_eps=4.0,
                       eps_grid=(0.1, 0.3, 1.0), eps_grid_n=20_000),
    "ldp-kwiksort": dict(m_grid_n=10_000, m_grid_eps=16.0, m=4, n_grid=(500, 4_000, 32_000), n_grid_eps=16.0,
                         eps_grid=(1.0, 3.0, 9.0), eps_grid_n=8_000),
}
MALLOWS_M, MALLOWS_N, MALLOWS_PHI = 8, 1000, 0.8
HAY_M, HAY_MARGIN = 8, 0.1   # Hay et al.'s budget binds in about a third of the runs at this m
SUSHI_N_EPS = 1.0

DESCRIPTION = """Alabi, Ghazi, Kumar, Manurangsi (AAAI 2022; arXiv 2112.14652) have no experiments:
their results are the additive errors of Tables 2 and 3, worst-case upper bounds up to constants.
Measured here: the excess Kemeny cost over the exact optimum (mean Kendall tau distance to the
voters minus its minimum, in pairs per voter) of every method, with the notes' corrected
constants. The worst case is approached on a near-tie family (a share 1/2 + gamma of the voters
rank the items in one order, the rest in the reverse, margin gamma = c e with e the method's
per-comparison error), where the excess scales exactly with the noise the implementation adds:
its exponents in n and eps are claims, its exponent in m (the largest curve over c) an
observation, since on that family no order's excess exceeds 2 gamma M and an upper bound of the
tables' shape cannot fail. Mallows profiles (fresh in every replication) and real profiles
(sushi, Netflix) show the typical case and test the explicit (1, beta) bounds. Each claim is a
one-sided test declared before the run, with a tolerance in standard errors (SE of a cell mean =
sd / sqrt(replications); pooled cells weigh equally; the largest curve keeps its cell's SE).
Curves show means with 95% confidence bands. These are research measurements on the raw data,
not private releases."""


def _settings(method: str) -> dict:
    return NEAR_TIE_SETTINGS.get(method, NEAR_TIE_SETTINGS["central"])


def _near_tie_cells(method, g) -> dict:
    """Cells of the three near-tie grids (``m``, ``n``, ``eps``) of one method."""
    st = _settings(method)
    cells = {
        "m": grid(method=(method,), m=g["m_grid"][method], n=(st["m_grid_n"],), eps=(st["m_grid_eps"],),
                  c=g["c_m"]),
        "n": grid(method=(method,), m=(st["m"],), n=st["n_grid"], eps=(st["n_grid_eps"],), c=g["c_rate"]),
        "eps": grid(method=(method,), m=(st["m"],), n=(st["eps_grid_n"],), eps=st["eps_grid"], c=g["c_rate"]),
    }
    for axis_cells in cells.values():
        for cell in axis_cells:
            gamma = cell["c"] * noise_level(method, cell["m"], cell["n"], cell["eps"])
            actual = _first_voters(cell["n"], gamma) / cell["n"] - 0.5
            if not (gamma <= 0.45 and abs(actual / gamma - 1.0) <= MARGIN_ROUNDING):
                raise InputError(f"near-tie margin {gamma:.3g} out of range for {cell}")
    return cells


def _experiment(method: str, axis: str) -> str:
    return ("local_near_tie_" if method in LOCAL else "near_tie_") + axis


def build(quick: bool = False, reps: int | None = None) -> Study:
    """The Alabi et al. study: ``quick`` is a smaller grid that still tests every claim."""
    g = QUICK if quick else FULL

    def n(name):
        return int(reps) if reps else g[name]

    near: dict[tuple[str, str], list] = {}
    for method in NEAR_TIE:
        for axis, cells in _near_tie_cells(method, g).items():
            near.setdefault((_experiment(method, axis), axis), []).extend(cells)
    experiments = tuple(
        Experiment(name, f"Near-tie family{', local model' if name.startswith('local') else ''}: excess against "
                         f"{axis}", tuple(cells),
                   int(reps) if reps else g["local_reps" if name.startswith("local") else "near_tie_reps"][axis],
                   near_tie)
        for (name, axis), cells in near.items())
    me = g["mallows_eps"]
    experiments += (
        Experiment("hay", f"Hay et al. against DPKwikSort: a fixed margin of {HAY_MARGIN:g}, n growing",
                   grid(m=(HAY_M,), n=g["hay_n"], eps=(1.0,)), n("hay_reps"), hay),
        Experiment("mallows_eps", "Mallows profiles: excess against eps",
                   grid(phi=me["phi"], m=(MALLOWS_M,), n=(MALLOWS_N,), eps=me["eps"]), n("mallows_reps"), mallows),
        Experiment("mallows_n", "Mallows profiles: excess against n",
                   grid(phi=(MALLOWS_PHI,), m=(MALLOWS_M,), n=g["mallows_n"], eps=(1.0,)), n("mallows_sweep_reps"),
                   mallows),
        Experiment("mallows_m", "Mallows profiles: excess against m",
                   grid(phi=(MALLOWS_PHI,), m=g["mallows_m"], n=(MALLOWS_N,), eps=(1.0,)), n("mallows_sweep_reps"),
                   mallows),
        Experiment("sushi_eps", "Sushi (5,000 x 10): excess against eps", grid(n=(5000,), eps=g["sushi_eps"]),
                   n("sushi_reps"), sushi, requires=sushi_data),
        Experiment("sushi_n", "Sushi: excess against the number of voters (drawn without replacement)",
                   grid(n=g["sushi_n"], eps=(SUSHI_N_EPS,)), n("sushi_reps"), sushi, requires=sushi_data),
        Experiment("netflix_eps", "Netflix four-movie elections: excess against eps", grid(eps=g["netflix_eps"]),
                   n("netflix_reps"), netflix, requires=netflix_data),
    )
    figures: list[Figure] = []
    claims: list[Claim] = []
    for declare in (_near_tie_claims, _hay_claims, _mallows_claims, _real_claims):
        declare(g, figures, claims)
    title = "Reproduction of Alabi, Ghazi, Kumar, Manurangsi: private Kemeny aggregation"
    return Study("alabi", title + (" (quick)" if quick else ""), experiments, tuple(claims), tuple(figures),
                 DESCRIPTION)


def _near_tie_figures(g, figures):
    for exp in ("near_tie_m", "near_tie_n", "near_tie_eps", "local_near_tie_m", "local_near_tie_n",
                "local_near_tie_eps"):
        axis = exp.rsplit("_", 1)[1]
        methods = [x for x in NEAR_TIE if _experiment(x, axis) == exp]
        cs = g["c_m"] if axis == "m" else g["c_rate"]
        panels = tuple(Panel(METHODS[x], tuple(Curve(f"c={c:g}", "excess", {"method": x, "c": c}) for c in cs),
                             x=axis, ylabel="excess", logy=True) for x in methods)
        model = "local" if exp.startswith("local") else "central"
        figures.append(Figure(exp, f"Near-tie family ({model} model): excess against {axis}", exp, panels,
                              "Margin gamma = c e, e the method's per-comparison error. The exponents in n and "
                              "eps are fitted over all curves (one intercept each), the exponent in m to the "
                              "largest curve at each m (the worst case over the family)."))


def _near_tie_claims(g, figures, claims):
    _near_tie_figures(g, figures)
    for x in NEAR_TIE:
        local = x in LOCAL
        table = 3 if local else 2
        st = _settings(x)
        for axis, rate in (("n", -0.5 if local else -1.0), ("eps", -1.0)):
            exp = _experiment(x, axis)
            values = st[f"{axis}_grid"]
            claims.append(Within(id=f"W-{axis}-{x}", figure=exp,
                                 text=f"{METHODS[x]}: the excess falls like {axis}^{rate:g} (Table {table}) at every "
                                      f"margin c, {axis} = {min(values):,g}..{max(values):,g}",
                                 stat=Slope(Sel(exp, "excess", method=x), x=axis),
                                 lo=rate - RATE_SLACK, hi=rate + RATE_SLACK))
        ms = g["m_grid"][x]
        exp_m = _experiment(x, "m")
        a, b = table_exponent(x, ms), explicit_exponent(x, ms, st["m_grid_n"], st["m_grid_eps"])
        claims.append(Within(id=f"W-m-{x}", figure=exp_m, required=False,
                             text=f"{METHODS[x]}: the worst-case excess grows like Table {table}'s {TABLE[x][0]} "
                                  f"(exponent {a:.2f} over m = {min(ms)}..{max(ms)}; {b:.2f} with the notes' "
                                  "constants)",
                             stat=Slope(Sel(exp_m, "excess", worst="c", method=x), x="m"),
                             lo=a - EXPONENT_SLACK, hi=a + EXPONENT_SLACK))
    m = max(set(g["m_grid"]["dpk-laplace"]) & set(g["m_grid"]["matrix-laplace"]))
    claims.append(Less(id="W-dpk-below-matrix", figure="near_tie_m", required=False,
                       text=f"Table 2 orders DPKwikSort (m^3 log m) below the noisy matrix (m^4): worst-case "
                            f"excess with Laplace noise at m = {m}",
                       a=Mean(Sel("near_tie_m", "excess", worst="c", method="dpk-laplace", m=m)),
                       b=Mean(Sel("near_tie_m", "excess", worst="c", method="matrix-laplace", m=m))))


def _method_curves(methods, where=None):
    return tuple(Curve(x, f"excess.{x}", dict(where or {})) for x in methods)


APPROACHING = tuple(x for x in METHODS if x != "hay")


def _approach_claims(prefix, exp, methods, axis, values, figure, claims, required=True):
    lo, hi = min(values), max(values)
    for x in methods:
        claims.append(Less(id=f"{prefix}-{axis}-{x}", figure=figure, required=required,
                           text=f"{METHODS[x]}: the excess at {axis} = {hi:g} is below the excess at {axis} = {lo:g}",
                           a=Mean(Sel(exp, f"excess.{x}", **{axis: hi})),
                           b=Mean(Sel(exp, f"excess.{x}", **{axis: lo}))))


def _bound_claims(prefix, exp, methods, figure, claims):
    for x in methods:
        claims.append(Less(id=f"{prefix}-bound-{x}", figure=figure,
                           text=f"{METHODS[x]}: the excess is below the explicit (1, beta) bound "
                                "(ratio pooled over the cells)",
                           a=Mean(Sel(exp, f"excess_over_bound.{x}")), b=1.0))


def _hay_claims(g, figures, claims):
    ns = g["hay_n"]
    figures.append(Figure("hay", "Hay et al.'s budgeted quicksort against DPKwikSort", "hay",
                          (Panel(f"m={HAY_M}, margin {HAY_MARGIN:g}, eps=1",
                                 _method_curves(("dpk-laplace", "hay")), x="n", ylabel="excess", logy=True),),
                          "Paper §1.2: Hay et al.'s quicksort leaves the comparisons past its budget (the "
                          "expected QuickSort count) in random order, so its excess does not vanish as n grows; "
                          "DPKwikSort caps its comparisons with a private fallback instead and reaches the "
                          "optimum (zero is not drawn on the log scale)."))
    claims.append(Less(id="H-stays-away", figure="hay",
                       text=f"at n = {max(ns)} Hay et al.'s quicksort stays further from the optimum than "
                            "DPKwikSort (paired)",
                       a=Mean(Sel("hay", "excess.dpk-laplace", n=max(ns))),
                       b=Mean(Sel("hay", "excess.hay", n=max(ns)))))
    claims.append(Within(id="H-levels-off", figure="hay",
                         text=f"Hay et al.'s excess stops falling: log-log slope in n over n = {ns[-2]}..{ns[-1]} "
                              "above -1/2 (an additive error at the tables' rate falls like 1/n)",
                         stat=Slope(Sel("hay", "excess.hay", n=(ns[-2], ns[-1])), x="n"), lo=-0.5))
    claims.append(Never(id="H-dpk-reaches-optimum", figure="hay",
                        text=f"at n = {max(ns)} DPKwikSort returns the optimum in every replication",
                        sel=Sel("hay", "excess.dpk-laplace", n=max(ns)), above=0.0))


def _mallows_claims(g, figures, claims):
    me = g["mallows_eps"]
    every = _methods_for(MALLOWS_M)
    figures.append(Figure("mallows_eps", "Mallows profiles: excess against eps", "mallows_eps",
                          tuple(Panel(f"m={MALLOWS_M}, n={MALLOWS_N}, phi={p:g}", _method_curves(every, {"phi": p}),
                                      x="eps", ylabel="excess", logy=True) for p in me["phi"]),
                          "A fresh profile in every replication; the excess over its exact optimum (zero is "
                          "not drawn on the log scale)."))
    figures.append(Figure("mallows_n", "Mallows profiles: excess against n", "mallows_n",
                          (Panel(f"m={MALLOWS_M}, phi={MALLOWS_PHI:g}, eps=1", _method_curves(every), x="n",
                                 ylabel="excess", logy=True),), "A fresh profile in every replication."))
    figures.append(Figure("mallows_m", "Mallows profiles: excess against m", "mallows_m",
                          (Panel(f"n={MALLOWS_N}, phi={MALLOWS_PHI:g}, eps=1", _method_curves(EVERY), x="m",
                                 ylabel="excess", logy=True),),
                          f"The exponential mechanism enumerates all m! orders: m <= {EXPONENTIAL_MAX_M}."))
    _approach_claims("M", "mallows_eps", APPROACHING, "eps", me["eps"], "mallows_eps", claims)
    _bound_claims("M", "mallows_eps", EXACT_BOUND, "mallows_eps", claims)
    _bound_claims("M-m", "mallows_m", [x for x in EXACT_BOUND if x != "exponential"], "mallows_m", claims)


def _real_claims(g, figures, claims):
    sushi_methods = _methods_for(10)
    figures.append(Figure("sushi", "Sushi: excess against eps", "sushi_eps",
                          (Panel("all 5,000 voters", _method_curves(sushi_methods), x="eps", ylabel="excess",
                                 logy=True),),
                          "The exponential mechanism needs m <= 8 (sushi has 10 items)."))
    figures.append(Figure("sushi_n", "Sushi: excess against the number of voters", "sushi_n",
                          (Panel(f"eps={SUSHI_N_EPS:g}", _method_curves(sushi_methods), x="n", ylabel="excess",
                                 logy=True),),
                          "Voters drawn without replacement in every replication; excess over the subsample's "
                          "optimum. LDPKwikSort's answers are still noise at these n."))
    figures.append(Figure("netflix", "Netflix four-movie elections: excess against eps", "netflix_eps",
                          (Panel("one election drawn per replication", _method_curves(_methods_for(4)), x="eps",
                                 ylabel="excess", logy=True),),
                          "PrefLib 00004-101..200: 4 movies, 350 to 14,081 voters per election."))
    sushi_approaching = [x for x in APPROACHING if x != "exponential"]
    _approach_claims("S", "sushi_eps", sushi_approaching, "eps", g["sushi_eps"], "sushi", claims)
    _bound_claims("S", "sushi_eps", [x for x in EXACT_BOUND if x != "exponential"], "sushi", claims)
    _approach_claims("S", "sushi_n", [x for x in sushi_approaching if x != "ldp-kwiksort"], "n", g["sushi_n"],
                     "sushi_n", claims)
    _approach_claims("S", "sushi_n", ["ldp-kwiksort"], "n", g["sushi_n"], "sushi_n", claims, required=False)
    _approach_claims("N", "netflix_eps", APPROACHING, "eps", g["netflix_eps"], "netflix", claims)
    _bound_claims("N", "netflix_eps", EXACT_BOUND, "netflix", claims)
