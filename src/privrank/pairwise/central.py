"""Central-DP ranking from pairwise comparisons (Cai, Chakraborty, Wang), with baselines.

A trusted curator holds the raw comparisons and releases one ranking. Two private algorithms:

* :func:`perturbed_mle` -- Algorithm 1, eq. (2.2): the penalised maximum-likelihood estimate
  of a paired-comparison model with a random linear term ``w @ theta`` added to the objective
  (objective perturbation); the ranking sorts the estimated scores.
* :func:`noisy_copeland` -- Algorithm 2: every item's number of wins plus Laplace noise; the
  top-k set and the full ranking sort the noisy counts. No parametric model.

Non-private baselines with the same inputs and result type: :func:`penalised_mle` (Algorithm
1 without noise, the ridge MLE of Chen, Fan, Ma and Wang 2019), :func:`copeland` (win counts,
Shah and Wainwright 2017) and :func:`rank_centrality` (the spectral estimator of Negahban, Oh
and Shah 2017).

Privacy units
-------------
Per comparison (``epsilon=``; unit :data:`~privrank.guarantees.UNIT_EDGE`)
    Edge adjacency of Cai et al. §1.4: neighbouring data sets differ in the outcome of one
    comparison, or in one comparison moved to another pair of items with everything else equal.
    The item list and the number of comparisons are the same in neighbouring data sets and are
    treated as public: the item list must be declared (``items_declared``), never read off the
    labels that occur. Ties count half a win for each item. A respondent who answered ``k``
    comparisons is protected at ``k * epsilon`` by group privacy; with a declared
    ``max_answers=K`` (each respondent's first ``K`` answers used) the guarantee states
    ``K * epsilon`` per respondent, and otherwise no number (the busiest respondent's count
    is a fact of the data).
Per respondent (``user_epsilon=``, ``max_answers=m``; unit :data:`~privrank.guarantees.UNIT_USER`)
    Neighbouring data sets differ in the whole set of answers of one respondent, replaced by
    any other set of at most ``m`` answers. ``m`` is a public bound: answers of a respondent
    beyond their first ``m`` (in file order) are dropped before anything is computed. The
    calibration is the edge-level one scaled by ``m`` (noise scale, ridge and count noise);
    Cai et al. notes §7.21 verify that this is sufficient for replacing one respondent. The
    number of respondents is not read off the data: ``gamma="theory"`` needs it declared
    (``respondents=``), and only a declared number is reported.
Counts computed elsewhere (:class:`~privrank.data.pair_counts.PairCounts`, e.g. from a warehouse,
:func:`~privrank.data.pair_count_files.read_pair_counts`)
    Released as the comparisons they count. Per respondent, the bound ``m`` is the one the query
    applied, declared with the counts or as ``max_answers``: the calibration is that of comparisons
    cut to ``m`` per respondent, and the note says that privrank could not check the cut.

Calibration (Proposition 2.1 and §3.1, with the notes' corrections)
    Algorithm 1: ``w_i`` i.i.d. Laplace with scale ``lambda = 8 kappa_1 m / epsilon`` and ridge
    ``gamma >= 4 kappa_2 m / epsilon`` (``m = 1`` per comparison), with ``kappa_1, kappa_2`` of
    the link (:mod:`privrank.pairwise.links`); ``kappa_2`` is the upper curvature bound
    ``sup (-log F)''``, which is all the proof uses (1/4 for the logistic link, not the 56.6
    that (A2) read literally would demand). Algorithm 2: win counts have l1 sensitivity 2 per
    comparison, so Laplace scale ``2 m / epsilon``. The real-data calibration of the authors'
    code (ridge ``2 sqrt(n p log n / L)``, counts with scale ``1/epsilon``) is not epsilon-DP
    at ``epsilon <= 1`` (notes §7.6-7.7) and is not offered.
"""
from __future__ import annotations

import math
import os
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._rng import as_generator
from ..data.comparison_files import as_comparisons
from ..data.comparisons import PairwiseComparisons
from ..data.pair_count_files import declared_bound, declared_note
from ..data.pair_counts import PairCounts
from ..data.tally import ComparisonTally
from ..data.tabular import TableLike
from ..errors import InputError, check_epsilon, check_flag, check_positive, check_whole
from ..guarantees import UNIT_EDGE, UNIT_USER, Guarantee
from ..release import charge, private_release
from ..mechanisms.noise import discrete_laplace, laplace_cells, release_grid
from .arena import comparisons_or_arena, release_arguments
from .btl import ScoredRanking, btl_gradient, btl_hessian, newton_btl
from .links import Link, as_link

if TYPE_CHECKING:
    from ..guarantees import Accountant
    from ..ledger import Ledger

THEORY_RIDGE_CONSTANT = 2.0
#: smallest ridge, relative to the mean number of comparisons per item: below it the ridge is lost in
#: the rounding of the Hessian's diagonal (curvatures up to a quarter per comparison), does not
#: regularise, and the Newton system is singular in floating point
MIN_RELATIVE_RIDGE = 1e-12
#: released scores of objective perturbation are multiples of this power of two (far above the
#: solver's tolerance): the low-order bits of the solver's arithmetic are never released
THETA_GRID = 2.0 ** -20


@dataclass(frozen=True, repr=False)
class CentralRanking(ScoredRanking):
    """Scores and ranking from a central-DP algorithm or one of its baselines.

    Attributes
    ----------
    scores, items, guarantee, tie_break
        See :class:`~privrank.pairwise.btl.ScoredRanking`. Scores are estimated log-strengths
        (MLE, Rank Centrality) or (noisy) win counts (Copeland).
    method : str
    params : dict
        The public calibration: epsilon, noise scale, ridge, link constants, and the public size
        of the design (``n_comparisons`` per comparison, ``n_respondents`` per respondent). Nothing
        in it is computed from the comparisons beyond what the guarantee treats as public.
    diagnostics : dict or None
        Solver diagnostics computed exactly from the raw data; only present when requested,
        and then the guarantee says the result is not private.

    Examples
    --------
    Noisy Copeland counts (Cai, Chakraborty, Wang, Algorithm 2) of simulated BTL comparisons
    (5 items, every pair compared 200 times, true order 0 > 1 > 2 > 3 > 4):

    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> ranking = pr.noisy_copeland(comps, epsilon=1.0, rng=0)
    >>> ranking.method, ranking.order
    ('noisy Copeland', array([0, 1, 2, 3, 4]))
    >>> ranking.params["noise_scale"], ranking.params["n_comparisons"]
    (2.0, 2000.0)
    >>> ranking.guarantee.private, ranking.guarantee.model
    (True, 'central')
    """

    method: str
    params: dict
    diagnostics: dict | None = None


# ---------------------------------------------------------------------------------- calibration

def objective_perturbation_calibration(epsilon: float, link="logistic", answers: int = 1) -> tuple[float, float]:
    """Noise scale and smallest ridge for eps-DP objective perturbation (Cai et al. Prop. 2.1).

    Returns ``(lambda, gamma_min) = (8 kappa_1 answers / eps, 4 kappa_2 answers / eps)``:
    with ``w_i`` i.i.d. Laplace(``lambda``) and any ``gamma >= gamma_min`` the minimiser of
    eq. (2.2) is eps-DP for one comparison (``answers = 1``) or for one respondent's set of at
    most ``answers`` comparisons. The log density ratio of neighbouring data sets is at most
    ``4 kappa_1 answers / lambda + log(1 + 2 kappa_2 answers / gamma) <= eps/2 + eps/2``.
    """
    eps = check_epsilon(epsilon)
    link = as_link(link)
    return 8.0 * link.kappa_1 * answers / eps, 4.0 * link.kappa_2 * answers / eps


def cells_noise_scale(scale: float, epsilon: float, n_items: int) -> float:
    """The scale of objective perturbation's noise vector drawn by :func:`~privrank.mechanisms.noise.laplace_cells`.

    Its density is piecewise constant on cells of width ``g`` (at most ``release_grid(2 scale)``):
    shifting it by ``s`` changes it by at most ``exp((|s| + g) / scale)`` per coordinate, so the
    paper's scale (:func:`objective_perturbation_calibration`, half of epsilon for the shift)
    grows by ``2 n_items g / epsilon`` to keep that half: a relative cost of about
    ``n_items 2^-19 / epsilon``.
    """
    return scale + 2.0 * n_items * release_grid(2.0 * scale) / epsilon


def copeland_noise_scale(epsilon: float, answers: int = 1) -> float:
    """Laplace scale ``2 answers / eps`` for win counts (l1 sensitivity 2 per comparison, §3.1)."""
    return 2.0 * answers / check_epsilon(epsilon)


def copeland_noise(scale: float, size, rng=None) -> np.ndarray:
    """Exact Laplace noise of scale ``scale`` on the grid of half-integers that win counts live on.

    A tie is half a win, so doubled win counts are integers with twice the sensitivity:
    discrete Laplace of scale ``2 scale`` on them, halved, is exactly as private as continuous
    Laplace of scale ``scale`` on the counts, and has no floating-point side channel
    (:func:`privrank.mechanisms.noise.discrete_laplace`).
    """
    return discrete_laplace(2.0 * scale, size, rng) / 2.0


def copeland_noise_variance(scale: float) -> float:
    """Variance of :func:`copeland_noise`: ``q / (2 (1 - q)^2)`` with ``q = exp(-1 / (2 scale))``.

    Slightly below the continuous ``2 scale^2`` (by about 1/24 of a squared win).
    """
    q = math.exp(-1.0 / (2.0 * scale))
    return q / (2.0 * (1.0 - q) ** 2)


def theory_ridge(n_items: int, n_comparisons: float) -> float:
    """The utility ridge of Theorem 2.2, ``2 sqrt(d log n)`` with ``d = 2 n_comparisons / n``.

    ``d`` is the mean number of comparisons per item; with one comparison per pair of an
    Erdos-Renyi(p) design it is ``p (n - 1)``, close to the paper's ``n p``. The constant 2 is
    the authors' code's (the paper leaves it open). Counting every comparison (not every pair)
    keeps the ridge of the same order as the Fisher information when pairs are compared many
    times.
    """
    d = 2.0 * float(n_comparisons) / n_items
    return THEORY_RIDGE_CONSTANT * math.sqrt(d * math.log(n_items))


# ---------------------------------------------------------------------------------- inputs

def _check_counts(pc: PairCounts, *, private: bool = False) -> PairCounts:
    """Counts of raw comparisons; for a private mechanism, counts of single unweighted comparisons."""
    if pc.n_pairs == 0:
        raise InputError("no comparisons between distinct items")
    if pc.items and len(pc.items) != pc.n_items:
        raise InputError(f"{len(pc.items)} item labels for counts of {pc.n_items} items")
    if pc.i.min() < 0 or pc.j.max() >= pc.n_items or np.any(pc.i >= pc.j):
        raise InputError(f"every pair of the counts must name two items i < j among 0 .. {pc.n_items - 1}")
    if not (np.all(np.isfinite(pc.totals)) and np.all(np.isfinite(pc.wins))):
        raise InputError("the counts must be finite numbers")
    if np.any(pc.wins < 0) or np.any(pc.wins > pc.totals):
        raise InputError("wins must lie between 0 and the number of comparisons of each pair")
    if private and not (np.all(pc.totals == np.round(pc.totals)) and np.all(2 * pc.wins == np.round(2 * pc.wins))):
        raise InputError("central mechanisms need counts of single comparisons: whole totals and wins "
                         "in halves (a tie is half a win each); weighted or debiased counts are not "
                         "covered by the guarantee")
    return pc


def _raw(data, *, private: bool = False) -> PairwiseComparisons | PairCounts | ComparisonTally:
    data = as_comparisons(data)
    if isinstance(data, (PairwiseComparisons, ComparisonTally)):
        if data.is_randomized:
            raise InputError("these are randomized reports; central mechanisms take the raw comparisons "
                             "held by a trusted curator")
    elif not isinstance(data, PairCounts):
        raise InputError("expected PairwiseComparisons, PairCounts or a ComparisonTally of raw comparisons")
    if private and not data.items_declared:  # counts keep the mark of the comparisons they came from
        raise InputError("a central release needs the public item list: which items occur is a fact of "
                         "the data (one person's only comparison naming an item would decide whether it "
                         "appears). Give items= (read_comparisons(path or DataFrame, items=...); CLI: --items FILE)")
    return data


def _as_counts(data) -> PairCounts:
    data = _raw(data)
    return data if isinstance(data, PairCounts) else data.pair_counts()


@dataclass(frozen=True)
class _Budget:
    """Resolved privacy budget: epsilon, the answers per unit ``m`` and the guarantee's unit."""

    epsilon: float
    answers: int
    unit: str
    per_user_epsilon: float | None
    note: str
    comparisons: float | None = None  # per comparison: the number given, before any max_answers cut

    @property
    def max_answers(self) -> int | None:
        return self.answers if self.unit == UNIT_USER else None

    def public_size(self, respondents: int | None) -> dict:
        """The design size the guarantee treats as public: the comparisons given, or the declared
        respondents. Never the number kept by a max_answers cut: that is a statistic of how many
        answers each respondent gave."""
        if self.unit == UNIT_USER:
            return {} if respondents is None else {"n_respondents": respondents}
        return {"n_comparisons": self.comparisons}


def _given(data) -> float:
    """The comparisons given, before any per-respondent cut (a tally counted under one knows them)."""
    if isinstance(data, PairCounts):
        return float(data.totals.sum())
    return data.n_given if isinstance(data, ComparisonTally) else data.n_records


def _budget(data, epsilon, user_epsilon, max_answers):
    """Counts, budget and number of dropped answers for ``epsilon`` or ``user_epsilon``.

    Every number of the budget is declared: with ``epsilon``, a per-user statement needs the
    declared ``max_answers`` (each user's first answers are used, and group privacy gives
    ``max_answers * epsilon``); the busiest user's count is never used. Counts have no
    respondent ids: their bound is the one declared for them
    (:func:`~privrank.data.pair_count_files.declared_bound`), applied where they were computed,
    and the guarantee's note says so.
    """
    if (epsilon is None) == (user_epsilon is None):
        raise InputError("give exactly one of epsilon (per comparison) or user_epsilon "
                         "(per respondent, with max_answers)")
    data = _raw(data, private=True)
    counted = isinstance(data, PairCounts)
    if epsilon is not None:
        eps = check_epsilon(epsilon)
        per_user = None
        given = float(_given(data))
        note = ("Edge adjacency (Cai et al.): one comparison's outcome changed, or one comparison "
                "moved to another pair; the item list and the number of comparisons are public.")
        bound = declared_bound(data, max_answers) if counted else max_answers
        if bound is not None:
            bound = check_whole(bound, name="max_answers")
            data = data if counted else data.first_answers(bound)
            per_user = eps * bound
            note += (f" Per respondent, by group privacy over their first {bound} answers: what "
                     "they answered is protected, how many questions they answered is not.")
            note += declared_note(bound) if counted else ""
        counts = _as_counts(data)
        return _check_counts(counts, private=True), _Budget(eps, 1, UNIT_EDGE, per_user, note, given), 0
    eps = check_epsilon(user_epsilon, name="user_epsilon")
    bound = declared_bound(data, max_answers) if counted else max_answers
    if bound is None and counted:
        raise InputError("a per-respondent budget on counts needs the bound the query that computed them applied "
                         "(each respondent's first K comparisons kept), declared: read_pair_counts(..., "
                         "max_answers=K) or max_answers=K (CLI: --max-answers K)")
    if bound is None:
        raise InputError("a per-respondent budget needs max_answers: a public bound on the number of "
                         "answers per respondent (answers beyond it are dropped)")
    m = check_whole(bound, name="max_answers")
    kept = data if counted else data.first_answers(m)
    dropped = 0 if counted else _given(data) - kept.n_records
    note = (f"One respondent's answers replaced by any other set of at most {m}"
            + ("" if counted else f" (each respondent's first {m} answers are used)")
            + "; the item list and the list of respondents are public." + (declared_note(m) if counted else ""))
    return _check_counts(_as_counts(kept), private=True), _Budget(eps, m, UNIT_USER, None, note), dropped


def _items(pc: PairCounts) -> tuple:
    return pc.items if pc.items else tuple(range(pc.n_items))


def _gamma(gamma, pc: PairCounts, budget: _Budget | None, link: Link, respondents: int | None) -> float:
    """Resolve the ridge: a number, or "theory" (Thm 2.2's rule floored at the privacy minimum).

    Per respondent, "theory" reads the declared number of respondents (the respondents present
    are a fact of the data: one respondent more or less would move the ridge).
    """
    floor = 0.0 if budget is None else objective_perturbation_calibration(budget.epsilon, link, budget.answers)[1]
    public_total: float | None
    if budget is None:
        public_total = float(pc.totals.sum())
    elif budget.unit == UNIT_USER:
        public_total = None if respondents is None else float(budget.answers * respondents)
    else:
        public_total = budget.comparisons
    if isinstance(gamma, str):
        if gamma != "theory":
            raise InputError("gamma must be a positive number or 'theory'")
        if public_total is None:
            raise InputError("gamma='theory' per respondent needs the public number of respondents "
                             "(respondents=; CLI: --respondents N), or give gamma as a number")
        return max(theory_ridge(pc.n_items, public_total), floor)
    g = check_positive(gamma, name="gamma")
    if public_total is not None and g < MIN_RELATIVE_RIDGE * 2.0 * public_total / pc.n_items:
        raise InputError(f"gamma = {g:g} is too small to regularise: below {MIN_RELATIVE_RIDGE:g} times the mean "
                         "number of comparisons per item it is lost in rounding and the Newton system is singular; "
                         "use a larger gamma or 'theory'")
    if g < floor:
        raise InputError(f"gamma = {g:g} is below {floor:.4g} = 4 kappa_2 m / epsilon, the smallest ridge "
                         "for which objective perturbation is private (Cai et al. Prop. 2.1); "
                         "use a larger gamma or 'theory'")
    return g


# ---------------------------------------------------------------------------------- Algorithm 1

def _solve(pc: PairCounts, link: Link, gamma: float, w, centre: bool, diagnostics: bool):
    """Newton's solution of eq. (2.2), and its diagnostics (computed from the raw data) if asked."""
    try:
        theta, it, gnorm, ok, solver = newton_btl(pc, gamma / 2.0, link=link, linear=w)
    except np.linalg.LinAlgError:
        raise InputError(f"gamma = {gamma:g} is too small for this comparison design: the Newton system is singular "
                         "in floating point; use a larger gamma or 'theory'") from None
    diag = None
    if diagnostics:
        diag = {"n_iter": it, "gradient_norm": gnorm, "converged": ok, "solver": solver,
                "n_components": pc.n_components()}
    return (theta - theta.mean() if centre else theta), diag


@private_release
def perturbed_mle(data: PairwiseComparisons | PairCounts | TableLike, ys: Any = None, winners: Any = None, *,
                  epsilon: float | None = None, user_epsilon: float | None = None, max_answers: int | None = None,
                  respondents: int | None = None, items: Sequence[Hashable] | None = None,
                  link: str | Link = "logistic", gamma: float | str = "theory", centre: bool = True,
                  diagnostics: bool = False, rng: int | np.random.Generator | None = None,
                  ledger: Ledger | str | os.PathLike[str] | None = None, accountant: Accountant | None = None,
                  new_data: str | None = None) -> CentralRanking:
    """Objective-perturbed penalised MLE (Cai, Chakraborty, Wang, Algorithm 1, eq. 2.2).

    Minimises ``L(theta) + gamma/2 ||theta||^2 + w @ theta`` where ``L`` is the negative
    log-likelihood (2.1) of the link over all comparisons (a pair compared several times
    contributes each comparison; a tie is half a win each) and ``w`` has i.i.d. Laplace entries
    of scale ``lambda``. ``w`` is drawn once per call and held fixed while Newton's method
    (:func:`privrank.pairwise.btl.newton_btl`, started at 0, to gradient norm 1e-9) solves the
    strongly convex problem.

    Guarantee: central, pure epsilon-DP (delta = 0) for one comparison under edge adjacency
    (``epsilon=``), or for one respondent's answers (``user_epsilon=``, ``max_answers=``); see
    the module docstring. ``lambda`` and the smallest admissible ``gamma`` come from
    :func:`objective_perturbation_calibration`. The guarantee covers the exact minimiser; the
    solver reaches it to floating-point accuracy.

    Parameters
    ----------
    data : PairwiseComparisons or PairCounts
        Raw comparisons, their tally (:func:`privrank.sufficient_statistics`, with ``max_answers`` for a bound:
        it counts each respondent's first answers) or their counts (per respondent with the bound declared), or ``xs``.
    ys : sequence or float, optional
        With ``winners``: the second item of each comparison, ``data`` holding the first (evalica's
        call shape ``perturbed_mle(xs, ys, winners, epsilon=..., items=...)``, :mod:`privrank.pairwise.arena`).
        Without them, the epsilon (``perturbed_mle(data, 1.0)``).
    winners : sequence, optional
        Evalica's ``Winner`` of each comparison: 1 (``xs[k]`` won), 2 (``ys[k]`` won) or 0 (a tie).
    epsilon, user_epsilon : float
        Exactly one: the budget per comparison or per respondent.
    max_answers : int
        Public bound on answers per respondent (extra answers dropped): required with
        ``user_epsilon``; with ``epsilon`` it states the per-respondent epsilon by group privacy.
    respondents : int, optional
        Per respondent: the public number of respondents, which ``gamma="theory"`` reads.
    items : sequence, optional
        With ``xs, ys, winners``: the public item list, which a central release needs declared.
    link : {"logistic", "probit"} or Link
        ``"logistic"`` is BTL; ``"probit"`` is Thurstone with a bounded score (see
        :class:`~privrank.pairwise.links.ProbitLink`), which needs about 4.2 times more noise.
    gamma : float or "theory"
        Ridge. ``"theory"`` is ``max(2 sqrt(d log n), 4 kappa_2 m / eps)`` with ``d`` the mean
        number of comparisons per item (:func:`theory_ridge`; per respondent, ``d`` uses
        ``m`` times the number of respondents, which the guarantee treats as public). A number
        below the privacy minimum raises.
    centre : bool
        Return ``theta - mean(theta)`` (post-processing; the paper's estimator is not centred).
    diagnostics : bool
        Attach solver diagnostics (computed exactly from the raw data) and mark the result
        not private.
    rng : None, int or Generator
        Source of the noise; seeded runs are for research and tests, not for real releases.

    Examples
    --------
    >>> import numpy as np
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> est = pr.perturbed_mle(comps, epsilon=1.0, rng=0)
    >>> np.round(est.scores, 3), est.order
    (array([ 0.762,  0.33 , -0.031, -0.389, -0.673]), array([0, 1, 2, 3, 4]))
    >>> round(est.params["noise_scale"], 3), round(est.params["gamma"], 3)
    (8.0, 71.765)
    >>> print(est.guarantee.describe())
    1-DP, central model, protecting one comparison (one outcome on one edge of the comparison graph)
    [objective-perturbed MLE (logistic link)]; a user who made k comparisons is protected at k x 1 (declare a
    bound on answers per user, max_answers, to state one per-user number). Edge adjacency (Cai et al.): one
    comparison's outcome changed, or one comparison moved to another pair; the item list and the number of
    comparisons are public. SEEDED RUN: reproducible research output, not a private release (whoever knows the
    seed can remove the noise); leave the seed out for a real release.
    """
    link = as_link(link)
    centre, diagnostics = check_flag(centre, name="centre"), check_flag(diagnostics, name="diagnostics")
    data, epsilon = release_arguments(data, ys, winners, epsilon, "perturbed_mle", items=items)
    pc, budget, dropped = _budget(data, epsilon, user_epsilon, max_answers)
    respondents = _respondents(respondents, budget)
    g = _gamma(gamma, pc, budget, link, respondents)
    scale, _ = objective_perturbation_calibration(budget.epsilon, link, budget.answers)
    guarantee = Guarantee(
        epsilon=budget.epsilon, model="central", unit=budget.unit,
        mechanism=f"objective-perturbed MLE ({link.name} link)",
        epsilon_per_comparison=budget.epsilon if budget.answers == 1 else None,
        epsilon_per_user=budget.per_user_epsilon, note=budget.note)
    if diagnostics:
        guarantee = guarantee.without_privacy("The result carries solver diagnostics computed exactly "
                                              "from the raw comparisons.")
    charge(guarantee)
    scale = cells_noise_scale(scale, budget.epsilon, pc.n_items)
    w = laplace_cells(scale, pc.n_items, rng)
    theta, diag = _solve(pc, link, g, w, centre, diagnostics)
    theta = np.round(theta / THETA_GRID) * THETA_GRID  # post-processing: no solver round-off is released
    params = {"epsilon": budget.epsilon, "noise_scale": scale, "gamma": g, "link": link.name,
              "kappa_1": link.kappa_1, "kappa_2": link.kappa_2, "centred": centre,
              "max_answers": budget.max_answers, **budget.public_size(respondents)}
    if diagnostics:
        diag["answers_dropped"] = dropped
    return CentralRanking(theta, _items(pc), guarantee, method="perturbed MLE", params=params, diagnostics=diag)


def penalised_mle(data: PairwiseComparisons | PairCounts | TableLike | Sequence[Hashable],
                  ys: Sequence[Hashable] | None = None, winners: Sequence[Any] | None = None, *,
                  link: str | Link = "logistic", gamma: float | str = "theory", centre: bool = True) -> CentralRanking:
    """The ridge MLE of Algorithm 1 without noise (``lambda = 0``): not private.

    ``argmin L(theta) + gamma/2 ||theta||^2``, the estimator of Chen, Fan, Ma and Wang (2019) that
    Cai et al. perturb; ``gamma="theory"`` is ``2 sqrt(d log n)`` (:func:`theory_ridge`). With the
    same ``gamma`` it is the limit of :func:`perturbed_mle` as epsilon grows. Carries solver
    diagnostics. ``penalised_mle(xs, ys, winners)`` takes evalica's call shape
    (:mod:`privrank.pairwise.arena`). A ``gamma`` below ``1e-12`` times the mean number of
    comparisons per item does not regularise and is refused.

    Examples
    --------
    >>> import numpy as np
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> mle = pr.penalised_mle(comps)
    >>> np.round(mle.scores, 3), round(mle.params["gamma"], 3)
    (array([ 0.752,  0.344, -0.027, -0.372, -0.696]), 71.765)
    >>> mle.guarantee.private
    False
    """
    link = as_link(link)
    centre = check_flag(centre, name="centre")
    pc = _check_counts(_as_counts(comparisons_or_arena(data, ys, winners, "penalised_mle")))
    g = _gamma(gamma, pc, None, link, None)
    theta, diag = _solve(pc, link, g, None, centre, True)
    return CentralRanking(theta, _items(pc), Guarantee.non_private(f"penalised MLE ({link.name} link)"),
                          method="penalised MLE", params={"gamma": g, "link": link.name, "centred": centre,
                                                          "n_comparisons": float(pc.totals.sum())},
                          diagnostics=diag)


def perturbed_mle_log_density(theta, counts: PairCounts, *, noise_scale: float, gamma: float,
                              link="logistic") -> float:
    """Log density of the (uncentred) perturbed MLE at ``theta`` given the data's counts.

    The solution of eq. (2.2) is ``theta`` exactly when ``w = -grad R(theta)``, with
    ``R = L + gamma/2 ||theta||^2``; ``theta -> -grad R(theta)`` is a bijection of R^n because
    ``R`` is gamma-strongly convex, so by change of variables

        log p(theta | D) = sum_i log Laplace(-dR/dtheta_i; noise_scale) + log det Hess R(theta).

    The difference of two such values for neighbouring data sets is the exact privacy loss at
    ``theta`` (Cai et al. notes §8.2), which the privacy tests bound by epsilon.
    """
    link = as_link(link)
    t = np.asarray(theta, dtype=float)
    grad = btl_gradient(t, counts, gamma / 2.0, link)
    _, logdet = np.linalg.slogdet(btl_hessian(t, counts, gamma / 2.0, link))
    return float(-np.abs(grad).sum() / noise_scale - t.size * math.log(2.0 * noise_scale) + logdet)


# ---------------------------------------------------------------------------------- Algorithm 2

def _respondents(respondents, budget: _Budget) -> int | None:
    """The declared number of respondents (per-respondent budgets only)."""
    if respondents is None:
        return None
    if budget.unit != UNIT_USER:
        raise InputError("respondents= belongs to a per-respondent budget (user_epsilon)")
    return check_whole(respondents, name="respondents")


@private_release
def noisy_copeland(data: PairwiseComparisons | PairCounts | TableLike, ys: Any = None, winners: Any = None, *,
                   epsilon: float | None = None, user_epsilon: float | None = None, max_answers: int | None = None,
                   respondents: int | None = None, items: Sequence[Hashable] | None = None,
                   rng: int | np.random.Generator | None = None, ledger: Ledger | str | os.PathLike[str] | None = None,
                   accountant: Accountant | None = None, new_data: str | None = None) -> CentralRanking:
    """Noisy Copeland counts (Cai, Chakraborty, Wang, Algorithm 2).

    Every item's number of wins ``N_i`` (a tie is half a win each) plus i.i.d. Laplace noise of
    scale ``2 m / epsilon`` (:func:`copeland_noise_scale`), ``m`` the answers one protected unit
    gives (1 per comparison; the ``max_answers`` bound per respondent), not the number of items;
    the ranking sorts the noisy counts and ``.top_k(k)`` is the estimated top-k set of
    Algorithm 2. The noisy counts are the release; every ranking and top-k set is
    post-processing.

    Guarantee: central, pure epsilon-DP for one comparison under edge adjacency (the count
    vector moves by at most 2 in l1 norm when one outcome flips or one comparison moves), or
    for one respondent's answers with ``user_epsilon`` and ``max_answers = m`` (at most ``2m``).
    The noise is the exact discrete Laplace on the half-integer grid of the counts
    (:func:`copeland_noise`; integer arithmetic, no floating-point side channel), so noisy
    counts can tie: equal noisy counts are ordered uniformly at random (post-processing).
    ``params["noise_variance"]`` is its exact variance.

    Parameters
    ----------
    data : PairwiseComparisons or PairCounts
        Raw comparisons, their tally (:func:`privrank.sufficient_statistics`, with ``max_answers`` for a bound:
        it counts each respondent's first answers) or their counts (per respondent with the bound declared), or ``xs``.
    ys : sequence or float, optional
        With ``winners``: the second item of each comparison, ``data`` holding the first (evalica's
        call shape ``noisy_copeland(xs, ys, winners, epsilon=..., items=...)``, :mod:`privrank.pairwise.arena`).
        Without them, the epsilon (``noisy_copeland(data, 1.0)``).
    winners : sequence, optional
        Evalica's ``Winner`` of each comparison: 1 (``xs[k]`` won), 2 (``ys[k]`` won) or 0 (a tie).
    epsilon, user_epsilon : float
        Exactly one: the budget per comparison or per respondent.
    max_answers : int
        Public bound on answers per respondent: required with ``user_epsilon``.
    respondents : int, optional
        Per respondent: the public number of respondents, stated in ``params``.
    items : sequence, optional
        With ``xs, ys, winners``: the public item list, which a central release needs declared.
    rng : None, int or Generator
        Source of the noise and of the order of tied counts; seeded runs are for research and tests.

    Examples
    --------
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> ranking = pr.noisy_copeland(comps, epsilon=1.0, rng=0)
    >>> ranking.scores, ranking.top_k(2)
    (array([629. , 503.5, 392.5, 286.5, 199.5]), [0, 1])
    >>> print(ranking.guarantee.describe())
    1-DP, central model, protecting one comparison (one outcome on one edge of the comparison graph) [noisy
    Copeland counts]; a user who made k comparisons is protected at k x 1 (declare a bound on answers per
    user, max_answers, to state one per-user number). Edge adjacency (Cai et al.): one comparison's outcome
    changed, or one comparison moved to another pair; the item list and the number of comparisons are public.
    SEEDED RUN: reproducible research output, not a private release (whoever knows the seed can remove the
    noise); leave the seed out for a real release.
    """
    data, epsilon = release_arguments(data, ys, winners, epsilon, "noisy_copeland", items=items)
    pc, budget, _ = _budget(data, epsilon, user_epsilon, max_answers)
    respondents = _respondents(respondents, budget)
    scale = copeland_noise_scale(budget.epsilon, budget.answers)
    wins = pc.borda()
    if np.any(2.0 * wins != np.rint(2.0 * wins)):
        raise InputError("noisy Copeland counts need whole comparisons (every win count a multiple of 1/2)")
    guarantee = Guarantee(
        epsilon=budget.epsilon, model="central", unit=budget.unit, mechanism="noisy Copeland counts",
        epsilon_per_comparison=budget.epsilon if budget.answers == 1 else None,
        epsilon_per_user=budget.per_user_epsilon, note=budget.note)
    charge(guarantee)
    gen = as_generator(rng)
    noisy = wins + copeland_noise(scale, pc.n_items, gen)
    params = {"epsilon": budget.epsilon, "noise_scale": scale, "noise_variance": copeland_noise_variance(scale),
              "max_answers": budget.max_answers, **budget.public_size(respondents)}
    return CentralRanking(noisy, _items(pc), guarantee, tie_break=gen.permutation(pc.n_items),
                          method="noisy Copeland", params=params)


def copeland(data: PairwiseComparisons | PairCounts | TableLike | Sequence[Hashable],
             ys: Sequence[Hashable] | None = None, winners: Sequence[Any] | None = None, *,
             rng: int | np.random.Generator | None = None) -> CentralRanking:
    """Copeland win counts without noise (Shah and Wainwright 2017): not private.

    Items are ranked by their number of wins (a tie is half a win each); equal counts are
    ordered uniformly at random from ``rng`` (Cai et al. notes §7.12: a fixed order would favour
    low item indices). ``copeland(xs, ys, winners)`` takes evalica's call shape
    (:mod:`privrank.pairwise.arena`).

    Examples
    --------
    The 2019 NFL season (shipped with privrank); equal win counts are ordered at random from ``rng``:

    >>> import privrank as pr
    >>> from privrank.data.datasets import load_nfl
    >>> wins = pr.copeland(load_nfl(2019), rng=0)
    >>> wins.table(4)
    [{'rank': 1, 'item': 'KC', 'score': 15.0}, {'rank': 2, 'item': 'SF', 'score': 15.0}, {'rank': 3, 'item':
    'BAL', 'score': 14.0}, {'rank': 4, 'item': 'GB', 'score': 14.0}]
    >>> wins.guarantee.private
    False
    """
    pc = _check_counts(_as_counts(comparisons_or_arena(data, ys, winners, "copeland")))
    return CentralRanking(pc.borda(), _items(pc), Guarantee.non_private("Copeland counts"),
                          tie_break=as_generator(rng).permutation(pc.n_items), method="Copeland",
                          params={"n_comparisons": float(pc.totals.sum())})
