"""The proven half of the manipulation margin: how few fakes cannot change the result.

:func:`~privrank.inference.manipulation.manipulation_margin` states an interval: ``fakes``, found by
attacks that were run, and ``at_least``, proven here: fewer fakes cannot change the result, whatever
they send within the survey's rules. The proof is PRIVACY.md's ("The manipulation margin", steps
1-4): the region every attack of ``n`` fakes stays within (a fixed point, step 2), the most ``n``
fakes can shrink a gap within it (step 3), and the largest ``n`` so proven (step 4).
:class:`MarginBound` holds it for the model of the released fit, which the attack search shares.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import expit

if TYPE_CHECKING:
    from ..data.pair_counts import PairCounts

#: rounds of the fixed-point search for the region the fakes can reach (PRIVACY.md, step 2), and the
#: change of a score difference past which it gives up (no bound is then proven for that many fakes)
REGION_ROUNDS = 40
REGION_LIMIT = 20.0


def _top_k_sum(values: np.ndarray, k: int) -> float:
    """The sum of the ``k`` largest entries of ``values``."""
    if k >= values.size:
        return float(values.sum())
    return float(np.partition(values, values.size - k)[values.size - k:].sum())


def _curvature(d):
    """``sigma'(d) = sigma(d) (1 - sigma(d))``, the logistic link's curvature."""
    p = expit(d)
    return p * (1.0 - p)


class MarginBound:
    """The proven bound on what fakes can do to a released BTL fit (PRIVACY.md, "The manipulation
    margin"); a base of the margin's model of the fit
    (:mod:`privrank.inference.manipulation`), which sets what it reads: the scores ``s``, the ridge
    ``lam`` and its change :meth:`ridge_range`, the pair counts ``pc``, the pairs ``iu, ju`` and their
    released differences ``d_all`` (``d`` per honest pair, ``honest`` their places among the pairs),
    ``M`` (the inverse Hessian), ``rho`` and ``s_norm`` (norms in its metric), a fake's report's
    weight ``omega`` and value ``y`` per declared epsilon, the quota ``K``, and ``_regions``. Its
    first-order :meth:`estimate`, not a bound, orders the challengers the search tries."""

    # set by the subclass (the margin's model of the fit, :mod:`privrank.inference.manipulation`)
    s: np.ndarray
    lam: float
    ridge_range: Callable[[int], tuple[float, float]]
    pc: PairCounts
    iu: np.ndarray
    ju: np.ndarray
    d_all: np.ndarray
    d: np.ndarray
    honest: np.ndarray
    M: np.ndarray
    rho: np.ndarray
    s_norm: float
    omega: np.ndarray
    y: np.ndarray
    K: int
    _regions: dict[int, np.ndarray | None]

    def _coef(self, d_win: np.ndarray, D: np.ndarray) -> np.ndarray:
        """Per pair, the largest residual ``omega (y - sigma(s_winner - s_loser))`` of a fake's report
        over the declared epsilons, given ``s_winner - s_loser >= d_win - D`` (``D`` per pair)."""
        return np.maximum((self.omega[:, None] * (self.y[:, None] - expit(d_win - D)[None, :])).max(axis=0), 0.0)

    def _curvature_range(self, D: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per honest pair: its curvature at the released fit, and the least and the most it can be
        within ``D`` of its released difference (``sigma'`` is even and falls away from 0)."""
        d, Dh = np.abs(self.d), D[self.honest]
        return _curvature(d), _curvature(d + Dh), _curvature(np.maximum(d - Dh, 0.0))

    def _second_order(self, n: int, D: np.ndarray, dabs: float) -> float:
        """``|v|_{H^-1} max(a / (1 - a), b / (1 + b))`` of PRIVACY.md step 3: the Hessian along the
        attack lies between ``(1 - a) H`` and ``(1 + b) H`` (from the curvature of each honest pair
        within ``D`` of its released difference, and the ridge's change ``dabs``); times the largest
        ``H^-1``-norm of the fakes' pull ``v`` on the gradient; inf where ``a >= 1``."""
        k0, low, high = self._curvature_range(D)
        dlo, dhi = self.ridge_range(n)
        lam = self.lam if self.lam > 0 else math.inf  # no ridge: it cannot change (dlo = dhi = 0)
        shrink = max(float(np.max(1.0 - low / k0, initial=0.0)), -dlo / lam)
        grow = max(float(np.max(high / k0 - 1.0, initial=0.0)), dhi / lam)
        if shrink >= 1.0:
            return math.inf
        factor = max(shrink / (1.0 - shrink), grow / (1.0 + grow))
        coef = self._coef(-np.abs(self.d_all), D)  # either direction: the underdog's win is the largest
        pull = n * _top_k_sum(coef * self.rho, self.K) + 2.0 * dabs * self.s_norm
        return pull * factor

    def _second_order_by_pair(self, n: int, z: np.ndarray, D: np.ndarray, dabs: float) -> np.ndarray:
        """For each column ``z`` of ``z``: ``sum_h T_h |kappa_h - kappa*_h| |z_k - z_l| D_h + 2 dabs |z . Delta|``
        over the honest pairs ``h = (k, l)`` (PRIVACY.md step 3, the second form), with the curvature's
        change bounded within ``D_h`` of each pair's released difference and ``|z . Delta|`` by
        ``|z - mean z|_1 max_h D_h`` (``Delta`` sums to zero, so no ``|Delta_k|`` exceeds ``max_h D_h``)."""
        k0, low, high = self._curvature_range(D)
        weight = self.pc.totals * np.maximum(high - k0, k0 - low) * D[self.honest]
        dz = np.abs(z[self.pc.i] - z[self.pc.j])
        ridge = 2.0 * dabs * float(D.max(initial=0.0)) * np.abs(z - z.mean(axis=0)).sum(axis=0)
        return weight @ dz + ridge

    def _first_order(self, n: int, z: np.ndarray, coef: np.ndarray, dabs: float) -> np.ndarray:
        """For each column ``z`` of ``z`` (``z = H^-1 x`` for a quantity ``x . scores``): the largest
        first-order change of ``x . scores`` by ``n`` fakes, each on its ``K`` best pairs (``coef`` per
        pair), plus the ridge's change; for large ``m`` each pair's ``|z_a - z_b|`` is bounded by the
        range of ``z`` (no pair loop)."""
        ridge = 2.0 * dabs * np.abs(z.T @ self.s)
        if self.iu.size * z.shape[1] > 2e8:
            return n * _top_k_sum(coef, self.K) * (z.max(axis=0) - z.min(axis=0)) + ridge
        first = np.abs(z[self.iu] - z[self.ju]) * coef[:, None]
        if self.K < first.shape[0]:
            first = np.partition(first, first.shape[0] - self.K, axis=0)[first.shape[0] - self.K:]
        return n * first.sum(axis=0) + ridge

    def region(self, n: int) -> np.ndarray | None:
        """``D``, per pair ``k < l``: a proven bound on ``|Delta_k - Delta_l|`` over every attack of at
        most ``n`` fakes (``Delta`` the change of the scores), the fixed point of PRIVACY.md step 2
        (from each pair's difference, or from each item's change where there are many items); None
        when the search for one does not settle."""
        if n in self._regions:
            return self._regions[n]
        dlo, dhi = self.ridge_range(n)
        dabs = max(-dlo, dhi)
        by_pair = self.iu.size ** 2 <= 4e6  # each pair's difference b = e_k - e_l (z = H^-1 b), else each item
        z = self.M[:, self.iu] - self.M[:, self.ju] if by_pair else self.M
        norms = self.rho if by_pair else np.sqrt(self.M.diagonal())
        found, bound = None, np.zeros(z.shape[1])
        for _ in range(REGION_ROUNDS):
            D = bound if by_pair else bound[self.iu] + bound[self.ju]
            second = norms * self._second_order(n, D, dabs)
            if by_pair:
                second = np.minimum(second, self._second_order_by_pair(n, z, D, dabs))
            psi = self._first_order(n, z, self._coef(-np.abs(self.d_all), D), dabs) + second
            if np.all(psi < bound):
                found = D
                break
            if not np.all(psi < REGION_LIMIT):
                break  # scores moving this far: no useful bound
            bound = np.maximum(bound, 1.05 * psi + 1e-12)
        self._regions[n] = found
        return found

    def decrease(self, n: int, t: int, c: int, D: np.ndarray, loewner: float | None = None,
                 enough: float = -math.inf) -> float:
        """A proven upper bound on how far ``n`` fakes can shrink the gap ``s_t - s_c`` (PRIVACY.md,
        step 3), given the region ``D`` (``loewner``: :meth:`_second_order` for it, if known). The
        second form of the second-order term, a sum over the honest pairs, is computed only when the
        first bound is not already below ``enough``."""
        w = (self.M[:, t] - self.M[:, c])[:, None]
        dw = w[self.iu, 0] - w[self.ju, 0]
        coef = np.where(dw != 0, self._coef(np.where(dw < 0, self.d_all, -self.d_all), D), 0.0)  # winner: lower w
        dlo, dhi = self.ridge_range(n)
        dabs = max(-dlo, dhi)
        first = float(self._first_order(n, w, coef, dabs)[0])
        u_norm = math.sqrt(max(self.M[t, t] + self.M[c, c] - 2.0 * self.M[t, c], 0.0))
        second = u_norm * (self._second_order(n, D, dabs) if loewner is None else loewner)
        if first + second < enough:
            return first + second
        return first + min(second, float(self._second_order_by_pair(n, w, D, dabs)[0]))

    def estimate(self, t: int, c: int) -> float:
        """The first-order number of fakes that closes the gap ``s_t - s_c`` (no region, no ridge
        change): the order in which challengers are searched, not a bound."""
        w = self.M[:, t] - self.M[:, c]
        dw = w[self.iu] - w[self.ju]
        coef = self._coef(np.where(dw < 0, self.d_all, -self.d_all), np.zeros(dw.size))
        step = _top_k_sum(np.abs(dw) * coef, self.K)
        return (self.s[t] - self.s[c]) / step if step > 0 else math.inf

    def cannot(self, n: int, targets) -> bool:
        """Proven: no attack of ``n`` fakes (or fewer) puts any ``c`` level with or above its ``t``,
        for every ``(t, c)`` of ``targets``."""
        D = self.region(n)
        if D is None:
            return False
        dlo, dhi = self.ridge_range(n)
        loewner = self._second_order(n, D, max(-dlo, dhi))
        return all(self.decrease(n, t, c, D, loewner, self.s[t] - self.s[c]) < self.s[t] - self.s[c]
                   for t, c in targets)

    def at_least(self, targets, cap: int) -> int:
        """The proven ``at_least``: one more than the largest ``n <= cap`` for which :meth:`cannot`
        holds (a proof at ``n`` covers every smaller number, PRIVACY.md step 4)."""
        if not self.cannot(1, targets):
            return 1
        lo, hi = 1, 2
        while self.cannot(min(hi, cap), targets):
            if hi >= cap:
                return cap + 1
            lo, hi = hi, 2 * hi
        hi = min(hi, cap)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if self.cannot(mid, targets) else (lo, mid)
        return lo + 1
