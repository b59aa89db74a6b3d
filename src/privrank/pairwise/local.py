"""Local-DP algorithms on pairwise comparisons (Xu, Sun, Cheng).

Local model (Xu, Sun, Cheng): every comparison is randomized independently before it leaves
the respondent, so the guarantee is eps-local DP *per comparison*; a user who answered k
comparisons at eps has, by basic composition, ``k * eps``-local DP for all their answers
(tight for independent randomized response). Every release reports both.

Privacy budgets can be given three ways:

* ``epsilon=e``: every comparison at ``e``;
* ``epsilon={user: e_u}`` (personalised privacy): each user's comparisons at that user's
  ``e_u`` (Xu, Sun, Cheng §2.6);
* ``user_epsilon=b`` (scalar or per-user mapping): a per-user budget split evenly over the
  comparisons that user actually made, so each user's total is exactly ``b``.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .._rng import as_generator
from ..data.comparisons import PairwiseComparisons
from ..errors import InputError, check_epsilon, check_epsilons
from ..mechanisms.noise import laplace
from ..mechanisms.randomized_response import randomize_bits
from .release import (TIE_NOTE, PairwiseRelease, local_guarantee, pair_variances, paper_lambda,
                      record_weights, release_from_reports)


def _per_user(comps: PairwiseComparisons, spec, name: str) -> np.ndarray:
    if comps.user is None:
        raise InputError(f"{name} per user needs user ids in the data")
    if isinstance(spec, Mapping):
        try:
            vals = np.array([float(spec[u]) for u in comps.users])
        except KeyError:
            raise InputError(f"{name} mapping is missing a user of the data") from None
        except (TypeError, ValueError):
            raise InputError(f"every {name} in the mapping must be a number > 0") from None
    else:
        try:
            vals = np.asarray(spec, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"every {name} must be a number > 0") from None
        if vals.shape != (len(comps.users),):
            raise InputError(f"{name} needs one value per user ({len(comps.users)})")
    return check_epsilons(vals, name=name)


def record_epsilons(comps: PairwiseComparisons, epsilon=None, user_epsilon=None) -> np.ndarray:
    """Per-record epsilon from a scalar, a per-user mapping, or a per-user budget (see module)."""
    if (epsilon is None) == (user_epsilon is None):
        raise InputError("give exactly one of epsilon (per comparison) or user_epsilon (per user)")
    if epsilon is not None:
        if isinstance(epsilon, Mapping) or np.ndim(epsilon) > 0:
            return _per_user(comps, epsilon, "epsilon")[comps.user]
        return np.full(comps.n_records, check_epsilon(epsilon))
    if isinstance(user_epsilon, Mapping) or np.ndim(user_epsilon) > 0:
        budget = _per_user(comps, user_epsilon, "user_epsilon")
    else:
        if comps.user is None:
            raise InputError("user_epsilon needs user ids in the data")
        budget = np.full(len(comps.users), check_epsilon(user_epsilon, name="user_epsilon"))
    counts = comps.records_per_user()
    return (budget / np.maximum(counts, 1))[comps.user]


def randomized_response(comps: PairwiseComparisons, epsilon=None, *, user_epsilon=None,
                        rng=None) -> PairwiseComparisons:
    """Play the respondents' side: randomize every answer, return reports with their epsilon.

    Each record is kept with probability ``e^eps/(1+e^eps)`` and flipped otherwise (a tie is a
    fair coin first). The result carries an ``epsilon`` column, which is what respondents send;
    :func:`privrank.fit_btl` debiases such reports.
    """
    if comps.is_randomized:
        raise InputError("these comparisons are already randomized reports; do not randomize twice")
    eps = record_epsilons(comps, epsilon, user_epsilon)
    bits = randomize_bits(comps.preference_values(), eps, rng)
    return comps.with_outcomes(2 * bits.astype(np.int64) - 1, eps)


def debiased_randomized_response(comps: PairwiseComparisons, epsilon=None, *, user_epsilon=None,
                                 weights: str = "uniform", rng=None) -> PairwiseRelease:
    """Debiased randomized response (Xu, Sun, Cheng eq. 1): the paper's local-DP release.

    Raw comparisons are randomized (see :func:`randomized_response`) and debiased; randomized
    reports (data with an epsilon column) are only debiased. Guarantee: eps-local DP per
    comparison, and the per-user epsilon by composition over each user's comparisons.
    """
    reports = comps if comps.is_randomized else randomized_response(comps, epsilon, user_epsilon=user_epsilon,
                                                                     rng=rng)
    return release_from_reports(reports, weights=weights)


def classic_randomized_response(comps: PairwiseComparisons, epsilon=None, *, user_epsilon=None,
                                rng=None) -> PairwiseRelease:
    """Classic randomized response without debiasing (the paper's biased baseline, §2.2).

    The flipped answers are fitted as if they were true answers, which shrinks BTL scores
    towards 0 (Lemma 1). Same guarantee as debiased randomized response. The release states no
    noise variance, so confidence intervals for the BTL scores refuse it.
    """
    reports = comps if comps.is_randomized else randomized_response(comps, epsilon, user_epsilon=user_epsilon,
                                                                     rng=rng)
    eps = reports.epsilon
    _, G = record_weights(eps, "uniform")
    g = local_guarantee(reports, eps, "classic randomized response",
                        note=TIE_NOTE)
    return PairwiseRelease(reports.pair_counts(), g, G, paper_lambda(eps))


def local_laplace(comps: PairwiseComparisons, epsilon=None, *, user_epsilon=None,
                  rng=None) -> PairwiseRelease:
    """Per-comparison Laplace baseline: each answer in {0, 1/2, 1} plus Laplace(1/eps) noise.

    The paper names this baseline without defining it; privrank uses the natural definition:
    the answer has sensitivity 1, so scale ``1/eps`` gives eps-local DP per comparison. The
    noisy value is already unbiased and is used directly in the likelihood. Its variance
    ``P(1-P) + 2/eps^2`` exceeds debiased randomized response's, so it should lose.
    """
    if comps.is_randomized:
        raise InputError("these comparisons are already randomized reports")
    eps = record_epsilons(comps, epsilon, user_epsilon)
    gen = as_generator(rng)
    values = comps.preference_values() + laplace(1.0 / eps, comps.n_records, gen)
    g = local_guarantee(comps, eps, "local Laplace", note=LAPLACE_NOTE)
    return PairwiseRelease(comps.pair_counts(values), g, laplace_variance_factor(eps), paper_lambda(eps),
                           *pair_variances(comps, None, 2.0 / eps ** 2))


LAPLACE_NOTE = "each answer plus Laplace(1/epsilon) noise"


def laplace_variance_factor(eps_records) -> float:
    """``G`` of the Laplace baseline: worst-case record variance ``1/4 + 2/eps^2`` over 1/4, averaged."""
    return float(np.mean(1.0 + 8.0 / np.asarray(eps_records, dtype=float) ** 2))


ADAPTIVE_SCHEMES = ("log_over", "critical", "log_under")


def adaptive_epsilon(scheme: str, m: int, L, L0: int = 100):
    """Per-comparison epsilon that shrinks with the data size (Xu, Sun, Cheng §5.1).

    Schemes are named by rate and normalised so that ``eps(m, L0) = 1``:

    * ``log_over``: eps ~ log(mL)/sqrt(mL)  (errors still decrease with L)
    * ``critical``: eps ~ 1/sqrt(mL)        (errors stay flat: the threshold)
    * ``log_under``: eps ~ 1/(sqrt(mL) log(mL))  (errors increase)

    The paper's narrative numbers them in the opposite order to its displayed formulas
    (its "Scheme 1" in the figures is ``log_under``); privrank uses the rate names only.
    """
    try:
        L = np.asarray(L, dtype=float)
    except (TypeError, ValueError):
        raise InputError("L must be a number of users >= 1") from None
    if not np.all(np.isfinite(L)) or np.any(L < 1) or int(L0) < 1:
        raise InputError("L and L0 must be finite numbers of users >= 1")
    if int(m) != m or m < 2:
        raise InputError("m must be an integer number of items >= 2")
    base = np.sqrt(L0 / L)
    if scheme == "critical":
        out = base
    elif scheme == "log_over":
        out = np.log(m * L) / np.log(m * L0) * base
    elif scheme == "log_under":
        out = np.log(m * L0) / np.log(m * L) * base
    else:
        raise InputError(f"scheme must be one of {', '.join(ADAPTIVE_SCHEMES)}")
    return float(out) if out.ndim == 0 else out
