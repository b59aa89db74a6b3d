"""Link functions of paired-comparison models and their regularity constants.

A link ``F`` gives ``P(i beats j) = F(theta_i - theta_j)``. The penalised likelihood of
:mod:`privrank.pairwise.btl` needs, per observed pair with ``W`` (weighted) wins of ``i`` and
``T`` records, the loss ``W g(d) + (T - W) g(-d)`` with ``g = -log F`` and ``d = theta_i -
theta_j``, and its first two derivatives in ``d``; each link computes them vectorised over
pairs.

Cai, Chakraborty and Wang (§2.1, conditions (A0)-(A2), eqs. 2.3-2.4) state the constants that
calibrate objective perturbation:

* (A0) ``F`` strictly increasing with ``F(x) = 1 - F(-x)``;
* (A1) ``kappa_1 = sup_x F'(x) / (F(x)(1 - F(x)))``: bounds how much one comparison can move
  the gradient of the likelihood;
* (A2) ``0 < g''(x) <= kappa_2`` everywhere: bounds how much one comparison can move its
  Hessian, and ``min_{|x| <= 4} g''(x) > 1/kappa_2`` for the utility analysis.

(A2) gives ``kappa_2`` two roles. The privacy proof uses only the upper bound ``sup g''``
(Cai et al. notes §7.3), which is what :attr:`Link.kappa_2` holds; the lower bound on
``|x| <= 4`` is :attr:`Link.curvature_floor`, so (A2) read literally needs
``max(kappa_2, 1 / curvature_floor)``. The constants hold with ``<=`` rather than the paper's
strict ``<``, which is all the proof needs.
"""
from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from ..errors import InputError
from ..special import expit, log_ndtr

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def softplus(x):
    """``log(1 + e^x)`` without overflow (as ``np.logaddexp(0, x)``, about 5x faster)."""
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


class Link:
    """A symmetric link ``F`` with its likelihood derivatives and (A1)/(A2) constants.

    Attributes
    ----------
    name : str
    kappa_1 : float
        ``sup_x F'(x) / (F(x)(1 - F(x)))`` of the loss actually minimised (A1).
    kappa_2 : float
        ``sup_x g''(x)``, ``g = -log F``: the curvature bound the privacy proof needs (A2).
    curvature_floor : float
        ``min_{|x| <= 4} g''(x)``, the lower curvature constant of (A2).
    """

    name: str
    kappa_1: float
    kappa_2: float
    curvature_floor: float

    def cdf(self, x):
        """``F(x)``: the probability that the first item wins at score difference ``x``."""
        raise NotImplementedError

    def pair_loss(self, d, wins, totals):
        """``wins g(d) + (totals - wins) g(-d)`` per pair."""
        raise NotImplementedError

    def pair_gradient(self, d, wins, totals):
        """Derivative of :meth:`pair_loss` in ``d``."""
        raise NotImplementedError

    def pair_curvature(self, d, wins, totals):
        """Second derivative of :meth:`pair_loss` in ``d`` (the Hessian's edge weights)."""
        raise NotImplementedError

    def pair_derivatives(self, d, wins, totals, out=None):
        """``(pair_gradient, pair_curvature)`` at once (a link may share work between them); ``out``:
        two float arrays shaped like ``d`` to write them into (the first may be ``d`` itself), so
        that a solver's iterations reuse their memory."""
        r, w = self.pair_gradient(d, wins, totals), self.pair_curvature(d, wins, totals)
        if out is None:
            return r, w
        np.copyto(out[0], r)
        np.copyto(out[1], w)
        return out

    def __repr__(self) -> str:
        return f"<link {self.name}: kappa_1={self.kappa_1:.4g}, kappa_2={self.kappa_2:.4g}>"


class LogisticLink(Link):
    """``F(x) = 1 / (1 + e^-x)``: the Bradley-Terry-Luce model.

    ``F'/(F(1-F)) = 1`` identically, so ``kappa_1 = 1``; ``g'' = F(1-F) <= 1/4``, so
    ``kappa_2 = 1/4``; ``curvature_floor = F(4)(1 - F(4)) = 0.01766``. ``g''`` does not depend
    on the outcome, so the Hessian does not depend on who won.
    """

    name = "logistic"
    kappa_1 = 1.0
    kappa_2 = 0.25
    curvature_floor = float(expit(4.0) * (1.0 - expit(4.0)))

    def cdf(self, x):
        return expit(np.asarray(x, dtype=float))

    def pair_loss(self, d, wins, totals):
        return totals * softplus(d) - wins * d

    def pair_gradient(self, d, wins, totals):
        return totals * expit(d) - wins

    def pair_curvature(self, d, wins, totals):
        p = expit(d)
        return totals * p * (1.0 - p)

    def pair_derivatives(self, d, wins, totals, out=None):
        # one sigmoid for both: n p - s and n p - n p p, computed in the two output arrays; the
        # sigmoid as 1 / (1 + e^-d) (numpy's vectorised exp: 6x scipy's expit), -d capped at 700 so
        # that e^-d stays finite (p = 1e-304 there, where it is 0 to rounding anyway)
        r, w = (np.empty_like(d, dtype=float), np.empty_like(d, dtype=float)) if out is None else out
        p = np.negative(d, out=w)
        np.minimum(p, 700.0, out=p)
        np.exp(p, out=p)
        p += 1.0
        np.divide(1.0, p, out=p)
        tp = np.multiply(totals, p, out=r)  # d (possibly r) is read by now
        np.multiply(tp, p, out=w)
        np.subtract(tp, w, out=w)
        np.subtract(tp, wins, out=r)
        return r, w


class ProbitLink(Link):
    """``F = Phi``, the standard normal CDF (Thurstone-Mosteller), with a bounded score.

    The exact probit likelihood fails (A1): ``g'(x) = -phi(x)/Phi(x)`` grows like ``|x|`` as
    ``x -> -inf``, so one comparison can move the gradient without bound and no finite noise
    scale makes objective perturbation private. privrank therefore uses the probit loss
    ``g(x) = -log Phi(x)`` for ``x >= -margin`` and continues it linearly (its tangent) below
    ``-margin``. This is the probit likelihood for every pair whose fitted win probability lies
    in ``[Phi(-margin), Phi(margin)]`` (``[3.2e-5, 0.99997]`` at the default ``margin = 4``, the
    range (A2) looks at) and a robust, still convex, continuously differentiable loss outside
    it. Private and non-private fits use the same loss.

    Constants, with ``s = phi/Phi``: ``kappa_1 = s(margin) + s(-margin)`` (4.2257 at margin 4;
    ``F'/(F(1-F))`` grows with ``|x|`` and is capped at the margin), ``kappa_2 = g''(-margin)``
    (0.9533; ``g''(x) = s(x)(x + s(x))`` decreases in ``x`` and is 0 on the linear tail),
    ``curvature_floor = g''(4)`` (5.36e-4). Objective perturbation with this link therefore
    needs about 4.2 times the logistic link's noise.
    """

    def __init__(self, margin: float = 4.0):
        margin = float(margin)
        if not (math.isfinite(margin) and margin > 0):
            raise InputError("the probit margin must be finite and > 0")
        self.margin = margin
        self.name = "probit" if margin == 4.0 else f"probit(margin={margin:g})"

    # computed on first use: they need scipy's log_ndtr, which a logistic fit never imports
    @cached_property
    def kappa_1(self) -> float:  # type: ignore[override]  # read-only, as the base class's are in use
        return float(self._mills(self.margin) + self._mills(-self.margin))

    @cached_property
    def kappa_2(self) -> float:  # type: ignore[override]  # read-only, as the base class's are in use
        return float(self._curvature(np.float64(-self.margin)))

    @cached_property
    def curvature_floor(self) -> float:  # type: ignore[override]  # read-only, as the base class's are in use
        return float(self._curvature(np.float64(4.0)))

    @staticmethod
    def _mills(x):
        """``s(x) = phi(x) / Phi(x)``, computed in log space."""
        return np.exp(-0.5 * x * x - _LOG_SQRT_2PI - log_ndtr(x))

    def _g(self, x):
        c = self.margin
        tail = x < -c
        xc = np.where(tail, -c, x)
        return -log_ndtr(xc) + np.where(tail, -self._mills(-c) * (x + c), 0.0)

    def _g1(self, x):
        return -self._mills(np.maximum(x, -self.margin))

    def _curvature(self, x):
        xc = np.maximum(x, -self.margin)
        s = self._mills(xc)
        return np.where(x < -self.margin, 0.0, s * (xc + s))

    def cdf(self, x):
        return np.exp(log_ndtr(np.asarray(x, dtype=float)))

    def pair_loss(self, d, wins, totals):
        return wins * self._g(d) + (totals - wins) * self._g(-d)

    def pair_gradient(self, d, wins, totals):
        return wins * self._g1(d) - (totals - wins) * self._g1(-d)

    def pair_curvature(self, d, wins, totals):
        return wins * self._curvature(d) + (totals - wins) * self._curvature(-d)


LOGISTIC = LogisticLink()
PROBIT = ProbitLink()
LINKS = {"logistic": LOGISTIC, "probit": PROBIT}


def as_link(link) -> Link:
    """A :class:`Link` from a name (``"logistic"``, ``"probit"``) or a Link instance."""
    if isinstance(link, Link):
        return link
    try:
        return LINKS[link]
    except (KeyError, TypeError):
        raise InputError(f"link must be one of {', '.join(LINKS)}") from None
