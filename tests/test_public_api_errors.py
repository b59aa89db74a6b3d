"""One error type: every public function and constructor refuses a bad argument with an InputError.

For each public callable (``privrank.__all__``, and the constructors of the input containers), a
valid call is set up, one of its arguments is replaced by a generated bad value (a wrong shape or
dtype, a huge or tiny number, NaN, infinity, complex, empty or unicode text with a lone surrogate,
None, nested lists...) and the call must either succeed or raise :class:`~privrank.errors.InputError`
(or a subclass) -- never a ``TypeError``, ``ValueError``, ``OverflowError``, ``ZeroDivisionError``,
``RecursionError``, ``UnicodeError``, ``KeyError``, ``IndexError``... Warnings are allowed (they are
documented: :class:`~privrank.errors.PrivacyWarning`, :class:`~privrank.errors.UtilityWarning`).
"""
from __future__ import annotations

import inspect
import math
import signal
import warnings
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import privrank as pr
from privrank.errors import InputError

#: most seconds one call may take: a call stopped here says nothing about its error type
CALL_SECONDS = 2.0

#: public names that are not callables taking input, or that the test does not call, with the reason
SKIPPED = {
    "InputError": "an exception type", "DisconnectedError": "an exception type",
    "BudgetExceededError": "an exception type", "PrivacyWarning": "a warning type",
    "UtilityWarning": "a warning type", "WeakPrivacyWarning": "a warning type",
    # results built by the library, never from a user's input
    "AggregateResult": "a result type", "BTLFit": "a result type", "CentralRanking": "a result type",
    "ConfidenceIntervals": "a result type", "CountRelease": "a result type", "ManipulationMargin": "a result type",
    "PairwiseRelease": "a result type", "RankIntervals": "a result type", "ScoredRanking": "a result type",
    "TreeRelease": "a result type", "ComparisonTally": "a result type (built by ComparisonTally.from_records)",
    "RankingTally": "a result type (built by Rankings.tally)",
    # slow by nature: a whole report per call
    "plot_intervals": "draws a figure (matplotlib) per call",
}


def huge_and_tiny():
    return [10 ** 400, -(10 ** 400), 2 ** 63, 5e-324, 1e-320, 1e308, -1e308, float("nan"), float("inf"),
            -float("inf"), 0, -1, 0.9, complex(1, 1), np.float32("nan"), np.int64(2 ** 62)]


def bad_values():
    """Bad arguments of every kind (any of them may also be right for some parameter)."""
    return st.sampled_from(huge_and_tiny() + [
        None, True, "", "x", "\ud800", b"x", [], [[]], [[0, 1], [2]], [[[0]]], [None], ["\ud800", "a"],
        [float("nan"), 1.0], [10 ** 400, 1], {"a": 1}, object(), (1, 2, 3),
        np.array([]), np.zeros((2, 3)), np.zeros((3, 3, 3)), np.full((3, 3), np.nan), np.ones((3, 3), complex),
        np.array(["a", "b"]), np.array([1, 2, 3], dtype=object), np.array([[0, 1, 2], [0, 1, 1]]),
        np.array([0.9, 1.0, 2.0]), np.array([1e308, -1e308, np.inf]),
    ]) | st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2 ** 70), 2 ** 70) | st.text(max_size=4)


def comparisons():
    return pr.PairwiseComparisons.from_labels(["a", "a", "b", "c", "a", "b"], ["b", "c", "c", "a", "b", "c"],
                                              [1, 1, -1, 1, -1, 1], user=[0, 0, 1, 1, 2, 2],
                                              items=["a", "b", "c"])


def rankings():
    return pr.Rankings.from_orders([[0, 1, 2], [1, 0, 2], [0, 2, 1], [2, 1, 0]], items=["a", "b", "c"])


def w_matrix():
    return rankings().pairwise_matrix()


def calls():
    """``name -> (callable, args, kwargs)``: a call that succeeds, whose arguments the test spoils one at a time."""
    comps, R, W = comparisons(), rankings(), w_matrix()
    release = pr.debiased_randomized_response(comps, epsilon=1.0, rng=0)
    fit = pr.fit_btl(release)
    agg = pr.dp_footrule(R, epsilon=1.0, rng=0)
    tally = pr.sufficient_statistics(pr.randomized_response(comps, epsilon=1.0, rng=0))
    eps = {"epsilon": 1.0, "rng": 0}
    ratings = pa.table({"user": [1, 1, 2, 2], "item": ["a", "b", "a", "c"], "rating": [5, 3, 2, 4]})
    return {
        "Accountant": (pr.Accountant, (pr.PureDP(1.0),), {}),
        "ApproxDP": (pr.ApproxDP, (1.0, 1e-6), {}),
        "Guarantee": (pr.Guarantee, (1.0, "central", "one ranking", "m"), {}),
        "Ledger": (pr.Ledger, ("ledger.sqlite",), {}),
        "PairCounts": (pr.PairCounts, (3, np.array([0, 0]), np.array([1, 2]), np.array([1.0, 2.0]),
                                       np.array([2.0, 3.0])), {}),
        "PairCounts.from_records": (pr.PairCounts.from_records, (3, np.array([0, 1]), np.array([1, 2]),
                                                                 np.array([1, -1])), {}),
        "PairwiseComparisons": (pr.PairwiseComparisons, (("a", "b", "c"), np.array([0, 1]), np.array([1, 2]),
                                                         np.array([1, -1], dtype=np.int8)), {}),
        "PairwiseComparisons.from_indices": (pr.PairwiseComparisons.from_indices, (["a", "b", "c"], [0, 1], [1, 2],
                                                                                [1, -1]), {}),
        "PairwiseComparisons.from_labels": (pr.PairwiseComparisons.from_labels, (["a", "b"], ["b", "c"], [1, -1]),
                                            {}),
        "PureDP": (pr.PureDP, (1.0,), {}),
        "Rankings": (pr.Rankings, (("a", "b"), np.array([[0, 1]]), np.array([1])), {}),
        "Rankings.from_orders": (pr.Rankings.from_orders, ([[0, 1, 2], [2, 1, 0]],), {"items": ["a", "b", "c"]}),
        "Rankings.from_labels": (pr.Rankings.from_labels, ([["a", "b"], ["b", "a"]],), {}),
        "ZCDP": (pr.ZCDP, (0.5,), {}),
        "adaptive_epsilon": (pr.adaptive_epsilon, ("critical", 5, 100), {}),
        "aggregate_intervals": (pr.aggregate_intervals, (agg,), {"n_bootstrap": 100, "rng": 0}),
        "approximate_median": (pr.approximate_median, (np.array([0, 1, 2, 1]), 3), eps),
        "classic_randomized_response": (pr.classic_randomized_response, (comps,), eps),
        "comparisons_from_ratings": (pr.comparisons_from_ratings, (ratings,), {"rng": 0}),
        "compose": (pr.compose, (release.guarantee, release.guarantee), {}),
        "compose_budgets": (pr.compose_budgets, (pr.PureDP(1.0), pr.PureDP(0.5)), {}),
        "confidence_intervals": (pr.confidence_intervals, (fit,), {}),
        "copeland": (pr.copeland, (comps,), {"rng": 0}),
        "debias": (pr.debias, (np.array([0.4, 0.6]), 1.0), {}),
        "debiased_randomized_response": (pr.debiased_randomized_response, (comps,), eps),
        "dp_footrule": (pr.dp_footrule, (R,), eps),
        "dp_kwiksort": (pr.dp_kwiksort, (R,), eps),
        "dp_ptas": (pr.dp_ptas, (R,), eps),
        "exact_kemeny": (pr.exact_kemeny, (W,), {}),
        "exponential_kemeny": (pr.exponential_kemeny, (R,), eps),
        "fit_btl": (pr.fit_btl, (release,), {}),
        "flip_probability": (pr.flip_probability, (1.0,), {}),
        "footrule_cost": (pr.footrule_cost, (np.array([0, 1, 2]), R), {}),
        "footrule_cost_matrix": (pr.footrule_cost_matrix, (R,), {}),
        "footrule_cost_release": (pr.footrule_cost_release, (R.positions,), eps),
        "footrule_distance": (pr.footrule_distance, ([0, 1, 2], [2, 1, 0]), {}),
        "footrule_optimal_order": (pr.footrule_optimal_order, (R,), {}),
        "hay_quicksort": (pr.hay_quicksort, (R,), eps),
        "kemeny_cost": (pr.kemeny_cost, ([0, 1, 2], W), {}),
        "kendall_distance": (pr.kendall_distance, ([0.3, 0.2, 0.1], [0.1, 0.2, 0.3]), {}),
        "kendall_tau_distance": (pr.kendall_tau_distance, ([0, 1, 2], [2, 1, 0]), {}),
        "l2_error": (pr.l2_error, ([0.1, 0.2], [0.2, 0.1]), {}),
        "ldp_footrule": (pr.ldp_footrule, (R,), eps),
        "ldp_kwiksort": (pr.ldp_kwiksort, (R,), eps),
        "ldp_matrix": (pr.ldp_matrix, (R,), eps),
        "linf_error": (pr.linf_error, ([0.1, 0.2], [0.2, 0.1]), {}),
        "local_laplace": (pr.local_laplace, (comps,), eps),
        "manipulation_margin": (pr.manipulation_margin, (tally,), {}),
        "noisy_borda": (pr.noisy_borda, (R,), eps),
        "noisy_copeland": (pr.noisy_copeland, (comps,), eps),
        "noisy_counts": (pr.noisy_counts, (np.array([3.0, 4.0]),), {"epsilon": 1.0, "unit": "one vote", "rng": 0}),
        "penalised_mle": (pr.penalised_mle, (comps,), {}),
        "perturbed_mle": (pr.perturbed_mle, (comps,), eps),
        "private_aggregate": (pr.private_aggregate, (R,), eps),
        "private_kemeny": (pr.private_kemeny, (R,), eps),
        "randomize_answer": (pr.randomize_answer, (1, 1.0), {"rng": 0}),
        "randomized_response": (pr.randomized_response, (comps,), eps),
        "rank_centrality": (pr.rank_centrality, (comps,), {}),
        "rank_position_mismatch": (pr.rank_position_mismatch, ([0, 1, 2], [2, 1, 0]), {}),
        "read_comparisons": (pr.read_comparisons, (pa.table({"item_a": ["a", "b"], "item_b": ["b", "c"],
                                                              "outcome": [1, -1]}),), {}),
        "read_pair_counts": (pr.read_pair_counts, (pa.table({"item_a": ["a", "b"], "item_b": ["b", "c"], "wins_a": [1, 0],
                                                              "wins_b": [0, 2]}),), {"items": ["a", "b", "c"],
                                                                                     "max_answers": 3}),
        "read_rankings": (pr.read_rankings, (pa.table({"rank1": ["a", "b"], "rank2": ["b", "a"]}),), {}),
        "release_from_reports": (pr.release_from_reports, (tally,), {}),
        "sufficient_statistics": (pr.sufficient_statistics, (comps,), {}),
        "top_k_hamming": (pr.top_k_hamming, ([0.3, 0.2, 0.1], [0.1, 0.2, 0.3], 2), {}),
        "zcdp_epsilon": (pr.zcdp_epsilon, (0.5, 1e-6), {}),
        "zcdp_rho": (pr.zcdp_rho, (1.0, 1e-6), {}),
    }


#: parameters that name something outside the call (a ledger, a journal, a progress display)
EXTERNAL = {"ledger", "accountant", "new_data", "progress", "scheduler", "fingerprint"}
CALLS = calls()


def slots(name):
    """The arguments of a call the test may spoil: its positional arguments and every named parameter."""
    fn, args, kwargs = CALLS[name]
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # pragma: no cover - every public callable has a signature
        params = ()
    named = [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
             and p.name not in EXTERNAL][len(args):]
    return list(range(len(args))) + sorted(set(named) | set(kwargs))


class TooSlow(Exception):
    pass


@contextmanager
def time_bound(seconds):
    def stop(*_):
        raise TooSlow
    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check_call(fn, args, kwargs):
    """Call; anything raised but an InputError fails the test (a TooSlow stop says nothing)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with time_bound(CALL_SECONDS):
                fn(*args, **kwargs)
        except (InputError, TooSlow):
            pass
        except Exception as exc:  # noqa: BLE001 - the test's point: name any other error type
            spoiled = {k: v for k, v in kwargs.items()}
            raise AssertionError(f"{type(exc).__name__}: {exc} (args {args!r:.200}, kwargs {spoiled!r:.200})") \
                from exc


def test_every_public_callable_is_covered():
    names = {n for n in pr.__all__ if callable(getattr(pr, n))}
    assert names - set(SKIPPED) <= {n.split(".")[0] for n in CALLS}
    assert all(n.split(".")[0] in pr.__all__ for n in CALLS)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a call given a text as a path writes there, if anywhere


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_valid_call_succeeds(name):
    fn, args, kwargs = CALLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(*args, **kwargs)


def spoil(args, kwargs, slot, value):
    """``(args, kwargs)`` of a call with argument ``slot`` (a position or a name) replaced by ``value``."""
    args, kwargs = list(args), dict(kwargs)
    if isinstance(slot, int):
        args[slot] = value
    else:
        kwargs[slot] = value
    return tuple(args), kwargs


@pytest.mark.parametrize("name", [n for n in sorted(CALLS) if slots(n)])
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_bad_argument_is_an_input_error(name, data):
    fn, args, kwargs = CALLS[name]
    slot = data.draw(st.sampled_from(slots(name)), label="argument")
    check_call(fn, *spoil(args, kwargs, slot, data.draw(bad_values(), label="value")))


@pytest.mark.slow
def test_huge_and_tiny_numbers_everywhere():
    """Every argument of every call, spoiled by each huge or tiny number in turn (no sampling)."""
    for name, (fn, args, kwargs) in CALLS.items():
        for slot in slots(name):
            for value in huge_and_tiny():
                check_call(fn, *spoil(args, kwargs, slot, value))


def test_the_time_bound_stops_a_slow_call():
    def slow():
        while True:
            math.sqrt(2.0)
    check_call(slow, (), {})
