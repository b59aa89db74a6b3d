"""The survey's dashboard: the live private ranking of the stored reports, its guarantee, and how far
fake respondents could steer it (the manipulation margin); :mod:`privrank.serve.dashboard_html`
renders it as the page.

Everything here is post-processing of the randomized reports the store holds (no privacy cost).

Cost. :class:`LiveRanking` keeps the sufficient statistic of the reports in memory (the exact
integer tally of the pairs reports, or the running sum of the ballots) and reads from the store
only the reports stored since its last read; the ranking, its intervals and the manipulation
margin are refitted from that statistic in the background, at most once every ``refresh`` seconds,
so a view costs milliseconds however many reports there are (it may be that many seconds old, and
says so), and polling the dashboard barely slows the intake.

When the ranking is shown. Before it has enough reports a ranking of randomized answers is mostly
noise, so the dashboard shows no ranked table until the survey holds the number of reports
:func:`reports_needed` gives for its items, epsilon and quota (a fact of the survey, computed once).
"""
from __future__ import annotations

import logging
import math
import multiprocessing
import os
import signal
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Any
from concurrent.futures import Future
from dataclasses import replace
from datetime import datetime, timezone
from statistics import NormalDist

import numpy as np

from ..errors import InputError
from .survey import RESPONDENT_UNITS

#: reports each compared item needs before the dashboard shows 95% intervals (normal approximation)
MIN_REPORTS_FOR_INTERVALS = 20
#: largest ranking survey ranked by exact Kemeny on the dashboard (Borda row sums above)
EXACT_KEMENY_ITEMS = 12
#: seconds between two reads of the store (and refits) at most: a view may be this old
REFRESH_SECONDS = 2.0
#: the planner's predicted top-k Hamming error at which the top items count as told apart
TOP_K_ERROR = 0.1
#: seconds a missing row id is looked for again (PostgreSQL can commit a row after a later one)
GAP_SECONDS = 30.0
LEVEL = 0.95


def unit_note(invitation_only: bool) -> str:
    """Who one respondent is, in words: what the per-respondent guarantee protects."""
    if invitation_only:
        return ("A respondent is an invited respondent: each one-time invitation registers one respondent (an "
                "invited person who forwards their link passes their place on).")
    return ("A respondent is a browser (a random token kept in it), not a person: one person with two browsers, or "
            "who clears the browser's storage, counts as two respondents.")


# ------------------------------------------------------------------------------ when to rank

def reports_needed(design: str, items: int, epsilon: float, max_answers: int) -> int:
    """Reports after which the dashboard ranks: the top items are told apart under the planner's
    assumption (true BTL scores evenly spaced over [-2, 2], :class:`privrank.plan.Design`), the top
    items being the planner's top k (k = m/4).

    ``pairs``: the fewest reports (whole respondents of ``max_answers`` uniformly random pairs) at
    which :func:`privrank.plan.predict` expects a top-k Hamming error of at most ``TOP_K_ERROR``,
    found by doubling the respondents from ``m / max_answers``, then bisection to about 5% (each
    prediction simulates ``m x m`` fits: seconds for a few dozen items, minutes for a thousand).
    ``ranking``: the fewest ballots at which the items at ranks k and k + 1 have their expected
    Borda shares misordered with probability at most ``TOP_K_ERROR`` (normal approximation; the
    Duchi et al. ballot's second moment ``B^2 I / M`` bounds the variance of two shares'
    difference by ``2 m B^2 / (M n (m - 1)^2)``, whatever the ballots). Depends only on the
    survey (:func:`survey_threshold` keeps it).
    """
    from ..plan import Design, predict

    plan = Design(items, 1)
    if design == "ranking":
        from ..mechanisms.local_vectors import duchi_l2_scale
        from ..pairwise.links import LOGISTIC

        theta = plan.scores
        share = -np.sort(-(LOGISTIC.cdf(theta[:, None] - theta[None, :]).sum(axis=1) - 0.5) / (items - 1))
        M = items * (items - 1) // 2
        sd = duchi_l2_scale(M, math.sqrt(M) / 2, epsilon) * math.sqrt(2 * items / M) / (items - 1)
        gap = share[plan.top - 1] - share[plan.top]
        return max(1, math.ceil((NormalDist().inv_cdf(1 - TOP_K_ERROR) * sd / gap) ** 2))
    per_user = min(max_answers, plan.pairs)

    def told_apart(users: int) -> bool:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return predict(Design(items, users, per_user), epsilon).predicted["topk_hamming"] <= TOP_K_ERROR
    lo, hi = 0, math.ceil(items / per_user)  # from about two reports per item, fewer than any ranking needs
    while not told_apart(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > max(1, hi // 20):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if told_apart(mid) else (mid, hi)
    return hi * per_user


#: thresholds found so far in this process, by the arguments of :func:`reports_needed`
_THRESHOLDS: dict = {}


def _threshold_key(survey) -> tuple:
    """The arguments of :func:`reports_needed` for ``survey``."""
    return survey.design, len(survey.items), survey.epsilon, survey.max_answers


def survey_threshold(survey, helper=None) -> int:
    """:func:`reports_needed` for the survey's design, items, epsilon and quota, found once per process
    (by ``helper``, a :class:`Helper`, if given)."""
    args = _threshold_key(survey)
    if args not in _THRESHOLDS:
        _THRESHOLDS[args] = reports_needed(*args) if helper is None else helper.run(reports_needed, *args)
    return _THRESHOLDS[args]


def planned_threshold(survey) -> int:
    """:func:`survey_threshold`, found (unless known) in a :class:`Helper` started for it: the caller
    never imports the planner."""
    known = _THRESHOLDS.get(_threshold_key(survey))
    if known is not None:
        return known
    with Helper() as helper:
        return survey_threshold(survey, helper)


class Helper:
    """One spawned daemon process at a lower priority (nice 10), ignoring the Ctrl-C the server handles
    (the server ends it), that runs the dashboard's planner and fits one call at a time: their CPU
    (minutes for the planner of a thousand items; a few hundred milliseconds per fit, scipy's import
    the first time) then neither holds the server's GIL nor comes before the intake of reports.
    It talks over a pipe (no queue, so no semaphore is left behind by a server stopped at once)."""

    def __init__(self):
        context = multiprocessing.get_context("spawn")
        self._pipe, child = context.Pipe()
        self._process = context.Process(target=_helper_loop, args=(child,), name="privrank-dashboard-helper",
                                        daemon=True)
        self._process.start()
        child.close()
        self._guard = threading.Lock()

    def run(self, function, *args):
        """``function(*args)`` in the helper process: its result, or its exception raised here."""
        with self._guard:
            try:
                self._pipe.send((function, args))
                ok, value = self._pipe.recv()
            except (EOFError, OSError):
                raise InputError("the dashboard's helper process has ended") from None
        if not ok:
            raise value
        return value

    def close(self) -> None:
        self._pipe.close()  # the loop ends on end of file
        self._process.join(timeout=5)
        if self._process.is_alive():
            self._process.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _helper_loop(pipe) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(10)
    while True:
        try:
            function, args = pipe.recv()
        except EOFError:
            return
        try:
            pipe.send((True, function(*args)))
        except Exception as exc:
            pipe.send((False, exc))


def respondents_needed(survey, needed: int, have: int) -> int:
    """About how many more respondents, each giving the survey's quota of reports, bring ``have``
    reports to the threshold ``needed`` (0 once there)."""
    return max(0, math.ceil((needed - have) / survey.max_answers))


def threshold_text(survey, needed: int | None, have: int, unit: str) -> str:
    """The waiting message: about how many more reports (and respondents) the ranking needs (None:
    not known yet)."""
    if needed is None:
        return ("Not enough data yet: the privacy planner is still working out how many reports are needed before "
                "the top items are told apart.")
    more = needed - have
    people = respondents_needed(survey, needed, have)
    quota = "one ballot each" if survey.design == "ranking" else f"the survey's {survey.max_answers} answers each"
    return (f"Not enough data yet: about {more:,} more report{'s' * (more != 1)} (roughly {people:,} more "
            f"{unit}{'s' * (people != 1)} at {quota}) are needed before the top items are told apart.")


def threshold_notes(survey, needed: int | None) -> list[str]:
    """How the threshold ``needed`` was found, in words (none while it is not known)."""
    from ..plan import Design

    if needed is None:
        return []
    m = len(survey.items)
    top = Design(m, 1).top
    if survey.design == "ranking":
        return [f"Ranked from {needed:,} ballots on: with true scores "
                f"evenly spaced over [-2, 2], the items at ranks {top} and {top + 1} "
                f"are then misordered with probability at most {100 * TOP_K_ERROR:g}%."]
    return [f"Ranked from {needed:,} reports on: the privacy "
            f"planner predicts that the ranking's top {top} then miss at most "
            f"{100 * TOP_K_ERROR:g}% of the true top items, with true BTL scores evenly spaced over [-2, 2]."]


# ------------------------------------------------------------------------------ the tallies

class _Tally:
    """Reports read incrementally by row id. Ids only grow, but a PostgreSQL transaction can commit a
    row after a row with a larger id: an id skipped over is looked for again for ``GAP_SECONDS``."""

    def __init__(self, survey, clock=time.monotonic):
        self.survey = survey
        self.count = 0
        self.last = 0
        self.gaps: dict[int, float] = {}  # missing id -> when it was first missed
        self._clock = clock

    def _read(self, store, after) -> list:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _add(self, rows) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def update(self, store) -> int:
        """Add the reports stored since the last update; returns how many were added."""
        now = self._clock()
        self.gaps = {k: t for k, t in self.gaps.items() if now - t < GAP_SECONDS}
        rows = self._read(store, min(self.gaps, default=self.last + 1) - 1)
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        new = ids > self.last
        if self.gaps:  # rows read again from the first gap on: only the gaps' are new among those below
            new |= np.isin(ids, np.fromiter(self.gaps, dtype=np.int64, count=len(self.gaps)))
            rows = [r for r, n in zip(rows, new) if n]
            ids = ids[new]
        if rows:
            self._add(rows)  # first: a row it refuses is read again, never skipped
            self.count += len(rows)
            for row_id in ids[ids <= self.last].tolist():
                self.gaps.pop(row_id, None)
            above = ids[ids > self.last]
            if above.size:  # every id skipped over below the largest read is a gap (none, when they run on)
                skipped = np.setdiff1d(np.arange(self.last + 1, int(above.max()) + 1), above, assume_unique=True)
                self.gaps.update(dict.fromkeys(skipped.tolist(), now))
                self.last = int(above.max())
        return len(rows)


class PairTally(_Tally):
    """The exact integer tally of the pairs reports (:class:`~privrank.data.tally.ComparisonTally`
    codes), items indexed in sorted label order as :func:`privrank.read_comparisons` indexes them."""

    def __init__(self, survey, clock=time.monotonic):
        super().__init__(survey, clock)
        self.items = tuple(sorted(survey.items))
        self.index = {label: k for k, label in enumerate(self.items)}
        m = len(self.items)
        self.codes = np.zeros(m * m * 3, dtype=np.int64)

    def _read(self, store, after):
        return store.pair_reports_after(after)

    def _add(self, rows):
        from ..data.tally import record_codes

        index = self.index
        try:
            a, b = (np.fromiter((index[r[k]] for r in rows), dtype=np.int64, count=len(rows)) for k in (1, 2))
        except KeyError:
            raise InputError("the store holds a report on an item the survey does not declare") from None
        values2 = np.fromiter((r[3] for r in rows), dtype=np.int8, count=len(rows)) + 1  # 2: item_a preferred, 0: b
        self.codes += np.bincount(record_codes(len(self.items), a, b, values2), minlength=self.codes.size)

    def tally(self):
        """The :class:`~privrank.data.tally.ComparisonTally` of the compared items (sorted labels)."""
        from ..data.tally import ComparisonTally

        m = len(self.items)
        per = self.codes.reshape(m, m, 3)
        seen = per.sum(axis=2)
        compared = np.flatnonzero((seen + seen.T).sum(axis=1))
        sub = per[np.ix_(compared, compared)]
        return ComparisonTally.from_dense([self.items[k] for k in compared], np.array([self.survey.epsilon]),
                                          sub.reshape(-1))


class BallotTally(_Tally):
    """The number and the running sum of the ranking ballots' randomized vectors."""

    def __init__(self, survey, clock=time.monotonic):
        super().__init__(survey, clock)
        self.total = np.zeros(survey.dimension)

    def _read(self, store, after):
        return store.vectors_after(after)

    def _add(self, rows):
        self.total += np.array([v for _, v in rows], dtype=float).sum(axis=0)


# ------------------------------------------------------------------------------ the views

def pairs_view(survey, tally: PairTally, invitation_only: bool, needed: int | None) -> dict:
    """The private BTL ranking of the pairs reports (``fit_btl`` defaults, in the order ``privrank rank``
    prints) with bias-corrected 95% sandwich score and rank intervals (``privrank rank --ci
    --bias-corrected``: centred on the ridge-free estimate, which the table then shows as the score,
    since the ridge's shrinkage would leave plain intervals under-covering at the threshold), or the
    reason there is none yet: fewer reports than ``needed`` (None: not known yet). Without
    intervals (too few reports per item, or no ridge-free estimate yet) the score is the fit's.
    The guarantee per respondent is stated per browser, or per invited respondent on an
    invitation-only survey."""
    from ..inference import confidence_intervals, manipulation_margin
    from ..pairwise.btl import fit_btl
    from ..pairwise.release import TIE_NOTE, local_guarantee

    eps = survey.epsilon
    unit = RESPONDENT_UNITS[invitation_only]
    guarantee = local_guarantee(eps, eps * survey.max_answers, "randomized response (in the respondent's browser)",
                                note=f"{TIE_NOTE} {unit_note(invitation_only)}")
    view: dict[str, Any] = {"guarantee": replace(guarantee, user=unit), "notes": threshold_notes(survey, needed),
                            "score": "BTL score"}
    if needed is None or tally.count < needed:
        return {**view, "waiting": threshold_text(survey, needed, tally.count, unit)}
    reports = tally.tally()  # at least one report, so at least two items
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = fit_btl(reports)
        if fit.info["n_components"] > 1:
            return {**view, "waiting": "Not enough data yet: the comparisons so far split the items into groups "
                                       "never compared with each other."}
        ci = None
        assert fit.release is not None  # a fit of reports carries their release
        if fit.release.counts.items_compared().min() < MIN_REPORTS_FOR_INTERVALS:
            view["notes"].append(f"No intervals yet: each item needs {MIN_REPORTS_FOR_INTERVALS} reports.")
        else:
            try:
                ci = confidence_intervals(fit, level=LEVEL, bias_corrected=True)
            except InputError as exc:  # its advice to a library caller (an argument to change) dropped
                view["notes"].append(f"No intervals yet: {str(exc).partition('; use ')[0]}; more reports bring "
                                     "them.")
    view["notes"] += [str(w.message) for w in caught]
    absent = [x for x in survey.items if x not in fit.items]
    if absent:
        view["notes"].append(f"Not yet compared, so not ranked: {', '.join(absent)}.")
    score = fit.scores if ci is None else ci.estimate  # ci's items are the fit's, in the same order
    rows = [(fit.items[k], score[k]) + ((ci.lower[k], ci.upper[k], ci.rank_lower[k], ci.rank_upper[k]) if ci
                                        else (None,) * 4) for k in fit.order]
    if ci:
        view["notes"].append(ci.describe())
    margin = manipulation_margin(reports, max_answers=survey.max_answers)
    return {**view, "rows": rows, "margin": margin.top.to_dict(), "margin_text": margin.describe()}


def ranking_view(survey, tally: BallotTally, invitation_only: bool, needed: int | None) -> dict:
    """The ranking of the ballots: ``w~ = 1/2 + mean of the randomized vectors`` (unbiased), ordered by
    exact Kemeny for at most ``EXACT_KEMENY_ITEMS`` items, else by Borda row sums; each item's score is
    its Borda share ``sum_j w~_ij / (m - 1)``, with a conservative 95% interval for its expectation over
    the respondents: every report has second moment ``B^2 I / M``, so the share's variance is at most
    ``B^2 / (M n (m - 1))`` and the difference of two shares' at most ``2 m B^2 / (M n (m - 1)^2)``
    whatever the ballots; none before ``needed`` ballots (None: not known yet). Rank intervals: an
    item is surely behind another when their difference is resolved at level ``1 - 0.05/(m - 1)``
    (Bonferroni over the other items, as :func:`privrank.confidence_intervals`)."""
    from ..aggregation.kemeny_exact import exact_kemeny
    from ..aggregation.kemeny_heuristics import borda
    from ..guarantees import UNIT_RANKING, Guarantee
    from ..inference.manipulation import ballot_margin
    from ..mechanisms.pairwise_matrix import matrix_from_upper
    from .survey import NORM_TOLERANCE

    view: dict[str, Any]
    view = {"guarantee": Guarantee(epsilon=survey.epsilon, model="local", unit=UNIT_RANKING,
                                   mechanism="Duchi et al. l2 randomizer of the pairwise vector (in the "
                                             "respondent's browser)",
                                   note=f"Every respondent sends one ballot. {unit_note(invitation_only)}"),
            "notes": threshold_notes(survey, needed), "score": "Borda share"}
    n, m = tally.count, len(survey.items)
    if needed is None or n < needed:
        return {**view, "waiting": threshold_text(survey, needed, n, RESPONDENT_UNITS[invitation_only])}
    method = exact_kemeny if m <= EXACT_KEMENY_ITEMS else borda
    mean = tally.total / n
    W = matrix_from_upper(0.5 + mean, m)
    order = method(W)
    share = W.sum(axis=1) / (m - 1)
    scale = survey.duchi_scale()
    sd = scale / math.sqrt(survey.dimension * n * (m - 1))
    half = NormalDist().inv_cdf(0.5 + LEVEL / 2) * sd
    resolved = NormalDist().inv_cdf(1 - (1 - LEVEL) / (2 * (m - 1))) * sd * math.sqrt(2 * m / (m - 1))
    gap = share[None, :] - share[:, None]  # [i, j]: share_j - share_i
    rank_lower, rank_upper = 1 + np.sum(gap > resolved, axis=1), m - np.sum(-gap > resolved, axis=1)
    how = "exact Kemeny" if m <= EXACT_KEMENY_ITEMS else "Borda row sums"
    view["notes"] += [f"Order: {how} on the estimated pairwise matrix.",
                      "95% intervals for each item's expected Borda share and its rank (conservative, including "
                      "the noise)."]
    # the margin reads the ballots only through their number and sum; a fake may send any ballot the
    # server accepts, up to the norm's tolerance
    margin = ballot_margin(tally.total, n, survey.items, scale * (1.0 + NORM_TOLERANCE),
                           "kemeny" if m <= EXACT_KEMENY_ITEMS else "borda")
    text = (f"{margin.sentence('fake respondent', 'the top item')} (proven); each sends one unrandomized ballot, "
            "any vector of the accepted norm; local DP does not prevent such manipulation")
    rows = [(survey.items[k], share[k], share[k] - half, share[k] + half, rank_lower[k], rank_upper[k])
            for k in order]
    return {**view, "rows": rows, "margin": margin.to_dict(), "margin_text": text}


class LiveRanking:
    """The dashboard's ranking, kept by the server: the tally of the reports read so far and the view
    last computed from it.

    :meth:`view` answers at once with the view last computed (which says when that was). At most
    once every ``refresh`` seconds it also starts a refit in a background thread, which reads the
    reports stored since the last read and, if there are any, computes a new view; the request
    that finds no view yet (or another respondent unit) waits for it instead. One refit runs at a
    time, however many requests arrive. The threshold (:func:`survey_threshold`, seconds for a
    few dozen items, minutes for a thousand) is computed from the first view on; until it is known
    the view says so. ``refresh = 0``: every view is refitted, with the threshold, before it is
    returned (never stale). ``helper``: the planner and every fit run in a :class:`Helper`
    process, started at the first view and ended with this object (the server's tallies stay here;
    a fit gets a copy). ``follow`` (with ``refresh > 0``): from the first view on, a background
    thread also reads the store every ``refresh`` seconds and refits when reports arrived, viewed
    or not, so a view is never more than a refresh period and a fit behind the store; it ends with
    this object.
    """

    def __init__(self, survey, store, refresh: float = REFRESH_SECONDS, clock=time.monotonic, helper: bool = False,
                 follow: bool = False):
        self.survey, self.store, self.refresh = survey, store, float(refresh)
        self._wants_helper = helper
        self._follow = follow and self.refresh > 0
        self._helper: Helper | None = None
        self.tally = (PairTally if survey.design == "pairs" else BallotTally)(survey)
        self._clock = clock
        self._lock = threading.Lock()  # held while deciding, and while a request waits for a refit
        self._refitting = threading.Lock()  # held by the one refit running
        self._view: dict | None = None
        self._checked = -math.inf
        self._invitation_only: bool | None = None
        self._needed: Future | None = None

    def _plan(self) -> None:
        assert self._needed is not None  # view() made it before starting this
        try:
            self._needed.set_result(survey_threshold(self.survey, self._helper))
        except Exception as exc:  # raised again by the refit that asks for it
            self._needed.set_exception(exc)

    def view(self, invitation_only: bool) -> dict:
        """The current view: ``rows`` (or ``waiting``), ``notes``, ``guarantee``, the margin, ``reports``
        (the reports it was computed on), ``needed`` (the threshold, None while not known) and
        ``updated`` (UTC time of the read of the store it reflects)."""
        with self._lock:
            if self._needed is None:  # on the first view, not at start-up: the intake has the CPU until then
                if self._wants_helper:
                    self._helper = Helper()
                    weakref.finalize(self, self._helper.close)
                if self._follow:
                    stop = threading.Event()
                    threading.Thread(target=_follow_loop, args=(weakref.ref(self), stop, self.refresh),
                                     name="privrank-dashboard-follow", daemon=True).start()
                    weakref.finalize(self, stop.set)
                self._needed = Future()
                known = _THRESHOLDS.get(_threshold_key(self.survey))
                if known is not None:  # found earlier in this process
                    self._needed.set_result(known)
                else:
                    threading.Thread(target=self._plan, name="privrank-dashboard-planner", daemon=True).start()
            now = self._clock()
            due = now - self._checked >= self.refresh
            if self._view is None or invitation_only != self._invitation_only or self.refresh <= 0:
                self._checked = now
                self._refit(invitation_only)
            elif due and not self._refitting.locked():
                self._checked = now
                threading.Thread(target=self._refit_logged, args=(invitation_only,), name="privrank-dashboard",
                                 daemon=True).start()
            assert self._view is not None  # computed above when there was none
            return self._view

    def _refit(self, invitation_only: bool) -> None:
        assert self._needed is not None  # view() made it before any refit
        with self._refitting:
            read = datetime.now(timezone.utc)
            added = self.tally.update(self.store)
            needed = self._needed.result() if self.refresh <= 0 or self._needed.done() else None
            if added or self._view is None or invitation_only != self._invitation_only \
                    or needed != self._view["needed"]:
                make: Callable[..., dict] = pairs_view if self.survey.design == "pairs" else ranking_view
                arguments = (self.survey, self.tally, invitation_only, needed)
                # a waiting view too, and a view holds built-in types only (a margin as a dict): the server
                # never imports the fitting code, whose import (scipy's) holds its GIL for a second or more
                made = self._helper.run(make, *arguments) if self._helper else make(*arguments)
                view = {**made, "reports": self.tally.count, "needed": needed}
            else:
                view = dict(self._view)
            self._view, self._invitation_only = {**view, "updated": read}, invitation_only

    def _follow_once(self) -> None:
        """The background thread's refit, unless one is running (its read of the store is as recent)."""
        with self._lock:
            if self._refitting.locked() or self._invitation_only is None:
                return
            self._checked = self._clock()
            invitation_only = self._invitation_only
        self._refit_logged(invitation_only)

    def _refit_logged(self, invitation_only: bool) -> None:
        """A background refit: a failure keeps the last view (its time says how old it is); only the
        exception's type is logged, as for a failed request."""
        try:
            self._refit(invitation_only)
        except Exception as exc:
            logging.getLogger("privrank.serve").error("dashboard refit failed (%s)", type(exc).__name__)


def _follow_loop(live: weakref.ref, stop: threading.Event, period: float) -> None:
    """Refit ``live`` every ``period`` seconds until ``stop`` is set or ``live`` is gone (the thread keeps
    no reference to it in between, so its end ends the thread)."""
    while not stop.wait(period):
        ranking = live()
        if ranking is None:
            return
        ranking._follow_once()
        del ranking
