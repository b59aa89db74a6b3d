"""The manipulation margin of a ranking of randomized reports (post-processing only).

Local differential privacy cannot stop manipulation: a fake respondent sends unrandomized
reports, and after debiasing each weighs ``(e^eps + 1)/(e^eps - 1)`` times an honest answer's
signal. :func:`manipulation_margin` states how many such fakes it takes to change the result as
an interval: ``fakes``, the fewest found by attacks that were run (each checked by refitting the
released fit exactly), and ``at_least``, a proven bound: fewer fakes cannot change it, whatever
they send within the survey's rules. The proof is in PRIVACY.md ("The manipulation margin"), its
computation in :mod:`privrank.inference.manipulation_bound`; the attack search is here. It reads
the released reports only (never raw data) and costs no privacy.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import expit

from ..data.comparisons import PairwiseComparisons
from ..data.tally import ComparisonTally
from ..errors import InputError, UtilityWarning, check_whole
from ..html_cards import Shown
from ..mechanisms.randomized_response import debias
from ..pairwise.btl import btl_hessian, fit_btl
from ..pairwise.release import check_weighting, paper_lambda, release_from_reports
from .manipulation_bound import MarginBound

#: the default cap of the search: no change up to this many fakes is reported as "more than" it
MAX_FAKES = 10 ** 6
#: rounds of re-linearising the greedy attack at the fit it reaches
RELINEARISE_ROUNDS = 2
#: challengers whose first-order estimate is at least this multiple of the best count found are not searched
SEARCH_RATIO = 2.0


@dataclass(frozen=True)
class Margin:
    """How many fakes it takes to lift ``item`` above ``above`` (the item at rank ``rank``).

    ``fakes`` is the fewest the attacks found (checked by refitting: ``fakes`` change the
    result, ``fakes - 1`` of the same attack do not), or, when ``more_than`` is True, the cap of
    the search: no attack with up to that many changes it. ``at_least`` is proven: fewer than
    ``at_least`` fakes cannot change it, whatever they send within the rules. ``attack`` names
    the attack found; ``reports`` are the ``(winner, loser)`` labels each of its fakes reports
    (unrandomized, at ``epsilon``); for ballots, ``ballot`` is the vector each fake sends.
    """

    rank: int
    above: object
    item: object
    fakes: int
    more_than: bool = False
    at_least: int = 1
    attack: str = ""
    reports: tuple = ()
    epsilon: float | None = None
    ballot: tuple = ()

    @property
    def exact(self) -> bool:
        """The two ends meet: exactly ``fakes`` fakes are needed."""
        return not self.more_than and self.at_least == self.fakes

    @property
    def shown(self) -> str:
        """``N`` when exact, ``L..N`` (proven at least L, N found), ``>N`` with ``L..`` when no
        attack up to the cap changed it."""
        if self.more_than:
            return f">{self.fakes}" if self.at_least > self.fakes else f"{self.at_least}..>{self.fakes}"
        return str(self.fakes) if self.exact else f"{self.at_least}..{self.fakes}"

    def sentence(self, unit: str, what: str) -> str:
        """``"N fake respondents can change the top item; fewer than L cannot"`` (``what``: "the
        top item"), or "exactly N ..." when the two ends meet."""
        def count(n):
            return f"{n:,} {unit}{'' if n == 1 else 's'}"
        if self.more_than:
            found = f"no attack found with up to {count(self.fakes)} changes {what}"
        elif self.exact:
            return f"exactly {count(self.fakes)} can change {what}; fewer cannot"
        else:
            found = f"{count(self.fakes)} can change {what}"
        return f"{found}; fewer than {self.at_least:,} cannot"

    def to_dict(self) -> dict:
        doc = {"rank": self.rank, "above": self.above, "item": self.item, "fakes": self.fakes,
               "more_than": self.more_than, "at_least": self.at_least, "attack": self.attack}
        if self.reports:
            doc["reports"] = [list(r) for r in self.reports]
            doc["epsilon"] = self.epsilon
        if self.ballot:
            doc["ballot"] = list(self.ballot)
        return doc


@dataclass(frozen=True)
class ManipulationMargin(Shown):
    """Result of :func:`manipulation_margin`.

    Attributes
    ----------
    top : Margin
        The margin of the top item: ``top.fakes`` fake respondents found to change the top item
        of the refitted ranking (``top.item`` is the item that then leads, ``top.attack`` the
        attack), and ``top.at_least``, the proven number below which none can, over every item
        that could take the lead.
    pairs : tuple of Margin or None
        On request, per adjacent pair (ranks r, r + 1): the fakes that put the item at r + 1
        above the item at r, found and proven as for the top item.
    max_answers : int or None
        The declared quota of reports per respondent; None: none declared, the margin counts
        fake *reports* (each fake sends one).
    reports_per_fake : int
        ``min(max_answers or 1, m (m - 1) / 2)``: a fake reports each pair at most once.
    epsilon : float
        The epsilon the reports of the attack found carry (a declared epsilon of the reports).
    epsilons : tuple of float
        The epsilons a fake may declare (the declared epsilons of the reports, else the
        epsilons they carry); the bound covers every one.

    Examples
    --------
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> reports = pr.randomized_response(comps, epsilon=1.0, max_answers=10, rng=1)
    >>> margin = pr.manipulation_margin(reports)
    >>> margin.max_answers, margin.reports_per_fake, margin.top.item, margin.top.at_least <= margin.top.fakes
    (10, 10, 1, True)
    """

    top: Margin
    pairs: tuple | None
    max_answers: int | None
    reports_per_fake: int
    epsilon: float
    epsilons: tuple = ()

    @property
    def unit(self) -> str:
        return "fake report" if self.max_answers is None else "fake respondent"

    def describe(self) -> str:
        """The margin of the top item in one sentence."""
        if self.max_answers is None:
            quota = "no quota of answers per respondent was declared, so it counts fake reports (one each)"
        else:
            k = self.reports_per_fake
            quota = (f"each sends at most {k} unrandomized report{'' if k == 1 else 's'} on distinct pairs (the "
                     f"quota of {self.max_answers} per respondent) at a declared epsilon")
        found = "" if self.top.more_than else f"found: {self.top.attack}, {self.top.item} then leads; "
        return (f"{self.top.sentence(self.unit, 'the top item')} (proven); {found}{quota}; local DP does not "
                "prevent such manipulation")

    def _card(self) -> dict:
        pairs = self.pairs or ()
        return {"summary": f"{self.top.shown} {self.unit}s to change the top item",
                "facts": [("margin", self.describe()), ("quota per respondent", self.max_answers),
                          ("reports per fake", self.reports_per_fake), ("epsilon of the reports", f"{self.epsilon:g}")],
                "rows": [{"rank": p.rank, "item": p.item, "lifted above": p.above, f"{self.unit}s": p.shown,
                          "attack": p.attack} for p in pairs],
                "more": "all of them: .pairs"}

    def to_dict(self) -> dict:
        doc = {"fakes": self.top.fakes, "at_least": self.top.at_least, "more_than": self.top.more_than,
               "item": self.top.item, "attack": self.top.attack, "reports": [list(r) for r in self.top.reports],
               "unit": self.unit, "max_answers": self.max_answers, "reports_per_fake": self.reports_per_fake,
               "epsilon": self.epsilon, "epsilons": list(self.epsilons), "description": self.describe()}
        if self.pairs is not None:
            doc["pairs"] = [p.to_dict() for p in self.pairs]
        return doc


def smallest_count(changes, cap: int) -> tuple[int, bool]:
    """The smallest ``n`` in ``1..cap`` with ``changes(n)``: a check at ``cap`` first, then
    exponential search, bisection, and an explicit check that ``n`` changes it and ``n - 1`` does
    not (else a scan down from ``n``). ``(cap, True)`` when ``changes(cap)`` is False."""
    if not changes(cap):
        return cap, True
    lo, hi = 0, 1  # changes(lo) is False (0 fakes: the released ranking)
    while hi < cap and not changes(hi):
        lo, hi = hi, min(2 * hi, cap)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if changes(mid) else (mid, hi)
    while hi > 1 and changes(hi - 1):  # the explicit check of n - 1, and the scan down if it fails
        hi -= 1
    return hi, False


class _Reports(MarginBound):
    """The released fit of one tally of reports, its refits with fakes added as counts, and (its
    base :class:`MarginBound`) the proven bound on what fakes can do (PRIVACY.md, "The manipulation
    margin")."""

    def __init__(self, tally: ComparisonTally, lam, weights: str, debiased: bool, per_fake: int, allowed):
        self.tally, self.lam_spec, self.weights, self.debiased, self.K = tally, lam, weights, debiased, per_fake
        m = self.m = tally.n_items
        self.key = (tally.level * m + tally.i) * m + tally.j  # increasing: entries are sorted
        self.fit = self.refit_tally(tally)
        rel = self.fit.release
        self.s, self.lam, self.pc = self.fit.scores, float(self.fit.lam), rel.counts
        self.iu, self.ju = np.triu_indices(m, 1)
        self.d_all = self.s[self.iu] - self.s[self.ju]
        self.d = self.s[self.pc.i] - self.s[self.pc.j]
        H = btl_hessian(self.s, self.pc, self.lam)
        # lam = 0 (the maximum-likelihood fit): scores sum to zero and every vector used is orthogonal to 1
        self.M = np.linalg.inv(H) if self.lam > 0 else np.linalg.pinv(H)
        diag = self.M.diagonal()
        self.rho = np.sqrt(np.maximum(diag[self.iu] + diag[self.ju] - 2.0 * self.M[self.iu, self.ju], 0.0))
        self.s_norm = math.sqrt(max(float(self.s @ self.M @ self.s), 0.0))
        self._levels(np.asarray(allowed, dtype=float))
        self.honest = self.pc.i * m - self.pc.i * (self.pc.i + 1) // 2 + self.pc.j - self.pc.i - 1  # into iu, ju
        self._regions: dict[int, np.ndarray | None] = {}

    # ------------------------------------------------------------------ the fakes' reports
    def _levels(self, eps: np.ndarray) -> None:
        """Per epsilon a fake may declare: its report's weight ``omega`` in the honest fit's scale and
        its largest (debiased) value ``y``; and how the ridge moves as fakes' reports are added."""
        t = self.tally
        records, levels = t.level_records(), t.epsilons
        assert levels is not None  # randomized reports carry their epsilons
        self.R = float(records.sum())
        tanh2 = np.tanh(eps / 2.0) ** 2
        mean = float(np.average(np.tanh(levels / 2.0) ** 2, weights=records))
        self.omega = tanh2 / mean if self.weights == "inverse_variance" else np.ones(eps.size)
        self.y = self._value_of(eps)
        self.epsilons = eps
        # the ridge in the honest fit's scale, after fakes: constant * prod of record averages
        # (x_honest, x per fake epsilon) -- PRIVACY.md, step 1
        spec, factors = self.lam_spec, []
        G = float(np.average(1.0 / np.tanh(levels / 2.0) ** 2, weights=records))
        paper = (paper_lambda(levels, records), np.array([paper_lambda(np.array([e])) for e in eps]))
        if self.weights == "inverse_variance":
            if spec == "default":
                constant = self.lam
            else:
                factors.append((mean, tanh2))
                if spec == "paper":
                    factors.append(paper)
                    constant = 1.0 / mean
                else:
                    constant = float(spec) / mean
        elif spec == "default":
            factors.append((G, 1.0 / tanh2))
            constant = 1.0
        elif spec == "paper":
            factors.append(paper)
            constant = 1.0
        else:
            constant = float(spec)
        self._ridge = (constant, factors)

    def ridge_range(self, n: int) -> tuple[float, float]:
        """Bounds on the change ``delta`` of the ridge in the honest scale with ``n`` fakes (each
        record average moves towards the fakes' values by at most ``n K / (R + n K)``)."""
        constant, factors = self._ridge
        if not factors:
            return 0.0, 0.0
        rho = n * self.K / (self.R + n * self.K)
        lo = hi = constant
        for x, xs in factors:
            lo *= x + rho * min(0.0, float(xs.min()) - x)
            hi *= x + rho * max(0.0, float(xs.max()) - x)
        return lo - self.lam, hi - self.lam

    def fake_level(self) -> int:
        """The tally level the searched attacks' reports carry: the largest weighted report value
        among the epsilons the reports carry (a fake declares one of them)."""
        eps = self.tally.epsilons
        assert eps is not None  # randomized reports carry their epsilons
        allowed = np.isin(eps, self.epsilons)
        gain = np.where(allowed, self._weight_of(eps) * (self._value_of(eps) - 0.5), -np.inf)
        return int(np.argmax(gain))

    def _weight_of(self, eps):
        k = np.searchsorted(self.epsilons, eps)
        return self.omega[np.minimum(k, self.omega.size - 1)]

    def _value_of(self, eps):
        """The largest value a report at ``eps`` adds to its pair: a report of 1, debiased (``e^eps /
        (e^eps - 1)``) or as it is."""
        ones = np.ones(np.shape(eps))
        return debias(ones, eps) if self.debiased else ones

    # ------------------------------------------------------------------ refits
    def refit_tally(self, tally):
        """The released fit of ``tally`` (its warnings are the release's to give)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UtilityWarning)
            rel = release_from_reports(tally, weights=self.weights, debiased=self.debiased)
            return fit_btl(rel, lam=self.lam_spec)

    def attack(self, winners, losers, level: int):
        """A function ``n -> fit`` refitting with ``n`` fakes, each reporting ``winners[k]`` over
        ``losers[k]`` (distinct pairs) at tally level ``level``."""
        t, m = self.tally, self.m
        winners, losers = np.asarray(winners, dtype=np.int64), np.asarray(losers, dtype=np.int64)
        lo, hi = np.minimum(winners, losers), np.maximum(winners, losers)
        keys = (level * m + lo) * m + hi
        at = np.searchsorted(self.key, keys)
        new = (at >= self.key.size) | (self.key[np.minimum(at, self.key.size - 1)] != keys)
        # one tally with an entry (zero records where there was none) for every fake pair
        ins, added = np.sort(at[new]), np.sort(keys[new])
        level_, i, j, n, wins2 = (np.insert(a, ins, v) for a, v in (
            (t.level, level), (t.i, added // m % m), (t.j, added % m), (t.n, 0), (t.wins2, 0)))
        pos = np.searchsorted((level_ * m + i) * m + j, keys)
        first = (lo == winners).astype(np.int64)  # a fake's win counts 2 in wins2 where the winner is i

        def refit(count: int):
            nn, ww = n.copy(), wins2.copy()
            nn[pos] += count
            ww[pos] += 2 * count * first
            return self.refit_tally(replace(t, level=level_, i=i, j=j, n=nn, wins2=ww))

        return refit

    def choices(self, fit, t: int, c: int, level: int) -> dict:
        """The attacks on the gap ``s_t - s_c`` at ``fit``, each ``(winners, losers)`` of at most K
        distinct pairs: every pair's report is oriented to shrink the gap to first order, and ranked
        by its influence ``|w_a - w_b| (y - sigma(s_winner - s_loser))`` with ``w = H^-1 (e_t - e_c)``
        the gap's sensitivity at ``fit`` (H the Hessian of the fit's objective)."""
        s = fit.scores
        if fit is self.fit:
            w = self.M[:, t] - self.M[:, c]
        else:
            H = btl_hessian(s, fit.release.counts, fit.lam)
            u = np.zeros(self.m)
            u[t], u[c] = 1.0, -1.0
            w = np.linalg.solve(H, u) if fit.lam > 0 else np.linalg.pinv(H) @ u
        dw = w[self.iu] - w[self.ju]
        winner = np.where(dw < 0, self.iu, self.ju)
        loser = np.where(dw < 0, self.ju, self.iu)
        assert self.tally.epsilons is not None  # randomized reports carry their epsilons
        eps = float(self.tally.epsilons[level])
        influence = np.abs(dw) * (float(self._value_of(eps)) - expit(s[winner] - s[loser]))
        masks = {"promotion of the challenger": winner == c, "demotion of the leader": loser == t,
                 "promotion and demotion mixed": (winner == c) | (loser == t),
                 "greedy by influence on the fit": np.ones(winner.size, dtype=bool)}
        out = {}
        for name, mask in masks.items():
            idx = np.flatnonzero(mask & (influence > 0))
            idx = idx[np.argsort(-influence[idx], kind="stable")[:self.K]]
            if idx.size:
                out[name] = (winner[idx], loser[idx])
        return out

    # ------------------------------------------------------------------ the search
    def search(self, t: int, c: int, changes, limit: int):
        """The fewest fakes, at most ``limit``, found to make ``changes(order)`` true by the attacks of
        :meth:`choices` on the gap ``s_t - s_c``, the greedy one re-linearised halfway along the best
        attack found: ``(n, name, winners, losers, level)``, or None (every count checked by an exact
        refit)."""
        level = self.fake_level()
        pending = list(self.choices(self.fit, t, c, level).items())
        found, rounds = None, 0
        while pending:
            name, (win, lose) = pending.pop(0)
            cap = limit if found is None else found[0] - 1
            if cap < 1:
                break
            refit = self.attack(win, lose, level)
            n, more = smallest_count(lambda k: changes(refit(k).order), cap)
            if not more:
                found = (n, name, win, lose, level)
            if not pending and found is not None and rounds < RELINEARISE_ROUNDS:
                rounds += 1
                n0, _, w0, l0, _ = found
                halfway = self.attack(w0, l0, level)(max(1, n0 // 2))
                greedy = self.choices(halfway, t, c, level).get("greedy by influence on the fit")
                if greedy is not None:
                    pending.append(("greedy by influence, re-linearised", greedy))
        return found


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


def manipulation_margin(reports: PairwiseComparisons | ComparisonTally, lam: float | str = "default", *,
                        weights: str = "uniform", debiased: bool = True, max_answers: int | None = None,
                        pairs: bool | int = False, max_fakes: int = MAX_FAKES) -> ManipulationMargin:
    """How many fake respondents change the BTL ranking of reports: found by attacks, and proven.

    The rules a fake follows are the survey's: ``K`` is the declared quota of answers per
    respondent (``max_answers``, or the quota the reports carry); a fake sends at most ``K``
    unrandomized reports, on distinct pairs of the items (one per pair, as the server allows), each
    at an epsilon the reports declare (their ``declared_epsilons``, else the epsilons they carry),
    so the fit debiases it like an honest one. Without a declared quota ``K = 1``: the margin
    counts fake *reports*.

    * ``fakes``: the fewest fakes found by a search over attacks, all fakes sending the same
      reports: promotion of the challenger, demotion of the leader, their mix, and a greedy
      allocation of the ``K`` pairs by each report's influence on the released fit (the gap's
      sensitivity ``H^-1 (e_t - e_c)`` at the fit), re-linearised at the fit the attack reaches;
      the minimum over every challenger. Each count is checked by refitting exactly the released
      fit (:func:`~privrank.pairwise.release.release_from_reports` with the same weights and
      debiasing, then :func:`~privrank.fit_btl` with the same ``lam``): ``n`` changes the ranking,
      ``n - 1`` does not.
    * ``at_least``: proven: fewer fakes cannot change the result, whatever they send within the
      rules, from the largest change a fake's reports can make to the fit's gradient, the gap's
      sensitivity, and the fit's curvature bounded over the region the fakes can reach (PRIVACY.md,
      "The manipulation margin", gives the proof).

    The top item's margin is over every item that could take the lead; with ``pairs``, each
    adjacent pair's (ranks r, r + 1) is for the item at r + 1 rising above the item at r.

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
        The cap of the search (and of the bound).

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
    >>> [(p.item, p.at_least <= p.fakes) for p in margin.pairs]
    [(1, True), (2, True), (3, True), (4, True)]
    """
    check_weighting(weights)
    if not isinstance(debiased, (bool, np.bool_)):
        raise InputError("debiased must be True or False")
    max_fakes = check_whole(max_fakes, name="max_fakes")
    if pairs is not True and pairs is not False and (isinstance(pairs, bool) or not isinstance(pairs, (int, np.integer))
                                                      or pairs < 1):
        raise InputError("pairs must be True, False or a number of ranks >= 1")
    tally, quota = _tally_and_quota(reports, max_answers)
    m = tally.n_items
    per_fake = min(1 if quota is None else quota, m * (m - 1) // 2)
    declared = getattr(tally, "declared_epsilons", None)
    allowed = np.unique(np.asarray(tally.epsilons if declared is None else declared, dtype=float))
    model = _Reports(tally, lam, weights, debiased, per_fake, allowed)
    released = model.fit.order
    labels = tally.items

    def margin(rank, t, challengers, changes, cap) -> Margin:
        # challengers by their first-order estimate; one estimated to need twice the best found is not
        # searched (the search is an attack: skipping one can only leave fakes larger, never wrong)
        estimates = {c: model.estimate(t, c) for c in challengers}
        best = None
        for c in sorted(challengers, key=estimates.__getitem__):
            limit = cap if best is None else best[0] - 1
            if limit < 1 or (best is not None and estimates[c] >= SEARCH_RATIO * best[0]):
                break
            if best is not None and model.cannot(limit, [(t, c)]):
                continue  # proven: c cannot be lifted with fewer fakes than the best found
            found = model.search(t, c, changes(c), limit)
            if found is not None:
                best = found + (c,)
        at_least = model.at_least([(t, c) for c in challengers], max_fakes)
        if best is None:
            return Margin(rank, labels[t], labels[challengers[0]], cap, True, at_least)
        n, name, win, lose, level, c = best
        eps = float(tally.epsilons[level])
        lead = model.attack(win, lose, level)(n).order
        item = lead[0] if rank == 1 else c
        return Margin(rank, labels[t], labels[item], n, False, at_least, name,
                      tuple((labels[a], labels[b]) for a, b in zip(win, lose)), eps)

    top = released[0]
    best = margin(1, top, [int(c) for c in released[1:]], lambda c: (lambda order: order[0] != top), max_fakes)
    adjacent = None
    if pairs is not False:
        shown = m if pairs is True else min(int(pairs), m)

        def ahead(item, above):
            return lambda c: (lambda order: int(np.flatnonzero(order == item)[0])
                              < int(np.flatnonzero(order == above)[0]))
        adjacent = tuple(margin(r + 1, int(released[r]), [int(released[r + 1])],
                                ahead(released[r + 1], released[r]), max_fakes) for r in range(shown - 1))
    eps = best.epsilon if best.epsilon is not None else float(tally.epsilons[model.fake_level()])
    return ManipulationMargin(best, adjacent, quota, per_fake, eps, tuple(float(e) for e in allowed))


# ---------------------------------------------------------------------------------- ballots

def ballot_margin(total, count: int, items, norm: float, method: str) -> Margin:
    """The margin of the top item of a ranking of randomized ballots (the local pairwise-vector design).

    A ballot is a vector over the pairs ``i < j`` (row-major); the ranking is ``method`` (``"kemeny"``:
    exact Kemeny, ``"borda"``: Borda row sums, ties by index) of the estimated pairwise matrix
    ``W = 1/2 + (sum of ballots) / count``. A fake respondent sends one ballot of norm at most
    ``norm`` (the largest the server accepts), any direction.

    ``fakes``: the fewest fakes found, all sending one ballot, over these directions: the gradient
    of the Borda-share gap of a challenger ``c`` over the top item ``t``; the whole norm on the pair
    ``{c, t}``; and, for each ``a``, the norm spread evenly over the pairs ``{x, t}`` of the ``a``
    items ``x`` closest to beating ``t``, each favouring ``x`` (what the bound below says is
    cheapest); each count checked by refitting ``method``.

    ``at_least`` (proven, PRIVACY.md): Borda: the top changes only if some ``c`` reaches ``t``'s row
    sum, ``a_c . (T + Z) >= 0`` with ``a_c`` of norm ``sqrt(2m)`` and ``|Z| <= N norm``, which is
    exact. Kemeny: in a Kemeny order whose top is not ``t``, moving ``t`` to the front costs no
    less, so the set ``A`` of items before ``t`` has ``sum_{x in A} (T + Z)_{x over t} >= 0``; only
    the ``|A|`` pairs ``{x, t}`` enter, so ``N norm sqrt(|A|) >= -(sum of the |A| largest T_{x over t})``.

    Parameters
    ----------
    total : array of m(m-1)/2 floats
        The sum of the released randomized ballots.
    count : int
        How many there are (at least one).
    items : sequence
        The item labels, in the order of the ballots' pairs.
    norm : float
        The largest norm of a ballot the server accepts.
    method : {"kemeny", "borda"}
        The ranking as released.
    """
    from ..aggregation.kemeny_exact import exact_kemeny
    from ..aggregation.kemeny_heuristics import borda
    from ..mechanisms.pairwise_matrix import matrix_from_upper

    orders = {"kemeny": exact_kemeny, "borda": borda}
    if method not in orders:
        raise InputError("method must be 'kemeny' or 'borda'")
    order = orders[method]
    T = np.asarray(total, dtype=float)
    m = len(items)
    if T.shape != (m * (m - 1) // 2,) or count < 1:
        raise InputError("total must hold m(m-1)/2 entries of at least one ballot")
    rows, cols = np.triu_indices(m, 1)
    top = int(order(matrix_from_upper(0.5 + T / count, m))[0])
    # per other item x: the pair {x, t} and the sign that makes a positive entry favour x
    others = np.array([x for x in range(m) if x != top])
    pair = np.array([np.flatnonzero(((rows == x) & (cols == top)) | ((rows == top) & (cols == x)))[0] for x in others])
    sign = np.where(others < top, 1.0, -1.0)
    toward = sign * T[pair]  # T_{x over t}

    def unit(weights_by_pair) -> np.ndarray:
        z = np.zeros(T.size)
        np.add.at(z, weights_by_pair[0], weights_by_pair[1])
        return norm * z / np.linalg.norm(z)

    def borda_gradient(c):
        d = (np.where(rows == c, 1.0, 0.0) - np.where(cols == c, 1.0, 0.0)
             - np.where(rows == top, 1.0, 0.0) + np.where(cols == top, 1.0, 0.0))
        return d

    a_all = np.stack([borda_gradient(int(c)) for c in others])  # a_c: B_c - B_t = a_c . (sum of ballots)
    borda_need = -(a_all @ T) / (norm * math.sqrt(2 * m))
    order_by = np.argsort(-toward, kind="stable")
    kemeny_need = -np.cumsum(toward[order_by]) / (norm * np.sqrt(np.arange(1, m)))

    def proven(need) -> int:
        return max(1, math.ceil(float(np.min(need)) - 1e-9 * max(1.0, abs(float(np.min(need))))))

    at_least = proven(borda_need if method == "borda" else kemeny_need)
    directions = []
    for k, c in enumerate(others):
        directions.append((float(borda_need[k]), f"Borda-share gradient for {items[c]}", norm * a_all[k] /
                           math.sqrt(2 * m)))
        directions.append((float(-toward[k] / norm), f"the whole norm on the pair of {items[c]} and the leader",
                           unit((pair[k:k + 1], sign[k:k + 1]))))
    for a in range(1, m):
        chosen = order_by[:a]
        directions.append((float(kemeny_need[a - 1]), f"the norm spread over the leader's {a} closest pairs",
                           unit((pair[chosen], sign[chosen]))))
    directions.sort(key=lambda d: d[0])
    best = None
    for _, name, z in directions:
        cap = MAX_FAKES if best is None else best.fakes - 1
        if cap < 1:
            break

        def lead(k, z=z):
            return int(order(matrix_from_upper(0.5 + (T + k * z) / (count + k), m))[0])
        n, more = smallest_count(lambda k: lead(k) != top, cap)
        if not more:
            best = Margin(1, items[top], items[lead(n)], n, False, at_least, name, ballot=tuple(z.tolist()))
    if best is None:
        return Margin(1, items[top], items[int(others[0])], MAX_FAKES, True, at_least)
    return best
