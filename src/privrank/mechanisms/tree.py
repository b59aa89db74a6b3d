"""Modified binary-tree mechanism: private approximate medians and the footrule cost matrix.

Hillebrand, Manurangsi, Suppakitpaisarn, Vajanopath, "Improved differentially private algorithms
for rank aggregation", Algorithm 1 (ApxMed) and Corollary 3.2 (the m-parallel version).

For values ``x_1, ..., x_n`` in ``{0, ..., m-1}`` the target is the vector of mean absolute
deviations ``gamma_j = (1/n) sum_i |x_i - j|`` for every ``j`` (the median minimises it). The
mechanism lays a complete binary tree over the (padded) domain. Every tree node ``t`` at level
``l`` (leaves at level 0) covering ``[r(t), r(t) + 2^l)`` collects two linear statistics of the
users falling in it: a *count* ``u_t = 2^l * #{x_i in t} / n`` and an *offset sum*
``v_t = sum_{x_i in t} (x_i - r(t)) / n``. Before noise both are multiplied by the level weight
``kappa^(d - l)`` (``d`` = tree depth), so the noisy nodes near the leaves, which enter every
read-off with large coefficients, are relatively less noisy; dividing the weight out again
damps the noise geometrically (Lemma D.4). The read-off for ``j`` sums, over the siblings of
``j``'s ancestors (they partition the domain minus ``{j}``), the signed offset sum plus the
count times the distance from ``j`` to the sibling's left end -- exact without noise.

Decisions where the paper is silent or loose (documented here, tested in
``tests/mechanisms/test_tree.py``):

* One release of the *concatenated* weighted vector (counts and offsets of every tree; for the
  m-parallel version of all ``m`` trees), calibrated to the sensitivity of exactly that vector.
* The root is never read, leaf offsets are identically zero and nodes lying entirely in the
  padding never receive a user; none of them is released.
* Sensitivities are exact, not the paper's ``2 max ||a||`` bounds. For one value per user
  (Algorithm 1) it is ``max_{x, x'} ||a(x) - a(x')||_p / n``. For rankings (m-parallel), a
  user's record is the position of every item; replacing ranking ``pi`` by ``pi'`` changes the
  released sum by ``sum_x a(x) - a(sigma(x))`` over the permutation ``sigma = pi' o pi^-1``, so
  ``(n Delta_p)^p`` is a max-weight assignment over ``W_p[x, y] = ||a(x) - a(y)||_p^p``, solved
  exactly with :func:`scipy.optimize.linear_sum_assignment`.
* Neighbouring data sets have the same (public) ``n`` and differ in one record (replacement).
* ``kappa`` (the paper's weight growth factor, any constant in (1, 2)) defaults to 1.25 for
  Laplace and sqrt(2) for Gaussian and local noise: these minimise sensitivity times the
  worst-case read-off amplification in our measurements (the optimum is flat around them).

Noise back ends (vector aggregation, paper App. D):

* ``"laplace"`` -- epsilon-DP, central: i.i.d. ``Laplace(Delta_1 / epsilon)`` per coordinate.
* ``"gaussian"`` -- (epsilon, delta)-DP, central: i.i.d. discrete Gaussian noise on a
  power-of-two grid (:func:`~privrank.mechanisms.noise.gaussian_release`), ``sigma`` calibrated
  to ``Delta_2`` (plus the grid's rounding) by the tight zCDP conversion
  (:func:`~privrank.mechanisms.noise.discrete_gaussian_mu`; about 7% more noise than the
  continuous analytic Gaussian, the price of exact sampling).
* ``"local"`` -- epsilon-local DP, one round: every user sends the Duchi, Jordan, Wainwright
  l2-ball randomisation of their own concatenated weighted vector (every ranking's vector has
  the same l2 norm), drawn from its own counter-based randomness and in fixed point, so that
  the reports add up exactly in any grouping (:mod:`privrank.mechanisms.local_vectors`); the
  analyst averages.

The central releases are exact multiples of a power-of-two grid, with exact discrete noise
(see :mod:`privrank.mechanisms.noise`): no floating-point side channel.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..data.rankings import check_multiplicities, check_permutations, position_counts
from .. import limits
from ..errors import InputError, check_delta, check_epsilon, check_positive, check_whole, index_array
from ..guarantees import UNIT_RANKING, Guarantee
from ..html_cards import Shown
from ..release import charge, private_release
from .local_vectors import MAX_REPORTS, duchi_l2_records, duchi_l2_scale, report_unit
from .noise import discrete_gaussian_mu, gaussian_release, laplace_release
from .randomized_response import record_key

if TYPE_CHECKING:
    from ..guarantees import Accountant
    from ..ledger import Ledger

NOISE_TYPES = ("laplace", "gaussian", "local")
#: Default weight growth factor per noise type (see module docstring).
DEFAULT_KAPPA = {"laplace": 1.25, "gaussian": math.sqrt(2.0), "local": math.sqrt(2.0)}
UNIT_RECORD = "one record (one value)"


# --------------------------------------------------------------------------------------------
# tree layout: design (value -> released weighted vector) and read-off (aggregates -> gamma)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class TreeLayout:
    """The released coordinates of one modified binary tree over ``{0, ..., m-1}``.

    Attributes
    ----------
    m, kappa, depth
        Domain size, weight growth factor and depth ``d = ceil(log2 m)``.
    design
        ``(T, m)``: column ``x`` is the weighted vector ``a(x)`` a user with value ``x``
        contributes (counts of non-root nodes, then offsets of internal non-root nodes;
        padding-only nodes omitted).
    readoff
        ``(m, T)``: ``gamma = readoff @ mean_i a(x_i)``; it includes the un-weighting, so
        ``readoff @ design == |x - j|`` exactly (up to round-off).
    level
        ``(T,)`` tree level of every released coordinate.
    """

    m: int
    kappa: float
    depth: int
    design: np.ndarray
    readoff: np.ndarray
    level: np.ndarray

    @property
    def size(self) -> int:
        """Number of released coordinates per tree."""
        return self.design.shape[0]

    def aggregate(self, counts: np.ndarray, n: float) -> np.ndarray:
        """Exact weighted aggregates ``(1/n) sum_i a(x_i)`` from histograms ``counts[..., x]``."""
        return (np.asarray(counts, dtype=float) @ self.design.T) / float(n)

    def read_off(self, aggregates: np.ndarray) -> np.ndarray:
        """Mean absolute deviations ``gamma[..., j]`` from (noisy) weighted aggregates."""
        return np.asarray(aggregates, dtype=float) @ self.readoff.T

    def distance_power(self, p: int) -> np.ndarray:
        """``W_p[x, y] = ||a(x) - a(y)||_p^p`` for all value pairs (exact)."""
        out = np.zeros((self.m, self.m))
        if not self.size:
            return out
        chunk = max(1, int(4_000_000 // (self.size * self.m)))
        for s in range(0, self.m, chunk):
            diff = self.design[:, s:s + chunk, None] - self.design[:, None, :]
            out[s:s + chunk] = np.sum(np.abs(diff) ** p, axis=0)
        return out


def check_kappa(kappa) -> float:
    """The weight growth factor ``kappa`` of a tree: a number in ``[1, 2)`` (module docstring)."""
    kappa = check_positive(kappa, name="kappa")
    if not (1.0 <= kappa < 2.0):
        raise InputError(f"kappa must lie in [1, 2) (got {kappa!r})")
    return kappa


@lru_cache(maxsize=64)
def tree_layout(m: int, kappa: float) -> TreeLayout:
    """Build (and cache) the released coordinates and the read-off of one tree.

    Parameters
    ----------
    m
        Domain size (values ``0 .. m-1``), ``m >= 1``.
    kappa
        Weight growth factor; the paper requires ``1 < kappa < 2`` for its rates, ``1`` is
        allowed (plain binary tree).
    """
    m = int(m)
    if m < 1:
        raise InputError("the tree needs a domain of at least one value")
    kappa = check_kappa(kappa)
    d = int(math.ceil(math.log2(m))) if m > 1 else 0
    x = np.arange(m)
    rows_design: list[np.ndarray] = []
    rows_level: list[int] = []
    keys: dict[tuple[str, int, int], int] = {}
    # counts of all non-root nodes, levels 0 .. d-1, nodes with left end < m
    for kind in ("u", "v"):
        for lev in range(d):
            if kind == "v" and lev == 0:
                continue  # leaf offsets are identically zero
            w = kappa ** (d - lev)
            width = 1 << lev
            for p in range(-(-m // width)):
                start = p * width
                inside = (x >> lev) == p
                row = np.where(inside, w * (width if kind == "u" else (x - start)), 0.0)
                keys[(kind, lev, p)] = len(rows_design)
                rows_design.append(row.astype(float))
                rows_level.append(lev)
    T = len(rows_design)
    design = np.array(rows_design, dtype=float).reshape(T, m)
    readoff = np.zeros((m, T))
    for j in range(m):
        for lev in range(d):
            p = j >> lev
            sib = p ^ 1
            width = 1 << lev
            start = sib * width
            if start >= m:
                continue  # padding-only sibling: no user there
            s = 1.0 if p % 2 == 0 else -1.0
            w = kappa ** (d - lev)
            readoff[j, keys[("u", lev, sib)]] += s * (start - j) / width / w
            if lev > 0:
                readoff[j, keys[("v", lev, sib)]] += s / w
    for arr in (design, readoff):
        arr.setflags(write=False)
    level = np.array(rows_level, dtype=int)
    level.setflags(write=False)
    return TreeLayout(m=m, kappa=kappa, depth=d, design=design, readoff=readoff, level=level)


def single_sensitivity(layout: TreeLayout, p: int) -> float:
    """``max_{x, x'} ||a(x) - a(x')||_p``: one record's replacement changes the sum by this."""
    return float(np.max(layout.distance_power(p)) ** (1.0 / p)) if layout.size else 0.0


@lru_cache(maxsize=64)
def _parallel_sensitivity_cached(m: int, kappa: float, p: int) -> float:
    from scipy.optimize import linear_sum_assignment  # imported where used (it is slow to import)

    layout = tree_layout(m, kappa)
    if not layout.size:
        return 0.0
    W = layout.distance_power(p)
    rows, cols = linear_sum_assignment(W, maximize=True)
    return float(W[rows, cols].sum() ** (1.0 / p))


def parallel_sensitivity(layout: TreeLayout, p: int) -> float:
    """Exact ``l_p`` change of the m-parallel sum when one ranking is replaced (unnormalised).

    ``max_sigma (sum_x ||a(x) - a(sigma(x))||_p^p)^(1/p)`` over permutations ``sigma``, by
    max-weight assignment (see module docstring). Divide by ``n`` for the mean.
    """
    if p not in (1, 2):
        raise InputError("p must be 1 or 2")
    return _parallel_sensitivity_cached(layout.m, layout.kappa, p)


# --------------------------------------------------------------------------------------------
# releases
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, repr=False)
class TreeRelease(Shown):
    """A private release of mean absolute deviations from the modified binary tree.

    Attributes
    ----------
    costs
        ``(k, m)``: ``costs[q, j]`` estimates ``(1/n) sum_i |x_i(q) - j|`` (for rankings: the
        footrule cost of putting item ``q`` at position ``j``). Post-processing of
        ``aggregates``.
    aggregates
        ``(k, T)`` noisy weighted node aggregates -- the released vector itself.
    noise
        ``"laplace"``, ``"gaussian"`` or ``"local"``.
    noise_scale
        Laplace scale ``b`` or Gaussian standard deviation per released coordinate (central);
        for ``"local"`` the per-coordinate standard deviation of the averaged reports.
    cost_sd
        ``(m,)`` standard deviation of the noise in ``costs[:, j]`` (data-independent).
    kappa, sensitivity
        Weight growth factor; ``l_1`` (Laplace) or ``l_2`` (Gaussian) sensitivity of the
        released mean; for local noise, the l2 radius of one record's vector.
    guarantee
        What the release protects.

    Examples
    --------
    The private footrule cost matrix of 10,000 rankings (Hillebrand et al. Corollary 3.2):

    >>> import numpy as np
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   weights=[3000, 2000, 2500, 2500])
    >>> tree = pr.footrule_cost_release(profile.positions, epsilon=1.0, weights=profile.weights, rng=0)
    >>> tree.noise, tree.costs.shape, tree.aggregates.shape
    ('laplace', (4, 4), (4, 8))
    >>> np.round(tree.costs, 2)
    array([[0.26, 0.76, 1.76, 2.76],
           [0.95, 0.45, 1.05, 2.05],
           [2.06, 1.05, 0.45, 0.96],
           [2.74, 1.75, 0.75, 0.25]])
    >>> np.round(pr.footrule_cost_matrix(profile), 2)
    array([[0.25, 0.75, 1.75, 2.75],
           [0.95, 0.45, 1.05, 2.05],
           [2.05, 1.05, 0.45, 0.95],
           [2.75, 1.75, 0.75, 0.25]])
    """

    costs: np.ndarray
    aggregates: np.ndarray
    noise: str
    noise_scale: float
    cost_sd: np.ndarray
    kappa: float
    sensitivity: float
    n: int
    guarantee: Guarantee

    def __repr__(self) -> str:  # short: the arrays are for code, not for a notebook cell
        k, m = self.costs.shape
        return f"TreeRelease({k} x {m} footrule costs, {self.noise} noise; {self.guarantee.plain()})"

    def _card(self) -> dict:  # the parameters: the arrays are for code
        k, m = self.costs.shape
        return {"summary": f"{k} x {m} footrule costs", "guarantee": self.guarantee,
                "facts": [("noise", self.noise), ("noise scale", f"{self.noise_scale:.4g}"),
                          ("kappa", f"{self.kappa:g}"), ("sensitivity", f"{self.sensitivity:g}"),
                          ("rankings (public n)", f"{self.n:,}")]}


def _check_noise(noise: str, kappa) -> tuple[str, float]:
    if not isinstance(noise, str) or noise not in NOISE_TYPES:
        raise InputError(f"noise must be one of {', '.join(NOISE_TYPES)} (got {noise!r})")
    return noise, DEFAULT_KAPPA[noise] if kappa is None else check_kappa(kappa)


def _check_values(values, m: int, weights) -> tuple[np.ndarray, np.ndarray]:
    x = index_array(values, name="values", what="integers in 0 .. m-1").reshape(-1)
    if x.size and (x.min() < 0 or x.max() >= m):
        raise InputError("values must lie in 0 .. m-1")
    w = check_multiplicities(weights, x.shape[0])
    if not int(np.sum(w)):
        raise InputError("values must hold at least one record (the release is a mean over them)")
    return x, w


FOOTRULE_COSTS = "binary-tree footrule costs"


def _central_release(counts, n, layout, sens1, sens2, noise, epsilon, delta, rng, unit, mech, coordinates=None):
    """Noise the exact weighted aggregates of every tree in one release (``coordinates``: of the
    release, for the grid's rounding; default all of them)."""
    exact = layout.aggregate(counts, n)
    if noise == "laplace":
        if delta:
            raise InputError("Laplace noise gives pure DP: use delta = 0 (or noise='gaussian')")
        g = Guarantee(epsilon=epsilon, model="central", unit=unit, mechanism=mech + " (Laplace)")
        charge(g)
        # exact discrete Laplace on a power-of-two grid, rounding charged to the sensitivity
        noisy, scale = laplace_release(exact, sens1 / n, epsilon, rng, coordinates=coordinates) if sens1 > 0 \
            else (exact, 0.0)
        var = 2.0 * scale ** 2
    else:
        if not delta:
            raise InputError("Gaussian noise needs delta > 0 (or noise='laplace' for delta = 0)")
        g = Guarantee(epsilon=epsilon, delta=delta, model="central", unit=unit,
                      mechanism=mech + " (discrete Gaussian)")
        charge(g)
        # exact discrete Gaussian on a power-of-two grid, rounding charged to the sensitivity
        noisy, scale = gaussian_release(exact, sens2 / n, discrete_gaussian_mu(epsilon, delta), rng,
                                        coordinates=coordinates) if sens2 > 0 else (exact, 0.0)
        var = scale ** 2
    cost_sd = np.sqrt(var * np.sum(layout.readoff ** 2, axis=1))
    return noisy, scale, cost_sd, g


@private_release
def approximate_median(values: ArrayLike, m: int, *, epsilon: float, delta: float = 0.0, noise: str = "laplace",
                       kappa: float | None = None, weights: ArrayLike | None = None,
                       rng: int | np.random.Generator | None = None,
                       ledger: Ledger | str | os.PathLike[str] | None = None, accountant: Accountant | None = None,
                       new_data: str | None = None) -> TreeRelease:
    """Private mean absolute deviations ``gamma_j = (1/n) sum_i |x_i - j|`` for all ``j``.

    Hillebrand et al. Algorithm 1 (Theorem 3.1): ``E max_j |gamma~_j - gamma_j|`` is
    ``O(m log m / (eps n))`` with Laplace noise and ``O(m sqrt(log m log 1/delta)/(eps n))`` with
    Gaussian noise. ``argmin_j`` of the output is a private approximate median.

    Parameters
    ----------
    values
        ``(n,)`` integers in ``0 .. m-1``, one per record.
    m
        Public domain size.
    epsilon, delta
        Privacy budget; ``delta`` must be 0 for Laplace and > 0 for Gaussian noise.
    noise
        ``"laplace"``, ``"gaussian"`` or ``"local"`` (epsilon-local DP, one report per record).
    kappa
        Weight growth factor in [1, 2); default per noise type (module docstring).
    weights
        Optional non-negative integer multiplicities (a record of weight 3 is 3 records).

    Returns
    -------
    TreeRelease
        ``costs`` has shape ``(1, m)``. Guarantee: epsilon-DP (Laplace), (epsilon, delta)-DP
        (Gaussian) or epsilon-local DP, protecting one record, with ``n`` public.

    Examples
    --------
    10,000 private values in 0..4; the argmin of the private deviations is an approximate median:

    >>> import numpy as np
    >>> import privrank as pr
    >>> values = np.random.default_rng(0).binomial(4, 0.5, size=10_000)
    >>> tree = pr.approximate_median(values, 5, epsilon=1.0, rng=0)
    >>> np.round(tree.costs, 3), int(tree.costs.argmin())
    (array([[1.996, 1.126, 0.748, 1.121, 2.007]]), 2)
    >>> np.round(np.abs(values[:, None] - np.arange(5)).mean(axis=0), 3)
    array([1.999, 1.126, 0.751, 1.125, 2.001])
    >>> print(tree.guarantee.describe())
    1-DP, central model, protecting one record (one value) [binary-tree approximate median (Laplace)]. SEEDED
    RUN: reproducible research output, not a private release (whoever knows the seed can remove the noise);
    leave the seed out for a real release.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    noise, kap = _check_noise(noise, kappa)
    m = check_whole(m, name="m (the domain size)")
    limits.check("MEMORY_MB", 32 * m * m / 2 ** 20, "the estimated memory (MiB) of the tree over a domain of m values",
                 "the tree holds about 4 m^2 numbers: coarsen the domain")
    x, w = _check_values(values, m, weights)
    layout = tree_layout(m, kap)
    n = int(w.sum())
    mech = "binary-tree approximate median"
    if noise == "local":
        rows = np.repeat(x, w)[:, None]
        radius = float(np.max(np.linalg.norm(layout.design, axis=0)))
        charge(_local_guarantee(eps, UNIT_RECORD, mech))
        return _local_release(_local_reports(rows, layout, eps, record_key(rng), 0, radius), n, 1, layout,
                              eps, UNIT_RECORD, mech, radius=radius)
    counts = np.bincount(x, weights=w, minlength=m)[None, :].astype(float)
    s1, s2 = single_sensitivity(layout, 1), single_sensitivity(layout, 2)
    noisy, scale, cost_sd, g = _central_release(counts, n, layout, s1, s2, noise, eps, dlt,
                                                rng, UNIT_RECORD, mech)
    return TreeRelease(costs=layout.read_off(noisy), aggregates=noisy, noise=noise,
                       noise_scale=scale, cost_sd=cost_sd, kappa=kap,
                       sensitivity=(s1 if noise == "laplace" else s2) / n, n=n, guarantee=g)


@private_release
def footrule_cost_release(positions: ArrayLike, *, epsilon: float, delta: float = 0.0, noise: str = "laplace",
                          kappa: float | None = None, weights: ArrayLike | None = None,
                          rng: int | np.random.Generator | None = None,
                          ledger: Ledger | str | os.PathLike[str] | None = None, accountant: Accountant | None = None,
                          new_data: str | None = None) -> TreeRelease:
    """Private footrule cost matrix of a ranking profile (m-parallel ApxMed, Corollary 3.2).

    ``costs[q, j]`` estimates ``(1/n) sum_i |pi_i(q) - j|``, the mean footrule displacement of
    item ``q`` if it were put at position ``j`` (0-based). All ``m`` trees are released as one
    concatenated vector whose sensitivity is computed exactly (module docstring). Central
    noise is added to the position counts (:func:`footrule_counts_release`); local noise is
    each ranking's own report (:func:`local_footrule_reports`, ranking ``i`` is record ``i``
    under the key :func:`~privrank.mechanisms.randomized_response.record_key` draws from
    ``rng``), averaged by :func:`local_footrule_release`.

    Parameters
    ----------
    positions
        ``(n, m)`` integer array, ``positions[i, q]`` = 0-based position of item ``q`` in
        ranking ``i`` (each row a permutation: complete rankings, no ties).
    epsilon, delta, noise, kappa, weights, rng
        As in :func:`approximate_median`.

    Returns
    -------
    TreeRelease
        ``costs`` is ``(m, m)``, rows items, columns positions. Guarantee: epsilon-DP (Laplace,
        error ``O(m^2 log m / (eps n))`` per entry), (epsilon, delta)-DP (Gaussian,
        ``O(m^1.5 sqrt(log m log 1/delta)/(eps n))``) or epsilon-local DP (one report per
        ranking, ``O(m^1.5 sqrt(log m)/(eps sqrt n))``), protecting one ranking.

    Examples
    --------
    Hillebrand et al. Corollary 3.2 on 10,000 rankings (central epsilon-DP for one ranking); the exact
    matrix is :func:`~privrank.aggregation.footrule.footrule_cost_matrix`:

    >>> import numpy as np
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [0, 1, 3, 2]],
    ...                                   weights=[3000, 2000, 2500, 2500])
    >>> tree = pr.footrule_cost_release(profile.positions, epsilon=1.0, weights=profile.weights, rng=0)
    >>> np.round(tree.costs, 2)
    array([[0.26, 0.76, 1.76, 2.76],
           [0.95, 0.45, 1.05, 2.05],
           [2.06, 1.05, 0.45, 0.96],
           [2.74, 1.75, 0.75, 0.25]])
    >>> print(tree.guarantee.describe())
    1-DP, central model, protecting one ranking [binary-tree footrule costs (Laplace)]. SEEDED RUN:
    reproducible research output, not a private release (whoever knows the seed can remove the noise); leave
    the seed out for a real release.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    noise, kap = _check_noise(noise, kappa)
    pos = index_array(positions, name="positions", what="an (n, m) array of integer positions")
    if pos.ndim != 2:
        raise InputError("positions must be an (n, m) array with n, m >= 1")
    pos = check_permutations(pos, what="row of positions")
    w = check_multiplicities(weights, pos.shape[0])
    if noise == "local":
        layout = tree_layout(pos.shape[1], kap)
        rows = np.repeat(pos, w, axis=0)
        charge(_local_guarantee(eps, UNIT_RANKING, FOOTRULE_COSTS))
        return local_footrule_release(local_footrule_reports(rows, layout, eps, record_key(rng)),
                                      rows.shape[0], layout, eps)
    return footrule_counts_release(position_counts(pos, w), int(w.sum()), epsilon=eps, delta=dlt,
                                   noise=noise, kappa=kap, rng=rng)


@private_release
def footrule_counts_release(counts: ArrayLike, n: int, *, epsilon: float, delta: float = 0.0, noise: str = "laplace",
                            kappa: float | None = None, rng: int | np.random.Generator | None = None,
                            ledger: Ledger | str | os.PathLike[str] | None = None, accountant: Accountant | None = None,
                            new_data: str | None = None) -> TreeRelease:
    """Central release of the footrule cost matrix from the position counts of ``n`` rankings.

    The release of :func:`footrule_cost_release` (central noise) computed from its sufficient
    statistic: ``counts[q, x]``, the number of rankings placing item ``q`` at position ``x``
    (:func:`position_counts`; every row and column sums to ``n``). Same guarantee: epsilon-DP
    (Laplace) or (epsilon, delta)-DP (Gaussian) for one ranking, ``n`` public.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    noise, kap = _check_noise(noise, kappa)
    if noise == "local":
        raise InputError("local noise randomizes every ranking before counting: use local_footrule_reports")
    c = np.asarray(counts)
    n = int(n)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or c.shape[0] < 1 or not np.issubdtype(c.dtype, np.integer):
        raise InputError("counts must be a square integer matrix (items x positions)")
    if n < 1 or np.any(c < 0) or np.any(c.sum(axis=0) != n) or np.any(c.sum(axis=1) != n):
        raise InputError("counts must be the position counts of n complete rankings: non-negative, "
                         "every row and column summing to n")
    layout = tree_layout(c.shape[0], kap)
    s1, s2 = parallel_sensitivity(layout, 1), parallel_sensitivity(layout, 2)
    noisy, scale, cost_sd, g = _central_release(c, n, layout, s1, s2, noise, eps, dlt, rng,
                                                UNIT_RANKING, FOOTRULE_COSTS)
    return TreeRelease(costs=layout.read_off(noisy), aggregates=noisy, noise=noise,
                       noise_scale=scale, cost_sd=cost_sd, kappa=kap,
                       sensitivity=(s1 if noise == "laplace" else s2) / n, n=n, guarantee=g)


def ranking_radius(layout: TreeLayout) -> float:
    """l2 norm of one ranking's concatenated weighted vector (the same for every ranking)."""
    return float(np.sqrt(np.sum(layout.design ** 2)))


def local_footrule_reports(positions, layout: TreeLayout, epsilon, key, first_record: int = 0) -> np.ndarray:
    """Sum of the rankings' fixed-point local reports (Hillebrand et al. §4, one round).

    Row ``i`` of ``positions`` is ranking ``first_record + i``; it sends the Duchi et al. l2
    report of its concatenated weighted tree vector (radius :func:`ranking_radius`), drawn from
    its own counter-based randomness under ``key``
    (:func:`~privrank.mechanisms.local_vectors.duchi_l2_records`): epsilon-local DP per ranking.
    Returns the int64 sum, which adds up exactly over any split of the rankings;
    :func:`local_footrule_release` averages it.
    """
    return _local_reports(np.asarray(positions, dtype=np.int64), layout, check_epsilon(epsilon), key,
                          first_record, ranking_radius(layout))


def local_footrule_release(total, n: int, layout: TreeLayout, epsilon) -> TreeRelease:
    """The local footrule release from :func:`local_footrule_reports`'s sum over ``n`` rankings."""
    return _local_release(total, n, layout.m, layout, check_epsilon(epsilon), UNIT_RANKING,
                          FOOTRULE_COSTS, radius=ranking_radius(layout))


def _local_reports(rows, layout, epsilon, key, first_record, radius) -> np.ndarray:
    """Sum of the fixed-point Duchi reports of every row's concatenated weighted vector."""
    n, k = rows.shape
    D = k * layout.size
    total = np.zeros(D, dtype=np.int64)
    if D:
        batch = max(1, int(2_000_000 // D))
        design_t = np.ascontiguousarray(layout.design.T)  # (m, T)
        for start in range(0, n, batch):  # blocks of records, each vectorised
            vec = design_t[rows[start:start + batch]].reshape(-1, D)
            total += duchi_l2_records(vec, radius=radius, epsilon=epsilon, key=key,
                                      first_record=int(first_record) + start).sum(axis=0)
    return total


def _local_release(total, n, k, layout, epsilon, unit, mech, *, radius) -> TreeRelease:
    """One-round local release: the average of ``n`` rows' reports (summed in fixed point)."""
    if n < 1:
        raise InputError("no records to aggregate")
    if n >= MAX_REPORTS:
        raise InputError(f"a local release adds the reports of fewer than {MAX_REPORTS} records exactly")
    D = k * layout.size
    noisy = (report_unit(D, radius, epsilon) * np.asarray(total) / n if D else np.zeros(0)).reshape(k, layout.size)
    bound = duchi_l2_scale(D, radius, epsilon) if D else 0.0
    # per-coordinate sd of one report is at most bound / sqrt(D); of the mean, / sqrt(n)
    scale = bound / math.sqrt(max(D, 1)) / math.sqrt(n)
    cost_sd = scale * np.sqrt(np.sum(layout.readoff ** 2, axis=1))
    return TreeRelease(costs=layout.read_off(noisy), aggregates=noisy, noise="local",
                       noise_scale=scale, cost_sd=cost_sd, kappa=layout.kappa,
                       sensitivity=radius, n=n, guarantee=_local_guarantee(epsilon, unit, mech))


def _local_guarantee(epsilon, unit, mech) -> Guarantee:
    return Guarantee(epsilon=epsilon, model="local", unit=unit, mechanism=mech + " (Duchi et al. l2 randomizer)")
