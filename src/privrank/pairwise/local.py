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

Per-user statements use declared public parameters only. With ``epsilon`` and a declared bound
``max_answers=K``, each user's first ``K`` answers (in data order) are used and every user is
protected at ``K * epsilon``; without a bound the guarantee states ``k * epsilon`` for a user
with ``k`` answers and no number (the busiest user's count is a fact of the data). With
``user_epsilon=b`` the guarantee protects *one user* at ``b``; the per-comparison epsilon each
user's split gives is not printed in the guarantee. It does travel with each report (the
collector must know the epsilon a report was randomized at to debias it), so the collector
learns each user's number of answers -- as it does in the local model anyway, by counting the
reports it receives. What the guarantee protects is the answers, not how many there are.
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..data.comparison_files import as_comparisons
from ..data.comparisons import PairwiseComparisons
from ..data.tally import EpsilonLevels, epsilon_levels
from ..errors import InputError, PrivacyWarning, check_epsilon, check_epsilons, check_whole, real_array
from ..mechanisms.noise import laplace_release
from ..mechanisms.randomized_response import randomize_comparisons
from ..guarantees import UNIT_USER, Guarantee
from ..release import charge, private_release
from .arena import release_arguments
from .release import (TIE_NOTE, PairwiseRelease, check_weighting, local_guarantee, paper_lambda,
                      release_from_reports)

if TYPE_CHECKING:
    from ..guarantees import Accountant
    from ..ledger import Ledger


def _is_per_user(spec) -> bool:
    """True for a per-user budget: a mapping or an array (a ragged list too, which :func:`_per_user`
    refuses), False for one number."""
    if isinstance(spec, Mapping):
        return True
    try:
        return np.ndim(spec) > 0
    except ValueError:  # a ragged list: not one number
        return True


def _per_user(comps: PairwiseComparisons, spec, name: str) -> np.ndarray:
    if comps.users is None:
        raise InputError(f"{name} per user needs user ids in the data")
    if isinstance(spec, Mapping):
        try:
            spec = [spec[u] for u in comps.users]
        except KeyError:
            raise InputError(f"{name} mapping is missing a user of the data") from None
        vals = real_array(spec, name=name, what="a number > 0 per user", ndim=1)
    else:
        vals = real_array(spec, name=name, what="a number > 0 or one per user")
        if vals.shape != (len(comps.users),):
            raise InputError(f"{name} needs one value per user of the data, in the order of its users (or a "
                             "mapping from user id to value)")
    return check_epsilons(vals, name=name)


def record_epsilons(comps: PairwiseComparisons, epsilon=None, user_epsilon=None) -> np.ndarray:
    """Per-record epsilon from a scalar, a per-user mapping, or a per-user budget (see module)."""
    return record_epsilon_levels(comps, epsilon, user_epsilon).column(comps.n_records)


def record_epsilon_levels(comps: PairwiseComparisons, epsilon=None, user_epsilon=None) -> EpsilonLevels:
    """:func:`record_epsilons` as :class:`~privrank.data.tally.EpsilonLevels`: per-user
    epsilons are leveled among the users, not the records."""
    if (epsilon is None) == (user_epsilon is None):
        raise InputError("give exactly one of epsilon (per comparison) or user_epsilon (per user)")
    if epsilon is not None:
        if _is_per_user(epsilon):
            return EpsilonLevels.of_groups(_per_user(comps, epsilon, "epsilon"), comps.user, comps.records_per_user(),
                                           comps.users_grouped)
        return epsilon_levels(check_epsilon(epsilon), comps.n_records)  # one value, no copies
    if _is_per_user(user_epsilon):
        budget = _per_user(comps, user_epsilon, "user_epsilon")
    else:
        if comps.users is None:
            raise InputError("user_epsilon needs user ids in the data")
        budget = np.full(len(comps.users), check_epsilon(user_epsilon, name="user_epsilon"))
    counts = comps.records_per_user()
    return EpsilonLevels.of_groups(budget / np.maximum(counts, 1), comps.user, counts, comps.users_grouped)


def _check_comparisons(comps) -> PairwiseComparisons:
    """``comps`` (or a DataFrame of comparisons) as :class:`PairwiseComparisons`."""
    comps = as_comparisons(comps)
    if not isinstance(comps, PairwiseComparisons):
        raise InputError("the local comparison mechanisms take PairwiseComparisons (privrank.read_comparisons); "
                         "for rankings use ldp_matrix, ldp_kwiksort or ldp_footrule")
    return comps


#: what a local release of comparisons drawn from ratings does not protect
RATINGS_NOTE = ("Only the answers (which of two rated items was rated higher) are randomized: which items "
                "each person rated decides the pairs they report, which the collector sees as they are, and "
                "which items appear in the output at all.")


def local_budget(comps: PairwiseComparisons, epsilon, user_epsilon, max_answers, mechanism: str,
                 note: str) -> tuple[PairwiseComparisons, EpsilonLevels, Guarantee]:
    """The records used, their epsilons (as levels) and the guarantee -- from declared parameters
    only (module docstring)."""
    comps = _check_comparisons(comps)
    if comps.is_randomized:
        raise InputError("these comparisons are already randomized reports; do not randomize twice")
    if comps.pairs_from_ratings:
        note = f"{note} {RATINGS_NOTE}"
        warnings.warn(f"ratings: {RATINGS_NOTE}", PrivacyWarning, stacklevel=2)
    if max_answers is not None:
        if user_epsilon is not None:
            raise InputError("max_answers goes with epsilon per comparison; user_epsilon already bounds each user")
        max_answers = check_whole(max_answers, name="max_answers")
        comps = comps.first_answers(max_answers)
    eps = record_epsilon_levels(comps, epsilon, user_epsilon)
    if user_epsilon is not None:
        budget = float(np.max(_per_user(comps, user_epsilon, "user_epsilon") if _is_per_user(user_epsilon)
                              else user_epsilon))
        return comps, eps, budget_guarantee(mechanism, note, user_epsilon=budget)
    declared = float(np.max(_per_user(comps, epsilon, "epsilon"))) if _is_per_user(epsilon) else float(eps.values[0])
    return comps, eps, budget_guarantee(mechanism, note, epsilon=declared, max_answers=max_answers)


def budget_guarantee(mechanism: str, note: str, *, epsilon: float | None = None, user_epsilon: float | None = None,
                     max_answers: int | None = None) -> Guarantee:
    """The guarantee of reports drawn at ``epsilon`` per comparison (per user ``max_answers`` times
    it, over a declared bound) or under a budget ``user_epsilon`` per user split over each user's
    comparisons: declared numbers only (module docstring)."""
    if user_epsilon is not None:
        return Guarantee(epsilon=user_epsilon, model="local", unit=UNIT_USER, mechanism=mechanism,
                         note=f"{note} Each user's budget is split evenly over that user's comparisons.")
    assert epsilon is not None, "a local budget is per comparison or per user"
    return local_guarantee(epsilon, None if max_answers is None else epsilon * max_answers, mechanism, note=note)


@private_release
def randomized_response(comps: PairwiseComparisons, ys: Any = None, winners: Any = None, *,
                        epsilon: float | ArrayLike | Mapping[Hashable, float] | None = None,
                        user_epsilon: float | ArrayLike | Mapping[Hashable, float] | None = None,
                        max_answers: int | None = None, rng: int | np.random.Generator | None = None,
                        ledger: Ledger | str | os.PathLike[str] | None = None, accountant: Accountant | None = None,
                        new_data: str | None = None) -> PairwiseComparisons:
    """Play the respondents' side: randomize every answer, return reports with their epsilon.

    Each record is kept with probability ``e^eps/(1+e^eps)`` and flipped otherwise (a tie is a
    fair coin first). The result carries an ``epsilon`` column, which is what respondents send;
    :func:`privrank.fit_btl` debiases such reports. ``max_answers``: a declared bound on each
    user's answers (the first ``max_answers`` of each user are kept; the reports carry it, so
    :func:`~privrank.data.io.comparisons_to_csv` writes it). The spend is charged
    (:mod:`privrank.release`) before any answer is randomized.

    Parameters
    ----------
    comps : PairwiseComparisons
        Raw comparisons (or a DataFrame of them); or ``xs``, the first item of each comparison, in evalica's call shape
        ``randomized_response(xs, ys, winners, epsilon=...)`` (:mod:`privrank.pairwise.arena`).
    ys : sequence, optional
        With ``winners``: the second item of each comparison. Without them, the epsilon, as
        ``epsilon`` takes it (``randomized_response(comps, 1.0)``).
    winners : sequence, optional
        Evalica's ``Winner`` of each comparison: 1 (``xs[k]`` won), 2 (``ys[k]`` won) or 0 (a tie).
    epsilon : float, mapping or sequence, optional
        The budget per comparison: one number, or each user's own (a mapping from user id, or one
        per user in the order of the data's users).
    user_epsilon : float, mapping or sequence, optional
        Instead of ``epsilon``: the budget per user, split evenly over that user's comparisons.
    max_answers : int, optional
        Declared bound on each user's answers (the first ``max_answers`` of each user are kept).
    rng : None, int or numpy.random.Generator
        The randomness: None draws fresh OS entropy; a seed is for research runs, not real releases.

    Examples
    --------
    The respondents' side of Xu, Sun, Cheng §2.1: epsilon-local DP per comparison, and per user
    ``max_answers`` times epsilon (basic composition):

    >>> import privrank as pr
    >>> comps = pr.PairwiseComparisons.from_labels(["a", "a", "b", "c"], ["b", "c", "c", "a"], [1, 1, 0, 1],
    ...                                            user=["u1", "u1", "u2", "u2"])
    >>> reports = pr.randomized_response(comps, epsilon=1.0, max_answers=2, rng=0)
    >>> reports.outcome, reports.epsilon, reports.max_answers, reports.seeded
    (array([ 1,  1, -1,  1], dtype=int8), array([1., 1., 1., 1.]), 2, True)
    """
    comps, epsilon = release_arguments(comps, ys, winners, epsilon, "randomized_response")
    comps, levels, g = local_budget(comps, epsilon, user_epsilon, max_answers, "randomized response", TIE_NOTE)
    charge(g)
    reports = randomize_comparisons(comps, levels, rng)
    return reports if max_answers is None else reports.with_quota(int(max_answers))  # a whole number: checked


def _reports(comps, epsilon, user_epsilon, max_answers, rng, mechanism):
    """Randomized reports of raw comparisons, charged as ``mechanism``; reports are passed through."""
    comps = _check_comparisons(comps)
    if comps.is_randomized:
        if epsilon is not None or user_epsilon is not None or max_answers is not None:
            raise InputError("these are randomized reports with their own epsilon column; drop epsilon, "
                             "user_epsilon and max_answers")
        return comps, None
    comps, levels, g = local_budget(comps, epsilon, user_epsilon, max_answers, mechanism, TIE_NOTE)
    charge(g)
    return randomize_comparisons(comps, levels, rng), g


@private_release
def debiased_randomized_response(comps: PairwiseComparisons, ys: Any = None, winners: Any = None, *,
                                 epsilon: float | ArrayLike | Mapping[Hashable, float] | None = None,
                                 user_epsilon: float | ArrayLike | Mapping[Hashable, float] | None = None,
                                 max_answers: int | None = None, weights: str = "uniform",
                                 rng: int | np.random.Generator | None = None,
                                 ledger: Ledger | str | os.PathLike[str] | None = None,
                                 accountant: Accountant | None = None, new_data: str | None = None) -> PairwiseRelease:
    """Debiased randomized response (Xu, Sun, Cheng eq. 1): the paper's local-DP release.

    Raw comparisons are randomized (see :func:`randomized_response`) and debiased; randomized
    reports (data with an epsilon column) are only debiased. Guarantee: eps-local DP per
    comparison, and per user over the declared ``max_answers`` (or ``user_epsilon`` per user).

    Parameters
    ----------
    comps : PairwiseComparisons
        Raw comparisons, or randomized reports (an epsilon column: only debiased), or a DataFrame of
        either; or ``xs``, the first item of each comparison, in evalica's call shape
        ``debiased_randomized_response(xs, ys, winners, epsilon=...)`` (:mod:`privrank.pairwise.arena`).
    ys : sequence, optional
        With ``winners``: the second item of each comparison. Without them, the epsilon, as
        ``epsilon`` takes it (``debiased_randomized_response(comps, 1.0)``).
    winners : sequence, optional
        Evalica's ``Winner`` of each comparison: 1 (``xs[k]`` won), 2 (``ys[k]`` won) or 0 (a tie).
    epsilon : float, mapping or sequence, optional
        The budget per comparison: one number, or each user's own (a mapping from user id, or one
        per user in the order of the data's users).
    user_epsilon : float, mapping or sequence, optional
        Instead of ``epsilon``: the budget per user, split evenly over that user's comparisons.
    max_answers : int, optional
        Declared bound on each user's answers (the first ``max_answers`` of each user are kept).
    weights : {"uniform", "inverse_variance"}
        How debiased reports of different epsilons are averaged
        (:func:`privrank.pairwise.release.record_weights`).
    rng : None, int or numpy.random.Generator
        The randomness: None draws fresh OS entropy; a seed is for research runs, not real releases.

    Examples
    --------
    >>> import privrank as pr
    >>> from privrank.data.datasets import load_nfl
    >>> rel = pr.debiased_randomized_response(load_nfl(2019), epsilon=2.0, rng=0)
    >>> print(rel.guarantee.describe())
    2-DP, local model, protecting one comparison [debiased randomized response]; a user who made k comparisons
    is protected at k x 2 (declare a bound on answers per user, max_answers, to state one per-user number).
    Ties are answered as a fair coin before randomization. SEEDED RUN: reproducible research output, not a
    private release (whoever knows the seed can remove the noise); leave the seed out for a real release.
    >>> pr.fit_btl(rel).top_k(3)
    ['BAL', 'KC', 'GB']
    """
    weights = check_weighting(weights)  # before the charge
    comps, epsilon = release_arguments(comps, ys, winners, epsilon, "debiased_randomized_response")
    reports, g = _reports(comps, epsilon, user_epsilon, max_answers, rng, "debiased randomized response")
    return release_from_reports(reports, weights=weights, guarantee=g)


@private_release
def classic_randomized_response(comps: PairwiseComparisons, ys: Any = None, winners: Any = None, *,
                                epsilon: float | ArrayLike | Mapping[Hashable, float] | None = None,
                                user_epsilon: float | ArrayLike | Mapping[Hashable, float] | None = None,
                                max_answers: int | None = None, rng: int | np.random.Generator | None = None,
                                ledger: Ledger | str | os.PathLike[str] | None = None,
                                accountant: Accountant | None = None, new_data: str | None = None) -> PairwiseRelease:
    """Classic randomized response without debiasing (the paper's biased baseline, §2.2).

    The flipped answers are fitted as if they were true answers, which shrinks BTL scores
    towards 0 (Lemma 1). Same guarantee as debiased randomized response. The release states no
    noise variance, so confidence intervals for the BTL scores refuse it.

    Parameters
    ----------
    comps : PairwiseComparisons
        Raw comparisons, or randomized reports (an epsilon column: only debiased), or a DataFrame of
        either; or ``xs``, the first item of each comparison, in evalica's call shape
        ``classic_randomized_response(xs, ys, winners, epsilon=...)`` (:mod:`privrank.pairwise.arena`).
    ys : sequence, optional
        With ``winners``: the second item of each comparison. Without them, the epsilon, as
        ``epsilon`` takes it (``classic_randomized_response(comps, 1.0)``).
    winners : sequence, optional
        Evalica's ``Winner`` of each comparison: 1 (``xs[k]`` won), 2 (``ys[k]`` won) or 0 (a tie).
    epsilon : float, mapping or sequence, optional
        The budget per comparison: one number, or each user's own (a mapping from user id, or one
        per user in the order of the data's users).
    user_epsilon : float, mapping or sequence, optional
        Instead of ``epsilon``: the budget per user, split evenly over that user's comparisons.
    max_answers : int, optional
        Declared bound on each user's answers (the first ``max_answers`` of each user are kept).
    rng : None, int or numpy.random.Generator
        The randomness: None draws fresh OS entropy; a seed is for research runs, not real releases.

    Examples
    --------
    The flipped answers fitted as they are shrink the scores towards 0 (Xu, Sun, Cheng Lemma 1):

    >>> import numpy as np
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> biased = pr.fit_btl(pr.classic_randomized_response(comps, epsilon=1.0, rng=1))
    >>> debiased = pr.fit_btl(pr.debiased_randomized_response(comps, epsilon=1.0, rng=1))
    >>> np.round(biased.scores, 3), np.round(debiased.scores, 3)
    (array([ 0.436,  0.166, -0.015, -0.114, -0.472]), array([ 1.097,  0.404, -0.033, -0.27 , -1.199]))
    >>> biased.guarantee.describe() == debiased.guarantee.describe().replace("debiased", "classic")
    True
    """
    comps, epsilon = release_arguments(comps, ys, winners, epsilon, "classic_randomized_response")
    reports, g = _reports(comps, epsilon, user_epsilon, max_answers, rng, "classic randomized response")
    return release_from_reports(reports, debiased=False, guarantee=g)


@private_release
def local_laplace(comps: PairwiseComparisons, ys: Any = None, winners: Any = None, *,
                  epsilon: float | ArrayLike | Mapping[Hashable, float] | None = None,
                  user_epsilon: float | ArrayLike | Mapping[Hashable, float] | None = None,
                  max_answers: int | None = None, rng: int | np.random.Generator | None = None,
                  ledger: Ledger | str | os.PathLike[str] | None = None, accountant: Accountant | None = None,
                  new_data: str | None = None) -> PairwiseRelease:
    """Per-comparison Laplace baseline: each answer in {0, 1/2, 1} plus Laplace(1/eps) noise.

    The paper names this baseline without defining it; privrank uses the natural definition:
    the answer has sensitivity 1, so scale ``1/eps`` gives eps-local DP per comparison. The noise
    is exact discrete Laplace on a power-of-two grid (every report a multiple of it), so no
    report reveals its answer through floating-point rounding. The
    noisy value is already unbiased and is used directly in the likelihood. Its variance
    ``P(1-P) + 2/eps^2`` exceeds debiased randomized response's, so it should lose.

    Parameters
    ----------
    comps : PairwiseComparisons
        Raw comparisons (or a DataFrame of them); or ``xs``, the first item of each comparison, in evalica's call shape
        ``local_laplace(xs, ys, winners, epsilon=...)`` (:mod:`privrank.pairwise.arena`).
    ys : sequence, optional
        With ``winners``: the second item of each comparison. Without them, the epsilon, as
        ``epsilon`` takes it (``local_laplace(comps, 1.0)``).
    winners : sequence, optional
        Evalica's ``Winner`` of each comparison: 1 (``xs[k]`` won), 2 (``ys[k]`` won) or 0 (a tie).
    epsilon : float, mapping or sequence, optional
        The budget per comparison: one number, or each user's own (a mapping from user id, or one
        per user in the order of the data's users).
    user_epsilon : float, mapping or sequence, optional
        Instead of ``epsilon``: the budget per user, split evenly over that user's comparisons.
    max_answers : int, optional
        Declared bound on each user's answers (the first ``max_answers`` of each user are kept).
    rng : None, int or numpy.random.Generator
        The randomness: None draws fresh OS entropy; a seed is for research runs, not real releases.

    Examples
    --------
    Xu, Sun, Cheng's local Laplace baseline: epsilon-local DP per comparison, and ``max_answers``
    times that per user:

    >>> import numpy as np
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> rel = pr.local_laplace(comps, epsilon=1.0, max_answers=10, rng=1)
    >>> np.round(pr.fit_btl(rel).scores, 3)
    array([ 1.498,  0.238,  0.05 , -0.667, -1.119])
    >>> rel.guarantee.model, rel.guarantee.epsilon_per_comparison, rel.guarantee.epsilon_per_user
    ('local', 1.0, 10.0)
    """
    comps, epsilon = release_arguments(comps, ys, winners, epsilon, "local_laplace")
    comps, levels, g = local_budget(comps, epsilon, user_epsilon, max_answers, "local Laplace", LAPLACE_NOTE)
    charge(g)
    eps = levels.column(comps.n_records)
    # answers lie on the lattice 1/2: the release is exact discrete Laplace on the grid
    # (mechanisms.noise.laplace_release), never a float sum whose last bits tell the answer
    values, _ = laplace_release(comps.preference_values(), 1.0, eps, rng, lattice=0.5)
    return PairwiseRelease(comps.pair_counts(values), g, laplace_variance_factor(eps), paper_lambda(eps),
                           noise_variance=comps.pair_counts(weights=2.0 / eps ** 2).totals)


LAPLACE_NOTE = "Each answer is released plus Laplace(1/epsilon) noise."


def laplace_variance_factor(eps_records) -> float:
    """``G`` of the Laplace baseline: worst-case record variance ``1/4 + 2/eps^2`` over 1/4, averaged."""
    return float(np.mean(1.0 + 8.0 / np.asarray(eps_records, dtype=float) ** 2))


ADAPTIVE_SCHEMES = ("log_over", "critical", "log_under")


def adaptive_epsilon(scheme: str, m: int, L: ArrayLike, L0: int = 100) -> float | np.ndarray:
    """Per-comparison epsilon that shrinks with the data size (Xu, Sun, Cheng §5.1).

    Schemes are named by rate and normalised so that ``eps(m, L0) = 1``:

    * ``log_over``: eps ~ log(mL)/sqrt(mL)  (errors still decrease with L)
    * ``critical``: eps ~ 1/sqrt(mL)        (errors stay flat: the threshold)
    * ``log_under``: eps ~ 1/(sqrt(mL) log(mL))  (errors increase)

    The paper's narrative numbers them in the opposite order to its displayed formulas
    (its "Scheme 1" in the figures is ``log_under``); privrank uses the rate names only.

    Examples
    --------
    >>> import privrank as pr
    >>> pr.adaptive_epsilon("critical", 10, 100)
    1.0
    >>> [round(pr.adaptive_epsilon(scheme, 10, 400), 4) for scheme in ("log_over", "critical", "log_under")]
    [0.6003, 0.5, 0.4164]
    """
    if not isinstance(scheme, str) or scheme not in ADAPTIVE_SCHEMES:
        raise InputError(f"scheme must be one of {', '.join(ADAPTIVE_SCHEMES)}")
    L = real_array(L, name="L", what="a number of users >= 1 or an array of them")
    if not np.all(np.isfinite(L)) or np.any(L < 1):
        raise InputError("L and L0 must be finite numbers of users >= 1")
    L0 = check_whole(L0, name="L0 (users)")
    m = check_whole(m, name="m (items)", minimum=2)
    base = np.sqrt(L0 / L)
    if scheme == "critical":
        out = base
    elif scheme == "log_over":
        out = np.log(m * L) / np.log(m * L0) * base
    else:
        out = np.log(m * L0) / np.log(m * L) * base
    return float(out) if out.ndim == 0 else out
