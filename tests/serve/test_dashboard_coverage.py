"""The dashboard's 95% intervals cover the true scores at the planner's sample size.

A pairs survey of 5 items at epsilon 1 and its quota of 3 answers, under the planner's truth (BTL
scores evenly spaced over [-2, 2]): each simulated survey has the planner's number of respondents,
each answering 3 uniformly random pairs in a random orientation, randomized as the respondent's
page does (``randomize_bits``, the randomizer of :func:`privrank.randomize_answer`, for all the
answers at once); the dashboard's view is built from their tally as :class:`LiveRanking` builds it,
and each item's interval is checked against its true (centred) score. The view's manipulation
margin, nine tenths of its time and no part of its intervals, is left out.

Tolerance. Over ``S`` surveys an interval of coverage 95% covers in ``S`` Bernoulli(0.95) trials,
standard error ``sqrt(0.95 * 0.05 / S)``; a coverage more than 4 of them below 95% fails (chance
about 3e-5 per item). At the threshold some surveys have no ridge-free estimate (an item wins or
loses nearly every report), so the dashboard shows no intervals yet: coverage is counted over the
surveys that show them, which must be most of them. The plain intervals (centred on the ridge fit,
the dashboard's intervals before it corrected them) are the broken variant: the ridge's shrinkage
leaves the outer items' intervals covering about half the time, which both sizes catch.
"""
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from privrank.mechanisms.randomized_response import randomize_bits
from privrank.plan import Design
from privrank.serve.dashboard import PairTally, pairs_view, reports_needed
from privrank.serve.survey import Survey

SURVEY = Survey(title="T", question="Q", items=("a", "b", "c", "d", "e"), epsilon=1.0, budget=3.0)
TRUTH = np.asarray(Design(5, 1).scores, dtype=float)
NOMINAL = 0.95


class Reports:
    """The store's reads the tally makes, on simulated rows ``(id, item_a, item_b, report)``."""

    def __init__(self, rows):
        self.rows = rows

    def pair_reports_after(self, after):
        return [r for r in self.rows if r[0] > after]


def simulated_view(needed: int, gen) -> dict:
    """The dashboard's view of one simulated survey of ``needed`` reports."""
    m, quota = len(SURVEY.items), SURVEY.max_answers
    iu, ju = np.triu_indices(m, 1)
    pairs = np.argsort(gen.random((needed // quota, iu.size)), axis=1)[:, :quota].ravel()
    swap = gen.random(pairs.size) < 0.5
    a, b = np.where(swap, ju[pairs], iu[pairs]), np.where(swap, iu[pairs], ju[pairs])
    prefers_a = gen.random(pairs.size) < 1 / (1 + np.exp(TRUTH[b] - TRUTH[a]))
    reports = randomize_bits(prefers_a.astype(float), SURVEY.epsilon, gen)
    rows = [(n + 1, SURVEY.items[i], SURVEY.items[j], 1 if r else -1) for n, (i, j, r) in enumerate(zip(a, b, reports))]
    tally = PairTally(SURVEY)
    tally.update(Reports(rows))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pairs_view(SURVEY, tally, False, needed)


def coverage(surveys: int, seed: int) -> tuple[np.ndarray, int]:
    """Each item's share of covering intervals, over the simulated surveys that show intervals, and
    how many did."""
    needed = reports_needed("pairs", len(SURVEY.items), SURVEY.epsilon, SURVEY.max_answers)
    gen = np.random.default_rng(seed)
    covered, shown = np.zeros(len(SURVEY.items)), 0
    for _ in range(surveys):
        view = simulated_view(needed, gen)
        if view["rows"][0][2] is None:
            continue
        shown += 1
        for item, _, lower, upper, *_ in view["rows"]:
            k = SURVEY.items.index(item)
            covered[k] += lower <= TRUTH[k] - TRUTH.mean() <= upper
    return covered / shown, shown


@pytest.fixture(autouse=True)
def no_margin(monkeypatch):
    """The view without its manipulation margin (the intervals do not depend on it)."""
    import privrank.inference as inference

    nothing = SimpleNamespace(top=SimpleNamespace(to_dict=dict), describe=str)
    monkeypatch.setattr(inference, "manipulation_margin", lambda reports, **options: nothing)


@pytest.fixture
def plain(monkeypatch):
    """The broken variant: the dashboard's intervals without the bias correction."""
    import privrank.inference as inference

    real = inference.confidence_intervals
    monkeypatch.setattr(inference, "confidence_intervals",
                        lambda fit, **options: real(fit, **{**options, "bias_corrected": False}))


def lowest(surveys: int) -> float:
    """The least coverage within 4 standard errors of 95% over ``surveys`` surveys."""
    return NOMINAL - 4 * np.sqrt(NOMINAL * (1 - NOMINAL) / surveys)


def test_the_intervals_cover_at_the_threshold():
    share, shown = coverage(300, seed=1)
    assert shown >= 0.7 * 300  # most surveys at the threshold show their intervals
    assert np.all(share >= lowest(shown)), (share, shown)


def test_the_plain_intervals_under_cover_at_the_threshold(plain):
    share, shown = coverage(300, seed=1)
    assert shown == 300 and share.min() < lowest(shown), share


@pytest.mark.slow
def test_the_intervals_cover_at_the_threshold_in_2000_surveys():
    share, shown = coverage(2000, seed=2)
    assert shown >= 0.7 * 2000
    assert np.all(share >= lowest(shown)), (share, shown)
