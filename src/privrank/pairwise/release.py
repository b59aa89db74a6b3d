"""Releases of pairwise statistics, and the post-processing that turns reports into them.

A :class:`PairwiseRelease` is what an estimator consumes: the per-pair sufficient statistic of
(possibly privatised) record values, the :class:`~privrank.guarantees.Guarantee` of the data it
came from, and the worst-case variance inflation ``G`` of one record value relative to a
non-private answer (``coth(eps/2)^2`` for debiased randomized response), which sets the
default ridge.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.comparisons import PairCounts, PairwiseComparisons
from ..errors import InputError
from ..guarantees import UNIT_COMPARISON, Guarantee
from ..mechanisms.randomized_response import added_variance, debias, variance_inflation

WEIGHTS = ("uniform", "inverse_variance")
TIE_NOTE = "Ties are answered as a fair coin before randomization"


@dataclass(frozen=True)
class PairwiseRelease:
    """Per-pair statistic of record values, with its guarantee.

    Attributes
    ----------
    counts : PairCounts
        Sufficient statistic of the (privatised) record values.
    guarantee : Guarantee
        Protection of the raw comparisons the statistic came from.
    variance_factor : float
        ``G``: worst-case variance of one record value divided by 1/4 (1 without privacy).
    paper_lam : float or None
        The literal ridge of Xu, Sun, Cheng's experiments, ``(e^eps+1)^2/(e^eps-1)`` averaged
        over records (count-weighted form); None where it does not apply.
    weight_sq : ndarray or None
        Per pair, the sum of the squared record weights (None: unit weights, equal to
        ``counts.totals``).
    noise_variance : ndarray or None
        Per pair, the sum over records of ``weight^2`` times the variance the mechanism added to
        the record value: ``1 / (4 sinh^2(eps/2))`` for debiased randomized response (Lemma 2
        minus the answer's own variance ``P(1 - P)``), ``2 / eps^2`` for local Laplace, 0 without
        privacy. None for releases that are biased for the BTL scores (classic randomized
        response): confidence intervals refuse them.
    """

    counts: PairCounts
    guarantee: Guarantee
    variance_factor: float
    paper_lam: float | None = None
    weight_sq: np.ndarray | None = None
    noise_variance: np.ndarray | None = None

    @property
    def items(self) -> tuple:
        return self.counts.items


def local_guarantee(comps: PairwiseComparisons, eps_records: np.ndarray, mechanism: str,
                    note: str = "") -> Guarantee:
    """Per-comparison local-DP guarantee, with the per-user epsilon by basic composition.

    The per-user epsilon is the maximum over users of the sum of their records' epsilons; it is
    None when the data carry no user ids.
    """
    eps_max = float(np.max(eps_records))
    per_user = None
    if comps.user is not None:
        per_user = float(np.max(np.bincount(comps.user, eps_records, len(comps.users))))
    return Guarantee(epsilon=eps_max, model="local", unit=UNIT_COMPARISON, mechanism=mechanism,
                     epsilon_per_comparison=eps_max, epsilon_per_user=per_user, note=note)


def record_weights(eps_records: np.ndarray, weights: str) -> tuple[np.ndarray | None, float]:
    """Record weights and the variance factor ``G`` for a weighting scheme.

    ``uniform`` (the paper): equal weights, ``G = mean coth^2(eps/2)``. ``inverse_variance``
    (extension for heterogeneous epsilon): weights ``tanh^2(eps/2)`` normalised to mean 1,
    ``G = 1 / mean tanh^2(eps/2)``. Weights depend only on the public epsilons, so weighting is
    post-processing.
    """
    if weights == "uniform":
        return None, float(np.mean(variance_inflation(eps_records)))
    if weights == "inverse_variance":
        w = np.tanh(eps_records / 2.0) ** 2
        return w / w.mean(), float(1.0 / w.mean())
    raise InputError(f"weights must be one of {', '.join(WEIGHTS)}")


def paper_lambda(eps_records: np.ndarray) -> float:
    """Literal ridge of Xu, Sun, Cheng §5.1, ``(e^eps+1)^2/(e^eps-1)`` per record (count form)."""
    e = np.exp(eps_records)
    return float(np.mean((e + 1.0) ** 2 / (e - 1.0)))


def release_from_reports(reports: PairwiseComparisons, *, weights: str = "uniform",
                         mechanism: str = "debiased randomized response") -> PairwiseRelease:
    """Debias randomized reports (post-processing, no further randomization).

    The reports carry each record's epsilon; the guarantee assumes every report was produced
    by randomized response with that epsilon on the respondent's side.
    """
    if not reports.is_randomized:
        raise InputError("these comparisons carry no epsilon column: they are raw answers, "
                         "not randomized reports")
    eps = reports.epsilon
    z = debias((reports.outcome + 1) // 2, eps)
    w, G = record_weights(eps, weights)
    g = local_guarantee(reports, eps, mechanism,
                        note=TIE_NOTE)
    return PairwiseRelease(reports.pair_counts(z, w), g, G, paper_lambda(eps),
                           *pair_variances(reports, w, added_variance(eps)))


def pair_variances(comps: PairwiseComparisons, weights, record_noise) -> tuple[np.ndarray | None, np.ndarray]:
    """Per-pair ``(sum of squared weights, sum of squared weight x record noise variance)``.

    The pairs are those of ``comps.pair_counts()``, in the same order.
    """
    w2 = np.ones(comps.n_records) if weights is None else np.asarray(weights) ** 2
    weight_sq = None if weights is None else comps.pair_counts(weights=w2).totals
    noise = comps.pair_counts(weights=w2 * np.broadcast_to(record_noise, w2.shape)).totals
    return weight_sq, noise


def non_private_release(comps: PairwiseComparisons) -> PairwiseRelease:
    """The exact statistic of raw comparisons (ties count half a win each): not private."""
    if comps.is_randomized:
        raise InputError("these are randomized reports; debias them with release_from_reports")
    counts = comps.pair_counts()
    return PairwiseRelease(counts, Guarantee.non_private("none"), 1.0, None,
                           noise_variance=np.zeros(counts.n_pairs))


def as_release(data, *, weights: str = "uniform") -> PairwiseRelease:
    """Coerce estimator input: a release, randomized reports (debiased) or raw data (non-private)."""
    if isinstance(data, PairwiseRelease):
        return data
    if isinstance(data, PairwiseComparisons):
        return release_from_reports(data, weights=weights) if data.is_randomized else non_private_release(data)
    raise InputError("expected PairwiseComparisons or a PairwiseRelease")
