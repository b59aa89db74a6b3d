"""Releases of pairwise statistics, and the post-processing that turns reports into them.

A :class:`PairwiseRelease` is what an estimator consumes: the per-pair sufficient statistic of
(possibly privatised) record values, the :class:`~privrank.guarantees.Guarantee` of the data it
came from, and the worst-case variance inflation ``G`` of one record value relative to a
non-private answer (``coth(eps/2)^2`` for debiased randomized response), which sets the
default ridge.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..data.comparison_files import as_comparisons
from ..data.comparisons import PairwiseComparisons
from ..data.pair_counts import PairCounts
from ..data.tally import ComparisonTally, epsilon_list
from ..errors import InputError, check_flag, epsilons_out_of_range
from ..guarantees import UNIT_COMPARISON, UNIT_USER, Guarantee
from ..html_cards import Shown
from ..mechanisms.randomized_response import added_variance, debias, variance_inflation

WEIGHTS = ("uniform", "inverse_variance")
TIE_NOTE = "Ties are answered as a fair coin before randomization."


@dataclass(frozen=True, repr=False)
class PairwiseRelease(Shown):
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

    Examples
    --------
    Debiased randomized response (Xu, Sun, Cheng eq. 1) releases a per-pair statistic:

    >>> import numpy as np
    >>> import privrank as pr
    >>> comps = pr.PairwiseComparisons.from_labels(["a", "a", "b", "c"], ["b", "c", "c", "a"], [1, 1, 0, 1])
    >>> rel = pr.debiased_randomized_response(comps, epsilon=1.0, rng=0)
    >>> rel.counts.totals, np.round(rel.counts.wins, 3)
    (array([1., 2., 1.]), array([ 1.582,  1.   , -0.582]))
    >>> round(rel.variance_factor, 3), rel.guarantee.model
    (4.683, 'local')
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

    def __repr__(self) -> str:
        return f"PairwiseRelease({len(self.items)} items; {self.guarantee.plain()})"

    def _card(self) -> dict:  # the sizes and the variance: the per-pair statistic is for code (.counts)
        return {"summary": f"{len(self.items):,} items", "guarantee": self.guarantee,
                "facts": [("pairs with records", f"{self.counts.n_pairs:,}"),
                          ("variance factor G", f"{self.variance_factor:.4g}")]}


def local_guarantee(epsilon: float, epsilon_per_user: float | None, mechanism: str,
                    note: str = "") -> Guarantee:
    """Per-comparison local-DP guarantee with the per-user epsilon by basic composition.

    ``epsilon`` is the per-comparison epsilon; ``epsilon_per_user`` the per-user epsilon over a
    declared bound on each user's answers, None when no bound was declared.
    """
    eps = float(epsilon)
    return Guarantee(epsilon=eps, model="local", unit=UNIT_COMPARISON, mechanism=mechanism,
                     epsilon_per_comparison=eps, epsilon_per_user=epsilon_per_user, note=note)


def record_weights(eps_records: np.ndarray, weights: str, counts=None) -> tuple[np.ndarray | None, float]:
    """Record weights and the variance factor ``G`` for a weighting scheme.

    ``uniform`` (the paper): equal weights, ``G = mean coth^2(eps/2)``. ``inverse_variance``
    (extension for heterogeneous epsilon): weights ``tanh^2(eps/2)`` normalised to mean 1,
    ``G = 1 / mean tanh^2(eps/2)``. Means run over records; ``counts`` (optional) says how many
    records each entry of ``eps_records`` stands for. Weights depend only on the public
    epsilons, so weighting is post-processing.
    """
    if check_weighting(weights) == "uniform":
        return None, float(np.average(variance_inflation(eps_records), weights=counts))
    w = np.tanh(np.asarray(eps_records, dtype=float) / 2.0) ** 2  # inverse_variance
    mean = float(np.average(w, weights=counts))
    return w / mean, 1.0 / mean


def check_weighting(weights) -> str:
    """``weights``, a weighting scheme of :func:`record_weights` (one of :data:`WEIGHTS`)."""
    if not isinstance(weights, str) or weights not in WEIGHTS:
        raise InputError(f"weights must be one of {', '.join(WEIGHTS)}")
    return weights


def paper_lambda(eps_records: np.ndarray, counts=None) -> float:
    """Literal ridge of Xu, Sun, Cheng §5.1, ``(e^eps+1)^2/(e^eps-1)`` per record (count form).

    ``counts`` (optional) says how many records each entry of ``eps_records`` stands for.
    """
    x = np.expm1(np.asarray(eps_records, dtype=float))  # (x + 2)^2 / x, without cancellation
    return float(np.average(x + 4.0 + 4.0 / x, weights=counts))


def release_from_reports(reports: PairwiseComparisons | ComparisonTally, *, weights: str = "uniform",
                         debiased: bool = True, guarantee: Guarantee | None = None,
                         epsilons: float | Sequence[float] | None = None) -> PairwiseRelease:
    """Debias randomized reports (post-processing, no further randomization).

    Parameters
    ----------
    reports : PairwiseComparisons or ComparisonTally
        Randomized reports with each record's epsilon, in memory or as their tally (from
        :func:`privrank.engines.sufficient_statistics`). The guarantee assumes every report was
        produced once, on its respondent's device, by randomized response with that epsilon, which
        must lie in the range of a release's ``--epsilon`` (:data:`privrank.errors.EPSILON_RANGE`)
        and be one of the declared epsilons.
    weights : {"uniform", "inverse_variance"}
        See :func:`record_weights`.
    debiased : bool
        True: the unbiased values of Xu, Sun, Cheng eq. (1). False: the reports as they are
        (classic randomized response, the paper's biased baseline of §2.2, which carries no
        noise variance: confidence intervals refuse it).
    guarantee : Guarantee, optional
        The guarantee the reports were randomized under (the randomizing release passes its
        own); refused when it states more protection than the reports' epsilons deliver
        (:func:`check_claim`). Default: eps-local DP per comparison at the largest declared
        epsilon (or the one epsilon all the reports carry), and per respondent ``K`` times that
        epsilon when the reports carry a declared quota of ``K`` reports per respondent
        (``max_answers``, checked when it was declared); without a quota no per-respondent number
        (that would need a declared bound). Its note says what it rests on.
    epsilons : float or sequence of float, optional
        The declared epsilons: those the survey asked its respondents to use, a public parameter
        (as :meth:`~privrank.data.comparisons.PairwiseComparisons.with_declared_epsilons`; the
        reports may carry the declaration already). A report at any other epsilon is refused: a
        fake one at a tiny epsilon would weigh ``(e^eps+1)/(e^eps-1)`` times an answer. Without a
        declaration, reports that all carry one epsilon declare it (the guarantee says so), and
        reports at several epsilons are refused.

    Notes
    -----
    The release is computed from the exact integer tally, per epsilon level, so it is the same
    float for float however the tally was computed.

    Examples
    --------
    Reports randomized by the respondents (here simulated), debiased by the collector:

    >>> import numpy as np
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> reports = pr.randomized_response(comps, epsilon=1.0, rng=1)
    >>> rel = pr.release_from_reports(reports)
    >>> np.round(pr.fit_btl(rel).scores, 3)
    array([ 1.097,  0.404, -0.033, -0.27 , -1.199])
    >>> print(rel.guarantee.describe())
    1-DP, local model, protecting one comparison [debiased randomized response]; a user who made k comparisons
    is protected at k x 1 (declare a bound on answers per user, max_answers, to state one per-user number).
    Assumes each report was randomized once, on its respondent's device, at the declared epsilon 1. Ties are
    answered as a fair coin before randomization. SEEDED RUN: reproducible research output, not a private
    release (whoever knows the seed can remove the noise); leave the seed out for a real release.
    """
    if not isinstance(reports, (PairwiseComparisons, ComparisonTally)):
        raise InputError("expected randomized reports (PairwiseComparisons or ComparisonTally)")
    if not reports.is_randomized:
        raise InputError("these comparisons carry no epsilon column: they are raw answers, "
                         "not randomized reports")
    if epsilons is not None:
        reports = reports.with_declared_epsilons(epsilons)
    debiased = check_flag(debiased, name="debiased")
    weights = check_weighting(weights)
    if guarantee is not None and not isinstance(guarantee, Guarantee):
        raise InputError("guarantee must be a privrank Guarantee (the one the reports were randomized under), "
                         "or left out to have it stated from the reports")
    quota = reports.max_answers if isinstance(reports, PairwiseComparisons) else None
    tally = reports.tally() if isinstance(reports, PairwiseComparisons) else reports
    eps, per_level = tally.epsilons, tally.level_records()
    assert eps is not None  # randomized reports (checked above) carry their epsilons
    bad, why = epsilons_out_of_range(eps)
    if bad.size:
        raise InputError(f"randomized reports: {why}")
    declared = tally.declared_epsilons
    if declared is None and eps.size > 1:
        raise InputError("the reports carry more than one epsilon and none was declared: declare the epsilons the "
                         "survey asked its respondents to use (epsilons=[0.5, 1]; CLI: --epsilon 0.5,1); reports "
                         "that all carry one epsilon declare it")
    if guarantee is not None:
        check_claim(guarantee, reports, eps)
    w, G = record_weights(eps, weights, per_level)
    eps_entry = eps[tally.level]
    reported = tally.wins2 / 2.0
    values = debias(reported, eps_entry, tally.n) if debiased else reported
    weight = 1.0 if w is None else w[tally.level]
    mechanism = "debiased randomized response" if debiased else "classic randomized response"
    stated = float(eps.max() if declared is None else max(declared))
    per_user = None if quota is None else stated * quota
    g = guarantee if guarantee is not None else local_guarantee(stated, per_user, mechanism,
                                                               note=f"{reports_note(declared, stated)} {TIE_NOTE}")
    g = replace(g, seeded=True) if tally.seeded else g
    counts = tally.pair_counts(weight * values, weight * tally.n)
    if not debiased:
        return PairwiseRelease(counts, g, G, paper_lambda(eps, per_level))
    squares = weight ** 2 * tally.n  # per entry, the sum of its records' squared weights
    _, (weight_sq, noise) = tally.pair_sums(squares, squares * added_variance(eps_entry))
    return PairwiseRelease(counts, g, G, paper_lambda(eps, per_level), None if w is None else weight_sq, noise)


def reports_note(declared, epsilon: float) -> str:
    """What the guarantee of received reports rests on: the ``declared`` epsilons, or (None) the one
    ``epsilon`` all the reports carry."""
    if declared is None:
        at = f"epsilon {epsilon:g}, the one all the reports carry (none was declared)"
    elif len(declared) == 1:
        at = f"the declared epsilon {epsilon:g}"
    else:
        at = f"one of the declared epsilons ({epsilon_list(declared)})"
    return f"Assumes each report was randomized once, on its respondent's device, at {at}."


def check_claim(guarantee: Guarantee, reports, eps: np.ndarray) -> None:
    """Refuse a private ``guarantee`` that randomized ``reports`` (epsilon levels ``eps``) do not deliver.

    Each report is epsilon-local DP at its own epsilon, so the guarantee must be local, protect
    one comparison or one user, and state at least the largest epsilon; a per-user epsilon must
    be at least each user's sum of epsilons (basic composition), which needs the users' ids.
    """
    if not guarantee.private:
        return
    per_user = guarantee.epsilon if guarantee.unit == UNIT_USER else guarantee.epsilon_per_user
    holds = (guarantee.model == "local" and guarantee.unit in (UNIT_COMPARISON, UNIT_USER)
             and guarantee.epsilon >= float(eps.max()))
    if holds and per_user is not None:
        user = reports.user if isinstance(reports, PairwiseComparisons) else None
        if user is None:
            raise InputError("a guarantee per user needs the reports with their respondents' ids")
        epsilon = reports.epsilon if reports.levels is None else reports.levels.column(reports.n_records)  # not kept
        holds = float(np.bincount(user, weights=epsilon).max()) <= per_user * (1.0 + 1e-9)
    if not holds:
        raise InputError("the guarantee given states more protection than these randomized reports deliver "
                         "(each is local DP at its own epsilon); leave guarantee out to have it stated from "
                         "the reports")


def non_private_release(comps) -> PairwiseRelease:
    """The exact statistic of raw comparisons (ties count half a win each): not private.

    ``comps`` is a PairwiseComparisons or the ComparisonTally of raw comparisons.
    """
    if comps.is_randomized:
        raise InputError("these are randomized reports; debias them with release_from_reports")
    counts = comps.pair_counts()
    return PairwiseRelease(counts, Guarantee.non_private("none"), 1.0, None,
                           noise_variance=np.zeros(counts.n_pairs))


def as_release(data, *, weights: str = "uniform") -> PairwiseRelease:
    """Coerce estimator input: a release, randomized reports (debiased) or raw data (non-private),
    in memory (a DataFrame too) or as a tally."""
    data = as_comparisons(data)
    if isinstance(data, PairwiseRelease):
        return data
    if isinstance(data, (PairwiseComparisons, ComparisonTally)):
        return release_from_reports(data, weights=weights) if data.is_randomized else non_private_release(data)
    raise InputError("expected PairwiseComparisons, a ComparisonTally or a PairwiseRelease")
