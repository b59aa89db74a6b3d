"""The numeric and label edges a bad-input campaign found: each is an InputError with a sentence, never a
bare OverflowError, ZeroDivisionError, UnicodeEncodeError, numpy's wording, or a silent inf or NaN."""
import numpy as np
import pyarrow as pa
import pytest

import privrank as pr
from privrank.errors import EPSILON_FLOOR, InputError


def profile():
    return pr.Rankings.from_orders([[0, 1, 2], [1, 0, 2], [0, 2, 1]], items=["a", "b", "c"])


def comparisons():
    return pr.PairwiseComparisons.from_labels(["a", "b", "a"], ["b", "c", "c"], [1, -1, 1], items=["a", "b", "c"])


@pytest.mark.parametrize("call, match", [
    (lambda: pr.PureDP(10 ** 400), "too large for a floating-point"),
    (lambda: pr.debiased_randomized_response(comparisons(), epsilon=10 ** 400, rng=0), "too large"),
    (lambda: pr.fit_btl(comparisons(), max_iter=10 ** 400), "at most 2\\^53"),
    (lambda: pr.ldp_matrix(profile(), epsilon=5e-324, rng=0), "at least 1e-12"),
    (lambda: pr.ldp_footrule(profile(), epsilon=5e-324, rng=0), "at least 1e-12"),
    (lambda: pr.dp_ptas(profile(), epsilon=5e-324, rng=0), "at least 1e-12"),
    (lambda: pr.debias(np.array([0.4, 0.6]), 1e-320), "at least 1e-12"),
    (lambda: pr.exact_kemeny(np.ones((3, 3), complex)), "real"),
    (lambda: pr.PairwiseComparisons(("a", "b"), np.array([0, 1]), np.array([1]), np.array([1, 1], np.int8)),
     "same length"),
    (lambda: pr.PairwiseComparisons.from_indices(["a", "b"], [0.9], [1], [1]), "whole numbers"),
    (lambda: pr.kemeny_cost([0, 1, 2], np.full((3, 3), np.nan)), "finite"),
    (lambda: pr.Rankings.from_orders([[0, 1, 2], [1, 0]]), "of one shape"),
    (lambda: pr.comparisons_from_ratings(pa.table({"user": [1, 1], "item": ["a", "b"], "rating": [1, 2]}),
                                         max_pairs=float("nan")), "max_pairs must be a whole number"),
    (lambda: pr.PairwiseComparisons.from_labels([["a"], ["b"]], [["b"], ["c"]], [1, 1]), "not hashable"),
    (lambda: pr.PairwiseComparisons.from_labels(["a", "b"], ["b", "c"], [1, 1], items=["a", "b", "\ud800"]),
     "lone surrogate"),
    (lambda: pr.fit_btl(comparisons(), lam=10 ** 400), "lam must be"),
    (lambda: pr.dp_kwiksort(profile(), epsilon=1.0, fail_probability=10 ** 400, rng=0), "strictly between"),
    (lambda: pr.debiased_randomized_response(comparisons(), epsilon=1.0, rng=2.5), "rng must be"),
])
def test_a_numeric_or_label_edge_is_an_input_error(call, match):
    with pytest.raises(InputError, match=match) as err:
        call()
    assert "\ud800" not in str(err.value)


def test_the_epsilon_floor_is_the_documented_one():
    lo = EPSILON_FLOOR
    assert np.all(np.isfinite(pr.debias(np.array([0.0, 1.0]), lo)))  # the floor itself computes
    with pytest.raises(InputError):
        pr.flip_probability(lo / 2)
    assert pr.PureDP(1e-9).epsilon == 1e-9  # a budget is bookkeeping: a tiny remainder is an epsilon


def test_user_codes_past_the_records_are_refused_not_expanded():
    """A user code of 2^40 made a tuple of 2^40 user names (the process was killed for memory)."""
    with pytest.raises(InputError, match="user indices"):
        pr.PairwiseComparisons.from_indices(["a", "b"], [0], [1], [1], user=[2 ** 40])
    with pytest.raises(InputError, match="user indices"):
        pr.PairwiseComparisons.from_indices(["a", "b"], [0], [1], [1], user=[-1])
