"""Confidence intervals for scores and ranks of pairwise releases, and the manipulation margin
of a ranking of randomized reports (:mod:`~privrank.inference.manipulation`): post-processing only.

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

from .aggregates import FOOTRULE_TARGET, KEMENY_TARGET, RankIntervals, aggregate_intervals
from .cost import check_interval_cost, indistinguishable
from .manipulation import ManipulationMargin, Margin, manipulation_margin
from .plot import new_figure, plot_intervals
from .scores import BTL_TARGET, COUNT_TARGET, METHODS, ConfidenceIntervals, confidence_intervals

__all__ = ["BTL_TARGET", "COUNT_TARGET", "FOOTRULE_TARGET", "KEMENY_TARGET", "METHODS", "ConfidenceIntervals",
           "ManipulationMargin", "Margin", "RankIntervals", "aggregate_intervals", "check_interval_cost", "confidence_intervals", "indistinguishable",
           "manipulation_margin", "new_figure", "plot_intervals"]
