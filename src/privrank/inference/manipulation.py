"""The manipulation margin of a ranking of randomized reports (post-processing only).

Local differential privacy cannot stop manipulation: a fake respondent sends unrandomized
reports, and after debiasing each weighs ``(e^eps + 1)/(e^eps - 1)`` times an honest answer's
signal. :func:`manipulation_margin` states how many such fakes it takes to change the result.
It reads the released reports only (never raw data) and costs no privacy.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np

from ..data.comparisons import PairwiseComparisons
from ..data.tally import ComparisonTally
from ..errors import InputError, UtilityWarning
from ..pairwise.btl import fit_btl
from ..pairwise.release import WEIGHTS, release_from_reports

#: the default cap of the search: no change up to this many fakes is reported as "more than" it
MAX_FAKES = 10 ** 6


@dataclass(frozen=True)
class Margin:
    """The fakes it takes to lift ``item`` above ``above`` (the item at rank ``rank``).

    ``fakes`` is the smallest number that does, or, when ``more_than`` is True, the cap of the
    search: no number up to it does.
    """

    rank: int
    above: object
    item: object
    fakes: int
    more_than: bool = False

    @property
    def shown(self):
        """``fakes``, or ``">N"`` when the search found no change up to ``N``."""
        return f">{self.fakes}" if self.more_than else self.fakes

    def to_dict(self) -> dict:
        return {"rank": self.rank, "above": self.above, "item": self.item, "fakes": self.fakes,
                "more_than": self.more_than}


@dataclass(frozen=True)
class ManipulationMargin:
    """Result of :func:`manipulation_margin`.

    Attributes
    ----------
    top : Margin
        The margin of the top item: the fewest fakes, all promoting ``top.item`` (the worst case
        over the other items), that change the top item of the refitted ranking.
    pairs : tuple of Margin or None
        On request, per adjacent pair (ranks r, r + 1): the fewest fakes promoting the item at
        r + 1 that put it above the item at r.
    max_answers : int or None
        The declared quota of reports per respondent; None: none declared, the margin counts
        fake *reports* (each fake sends one).
    reports_per_fake : int
        ``min(max_answers or 1, m - 1)``.
    epsilon : float
        The epsilon the fakes' reports carry (one of the honest reports' epsilons).

    Examples
    --------
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> reports = pr.randomized_response(comps, epsilon=1.0, max_answers=10, rng=1)
    >>> margin = pr.manipulation_margin(reports)
    >>> margin.max_answers, margin.reports_per_fake, margin.top.item
    (10, 4, 1)
    >>> print(margin.describe())
    33 fake respondents promoting 1 change the top item; each sending 4 unrandomized reports (the quota of 10
    per respondent); local DP does not prevent such manipulation
    """

    top: Margin
    pairs: tuple | None
    max_answers: int | None
    reports_per_fake: int
    epsilon: float

    @property
    def unit(self) -> str:
        return "fake report" if self.max_answers is None else "fake respondent"

    def describe(self) -> str:
        """The margin of the top item in one sentence."""
        n = self.top.fakes
        count = f"more than {n:,} {self.unit}s" if self.top.more_than else \
            f"{n:,} {self.unit}{'' if n == 1 else 's'}"
        quota = ("no quota of answers per respondent was declared, so it counts fake reports (one each)"
                 if self.max_answers is None else f"each sending {self.reports_per_fake} unrandomized report"
                 f"{'' if self.reports_per_fake == 1 else 's'} (the quota of {self.max_answers} per respondent)")
        change = "do not change" if self.top.more_than else "changes" if n == 1 else "change"
        return (f"{count} promoting {self.top.item} {change} the top item; {quota}; local DP does not "
                "prevent such manipulation")

    def to_dict(self) -> dict:
        doc = {"fakes": self.top.fakes, "more_than": self.top.more_than, "item": self.top.item,
               "unit": self.unit, "max_answers": self.max_answers, "reports_per_fake": self.reports_per_fake,
               "epsilon": self.epsilon, "description": self.describe()}
        if self.pairs is not None:
            doc["pairs"] = [p.to_dict() for p in self.pairs]
        return doc


class _Attack:
    """Refits of one tally of reports with fake reports added as counts (the tally is reused)."""

    def __init__(self, tally: ComparisonTally, lam, weights: str, debiased: bool, level: int):
        self.tally, self.lam, self.weights, self.debiased, self.level = tally, lam, weights, debiased, level
        m = tally.n_items
        self.m = m
        self.key = (tally.level * m + tally.i) * m + tally.j  # increasing: entries are sorted

    def released(self) -> np.ndarray:
        """The released ranking order (no fakes)."""
        return self.fit(self.tally)

    def fit(self, tally) -> np.ndarray:
        """The ranking order of the released fit of ``tally`` (its warnings are the release's to give)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UtilityWarning)
            rel = release_from_reports(tally, weights=self.weights, debiased=self.debiased)
            return fit_btl(rel, lam=self.lam).order

    def order(self, promoted: int, opponents):
        """A function ``n -> ranking order`` refitting with ``n`` fakes whose reports say ``promoted``
        beats each of ``opponents``."""
        t, m = self.tally, self.m
        lo = np.minimum(promoted, opponents)
        hi = np.maximum(promoted, opponents)
        keys = (self.level * m + lo) * m + hi
        at = np.searchsorted(self.key, keys)
        new = (at >= self.key.size) | (self.key[np.minimum(at, self.key.size - 1)] != keys)
        # one tally with an entry (zero records where there was none) for every fake pair
        ins = np.sort(at[new])
        level, i, j, n, wins2 = (np.insert(a, ins, v) for a, v in (
            (t.level, self.level), (t.i, np.sort(keys[new]) // m % m), (t.j, np.sort(keys[new]) % m),
            (t.n, 0), (t.wins2, 0)))
        key = (level * m + i) * m + j
        pos = np.searchsorted(key, keys)
        first = (lo == promoted).astype(np.int64)  # a fake's win counts 2 in wins2 where promoted is i

        def refit(count: int) -> np.ndarray:
            nn, ww = n.copy(), wins2.copy()
            nn[pos] += count
            ww[pos] += 2 * count * first
            return self.fit(replace(t, level=level, i=i, j=j, n=nn, wins2=ww))

        return refit


def smallest_count(changes, cap: int) -> tuple[int, bool]:
    """The smallest ``n`` in ``1..cap`` with ``changes(n)``: exponential search, bisection, then an
    explicit check that ``n`` changes it and ``n - 1`` does not (else a scan down from ``n``).
    ``(cap, True)`` when ``changes(cap)`` is False."""
    lo, hi = 0, 1  # changes(lo) is False (0 fakes: the released ranking)
    while not changes(hi):
        if hi >= cap:
            return cap, True
        lo, hi = hi, min(2 * hi, cap)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if changes(mid) else (mid, hi)
    while hi > 1 and changes(hi - 1):  # the explicit check of n - 1, and the scan down if it fails
        hi -= 1
    return hi, False


def _tally_and_quota(reports, max_answers):
    if isinstance(reports, PairwiseComparisons):
        if not reports.is_randomized:
            raise InputError("the manipulation margin is stated for randomized reports (the local model); these "
                             "comparisons carry no epsilon column")
        if max_answers is not None:
            reports = reports.with_quota(max_answers)  # checks it (and agreement with a carried quota)
        return reports.tally(), reports.max_answers
    if not isinstance(reports, ComparisonTally) or not reports.is_randomized:
        raise InputError("expected randomized reports (PairwiseComparisons with an epsilon column, or their "
                         "ComparisonTally)")
    if max_answers is not None and (isinstance(max_answers, bool) or not isinstance(max_answers, (int, np.integer))
                                    or max_answers < 1):
        raise InputError("max_answers must be a whole number >= 1")
    return reports, None if max_answers is None else int(max_answers)


def manipulation_margin(reports, lam="default", *, weights: str = "uniform", debiased: bool = True,
                        max_answers: int | None = None, pairs: bool | int = False,
                        max_fakes: int = MAX_FAKES) -> ManipulationMargin:
    """How many fake respondents it takes to change the BTL ranking of randomized reports.

    Definition. ``K`` is the declared quota of answers per respondent (``max_answers``, or the
    quota the reports carry). A fake respondent promoting item ``c`` sends ``min(K, m - 1)``
    unrandomized reports "c preferred", against distinct opponents (a respondent reports each
    pair at most once): first the item ``c`` must overtake, then the other items in the released
    ranking's order from the top (beating strong opponents raises c's BT score most: a win
    against ``j`` adds ``1 - p_cj`` to c's score equation). Each report carries an epsilon of the
    honest reports, so the fit debiases it like an honest one: the smallest epsilon (the largest
    debiased weight) with uniform weights, the largest with ``inverse_variance`` weights.

    * The **margin of the top item** is the smallest ``n`` such that adding ``n`` such fakes, all
      promoting the same item ``c``, changes the top item of the refitted ranking; ``c`` is the
      worst case over every other item.
    * With ``pairs=True``, the margin of each adjacent pair (ranks r, r + 1): the smallest ``n``
      of fakes promoting the item at r + 1 that puts it above the item at r.

    Every refit is exactly the released fit: :func:`~privrank.pairwise.release.release_from_reports`
    with the same ``weights`` and debiasing, then :func:`~privrank.fit_btl` with the same ``lam``.
    The fakes are added to one tally of the reports as counts. ``n`` is found by exponential
    search then bisection, and checked explicitly: ``n`` changes the ranking, ``n - 1`` does not
    (else a scan down). No change up to ``max_fakes`` is reported as "more than ``max_fakes``".
    Without a declared quota the margin is stated for ``K = 1``: it counts fake *reports*.

    Parameters
    ----------
    reports : PairwiseComparisons or ComparisonTally
        The released randomized reports (with their epsilons).
    lam, weights
        As given to :func:`~privrank.fit_btl` for the released ranking.
    debiased : bool
        False for classic randomized response (the reports fitted as they are).
    max_answers : int, optional
        The declared quota ``K`` (checked against the reports' respondents when they are
        :class:`PairwiseComparisons`).
    pairs : bool or int
        Also compute the margin of every adjacent pair (True), or of the adjacent pairs among the
        first ``pairs`` ranks (an int ``k``: ranks 1..k, for a top-k list).
    max_fakes : int
        The cap of the search.

    Returns
    -------
    ManipulationMargin

    Privacy: post-processing of the released reports, no privacy cost. Local DP protects each
    respondent's answers; it says nothing about how far fake respondents can steer the result,
    which is what this states.

    Examples
    --------
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> reports = pr.randomized_response(comps, epsilon=1.0, max_answers=10, rng=1)
    >>> margin = pr.manipulation_margin(reports, pairs=True)
    >>> margin.top.fakes, [(p.item, p.fakes) for p in margin.pairs]
    (33, [(1, 33), (2, 20), (3, 10), (4, 33)])
    >>> print(margin.describe())
    33 fake respondents promoting 1 change the top item; each sending 4 unrandomized reports (the quota of 10
    per respondent); local DP does not prevent such manipulation
    """
    if weights not in WEIGHTS:
        raise InputError(f"weights must be one of {', '.join(WEIGHTS)}")
    if isinstance(max_fakes, bool) or not isinstance(max_fakes, (int, np.integer)) or max_fakes < 1:
        raise InputError("max_fakes must be a whole number >= 1")
    if pairs is not True and pairs is not False and (isinstance(pairs, bool) or not isinstance(pairs, (int, np.integer))
                                                      or pairs < 1):
        raise InputError("pairs must be True, False or a number of ranks >= 1")
    tally, quota = _tally_and_quota(reports, max_answers)
    m = tally.n_items
    per_fake = min(1 if quota is None else quota, m - 1)
    level = int(tally.epsilons.size - 1) if weights == "inverse_variance" else 0  # epsilons are increasing
    attack = _Attack(tally, lam, weights, debiased, level)
    released = attack.released()

    def margin(rank: int, above: int, item: int, cap: int, changes) -> Margin:
        others = [k for k in released if k not in (above, item)]
        refit = attack.order(item, np.array([above] + others[:per_fake - 1], dtype=np.int64))
        n, more = smallest_count(lambda count: changes(refit(count)), cap)
        return Margin(rank, tally.items[above], tally.items[item], n, more)

    top = released[0]
    best = None
    for c in released[1:]:
        # a candidate that does not change the top with fewer fakes than the best so far is not searched
        cap = max_fakes if best is None or best.more_than else best.fakes - 1
        if cap < 1:
            break
        found = margin(1, top, c, cap, lambda order: order[0] != top)
        if best is None or not found.more_than:  # capped below the best so far: not better
            best = found
    adjacent = None
    if pairs is not False:
        shown = m if pairs is True else min(int(pairs), m)

        def ahead(item, above):
            return lambda order: int(np.flatnonzero(order == item)[0]) < int(np.flatnonzero(order == above)[0])
        adjacent = tuple(margin(r + 1, released[r], released[r + 1], max_fakes, ahead(released[r + 1], released[r]))
                         for r in range(shown - 1))
    return ManipulationMargin(best, adjacent, quota, per_fake, float(tally.epsilons[level]))


def ballot_margin(vectors, items, scale: float, order, max_fakes: int = MAX_FAKES) -> Margin:
    """The margin of the top item of a ranking of randomized ballots (the local pairwise-vector design).

    A ballot is a vector over the pairs ``i < j`` (row-major), randomized to norm ``scale``
    (Duchi et al.'s l2 randomizer); the ranking is ``order(W)`` of the estimated pairwise matrix
    ``W = 1/2 + mean ballot`` (e.g. exact Kemeny or Borda row sums). A fake respondent sends one
    ballot of norm ``scale`` (the only norm a server accepts) pointing along the gradient of
    ``share(c) - share(t)``, the Borda-share gap of the promoted item ``c`` over the top item ``t``:
    weight 2 on the pair ``{c, t}`` and 1 on every other pair of ``c`` or ``t``, signed to favour
    ``c``. The margin is the smallest number of such fakes, all promoting the same item (the worst
    case over the other items), that changes ``order``'s top item, found by refitting ``order``
    (search and check as :func:`manipulation_margin`). Post-processing of the released ballots.

    Parameters
    ----------
    vectors : array of shape (n, m(m-1)/2)
        The released randomized ballots (at least one).
    items : sequence
        The item labels, in the order of the ballots' pairs.
    scale : float
        The norm of every randomized ballot.
    order : callable
        ``order(W)`` -> item indices best first: the ranking as released.
    """
    from ..mechanisms.pairwise_matrix import matrix_from_upper

    V = np.asarray(vectors, dtype=float)
    m = len(items)
    if V.ndim != 2 or V.shape[0] < 1 or V.shape[1] != m * (m - 1) // 2:
        raise InputError("vectors must hold at least one ballot of m(m-1)/2 entries")
    n, total = V.shape[0], V.sum(axis=0)
    rows, cols = np.triu_indices(m, 1)
    released = np.asarray(order(matrix_from_upper(0.5 + total / n, m)))
    top = int(released[0])

    def fake(c: int) -> np.ndarray:
        d = (np.where(rows == c, 1.0, 0.0) - np.where(cols == c, 1.0, 0.0)
             - np.where(rows == top, 1.0, 0.0) + np.where(cols == top, 1.0, 0.0))
        return scale * d / np.linalg.norm(d)

    best = None
    for c in (int(k) for k in released[1:]):
        cap = max_fakes if best is None or best.more_than else best.fakes - 1
        if cap < 1:
            break
        z = fake(c)
        count, more = smallest_count(
            lambda k: int(order(matrix_from_upper(0.5 + (total + k * z) / (n + k), m))[0]) != top, cap)
        if best is None or not more:
            best = Margin(1, items[top], items[c], count, more)
    return best
